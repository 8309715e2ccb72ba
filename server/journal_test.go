package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
)

const journalScenario = `
routes:
  - name: create payment
    method: POST
    path: /v1/payments
    respond: { status: 201, body: { id: pay_1 } }
  - name: get payment
    method: GET
    path: /v1/payments/{id}
    respond: { status: 200, body: { id: pay_1 } }
  - name: teapot
    method: GET
    path: /teapot
    respond: { status: 418 }
  - name: slow
    method: GET
    path: /slow
    respond: { status: 200, delay: 10s }
  - name: reset
    method: GET
    path: /reset
    respond: { fault: connection-reset }
`

// journalList is GET /__admin/requests's answer.
type journalList struct {
	Requests []state.Entry `json:"requests"`
	Total    int           `json:"total"`
}

// listRequests asks GET /__admin/requests?query and decodes the answer.
func listRequests(t *testing.T, base, query string) journalList {
	t.Helper()
	r := do(t, "GET", base+"/__admin/requests?"+query, "")
	if r.status != 200 {
		t.Fatalf("GET /__admin/requests?%s: %d %s", query, r.status, r.body)
	}
	var l journalList
	if err := json.Unmarshal([]byte(r.body), &l); err != nil {
		t.Fatalf("GET /__admin/requests?%s: %v in %s", query, err, r.body)
	}
	return l
}

func countRequests(t *testing.T, base, query string) int {
	t.Helper()
	r := do(t, "GET", base+"/__admin/requests/count?"+query, "")
	if r.status != 200 {
		t.Fatalf("GET /__admin/requests/count?%s: %d %s", query, r.status, r.body)
	}
	var c struct{ Count *int }
	if err := json.Unmarshal([]byte(r.body), &c); err != nil || c.Count == nil {
		t.Fatalf("count answer %s: %v", r.body, err)
	}
	return *c.Count
}

func paths(es []state.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Method + " " + e.Path
	}
	return out
}

func TestJournalFilters(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, journalScenario)
	do(t, "POST", hs.URL+"/v1/payments?expand=customer", `{"amount":9800,"customer":{"id":"cus_1"},"items":[{"sku":"x"},{"sku":"y"}]}`,
		"Content-Type", jsonCT, "X-Tenant", "t1")
	do(t, "POST", hs.URL+"/v1/payments", `{"amount":100,"customer":{"id":"cus_2"},"items":[]}`, "Content-Type", jsonCT, "X-Tenant", "t2")
	do(t, "GET", hs.URL+"/v1/payments/pay_1", "")
	do(t, "GET", hs.URL+"/teapot", "")
	do(t, "GET", hs.URL+"/nowhere?expand=all", "")
	all := listRequests(t, hs.URL, "")
	if all.Total != 5 || len(all.Requests) != 5 {
		t.Fatalf("%d entries (total %d), want 5: %v", len(all.Requests), all.Total, paths(all.Requests))
	}
	third := all.Requests[2]
	p1, p2, get, teapot, miss := "POST /v1/payments", "POST /v1/payments", "GET /v1/payments/pay_1", "GET /teapot", "GET /nowhere"
	for _, tc := range []struct {
		query string
		want  []string // the entries listed, oldest first
		total int      // -1: len(want)
	}{
		{"route=create+payment", []string{p1, p2}, -1},
		{"route=teapot", []string{teapot}, -1},
		{"method=GET", []string{get, teapot, miss}, -1},
		{"path=/v1/payments", []string{p1, p2}, -1},
		{"path=/v1/payments/*", []string{get}, -1},
		{"path=/v1/**", []string{p1, p2, get}, -1},
		{"status=201", []string{p1, p2}, -1},
		{"status=4xx", []string{teapot, miss}, -1},
		{"status=418", []string{teapot}, -1},
		{"header.X-Tenant=t1", []string{p1}, -1},
		{"header.x-tenant=t2", []string{p2}, -1},
		{"query.expand=customer", []string{p1}, -1},
		{"query.expand=all", []string{miss}, -1},
		{"body.amount=9800", []string{p1}, -1},
		{"body.customer.id=cus_2", []string{p2}, -1},
		{"body.items.1.sku=y", []string{p1}, -1},
		{"body.items.0.sku=y", nil, -1},
		{"matched=false", []string{miss}, -1},
		{"matched=true", []string{p1, p2, get, teapot}, -1},
		{"since=" + fmt.Sprint(third.ID), []string{teapot, miss}, -1},
		{"since=" + url.QueryEscape(third.Time.Format(time.RFC3339Nano)), []string{get, teapot, miss}, -1},
		{"limit=2", []string{teapot, miss}, 5}, // the newest two, newest last
		{"method=GET&limit=1", []string{miss}, 3},
		{"method=POST&header.X-Tenant=t2&body.amount=100", []string{p2}, -1},
		{"method=POST&status=4xx", nil, -1},
	} {
		t.Run(tc.query, func(t *testing.T) {
			t.Parallel()
			l := listRequests(t, hs.URL, tc.query)
			total := tc.total
			if total < 0 {
				total = len(tc.want)
			}
			if got := paths(l.Requests); !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 || l.Total != total {
				t.Errorf("listed %v (total %d), want %v (total %d)", got, l.Total, tc.want, total)
			}
			q, _ := url.ParseQuery(tc.query)
			q.Del("limit")
			if n := countRequests(t, hs.URL, q.Encode()); n != total {
				t.Errorf("count = %d, want %d", n, total)
			}
		})
	}
}

func TestJournalBadFilter(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, journalScenario)
	for _, tc := range []struct{ path, param string }{
		{"/__admin/requests?status=abc", "status=abc"},
		{"/__admin/requests?stauts=201", "stauts=201"},
		{"/__admin/requests?limit=0", "limit=0"},
		{"/__admin/requests?since=yesterday", "since=yesterday"},
		{"/__admin/requests/count?matched=maybe", "matched=maybe"},
		{"/__admin/requests/stream?path=v1", "path=v1"},
		{"/__admin/requests/stream?after=x", "after"},
		// What url.Query would drop, making the filter match everything.
		{"/__admin/requests/count?method=DELETE;", "does not parse"},
		{"/__admin/requests/count?body.a=%zz", "does not parse"},
		{"/__admin/requests?path=/" + strings.Repeat("*a", 200), "at most 256 bytes"},
	} {
		r := do(t, "GET", hs.URL+tc.path, "")
		if r.status != 400 || r.header.Get("Content-Type") != "application/problem+json" || !strings.Contains(r.body, tc.param) {
			t.Errorf("GET %s: %d %s %s; want a 400 problem naming %s", tc.path, r.status, r.header.Get("Content-Type"), r.body, tc.param)
		}
	}
	if r := do(t, "POST", hs.URL+"/__admin/requests", ""); r.status != 405 || r.header.Get("Allow") != "GET, DELETE" {
		t.Errorf("POST /__admin/requests: %d Allow=%q", r.status, r.header.Get("Allow"))
	}
}

func TestJournalEntry(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{JournalBodyLimit: 16}, journalScenario)
	body := `{"amount":9800,"currency":"JPY"}`
	do(t, "POST", hs.URL+"/v1/payments?a=1&b=2", body, "Content-Type", jsonCT, "X-Trace", "t-1")
	do(t, "POST", hs.URL+"/v1/payments", "\xff\xfe\x00bin")
	l := listRequests(t, hs.URL, "")
	if len(l.Requests) != 2 {
		t.Fatalf("%d entries", len(l.Requests))
	}
	e := l.Requests[0]
	if e.ID != 1 || e.Method != "POST" || e.Path != "/v1/payments" || e.Query != "a=1&b=2" || e.Route != "create payment" || !e.Matched ||
		e.Status != 201 || e.Version != 1 || e.Fault != "" || e.DelayMs != 0 || e.DurationMs < 0 || e.Time.IsZero() {
		t.Errorf("entry: %+v", e)
	}
	if got := e.Headers["X-Trace"]; len(got) != 1 || got[0] != "t-1" || e.Headers["Content-Type"][0] != jsonCT {
		t.Errorf("headers: %v", e.Headers)
	}
	if string(e.Body) != body[:16] || !e.BodyTruncated || e.BodySize != int64(len(body)) {
		t.Errorf("body %q truncated=%v size=%d; want the first 16 bytes of %d, truncated", e.Body, e.BodyTruncated, e.BodySize, len(body))
	}
	// Not UTF-8: the JSON carries it as bodyBase64.
	raw := do(t, "GET", hs.URL+"/__admin/requests?since=1", "").body
	var second struct{ Requests []map[string]any }
	if err := json.Unmarshal([]byte(raw), &second); err != nil || len(second.Requests) != 1 {
		t.Fatalf("GET /__admin/requests?since=1: %v\n%s", err, raw)
	}
	if e := second.Requests[0]; e["bodyBase64"] != "//4AYmlu" || e["body"] != nil {
		t.Errorf("a non-UTF-8 body is not bodyBase64:\n%s", raw)
	}
	if b := l.Requests[1]; string(b.Body) != "\xff\xfe\x00bin" || b.BodyTruncated || b.BodySize != 6 {
		t.Errorf("binary body: %q truncated=%v size=%d", b.Body, b.BodyTruncated, b.BodySize)
	}
}

// TestJournalBodyBufferReused: the journal copies the body out of the
// pooled buffer, which the next request overwrites.
func TestJournalBodyBufferReused(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, journalScenario)
	for i := range 20 {
		do(t, "POST", hs.URL+"/v1/payments", fmt.Sprintf(`{"n":%02d}`, i))
	}
	for i, e := range listRequests(t, hs.URL, "").Requests {
		if want := fmt.Sprintf(`{"n":%02d}`, i); string(e.Body) != want {
			t.Errorf("entry %d: body %q, want %q", e.ID, e.Body, want)
		}
	}
}

func TestJournalNearMisses(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{Explain: ExplainOff}, journalScenario)
	do(t, "GET", hs.URL+"/v1/payment/pay_1", "")
	l := listRequests(t, hs.URL, "matched=false")
	if len(l.Requests) != 1 {
		t.Fatalf("unmatched entries: %v", paths(l.Requests))
	}
	e := l.Requests[0]
	if e.Status != 404 || e.Matched || e.Route != "" || len(e.NearMisses) == 0 || e.NearMisses[0].Route != "get payment" ||
		!strings.Contains(e.NearMisses[0].Reason, "/v1/payments/{id}") {
		t.Errorf("unmatched entry (the 404 explains nothing, the journal does): %+v", e)
	}
}

func TestJournalFallback(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, journalScenario+"fallback: { status: 204 }\n")
	do(t, "GET", hs.URL+"/teapots", "")
	l := listRequests(t, hs.URL, "")
	if len(l.Requests) != 1 {
		t.Fatalf("entries: %v", paths(l.Requests))
	}
	if e := l.Requests[0]; e.Route != "(fallback)" || e.Matched || e.Status != 204 || len(e.NearMisses) == 0 || e.NearMisses[0].Route != "teapot" {
		t.Errorf("fallback entry: %+v", e)
	}
}

func TestJournalCap(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{JournalSize: 3}, journalScenario)
	for i := range 5 {
		do(t, "GET", hs.URL+fmt.Sprintf("/v1/payments/p%d", i), "")
	}
	l := listRequests(t, hs.URL, "")
	if got := paths(l.Requests); !slices.Equal(got, []string{"GET /v1/payments/p2", "GET /v1/payments/p3", "GET /v1/payments/p4"}) ||
		l.Requests[0].ID != 3 || l.Total != 3 {
		t.Errorf("with a cap of 3 after 5 requests: %v (total %d)", got, l.Total)
	}
}

func TestJournalOff(t *testing.T) {
	t.Parallel()
	s, hs, _ := serveYAML(t, Options{JournalSize: -1}, journalScenario)
	do(t, "POST", hs.URL+"/v1/payments", `{}`)
	for _, c := range []struct{ method, path string }{{"GET", "/__admin/requests"}, {"GET", "/__admin/requests/count"}, {"DELETE", "/__admin/requests"}, {"GET", "/__admin/requests/stream"}} {
		if r := do(t, c.method, hs.URL+c.path, ""); r.status != 404 || !strings.Contains(r.body, "journal is off") {
			t.Errorf("%s %s with the journal off: %d %s", c.method, c.path, r.status, r.body)
		}
	}
	if es, _ := s.state.Journal().Entries(context.Background(), 0); len(es) != 0 {
		t.Errorf("journal off, yet %d entries", len(es))
	}
}

func TestJournalAdminNotJournaled(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{MaxBody: 8}, journalScenario)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/__admin/health", ""},
		{"GET", "/__admin/scenarios", ""},
		{"GET", "/__admin/requests", ""},
		{"GET", "/__admin/requests/count", ""},
		{"GET", "/__admin/nothing", ""},
		{"POST", "/__admin/reload", "a body too large for MaxBody"},
		{"GET", "/__admin/requests?status=x", ""},
	} {
		do(t, c.method, hs.URL+c.path, c.body)
	}
	do(t, "GET", hs.URL+"/teapot", "")
	if got := paths(listRequests(t, hs.URL, "").Requests); !slices.Equal(got, []string{"GET /teapot"}) {
		t.Errorf("journal after admin calls and one mock request: %v", got)
	}
}

func TestJournalClearAndCount(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, journalScenario)
	do(t, "GET", hs.URL+"/teapot", "")
	do(t, "GET", hs.URL+"/teapot", "")
	if n := countRequests(t, hs.URL, "route=teapot"); n != 2 {
		t.Fatalf("count = %d, want 2", n)
	}
	if r := do(t, "DELETE", hs.URL+"/__admin/requests", ""); r.status != 204 {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	if n := countRequests(t, hs.URL, ""); n != 0 {
		t.Errorf("count after DELETE = %d", n)
	}
	do(t, "GET", hs.URL+"/teapot", "")
	if l := listRequests(t, hs.URL, ""); len(l.Requests) != 1 || l.Requests[0].ID != 3 {
		t.Errorf("after a clear: %+v; want one entry, ID 3 (IDs are not reused)", l.Requests)
	}
}

// TestJournalIsolation: each server has its journal.
func TestJournalIsolation(t *testing.T) {
	t.Parallel()
	_, a, _ := serveYAML(t, Options{}, journalScenario)
	_, b, _ := serveYAML(t, Options{}, journalScenario)
	do(t, "GET", a.URL+"/teapot", "")
	do(t, "GET", b.URL+"/v1/payments/x", "")
	do(t, "GET", b.URL+"/v1/payments/y", "")
	if got := paths(listRequests(t, a.URL, "").Requests); !slices.Equal(got, []string{"GET /teapot"}) {
		t.Errorf("server a: %v", got)
	}
	if n := countRequests(t, b.URL, ""); n != 2 {
		t.Errorf("server b: %d entries, want 2", n)
	}
}

const resetScenario = `
collections:
  customers:
    - { id: cus_1, name: Ada }
routes:
  - name: create order
    method: POST
    path: /orders
    respond:
      status: 201
      template: true
      body: { id: 'ord_{{ seq "orders" }}' }
      save: { collection: orders, id: '{{ .Response.JSON.id }}' }
  - name: steps
    method: GET
    path: /steps
    responses:
      - { status: 200, body: { step: 1 } }
      - { status: 200, body: { step: 2 } }
  - name: charge
    method: POST
    path: /charges
    idempotency: { key: header.Idempotency-Key }
    respond: { status: 201, template: true, body: { id: 'ch_{{ .Call }}' } }
  - name: delete customer
    method: DELETE
    path: /customers/{id}
    respond: { status: 204, delete: { collection: customers, id: '{{ .Request.Vars.id }}' } }
`

// TestResetEverything: one POST /__admin/reset forgets sequences,
// idempotency keys, counters, collections (seeded ones refilled), the
// unmatched count and the journal.
func TestResetEverything(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, resetScenario)
	use := func() (order, step, charge string, replayed bool) {
		order = do(t, "POST", hs.URL+"/orders", "").body
		step = do(t, "GET", hs.URL+"/steps", "").body
		c := do(t, "POST", hs.URL+"/charges", "{}", "Idempotency-Key", "k")
		return order, step, c.body, c.header.Get("Idempotent-Replayed") == "true"
	}
	use()
	order, step, _, replayed := use()
	if order != `{"id":"ord_2"}` || step != `{"step":2}` || !replayed {
		t.Fatalf("before the reset, state did not build up: %s %s replayed=%v", order, step, replayed)
	}
	do(t, "DELETE", hs.URL+"/customers/cus_1", "")
	do(t, "GET", hs.URL+"/nowhere", "")
	if r := do(t, "POST", hs.URL+"/__admin/reset", ""); r.status != 200 {
		t.Fatalf("reset: %d %s", r.status, r.body)
	}
	if n := countRequests(t, hs.URL, ""); n != 0 {
		t.Errorf("journal after reset: %d entries", n)
	}
	if u := do(t, "GET", hs.URL+"/__admin/scenarios", "").json(t)["unmatched"]; u != float64(0) {
		t.Errorf("unmatched after reset = %v", u)
	}
	if c := do(t, "GET", hs.URL+"/__admin/collections/customers", "").json(t)["total"]; c != float64(1) {
		t.Errorf("seeded customers after reset: %v, want the seed's 1", c)
	}
	order, step, charge, replayed := use()
	if order != `{"id":"ord_1"}` || step != `{"step":1}` || charge != `{"id":"ch_1"}` || replayed {
		t.Errorf("after reset: order %s step %s charge %s replayed=%v; want everything from the start", order, step, charge, replayed)
	}
	if c := do(t, "GET", hs.URL+"/__admin/collections/orders", "").json(t)["total"]; c != float64(1) {
		t.Errorf("orders after reset and one order: %v, want 1", c)
	}
	if n := countRequests(t, hs.URL, ""); n != 3 {
		t.Errorf("journal after reset and 3 requests: %d entries", n)
	}
}

func TestJournalIdempotencyOutcomes(t *testing.T) {
	t.Parallel()
	clock := newGateClock()
	_, hs, _ := serveYAML(t, Options{Clock: clock}, idemScenario)
	key := func(k string) []string { return []string{"Content-Type", jsonCT, "Idempotency-Key", k} }
	do(t, "POST", hs.URL+"/payments", `{"amount":1}`, key("k1")...) // new
	do(t, "POST", hs.URL+"/payments", `{"amount":1}`, key("k1")...) // replayed
	do(t, "POST", hs.URL+"/payments", `{"amount":2}`, key("k1")...) // mismatch
	do(t, "POST", hs.URL+"/payments", `{"amount":1}`)               // missing-key
	do(t, "POST", hs.URL+"/payments", `{"amount":1}`, key(`""`)...) // invalid-key
	first := make(chan response, 1)
	go func() {
		r, _ := doCtx(context.Background(), "POST", hs.URL+"/transfers", `{}`, key("t1")...)
		first <- r
	}()
	clock.waitBegan(t, 1)
	if r := do(t, "POST", hs.URL+"/transfers", `{}`, key("t1")...); r.status != 409 { // in-flight
		t.Errorf("second transfer while the first runs: %d", r.status)
	}
	close(clock.gate)
	if r := <-first; r.status != 201 {
		t.Errorf("first transfer: %d", r.status)
	}
	l := listRequests(t, hs.URL, "")
	var got []string
	for _, e := range l.Requests {
		got = append(got, fmt.Sprintf("%s %d %s", e.Path, e.Status, e.Idempotency))
	}
	want := []string{
		"/payments 201 new", "/payments 201 replayed", "/payments 422 mismatch", "/payments 400 missing-key", "/payments 400 invalid-key",
		"/transfers 409 in-flight", "/transfers 201 new",
	}
	if !slices.Equal(got, want) {
		t.Errorf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := countRequests(t, hs.URL, "idempotency=replayed"); n != 1 {
		t.Errorf("idempotency=replayed: %d", n)
	}
}

// TestJournalNoAnswer: requests answered by no HTTP response are journaled
// with status 0: a fault, a client that left during the delay. The reset
// is journaled before it is sent (deliverFault), so /reset is always the
// first entry: it used to be journaled after the client saw the reset,
// and /slow, sent next, could overtake it (3-4 failures in 100 runs).
func TestJournalNoAnswer(t *testing.T) {
	t.Parallel()
	clock := newGateClock()
	_, hs, _ := serveYAML(t, Options{Clock: clock}, journalScenario)
	if _, err := doCtx(context.Background(), "GET", hs.URL+"/reset", ""); err == nil {
		t.Error("the fault answered")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := doCtx(ctx, "GET", hs.URL+"/slow", ""); done <- err }()
	clock.waitBegan(t, 1)
	cancel()
	<-done
	var l journalList
	eventually(t, patience, func() string {
		l = listRequests(t, hs.URL, "status=0")
		if len(l.Requests) != 2 {
			return fmt.Sprintf("status=0 entries: %v", paths(l.Requests))
		}
		return ""
	})
	if e := l.Requests[0]; e.Path != "/reset" || e.Fault != "connection-reset" || e.Route != "reset" || !e.Matched {
		t.Errorf("fault entry: %+v", e)
	}
	if e := l.Requests[1]; e.Path != "/slow" || e.Fault != "" || e.DelayMs != 10000 {
		t.Errorf("client gone during the delay: %+v", e)
	}
}

// TestJournalFaultAfter: the fault and when it struck come from the
// request's typed outcome; a request is journaled once.
func TestJournalFaultAfter(t *testing.T) {
	t.Parallel()
	s, _, _ := serveYAML(t, Options{}, journalScenario)
	snap := s.snap.Load()
	x := s.exchangeFor(nil, httptestRequest("GET", "/x"), time.Now(), snap)
	x.out.route = "x"
	x.out.fault = &scenarios.Fault{Kind: scenarios.ConnectionReset, After: scenarios.AfterProcessing}
	s.record(x)
	s.record(x) // once only
	s.finish(x) // and finish does not journal it again
	es, _ := s.state.Journal().Entries(context.Background(), 0)
	if len(es) != 1 || es[0].Fault != "connection-reset" || es[0].FaultAfter != "processing" || !x.recorded {
		t.Errorf("entries: %+v", es)
	}
}

func httptestRequest(method, target string) *http.Request {
	r, _ := http.NewRequest(method, "http://mock"+target, nil)
	return r
}

func TestJournalBodyRefused(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{MaxBody: 10}, journalScenario)
	if r := do(t, "POST", hs.URL+"/v1/payments", strings.Repeat("a", 100)); r.status != 413 {
		t.Fatalf("status %d", r.status)
	}
	l := listRequests(t, hs.URL, "status=413")
	if len(l.Requests) != 1 {
		t.Fatalf("413 entries: %v", paths(l.Requests))
	}
	if e := l.Requests[0]; e.Matched || e.BodySize != 100 || !e.BodyTruncated || len(e.Body) != 0 {
		t.Errorf("refused body entry: %+v", e)
	}
}

// sseEvent is one event of the request stream.
type sseEvent struct {
	id, event, data, comment string
}

// openStream opens GET /__admin/requests/stream?query and returns a
// function reading its next event (or comment). The server has decided
// where the stream starts once openStream returns.
func openStream(t *testing.T, base, query string, header ...string) (next func() sseEvent, body io.ReadCloser) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/__admin/requests/stream?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	return func() sseEvent {
		t.Helper()
		var ev sseEvent
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the stream: %v (so far %+v)", err, ev)
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "":
				return ev
			case strings.HasPrefix(line, ":"):
				ev.comment = strings.TrimSpace(line[1:])
			default:
				k, v, _ := strings.Cut(line, ": ")
				switch k {
				case "id":
					ev.id = v
				case "event":
					ev.event = v
				case "data":
					ev.data = v
				}
			}
		}
	}, resp.Body
}

func (ev sseEvent) entry(t *testing.T) state.Entry {
	t.Helper()
	var e state.Entry
	if err := json.Unmarshal([]byte(ev.data), &e); err != nil {
		t.Fatalf("event data %q: %v", ev.data, err)
	}
	if ev.event != "request" || ev.id != fmt.Sprint(e.ID) {
		t.Fatalf("event %+v: want event request with the entry's id", ev)
	}
	return e
}

func TestJournalStream(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, journalScenario)
	do(t, "GET", hs.URL+"/v1/payments/old", "") // before the stream: not sent
	live, _ := openStream(t, hs.URL, "")
	posts, _ := openStream(t, hs.URL, "method=POST")
	do(t, "GET", hs.URL+"/teapot", "")
	do(t, "POST", hs.URL+"/v1/payments", `{"a":1}`)
	if e := live().entry(t); e.Path != "/teapot" || e.ID != 2 {
		t.Errorf("first live event: %+v", e)
	}
	if e := live().entry(t); e.Path != "/v1/payments" || string(e.Body) != `{"a":1}` {
		t.Errorf("second live event: %+v", e)
	}
	if e := posts().entry(t); e.Path != "/v1/payments" || e.Method != "POST" {
		t.Errorf("method=POST stream sent %+v first", e)
	}
	// Resuming: after= and Last-Event-ID (which wins) replay what is kept
	// past the ID, then go live.
	from1, _ := openStream(t, hs.URL, "after=1")
	if e := from1().entry(t); e.ID != 2 {
		t.Errorf("after=1 sent ID %d first", e.ID)
	}
	all, _ := openStream(t, hs.URL, "after=0")
	if e := all().entry(t); e.ID != 1 || e.Path != "/v1/payments/old" {
		t.Errorf("after=0 sent %+v first", e)
	}
	resumed, _ := openStream(t, hs.URL, "after=0", "Last-Event-ID", "2")
	if e := resumed().entry(t); e.ID != 3 {
		t.Errorf("Last-Event-ID: 2 sent ID %d first", e.ID)
	}
	do(t, "GET", hs.URL+"/teapot", "")
	if e := resumed().entry(t); e.ID != 4 {
		t.Errorf("after the replay, live: ID %d", e.ID)
	}
}

func TestJournalStreamKeepAlive(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{streamKeepAlive: 20 * time.Millisecond}, journalScenario)
	next, _ := openStream(t, hs.URL, "")
	if ev := next(); ev.comment != "keep-alive" {
		t.Errorf("want a keep-alive comment while nothing happens, got %+v", ev)
	}
	do(t, "GET", hs.URL+"/teapot", "")
	for {
		ev := next()
		if ev.comment == "keep-alive" {
			continue
		}
		if e := ev.entry(t); e.Path != "/teapot" {
			t.Errorf("event after keep-alives: %+v", e)
		}
		break
	}
}

// TestJournalStreamEndsAtShutdown: a tail never ends on its own, so
// shutdown ends it at once instead of waiting ShutdownTimeout for it.
func TestJournalStreamEndsAtShutdown(t *testing.T) {
	base, stop := serveReal(t, Options{ShutdownTimeout: 10 * time.Minute}, journalScenario)
	_, body := openStream(t, base, "")
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(patience):
		t.Fatal("shutdown still waiting for the request stream")
	}
	if _, err := io.ReadAll(body); err != nil {
		t.Errorf("the stream did not end cleanly: %v", err)
	}
}

// TestJournalConnectionRecord: under Serve the requests of a keep-alive
// connection share one journal record; each entry is still its own
// request's, and admin calls on the connection are not journaled.
func TestJournalConnectionRecord(t *testing.T) {
	base, stop := serveReal(t, Options{MaxBody: 64}, journalScenario)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	var conns []string
	send := func(method, path, body string) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		trace := &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) { conns = append(conns, ci.Conn.LocalAddr().String()) }}
		resp, err := client.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	send("POST", "/v1/payments?n=1", `{"n":1}`)
	send("GET", "/__admin/health", "")
	send("GET", "/teapot", "")
	send("GET", "/__admin/requests", "")
	send("GET", "/nowhere", "")
	send("POST", "/v1/payments", strings.Repeat("x", 100)) // 413, and the connection closes
	if conns[0] != conns[len(conns)-1] {
		t.Fatalf("the requests did not share a connection: %v", conns)
	}
	send("POST", "/__admin/reload", strings.Repeat("x", 100)) // an admin 413
	l := listRequests(t, base, "")
	var got []string
	for _, e := range l.Requests {
		got = append(got, fmt.Sprintf("%s %s?%s %d route=%q body=%q size=%d near=%d", e.Method, e.Path, e.Query, e.Status, e.Route, e.Body, e.BodySize, len(e.NearMisses)))
	}
	want := []string{
		`POST /v1/payments?n=1 201 route="create payment" body="{\"n\":1}" size=7 near=0`,
		`GET /teapot? 418 route="teapot" body="" size=0 near=0`,
		`GET /nowhere? 404 route="" body="" size=0 near=3`,
		`POST /v1/payments? 413 route="" body="" size=100 near=0`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// brokenSequences is a store whose sequences fail, as a remote store's do
// when its connection is lost.
type brokenSequences struct{ *state.Memory }

func (brokenSequences) Sequences() state.Sequences { return failingSequences{} }

type failingSequences struct{}

func (failingSequences) Hit(context.Context, string) (int64, error) { return 0, errCountersDown }
func (failingSequences) HitKey(context.Context, string, string) (state.Position, error) {
	return state.Position{}, errCountersDown
}
func (failingSequences) Count(context.Context, string) (state.SequenceCount, error) {
	return state.SequenceCount{}, errCountersDown
}
func (failingSequences) Reset(context.Context, string) error    { return errCountersDown }
func (failingSequences) Retain(context.Context, []string) error { return errCountersDown }

// TestJournalStoreDown: a request answered 503 because the state store
// failed is journaled like any other.
func TestJournalStoreDown(t *testing.T) {
	t.Parallel()
	store := brokenSequences{state.NewMemory(state.Options{})}
	// A sequence's answer depends on its position in the store (a route
	// that needs no state counts its hits in-process and keeps serving).
	_, hs, _ := serveYAML(t, Options{State: store}, journalScenario+`
  - name: steps
    method: GET
    path: /steps
    responses: [{ status: 500 }, { status: 200 }]
`)
	if r := do(t, "GET", hs.URL+"/steps", ""); r.status != 503 {
		t.Fatalf("status %d", r.status)
	}
	l := listRequests(t, hs.URL, "")
	if len(l.Requests) != 1 || l.Requests[0].Status != 503 || l.Requests[0].Route != "steps" || !l.Requests[0].Matched {
		t.Errorf("entries: %+v", l.Requests)
	}
}

// brokenJournal is a store whose journal fails.
type brokenJournal struct{ *state.Memory }

func (brokenJournal) Journal() state.Journal { return failingJournal{} }

type failingJournal struct{}

func (failingJournal) Append(context.Context, *state.Entry) error { return errCountersDown }
func (failingJournal) Entries(context.Context, int64) ([]state.Entry, error) {
	return nil, errCountersDown
}
func (failingJournal) Clear(context.Context) error       { return errCountersDown }
func (failingJournal) Wait(context.Context, int64) error { return errCountersDown }

// TestJournalDown: a journal that fails does not fail the requests it
// records (the log says so); reading it answers 503.
func TestJournalDown(t *testing.T) {
	t.Parallel()
	store := brokenJournal{state.NewMemory(state.Options{})}
	_, hs, logs := serveYAML(t, Options{State: store}, journalScenario)
	if r := do(t, "GET", hs.URL+"/teapot", ""); r.status != 418 {
		t.Errorf("request with the journal down: %d", r.status)
	}
	if !strings.Contains(logs.String(), "request not journaled") {
		t.Errorf("no warning in the log:\n%s", logs)
	}
	for _, c := range []struct{ method, path string }{{"GET", "/__admin/requests"}, {"GET", "/__admin/requests/count"}, {"DELETE", "/__admin/requests"}, {"GET", "/__admin/requests/stream"}} {
		if r := do(t, c.method, hs.URL+c.path, ""); r.status != 503 {
			t.Errorf("%s %s with the journal down: %d %s", c.method, c.path, r.status, r.body)
		}
	}
}

// TestJournalHead: a HEAD answered by a GET route is journaled once, as
// the HEAD it was.
func TestJournalHead(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, journalScenario)
	do(t, "HEAD", hs.URL+"/teapot", "")
	l := listRequests(t, hs.URL, "")
	if len(l.Requests) != 1 || l.Requests[0].Method != "HEAD" || l.Requests[0].Route != "teapot" || l.Requests[0].Status != 418 {
		t.Errorf("entries: %+v", l.Requests)
	}
}

// TestJournalStreamNonReaderAtShutdown: a stream client that stops
// reading, its connection full, does not hold shutdown: the blocked write
// ends when shutdown begins.
func TestJournalStreamNonReaderAtShutdown(t *testing.T) {
	base, stop := serveReal(t, Options{ShutdownTimeout: 10 * time.Minute}, journalScenario)
	addr := strings.TrimPrefix(base, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	if _, err := fmt.Fprintf(conn, "GET /__admin/requests/stream?after=0 HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
		t.Fatal(err)
	}
	// More than the socket buffers between the two hold: the stream's
	// write blocks, as nothing reads.
	body := strings.Repeat("x", 60<<10)
	for range 300 {
		resp, err := http.Post(base+"/v1/payments", "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(patience):
		t.Fatal("shutdown still waiting for a stream whose client does not read")
	}
}

// TestJournalRefusedChunkedBody: a chunked body refused for its size (no
// Content-Length to record) is still marked as cut.
func TestJournalRefusedChunkedBody(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{MaxBody: 64}, journalScenario)
	// A reader of unknown length: the client sends it chunked.
	resp, err := http.Post(hs.URL+"/v1/payments", "text/plain", io.MultiReader(strings.NewReader(strings.Repeat("x", 100))))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("status %d, want 413", resp.StatusCode)
	}
	l := listRequests(t, hs.URL, "")
	if len(l.Requests) != 1 || l.Requests[0].Status != 413 || !l.Requests[0].BodyTruncated || len(l.Requests[0].Body) != 0 {
		t.Errorf("entries: %+v, want one 413 with bodyTruncated and no body", l.Requests)
	}
}

// TestJournalCatchAll: a route marked unmatched: true answers, and its
// entry says it matched no route, naming the route, as a catch-all; an
// idempotent catch-all too.
func TestJournalCatchAll(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - { name: known, method: GET, path: /v1/known, respond: { status: 200 } }
  - { name: unknown URL, method: ANY, path: '/v1/{p:.*}', priority: -1, unmatched: true, respond: { status: 404 } }
  - name: idem catch-all
    method: POST
    path: '/v2/{p:.*}'
    unmatched: true
    idempotency: { key: header.Idempotency-Key }
    respond: { status: 404 }
`)
	if r := do(t, "GET", hs.URL+"/v1/nope", ""); r.status != 404 {
		t.Fatalf("GET /v1/nope: %d", r.status)
	}
	do(t, "GET", hs.URL+"/v1/known", "")
	do(t, "POST", hs.URL+"/v2/x", "{}", "Idempotency-Key", "k")
	l := listRequests(t, hs.URL, "matched=false")
	if l.Total != 2 {
		t.Fatalf("matched=false: %v", paths(l.Requests))
	}
	for i, want := range []string{"unknown URL", "idem catch-all"} {
		if e := l.Requests[i]; e.Route != want || e.Matched || !e.CatchAll {
			t.Errorf("entry %d: route %q matched %v catchAll %v, want %q, false, true", i, e.Route, e.Matched, e.CatchAll, want)
		}
	}
	if e := listRequests(t, hs.URL, "matched=true").Requests; len(e) != 1 || e[0].Route != "known" || e[0].CatchAll {
		t.Errorf("matched=true: %+v", e)
	}
}

// TestJournalSecrets: credential headers are journaled redacted, a short
// digest telling them apart, and still selected by their value as sent;
// JournalKeepsSecrets keeps them.
func TestJournalSecrets(t *testing.T) {
	t.Parallel()
	const key = "Bearer sk_test_4eC39HqLyjWDarjtT1zdp7dc"
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			t.Parallel()
			_, hs, _ := serveYAML(t, Options{JournalKeepsSecrets: keep}, journalScenario)
			do(t, "GET", hs.URL+"/teapot", "", "Authorization", key, "Cookie", "session=s1", "X-Tenant", "t1")
			do(t, "GET", hs.URL+"/teapot", "", "Authorization", "Bearer sk_test_other")
			l := listRequests(t, hs.URL, "")
			if len(l.Requests) != 2 {
				t.Fatalf("%d entries", len(l.Requests))
			}
			h := l.Requests[0].Headers
			if keep {
				if h["Authorization"][0] != key || h["Cookie"][0] != "session=s1" {
					t.Errorf("kept: %v", h)
				}
				return
			}
			raw := do(t, "GET", hs.URL+"/__admin/requests", "").body
			if strings.Contains(raw, "sk_test") || strings.Contains(raw, "session=s1") {
				t.Errorf("the journal shows a credential: %s", raw)
			}
			if a := h["Authorization"][0]; !strings.HasPrefix(a, "Bearer redacted:") || a == l.Requests[1].Headers["Authorization"][0] {
				t.Errorf("Authorization %q, then %q: want redacted and told apart", a, l.Requests[1].Headers["Authorization"][0])
			}
			if h["X-Tenant"][0] != "t1" {
				t.Errorf("X-Tenant = %q", h["X-Tenant"])
			}
			if n := countRequests(t, hs.URL, "header.Authorization="+url.QueryEscape(key)); n != 1 {
				t.Errorf("header.Authorization=<the key>: %d, want 1", n)
			}
		})
	}
}
