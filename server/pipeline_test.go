package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestJournalBeforeAnswer: a request is in the journal before any byte of
// its answer, or its fault, reaches the client. Each of 1,000 requests
// whose connection is reset after processing is followed at once by a
// count, which must never be short; and a plain answer, on a kept-alive
// connection (the per-connection exchange), likewise. Served by Serve, as
// the command serves.
func TestJournalBeforeAnswer(t *testing.T) {
	t.Parallel()
	base, stop := serveReal(t, Options{}, `
routes:
  - name: charge
    method: POST
    path: /charges
    respond: { status: 201, body: { id: ch_1 }, fault: { kind: connection-reset, after: processing } }
  - name: ok
    method: GET
    path: /ok
    respond: { status: 200 }
`)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	defer client.CloseIdleConnections()
	count := func() int {
		t.Helper()
		resp, err := client.Get(base + "/__admin/requests/count")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var c struct{ Count int }
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
			t.Fatal(err)
		}
		return c.Count
	}
	const n = 1000
	for i := 1; i <= n; i++ {
		path, faulted := "/charges", i%2 == 1
		if !faulted {
			path = "/ok"
		}
		req, _ := http.NewRequest("GET", base+path, nil)
		if faulted {
			req, _ = http.NewRequest("POST", base+path, strings.NewReader(`{"amount":1}`))
		}
		resp, err := client.Do(req)
		switch {
		case faulted && err == nil:
			resp.Body.Close()
			t.Fatalf("request %d: the reset answered %d", i, resp.StatusCode)
		case !faulted && err != nil:
			t.Fatalf("request %d: %v", i, err)
		case !faulted:
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if got := count(); got != i {
			t.Fatalf("after request %d (%s) the journal counts %d", i, path, got)
		}
	}
}

// TestClaimLostAnswers503: when the request that claimed a key finds at
// completion that the claim is gone (here the key was expired while the
// route ran; a restarted Redis does the same), its client gets a 503
// problem, not a success it would trust while a retry runs the route
// again (issue 19).
func TestClaimLostAnswers503(t *testing.T) {
	t.Parallel()
	clock := newGateClock()
	_, hs, _ := serveYAML(t, Options{Clock: clock}, `
routes:
  - name: create payment
    method: POST
    path: /payments
    idempotency: { key: header.Idempotency-Key, required: true }
    respond: { status: 201, body: { id: pay_1 }, delay: 1s }
`)
	done := make(chan response, 1)
	go func() {
		r, err := doCtx(context.Background(), "POST", hs.URL+"/payments", `{"amount":1}`, "Idempotency-Key", "k1")
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	clock.waitBegan(t, 1)
	if r := do(t, "POST", hs.URL+"/__admin/idempotency/expire?key=k1", ""); r.status != 200 || r.json(t)["expired"] != float64(1) {
		t.Fatalf("expire: %d %s", r.status, r.body)
	}
	close(clock.gate)
	var r response
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("no answer after 30s")
	}
	if !isProblem(r, http.StatusServiceUnavailable) || !strings.Contains(r.body, "claim on its Idempotency-Key was lost") || r.header.Get("Retry-After") == "" {
		t.Errorf("claim lost: %d %v %s, want a 503 problem", r.status, r.header, r.body)
	}
	// Nothing was stored: the retry runs the route again.
	if again := do(t, "POST", hs.URL+"/payments", `{"amount":1}`, "Idempotency-Key", "k1"); again.status != 201 {
		t.Errorf("retry: %d %s", again.status, again.body)
	}
	l := listRequests(t, hs.URL, "path=/payments")
	if len(l.Requests) != 2 || l.Requests[0].Status != 503 || l.Requests[0].Idempotency != idemNew {
		t.Errorf("journal: %+v", l.Requests)
	}
}
