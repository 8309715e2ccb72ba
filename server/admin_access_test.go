package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"
)

// splitServer is a server serving scenarios and its admin API on two
// real listeners (ServeSplit).
type splitServer struct {
	srv        *Server
	url, admin string // base URLs of the scenario and the admin listener
	logs       *syncBuffer
	stop       func() error // cancels Serve and returns its result
}

func serveSplit(t *testing.T, opts Options, yaml string) *splitServer {
	t.Helper()
	logs := &syncBuffer{}
	opts.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	opts.Load = func() (*scenarios.Set, error) { return scenarios.LoadBytes("s.yaml", []byte(yaml)) }
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln := listen(t)
	adminLn := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeSplit(ctx, ln, adminLn) }()
	var result error
	stopped := false
	stop := func() error {
		if !stopped {
			cancel()
			result, stopped = <-done, true
		}
		return result
	}
	t.Cleanup(func() { _ = stop() })
	return &splitServer{srv: s, url: "http://" + ln.Addr().String(), admin: "http://" + adminLn.Addr().String(), logs: logs, stop: stop}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

const splitYAML = `
routes:
  - { name: counted, path: /n, responses: [ { body: one }, { body: two } ] }
  - { name: slow, path: /slow, respond: { body: late, delay: 10m } }
`

// TestAdminOwnListener: with the admin API on a listener of its own, the
// scenario port has no /__admin at all (a request there is a scenario
// request like any other, and misses), and the admin listener answers
// only the admin API.
func TestAdminOwnListener(t *testing.T) {
	t.Parallel()
	ss := serveSplit(t, Options{}, splitYAML)
	waitListening(t, ss.admin)

	for _, p := range []string{"/__admin/health", "/__admin/scenarios", "/%5f_admin/health", "//__admin/health"} {
		r := do(t, "GET", ss.url+p, "")
		var prob Problem
		if err := json.Unmarshal([]byte(r.body), &prob); err != nil || r.status != 404 || !strings.HasPrefix(prob.Detail, "No route matches GET ") {
			t.Errorf("GET %s on the scenario port: %d %s, want the scenarios' 404", p, r.status, r.body)
		}
	}
	if r := do(t, "POST", ss.url+"/__admin/reset", ""); r.status != 404 || !strings.Contains(r.body, "No route matches POST /__admin/reset") {
		t.Errorf("POST /__admin/reset on the scenario port: %d %s, want the scenarios' 404", r.status, r.body)
	}
	if r := do(t, "GET", ss.url+"/n", ""); r.status != 200 || r.body != "one" {
		t.Errorf("GET /n: %d %q", r.status, r.body)
	}

	if r := do(t, "GET", ss.admin+"/__admin/health", ""); r.status != 200 || r.json(t)["status"] != "ok" {
		t.Errorf("GET /__admin/health on the admin port: %d %s", r.status, r.body)
	}
	doc := do(t, "GET", ss.admin+"/__admin/scenarios", "").json(t)
	if doc["unmatched"] != float64(5) {
		t.Errorf("unmatched = %v, want the 5 /__admin requests sent to the scenario port", doc["unmatched"])
	}
	if r := do(t, "GET", ss.admin+"/n", ""); r.status != 404 || !strings.Contains(r.body, "The admin API has no /n") {
		t.Errorf("GET /n on the admin port: %d %s, want the admin API's 404", r.status, r.body)
	}
	if r := do(t, "GET", ss.admin+"/%5f_admin/health", ""); r.status != 400 {
		t.Errorf("a non-canonical admin path on the admin port: %d %s, want 400", r.status, r.body)
	}
	if r := do(t, "POST", ss.admin+"/__admin/reset", ""); r.status != 200 {
		t.Errorf("POST /__admin/reset on the admin port: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", ss.url+"/n", ""); r.body != "one" {
		t.Errorf("GET /n after the reset: %q, want the sequence started over", r.body)
	}
	var ready struct{ Addr, AdminAddr string }
	for line := range strings.SplitSeq(ss.logs.String(), "\n") {
		if strings.Contains(line, `"msg":"ready"`) {
			var v map[string]any
			_ = json.Unmarshal([]byte(line), &v)
			ready.Addr, _ = v["addr"].(string)
			ready.AdminAddr, _ = v["admin_addr"].(string)
		}
	}
	if "http://"+ready.Addr != ss.url || "http://"+ready.AdminAddr != ss.admin {
		t.Errorf("ready line names %+v, want both addresses\n%s", ready, ss.logs)
	}
}

// TestAdminOwnListenerShutdown: shutdown ends both listeners, at once
// even with a request held in a delay and an idle connection on each, and
// leaves no goroutine behind. Not parallel: it counts goroutines.
func TestAdminOwnListenerShutdown(t *testing.T) {
	before := runtime.NumGoroutine()
	clock := &testClock{scale: 1, began: make(chan struct{}, 1)}
	// A shutdown that waited for the delay or the timeout would take
	// minutes; the test gives it patience.
	ss := serveSplit(t, Options{ShutdownTimeout: 10 * time.Minute, Clock: clock}, splitYAML)
	waitListening(t, ss.admin)
	do(t, "GET", ss.url+"/n", "")                // an idle keep-alive connection on each
	do(t, "GET", ss.admin+"/__admin/health", "") // listener, kept by the default client
	held := make(chan error, 1)
	go func() { _, err := doCtx(context.Background(), "GET", ss.url+"/slow", ""); held <- err }()
	inDelay(t, clock)

	stopped := make(chan error, 1)
	go func() { stopped <- ss.stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("ServeSplit returned %v, want nil", err)
		}
	case <-time.After(patience):
		t.Fatalf("ServeSplit still running %s after shutdown began", patience)
	}
	if err := <-held; err == nil {
		t.Error("the request held in a delay got an answer, want its connection closed")
	}
	for _, u := range []string{ss.url, ss.admin} {
		if _, err := net.Dial("tcp", strings.TrimPrefix(u, "http://")); err == nil {
			t.Errorf("%s still accepts connections after shutdown", u)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	settledGoroutines(t, before)
}

// TestAdminOwnListenerFails: a listener that fails stops the other one
// too, and ServeSplit says why. Not parallel: it counts goroutines.
func TestAdminOwnListenerFails(t *testing.T) {
	before := runtime.NumGoroutine()
	s, err := New(Options{Load: func() (*scenarios.Set, error) { return scenarios.LoadBytes("s.yaml", []byte(splitYAML)) }})
	if err != nil {
		t.Fatal(err)
	}
	ln, adminLn := listen(t), listen(t)
	adminLn.Close() // its Accept fails at once
	done := make(chan error, 1)
	go func() { done <- s.ServeSplit(context.Background(), ln, adminLn) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("ServeSplit returned %v, want the admin listener's error", err)
		}
	case <-time.After(patience):
		t.Fatal("ServeSplit still serves the scenarios with its admin listener gone")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the scenario listener still accepts connections")
	}
	settledGoroutines(t, before)
}

// TestAdminToken: with an admin token, every admin call but
// /__admin/health needs it as a bearer token, on the shared port and on
// the admin port alike. A refused call changes nothing, gets a 401 problem
// with a challenge, and is logged as refused, not as a mock request, and
// without the token tried.
func TestAdminToken(t *testing.T) {
	t.Parallel()
	const token = "s3cret-Token_42"
	const yaml = `routes: [{ name: counted, path: /n, responses: [ { body: one }, { body: two } ] }]`
	_, hs, sharedLogs := serveYAML(t, Options{AdminToken: token}, yaml)
	split := serveSplit(t, Options{AdminToken: token}, yaml)
	for _, port := range []struct {
		name       string
		url, admin string
		logs       *syncBuffer
	}{
		{"shared port", hs.URL, hs.URL, sharedLogs},
		{"admin port", split.url, split.admin, split.logs},
	} {
		t.Run(port.name, func(t *testing.T) {
			cases := []struct {
				name, method, path string
				auth               string // the Authorization header, if any
				want               int
			}{
				{name: "no token", method: "GET", path: "/__admin/scenarios", want: 401},
				{name: "wrong token", method: "GET", path: "/__admin/scenarios", auth: "Bearer nope", want: 401},
				{name: "token cut short", method: "GET", path: "/__admin/scenarios", auth: "Bearer " + token[:len(token)-1], want: 401},
				{name: "token and more", method: "GET", path: "/__admin/scenarios", auth: "Bearer " + token + "x", want: 401},
				{name: "token under another scheme", method: "GET", path: "/__admin/scenarios", auth: "Basic " + token, want: 401},
				{name: "token alone", method: "GET", path: "/__admin/scenarios", auth: token, want: 401},
				{name: "token in the query", method: "GET", path: "/__admin/scenarios?token=" + token, want: 401},
				{name: "access_token in the query", method: "GET", path: "/__admin/scenarios?access_token=" + token, want: 401},
				{name: "unknown admin path", method: "GET", path: "/__admin/nope", want: 401},
				{name: "reset without token", method: "POST", path: "/__admin/reset", want: 401},
				{name: "right token", method: "GET", path: "/__admin/scenarios", auth: "Bearer " + token, want: 200},
				{name: "scheme in lower case", method: "GET", path: "/__admin/counters", auth: "bearer " + token, want: 200},
				{name: "health without token", method: "GET", path: "/__admin/health", want: 200},
				{name: "health, HEAD", method: "HEAD", path: "/__admin/health", want: 200},
				{name: "health with a wrong token", method: "GET", path: "/__admin/health", auth: "Bearer nope", want: 200},
			}
			if r := do(t, "GET", port.url+"/n", ""); r.body != "one" {
				t.Fatalf("GET /n: %d %q", r.status, r.body)
			}
			for _, tc := range cases {
				var headers []string
				if tc.auth != "" {
					headers = []string{"Authorization", tc.auth}
				}
				r := do(t, tc.method, port.admin+tc.path, "", headers...)
				if r.status != tc.want {
					t.Errorf("%s: %s %s: %d %s, want %d", tc.name, tc.method, tc.path, r.status, r.body, tc.want)
					continue
				}
				if tc.want != 401 {
					continue
				}
				if got := r.header.Get("WWW-Authenticate"); got != `Bearer realm="scenariomock admin"` {
					t.Errorf("%s: WWW-Authenticate %q", tc.name, got)
				}
				var p Problem
				if r.header.Get("Content-Type") != "application/problem+json" || json.Unmarshal([]byte(r.body), &p) != nil || p.Status != 401 || !strings.Contains(p.Detail, "Authorization: Bearer <token>") {
					t.Errorf("%s: %v %s, want a 401 problem naming the header", tc.name, r.header, r.body)
				}
			}
			if r := do(t, "GET", port.url+"/n", ""); r.body != "two" {
				t.Errorf("GET /n after refused resets: %q, want the sequence not started over", r.body)
			}
			doc := do(t, "GET", port.admin+"/__admin/scenarios", "", "Authorization", "Bearer "+token).json(t)
			if doc["unmatched"] != float64(0) {
				t.Errorf("unmatched = %v: refused admin calls were counted as scenario requests", doc["unmatched"])
			}
			logs := port.logs.String()
			if strings.Contains(logs, token) {
				t.Errorf("the token is in the logs:\n%s", logs)
			}
			if n := strings.Count(logs, `"msg":"admin call refused"`); n != 10 {
				t.Errorf("%d refusals logged, want 10:\n%s", n, logs)
			}
			for line := range strings.SplitSeq(logs, "\n") {
				if strings.Contains(line, `"msg":"request"`) && strings.Contains(line, "/__admin") {
					t.Errorf("an admin call logged as a mock request: %s", line)
				}
			}
		})
	}
}

// TestAdminTokenChecked: a token that no client could send as it is in a
// header is refused when the server is made, not at the first call.
func TestAdminTokenChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ token, err string }{
		{"two words", `byte 4 is " "`},
		{"line\nbreak", `byte 5 is "\n"`},
		{"tök", `byte 2 is "\xc3"`},
		{"ok-" + strings.Repeat("x", 100), ""},
	} {
		_, err := New(Options{AdminToken: tc.token, Load: func() (*scenarios.Set, error) { return scenarios.LoadBytes("s.yaml", []byte("routes: []")) }})
		if got := fmt.Sprint(err); (tc.err == "" && err != nil) || !strings.Contains(got, tc.err) {
			t.Errorf("New with token %q: %v, want %q", tc.token, err, tc.err)
		}
	}
}

// TestAdminCrossSite: what a web page on another site can make a browser
// send without a preflight may not change the admin API's state: a
// cross-site fetch or form (Sec-Fetch-Site, or an Origin that is not the
// Host), and a text/plain, form or untyped body from a browser that sends
// neither header. curl-style calls, same-origin pages and JSON bodies pass,
// and so do reads. Refusals are 403 problems and change nothing.
func TestAdminCrossSite(t *testing.T) {
	t.Parallel()
	const yaml = `routes: [{ name: counted, path: /n, responses: [ { body: one }, { body: two } ] }]`
	_, hs, _ := serveYAML(t, Options{}, yaml)
	split := serveSplit(t, Options{}, yaml)
	for _, port := range []struct{ name, url, admin string }{
		{"shared port", hs.URL, hs.URL},
		{"admin port", split.url, split.admin},
	} {
		t.Run(port.name, func(t *testing.T) {
			own := port.admin // the admin API's own origin
			evil := "http://evil.example"
			cases := []struct {
				name, method, path, body string
				headers                  []string
				want                     int
				resets                   bool // whether the call, if served, starts /n over
			}{
				{name: "cross-site POST", method: "POST", path: "/__admin/reset", headers: []string{"Origin", evil, "Sec-Fetch-Site", "cross-site"}, want: 403, resets: true},
				{name: "text/plain from a foreign Origin", method: "POST", path: "/__admin/reset", body: "x", headers: []string{"Origin", evil, "Content-Type", "text/plain;charset=UTF-8"}, want: 403, resets: true},
				{name: "same-site, another origin", method: "POST", path: "/__admin/reset", headers: []string{"Origin", "http://app.localhost", "Sec-Fetch-Site", "same-site"}, want: 403, resets: true},
				{name: "Origin null", method: "POST", path: "/__admin/reset", headers: []string{"Origin", "null"}, want: 403, resets: true},
				{name: "cross-site DELETE", method: "DELETE", path: "/__admin/idempotency", headers: []string{"Origin", evil, "Sec-Fetch-Site", "cross-site"}, want: 403},
				{name: "text/plain, no Origin", method: "POST", path: "/__admin/reset", body: "x", headers: []string{"Content-Type", "Text/Plain; charset=utf-8"}, want: 403, resets: true},
				{name: "form, no Origin", method: "POST", path: "/__admin/reset", body: "a=b", headers: []string{"Content-Type", "application/x-www-form-urlencoded"}, want: 403, resets: true},
				{name: "multipart, no Origin", method: "POST", path: "/__admin/reset", body: "--x--\r\n", headers: []string{"Content-Type", "multipart/form-data; boundary=x"}, want: 403, resets: true},
				{name: "untyped body, no Origin", method: "POST", path: "/__admin/reset", body: "x", want: 403, resets: true},
				{name: "form body, same origin", method: "POST", path: "/__admin/reset", body: "a=b", headers: []string{"Origin", own, "Sec-Fetch-Site", "same-origin", "Content-Type", "application/x-www-form-urlencoded"}, want: 403, resets: true},
				{name: "curl-style POST", method: "POST", path: "/__admin/reset", want: 200, resets: true},
				{name: "curl-style DELETE", method: "DELETE", path: "/__admin/idempotency", want: 200},
				{name: "same-origin page", method: "POST", path: "/__admin/reset", headers: []string{"Origin", own, "Sec-Fetch-Site", "same-origin"}, want: 200, resets: true},
				{name: "Origin is the Host", method: "POST", path: "/__admin/reset", headers: []string{"Origin", own}, want: 200, resets: true},
				{name: "typed by the user", method: "POST", path: "/__admin/reset", headers: []string{"Sec-Fetch-Site", "none"}, want: 200, resets: true},
				{name: "JSON body, no Origin", method: "POST", path: "/__admin/reset", body: "{}", headers: []string{"Content-Type", "application/json"}, want: 200, resets: true},
				{name: "empty form body", method: "POST", path: "/__admin/reset", headers: []string{"Content-Type", "application/x-www-form-urlencoded"}, want: 200, resets: true},
				{name: "cross-site read", method: "GET", path: "/__admin/scenarios", headers: []string{"Origin", evil, "Sec-Fetch-Site", "cross-site"}, want: 200},
			}
			for _, tc := range cases {
				do(t, "GET", port.url+"/n", "") // the next call gets "two" unless a reset comes between
				r := do(t, tc.method, port.admin+tc.path, tc.body, tc.headers...)
				if r.status != tc.want {
					t.Errorf("%s: %s %s: %d %s, want %d", tc.name, tc.method, tc.path, r.status, r.body, tc.want)
				}
				if tc.want == 403 {
					var p Problem
					if r.header.Get("Content-Type") != "application/problem+json" || json.Unmarshal([]byte(r.body), &p) != nil || !strings.Contains(p.Detail, "cross-site request forgery") {
						t.Errorf("%s: %v %s, want a 403 problem saying why", tc.name, r.header, r.body)
					}
				}
				if got := do(t, "GET", port.url+"/n", "").body; tc.resets && (got == "one") != (tc.want == 200) {
					t.Errorf("%s: GET /n after the call = %q; the reset was served: %v, want %v", tc.name, got, got == "one", tc.want == 200)
				}
			}
		})
	}
}

// TestAdminCrossSiteSaysHowToPostADocument: a scenario document posted as
// curl -d sends it (a form) is refused, and the refusal names the types the
// call takes, YAML included, rather than JSON alone.
func TestAdminCrossSiteSaysHowToPostADocument(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, "routes:\n  - {path: /x, respond: {status: 200}}\n")
	r := do(t, "POST", hs.URL+"/__admin/scenarios", "routes: []\n", "Content-Type", "application/x-www-form-urlencoded")
	var p Problem
	if r.status != 403 || json.Unmarshal([]byte(r.body), &p) != nil {
		t.Fatalf("POST /__admin/scenarios as a form: %d %s, want a 403 problem", r.status, r.body)
	}
	if !strings.Contains(p.Detail, "application/yaml") || !strings.Contains(p.Detail, "application/json") {
		t.Errorf("detail %q does not say to send the document as application/yaml or application/json", p.Detail)
	}
}

// TestAdminRootPointsToTheDashboard: /__admin itself (where /__admin/ is
// sent, as not its canonical spelling) is no call, and its 404 names the
// dashboard, so that a browser pointed at the admin API finds the page.
func TestAdminRootPointsToTheDashboard(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, "routes:\n  - {path: /x, respond: {status: 200}}\n")
	r := do(t, "GET", hs.URL+"/__admin", "")
	if r.status != 404 || r.header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("GET /__admin: %d %s %s, want a 404 problem", r.status, r.header.Get("Content-Type"), r.body)
	}
	if d, _ := r.json(t)["detail"].(string); !strings.Contains(d, "/__admin/ui") {
		t.Errorf("GET /__admin: detail %q does not name the dashboard, /__admin/ui", d)
	}
}
