package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/record"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/webhooks"
	"github.com/stripe/stripe-go/v85"
)

// countingUpstream is a real upstream on loopback that counts what it
// received and answers with what it saw.
type countingUpstream struct {
	*httptest.Server
	calls atomic.Int64
	mu    sync.Mutex // guards last
	last  *http.Request
	body  string
}

func newCountingUpstream(t *testing.T) *countingUpstream {
	t.Helper()
	u := &countingUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := u.calls.Add(1)
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.last, u.body = r.Clone(r.Context()), string(b)
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Upstream", "yes")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"call":%d,"method":%q,"path":%q,"query":%q,"body":%q}`, n, r.Method, r.URL.Path, r.URL.RawQuery, b)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *countingUpstream) seen() (*http.Request, string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.last, u.body
}

// journalEntries reads the journal through the admin API.
func journalEntries(t *testing.T, base string) []state.Entry {
	t.Helper()
	r := do(t, http.MethodGet, base+"/__admin/requests", "")
	var out struct {
		Requests []state.Entry `json:"requests"`
	}
	if err := json.Unmarshal([]byte(r.body), &out); err != nil {
		t.Fatalf("journal %q: %v", r.body, err)
	}
	return out.Requests
}

func TestProxyPassesTheUpstreamsAnswer(t *testing.T) {
	t.Parallel()
	up := newCountingUpstream(t)
	_, base, _ := serveYAMLRunning(t, Options{}, fmt.Sprintf(`
routes:
  - name: via sandbox
    method: ANY
    path: /v1/{rest:.*}
    respond:
      proxy:
        url: %s/base
        headers: { set: { X-Env: ci }, remove: [X-Debug] }
`, up.URL))
	r := do(t, http.MethodPost, base+"/v1/charges?x=1", `{"amount":1}`, "X-Debug", "1", "Connection", "X-Hop", "X-Hop", "h", "Content-Type", "application/json")
	if r.status != http.StatusCreated || r.header.Get("X-Upstream") != "yes" || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("got %d %v", r.status, r.header)
	}
	if want := `{"call":1,"method":"POST","path":"/base/v1/charges","query":"x=1","body":"{\"amount\":1}"}`; r.body != want {
		t.Fatalf("body %s, want %s", r.body, want)
	}
	seen, _ := up.seen()
	if seen.Header.Get("X-Env") != "ci" || seen.Header.Get("X-Debug") != "" || seen.Header.Get("X-Hop") != "" {
		t.Errorf("upstream got headers %v", seen.Header)
	}
	if seen.Header.Get("X-Forwarded-Host") == "" || seen.Header.Get("X-Forwarded-For") == "" || !strings.Contains(seen.Header.Get("Via"), "scenariomock") {
		t.Errorf("forwarding headers missing: %v", seen.Header)
	}
	es := journalEntries(t, base)
	if len(es) != 1 || !es[0].Proxied || es[0].UpstreamStatus != http.StatusCreated || !strings.HasPrefix(es[0].Upstream, up.URL+"/base/v1/charges") || es[0].Route != "via sandbox" {
		t.Fatalf("journal %+v", es)
	}
}

// The lost answer on real traffic: the upstream processed the first
// attempt, whose answer the client never got; the retry with the same
// Idempotency-Key is served from the store, so the upstream saw one call.
func TestProxyLostAnswerThenReplay(t *testing.T) {
	t.Parallel()
	up := newCountingUpstream(t)
	_, base, _ := serveYAMLRunning(t, Options{}, fmt.Sprintf(`
routes:
  - name: charge
    method: POST
    path: /v1/charges
    idempotency: { key: header.Idempotency-Key }
    respond:
      proxy: %s
      fault: { kind: connection-reset, after: processing }
`, up.URL))
	if r, err := doCtx(t.Context(), http.MethodPost, base+"/v1/charges", `{"a":1}`, "Idempotency-Key", "k1"); err == nil {
		t.Fatalf("first attempt got an answer: %d %s", r.status, r.body)
	}
	if n := up.calls.Load(); n != 1 {
		t.Fatalf("upstream calls after the lost answer: %d, want 1", n)
	}
	r := do(t, http.MethodPost, base+"/v1/charges", `{"a":1}`, "Idempotency-Key", "k1")
	if r.status != http.StatusCreated || !strings.Contains(r.body, `"call":1`) {
		t.Fatalf("retry got %d %s, want the stored 201 of call 1", r.status, r.body)
	}
	if n := up.calls.Load(); n != 1 {
		t.Fatalf("upstream calls after the retry: %d, want 1", n)
	}
	es := journalEntries(t, base)
	if len(es) != 2 || es[0].Fault != "connection-reset" || !es[0].Proxied || es[0].UpstreamStatus != 201 || es[1].Idempotency != "replayed" {
		t.Fatalf("journal %+v", es)
	}
}

func TestProxyDelayAppliesToProxiedAnswers(t *testing.T) {
	t.Parallel()
	up := newCountingUpstream(t)
	clock := &testClock{scale: 0}
	_, base, _ := serveYAMLRunning(t, Options{Clock: clock}, fmt.Sprintf(`
routes:
  - { name: slow, path: /slow, respond: { proxy: %s, delay: 750ms } }
`, up.URL))
	if r := do(t, http.MethodGet, base+"/slow", ""); r.status != http.StatusCreated {
		t.Fatalf("got %d", r.status)
	}
	if waits, _ := clock.recorded(); len(waits) != 1 || waits[0] != 750*time.Millisecond {
		t.Fatalf("waits %v, want [750ms]", waits)
	}
}

func TestProxyUpstreamFailures(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // nothing listens there now
	block := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(block) })
	_, base, _ := serveYAMLRunning(t, Options{}, fmt.Sprintf(`
routes:
  - { name: dead, path: /dead, respond: { proxy: %s } }
  - { name: slow, path: /slow, respond: { proxy: { url: %s, timeout: 200ms } } }
`, deadURL, slow.URL))
	for _, tc := range []struct {
		path   string
		status int
		detail string
	}{
		{"/dead", http.StatusBadGateway, deadURL},
		{"/slow", http.StatusGatewayTimeout, slow.URL},
	} {
		r := do(t, http.MethodGet, base+tc.path, "")
		if r.status != tc.status || r.header.Get("Content-Type") != "application/problem+json" || !strings.Contains(r.body, tc.detail) {
			t.Errorf("%s: got %d %s, want a %d problem naming %s", tc.path, r.status, r.body, tc.status, tc.detail)
		}
	}
	es := journalEntries(t, base)
	if len(es) != 2 || !es[0].Proxied || es[0].UpstreamStatus != 0 || es[0].Status != http.StatusBadGateway {
		t.Fatalf("journal %+v", es)
	}
}

// TestProxyHeaderFlood: an upstream whose answer's head passes 1 MiB (as
// much as a request's may carry) is a 502 problem. It was passed on,
// up to the transport's 10 MB, and kept whole in each journal entry.
func TestProxyHeaderFlood(t *testing.T) {
	t.Parallel()
	flood := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Flood", strings.Repeat("a", 2<<20))
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(flood.Close)
	_, base, _ := serveYAMLRunning(t, Options{}, "routes: [{ name: flood, path: /flood, respond: { proxy: "+flood.URL+" } }]")
	r := do(t, http.MethodGet, base+"/flood", "")
	if r.status != http.StatusBadGateway || r.header.Get("X-Flood") != "" || !strings.Contains(r.body, "headers exceeded") {
		t.Errorf("got %d, X-Flood of %d bytes, %.200s; want a 502 problem saying why", r.status, len(r.header.Get("X-Flood")), r.body)
	}
}

// A proxy that forwards to the mock itself is refused with a 508, not
// recursed into.
func TestProxyLoopIsRefused(t *testing.T) {
	t.Parallel()
	_, front := loopServer(t)
	r := do(t, http.MethodGet, front+"/x", "")
	if r.status != http.StatusLoopDetected {
		t.Fatalf("got %d %s, want 508", r.status, r.body)
	}
}

// loopServer serves a route that proxies to the server's own address.
func loopServer(t *testing.T) (*Server, string) {
	t.Helper()
	var addr atomic.Value
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr.Load().(http.Handler).ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf("routes:\n  - { name: self, path: /x, respond: { proxy: %s } }\n", front.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Load: func() (*scenarios.Set, error) { return scenarios.Load(path) }})
	if err != nil {
		t.Fatal(err)
	}
	addr.Store(http.Handler(s))
	t.Cleanup(s.proxy.Close)
	return s, front.URL
}

func TestProxyUnmatchedSpyMode(t *testing.T) {
	t.Parallel()
	up := newCountingUpstream(t)
	_, base, _ := serveYAMLRunning(t, Options{ProxyUnmatched: up.URL}, `
routes:
  - { name: mocked, path: /mocked, respond: { body: mocked } }
`)
	if r := do(t, http.MethodGet, base+"/mocked", ""); r.body != "mocked" {
		t.Fatalf("mocked route: %q", r.body)
	}
	r := do(t, http.MethodGet, base+"/real?q=1", "")
	if r.status != http.StatusCreated || !strings.Contains(r.body, `"path":"/real"`) {
		t.Fatalf("unmatched: %d %s", r.status, r.body)
	}
	if n := up.calls.Load(); n != 1 {
		t.Fatalf("upstream calls %d, want 1", n)
	}
	es := journalEntries(t, base)
	if len(es) != 2 || es[0].Proxied || !es[1].Proxied || es[1].Matched || es[1].Route != proxyUnmatchedRoute {
		t.Fatalf("journal %+v", es)
	}
	if r := do(t, http.MethodGet, base+"/__admin/requests/count?proxied=true", ""); !strings.Contains(r.body, `"count": 1`) {
		t.Fatalf("count of proxied: %s", r.body)
	}
	if _, err := New(Options{ProxyUnmatched: "ftp://x", Load: func() (*scenarios.Set, error) { return &scenarios.Set{}, nil }}); err == nil || !strings.Contains(err.Error(), "proxy-unmatched") {
		t.Fatalf("ftp upstream: %v", err)
	}
}

// TestProxyKeepsTheSessionToItself: a request of a session (by header, as
// by path prefix) is forwarded without the mock's session header, in spy
// mode and on a proxy: route, unless the route sets it; the journal still
// counts it for its session.
func TestProxyKeepsTheSessionToItself(t *testing.T) {
	t.Parallel()
	up := newCountingUpstream(t)
	_, base, _ := serveYAMLRunning(t, Options{ProxyUnmatched: up.URL}, fmt.Sprintf(`
routes:
  - { name: plain, path: /plain, respond: { proxy: %[1]s } }
  - { name: setting, path: /setting, respond: { proxy: { url: %[1]s, headers: { set: { X-Scenariomock-Session: upstream-own } } } } }
`, up.URL))
	for _, tc := range []struct{ path, want string }{
		{"/unmatched", ""}, {"/plain", ""}, {"/setting", "upstream-own"},
	} {
		r := do(t, http.MethodGet, base+tc.path, "", SessionHeader, "alpha")
		if r.status != http.StatusCreated {
			t.Fatalf("GET %s: %d %s", tc.path, r.status, r.body)
		}
		seen, _ := up.seen()
		if got := seen.Header.Get(SessionHeader); got != tc.want || seen.URL.Path != tc.path {
			t.Errorf("GET %s: the upstream got %s with %s %q, want %q", tc.path, seen.URL.Path, SessionHeader, got, tc.want)
		}
	}
	if r := do(t, http.MethodGet, base+"/__admin/requests/count?session=alpha&proxied=true", ""); !strings.Contains(r.body, `"count": 3`) {
		t.Errorf("alpha's proxied requests: %s, want 3", r.body)
	}
}

// Record against a real upstream that answers gzip-compressed JSON and
// text, write the recording, serve it, and get the same answers; the
// recording holds none of the credentials sent.
func TestRecordThenServeTheRecording(t *testing.T) {
	t.Parallel()
	const token = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/charges/"):
			w.Header().Set("Content-Type", "application/json")
			body = []byte(fmt.Sprintf(`{"id":%q,"amount":100,"url":"http://%s/v1/charges"}`, strings.TrimPrefix(r.URL.Path, "/v1/charges/"), r.Host))
		default:
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			body = []byte("hello " + r.URL.Path)
		}
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		_, _ = zw.Write(body)
		_ = zw.Close()
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("X-Request-Id", "req_1")
		_, _ = w.Write(gz.Bytes())
	}))
	t.Cleanup(up.Close)
	rec := record.New(record.Options{Upstream: up.URL})
	_, base, _ := serveYAMLRunning(t, Options{ProxyUnmatched: up.URL, Recorder: rec}, "routes: []\n")
	paths := []string{"/v1/charges/ch_1A2b3C4d5E6f", "/v1/charges/ch_9Z8y7X6w5V4u", "/hello"}
	type answer struct {
		status int
		ct     string
		body   string
	}
	get := func(base, path string) answer {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req) // decodes gzip itself
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, resp.Header.Get("Content-Type"), string(b)}
	}
	var live []answer
	for _, p := range paths {
		live = append(live, get(base, p))
	}
	dir := t.TempDir()
	written, err := rec.Write(dir)
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	for _, f := range written {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte(token)) {
			t.Fatalf("%s holds the token:\n%s", f, b)
		}
	}
	set, err := scenarios.Load(dir)
	if err != nil {
		t.Fatalf("the recording does not load: %v", err)
	}
	s, err := New(Options{Load: func() (*scenarios.Set, error) { return set, nil }})
	if err != nil {
		t.Fatal(err)
	}
	replay := httptest.NewServer(s)
	t.Cleanup(replay.Close)
	for i, p := range paths {
		got := get(replay.URL, p)
		want := live[i]
		if strings.HasPrefix(p, "/v1/") {
			// The upstream's absolute URLs now name the mock.
			want.body = strings.ReplaceAll(want.body, strings.TrimPrefix(base, "http://"), "MOCK")
			got.body = strings.ReplaceAll(got.body, strings.TrimPrefix(replay.URL, "http://"), "MOCK")
			var a, b map[string]any
			_ = json.Unmarshal([]byte(got.body), &a)
			_ = json.Unmarshal([]byte(want.body), &b)
			if a["id"] != b["id"] || a["amount"] != b["amount"] || got.status != want.status || got.ct != want.ct {
				t.Errorf("%s: replay %+v, live %+v", p, got, want)
			}
			continue
		}
		if got != want {
			t.Errorf("%s: replay %+v, live %+v", p, got, want)
		}
	}
}

// A test starts an outage on real traffic and ends it: POST
// /__admin/faults switches a fault on for a route, DELETE ends it, and
// one given for: a duration reverts by itself.
func TestRuntimeFaultsOnProxiedTraffic(t *testing.T) {
	t.Parallel()
	up := newCountingUpstream(t)
	_, base, _ := serveYAMLRunning(t, Options{}, fmt.Sprintf(`
routes:
  - { name: via, method: ANY, path: /v1/x, respond: { proxy: %s } }
  - { name: canned, path: /canned, respond: { body: ok } }
`, up.URL))
	post := func(body string) response {
		return do(t, http.MethodPost, base+"/__admin/faults", body, "Content-Type", "application/json")
	}
	if r := post(`{"route": "via", "fault": {"kind": "connection-reset", "after": "processing"}}`); r.status != http.StatusCreated {
		t.Fatalf("switch on: %d %s", r.status, r.body)
	}
	// A POST without Idempotency-Key: Go's client does not send it again.
	if _, err := doCtx(t.Context(), http.MethodPost, base+"/v1/x", "{}"); err == nil {
		t.Fatal("the faulted route answered")
	}
	if n := up.calls.Load(); n != 1 {
		t.Fatalf("upstream calls %d, want 1: the fault is after processing", n)
	}
	if r := do(t, http.MethodGet, base+"/canned", ""); r.body != "ok" {
		t.Fatalf("another route was faulted: %d %q", r.status, r.body)
	}
	if r := do(t, http.MethodGet, base+"/__admin/faults", ""); !strings.Contains(r.body, `"kind": "connection-reset"`) {
		t.Fatalf("list: %s", r.body)
	}
	if r := do(t, http.MethodDelete, base+"/__admin/faults", ""); !strings.Contains(r.body, `"cleared": 1`) {
		t.Fatalf("clear: %s", r.body)
	}
	if r := do(t, http.MethodGet, base+"/v1/x", ""); r.status != http.StatusCreated {
		t.Fatalf("after clearing: %d", r.status)
	}
	// Every route, for a moment: it reverts by itself.
	if r := post(`{"fault": "connection-reset", "for": "50ms"}`); r.status != http.StatusCreated {
		t.Fatalf("switch on for 50ms: %d %s", r.status, r.body)
	}
	eventually(t, patience, func() string {
		if r, err := doCtx(t.Context(), http.MethodGet, base+"/canned", ""); err != nil || r.body != "ok" {
			return fmt.Sprintf("still faulted: %v", err)
		}
		return ""
	})
	for _, tc := range []struct{ body, want string }{
		{`{"fault": "explode"}`, `unknown fault`},
		{`{"fault": {"kind": "partial-body", "bytes": -1}}`, `bytes -1 is negative`},
		{`{"route": "nope", "fault": "connection-reset"}`, `No route is named \"nope\"; the routes are \"via\", \"canned\".`},
		{`{"route": "caned", "fault": "connection-reset"}`, `No route is named \"caned\"; did you mean \"canned\"?`},
		{`{"fault": "connection-reset", "for": "soon"}`, `want a positive duration`},
		{`{"faults": []}`, `unknown field`},
	} {
		if r := post(tc.body); r.status/100 != 4 || !strings.Contains(r.body, tc.want) {
			t.Errorf("%s: got %d %s, want a problem saying %q", tc.body, r.status, r.body, tc.want)
		}
	}
}

// TestProxyWriteTimeoutCountsPerPiece: a proxied answer that streams
// steadily for longer than WriteTimeout, and an upstream slower to answer
// than WriteTimeout, both reach the client whole: the deadline counts from
// the upstream's answer and again from each piece it sends, as for the
// request stream, not from the request.
func TestProxyWriteTimeoutCountsPerPiece(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/late" {
			time.Sleep(1500 * time.Millisecond) // the upstream thinks
			fmt.Fprint(w, "late")
			return
		}
		for i := range 6 {
			fmt.Fprintf(w, "piece %d\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(400 * time.Millisecond)
		}
	}))
	defer up.Close()
	_, base, _ := serveYAMLRunning(t, Options{WriteTimeout: time.Second}, fmt.Sprintf(`
routes:
  - { name: stream, path: /stream, respond: { proxy: %[1]s } }
  - { name: late, path: /late, respond: { proxy: %[1]s } }
`, up.URL))
	r, err := doCtx(context.Background(), "GET", base+"/stream", "")
	if err != nil || r.status != 200 || strings.Count(r.body, "piece") != 6 {
		t.Fatalf("a 2.4s stream under a 1s write timeout: %v %d %q", err, r.status, r.body)
	}
	r, err = doCtx(context.Background(), "GET", base+"/late", "")
	if err != nil || r.status != 200 || r.body != "late" {
		t.Fatalf("an upstream answering after 1.5s under a 1s write timeout: %v %d %q", err, r.status, r.body)
	}
}

// TestProxyShortBodyIs502: an upstream whose answer ends before the
// length it declared gets the client a 502 problem naming it, not a
// cut answer that a client might take for whole: a small answer is read
// before anything is sent.
func TestProxyShortBodyIs502(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\nonly this")
		_ = buf.Flush()
	}))
	t.Cleanup(up.Close)
	_, base, _ := serveYAMLRunning(t, Options{}, fmt.Sprintf("routes:\n  - { name: short, path: /short, respond: { proxy: %s } }\n", up.URL))
	r, err := doCtx(t.Context(), http.MethodGet, base+"/short", "")
	if err != nil {
		t.Fatalf("the client got a broken answer: %v", err)
	}
	if r.status != http.StatusBadGateway || r.header.Get("Content-Type") != "application/problem+json" || !strings.Contains(r.body, up.URL) {
		t.Fatalf("got %d %v %s, want a 502 problem naming %s", r.status, r.header, r.body, up.URL)
	}
	if es := journalEntries(t, base); len(es) != 1 || es[0].Status != http.StatusBadGateway || !es[0].Proxied || es[0].UpstreamStatus != 200 {
		t.Fatalf("journal %+v", es)
	}
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestProxyStreamsInFlatMemory streams a large body (1 GiB; 256 MiB
// under the race detector, which makes each byte copied slow) from a real
// upstream through the whole server, journal and log on, and samples the
// heap meanwhile: it must not grow with the body. It stays within a few
// MiB of where it started (the client, the upstream and the server share
// this process, so the bound covers all three).
func TestProxyStreamsInFlatMemory(t *testing.T) {
	size := int64(1 << 30)
	if raceEnabled || testing.Short() {
		size = 256 << 20
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", fmt.Sprint(size))
		_, _ = io.CopyN(w, zeros{}, size)
	}))
	t.Cleanup(up.Close)
	_, base, logs := serveYAMLRunning(t, Options{}, fmt.Sprintf("routes:\n  - { name: big, path: /big, respond: { proxy: %s } }\n", up.URL))
	if r := do(t, http.MethodGet, base+"/__admin/requests", ""); r.status != http.StatusOK {
		t.Fatalf("journal: %d", r.status) // on, as by default
	}
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	runtime.GC()
	before := heap()
	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if h := heap(); h > peak.Load() {
				peak.Store(h)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	resp, err := http.Get(base + "/big")
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	close(done)
	<-sampled
	if err != nil || n != size || resp.StatusCode != http.StatusOK {
		t.Fatalf("got %d, %d of %d bytes: %v", resp.StatusCode, n, size, err)
	}
	growth := int64(peak.Load()) - int64(before)
	t.Logf("%d MiB streamed; heap in use %.1f MiB before, %.1f MiB at most while streaming (growth %.1f MiB)",
		size>>20, float64(before)/(1<<20), float64(peak.Load())/(1<<20), float64(growth)/(1<<20))
	if growth > 16<<20 {
		t.Errorf("the heap grew by %.1f MiB while streaming %d MiB: it holds the body", float64(growth)/(1<<20), size>>20)
	}
	es := journalEntries(t, base)
	if len(es) != 1 || !es[0].Proxied || es[0].Status != http.StatusOK {
		t.Errorf("journal %+v", es)
	}
	if !strings.Contains(logs.String(), `"path":"/big"`) {
		t.Errorf("no log line for the request:\n%s", logs.String())
	}
}

// pathCounter is a real upstream on loopback that counts the requests
// each path got and answers 201 with a JSON body naming the path.
type pathCounter struct {
	*httptest.Server
	mu     sync.Mutex // guards counts
	counts map[string]int
}

func newPathCounter(t *testing.T) *pathCounter {
	t.Helper()
	u := &pathCounter{counts: map[string]int{}}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.counts[r.URL.Path]++
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"path":%q,"note":"an upstream answer of some length"}`, r.URL.Path)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *pathCounter) count(path string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.counts[path]
}

// TestProxyFaultKinds: every fault kind applies to a proxied answer as to
// a canned one. After processing, the upstream got the request once and
// the client sees the fault break, cut or shape the upstream's answer; at
// arrival the upstream is never called. The journal names each fault,
// and marks proxied the entries whose request reached the upstream.
func TestProxyFaultKinds(t *testing.T) {
	t.Parallel()
	up := newPathCounter(t)
	_, base, _ := serveYAMLRunning(t, Options{}, fmt.Sprintf(`
routes:
  - { path: /reset, respond: { proxy: %[1]s, fault: { kind: connection-reset, after: processing } } }
  - { path: /reset-arrival, respond: { proxy: %[1]s, fault: connection-reset } }
  - { path: /empty, respond: { proxy: %[1]s, fault: { kind: empty-response, after: processing } } }
  - { path: /chunk, respond: { proxy: %[1]s, fault: { kind: malformed-chunk, after: processing } } }
  - { path: /random, respond: { proxy: %[1]s, fault: { kind: random-data, after: processing } } }
  - { path: /partial, respond: { proxy: %[1]s, fault: { kind: partial-body, after: processing, bytes: 7 } } }
  - { path: /slow, respond: { proxy: %[1]s, fault: { kind: slow-body, after: processing, over: 400ms, chunks: 4 } } }
  - { path: /hang, respond: { proxy: %[1]s, fault: hang } }
  - { path: /bandwidth, respond: { proxy: %[1]s, fault: { kind: bandwidth, rate: 100 } } }
  - { path: /latency, respond: { proxy: %[1]s, fault: { kind: latency, latency: 400ms } } }
  - { path: /slice, respond: { proxy: %[1]s, fault: { kind: slice, size: 16, gap: 100ms } } }
  - { path: /limit, respond: { proxy: %[1]s, fault: { kind: limit, after: processing, bytes: 20 } } }
`, up.URL))
	whole := func(path string) string {
		return fmt.Sprintf(`{"path":%q,"note":"an upstream answer of some length"}`, path)
	}
	for _, tc := range []struct {
		path    string
		timeout time.Duration // the client's; 0 for none
		calls   int           // the upstream's
		check   func(path string, ex seen) string
	}{
		{"/reset", 0, 1, func(_ string, ex seen) string {
			if !isReset(ex.err) {
				return fmt.Sprintf("want a reset, got %v", ex.err)
			}
			return ""
		}},
		{"/reset-arrival", 0, 0, func(_ string, ex seen) string {
			if !isReset(ex.err) {
				return fmt.Sprintf("want a reset, got %v", ex.err)
			}
			return ""
		}},
		{"/empty", 0, 1, func(_ string, ex seen) string {
			if !errors.Is(ex.err, io.EOF) {
				return fmt.Sprintf("want EOF, got %v", ex.err)
			}
			return ""
		}},
		{"/chunk", 0, 1, func(_ string, ex seen) string {
			if ex.resp == nil || ex.resp.StatusCode != 201 || ex.err == nil || !strings.Contains(ex.err.Error(), "chunk") {
				return fmt.Sprintf("want the upstream's 201 head, then a chunked-encoding error; got %+v", ex)
			}
			return ""
		}},
		{"/random", 0, 1, func(_ string, ex seen) string {
			if ex.resp != nil || ex.err == nil {
				return fmt.Sprintf("want a malformed response, got %+v", ex)
			}
			return ""
		}},
		{"/partial", 0, 1, func(path string, ex seen) string {
			if ex.resp == nil || ex.resp.ContentLength != int64(len(whole(path))) || !errors.Is(ex.err, io.ErrUnexpectedEOF) || string(ex.body) != whole(path)[:7] {
				return fmt.Sprintf("want the upstream's Content-Length, 7 bytes, then unexpected EOF; got %+v, body %q", ex, ex.body)
			}
			return ""
		}},
		{"/slow", 0, 1, func(path string, ex seen) string {
			if ex.err != nil || string(ex.body) != whole(path) {
				return fmt.Sprintf("want the whole body, got %q, %v", ex.body, ex.err)
			}
			if took := ex.reads[len(ex.reads)-1].Sub(ex.start); took < 400*time.Millisecond {
				return fmt.Sprintf("the body took %s, want at least the 400ms of over:", took)
			}
			return ""
		}},
		{"/hang", 300 * time.Millisecond, 0, func(_ string, ex seen) string {
			if !isTimeout(ex.err) || ex.resp != nil {
				return fmt.Sprintf("want the client's timeout and no answer, got %+v", ex)
			}
			return ""
		}},
		{"/bandwidth", 0, 1, func(path string, ex seen) string {
			// About 60 bytes at 100 a second.
			if ex.err != nil || string(ex.body) != whole(path) || len(ex.reads) < 2 {
				return fmt.Sprintf("want the whole body in pieces, got %q in %d reads, %v", ex.body, len(ex.reads), ex.err)
			}
			if took := ex.reads[len(ex.reads)-1].Sub(ex.start); took < 400*time.Millisecond {
				return fmt.Sprintf("the body took %s at 100 bytes a second", took)
			}
			return ""
		}},
		{"/latency", 0, 1, func(path string, ex seen) string {
			if ex.err != nil || string(ex.body) != whole(path) || ex.head.Sub(ex.start) < 400*time.Millisecond {
				return fmt.Sprintf("want the whole body, its head after 400ms; got %q, %v, head after %s", ex.body, ex.err, ex.head.Sub(ex.start))
			}
			return ""
		}},
		{"/slice", 0, 1, func(path string, ex seen) string {
			if ex.err != nil || string(ex.body) != whole(path) || len(ex.reads) < 2 {
				return fmt.Sprintf("want the whole body in pieces, got %q in %d reads, %v", ex.body, len(ex.reads), ex.err)
			}
			if took := ex.reads[len(ex.reads)-1].Sub(ex.start); took < 300*time.Millisecond {
				return fmt.Sprintf("the body took %s, want at least 3 gaps of 100ms", took)
			}
			return ""
		}},
		{"/limit", 0, 1, func(_ string, ex seen) string {
			if ex.resp != nil || ex.err == nil {
				return fmt.Sprintf("want an answer cut in its head, got %+v", ex)
			}
			return ""
		}},
	} {
		t.Run(strings.TrimPrefix(tc.path, "/"), func(t *testing.T) {
			t.Parallel()
			if msg := tc.check(tc.path, fresh("GET", base+tc.path, "", tc.timeout)); msg != "" {
				t.Error(msg)
			}
			if n := up.count(tc.path); n != tc.calls {
				t.Errorf("the upstream got %d calls, want %d", n, tc.calls)
			}
		})
	}
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		eventually(t, patience, func() string { // the hang ends when its client has left
			es := journalEntries(t, base)
			if len(es) != 12 {
				return fmt.Sprintf("%d journal entries, want 12", len(es))
			}
			for _, e := range es {
				// Proxied says the upstream was asked: not at arrival.
				if asked := e.FaultAfter == "processing" || up.count(e.Path) > 0; e.Proxied != asked || e.Fault == "" {
					return fmt.Sprintf("entry %+v: want proxied %v, with its fault", e, asked)
				}
			}
			return ""
		})
	})
}

// TestProxyFaultChance: a proxied route's fault strikes the share of
// requests its chance says, the same ones on two servers with one seed,
// and the upstream did the work of every one (after: processing).
func TestProxyFaultChance(t *testing.T) {
	t.Parallel()
	var patterns [2]string
	for i := range patterns {
		up := newPathCounter(t)
		_, base, _ := serveYAMLRunning(t, Options{Rand: SeededRand(7)}, fmt.Sprintf(`
routes:
  - { path: /some, respond: { proxy: %s, fault: { kind: empty-response, after: processing, chance: 0.5 } } }
`, up.URL))
		var b strings.Builder
		for range 40 {
			ex := fresh("GET", base+"/some", "", 0)
			switch {
			case ex.err == nil && ex.resp.StatusCode == http.StatusCreated:
				b.WriteByte('.')
			case errors.Is(ex.err, io.EOF):
				b.WriteByte('x')
			default:
				t.Fatalf("neither the upstream's answer nor the fault: %+v", ex)
			}
		}
		patterns[i] = b.String()
		if n := up.count("/some"); n != 40 {
			t.Errorf("the upstream got %d calls, want 40", n)
		}
	}
	if patterns[0] != patterns[1] {
		t.Errorf("two servers with seed 7 faulted differently:\n%s\n%s", patterns[0], patterns[1])
	}
	if k := strings.Count(patterns[0], "x"); k < 8 || k > 32 {
		t.Errorf("chance 0.5 faulted %d of 40: %s", k, patterns[0])
	}
}

// TestProxyCORS: on a proxied route the mock's CORS answers the browser,
// streamed, held (idempotency) and replayed alike: its preflight never
// reaches the upstream, and the upstream's own Access-Control-* fields,
// which name the upstream's origins, are dropped (its Vary kept, with
// Origin). Without a CORS policy the upstream's fields pass through.
func TestProxyCORS(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Access-Control-Allow-Origin", "https://sandbox-dashboard.example.test")
		w.Header().Set("Access-Control-Expose-Headers", "X-Sandbox")
		w.Header().Set("Vary", "Accept-Encoding")
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/big" {
			// Longer than forward reads whole, without a length: streamed.
			for range 8 {
				_, _ = w.Write(bytes.Repeat([]byte("x"), 8<<10))
				w.(http.Flusher).Flush()
			}
			return
		}
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
	}))
	t.Cleanup(up.Close)
	routes := fmt.Sprintf(`
routes:
  - { name: small, path: /v1/small, respond: { proxy: %[1]s } }
  - { name: big, path: /v1/big, respond: { proxy: %[1]s } }
  - name: charge
    method: POST
    path: /v1/charges
    idempotency: { key: header.Idempotency-Key }
    respond: { proxy: %[1]s }
`, up.URL)
	_, base, _ := serveYAMLRunning(t, Options{CORS: true}, routes)
	check := func(name string, r response) {
		t.Helper()
		if got := r.header.Get("Access-Control-Allow-Origin"); got != appOrigin {
			t.Errorf("%s: Access-Control-Allow-Origin %q, want the app's %q", name, got, appOrigin)
		}
		if r.header.Get("Access-Control-Allow-Credentials") != "true" || strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "X-Sandbox") {
			t.Errorf("%s: CORS headers %v, want the mock's", name, r.header)
		}
		if vary := strings.Join(r.header.Values("Vary"), ", "); !strings.Contains(vary, "Origin") || !strings.Contains(vary, "Accept-Encoding") {
			t.Errorf("%s: Vary %q, want Origin and the upstream's Accept-Encoding", name, vary)
		}
	}
	if r := do(t, http.MethodGet, base+"/v1/small", "", "Origin", appOrigin); r.status != 200 || r.body != `{"path":"/v1/small"}` {
		t.Fatalf("small: %d %s", r.status, r.body)
	} else {
		check("small", r)
	}
	if r := do(t, http.MethodGet, base+"/v1/big", "", "Origin", appOrigin); r.status != 200 || len(r.body) != 64<<10 {
		t.Fatalf("big: %d, %d bytes", r.status, len(r.body))
	} else {
		check("big (streamed)", r)
	}
	first := do(t, http.MethodPost, base+"/v1/charges", "{}", "Origin", appOrigin, "Idempotency-Key", "k1")
	check("charge", first)
	again := do(t, http.MethodPost, base+"/v1/charges", "{}", "Origin", appOrigin, "Idempotency-Key", "k1")
	check("charge replayed", again)
	if again.header.Get("Idempotent-Replayed") != "true" || again.body != first.body {
		t.Errorf("the retry was not a replay: %v %s", again.header, again.body)
	}
	pre := do(t, http.MethodOptions, base+"/v1/charges", "", "Origin", appOrigin, "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "idempotency-key")
	if pre.status != http.StatusNoContent || pre.header.Get("Access-Control-Allow-Origin") != appOrigin {
		t.Errorf("preflight: %d %v", pre.status, pre.header)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("the upstream got %d calls, want 3 (small, big, the first charge): a preflight or a replay reached it", n)
	}

	// No policy: the mock is transparent.
	_, plain, _ := serveYAMLRunning(t, Options{}, routes)
	r := do(t, http.MethodGet, plain+"/v1/small", "", "Origin", appOrigin)
	if r.header.Get("Access-Control-Allow-Origin") != "https://sandbox-dashboard.example.test" || r.header.Get("Vary") != "Accept-Encoding" {
		t.Errorf("without CORS: %v, want the upstream's fields", r.header)
	}
}

// TestProxyJournalUpstreamLatency: the journal entry of a proxied request
// carries the upstream's URL, status and latency.
func TestProxyJournalUpstreamLatency(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(80 * time.Millisecond) // the upstream thinks
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(up.Close)
	_, base, _ := serveYAMLRunning(t, Options{}, fmt.Sprintf("routes:\n  - { name: slowish, path: /x, respond: { proxy: %s } }\n", up.URL))
	if r := do(t, http.MethodGet, base+"/x?q=1", ""); r.status != http.StatusAccepted {
		t.Fatalf("got %d", r.status)
	}
	es := journalEntries(t, base)
	if len(es) != 1 || !es[0].Proxied || es[0].Upstream != up.URL+"/x?q=1" || es[0].UpstreamStatus != http.StatusAccepted || es[0].UpstreamMs < 80 || es[0].DurationMs < es[0].UpstreamMs {
		t.Fatalf("journal %+v, want the upstream, its 202 and a latency of at least 80 ms", es)
	}
}

// TestProxyOwnServerAsIdempotentUpstream: our own server is the upstream,
// emulating Idempotency-Key; the mock in front of it proxies with no store
// of its own and loses the answer after processing. The client's retry
// with the same key reaches the upstream, which replays its stored answer:
// for two attempts the upstream processed one request, and the client got
// the answer of that one.
func TestProxyOwnServerAsIdempotentUpstream(t *testing.T) {
	t.Parallel()
	_, sandbox, _ := serveYAMLRunning(t, Options{}, `
routes:
  - name: create charge
    method: POST
    path: /v1/charges
    idempotency: { key: header.Idempotency-Key, required: true }
    respond: { status: 201, template: true, body: { id: 'ch_{{ .Call }}', amount: 2000 } }
`)
	_, mock, _ := serveYAMLRunning(t, Options{}, fmt.Sprintf(`
routes:
  - name: charge via the sandbox
    method: POST
    path: /v1/charges
    responses:
      - { proxy: %[1]s, fault: { kind: connection-reset, after: processing } }
      - { proxy: %[1]s }
`, sandbox))
	attempt := func() (response, error) {
		return doCtx(t.Context(), http.MethodPost, mock+"/v1/charges", `{"amount":2000}`, "Idempotency-Key", "order-7")
	}
	if r, err := attempt(); err == nil {
		t.Fatalf("the first attempt got an answer: %d %s", r.status, r.body)
	}
	r, err := attempt()
	if err != nil || r.status != http.StatusCreated || r.header.Get("Idempotent-Replayed") != "true" || !strings.Contains(r.body, `"ch_1"`) {
		t.Fatalf("retry: %v %d %v %s, want the sandbox's replay of ch_1", err, r.status, r.header, r.body)
	}
	up := journalEntries(t, sandbox)
	if len(up) != 2 || up[0].Idempotency != "new" || up[1].Idempotency != "replayed" {
		t.Fatalf("the sandbox's journal %+v, want one request processed and one replayed", up)
	}
	es := journalEntries(t, mock)
	if len(es) != 2 || es[0].Fault != "connection-reset" || es[0].UpstreamStatus != 201 || !es[1].Proxied || es[1].Fault != "" {
		t.Fatalf("the mock's journal %+v", es)
	}
}

// TestProxyLoopAtStart: a route (or --proxy-unmatched) that proxies to
// the mock's own listener is refused when Serve starts, at its proxy:
// field's file:line:col, and a reload that brings one in fails with the
// last good scenarios still serving; no request gets to loop.
func TestProxyLoopAtStart(t *testing.T) {
	t.Parallel()
	// start serves yaml, SELF replaced by the listener's address and PORT
	// by its port, with
	// the options opts makes of that address; it returns what Serve
	// returned, or nil once it serves.
	start := func(opts func(self string) Options, yaml string) (s *Server, url, path string, served error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		self := ln.Addr().String()
		path = filepath.Join(t.TempDir(), "s.yaml")
		_, port, _ := net.SplitHostPort(self)
		yaml = strings.NewReplacer("SELF", self, "PORT", port).Replace(yaml)
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		o := opts(self)
		o.Load = func() (*scenarios.Set, error) { return scenarios.Load(path) }
		if s, err = New(o); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Serve(ctx, ln) }()
		t.Cleanup(func() { cancel(); <-done })
		ready := make(chan struct{})
		go func() {
			defer close(ready)
			for range 3000 {
				if r, err := doCtx(ctx, http.MethodGet, "http://"+self+"/__admin/health", ""); err == nil && r.status == 200 {
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		select {
		case err := <-done:
			done <- err // for the cleanup
			return nil, "", path, err
		case <-ready:
			return s, "http://" + self, path, nil
		}
	}
	none := func(string) Options { return Options{} }
	_, _, path, err := start(none, "routes:\n  - { name: ok, path: /ok, respond: { body: ok } }\n  - { name: self, path: /x, respond: { proxy: \"http://localhost:PORT/base\" } }\n")
	if err == nil || !strings.Contains(err.Error(), path+":3:") || !strings.Contains(err.Error(), `route "self"`) || !strings.Contains(err.Error(), "own address") {
		t.Fatalf("Serve: %v, want the loop refused at %s:3", err, path)
	}
	_, _, _, err = start(func(self string) Options { return Options{ProxyUnmatched: "http://" + self} }, "routes: []\n")
	if err == nil || !strings.Contains(err.Error(), "proxy-unmatched") {
		t.Fatalf("Serve with --proxy-unmatched to itself: %v", err)
	}
	if _, _, _, err = start(func(string) Options { return Options{ProxyUnmatched: "http://127.0.0.1:1"} }, "routes:\n  - { path: /y, respond: { proxy: \"http://127.0.0.1:1\" } }\n"); err != nil {
		t.Fatalf("upstreams elsewhere: %v", err)
	}

	// A reload that brings a loop in is refused; the last good set serves.
	s, url, path, err := start(none, "routes:\n  - { name: ok, path: /ok, respond: { body: ok } }\n")
	if err != nil {
		t.Fatal(err)
	}
	self := strings.TrimPrefix(url, "http://")
	if err := os.WriteFile(path, []byte("routes:\n  - { name: self, path: /ok, respond: { proxy: \"http://"+self+"\" } }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), path+":2:") || !strings.Contains(err.Error(), "own address") {
		t.Fatalf("reload: %v, want the loop refused at %s:2", err, path)
	}
	if r := do(t, http.MethodGet, url+"/ok", ""); r.status != 200 || r.body != "ok" {
		t.Fatalf("after the refused reload: %d %q, want the last good route", r.status, r.body)
	}
}

// TestRecordSequencePerKeyAndLatency records through the server (spy
// mode with a Recorder, as serve --record does) in front of our own
// server as an idempotent upstream that takes its time, with
// --record-sequence-per header.Idempotency-Key and --record-latency. The
// recording's route is a sequence per key, made of what the key with the
// most calls got (its first answer, then the upstream's replay of it),
// with the upstream's latency as each answer's delay; served, a key's
// first call and its retry get those answers.
func TestRecordSequencePerKeyAndLatency(t *testing.T) {
	t.Parallel()
	_, sandbox, _ := serveYAMLRunning(t, Options{}, `
routes:
  - name: create charge
    method: POST
    path: /v1/charges
    idempotency: { key: header.Idempotency-Key, required: true }
    respond: { status: 201, template: true, body: { id: 'ch_{{ .Call }}', amount: 2000 }, delay: 60ms }
`)
	rec := record.New(record.Options{Upstream: sandbox, SequencePer: "header.Idempotency-Key", Latency: true})
	_, mock, _ := serveYAMLRunning(t, Options{ProxyUnmatched: sandbox, Recorder: rec}, "routes: []\n")
	charge := func(base, key string) response {
		t.Helper()
		return do(t, http.MethodPost, base+"/v1/charges", `{"amount":2000}`, "Idempotency-Key", key)
	}
	var live []response
	for _, key := range []string{"k1", "k2", "k2", "k3"} {
		live = append(live, charge(mock, key))
	}
	if !strings.Contains(live[1].body, `"ch_2"`) || live[2].body != live[1].body || live[2].header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("live answers %+v", live)
	}
	dir := t.TempDir()
	if _, err := rec.Write(dir); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(filepath.Join(dir, "recorded.yaml"))
	set, err := scenarios.Load(dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	routes := set.Routes()
	if len(routes) != 1 || routes[0].Sequence == nil || routes[0].Sequence.Per == nil || len(routes[0].Responses) != 2 {
		t.Fatalf("want one route, a sequence per key of 2 answers (k2's):\n%s", text)
	}
	// The first answer took the upstream's 60ms; its replay came at once.
	if d := routes[0].Responses[0].Delay; d.Kind != scenarios.Fixed || d.Fixed < 60*time.Millisecond {
		t.Errorf("the first answer's delay is %s, want the upstream's latency (at least 60ms)\n%s", d, text)
	}
	if d := routes[0].Responses[1].Delay; d.Kind != scenarios.Fixed || d.Fixed >= 60*time.Millisecond {
		t.Errorf("the replay's delay is %s, want the upstream's (a replay, under 60ms)\n%s", d, text)
	}
	_, replay, _ := serveYAMLRunning(t, Options{}, string(text))
	for _, key := range []string{"k9", "k8"} { // any key walks k2's series
		first, retry := charge(replay, key), charge(replay, key)
		if first.status != 201 || !sameJSONText(first.body, live[1].body) || first.header.Get("Idempotent-Replayed") != "" {
			t.Errorf("key %s, first call: %d %v %s, want k2's first answer %s", key, first.status, first.header, first.body, live[1].body)
		}
		if retry.status != 201 || !sameJSONText(retry.body, live[2].body) || retry.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("key %s, retry: %d %v %s, want k2's replay %s", key, retry.status, retry.header, retry.body, live[2].body)
		}
	}
}

// TestRecordKeepsIdempotencyKeys: recorded through the server (spy mode
// with a Recorder, as serve --record does), an Idempotency-Key that
// --record-headers lists is written as sent, and so is a body's
// idempotency_key (a Stripe event's), while an API key beside it is still
// redacted; the recording serves the body back as it came.
func TestRecordKeepsIdempotencyKeys(t *testing.T) {
	t.Parallel()
	_, sandbox, _ := serveYAMLRunning(t, Options{}, `
routes:
  - name: an event
    method: POST
    path: /v1/events
    respond:
      status: 200
      body: { id: evt_1, request: { id: req_1, idempotency_key: order-7-attempt }, api_key: sk_test_abcdef123 }
`)
	rec := record.New(record.Options{Upstream: sandbox, Headers: []string{"Idempotency-Key"}})
	_, mock, _ := serveYAMLRunning(t, Options{ProxyUnmatched: sandbox, Recorder: rec}, "routes: []\n")
	live := do(t, http.MethodPost, mock+"/v1/events", `{}`, "Idempotency-Key", "order-7-attempt", "Content-Type", "application/json")
	if live.status != 200 {
		t.Fatalf("live: %d %s", live.status, live.body)
	}
	dir := t.TempDir()
	if _, err := rec.Write(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "recorded.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, want := range []string{"# Idempotency-Key: order-7-attempt", "idempotency_key: order-7-attempt"} {
		if !strings.Contains(text, want) {
			t.Errorf("the recording lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "sk_test_abcdef123") {
		t.Errorf("the recording holds the API key:\n%s", text)
	}
	_, replay, _ := serveYAMLRunning(t, Options{}, text)
	r := do(t, http.MethodPost, replay+"/v1/events", `{}`)
	if !strings.Contains(r.body, `"idempotency_key":"order-7-attempt"`) {
		t.Errorf("served back: %d %s, want the event's idempotency_key", r.status, r.body)
	}
}

// TestRecordingWrittenOnDemand: POST /__admin/recording writes what was
// recorded so far while the server goes on (a CI job that ends with
// SIGKILL keeps it), the files serve the same answer, and a server that
// records nothing answers a 404 problem.
func TestRecordingWrittenOnDemand(t *testing.T) {
	t.Parallel()
	up := newCountingUpstream(t)
	dir := t.TempDir()
	rec := record.New(record.Options{Upstream: up.URL})
	_, mock, _ := serveYAMLRunning(t, Options{ProxyUnmatched: up.URL, Recorder: rec, RecordDir: dir}, "routes: []\n")
	live := do(t, http.MethodGet, mock+"/v1/things?limit=1", "")
	r := do(t, http.MethodPost, mock+"/__admin/recording", "")
	if r.status != 200 {
		t.Fatalf("POST /__admin/recording: %d %s", r.status, r.body)
	}
	if v := r.json(t); v["exchanges"] != float64(1) || fmt.Sprint(v["files"]) != "["+filepath.Join(dir, "recorded.yaml")+"]" {
		t.Errorf("POST /__admin/recording answered %s", r.body)
	}
	text, err := os.ReadFile(filepath.Join(dir, "recorded.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, replay, _ := serveYAMLRunning(t, Options{}, string(text))
	if got := do(t, http.MethodGet, replay+"/v1/things?limit=1", ""); got.status != live.status || !sameJSONText(got.body, live.body) {
		t.Errorf("served back: %d %s, want %d %s", got.status, got.body, live.status, live.body)
	}
	// Still recording: the next exchange is in the next write.
	do(t, http.MethodGet, mock+"/v1/other", "")
	if r := do(t, http.MethodPost, mock+"/__admin/recording", ""); r.status != 200 || r.json(t)["exchanges"] != float64(2) {
		t.Errorf("second write: %d %s", r.status, r.body)
	}
	_, plain, _ := serveYAMLRunning(t, Options{}, "routes: []\n")
	if r := do(t, http.MethodPost, plain+"/__admin/recording", ""); r.status != 404 || r.header.Get("Content-Type") != "application/problem+json" || !strings.Contains(r.body, "records nothing") {
		t.Errorf("without a recorder: %d %s", r.status, r.body)
	}
}

// TestRecordJSONWithARepeatedKey: an upstream's JSON with a key twice
// (valid JSON) is recorded as its string, redacted, since a YAML mapping
// may not repeat a key: the recording loads and serves it back as it came.
func TestRecordJSONWithARepeatedKey(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"a":1,"a":2,"password":"hunter2hunter","n":{"b":[1,{"c":"x","c":"y"}]}}`)
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	rec := record.New(record.Options{Upstream: up.URL})
	_, mock, _ := serveYAMLRunning(t, Options{ProxyUnmatched: up.URL, Recorder: rec, RecordDir: dir}, "routes: []\n")
	do(t, http.MethodGet, mock+"/dup", "")
	do(t, http.MethodGet, mock+"/dup", "")
	if r := do(t, http.MethodPost, mock+"/__admin/recording", ""); r.status != 200 {
		t.Fatalf("POST /__admin/recording: %d %s", r.status, r.body)
	}
	text, err := os.ReadFile(filepath.Join(dir, "recorded.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scenarios.Load(dir); err != nil {
		t.Fatalf("the recording does not load: %v\n%s", err, text)
	}
	_, replay, _ := serveYAMLRunning(t, Options{}, string(text))
	want := `{"a":1,"a":2,"password":"REDACTED","n":{"b":[1,{"c":"x","c":"y"}]}}`
	if r := do(t, http.MethodGet, replay+"/dup", ""); r.status != 200 || r.body != want || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("served back: %d %s %q, want %s", r.status, r.header.Get("Content-Type"), r.body, want)
	}
}

// TestRecordRedactsACardKeepingItsShape: a secret-named field holding an
// object (Stripe's payment method card) is redacted leaf by leaf, so that
// stripe-go still decodes the recorded answer; before, the whole object
// became the string "REDACTED" and decoding failed.
func TestRecordRedactsACardKeepingItsShape(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"pm_1","object":"payment_method","type":"card","card":{"brand":"visa","last4":"4242","exp_month":12,"exp_year":2030,"checks":{"cvc_check":"pass"},"three_d_secure_usage":{"supported":true}}}`)
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	rec := record.New(record.Options{Upstream: up.URL})
	_, mock, _ := serveYAMLRunning(t, Options{ProxyUnmatched: up.URL, Recorder: rec, RecordDir: dir}, "routes: []\n")
	do(t, http.MethodGet, mock+"/v1/payment_methods/pm_1", "")
	if r := do(t, http.MethodPost, mock+"/__admin/recording", ""); r.status != 200 {
		t.Fatalf("POST /__admin/recording: %d %s", r.status, r.body)
	}
	text, err := os.ReadFile(filepath.Join(dir, "recorded.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(text), "4242") || strings.Contains(string(text), "visa") {
		t.Errorf("the card's values are in the recording:\n%s", text)
	}
	_, replay, _ := serveYAMLRunning(t, Options{}, string(text))
	r := do(t, http.MethodGet, replay+"/v1/payment_methods/pm_1", "")
	var pm stripe.PaymentMethod
	if err := json.Unmarshal([]byte(r.body), &pm); err != nil {
		t.Fatalf("stripe-go cannot decode the recorded payment method %s: %v", r.body, err)
	}
	if pm.ID != "pm_1" || pm.Card == nil || pm.Card.Last4 != "REDACTED" || pm.Card.ExpMonth != 0 || pm.Card.ThreeDSecureUsage == nil || !pm.Card.ThreeDSecureUsage.Supported {
		t.Errorf("decoded %+v, card %+v", pm, pm.Card)
	}
}

// sameJSONText reports whether a and b are the same JSON value.
func sameJSONText(a, b string) bool {
	var va, vb any
	return json.Unmarshal([]byte(a), &va) == nil && json.Unmarshal([]byte(b), &vb) == nil && fmt.Sprint(va) == fmt.Sprint(vb)
}

// TestProxyStalledBodyIs504: an upstream that sends the head of a small
// answer and then nothing more, past the route's timeout, is a 504
// problem naming it once, as a slow head is. It was a 502 whose detail
// named the upstream twice ("upstream U: upstream U: the body stalled").
func TestProxyStalledBodyIs504(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = io.WriteString(w, "only this")
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(up.Close)
	_, base, _ := serveYAMLRunning(t, Options{}, fmt.Sprintf("routes:\n  - { name: stall, path: /stall, respond: { proxy: { url: %s, timeout: 200ms } } }\n", up.URL))
	r := do(t, http.MethodGet, base+"/stall", "")
	if r.status != http.StatusGatewayTimeout || r.header.Get("Content-Type") != "application/problem+json" ||
		!strings.Contains(r.body, "stalled") || strings.Count(r.body, up.URL) != 1 {
		t.Fatalf("got %d %s, want a 504 problem naming %s once", r.status, r.body, up.URL)
	}
	if es := journalEntries(t, base); len(es) != 1 || es[0].Status != http.StatusGatewayTimeout || !es[0].Proxied || es[0].UpstreamStatus != 200 {
		t.Fatalf("journal %+v", es)
	}
}

// TestRecordPassesATooLargeAnswer: recording, an upstream's answer larger
// than MaxBody (of a declared length, or chunked) reaches the client
// whole, and the recording counts it as skipped; a smaller one is
// recorded. Both were refused with a 502 ("answer too large to hold"),
// and counted nowhere, though only the recording held them.
func TestRecordPassesATooLargeAnswer(t *testing.T) {
	t.Parallel()
	const size = 200 << 10
	big := strings.Repeat("x", size)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		switch r.URL.Path {
		case "/sized":
			w.Header().Set("Content-Length", fmt.Sprint(size))
		case "/chunked":
			http.NewResponseController(w).Flush() // no length: chunked
		default:
			_, _ = io.WriteString(w, "small")
			return
		}
		_, _ = io.WriteString(w, big)
	}))
	t.Cleanup(up.Close)
	rec := record.New(record.Options{Upstream: up.URL})
	_, mock, _ := serveYAMLRunning(t, Options{ProxyUnmatched: up.URL, Recorder: rec, RecordDir: t.TempDir(), MaxBody: 64 << 10}, "routes: []\n")
	for _, path := range []string{"/sized", "/chunked"} {
		if r := do(t, http.MethodGet, mock+path, ""); r.status != 200 || r.body != big {
			t.Errorf("%s: got %d and %d bytes (%.80s), want 200 and %d bytes", path, r.status, len(r.body), r.body, size)
		}
	}
	if r := do(t, http.MethodGet, mock+"/small", ""); r.status != 200 || r.body != "small" {
		t.Errorf("/small: got %d %s", r.status, r.body)
	}
	r := do(t, http.MethodPost, mock+"/__admin/recording", "")
	if v := r.json(t); r.status != 200 || v["exchanges"] != float64(1) || v["skipped"] != float64(2) {
		t.Errorf("POST /__admin/recording: %d %s, want 1 exchange and 2 skipped", r.status, r.body)
	}
}

// TestProxiedRouteSendsItsEvents: a proxied route with events sends them
// with the upstream's answer as data.object, whether that answer came
// chunked or compressed. Streamed (chunked), it sent none; gzip'd, its
// data.object was {}.
func TestProxiedRouteSendsItsEvents(t *testing.T) {
	t.Parallel()
	rc := newHookReceiver(t, "whsec_test_123")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		id := strings.TrimPrefix(r.URL.Path, "/v1/things/")
		body := []byte(`{"id": "` + id + `", "object": "thing"}`)
		if id == "gzipped" {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			_, _ = zw.Write(body)
			_ = zw.Close()
			w.Header().Set("Content-Encoding", "gzip")
			body = b.Bytes()
		} else {
			http.NewResponseController(w).Flush() // no length: chunked
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(up.Close)
	_, base, _ := serveYAMLRunning(t, Options{Webhooks: webhooks.Options{TimeScale: 0.001}}, fmt.Sprintf(`
webhooks:
  endpoints: [ { name: shop, url: '%s', secret: whsec_test_123 } ]
routes:
  - name: things
    method: POST
    path: /v1/things/{id}
    respond: { proxy: %s }
    events: [ { type: thing.created } ]
`, rc.URL, up.URL))
	for _, id := range []string{"chunked", "gzipped"} {
		if r := do(t, http.MethodPost, base+"/v1/things/"+id, "", "Accept-Encoding", "gzip"); r.status != 200 {
			t.Fatalf("POST %s: %d %s", id, r.status, r.body)
		}
	}
	eventually(t, patience, func() string {
		ids := map[any]bool{}
		for _, ev := range rc.got() {
			ids[ev["data"].(map[string]any)["object"].(map[string]any)["id"]] = true
		}
		if !ids["chunked"] || !ids["gzipped"] {
			return fmt.Sprintf("the receiver got events of %v, want chunked and gzipped", ids)
		}
		return ""
	})
}

// TestRecordEscapedPathsServeBack: a recorded call whose path was sent
// escaped (a space, a non-ASCII letter, an escaped slash) is served back
// by the recording. Its route's path was written as sent (/docs/read%20me),
// which the routes, matched on the decoded path, never answered: a 404.
func TestRecordEscapedPathsServeBack(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "answer of "+r.URL.EscapedPath())
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	rec := record.New(record.Options{Upstream: up.URL})
	_, mock, _ := serveYAMLRunning(t, Options{ProxyUnmatched: up.URL, Recorder: rec, RecordDir: dir}, "routes: []\n")
	paths := []string{"/docs/read%20me", "/search/caf%C3%A9", "/dirs/a%2Fb"}
	live := map[string]string{}
	for _, p := range paths {
		r := do(t, http.MethodGet, mock+p, "")
		if r.status != 200 {
			t.Fatalf("GET %s through the recorder: %d %s", p, r.status, r.body)
		}
		live[p] = r.body
	}
	if r := do(t, http.MethodPost, mock+"/__admin/recording", ""); r.status != 200 {
		t.Fatalf("POST /__admin/recording: %d %s", r.status, r.body)
	}
	text, err := os.ReadFile(filepath.Join(dir, "recorded.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, replay, _ := serveYAMLRunning(t, Options{}, string(text))
	for _, p := range paths {
		if r := do(t, http.MethodGet, replay+p, ""); r.status != 200 || r.body != live[p] {
			t.Errorf("GET %s served back: %d %s, want 200 %s\n%s", p, r.status, r.body, live[p], text)
		}
	}
}

// TestRecordJSONWithAHugeNumber: an upstream's JSON with a number no
// float64 holds (1e400: valid JSON) is recorded as its string, so that
// the recording loads and serves it back as it came. Written as a YAML
// number, the recording failed validate ("number 1e400 cannot be written
// as JSON") and served nothing.
func TestRecordJSONWithAHugeNumber(t *testing.T) {
	t.Parallel()
	const answer = `{"id":"x_1","big":12345678901234567890,"e":1e400}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	rec := record.New(record.Options{Upstream: up.URL})
	_, mock, _ := serveYAMLRunning(t, Options{ProxyUnmatched: up.URL, Recorder: rec, RecordDir: dir}, "routes: []\n")
	do(t, http.MethodGet, mock+"/huge", "")
	if r := do(t, http.MethodPost, mock+"/__admin/recording", ""); r.status != 200 {
		t.Fatalf("POST /__admin/recording: %d %s", r.status, r.body)
	}
	text, err := os.ReadFile(filepath.Join(dir, "recorded.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scenarios.Load(dir); err != nil {
		t.Fatalf("the recording does not load: %v\n%s", err, text)
	}
	_, replay, _ := serveYAMLRunning(t, Options{}, string(text))
	if r := do(t, http.MethodGet, replay+"/huge", ""); r.status != 200 || r.body != answer {
		t.Errorf("served back: %d %q, want %s", r.status, r.body, answer)
	}
}

// TestProxyClientGoneIsNoAnswer: a client that leaves while the upstream
// has not answered ends the request as one that leaves during a delay:
// journaled with no status, the log's outcome saying so. It was
// journaled (and logged) as a 502 "the client left before the upstream
// answered", an answer nobody received.
func TestProxyClientGoneIsNoAnswer(t *testing.T) {
	t.Parallel()
	waiting := make(chan struct{}, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		waiting <- struct{}{}
		<-r.Context().Done()
	}))
	t.Cleanup(up.Close)
	_, base, logs := serveYAMLRunning(t, Options{}, "routes: [{ path: /p, respond: { proxy: '"+up.URL+"' } }]\n")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := doCtx(ctx, http.MethodGet, base+"/p", ""); errc <- err }()
	<-waiting
	cancel()
	<-errc
	var lines []map[string]any
	eventually(t, patience, func() string { // the log line is the request's last act
		if lines = logLines(logs, "/p"); len(lines) == 0 {
			return "not logged yet"
		}
		return ""
	})
	if es := journalEntries(t, base); len(es) != 1 || es[0].Status != 0 || !es[0].Proxied || es[0].UpstreamStatus != 0 {
		t.Errorf("journal %+v; want one entry, status 0 (no answer), proxied, upstream status 0", es)
	}
	if len(lines) != 1 || lines[0]["outcome"] != "client gone during upstream wait" || lines[0]["error"] != nil {
		t.Errorf("log lines %v, want one whose outcome is \"client gone during upstream wait\", with no error", lines)
	}
}

// TestRecordCountsFailedForwardsAsSkipped: recording, an exchange whose
// upstream is unreachable (502) or too slow (504) is not recorded (the
// 502 or 504 is the mock's, not the upstream's), and the recording's
// skipped count says so, as README says skipped counts the forwarded
// exchanges it does not hold. They were counted nowhere: 1 exchange, 0
// skipped, for three requests forwarded.
func TestRecordCountsFailedForwardsAsSkipped(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-r.Context().Done()
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(up.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	rec := record.New(record.Options{Upstream: up.URL})
	_, mock, _ := serveYAMLRunning(t, Options{Recorder: rec, RecordDir: t.TempDir()}, fmt.Sprintf(`routes:
  - { path: /ok, respond: { proxy: %s } }
  - { path: /slow, respond: { proxy: { url: %s, timeout: 100ms } } }
  - { path: /down, respond: { proxy: %s } }
`, up.URL, up.URL, down))
	for path, want := range map[string]int{"/ok": 200, "/slow": http.StatusGatewayTimeout, "/down": http.StatusBadGateway} {
		if r := do(t, http.MethodGet, mock+path, ""); r.status != want {
			t.Errorf("%s: got %d %s, want %d", path, r.status, r.body, want)
		}
	}
	r := do(t, http.MethodPost, mock+"/__admin/recording", "")
	if v := r.json(t); r.status != 200 || v["exchanges"] != float64(1) || v["skipped"] != float64(2) {
		t.Errorf("POST /__admin/recording: %d %s, want 1 exchange and 2 skipped", r.status, r.body)
	}
}

// TestProxyClientGoneDuringHeldBody: a client that leaves while the mock
// reads an upstream's answer it holds (a small one, read whole before it
// is written; or one held for the recording) ends the request as one that
// leaves during the wait for the head: no answer, journaled with no
// status, the recording counting it as skipped. The upstream's body read
// cut by the client's context was a plain 502, journaled and logged as
// the upstream's failure: an answer nobody received.
func TestProxyClientGoneDuringHeldBody(t *testing.T) {
	t.Parallel()
	for _, recording := range []bool{false, true} {
		t.Run(fmt.Sprintf("recording=%v", recording), func(t *testing.T) {
			t.Parallel()
			sent := make(chan struct{}, 1)
			release := make(chan struct{})
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", "100") // small: held even without the recording
				w.WriteHeader(http.StatusOK)
				io.WriteString(w, "first part")
				w.(http.Flusher).Flush()
				sent <- struct{}{}
				select {
				case <-release:
					io.WriteString(w, strings.Repeat("x", 90))
				case <-r.Context().Done():
				}
			}))
			t.Cleanup(up.Close)
			t.Cleanup(func() { close(release) })
			opts := Options{}
			var rec *record.Recorder
			if recording {
				rec = record.New(record.Options{Upstream: up.URL})
				opts.Recorder, opts.RecordDir = rec, t.TempDir()
			}
			_, base, logs := serveYAMLRunning(t, opts, "routes: [{ path: /p, respond: { proxy: '"+up.URL+"' } }]\n")
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { _, err := doCtx(ctx, http.MethodGet, base+"/p", ""); errc <- err }()
			<-sent
			cancel()
			<-errc
			var lines []map[string]any
			eventually(t, patience, func() string {
				if lines = logLines(logs, "/p"); len(lines) == 0 {
					return "not logged yet"
				}
				return ""
			})
			if es := journalEntries(t, base); len(es) != 1 || es[0].Status != 0 || !es[0].Proxied {
				t.Errorf("journal %+v; want one entry, status 0 (no answer), proxied", es)
			}
			if len(lines) != 1 || lines[0]["outcome"] != "client gone during upstream wait" || lines[0]["error"] != nil {
				t.Errorf("log lines %v, want one whose outcome is \"client gone during upstream wait\", with no error", lines)
			}
			if rec != nil {
				if n, skipped := rec.Len(), rec.Skipped(); n != 0 || skipped != 1 {
					t.Errorf("recording holds %d exchanges, %d skipped; want 0, 1 skipped", n, skipped)
				}
			}
		})
	}
}

// TestRecordBodilessAnswersDropContentEncoding: an answer with no body
// (a HEAD's, a 304's) whose head says Content-Encoding: gzip, as a
// server that compresses the GET says it, is recorded without it, as the
// GET's decoded answer is: a 304 that kept it, replayed to an HTTP cache,
// relabels the cached plain body gzip. Its empty body was "decoded",
// failed (gzip: EOF), and the recording kept the header with a comment
// "kept encoded".
func TestRecordBodilessAnswersDropContentEncoding(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("ETag", `"v1"`)
		switch {
		case r.Header.Get("If-None-Match") == `"v1"`:
			w.WriteHeader(http.StatusNotModified)
		case r.Method == http.MethodHead:
			w.Header().Set("Content-Length", "42")
			w.WriteHeader(http.StatusOK)
		default:
			zw := gzip.NewWriter(w)
			io.WriteString(zw, "hello, plain text")
			zw.Close()
		}
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	rec := record.New(record.Options{Upstream: up.URL})
	_, mock, _ := serveYAMLRunning(t, Options{ProxyUnmatched: up.URL, Recorder: rec, RecordDir: dir}, "routes: []\n")
	do(t, http.MethodGet, mock+"/doc", "")
	do(t, http.MethodHead, mock+"/doc", "")
	if r := do(t, http.MethodGet, mock+"/cached", "", "If-None-Match", `"v1"`); r.status != http.StatusNotModified {
		t.Fatalf("conditional GET through the recorder: %d", r.status)
	}
	if r := do(t, http.MethodPost, mock+"/__admin/recording", ""); r.status != 200 {
		t.Fatalf("POST /__admin/recording: %d %s", r.status, r.body)
	}
	text, err := os.ReadFile(filepath.Join(dir, "recorded.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(text, []byte("Content-Encoding")) || bytes.Contains(text, []byte("kept encoded")) {
		t.Errorf("the recording keeps Content-Encoding on an answer it stores decoded:\n%s", text)
	}
	_, replay, _ := serveYAMLRunning(t, Options{}, string(text))
	for _, c := range []struct{ method, path string }{{http.MethodHead, "/doc"}, {http.MethodGet, "/cached"}} {
		if r := do(t, c.method, replay+c.path, ""); r.header.Get("Content-Encoding") != "" || r.header.Get("ETag") != `"v1"` {
			t.Errorf("%s %s served back: Content-Encoding %q, ETag %q; want none, \"v1\"", c.method, c.path, r.header.Get("Content-Encoding"), r.header.Get("ETag"))
		}
	}
}

// TestRecordHeadOfALargeAnswer: a HEAD answer has no body whatever length
// its head declares (the GET's), so recording holds it as any answer.
// Its declared 50 MB passed --max-body: it was streamed, counted as
// skipped and left out of the recording.
func TestRecordHeadOfALargeAnswer(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodHead {
			http.Error(w, "HEAD only", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", "52428800")
		w.Header().Set("ETag", `"big"`)
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	rec := record.New(record.Options{Upstream: up.URL})
	_, mock, _ := serveYAMLRunning(t, Options{ProxyUnmatched: up.URL, Recorder: rec, RecordDir: dir}, "routes: []\n")
	if r := do(t, http.MethodHead, mock+"/big.iso", ""); r.status != 200 || r.header.Get("Content-Length") != "52428800" {
		t.Fatalf("HEAD through the recorder: %d, Content-Length %q", r.status, r.header.Get("Content-Length"))
	}
	if n, skipped := rec.Len(), rec.Skipped(); n != 1 || skipped != 0 {
		t.Errorf("recording holds %d exchanges, %d skipped; want the HEAD, none skipped", n, skipped)
	}
}

// TestRecordRangeAnswersOnlyARange: a 206 (or 416) to a request with Range
// is recorded with a condition on that Range, so that a plain GET of the
// same path replays the full answer and never the part. Without the
// condition both calls were one route's sequence, and the plain GET
// served back first got the 206.
func TestRecordRangeAnswersOnlyARange(t *testing.T) {
	t.Parallel()
	const content = "0123456789abcdefghij"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		http.ServeContent(w, r, "file.txt", time.Time{}, strings.NewReader(content))
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	rec := record.New(record.Options{Upstream: up.URL})
	_, mock, _ := serveYAMLRunning(t, Options{ProxyUnmatched: up.URL, Recorder: rec, RecordDir: dir}, "routes: []\n")
	get := func(base, rng string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, base+"/file.txt", nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// The part first, as a player or a download manager probes.
	calls := []struct {
		rng    string
		status int
		body   string
	}{
		{"bytes=0-4", http.StatusPartialContent, "01234"},
		{"", http.StatusOK, content},
		{"bytes=100-", http.StatusRequestedRangeNotSatisfiable, ""},
	}
	for _, c := range calls {
		if st, b := get(mock, c.rng); st != c.status || (c.body != "" && b != c.body) {
			t.Fatalf("GET Range %q through the recorder: %d %q, want %d %q", c.rng, st, b, c.status, c.body)
		}
	}
	if r := do(t, http.MethodPost, mock+"/__admin/recording", ""); r.status != 200 {
		t.Fatalf("POST /__admin/recording: %d %s", r.status, r.body)
	}
	text, err := os.ReadFile(filepath.Join(dir, "recorded.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, replay, _ := serveYAMLRunning(t, Options{}, string(text))
	// Twice each, plain first: a sequence would show on the second call.
	for range 2 {
		for _, c := range []int{1, 0, 2} {
			c := calls[c]
			if st, b := get(replay, c.rng); st != c.status || (c.body != "" && b != c.body) {
				t.Errorf("GET Range %q served back: %d %q, want %d %q\n%s", c.rng, st, b, c.status, c.body, text)
			}
		}
	}
}

// TestProxyForwardsTrailers: a streamed answer's trailers (gRPC's
// Grpc-Status, declared; one sent undeclared with http.TrailerPrefix)
// reach the client after the body. They were dropped: Trailer is a
// hop-by-hop field, and nothing copied the upstream's trailers once its
// body ended, so a gRPC client over the proxy saw no status.
func TestProxyForwardsTrailers(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "Grpc-Status")
		w.Header().Set("Content-Type", "application/grpc")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "first ")
		w.(http.Flusher).Flush()
		_, _ = io.WriteString(w, "second")
		w.Header().Set("Grpc-Status", "7")
		w.Header().Set(http.TrailerPrefix+"X-Late", "late")
	}))
	t.Cleanup(up.Close)
	_, mock, _ := serveYAMLRunning(t, Options{ProxyUnmatched: up.URL}, "routes: []\n")
	resp, err := http.Get(mock + "/svc/Method")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || string(b) != "first second" {
		t.Fatalf("through the proxy: %d %q", resp.StatusCode, b)
	}
	if got := resp.Trailer.Get("Grpc-Status"); got != "7" {
		t.Errorf("Grpc-Status trailer %q, want 7 (trailers %v)", got, resp.Trailer)
	}
	if got := resp.Trailer.Get("X-Late"); got != "late" {
		t.Errorf("X-Late trailer %q, want late (trailers %v)", got, resp.Trailer)
	}
}
