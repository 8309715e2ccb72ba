package server

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// corsScenario is a payments API a browser app calls: an idempotent POST
// with a delay (held by the test's clock), a route written for OPTIONS,
// and a route with headers of its own.
const corsScenario = `
routes:
  - name: create payment
    method: POST
    path: /payments
    idempotency: { key: header.Idempotency-Key, required: true }
    respond:
      status: 201
      headers: { Location: /payments/pay_1, Request-Id: req_1 }
      body: { id: pay_1 }
  - name: slow transfer
    method: POST
    path: /transfers
    idempotency: { key: header.Idempotency-Key, required: true, onClientAbort: discard }
    respond: { status: 201, delay: 10s, body: { id: tr_1 } }
  - name: options of its own
    method: OPTIONS
    path: /custom
    respond: { status: 200, headers: { Allow: "GET, OPTIONS", X-Own: yes } }
  - name: any method
    path: /anything
    respond: { status: 200, body: { ok: true } }
`

const appOrigin = "http://localhost:5173"

// TestCORSPreflight: with --cors, a preflight is answered before routing,
// for a path with a route and for one without, unless a route was written
// for OPTIONS; a route that takes any method does not swallow preflights.
func TestCORSPreflight(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{CORS: true}, corsScenario)
	preflight := func(path string) response {
		return do(t, "OPTIONS", hs.URL+path, "", "Origin", appOrigin,
			"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type,idempotency-key")
	}
	for _, path := range []string{"/payments", "/no-such-route", "/anything"} {
		r := preflight(path)
		want := map[string]string{
			"Access-Control-Allow-Origin":      appOrigin,
			"Access-Control-Allow-Methods":     "POST",
			"Access-Control-Allow-Headers":     "content-type,idempotency-key",
			"Access-Control-Allow-Credentials": "true",
		}
		if r.status != 204 {
			t.Errorf("preflight %s: status %d %s, want 204", path, r.status, r.body)
		}
		for k, v := range want {
			if got := r.header.Get(k); got != v {
				t.Errorf("preflight %s: %s = %q, want %q", path, k, got, v)
			}
		}
		if !strings.Contains(r.header.Get("Vary"), "Origin") {
			t.Errorf("preflight %s: Vary = %q, want Origin in it", path, r.header.Get("Vary"))
		}
	}
	r := preflight("/custom")
	if r.status != 200 || r.header.Get("X-Own") != "yes" || r.header.Get("Access-Control-Allow-Methods") != "" {
		t.Errorf("route written for OPTIONS: %d %v, want its own 200 answer", r.status, r.header)
	}
	if r.header.Get("Access-Control-Allow-Origin") != appOrigin {
		t.Errorf("route written for OPTIONS: Allow-Origin %q, want the CORS headers on its answer too", r.header.Get("Access-Control-Allow-Origin"))
	}
	// An OPTIONS request that is not a preflight goes to the routes.
	if r := do(t, "OPTIONS", hs.URL+"/anything", ""); r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("plain OPTIONS: %d %v, want the any-method route's 200 without CORS headers", r.status, r.header)
	}
}

// TestCORSAnswers: every answer to a browser's request carries the CORS
// headers: a hit, a replay, the idempotency refusals, a 404 and a 413.
func TestCORSAnswers(t *testing.T) {
	t.Parallel()
	clock := newGateClock()
	_, hs, _ := serveYAML(t, Options{CORS: true, Clock: clock, MaxBody: 64}, corsScenario)
	origin := []string{"Origin", appOrigin}
	post := func(path, body string, headers ...string) response {
		return do(t, "POST", hs.URL+path, body, append(append([]string{"Content-Type", jsonCT}, origin...), headers...)...)
	}
	check := func(what string, r response, status int, expose ...string) {
		t.Helper()
		if r.status != status {
			t.Errorf("%s: status %d %s, want %d", what, r.status, r.body, status)
		}
		if got := r.header.Get("Access-Control-Allow-Origin"); got != appOrigin {
			t.Errorf("%s: Access-Control-Allow-Origin = %q, want %q", what, got, appOrigin)
		}
		if got := r.header.Get("Access-Control-Allow-Credentials"); got != "true" {
			t.Errorf("%s: Access-Control-Allow-Credentials = %q, want true", what, got)
		}
		if got := r.header.Get("Vary"); got != "Origin" {
			t.Errorf("%s: Vary = %q, want Origin", what, got)
		}
		exposed := r.header.Get("Access-Control-Expose-Headers")
		for _, e := range append(expose, "Idempotent-Replayed", "Location", "Retry-After") {
			if !strings.Contains(", "+exposed+",", ", "+e+",") {
				t.Errorf("%s: Access-Control-Expose-Headers = %q, want %s in it", what, exposed, e)
			}
		}
	}
	check("created", post("/payments", `{"a":1}`, "Idempotency-Key", "k1"), 201, "Request-Id")
	replay := post("/payments", `{"a":1}`, "Idempotency-Key", "k1")
	check("replay", replay, 201, "Request-Id")
	if replay.header.Get("Idempotent-Replayed") != "true" || len(replay.header.Values("Access-Control-Allow-Origin")) != 1 {
		t.Errorf("replay: %v, want one Allow-Origin (not the stored one again) and Idempotent-Replayed", replay.header)
	}
	check("mismatch", post("/payments", `{"a":2}`, "Idempotency-Key", "k1"), 422)
	check("missing key", post("/payments", `{"a":1}`), 400)
	check("miss", post("/refunds", `{}`), 404)
	check("too large", post("/payments", strings.Repeat("x", 100), "Idempotency-Key", "k2"), 413)

	// 409: the same key while the first request is in its delay.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan error, 1)
	go func() {
		_, err := doCtx(ctx, "POST", hs.URL+"/transfers", `{}`, "Content-Type", jsonCT, "Idempotency-Key", "t1")
		first <- err
	}()
	clock.waitBegan(t, 1)
	check("in flight", post("/transfers", `{}`, "Idempotency-Key", "t1"), 409)
	cancel()
	<-first

	// A request without Origin is no browser's: no CORS headers.
	if r := do(t, "GET", hs.URL+"/anything", ""); r.header.Get("Access-Control-Allow-Origin") != "" || r.header.Get("Vary") != "" {
		t.Errorf("no Origin: %v, want no CORS headers", r.header)
	}
}

// TestCORSFileBlock: a file's cors: block decides for its own routes; a
// foreign origin gets no Allow-Origin, on answers or preflights, and a
// file without a block answers no browser when --cors is off.
func TestCORSFileBlock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), `
cors:
  origins: ["http://localhost:*"]
  methods: [GET, POST]
  headers: [Content-Type, Idempotency-Key]
  exposeHeaders: [X-Trace]
  maxAge: 10m
routes:
  - path: /a
    respond: { status: 200, headers: { X-A: a } }
`)
	writeFile(t, filepath.Join(dir, "b.yaml"), `
routes:
  - path: /b
    respond: { status: 200 }
`)
	_, hs, _ := newTestServer(t, Options{}, dir)
	r := do(t, "GET", hs.URL+"/a", "", "Origin", appOrigin)
	if r.header.Get("Access-Control-Allow-Origin") != appOrigin || r.header.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("allowed origin: %v", r.header)
	}
	if e := r.header.Get("Access-Control-Expose-Headers"); e != "X-Trace, Idempotent-Replayed, Location, Retry-After, X-A" {
		t.Errorf("Expose-Headers = %q", e)
	}
	for _, foreign := range []string{"https://evil.example", "http://localhost"} {
		if r := do(t, "GET", hs.URL+"/a", "", "Origin", foreign); r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "" || r.header.Get("Vary") != "Origin" {
			t.Errorf("foreign origin %s: %d %v, want the answer without Allow-Origin", foreign, r.status, r.header)
		}
		pf := do(t, "OPTIONS", hs.URL+"/a", "", "Origin", foreign, "Access-Control-Request-Method", "GET")
		if pf.status != 403 || pf.header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("foreign preflight %s: %d %v", foreign, pf.status, pf.header)
		}
	}
	pf := do(t, "OPTIONS", hs.URL+"/a", "", "Origin", appOrigin, "Access-Control-Request-Method", "PUT", "Access-Control-Request-Headers", "x-other")
	if pf.status != 204 || pf.header.Get("Access-Control-Allow-Methods") != "GET, POST" ||
		pf.header.Get("Access-Control-Allow-Headers") != "Content-Type, Idempotency-Key" || pf.header.Get("Access-Control-Max-Age") != "600" {
		t.Errorf("preflight: %d %v, want the block's lists", pf.status, pf.header)
	}
	if r := do(t, "GET", hs.URL+"/b", "", "Origin", appOrigin); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("route of a file without a block: %v, want no Allow-Origin", r.header)
	}
	if r := do(t, "GET", hs.URL+"/nothing", "", "Origin", appOrigin); r.status != 404 || r.header.Get("Access-Control-Allow-Origin") != appOrigin {
		t.Errorf("404 for an origin a block allows: %d %v, want Allow-Origin so the page can read the problem", r.status, r.header)
	}
}

// TestCORSOff: without --cors or a block, nothing changes: a preflight
// is an OPTIONS request like another, and answers carry no CORS headers.
func TestCORSOff(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, corsScenario)
	r := do(t, "OPTIONS", hs.URL+"/payments", "", "Origin", appOrigin, "Access-Control-Request-Method", "POST")
	if r.status != 404 || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight with CORS off: %d %v, want the 404 of a miss", r.status, r.header)
	}
	if r := do(t, "GET", hs.URL+"/anything", "", "Origin", appOrigin); r.header.Get("Access-Control-Allow-Origin") != "" || r.header.Get("Vary") != "" {
		t.Errorf("answer with CORS off: %v", r.header)
	}
}

// TestCORSAdmin: --cors does not reach the admin API.
func TestCORSAdmin(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{CORS: true}, corsScenario)
	if r := do(t, "GET", hs.URL+"/__admin/health", "", "Origin", appOrigin); r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("admin: %d %v, want no CORS headers", r.status, r.header)
	}
}

// TestCORSSeveralFiles: a preflight comes before routing, so it gets what
// every block that allows the origin allows together; the answer to the
// request itself still follows its own route's file. A reload swaps the
// blocks with the routes.
func TestCORSSeveralFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), `
cors: { origins: ["http://localhost:*"], methods: [GET], maxAge: 60s }
routes: [{ path: /a, respond: { status: 200 } }]
`)
	writeFile(t, filepath.Join(dir, "b.yaml"), `
cors: { origins: ["http://localhost:5173"], methods: [POST], headers: [Idempotency-Key], maxAge: 10s, credentials: true }
routes: [{ path: /b, respond: { status: 200 } }]
`)
	s, hs, _ := newTestServer(t, Options{}, dir)
	pf := do(t, "OPTIONS", hs.URL+"/a", "", "Origin", appOrigin, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "idempotency-key")
	for k, v := range map[string]string{
		"Access-Control-Allow-Methods": "GET, POST", "Access-Control-Max-Age": "10",
		"Access-Control-Allow-Credentials": "true", "Access-Control-Allow-Headers": "idempotency-key",
	} {
		if got := pf.header.Get(k); got != v {
			t.Errorf("preflight: %s = %q, want %q", k, got, v)
		}
	}
	// Only the first block allows this origin.
	pf = do(t, "OPTIONS", hs.URL+"/a", "", "Origin", "http://localhost:3000", "Access-Control-Request-Method", "GET")
	if pf.header.Get("Access-Control-Allow-Methods") != "GET" || pf.header.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("preflight of the other origin: %v", pf.header)
	}
	if r := do(t, "GET", hs.URL+"/a", "", "Origin", appOrigin); r.header.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("a.yaml's route: %v, want its own block's answer (no credentials)", r.header)
	}
	if r := do(t, "GET", hs.URL+"/b", "", "Origin", appOrigin); r.header.Get("Access-Control-Allow-Credentials") != "true" {
		t.Errorf("b.yaml's route: %v, want its own block's answer (credentials)", r.header)
	}
	if r := do(t, "GET", hs.URL+"/b", "", "Origin", "http://localhost:3000"); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("b.yaml's route, an origin only a.yaml allows: %v, want no Allow-Origin", r.header)
	}

	writeFile(t, filepath.Join(dir, "b.yaml"), `
cors: { origins: ["https://app.example.com"] }
routes: [{ path: /b, respond: { status: 200 } }]
`)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if r := do(t, "GET", hs.URL+"/b", "", "Origin", appOrigin); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("after the reload: %v, want the new block's origins only", r.header)
	}
	if r := do(t, "GET", hs.URL+"/b", "", "Origin", "https://app.example.com"); r.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Errorf("after the reload, the new origin: %v", r.header)
	}
}
