package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/state"
)

// TestJournalKeepsTheAnswer: each entry keeps the answer its request got
// (status, head, body cut at --journal-body-limit), whatever sent it: a
// canned answer, a replay (the stored head with the replay header), a
// problem (a miss's 404 and an idempotency refusal), an answer a fault
// ate after processing (kept, marked lost, status 0 sent), one a fault
// sent in part, and a proxied answer streamed as it came (its head, no
// body). A fault at arrival made none. Set-Cookie is redacted like the
// request's credentials.
func TestJournalKeepsTheAnswer(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Upstream", "yes")
		w.WriteHeader(http.StatusAccepted)
		if r.URL.Path == "/small" {
			fmt.Fprint(w, "small from upstream") // a Content-Length: read whole, then sent
			return
		}
		w.(http.Flusher).Flush() // chunked, no length: passed on as it comes
		fmt.Fprint(w, "streamed from upstream")
	}))
	t.Cleanup(up.Close)
	_, hs, _ := serveYAML(t, Options{JournalBodyLimit: 24}, fmt.Sprintf(`
routes:
  - name: canned
    method: GET
    path: /canned
    respond:
      status: 200
      headers: { X-Answer: a-1, Set-Cookie: "sid=s3cret; Path=/" }
      body: { id: pay_1, description: a body longer than the limit }
  - name: create
    method: POST
    path: /payments
    idempotency: { key: header.Idempotency-Key }
    respond: { status: 201, template: true, body: { id: 'pay_{{ .Call }}' } }
  - name: lost
    method: POST
    path: /lost
    respond: { status: 201, body: { id: pay_lost }, fault: { kind: connection-reset, after: processing } }
  - name: at arrival
    method: GET
    path: /arrival
    respond: { status: 200, body: never, fault: connection-reset }
  - name: part
    method: GET
    path: /part
    respond: { status: 200, body: '{"partial":"answer"}', fault: { kind: partial-body, bytes: 5 } }
  - name: proxied
    method: GET
    path: /up
    respond: { proxy: %s }
  - name: proxied small
    method: GET
    path: /small
    respond: { proxy: %s }
`, up.URL, up.URL))
	do(t, "GET", hs.URL+"/canned", "")
	key := []string{"Content-Type", jsonCT, "Idempotency-Key", "k-1"}
	do(t, "POST", hs.URL+"/payments", `{"a":1}`, key...)
	do(t, "POST", hs.URL+"/payments", `{"a":1}`, key...) // the replay
	do(t, "POST", hs.URL+"/payments", `{"a":2}`, key...) // 422: the key's body differs
	do(t, "GET", hs.URL+"/nowhere", "")
	for _, p := range []string{"/lost", "/arrival", "/part"} {
		method := "GET"
		if p == "/lost" {
			method = "POST"
		}
		if _, err := doCtx(context.Background(), method, hs.URL+p, ""); err == nil && p != "/part" {
			t.Errorf("%s answered", p)
		}
	}
	for _, p := range []string{"/up", "/small"} {
		if r := do(t, "GET", hs.URL+p, ""); r.status != http.StatusAccepted {
			t.Fatalf("%s: %d %s", p, r.status, r.body)
		}
	}
	var l journalList
	eventually(t, patience, func() string {
		l = listRequests(t, hs.URL, "")
		if len(l.Requests) != 10 {
			return fmt.Sprintf("%d entries: %v", len(l.Requests), paths(l.Requests))
		}
		return ""
	})
	byPath := func(i int, path string) *state.EntryResponse {
		t.Helper()
		e := l.Requests[i]
		if e.Path != path {
			t.Fatalf("entry %d is %s, want %s", i, e.Path, path)
		}
		return e.Response
	}

	r := byPath(0, "/canned")
	const canned = `{"id":"pay_1","description":"a body longer than the limit"}`
	if r == nil || r.Status != 200 || r.Headers["X-Answer"][0] != "a-1" || r.Headers["Content-Type"][0] != "application/json" ||
		string(r.Body) != canned[:24] || r.BodySize != int64(len(canned)) || !r.BodyTruncated || r.Lost {
		t.Errorf("canned answer: %+v", r)
	}
	if c := r.Headers["Set-Cookie"]; len(c) != 1 || strings.Contains(c[0], "s3cret") || !strings.HasPrefix(c[0], "redacted:") {
		t.Errorf("Set-Cookie kept as %q, want it redacted", c)
	}
	if r := byPath(1, "/payments"); r == nil || r.Status != 201 || string(r.Body) != `{"id":"pay_1"}` || l.Requests[1].Idempotency != "new" {
		t.Errorf("first payment: %+v", r)
	}
	r = byPath(2, "/payments")
	if r == nil || r.Status != 201 || string(r.Body) != `{"id":"pay_1"}` || r.Headers["Idempotent-Replayed"][0] != "true" || l.Requests[2].Idempotency != "replayed" {
		t.Errorf("replay: %+v (entry %+v)", r, l.Requests[2])
	}
	r = byPath(3, "/payments")
	if r == nil || r.Status != 422 || r.Headers["Content-Type"][0] != "application/problem+json" || string(r.Body) != `{"type":"https://github.` || !r.BodyTruncated {
		t.Errorf("mismatch refusal: %+v", r)
	}
	if r := byPath(4, "/nowhere"); r == nil || r.Status != 404 || r.Headers["Content-Type"][0] != "application/problem+json" || r.BodySize < 100 {
		t.Errorf("miss: %+v", r)
	}
	e := l.Requests[5]
	if r := byPath(5, "/lost"); r == nil || e.Status != 0 || e.Fault != "connection-reset" || r.Status != 201 || !r.Lost || string(r.Body) != `{"id":"pay_lost"}` {
		t.Errorf("lost answer: %+v (entry status %d, fault %q)", r, e.Status, e.Fault)
	}
	if r := byPath(6, "/arrival"); r != nil {
		t.Errorf("a fault at arrival made an answer: %+v", r)
	}
	if r := byPath(7, "/part"); r == nil || l.Requests[7].Status != 200 || r.Lost || string(r.Body) != `{"partial":"answer"}` {
		t.Errorf("answer sent in part: %+v", r)
	}
	if r := byPath(8, "/up"); r == nil || r.Status != http.StatusAccepted || r.Headers["X-Upstream"][0] != "yes" || !r.Streamed || len(r.Body) != 0 {
		t.Errorf("proxied answer: %+v", r)
	}
	if r := byPath(9, "/small"); r == nil || r.Status != http.StatusAccepted || r.Streamed || string(r.Body) != "small from upstream" {
		t.Errorf("small proxied answer, read whole: %+v", r)
	}
	// As JSON, beside the request: "response": {status, headers, body}.
	raw := do(t, "GET", hs.URL+"/__admin/requests?path=/lost", "").body
	for _, want := range []string{`"response": {`, `"lost": true`, `"body": "{\"id\":\"pay_lost\"}"`, `"status": 201`} {
		if !strings.Contains(raw, want) {
			t.Errorf("GET /__admin/requests lacks %s:\n%s", want, raw)
		}
	}
}
