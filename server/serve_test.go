package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"
)

func TestSequences(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - name: flaky
    path: /flaky
    responses: [{ status: 500 }, { status: 503 }, { status: 201 }]
  - name: cycling
    path: /cycle
    sequence: { after: cycle }
    responses: [{ status: 200 }, { status: 202 }]
  - name: per order
    path: /orders/{id}
    sequence: { per: path.id }
    responses: [{ status: 500 }, { status: 200 }]
  - name: per customer
    method: POST
    path: /charges
    sequence: { per: body.customer.id }
    responses: [{ status: 201 }, { status: 409 }]
  - name: per query
    path: /q
    sequence: { per: query.k }
    responses: [{ status: 201 }, { status: 200 }]
`)
	statuses := func(method, path, body string, n int) string {
		var out []string
		for i := 0; i < n; i++ {
			out = append(out, fmt.Sprint(do(t, method, hs.URL+path, body).status))
		}
		return strings.Join(out, " ")
	}
	cases := []struct {
		name string
		got  func() string
		want string
	}{
		{"shared, repeat last", func() string { return statuses("GET", "/flaky", "", 5) }, "500 503 201 201 201"},
		{"cycle", func() string { return statuses("GET", "/cycle", "", 5) }, "200 202 200 202 200"},
		{"per path variable", func() string {
			return statuses("GET", "/orders/a", "", 2) + " | " + statuses("GET", "/orders/b", "", 1) + " | " + statuses("GET", "/orders/a", "", 1)
		}, "500 200 | 500 | 200"},
		{"per body field", func() string {
			return statuses("POST", "/charges", `{"customer":{"id":"c1"}}`, 2) + " | " + statuses("POST", "/charges", `{"customer":{"id":"c2"}}`, 1)
		}, "201 409 | 201"},
		{"per query parameter, absent shares one", func() string {
			return statuses("GET", "/q?k=1", "", 2) + " | " + statuses("GET", "/q", "", 2)
		}, "201 200 | 201 200"},
	}
	for _, c := range cases {
		if got := c.got(); got != c.want {
			t.Errorf("%s: statuses %s, want %s", c.name, got, c.want)
		}
	}
}

// TestSequenceConcurrentFirstCall checks that of many simultaneous first
// calls with one key exactly one gets the first response.
func TestSequenceConcurrentFirstCall(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - path: /p
    sequence: { per: header.Idempotency-Key }
    responses: [{ status: 201 }, { status: 200 }]
`)
	const n = 50
	var wg sync.WaitGroup
	results := make(chan int, n)
	for i := 0; i < n; i++ {
		wg.Go(func() { results <- do(t, "GET", hs.URL+"/p", "", "Idempotency-Key", "same").status })
	}
	wg.Wait()
	close(results)
	created := 0
	for s := range results {
		if s == 201 {
			created++
		}
	}
	if created != 1 {
		t.Errorf("%d of %d concurrent first calls got 201, want exactly 1", created, n)
	}
}

func TestSequenceKeysBounded(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{MaxSequenceKeys: 3}, `
routes:
  - path: /p
    sequence: { per: header.K }
    responses: [{ status: 201 }, { status: 200 }]
`)
	for _, k := range []string{"a", "b", "c", "d"} { // d pushes out a
		do(t, "GET", hs.URL+"/p", "", "K", k)
	}
	if s := do(t, "GET", hs.URL+"/p", "", "K", "b").status; s != 200 {
		t.Errorf("key b: %d, want 200 (still remembered)", s)
	}
	if s := do(t, "GET", hs.URL+"/p", "", "K", "a").status; s != 201 {
		t.Errorf("key a: %d, want 201 (forgotten as the oldest once 3 keys were held)", s)
	}
}

func TestDelayWaitsAndClientLeavingEndsIt(t *testing.T) {
	t.Parallel()
	clock := &testClock{scale: 1, began: make(chan struct{}, 4)}
	_, hs, logs := serveYAML(t, Options{Clock: clock}, `
routes:
  - { path: /short, respond: { status: 200, delay: 150ms } }
  - { path: /forever, respond: { status: 200, delay: 24h } }
  - { path: /range, respond: { status: 200, delay: { min: 1s, max: 2s } } }
`)
	start := time.Now()
	if r := do(t, "GET", hs.URL+"/short", ""); r.status != 200 {
		t.Fatal(r.status)
	}
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Errorf("answered after %s, before the 150ms delay", el)
	}
	<-clock.began

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := doCtx(ctx, "GET", hs.URL+"/forever", ""); errc <- err }()
	<-clock.began
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	eventually(t, patience, func() string {
		if clock.cutShort(1) && strings.Contains(logs.String(), "client gone during delay") {
			return ""
		}
		return "a 24h delay did not end when its client disconnected"
	})
}

func TestDelayDraws(t *testing.T) {
	t.Parallel()
	clock := &testClock{scale: 0}
	u := []float64{0, 0.5, 0.999}
	var mu sync.Mutex
	next := func() float64 {
		mu.Lock()
		defer mu.Unlock()
		v := u[0]
		u = append(u[1:], v)
		return v
	}
	_, hs, _ := serveYAML(t, Options{Clock: clock, Rand: next}, `
routes:
  - { path: /range, respond: { delay: { min: 1s, max: 2s } } }
`)
	for i := 0; i < 3; i++ {
		do(t, "GET", hs.URL+"/range", "")
	}
	waits, _ := clock.recorded()
	want := []time.Duration{time.Second, 1500 * time.Millisecond, 1999 * time.Millisecond}
	for i, w := range want {
		if waits[i] != w {
			t.Errorf("draw %d = %s, want %s", i, waits[i], w)
		}
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - { path: /reset, respond: { fault: connection-reset } }
  - { path: /empty, respond: { fault: empty-response } }
  - { path: /chunk, respond: { fault: malformed-chunk } }
  - { path: /random, respond: { fault: random-data } }
  - path: /processed-then-lost
    responses:
      - { delay: 10ms, fault: connection-reset }
      - { status: 201 }
`)
	for _, path := range []string{"/reset", "/empty", "/chunk", "/random", "/processed-then-lost"} {
		_, err := doCtx(context.Background(), "GET", hs.URL+path, "")
		if err == nil {
			t.Errorf("%s: the request succeeded, want a transport error", path)
		}
	}
	// The reset is a real RST: a raw read sees "connection reset".
	conn, err := net.Dial("tcp", strings.TrimPrefix(hs.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /reset HTTP/1.1\r\nHost: x\r\n\r\n")
	_, err = io.ReadAll(conn)
	if err == nil || !strings.Contains(err.Error(), "reset") {
		t.Errorf("raw read after connection-reset: %v, want connection reset by peer", err)
	}
	// The request that lost its answer still counted: the retry succeeds.
	if r := do(t, "GET", hs.URL+"/processed-then-lost", ""); r.status != 201 {
		t.Errorf("retry after the lost answer: %d, want 201", r.status)
	}
}

func TestRequestBodies(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{MaxBody: 1024}, `
routes:
  - { name: json, method: POST, path: /b, when: { body: { json: { ok: true } } }, respond: { status: 201 } }
  - { name: other, method: POST, path: /b, respond: { status: 200 } }
`)
	big := strings.Repeat("x", 2048)
	r := do(t, "POST", hs.URL+"/b", big)
	if r.status != http.StatusRequestEntityTooLarge || r.header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("oversized body: %d %s", r.status, r.header.Get("Content-Type"))
	}
	// Chunked, so that the limit is found while reading, not from the length.
	req, _ := http.NewRequest("POST", hs.URL+"/b", io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized chunked body: %d", resp.StatusCode)
	}
	if s := do(t, "POST", hs.URL+"/b", `{"ok":tru`).status; s != 200 {
		t.Errorf("malformed JSON: %d, want the next route (200)", s)
	}
	if s := do(t, "POST", hs.URL+"/b", `{"ok":true}`).status; s != 201 {
		t.Errorf("JSON body: %d", s)
	}
}

// TestHugeDeclaredBody claims a 1 GB body and sends none: the answer comes
// at once from the declared length.
func TestHugeDeclaredBody(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, "routes: [{ path: /b, respond: {} }]")
	conn, err := net.Dial("tcp", strings.TrimPrefix(hs.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d, want 413", resp.StatusCode)
	}
}

func TestTemplates(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - name: echo
    method: POST
    path: /orders/{id}
    sequence: { per: path.id }
    responses:
      - template: true
        status: 201
        headers: { Location: "/orders/{{ .Request.Vars.id }}", X-Call: "{{ .Call }}" }
        body:
          id: "{{ .Request.Vars.id }}"
          note: "{{ .Request.JSON.note }}"
          amount: 9800
          currency: "{{ default \"JPY\" .Request.JSON.currency }}"
          agent: "{{ .Request.Headers.Get \"User-Agent\" }}"
  - name: text
    path: /text
    respond:
      template: true
      body: "page={{ .Request.Query.Get \"page\" }} route={{ .Route }}"
  - name: broken at run time
    path: /broken
    respond:
      template: true
      body: "{{ index .Request.Vars \"x\" | printf \"%d\" | len | printf \"%s\" }}{{ randomInt 5 1 }}"
`)
	r := do(t, "POST", hs.URL+"/orders/o-1", `{"note":"say \"hi\"\nbye"}`, "User-Agent", "probe")
	if r.status != 201 || r.header.Get("Location") != "/orders/o-1" || r.header.Get("X-Call") != "1" {
		t.Errorf("%d %v", r.status, r.header)
	}
	doc := r.json(t) // request values are escaped: still valid JSON
	if doc["note"] != "say \"hi\"\nbye" || doc["amount"] != float64(9800) || doc["currency"] != "JPY" || doc["agent"] != "probe" || doc["id"] != "o-1" {
		t.Errorf("rendered %s", r.body)
	}
	if r := do(t, "POST", hs.URL+"/orders/o-1", `{}`); r.header.Get("X-Call") != "2" {
		t.Errorf("second call X-Call = %q", r.header.Get("X-Call"))
	}
	if r := do(t, "GET", hs.URL+"/text?page=3", ""); r.body != "page=3 route=text" {
		t.Errorf("text template = %q", r.body)
	}
	r = do(t, "GET", hs.URL+"/broken", "")
	if r.status != 500 || r.header.Get("Content-Type") != "application/problem+json" || !strings.Contains(r.body, "template") {
		t.Errorf("failing template: %d %s", r.status, r.body)
	}
}

func TestFallback(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes: [{ path: /a, respond: {} }]
fallback: { status: 418, body: { error: teapot } }
`)
	r := do(t, "GET", hs.URL+"/nowhere", "")
	if r.status != 418 || r.json(t)["error"] != "teapot" {
		t.Errorf("%d %s", r.status, r.body)
	}
}

func TestHeadersAndDefaults(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
defaults: { headers: { X-Env: mock, Cache-Control: no-store } }
routes:
  - path: /h
    respond:
      headers: { cache-control: max-age=60 }
      body: hello
`)
	r := do(t, "GET", hs.URL+"/h", "")
	if r.header.Get("X-Env") != "mock" || r.header.Get("Cache-Control") != "max-age=60" || r.body != "hello" ||
		r.header.Get("Content-Type") != "text/plain; charset=utf-8" || r.header.Get("Content-Length") != "5" {
		t.Errorf("%v %q", r.header, r.body)
	}
}

// TestReadTimeoutDoesNotCutDelays relies on net/http clearing the read
// deadline once a request's body has been read: a delay may outlast the
// read timeout, with a body and without one. The read timeout is long
// enough that a client a loaded machine schedules late still sends its
// request within it.
func TestReadTimeoutDoesNotCutDelays(t *testing.T) {
	t.Parallel()
	url, stop := serveReal(t, Options{ReadTimeout: 2 * time.Second}, `
routes:
  - { method: POST, path: /slow, respond: { status: 201, delay: 5s } }
  - { method: GET, path: /slow, respond: { status: 200, delay: 5s } }
`)
	defer stop()
	var wg sync.WaitGroup
	for _, c := range []struct{ method, body string }{{"POST", `{"amount":1}`}, {"GET", ""}} {
		wg.Go(func() {
			r, err := doCtx(context.Background(), c.method, url+"/slow", c.body)
			if err != nil || (r.status != 201 && r.status != 200) {
				t.Errorf("%s with a 5s delay and a 2s read timeout: %v %d", c.method, err, r.status)
			}
		})
	}
	wg.Wait()
}

// TestDelayEndsWhenPostClientLeaves: net/http only notices a client going
// away once the request body has been read to its end, so a body read
// short of that would leave a delay running for a client long gone.
func TestDelayEndsWhenPostClientLeaves(t *testing.T) {
	t.Parallel()
	// 24h scaled to a minute: far longer than a loaded machine may take to
	// notice the client leave, short enough that a broken server fails the
	// test instead of hanging it.
	clock := &testClock{scale: 60.0 / (24 * 3600), began: make(chan struct{}, 4)}
	_, hs, _ := serveYAML(t, Options{Clock: clock}, `
routes:
  - { method: POST, path: /slow, respond: { status: 201, delay: 24h } }
`)
	for _, body := range []string{`{"amount":9800}`, strings.Repeat("x", 100<<10)} { // pooled and large
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { _, err := doCtx(ctx, "POST", hs.URL+"/slow", body); errc <- err }()
		<-clock.began
		cancel()
		<-errc
	}
	eventually(t, patience, func() string {
		if clock.cutShort(0) && clock.cutShort(1) {
			return ""
		}
		return "a delay on a POST did not end when its client disconnected"
	})
}

// TestPooledBodiesDoNotLeak sends different bodies in turn to a route that
// echoes them: a pooled buffer must never show one request's bytes to
// the next.
func TestPooledBodiesDoNotLeak(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - { method: POST, path: /echo, respond: { template: true, body: "{{ .Request.Body }}|{{ .Request.JSON.id }}" } }
`)
	for i, body := range []string{`{"id":"first-long-value-xxxxxxxxxxxx"}`, `{"id":"2"}`, `{}`, `{"id":"3"}`} {
		r := do(t, "POST", hs.URL+"/echo", body)
		want := body + "|"
		if i != 2 {
			want += map[int]string{0: "first-long-value-xxxxxxxxxxxx", 1: "2", 3: "3"}[i]
		}
		if r.body != want {
			t.Errorf("request %d: %q, want %q", i, r.body, want)
		}
	}
}

// TestProblemsLoggedAtWarn: with --log-level=warn no request is logged but
// the ones that went wrong.
func TestProblemsLoggedAtWarn(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	path := filepath.Join(t.TempDir(), "s.yaml")
	writeFile(t, path, `
routes:
  - { name: fine, path: /ok, respond: {} }
  - { name: broken, path: /t, respond: { template: true, body: "{{ .Request.JSON.a.b }}" } }
`)
	s, err := New(Options{
		Load:    func() (*scenarios.Set, error) { return scenarios.Load(path) },
		Logger:  slog.New(NewLogHandler(logs, true, slog.LevelWarn)),
		MaxBody: 8,
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer hs.Close()
	do(t, "GET", hs.URL+"/ok", "")
	do(t, "GET", hs.URL+"/nowhere", "")
	if r := do(t, "GET", hs.URL+"/t", ""); r.status != 500 || !strings.Contains(r.json(t)["detail"].(string), `route "broken": response template failed: body: at <.Request.JSON.a.b>: nil pointer`) {
		t.Errorf("template failure: %d %s", r.status, r.body)
	}
	do(t, "POST", hs.URL+"/ok", "far more than eight bytes")
	hs.Close() // a handler logs after its answer is sent: wait for the last one
	var paths []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec struct{ Level, Path string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Level != "WARN" {
			t.Errorf("level %s in %s", rec.Level, line)
		}
		paths = append(paths, rec.Path)
	}
	if got := strings.Join(paths, " "); got != "/nowhere /t /ok" {
		t.Errorf("logged at warn: %s, want the miss, the failed template and the refused body", got)
	}
}

// TestHeadAnswersGetRoutes: HEAD gets a GET route's status and headers,
// Content-Length as GET sends it, and no body, unless a route matches HEAD
// itself.
func TestHeadAnswersGetRoutes(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - name: static
    method: GET
    path: /static
    respond: { status: 200, headers: { X-Kind: static }, body: hello }
  - name: templated
    method: GET
    path: /tpl/{id}
    respond: { template: true, headers: { X-Method: "{{ .Request.Method }}" }, body: { id: "{{ .Request.Vars.id }}" } }
  - name: own head
    method: HEAD
    path: /own
    respond: { status: 204 }
  - name: own get
    method: GET
    path: /own
    respond: { status: 200, body: get }
  - name: post only
    method: POST
    path: /post
    respond: { status: 201 }
`)
	head := func(path string) *http.Response {
		t.Helper()
		resp, err := http.Head(hs.URL + path)
		if err != nil {
			t.Fatalf("HEAD %s: %v", path, err)
		}
		defer resp.Body.Close()
		if b, _ := io.ReadAll(resp.Body); len(b) > 0 {
			t.Errorf("HEAD %s: a body of %d bytes", path, len(b))
		}
		return resp
	}
	for _, path := range []string{"/static", "/tpl/abc"} {
		get := do(t, "GET", hs.URL+path, "")
		resp := head(path)
		if resp.StatusCode != get.status || resp.ContentLength != int64(len(get.body)) || resp.Header.Get("Content-Type") != get.header.Get("Content-Type") {
			t.Errorf("HEAD %s: %d, Content-Length %d, Content-Type %q; GET: %d, %d bytes, %q",
				path, resp.StatusCode, resp.ContentLength, resp.Header.Get("Content-Type"), get.status, len(get.body), get.header.Get("Content-Type"))
		}
	}
	if resp := head("/static"); resp.Header.Get("X-Kind") != "static" {
		t.Errorf("HEAD /static: headers %v", resp.Header)
	}
	if resp := head("/tpl/abc"); resp.Header.Get("X-Method") != "HEAD" {
		t.Errorf("HEAD /tpl/abc: template saw method %q, want HEAD", resp.Header.Get("X-Method"))
	}
	if resp := head("/own"); resp.StatusCode != 204 {
		t.Errorf("HEAD /own: %d, want the HEAD route's 204", resp.StatusCode)
	}
	for _, path := range []string{"/post", "/nothing"} {
		if resp := head(path); resp.StatusCode != 404 {
			t.Errorf("HEAD %s: %d, want 404", path, resp.StatusCode)
		}
	}
}
