package scenariomocktest_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/scenariomock/scenariomock/scenariomocktest"
)

const payments = `
	routes:
	  - { name: create payment, method: POST, path: /payments, respond: { status: 201, body: { id: 'pay_{{ randomHex 8 }}' }, template: true } }
	  - { name: get payment, method: GET, path: '/payments/{id}', respond: { status: 200 } }
`

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func post(t *testing.T, url, body string) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestStart(t *testing.T) {
	t.Parallel()
	srv := scenariomocktest.Start(t, scenariomocktest.YAML(payments))
	if !strings.HasPrefix(srv.URL(), "http://127.0.0.1:") {
		t.Errorf("URL() = %s", srv.URL())
	}
	post(t, srv.URL()+"/payments", `{"amount": 1}`)
	post(t, srv.URL()+"/payments", `{"amount": 2}`)
	if code, _ := get(t, srv.URL()+"/payments/p1"); code != 200 {
		t.Errorf("GET: %d", code)
	}
	if n := srv.Count(scenariomocktest.Filter{Route: "create payment"}); n != 2 {
		t.Errorf("Count(create payment) = %d, want 2", n)
	}
	got := srv.Requests(scenariomocktest.Filter{Body: map[string]string{"amount": "2"}})
	if len(got) != 1 || got[0].Route != "create payment" || got[0].Status != 201 {
		t.Errorf("Requests(amount=2) = %+v", got)
	}
	// A form body (Stripe's), by its fields as sent.
	resp, err := http.PostForm(srv.URL()+"/payments", url.Values{"amount": {"3"}, "metadata[order]": {"o1"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := srv.Count(scenariomocktest.Filter{Form: map[string]string{"amount": "3", "metadata[order]": "o1"}}); n != 1 {
		t.Errorf("Count(form amount=3, metadata[order]=o1) = %d, want 1", n)
	}
	if n := srv.Count(scenariomocktest.Filter{Form: map[string]string{"amount": "2"}}); n != 0 {
		t.Errorf("Count(form amount=2) = %d, want 0: a JSON body is no form", n)
	}
	srv.Reset()
	if n := srv.Count(scenariomocktest.Filter{}); n != 0 {
		t.Errorf("after Reset: Count = %d, want 0", n)
	}
	routes, err := srv.Client().Routes(t.Context())
	if err != nil || len(routes) != 2 || routes[0].Hits != 0 {
		t.Errorf("Client().Routes after Reset: %+v, %v", routes, err)
	}
}

func TestStartFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("routes: [{ name: a, path: /a, respond: { body: from a file } }]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := scenariomocktest.StartFiles(t, dir)
	if code, body := get(t, srv.URL()+"/a"); code != 200 || body != "from a file" {
		t.Errorf("GET /a: %d %q", code, body)
	}
	if n := srv.Count(scenariomocktest.Filter{Route: "a"}); n != 1 {
		t.Errorf("Count = %d", n)
	}
}

// TestSeed: the same seed, the same random ids, server after server.
func TestSeed(t *testing.T) {
	t.Parallel()
	ids := func(seed uint64) string {
		srv := scenariomocktest.Start(t, scenariomocktest.YAML(payments), scenariomocktest.Seed(seed))
		return post(t, srv.URL()+"/payments", `{}`) + post(t, srv.URL()+"/payments", `{}`)
	}
	a, b, c := ids(7), ids(7), ids(8)
	if a != b || a == c {
		t.Errorf("seed 7: %s and %s; seed 8: %s; want the first two equal, the third not", a, b, c)
	}
}

// recorder stands for a test, to see what Start reports to it. Its other
// methods are the real test's.
type recorder struct {
	testing.TB
	mu       sync.Mutex // guards all below
	errors   []string
	logs     []string
	cleanups []func()
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Log(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprint(args...))
}

func (r *recorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// end runs the cleanups, last first, as the testing package does.
func (r *recorder) end() {
	r.mu.Lock()
	fs := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

func (r *recorder) report() ([]string, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errors...), append([]string(nil), r.logs...)
}

func TestFailOnUnmatched(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		opts      []scenariomocktest.Option
		unmatched bool
		catchAll  bool // call a path only the catch-all route answers
		// fails says whether the test must fail, and then with what.
		fails []string
	}{
		{name: "all matched", opts: []scenariomocktest.Option{scenariomocktest.FailOnUnmatched()}},
		{name: "unmatched, not asked", unmatched: true},
		{name: "unmatched", opts: []scenariomocktest.Option{scenariomocktest.FailOnUnmatched()}, unmatched: true,
			fails: []string{"scenariomocktest: 1 request matched no route:", "GET /paymnts/p1?x=1 → 404", "get payment:"}},
		{name: "a catch-all answered", opts: []scenariomocktest.Option{scenariomocktest.FailOnUnmatched()}, catchAll: true,
			fails: []string{"scenariomocktest: 1 request matched no route:", `GET /v1/balance → 404: answered by "unknown URL", a catch-all (unmatched: true)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{TB: t}
			srv := scenariomocktest.Start(rec, scenariomocktest.YAML(payments+`
	  - { name: unknown URL, path: '/v1/{p:.*}', unmatched: true, respond: { status: 404 } }
`), tc.opts...)
			get(t, srv.URL()+"/payments/p1")
			if tc.unmatched {
				get(t, srv.URL()+"/paymnts/p1?x=1")
			}
			if tc.catchAll {
				get(t, srv.URL()+"/v1/balance")
			}
			rec.end()
			errs, _ := rec.report()
			if len(tc.fails) == 0 {
				if len(errs) != 0 {
					t.Errorf("the test failed: %q", errs)
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("errors %q, want one", errs)
			}
			for _, s := range tc.fails {
				if !strings.Contains(errs[0], s) {
					t.Errorf("the failure lacks %q:\n%s", s, errs[0])
				}
			}
			// The server is down once the test has ended.
			if _, err := http.Get(srv.URL() + "/payments/p1"); err == nil {
				t.Error("the server still answers after the test ended")
			}
		})
	}
}

// TestLog: Log sends the server's lines to t.Log, and none after the end.
func TestLog(t *testing.T) {
	t.Parallel()
	rec := &recorder{TB: t}
	srv := scenariomocktest.Start(rec, scenariomocktest.YAML(payments), scenariomocktest.Log(slog.LevelInfo))
	get(t, srv.URL()+"/payments/p1")
	rec.end()
	errs, logs := rec.report()
	joined := strings.Join(logs, "\n")
	if len(errs) != 0 || !strings.Contains(joined, "msg=ready") || !strings.Contains(joined, "/payments/p1") {
		t.Errorf("errors %q; logs:\n%s", errs, joined)
	}
}

// TestBadScenarios: a scenario problem fails the test at Start, at its
// line.
func TestBadScenarios(t *testing.T) {
	t.Parallel()
	rec := &fatalRecorder{recorder: recorder{TB: t}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		scenariomocktest.Start(rec, scenariomocktest.YAML("routes:\n  - { path: /x, respnd: {} }\n"))
	}()
	<-done
	if !strings.Contains(rec.fatal, `inline.yaml:2:17: routes[0]: unknown field "respnd"`) {
		t.Errorf("Fatal: %q", rec.fatal)
	}
}

// fatalRecorder records Fatalf and ends its goroutine, as t.Fatalf does.
type fatalRecorder struct {
	recorder
	fatal string
}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestYAMLIndented: YAML text indented with the Go code around it, tabs
// and all, and its closing line of blanks, loads.
func TestYAMLIndented(t *testing.T) {
	t.Parallel()
	srv := scenariomocktest.Start(t, scenariomocktest.YAML("\n\t\troutes:\n\t\t  - { path: /x, respond: { body: x } }\n\n\t\t  - { path: /y, respond: { body: y } }\n\t"))
	if _, body := get(t, srv.URL()+"/y"); body != "y" {
		t.Errorf("GET /y: %q", body)
	}
}

// TestCloseEarly: a test that calls Close itself gets FailOnUnmatched's
// error from it, and the end of the test does not report it again.
func TestCloseEarly(t *testing.T) {
	t.Parallel()
	rec := &recorder{TB: t}
	srv := scenariomocktest.Start(rec, scenariomocktest.YAML(payments), scenariomocktest.FailOnUnmatched())
	get(t, srv.URL()+"/nowhere")
	err := srv.Close()
	if err == nil || !strings.Contains(err.Error(), "GET /nowhere") {
		t.Errorf("Close: %v, want the unmatched request", err)
	}
	if again := srv.Close(); again == nil || again.Error() != err.Error() {
		t.Errorf("second Close: %v, want the first's error", again)
	}
	rec.end()
	if errs, _ := rec.report(); len(errs) != 0 {
		t.Errorf("reported again at the end: %q", errs)
	}
}

// TestAdd: a test adds routes of its own over the server's, for its own
// duration; sessions keep parallel subtests apart, and a document with
// problems fails the test at its line:col.
func TestAdd(t *testing.T) {
	srv := scenariomocktest.Start(t, scenariomocktest.YAML(payments))
	t.Run("declined", func(t *testing.T) {
		names := srv.Add(t, `
			routes:
			  - { name: get declined, method: GET, path: '/payments/{id}', respond: { status: 402, body: declined } }
		`)
		if fmt.Sprint(names) != "[get declined]" {
			t.Errorf("Add = %v", names)
		}
		if code, body := get(t, srv.URL()+"/payments/pay_1"); code != 402 || body != "declined" {
			t.Errorf("GET with the added route: %d %q", code, body)
		}
	})
	if code, _ := get(t, srv.URL()+"/payments/pay_1"); code != 200 {
		t.Errorf("GET after the subtest: %d, want the file's 200 (the added route removed)", code)
	}
	t.Run("sessions", func(t *testing.T) {
		for _, name := range []string{"one", "two"} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				srv.Add(t, fmt.Sprintf("session: %s\nroutes:\n  - { name: whoami, method: GET, path: /whoami, respond: { body: %s } }\n", name, name))
				for range 3 {
					if _, body := get(t, srv.URL()+"/__session/"+name+"/whoami"); body != name {
						t.Errorf("session %s got %q", name, body)
					}
				}
				if n := srv.Count(scenariomocktest.Filter{Session: name, Route: "whoami"}); n != 3 {
					t.Errorf("Count of session %s = %d, want 3", name, n)
				}
			})
		}
	})
	rec := &fatalRecorder{recorder: recorder{TB: t}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Add(rec, "routes:\n  - { path: /x, respnd: {} }\n")
	}()
	<-done
	if !strings.Contains(rec.fatal, `posted:2:17: routes[0]: unknown field "respnd"`) {
		t.Errorf("Fatal: %q", rec.fatal)
	}
}

// TestStates: a test reads and sets route states, and a session's
// states are reached through the client.
func TestStates(t *testing.T) {
	t.Parallel()
	srv := scenariomocktest.Start(t, scenariomocktest.YAML(`
		routes:
		  - { name: pending, method: GET, path: '/orders/{id}', state: { name: order, per: '{{ .Request.Vars.id }}', is: Started }, respond: { body: pending } }
		  - { name: paid, method: GET, path: '/orders/{id}', state: { name: order, per: '{{ .Request.Vars.id }}', is: paid }, respond: { body: paid } }
		  - { name: pay, method: POST, path: '/orders/{id}/pay', state: { name: order, per: '{{ .Request.Vars.id }}', to: paid }, respond: { body: ok } }
	`))
	if v := srv.State("order", "o1"); v != "Started" {
		t.Fatalf("State before = %q", v)
	}
	post(t, srv.URL()+"/orders/o1/pay", "")
	if v := srv.State("order", "o1"); v != "paid" {
		t.Fatalf("State after the payment = %q", v)
	}
	srv.SetState("order", "o2", "paid")
	if _, body := get(t, srv.URL()+"/orders/o2"); body != "paid" {
		t.Fatalf("GET o2 after SetState = %q", body)
	}
	if got := fmt.Sprint(srv.States()); got != "[{ order o1 paid} { order o2 paid}]" {
		t.Fatalf("States() = %s", got)
	}
	srv.Reset()
	if got := srv.States(); len(got) != 0 {
		t.Fatalf("States() after Reset = %v", got)
	}
	if _, body := get(t, srv.URL()+"/orders/o1"); body != "pending" {
		t.Fatalf("GET o1 after Reset = %q", body)
	}
}
