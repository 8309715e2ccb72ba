package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/scenariomock/scenariomock/adminclient"
	"github.com/scenariomock/scenariomock/junit"
)

// verifyOptions are verify's own flags: what the count must be, and where
// the report goes.
type verifyOptions struct {
	admin       adminFlags
	count       int
	atLeast     int
	atMost      int
	none        bool
	noUnmatched bool
	junit       string // --junit FILE
	file        string // --file checks.yaml
	json        bool
	webhooks    webhookVerify
}

// shown is how many matching requests a failed verify lists.
const shown = 50

func newVerifyCmd(stdout, stderr io.Writer) *cobra.Command {
	var opts verifyOptions
	cmd := &cobra.Command{
		Use:   "verify [filter flags] [--count N | --at-least N | --at-most N | --none] [--no-unmatched] [--junit FILE] [--json]",
		Short: "Check what a running server received: exit 0, or print what was expected and found and exit 1",
		Long: `Verify asks a running server's request journal how many requests match the
filters, and exits 0 when the count is as expected (at least one, unless
--count, --at-least, --at-most or --none say otherwise). Otherwise it prints
what was expected, what was found, the matching requests and, when too few
matched, the newest requests received, and exits 1.

--no-unmatched fails when any request matched no route, listing each with
its near-miss report. It looks at every request (since --since, if given),
whatever the other filters say; with no count flag it is the only check.

--file checks.yaml runs many checks at once, every one even after one
failed: checks is a list of mappings whose keys are name and the filter
and count flags' names without dashes, e.g.
  checks:
    - { name: one payment, method: POST, path: /payments, count: 1 }
    - { name: its retry replayed, route: create payment, idempotency: replayed, at-least: 1 }
    - { name: nothing unmocked, no-unmatched: true }
A check without a name is named by its filters and count.

--junit FILE also writes the checks as a JUnit XML report (one testcase per
check, the failure report as its message), for a CI system to show; --json
prints them as JSON on stdout instead of the text.

Exit codes: 0 as expected; 1 not as expected (or another failure); 2 usage,
a filter the server refused, a missing or wrong --admin-token, an --addr
with no admin API (serve has --admin-addr: give the same here), or a --junit
FILE that cannot be written (the checks' results are printed first); 4 no
server answered at --addr within --timeout.`,
		Example: `  scenariomock verify --route "create payment" --status 201 --count 1
  scenariomock verify --path '/v1/payments/*' --method POST --at-least 2
  scenariomock verify --route "create payment" --idempotency replayed --count 1
  scenariomock verify --header Idempotency-Key=k1 --body amount=9800 --none
  scenariomock verify --no-unmatched --junit verify.xml
  scenariomock verify --file checks.yaml --junit verify.xml
  scenariomock verify --webhook shop --type payment_intent.succeeded --delivered --attempts-at-most 3 --within 10s
  scenariomock verify --webhook shop --undelivered --none`,
		Args: cobra.NoArgs,
		RunE: failing(func(cmd *cobra.Command, _ []string) error {
			return runVerify(cmd.Context(), cmd, opts, stdout, stderr)
		}),
	}
	opts.admin.register(cmd.Flags())
	f := cmd.Flags()
	f.IntVar(&opts.count, "count", 0, "exactly this many requests match")
	f.IntVar(&opts.atLeast, "at-least", 0, "at least this many requests match (default 1 when no count flag is given)")
	f.IntVar(&opts.atMost, "at-most", 0, "at most this many requests match")
	f.BoolVar(&opts.none, "none", false, "no request matches (--count 0)")
	f.BoolVar(&opts.noUnmatched, "no-unmatched", false, "fail when any request (since --since) matched no route, listing each with its near-miss report")
	f.StringVar(&opts.file, "file", "", "run the checks of this YAML file (checks: [{name: ..., route: ..., count: 1}, ...]), every one of them; exit 1 if any failed")
	f.StringVar(&opts.junit, "junit", "", "also write the checks to this file as a JUnit XML report")
	f.BoolVar(&opts.json, "json", false, "print the checks as JSON on stdout instead of text")
	opts.webhooks.register(f)
	_ = cmd.RegisterFlagCompletionFunc("route", completeRoutes(&opts.admin))
	registerCompletions(cmd, map[string][]cobra.Completion{"idempotency": idemOutcomes, "matched": matchedValues})
	return cmd
}

// expectation is a range of counts: min ≤ count ≤ max (max < 0: no bound).
type expectation struct{ min, max int }

func (e expectation) holds(n int) bool { return n >= e.min && (e.max < 0 || n <= e.max) }

func (e expectation) String() string {
	switch {
	case e.min == e.max:
		return fmt.Sprintf("exactly %d %s", e.min, plural(e.min, "request"))
	case e.max < 0:
		return fmt.Sprintf("at least %d %s", e.min, plural(e.min, "request"))
	case e.min == 0:
		return fmt.Sprintf("at most %d %s", e.max, plural(e.max, "request"))
	}
	return fmt.Sprintf("from %d to %d requests", e.min, e.max)
}

// counts are the count flags of one check; nil: not given.
type counts struct {
	count, atLeast, atMost *int
	none                   bool
}

// expect reads the count flags. ok is false when none was given and
// noUnmatched is the only check.
func (c counts) expect(noUnmatched bool) (e expectation, ok bool, err error) {
	for name, n := range map[string]*int{"count": c.count, "at-least": c.atLeast, "at-most": c.atMost} {
		if n != nil && *n < 0 {
			return e, false, fmt.Errorf("--%s %d: want 0 or more", name, *n)
		}
	}
	count, atLeast, atMost := c.count != nil, c.atLeast != nil, c.atMost != nil
	switch {
	case c.none && (count || atLeast || atMost):
		return e, false, errors.New("--none goes with no other count flag")
	case count && (atLeast || atMost):
		return e, false, errors.New("--count goes with neither --at-least nor --at-most")
	case c.none:
		return expectation{0, 0}, true, nil
	case count:
		return expectation{*c.count, *c.count}, true, nil
	case atLeast && atMost && *c.atLeast > *c.atMost:
		return e, false, fmt.Errorf("--at-least %d is more than --at-most %d", *c.atLeast, *c.atMost)
	case atLeast || atMost:
		e = expectation{0, -1}
		if atLeast {
			e.min = *c.atLeast
		}
		if atMost {
			e.max = *c.atMost
		}
		return e, true, nil
	case noUnmatched:
		return e, false, nil
	}
	return expectation{1, -1}, true, nil
}

// flagCounts are the count flags given on the command line.
func (o verifyOptions) flagCounts(cmd *cobra.Command) counts {
	c := counts{none: o.none}
	changed := cmd.Flags().Changed
	if changed("count") {
		c.count = &o.count
	}
	if changed("at-least") {
		c.atLeast = &o.atLeast
	}
	if changed("at-most") {
		c.atMost = &o.atMost
	}
	return c
}

// check is one verification: that the number of requests filter selects
// is as want says or, for noUnmatched, that none of the requests (since
// filter.Since) matched no route.
type check struct {
	name        string
	filter      adminclient.Filter
	want        expectation
	noUnmatched bool
	// hook, when set, makes this a check of webhook deliveries (verify
	// --webhook and its flags) instead of requests.
	hook *webhookVerify
	// named: the name was given (a --file check's name:), and the text
	// report starts with it, so that a reader of many checks' lines
	// knows which check each is of. Other names repeat the filters the
	// report says.
	named bool
}

// countCheck is a check of the requests f selects; its name, unless
// given, says the filters and the count.
func countCheck(name string, f adminclient.Filter, want expectation) check {
	if name == "" {
		name = describeFilter(f) + ": " + want.String()
	}
	return check{name: name, filter: f, want: want}
}

// unmatchedCheck is --no-unmatched's check. It passes only since: a route,
// status or idempotency filter would select matched requests alone, and so
// pass always.
func unmatchedCheck(name, since string) check {
	if name == "" {
		name = "no unmatched requests"
		if since != "" {
			name += " since " + since
		}
	}
	return check{name: name, filter: adminclient.Filter{Since: since}, noUnmatched: true}
}

// result is what running a check found.
type result struct {
	check
	ok      bool
	found   int
	summary string // one line: "want exactly 1 request, found 2"
	report  string // what verify prints for it: the ok line, or the whole failure report
	err     error  // the check could not run
	elapsed time.Duration
}

func (c check) run(ctx context.Context, client *adminclient.Client) result {
	start := time.Now()
	r := result{check: c}
	var buf bytes.Buffer
	switch {
	case c.hook != nil:
		r.ok, r.found, r.err = verifyWebhooks(ctx, client, *c.hook, c.want, &buf, &buf)
		if r.ok {
			r.summary = fmt.Sprintf("%d webhook %s matched, want %s", r.found, deliveries(r.found), asDeliveries(c.want, ""))
		} else {
			r.summary = fmt.Sprintf("want %s, found %d", asDeliveries(c.want, "webhook "), r.found)
		}
	case c.noUnmatched:
		r.ok, r.found, r.err = verifyNoUnmatched(ctx, client, c.filter, &buf)
		if r.ok {
			r.summary = "every request matched a route"
		} else {
			r.summary = fmt.Sprintf("%d %s matched no route, want none", r.found, plural(r.found, "request"))
		}
	default:
		r.ok, r.found, r.err = verifyCount(ctx, client, c.filter, c.want, &buf)
		if r.ok {
			r.summary = fmt.Sprintf("%d %s matched, want %s", r.found, plural(r.found, "request"), c.want)
		} else {
			r.summary = fmt.Sprintf("want %s, found %d", c.want, r.found)
		}
	}
	r.report = buf.String()
	r.elapsed = time.Since(start)
	return r
}

func runVerify(ctx context.Context, cmd *cobra.Command, opts verifyOptions, stdout, stderr io.Writer) error {
	var checks []check
	var client *adminclient.Client
	var err error
	if opts.webhooks.on(cmd.Flags().Changed) {
		checks, client, err = opts.webhookChecks(cmd)
	} else {
		checks, client, err = opts.checks(cmd)
	}
	if err != nil {
		return err
	}
	timeout := opts.admin.timeout
	for _, c := range checks {
		if c.hook != nil {
			timeout += c.hook.within // each webhook check may ask again that long
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	started := time.Now()
	// Every check runs, whatever the earlier ones found: a CI report
	// lists every check.
	results := make([]result, len(checks))
	for i, c := range checks {
		results[i] = c.run(ctx, client)
	}
	if opts.json {
		if err := writeResultsJSON(stdout, results); err != nil {
			return err
		}
	} else {
		for _, r := range results {
			if r.err != nil {
				continue // reported as the command's error, below
			}
			w := stdout
			if !r.ok {
				w = stderr
			}
			if r.named {
				io.WriteString(w, r.name+": ")
			}
			io.WriteString(w, r.report)
		}
	}
	// The report is written once the results are printed: a --junit FILE
	// that cannot be written still lets the job's log say what was found.
	if opts.junit != "" {
		if err := writeJUnit(opts.junit, started, results); err != nil {
			return withCode(exitUsage, err)
		}
	}
	failed := false
	for _, r := range results {
		if r.err != nil {
			return adminError(r.err, opts.admin.timeout)
		}
		failed = failed || !r.ok
	}
	if failed {
		return errReported
	}
	return nil
}

// webhookChecks is verify with the webhook flags: one check of the
// deliveries they select, asked again until --within ends, reported as
// a request check is (text, --junit, --json).
func (o verifyOptions) webhookChecks(cmd *cobra.Command) ([]check, *adminclient.Client, error) {
	if o.file != "" || o.noUnmatched {
		return nil, nil, withCode(exitUsage, errors.New("--webhook and its flags go without --file and --no-unmatched"))
	}
	want, _, err := o.flagCounts(cmd).expect(false)
	if err != nil {
		return nil, nil, withCode(exitUsage, err)
	}
	client, filter, err := o.admin.build()
	if err != nil {
		return nil, nil, err
	}
	hook := o.webhooks
	hook.session = filter.Session
	f, err := hook.filter()
	if err != nil {
		return nil, nil, withCode(exitUsage, err)
	}
	name := describeWebhookFilter(f, hook) + ": " + asDeliveries(want, "webhook ")
	return []check{{name: name, want: want, hook: &hook}}, client, nil
}

// checks are the checks the command line asks for (a count of the
// requests the filters select, and --no-unmatched's) and the client that
// asks them.
func (o verifyOptions) checks(cmd *cobra.Command) ([]check, *adminclient.Client, error) {
	want, counting, err := o.flagCounts(cmd).expect(o.noUnmatched)
	if err != nil && o.file == "" {
		return nil, nil, withCode(exitUsage, err)
	}
	if o.noUnmatched && o.admin.filter.Matched != "" {
		return nil, nil, withCode(exitUsage, errors.New("--no-unmatched goes without --matched"))
	}
	client, filter, err := o.admin.build()
	if err != nil {
		return nil, nil, err
	}
	if o.file != "" {
		checks, err := fileChecks(cmd, o.file, filter.Since)
		return checks, client, err
	}
	var checks []check
	if counting {
		checks = append(checks, countCheck("", filter, want))
	}
	if o.noUnmatched {
		checks = append(checks, unmatchedCheck("", filter.Since))
	}
	return checks, client, nil
}

// writeJUnit writes results to file as one JUnit test suite, "verify".
func writeJUnit(file string, started time.Time, results []result) error {
	suite := junit.Suite{Name: "scenariomock verify", Timestamp: started}
	for _, r := range results {
		c := junit.Case{Name: r.name, ClassName: "scenariomock.verify", Time: r.elapsed}
		switch {
		case r.err != nil:
			c.Error = &junit.Problem{Message: r.err.Error(), Type: "error"}
		case !r.ok:
			c.Failure = &junit.Problem{Message: r.summary, Type: "verify", Text: r.report}
		default:
			c.Output = r.report
		}
		suite.Cases = append(suite.Cases, c)
	}
	var buf bytes.Buffer
	if err := junit.Write(&buf, "scenariomock", suite); err != nil {
		return err
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--junit: %w", err)
	}
	return nil
}

// resultJSON is a check's result in verify --json.
type resultJSON struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Kind    string `json:"kind"`              // "count", "no-unmatched" or "webhook"
	Filters string `json:"filters,omitempty"` // as the text report says them
	Want    string `json:"want,omitempty"`
	Found   int    `json:"found"`
	Summary string `json:"summary,omitempty"`
	Report  string `json:"report,omitempty"`
	Error   string `json:"error,omitempty"`
}

func writeResultsJSON(w io.Writer, results []result) error {
	out := struct {
		OK     bool         `json:"ok"`
		Checks []resultJSON `json:"checks"`
	}{OK: true, Checks: []resultJSON{}}
	for _, r := range results {
		j := resultJSON{Name: r.name, OK: r.ok && r.err == nil, Kind: "count", Found: r.found, Summary: r.summary, Report: r.report}
		switch {
		case r.hook != nil:
			j.Kind = "webhook"
			f, _ := r.hook.filter()
			j.Filters = describeWebhookFilter(f, *r.hook)
			j.Want = asDeliveries(r.want, "webhook ")
		case r.noUnmatched:
			j.Kind = "no-unmatched"
			j.Want = "no request matched no route"
		default:
			j.Filters = describeFilter(r.filter)
			j.Want = r.want.String()
		}
		if r.err != nil {
			j.Error, j.Summary, j.Report = r.err.Error(), "", ""
		}
		out.OK = out.OK && j.OK
		out.Checks = append(out.Checks, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func describeFilter(f adminclient.Filter) string {
	if s := f.String(); s != "" {
		return s
	}
	return "(none: every request)"
}

// verifyCount writes to w the ok line, or the failure report: what was
// expected and found, the matching requests and, when too few matched,
// the newest received with their near misses.
func verifyCount(ctx context.Context, c *adminclient.Client, f adminclient.Filter, want expectation, w io.Writer) (ok bool, found int, err error) {
	f.Limit = shown
	entries, total, err := c.Requests(ctx, f)
	if err != nil {
		return false, 0, err
	}
	if want.holds(total) {
		fmt.Fprintf(w, "ok: %d %s matched, want %s; filters: %s\n", total, plural(total, "request"), want, describeFilter(f))
		return true, total, nil
	}
	fmt.Fprintf(w, "verify failed: want %s, found %d\n", want, total)
	fmt.Fprintf(w, "filters: %s\n", describeFilter(f))
	if total == 0 {
		fmt.Fprintln(w, "matching requests: none")
	} else {
		fmt.Fprintf(w, "matching requests (%d", total)
		if total > len(entries) {
			fmt.Fprintf(w, ", the newest %d shown", len(entries))
		}
		fmt.Fprintln(w, "):")
		printEntries(w, entries)
	}
	if total < want.min {
		// Too few: what did arrive says why (a typo in a path, the wrong
		// status, a request that never came).
		recent, all, err := c.Requests(ctx, adminclient.Filter{Limit: 10})
		if err != nil {
			return false, total, err
		}
		if all == 0 {
			fmt.Fprintln(w, "the journal is empty: no request reached the server since it started (or since the last reset or clear)")
		} else {
			fmt.Fprintf(w, "the newest requests received, of %d (any):\n", all)
			printEntries(w, recent)
			printNearMisses(w, recent)
		}
	}
	return false, total, nil
}

// verifyNoUnmatched checks that no request selected by f matched no
// route, and writes the ok line or the report of those that did not.
func verifyNoUnmatched(ctx context.Context, c *adminclient.Client, f adminclient.Filter, w io.Writer) (ok bool, found int, err error) {
	f.Matched = "false"
	f.Limit = shown
	entries, total, err := c.Requests(ctx, f)
	if err != nil {
		return false, 0, err
	}
	if total == 0 {
		fmt.Fprintln(w, "ok: every request matched a route")
		return true, 0, nil
	}
	fmt.Fprintf(w, "verify failed: %d %s matched no route, want none\n", total, plural(total, "request"))
	if total > len(entries) {
		fmt.Fprintf(w, "the newest %d:\n", len(entries))
	}
	printEntries(w, entries)
	fmt.Fprintln(w, "near misses:")
	printNearMisses(w, entries)
	return false, total, nil
}
