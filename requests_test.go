package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/state"
)

func TestRequestsTable(t *testing.T) {
	t.Parallel()
	url := serveShop(t)
	shopping(t, url)
	out, errOut, err := runCmd(t, "requests", "--addr", url)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 7 {
		t.Fatalf("%d lines, want a header and 6 requests:\n%s", len(lines), out)
	}
	for i, want := range map[int]string{
		0: `^ID\s+TIME\s+METHOD\s+PATH\s+STATUS\s+ROUTE\s+IDEMPOTENCY\s+DURATION$`,
		1: `^\d+\s+\d\d:\d\d:\d\d\.\d{3}\s+POST\s+/payments\?mode=test\s+201\s+create payment\s+-\s+[\d.]+[µm]?s$`,
		4: `^\d+\s+\S+\s+GET\s+/paymnts/p1\s+404\s+\(no route\)\s+-\s+\S+$`,
		6: `^\d+\s+\S+\s+POST\s+/charges\s+201\s+charge\s+replayed\s+\S+$`,
	} {
		if !regexp.MustCompile(want).MatchString(lines[i]) {
			t.Errorf("line %d = %q, want it to match %s", i, lines[i], want)
		}
	}
	// Filters and the limit: the newest one of the two that match.
	out, errOut, err = runCmd(t, "requests", "--addr", url, "--route", "create payment", "--limit", "1")
	if err != nil || strings.Count(out, "\n") != 2 || strings.Contains(out, "mode=test") || !strings.Contains(errOut, "the newest 1 of 2 matching requests") {
		t.Errorf("--route --limit 1: %v\n%s%s", err, out, errOut)
	}
	if _, _, err := runCmd(t, "requests", "--addr", url, "--limit", "0"); report(&bytes.Buffer{}, err) != exitUsage {
		t.Errorf("--limit 0: %v, want a usage error", err)
	}
}

func TestRequestsJSON(t *testing.T) {
	t.Parallel()
	url := serveShop(t)
	shopping(t, url)
	out, _, err := runCmd(t, "requests", "--addr", url, "--json", "--method", "POST")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4 POSTs:\n%s", len(lines), out)
	}
	var first state.Entry
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if first.Route != "create payment" || first.Query != "mode=test" || !strings.Contains(string(first.Body), `"cus_1"`) || first.Headers["X-Tenant"][0] != "t1" {
		t.Errorf("first line %s", lines[0])
	}
}

// lockedBuffer is a command's stdout that the test reads while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRequestsFollow: --follow prints what was kept, then each request
// as it arrives, and ends when its context does (Ctrl-C in main).
func TestRequestsFollow(t *testing.T) {
	t.Parallel()
	url := serveShop(t)
	send(t, "GET", url+"/payments/before", "")
	for _, asJSON := range []bool{false, true} {
		var out, errOut lockedBuffer
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cmd := newRootCmd(&out, &errOut)
		args := []string{"requests", "--addr", url, "--follow", "--path", "/payments/*"}
		if asJSON {
			args = append(args, "--json")
		}
		cmd.SetArgs(args)
		done := make(chan error, 1)
		go func() { done <- cmd.ExecuteContext(ctx) }()
		waitFor := func(what string) {
			t.Helper()
			deadline := time.Now().Add(patience)
			for !strings.Contains(out.String(), what) {
				select {
				case err := <-done:
					t.Fatalf("requests --follow ended: %v\n%s%s", err, out.String(), errOut.String())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("no %q in:\n%s", what, out.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		waitFor("/payments/before")
		// Sent after the listing, whether or not the stream is connected
		// yet: the stream resumes after the last entry listed.
		name := "/payments/after-" + map[bool]string{false: "table", true: "json"}[asJSON]
		send(t, "GET", url+name, "")
		send(t, "GET", url+"/other", "") // filtered out
		waitFor(name)
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("after cancel: %v", err)
			}
		case <-time.After(patience):
			t.Fatal("requests --follow did not end with its context")
		}
		if strings.Contains(out.String(), "/other") {
			t.Errorf("a filtered-out request was printed:\n%s", out.String())
		}
		if asJSON {
			for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				var e state.Entry
				if err := json.Unmarshal([]byte(l), &e); err != nil {
					t.Errorf("line %q: %v", l, err)
				}
			}
		} else if !strings.HasPrefix(out.String(), "ID ") {
			t.Errorf("no header:\n%s", out.String())
		}
	}
}

// TestRequestsFollowShutdown: the server's shutdown ends --follow, with a
// note and exit 0 (a tail that outlived what it tailed).
func TestRequestsFollowShutdown(t *testing.T) {
	t.Parallel()
	url, _, stop := serveShopStoppable(t, "", false)
	send(t, "GET", url+"/payments/p1", "")
	var out, errOut lockedBuffer
	cmd := newRootCmd(&out, &errOut)
	cmd.SetArgs([]string{"requests", "--addr", url, "--follow"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(context.Background()) }()
	// Once the listing is out, the stream is being opened; a shutdown
	// before it connects ends it as surely (no server answers: exit 4).
	deadline := time.Now().Add(patience)
	for !strings.Contains(out.String(), "/payments/p1") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	select {
	case err := <-done:
		code := report(&bytes.Buffer{}, err)
		if !(code == 0 && strings.Contains(errOut.String(), "the server ended the stream")) && code != exitUnreachable {
			t.Errorf("after shutdown: exit %d (%v), stderr %q", code, err, errOut.String())
		}
	case <-time.After(patience):
		t.Fatal("requests --follow outlived the server")
	}
}

// TestFollowTable: --follow's rows line up with the header and the rows
// listed first, and from a wider cell on, with it.
func TestFollowTable(t *testing.T) {
	long := "/payments/pay_6960009e88f67d0f00116e06/refunds"
	first := []state.Entry{{ID: 1, Method: "GET", Path: long, Status: 200, Route: "get payment"}}
	var b strings.Builder
	tab := newFollowTable(&b, first)
	tab.row(entryHeader)
	tab.row(entryRow(first[0]))
	tab.row(entryRow(state.Entry{ID: 2, Method: "GET", Path: "/p", Status: 404}))
	tab.row(entryRow(state.Entry{ID: 3, Method: "GET", Path: long + "/and/longer", Status: 201, Route: "r"}))
	tab.row(entryRow(state.Entry{ID: 4, Method: "GET", Path: "/q", Status: 500, Route: "r"}))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	col := func(line, cell string) int { return strings.Index(line, "  "+cell+" ") + 2 }
	status := col(lines[0], "STATUS")
	for i, want := range []string{"200", "404"} {
		if got := col(lines[i+1], want); got != status {
			t.Errorf("row %d: status at column %d, header's at %d:\n%s", i+1, got, status, b.String())
		}
	}
	if a, b2 := col(lines[3], "201"), col(lines[4], "500"); a != b2 || a <= status {
		t.Errorf("after a wider path the status column is at %d then %d (was %d):\n%s", a, b2, status, b.String())
	}
}
