package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"
)

func TestAdminScenarios(t *testing.T) {
	t.Parallel()
	s, hs, _ := newTestServer(t, Options{Source: "test"}, demoFile)
	key := []string{"Idempotency-Key", "k", "Content-Type", "application/json"}
	do(t, "POST", hs.URL+"/payments", "{}", key...)
	do(t, "POST", hs.URL+"/payments", "{}", key...)

	r := do(t, "GET", hs.URL+"/__admin/scenarios", "")
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %v", r.status, r.header)
	}
	doc := r.json(t)
	if doc["version"] != float64(1) || doc["source"] != "test" || doc["loadedAt"] == "" {
		t.Errorf("header fields: %v", doc)
	}
	lr := doc["lastReload"].(map[string]any)
	if lr["ok"] != true || lr["error"] != nil || len(lr["errors"].([]any)) != 0 {
		t.Errorf("lastReload = %v", lr)
	}
	files := doc["files"].([]any)
	if len(files) != 1 || files[0].(map[string]any)["path"] != demoFile || files[0].(map[string]any)["routes"] != float64(s.Routes()) {
		t.Errorf("files = %v", files)
	}
	routes := doc["routes"].([]any)
	var names []string
	for _, x := range routes {
		names = append(names, x.(map[string]any)["name"].(string))
	}
	wantOrder := "payment without key,payment key reused with another body,payment in progress,payment created,payment found,payment not found,transfer without key,transfer created"
	if strings.Join(names, ",") != wantOrder {
		t.Errorf("routes in match order = %v", names)
	}
	created := routes[3].(map[string]any)
	if created["hits"] != float64(2) || created["keys"] != float64(1) || created["source"] != demoFile+":67:5" {
		t.Errorf("payment created = %v", created)
	}
	seq := created["sequence"].(map[string]any)
	if seq["per"] != "header.Idempotency-Key" || seq["after"] != "repeat-last" {
		t.Errorf("sequence = %v", seq)
	}
	if w := created["when"].([]any); len(w) != 1 || w[0] != "header Idempotency-Key present" {
		t.Errorf("when = %v", w)
	}
	transfer := routes[7].(map[string]any)["responses"].([]any)[0].(map[string]any)
	if transfer["delay"] != "10s" || transfer["status"] != float64(201) {
		t.Errorf("transfer created responses[0] = %v", transfer)
	}
}

// TestAdminMisspeltRoute: an admin call that names a route by a name no
// route has (a typo) is one mistake, whichever call makes it: a 400
// problem that says what the name likely misspells, and nothing done.
// POST /__admin/faults and /__admin/reset answered 404 before, the
// journal's filters 400.
func TestAdminMisspeltRoute(t *testing.T) {
	t.Parallel()
	_, hs, _ := newTestServer(t, Options{}, demoFile)
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/__admin/faults", `{"route": "payment creatd", "fault": "connection-reset"}`},
		{"POST", "/__admin/reset?route=payment+creatd", ""},
		{"GET", "/__admin/requests?route=payment+creatd", ""},
		{"GET", "/__admin/requests/count?route=payment+creatd", ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := do(t, tc.method, hs.URL+tc.path, tc.body, "Content-Type", "application/json")
			if r.status != 400 || r.header.Get("Content-Type") != "application/problem+json" || r.json(t)["status"] != float64(400) ||
				!strings.Contains(r.body, `did you mean \"payment created\"?`) {
				t.Errorf("%d %s %s; want a 400 problem with did you mean \"payment created\"?", r.status, r.header.Get("Content-Type"), r.body)
			}
		})
	}
	if r := do(t, "GET", hs.URL+"/__admin/faults", ""); strings.Contains(r.body, "creatd") {
		t.Errorf("a fault was switched on for the misspelt route: %s", r.body)
	}
}

func TestAdminResetAndErrors(t *testing.T) {
	t.Parallel()
	_, hs, _ := newTestServer(t, Options{}, demoFile)
	key := []string{"Idempotency-Key", "k"}
	do(t, "POST", hs.URL+"/payments", "{}", key...)
	if r := do(t, "POST", hs.URL+"/payments", "{}", key...); r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatal("setup: second call is not a replay")
	}
	if r := do(t, "POST", hs.URL+"/__admin/reset?route=payment+created", ""); r.status != 200 || r.json(t)["reset"] != float64(1) {
		t.Errorf("reset one route: %d %s", r.status, r.body)
	}
	if r := do(t, "POST", hs.URL+"/payments", "{}", key...); r.header.Get("Idempotent-Replayed") != "" {
		t.Error("after reset the key was still remembered")
	}
	if r := do(t, "POST", hs.URL+"/__admin/reset", ""); r.status != 200 || r.json(t)["reset"] != float64(8) {
		t.Errorf("reset all: %d %s", r.status, r.body)
	}
	cases := []struct {
		method, path string
		status       int
	}{
		{"POST", "/__admin/reset?route=nope", 400},
		{"GET", "/__admin/nothing-here", 404},
		{"GET", "/__admin", 404},
		{"PUT", "/__admin/scenarios", 405},
		{"GET", "/__admin/reset", 405},
	}
	for _, c := range cases {
		r := do(t, c.method, hs.URL+c.path, "")
		if r.status != c.status || r.header.Get("Content-Type") != "application/problem+json" || r.json(t)["status"] != float64(c.status) {
			t.Errorf("%s %s: %d %s %s", c.method, c.path, r.status, r.header.Get("Content-Type"), r.body)
		}
		if want := map[string]string{"/__admin/scenarios": "GET, POST, DELETE", "/__admin/reset": "POST"}[c.path]; c.status == 405 && r.header.Get("Allow") != want {
			t.Errorf("%s %s: Allow = %q, want %q", c.method, c.path, r.header.Get("Allow"), want)
		}
	}
	if r := do(t, "GET", hs.URL+"/__admin/health", ""); r.status != 200 || r.json(t)["status"] != "ok" {
		t.Errorf("health: %d %s", r.status, r.body)
	}
}

// TestAdminUnmatched: a CI job asserts that nothing unmocked was called.
func TestAdminUnmatched(t *testing.T) {
	t.Parallel()
	_, hs, _ := newTestServer(t, Options{}, demoFile)
	unmatched := func() any { return do(t, "GET", hs.URL+"/__admin/scenarios", "").json(t)["unmatched"] }
	if n := unmatched(); n != float64(0) {
		t.Fatalf("unmatched at start = %v", n)
	}
	do(t, "GET", hs.URL+"/payments/pay_demo_0001", "") // matched
	do(t, "GET", hs.URL+"/refunds", "")
	do(t, "DELETE", hs.URL+"/payments", "")
	if n := unmatched(); n != float64(2) {
		t.Errorf("unmatched = %v, want 2", n)
	}
	do(t, "POST", hs.URL+"/__admin/reset", "")
	if n := unmatched(); n != float64(0) {
		t.Errorf("unmatched after reset = %v, want 0", n)
	}
}

func TestAdminReload(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.yaml")
	writeFile(t, path, route("/x", "one"))
	_, hs, _ := newTestServer(t, Options{}, path)
	writeFile(t, path, route("/x", "two"))
	if r := do(t, "POST", hs.URL+"/__admin/reload", ""); r.status != 200 || r.json(t)["version"] != float64(2) {
		t.Errorf("reload: %d %s", r.status, r.body)
	}
	if r := do(t, "POST", hs.URL+"/__admin/reload", ""); r.json(t)["version"] != float64(2) {
		t.Errorf("a reload of unchanged files must not make a new version: %s", r.body)
	}
	if r := do(t, "GET", hs.URL+"/x", ""); r.body != "two" {
		t.Errorf("after reload: %q", r.body)
	}
	if err := os.WriteFile(path, []byte("routes: [{ path: /x, respnd: {} }]"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := do(t, "POST", hs.URL+"/__admin/reload", "")
	errs, _ := r.json(t)["errors"].([]any)
	if r.status != 422 || len(errs) != 1 || !strings.Contains(errs[0].(string), `s.yaml:1:22: routes[0]: unknown field "respnd" (did you mean "respond"?)`) {
		t.Errorf("invalid reload: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", hs.URL+"/x", ""); r.body != "two" {
		t.Errorf("the old scenarios stopped serving: %q", r.body)
	}
}

// manyRoutes is a scenario file of n routes /r0 ... /r(n-1).
func manyRoutes(n int) string {
	var b strings.Builder
	b.WriteString("routes:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - { name: r%d, path: /r%d, respond: { body: x } }\n", i, i)
	}
	return b.String()
}

// TestAdminScenariosPaged: the route listing comes in pages (1000 by
// default) with the total and the request for the next page.
func TestAdminScenariosPaged(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, manyRoutes(1500))
	type page struct {
		Routes []struct {
			Order int
			Name  string
		}
		Page struct {
			Offset, Limit, Total int
			Next                 *string
		}
	}
	get := func(query string) (page, response) {
		t.Helper()
		r := do(t, "GET", hs.URL+"/__admin/scenarios"+query, "")
		var p page
		if r.status == 200 {
			if err := json.Unmarshal([]byte(r.body), &p); err != nil {
				t.Fatalf("GET %s: %v", query, err)
			}
		}
		return p, r
	}
	p, _ := get("")
	if len(p.Routes) != 1000 || p.Page.Total != 1500 || p.Page.Limit != 1000 || p.Page.Next == nil || *p.Page.Next != "/__admin/scenarios?offset=1000&limit=1000" {
		t.Errorf("default page: %d routes, page %+v", len(p.Routes), p.Page)
	}
	p, _ = get("?offset=1000&limit=1000")
	if len(p.Routes) != 500 || p.Routes[0].Order != 1001 || p.Routes[0].Name != "r1000" || p.Page.Next != nil {
		t.Errorf("last page: %d routes from %+v, page %+v", len(p.Routes), p.Routes[0], p.Page)
	}
	p, _ = get("?limit=0")
	if len(p.Routes) != 0 || p.Page.Total != 1500 {
		t.Errorf("limit=0: %d routes, page %+v; want only the total", len(p.Routes), p.Page)
	}
	p, _ = get("?offset=9999")
	if len(p.Routes) != 0 || p.Page.Next != nil {
		t.Errorf("past the end: %d routes, page %+v", len(p.Routes), p.Page)
	}
	for _, q := range []string{"?limit=-1", "?limit=10001", "?offset=x", "?limit=1e3"} {
		if _, r := get(q); r.status != 400 || r.header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("GET %s: %d %s, want a 400 problem", q, r.status, r.body)
		}
	}
}

// gatedLoad is a loader that counts its calls and, once blocked is set,
// waits for release before loading.
type gatedLoad struct {
	mu      sync.Mutex // guards calls
	calls   int
	block   atomic.Bool
	entered chan struct{} // receives when a blocked load begins
	release chan struct{}
	yaml    string
}

func (g *gatedLoad) load() (*scenarios.Set, error) {
	g.mu.Lock()
	g.calls++
	g.mu.Unlock()
	if g.block.Load() {
		g.entered <- struct{}{}
		<-g.release
	}
	return scenarios.LoadBytes("s.yaml", []byte(g.yaml))
}

func (g *gatedLoad) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}

// TestReloadMergesConcurrentRequests: twenty reload requests made while
// a reload runs share one more reload, which starts after it, rather than
// queueing for twenty.
func TestReloadMergesConcurrentRequests(t *testing.T) {
	t.Parallel()
	g := &gatedLoad{entered: make(chan struct{}, 1), release: make(chan struct{}), yaml: route("/x", "one")}
	s, hs, _ := newTestServer(t, Options{Load: g.load})
	g.block.Store(true)
	first := make(chan error, 1)
	go func() { first <- s.Reload() }()
	<-g.entered // the first reload is loading
	const n = 20
	results := make(chan response, n)
	for range n {
		go func() { results <- do(t, "POST", hs.URL+"/__admin/reload", "") }()
	}
	eventually(t, 10*time.Second, func() string {
		s.reloads.mu.Lock()
		defer s.reloads.mu.Unlock()
		if c := s.reloads.next; c == nil || c.callers < n {
			return "the reload requests have not all arrived"
		}
		return ""
	})
	g.block.Store(false)
	close(g.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range n {
		if r := <-results; r.status != 200 {
			t.Errorf("reload: %d %s", r.status, r.body)
		}
	}
	// New, the first reload, and one for the twenty.
	if c := g.count(); c != 3 {
		t.Errorf("%d loads, want 3", c)
	}
}

// TestReloadStuckLoader: a loader blocked on I/O holds neither admin
// calls nor shutdown. A reload request gives up with its client; Reload
// (as the watcher calls it) returns once shutdown begins.
func TestReloadStuckLoader(t *testing.T) {
	t.Parallel()
	g := &gatedLoad{entered: make(chan struct{}, 1), release: make(chan struct{}), yaml: route("/x", "one")}
	t.Cleanup(func() { close(g.release) })
	s, err := New(Options{Load: g.load, ShutdownTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String()
	g.block.Store(true)
	watcher := make(chan error, 1)
	go func() { watcher <- s.Reload() }()
	<-g.entered // stuck for good

	rctx, rcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer rcancel()
	if _, err := doCtx(rctx, "POST", url+"/__admin/reload", ""); err == nil {
		t.Error("POST /__admin/reload answered while the loader is stuck")
	}
	if r := do(t, "GET", url+"/__admin/health", ""); r.status != 200 {
		t.Errorf("health during a stuck reload: %d", r.status)
	}
	cancel()
	for name, c := range map[string]chan error{"Serve": served, "Reload": watcher} {
		select {
		case err := <-c:
			if name == "Reload" && !errors.Is(err, errReloadPending) {
				t.Errorf("Reload returned %v, want errReloadPending", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s has not returned 30s after shutdown began, with the loader stuck", name)
		}
	}
}

// TestReloadHashSkipsLoad: with a Hash that says nothing changed, a
// reload does not parse.
func TestReloadHashSkipsLoad(t *testing.T) {
	t.Parallel()
	g := &gatedLoad{yaml: route("/x", "one")}
	set, err := scenarios.LoadBytes("s.yaml", []byte(g.yaml))
	if err != nil {
		t.Fatal(err)
	}
	var hash atomic.Value
	hash.Store(set.Hash)
	s, _, _ := newTestServer(t, Options{Load: g.load, Hash: func() (string, error) { return hash.Load().(string), nil }})
	if err := s.Reload(); err != nil || g.count() != 1 {
		t.Errorf("unchanged hash: %v, %d loads, want only New's", err, g.count())
	}
	hash.Store("changed")
	if err := s.Reload(); err != nil || g.count() != 2 {
		t.Errorf("changed hash: %v, %d loads, want 2", err, g.count())
	}
}

// TestHealthBuild: the health answer and the ready log line say which
// build of scenariomock serves, next to the fields health always had.
func TestHealthBuild(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ build, want string }{
		{"v1.2.3", "v1.2.3"},
		{"", "(devel)"},
	} {
		logs := &syncBuffer{}
		url, stop := serveReal(t, Options{Build: tc.build, Logger: slog.New(slog.NewJSONHandler(logs, nil))},
			"routes: [{ path: /a, respond: {} }, { path: /b, respond: {} }]")
		waitListening(t, url)
		r := do(t, "GET", url+"/__admin/health", "")
		got := r.json(t)
		want := map[string]any{"status": "ok", "version": float64(1), "routes": float64(2), "build": tc.want,
			"usage": map[string]any{"idempotencyKeys": float64(0), "idempotencyBytes": float64(0), "collectionBytes": float64(0)}}
		if r.status != 200 || !reflect.DeepEqual(got, want) {
			t.Errorf("Build %q: health %d %s, want %v", tc.build, r.status, r.body, want)
		}
		eventually(t, patience, func() string {
			if !strings.Contains(logs.String(), `"msg":"ready"`) || !strings.Contains(logs.String(), `"build":"`+tc.want+`"`) {
				return "no ready line with the build:\n" + logs.String()
			}
			return ""
		})
		if err := stop(); err != nil {
			t.Error(err)
		}
	}
}
