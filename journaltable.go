package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/scenariomock/scenariomock/state"
)

// entryHeader and entryRow are one journal entry as a table row, for
// requests and verify.
var entryHeader = []string{"ID", "TIME", "METHOD", "PATH", "STATUS", "ROUTE", "IDEMPOTENCY", "DURATION"}

func entryRow(e state.Entry) []string {
	path := e.Path
	if e.Query != "" {
		path += "?" + e.Query
	}
	status := strconv.Itoa(e.Status)
	if e.Status == 0 {
		status = "-" // no HTTP answer
	}
	if e.Fault != "" {
		status = e.Fault
		if e.FaultAfter != "" {
			status += " after " + e.FaultAfter
		}
	}
	route := e.Route
	if route == "" {
		route = "(no route)"
	}
	idem := e.Idempotency
	if idem == "" {
		idem = "-"
	}
	return []string{
		strconv.FormatInt(e.ID, 10), e.Time.Local().Format("15:04:05.000"), e.Method, path, status, route, idem,
		formatMs(e.DurationMs),
	}
}

// formatMs writes a duration in milliseconds as 35µs, 1.4ms, 12ms or
// 10.01s.
func formatMs(ms float64) string {
	d := time.Duration(ms * float64(time.Millisecond))
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}

// printEntries writes entries as an aligned table.
func printEntries(w io.Writer, entries []state.Entry) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(entryHeader, "\t"))
	for _, e := range entries {
		fmt.Fprintln(tw, strings.Join(entryRow(e), "\t"))
	}
	tw.Flush()
}

// followTable writes the table a row at a time (requests --follow): each
// column starts at a usual width, or the widest cell of the rows listed
// first, and grows when a wider cell comes, so that rows line up from then
// on.
type followTable struct {
	w      io.Writer
	widths []int
}

func newFollowTable(w io.Writer, first []state.Entry) *followTable {
	t := &followTable{w: w, widths: []int{5, 12, 7, 24, 6, 24, 11, 0}}
	t.grow(entryHeader)
	for _, e := range first {
		t.grow(entryRow(e))
	}
	return t
}

func (t *followTable) grow(cells []string) {
	for i, c := range cells {
		t.widths[i] = max(t.widths[i], utf8.RuneCountInString(c))
	}
}

func (t *followTable) row(cells []string) {
	t.grow(cells)
	var b strings.Builder
	for i, c := range cells {
		b.WriteString(c)
		if i == len(cells)-1 {
			break
		}
		b.WriteString(strings.Repeat(" ", t.widths[i]-utf8.RuneCountInString(c)+2))
	}
	b.WriteByte('\n')
	io.WriteString(t.w, b.String())
}

// printEntryJSON writes e as one line of JSON.
func printEntryJSON(w io.Writer, e state.Entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// printNearMisses writes the near-miss report of each unmatched entry.
func printNearMisses(w io.Writer, entries []state.Entry) {
	for _, e := range entries {
		if e.Matched {
			continue
		}
		fmt.Fprintf(w, "  #%d %s %s", e.ID, e.Method, e.Path)
		if e.Query != "" {
			fmt.Fprintf(w, "?%s", e.Query)
		}
		if e.CatchAll {
			fmt.Fprintf(w, ": answered by %q, a catch-all (unmatched: true)\n", e.Route)
			continue
		}
		if len(e.NearMisses) == 0 {
			fmt.Fprintln(w, ": no route came close")
			continue
		}
		fmt.Fprintln(w, ":")
		for _, m := range e.NearMisses {
			fmt.Fprintf(w, "      %s: %s\n", m.Route, m.Reason)
		}
	}
}
