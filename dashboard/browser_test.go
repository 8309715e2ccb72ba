package dashboard_test

// These tests drive the dashboard in a real browser: Debian's chromium,
// headless, through chromedp, against a real server on a real port. They
// fail, saying how to install it, when chromium is missing.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/scenariomock/scenariomock/internal/browsertest"
	"github.com/scenariomock/scenariomock/internal/testport"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/server"
)

// wait is how long a test waits for the page to show something. The page
// polls every second and draws the journal on the next frame; this is
// generous because the CI machine is a loaded 2-core box.
const wait = 20 * time.Second

// browser is one headless chromium tab (internal/browsertest, which fails
// the test when chromium is missing) and what its console said.
type browser struct {
	*browsertest.Browser
	ctx context.Context
}

// newBrowser starts chromium and opens a tab, both closed at cleanup.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	b := browsertest.New(t, chromedp.WindowSize(1400, 900), chromedp.Flag("disable-gpu", true))
	return &browser{Browser: b, ctx: b.Context()}
}

// do runs actions within the wait.
func (b *browser) do(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, wait)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// until waits for the JavaScript expression to be truthy; what says what
// the test was waiting for, and the page's state is dumped on a timeout.
func (b *browser) until(t *testing.T, what, expr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, wait)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(wait))); err != nil {
		t.Fatalf("waiting %s for %s: %v\npage text:\n%s\nconsole: %q", wait, what, err, b.text(), b.consoleErrors())
	}
}

// eval evaluates expr (awaiting a promise) into a T.
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, wait)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// text is the page's visible text, for failure messages.
func (b *browser) text() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	if len(s) > 4000 {
		s = s[:4000] + "…"
	}
	return s
}

// consoleErrors are the errors and warnings the page logged, its uncaught
// exceptions, and the browser's own error entries (a CSP violation, a
// failed load).
func (b *browser) consoleErrors() []string { return b.Problems() }

// noConsoleErrors fails the test if the page logged an error or warning
// or threw, other than what allowed accepts.
func (b *browser) noConsoleErrors(t *testing.T, allowed func(string) bool) {
	t.Helper()
	for _, m := range b.consoleErrors() {
		if allowed == nil || !allowed(m) {
			t.Errorf("console: %s", m)
		}
	}
}

// mock is a scenariomock server on a real port serving the scenario files
// of dir, shut down at cleanup the way the binary shuts down.
type mock struct {
	srv  *server.Server
	base string
	dir  string
	opts server.Options
	stop func() // shuts the server down and waits for Serve to return
}

// startMock writes files (name → YAML) into a temporary directory and
// serves it. Register it before newBrowser, so that cleanup closes the
// browser (and its open stream) first.
func startMock(t *testing.T, opts server.Options, files map[string]string) *mock {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		writeFile(t, filepath.Join(dir, name), content)
	}
	opts.Load = func() (*scenarios.Set, error) { return scenarios.Load(dir) }
	if opts.Source == "" {
		opts.Source = dir
	}
	m := &mock{dir: dir, opts: opts}
	m.serve(t, testport.Addr(t)) // restart binds it again by number
	t.Cleanup(func() { m.stop() })
	return m
}

// serve starts a new server (new state, new journal) on addr.
func (m *mock) serve(t *testing.T, addr string) {
	t.Helper()
	s, err := server.New(m.opts)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	var once sync.Once
	m.srv, m.base = s, "http://"+ln.Addr().String()
	m.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-served; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
}

// restart stops the server and starts a fresh one on the same address,
// as a developer restarting scenariomock would.
func (m *mock) restart(t *testing.T) {
	t.Helper()
	m.stop()
	m.serve(t, strings.TrimPrefix(m.base, "http://"))
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// call sends a request to the mock and returns the status and body.
func (m *mock) call(t *testing.T, method, path string, body string, header ...string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, m.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

const basicYAML = `name: dash
routes:
  - name: hello
    method: GET
    path: /hello
    respond: { status: 200, body: hi }
  - name: create order
    method: POST
    path: /orders
    when:
      headers:
        Content-Type: application/json
    respond: { status: 201, body: { id: ord_1 } }
  - name: steps
    method: GET
    path: /steps
    responses:
      - { status: 200, body: first }
      - { status: 200, body: second }
`

// open navigates to the dashboard and waits until it shows the routes and
// its journal stream is live.
func (b *browser) open(t *testing.T, m *mock) {
	t.Helper()
	b.do(t, "open the dashboard", chromedp.Navigate(m.base+"/__admin/ui"))
	b.until(t, "the first route", `document.querySelector('#routes-rows .route[data-order="1"]:not(.pending)') !== null`)
	b.until(t, "the live journal", `document.getElementById('conn').textContent === 'live'`)
}

func TestBrowserRoutesAndLiveRequests(t *testing.T) {
	m := startMock(t, server.Options{Build: "v1.2.3-test"}, map[string]string{"shop.yaml": basicYAML})
	b := newBrowser(t)
	b.open(t, m)
	b.until(t, "the binary's build", `document.getElementById('build').textContent === 'v1.2.3-test' && !document.getElementById('build').hidden`)

	// The routes, in match order, with their source file:line:col.
	got := eval[[]string](t, b, `[...document.querySelectorAll('#routes-rows .route')].map(r => r.children[1].textContent + ' ' + r.children[5].textContent)`)
	want := []string{"hello shop.yaml:3:5", "create order shop.yaml:7:5", "steps shop.yaml:14:5"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("routes shown: %q, want %q", got, want)
	}

	// A request sent now shows up, and the time it takes is measured in
	// the page: a MutationObserver notes when its row is added.
	eval[bool](t, b, `(() => {
		window.__seen = {};
		new MutationObserver((ms) => {
			for (const m of ms) for (const n of m.addedNodes) {
				if (n.dataset && n.dataset.path && !(n.dataset.path in window.__seen)) window.__seen[n.dataset.path] = Date.now();
			}
		}).observe(document.getElementById('requests'), { childList: true });
		return true;
	})()`)
	sent := time.Now()
	if status, _ := m.call(t, "POST", "/orders?source=test", `{"amount": 9800}`, "Content-Type", "application/json", "X-Trace", "t-1"); status != 201 {
		t.Fatalf("POST /orders: %d", status)
	}
	b.until(t, "the POST /orders row", `window.__seen['/orders'] !== undefined`)
	shown := eval[int64](t, b, `window.__seen['/orders']`)
	t.Logf("request sent → row shown: %d ms (the issue asks for under a second; asserted only within %s)", shown-sent.UnixMilli(), wait)

	// Expanded, the row shows the matched route, headers and body.
	b.do(t, "expand the row", chromedp.Click(chromedp.CSS(`#requests details[data-path="/orders"] > summary`)))
	b.until(t, "the row's detail", `document.querySelector('#requests details[data-path="/orders"] .detail') !== null`)
	detail := eval[string](t, b, `document.querySelector('#requests details[data-path="/orders"] .detail').innerText`)
	for _, s := range []string{"create order (scenarios version 1)", "201", "X-Trace", "t-1", `"amount": 9800`, "source=test"} {
		if !strings.Contains(detail, s) {
			t.Errorf("detail lacks %q:\n%s", s, detail)
		}
	}

	// A request no route matches shows the near-miss report.
	if status, _ := m.call(t, "POST", "/orders", `amount=1`, "Content-Type", "application/x-www-form-urlencoded"); status != 404 {
		t.Fatalf("unmatched POST /orders: %d", status)
	}
	b.until(t, "the unmatched row", `document.querySelector('#requests details[data-route=""]') !== null`)
	b.do(t, "expand the unmatched row", chromedp.Click(chromedp.CSS(`#requests details[data-route=""] > summary`)))
	b.until(t, "the near misses", `document.querySelector('#requests details[data-route=""] .near-misses') !== null`)
	near := eval[string](t, b, `document.querySelector('#requests details[data-route=""] .near-misses').innerText`)
	if !strings.Contains(near, "create order") || !strings.Contains(near, "Content-Type") {
		t.Errorf("near misses: %q, want the route and the header that failed", near)
	}

	// The hit count follows, by the page's poll.
	b.until(t, "create order's hit count", `document.querySelector('#routes-rows .route[data-order="2"] .hits')?.textContent === '1'`)
	b.noConsoleErrors(t, nil)
}

func TestBrowserBrokenEditAndRecovery(t *testing.T) {
	m := startMock(t, server.Options{}, map[string]string{"shop.yaml": basicYAML})
	b := newBrowser(t)
	b.open(t, m)

	// A typo in a field name: the loader names the file, line and column.
	broken := basicYAML + "  - name: typo\n    path: /typo\n    respnd: { status: 200 }\n"
	writeFile(t, filepath.Join(m.dir, "shop.yaml"), broken)
	status, body := m.callReload(t)
	if status != http.StatusUnprocessableEntity {
		t.Fatalf("reload of a broken file: %d %s", status, body)
	}
	b.until(t, "the failed reload", `document.getElementById('reload').classList.contains('bad')`)
	loc := eval[string](t, b, `document.querySelector('#reload-errors li .loc').textContent`)
	if !strings.HasSuffix(loc, "shop.yaml:22:5") {
		t.Errorf("problem location %q, want …shop.yaml:22:5 (the respnd: key)", loc)
	}
	head := eval[string](t, b, `document.getElementById('reload-head').textContent`)
	if !strings.Contains(head, "keep serving") {
		t.Errorf("reload banner %q does not say the last good scenarios keep serving", head)
	}
	// The last good set still serves, and the page still lists it.
	if status, _ := m.call(t, "GET", "/hello", ""); status != 200 {
		t.Errorf("GET /hello during the broken edit: %d", status)
	}
	if n := eval[int](t, b, `document.querySelectorAll('#routes-rows .route').length`); n != 3 {
		t.Errorf("%d routes shown during the broken edit, want the 3 still serving", n)
	}

	// Fixed: the banner clears and the new route shows.
	writeFile(t, filepath.Join(m.dir, "shop.yaml"), strings.Replace(broken, "respnd:", "respond:", 1))
	if status, body := m.callReload(t); status != 200 {
		t.Fatalf("reload of the fixed file: %d %s", status, body)
	}
	b.until(t, "the recovery", `document.getElementById('reload').classList.contains('ok') && document.querySelectorAll('#reload-errors li').length === 0`)
	b.until(t, "the new route", `document.querySelector('#routes-rows .route[data-order="4"] .name')?.textContent === 'typo'`)
	b.noConsoleErrors(t, nil)
}

func (m *mock) callReload(t *testing.T) (int, string) {
	t.Helper()
	return m.call(t, "POST", "/__admin/reload", "")
}

func TestBrowserResetAndClear(t *testing.T) {
	m := startMock(t, server.Options{}, map[string]string{"shop.yaml": basicYAML})
	b := newBrowser(t)
	b.open(t, m)

	for i, want := range []string{"first", "second"} {
		if _, body := m.call(t, "GET", "/steps", ""); body != want {
			t.Fatalf("call %d of /steps: %q, want %q", i+1, body, want)
		}
	}
	b.until(t, "two /steps rows", `document.querySelectorAll('#requests details[data-path="/steps"]').length === 2`)
	b.until(t, "steps' hit count", `document.querySelector('#routes-rows .route[data-order="3"] .hits')?.textContent === '2'`)

	// Clear journal empties the list and the server's journal.
	b.do(t, "click Clear journal", chromedp.Click(chromedp.ID("clear")))
	b.until(t, "the cleared list", `document.querySelectorAll('#requests details').length === 0`)
	if _, body := m.call(t, "GET", "/__admin/requests", ""); !strings.Contains(body, `"total": 0`) && !strings.Contains(body, `"total":0`) {
		t.Errorf("journal after Clear: %s", body)
	}

	// Reset starts the sequence over: the state is really reset.
	b.do(t, "click Reset state", chromedp.Click(chromedp.ID("reset")))
	b.until(t, "the reset's confirmation", `document.getElementById('action-msg').textContent === 'State reset.'`)
	if _, body := m.call(t, "GET", "/steps", ""); body != "first" {
		t.Errorf("after Reset, /steps answered %q, want the sequence's first answer", body)
	}
	b.until(t, "steps' hit count after the reset", `document.querySelector('#routes-rows .route[data-order="3"] .hits')?.textContent === '1'`)
	b.noConsoleErrors(t, nil)
}

// The idempotency keys and the collections show what the requests stored,
// and the Reset button empties both.
func TestBrowserStatePanels(t *testing.T) {
	example, err := os.ReadFile("../examples/payments-stateful.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := startMock(t, server.Options{}, map[string]string{"payments-stateful.yaml": string(example)})
	b := newBrowser(t)
	b.open(t, m)
	for _, key := range []string{"key-a", "key-b"} {
		if status, body := m.call(t, "POST", "/payments", `{"amount": 9800, "currency": "eur"}`, "Content-Type", "application/json", "Idempotency-Key", key); status != 201 {
			t.Fatalf("POST /payments: %d %s", status, body)
		}
	}
	b.until(t, "both keys", `[...document.querySelectorAll('#idem-rows tr')].map(r => r.children[1]?.textContent).sort().join() === 'key-a,key-b'`)
	row := eval[string](t, b, `[...document.querySelector('#idem-rows tr').children].map(c => c.textContent).slice(2, 5).join(' ')`)
	if row != "completed 201 0" {
		t.Errorf("key row (state, status, replays) %q, want \"completed 201 0\"", row)
	}
	b.until(t, "the payments collection", `[...document.querySelectorAll('#coll-rows tr')].some(r => r.children[0].textContent === 'payments' && r.children[1]?.textContent === '2')`)
	// The bytes they take, as GET /__admin/health reports them (issue 19
	// item 7: bytes used in health and the dashboard).
	var health struct {
		Usage struct{ IdempotencyBytes, CollectionBytes int64 }
	}
	if status, body := m.call(t, "GET", "/__admin/health", ""); status != 200 || json.Unmarshal([]byte(body), &health) != nil {
		t.Fatalf("GET /__admin/health: %d %s", status, body)
	}
	for id, n := range map[string]int64{"idem-bytes": health.Usage.IdempotencyBytes, "coll-bytes": health.Usage.CollectionBytes} {
		if n <= 0 || n >= 1024 {
			t.Fatalf("health says %s = %d; the test expects a few hundred bytes", id, n)
		}
		b.until(t, id, fmt.Sprintf(`document.getElementById(%q).textContent === '· %d B stored' && !document.getElementById(%q).hidden`, id, n, id))
	}

	b.do(t, "click Reset state", chromedp.Click(chromedp.ID("reset")))
	b.until(t, "no keys", `document.querySelector('#idem-rows td.empty') !== null`)
	b.until(t, "no stored items", `document.querySelector('#coll-rows td.empty') !== null`)
	b.until(t, "no bytes stored", `document.getElementById('idem-bytes').textContent === '· 0 B stored' && document.getElementById('coll-bytes').textContent === '· 0 B stored'`)
	b.noConsoleErrors(t, nil)
}

func TestBrowserAdminToken(t *testing.T) {
	const token = "s3cret-t0ken"
	m := startMock(t, server.Options{AdminToken: token}, map[string]string{"shop.yaml": basicYAML})
	b := newBrowser(t)
	b.do(t, "open the dashboard", chromedp.Navigate(m.base+"/__admin/ui"))
	b.until(t, "the token form", `!document.getElementById('token-panel').hidden`)
	b.do(t, "enter the token",
		chromedp.SendKeys(chromedp.ID("token-input"), token),
		chromedp.Click(chromedp.CSS(`#token-form button[type=submit]`)),
	)
	b.until(t, "the routes", `document.querySelector('#routes-rows .route[data-order="1"]:not(.pending)') !== null`)
	b.until(t, "the live journal", `document.getElementById('conn').textContent === 'live'`)
	if status, _ := m.call(t, "GET", "/hello", ""); status != 200 {
		t.Fatalf("GET /hello: %d", status)
	}
	// The stream carries the token in its header: the row arrives.
	b.until(t, "the GET /hello row", `document.querySelector('#requests details[data-path="/hello"]') !== null`)
	if got := eval[string](t, b, `sessionStorage.getItem('scenariomock.adminToken')`); got != token {
		t.Errorf("sessionStorage holds %q", got)
	}
	// Before the token, the page's calls were refused: the browser logs
	// each 401, and nothing else may be logged.
	b.noConsoleErrors(t, func(m string) bool { return strings.Contains(m, "status of 401") })
}

// A restarted server numbers its journal from 1 again: the page, which
// reconnects by itself, must show its requests all the same.
func TestBrowserReconnectsAfterRestart(t *testing.T) {
	m := startMock(t, server.Options{}, map[string]string{"shop.yaml": basicYAML})
	b := newBrowser(t)
	b.open(t, m)
	for range 3 {
		m.call(t, "GET", "/hello", "")
	}
	b.until(t, "three rows", `document.querySelectorAll('#requests .req').length === 3`)
	m.restart(t)
	m.call(t, "GET", "/steps", "")
	b.until(t, "the request to the restarted server", `document.querySelector('#requests details[data-path="/steps"]') !== null`)
	b.until(t, "the live journal", `document.getElementById('conn').textContent === 'live'`)
	if n := eval[int](t, b, `document.querySelectorAll('#requests .req').length`); n != 1 {
		t.Errorf("%d rows after the restart, want the new server's 1", n)
	}
	// While the server was down the page's calls failed: the browser logs
	// those, and nothing else may be logged.
	b.noConsoleErrors(t, func(m string) bool {
		return strings.Contains(m, "ERR_CONNECTION_REFUSED") || strings.Contains(m, "ERR_EMPTY_RESPONSE")
	})
}

// The filter box tails the journal through the admin API's filters; a
// filter the server refuses is shown with its reason.
func TestBrowserJournalFilter(t *testing.T) {
	m := startMock(t, server.Options{}, map[string]string{"shop.yaml": basicYAML})
	b := newBrowser(t)
	b.open(t, m)
	b.filter(t, "matched=false & method=DELETE")
	b.until(t, "the filter in the fragment", `decodeURIComponent(location.hash) === '#matched=false & method=DELETE'`)
	b.until(t, "the live journal", `document.getElementById('conn').textContent === 'live'`)
	m.call(t, "GET", "/hello", "")
	m.call(t, "GET", "/nowhere", "")
	m.call(t, "DELETE", "/nowhere", "")
	b.until(t, "the DELETE miss", `document.querySelector('#requests details[data-path="/nowhere"]') !== null`)
	// /hello and the GET miss came first: had they passed the filter,
	// they would show by now.
	if got := eval[[]string](t, b, `[...document.querySelectorAll('#requests .req')].map(r => r.querySelector('.method').textContent + ' ' + r.dataset.path)`); strings.Join(got, ",") != "DELETE /nowhere" {
		t.Errorf("rows %q, want only DELETE /nowhere", got)
	}
	// A route name has spaces: only & separates the pairs.
	b.filter(t, "route=create order")
	m.call(t, "POST", "/orders", `{}`, "Content-Type", "application/json")
	b.until(t, "the create order row", `document.querySelector('#requests details[data-route="create order"]') !== null`)
	b.filter(t, "status=abc")
	b.until(t, "the refusal", `document.getElementById('journal-msg').textContent.includes('status')`)
	b.noConsoleErrors(t, func(m string) bool { return strings.Contains(m, "status of 400") })
}

// filter types f into the filter box, as a user would, and presses Enter.
func (b *browser) filter(t *testing.T, f string) {
	t.Helper()
	eval[bool](t, b, `(() => { const i = document.getElementById('filter'); i.value = ''; i.focus(); return true; })()`)
	b.do(t, "type the filter "+f, chromedp.SendKeys(chromedp.ID("filter"), f+"\n"))
}

// With the journal off (--journal-size 0) the page says so, in the
// server's words, and shows the rest.
func TestBrowserJournalOff(t *testing.T) {
	m := startMock(t, server.Options{JournalSize: -1}, map[string]string{"shop.yaml": basicYAML})
	b := newBrowser(t)
	b.do(t, "open the dashboard", chromedp.Navigate(m.base+"/__admin/ui"))
	b.until(t, "the routes", `document.querySelectorAll('#routes-rows .route:not(.pending)').length === 3`)
	b.until(t, "the journal's absence", `document.getElementById('journal-msg').textContent.includes('--journal-size 0')`)
	b.noConsoleErrors(t, func(m string) bool { return strings.Contains(m, "status of 404") })
}

func TestBrowserKeepsNewestRows(t *testing.T) {
	m := startMock(t, server.Options{}, map[string]string{"shop.yaml": basicYAML})
	b := newBrowser(t)
	b.open(t, m)
	const n = 700
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 8)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			res, err := http.Get(fmt.Sprintf("%s/hello?i=%d", m.base, i))
			if err != nil {
				errs <- err
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// A marker sent last: when it shows, everything before it has arrived.
	sent := time.Now()
	m.call(t, "GET", "/hello?i=last", "")
	b.until(t, "the last request", `[...document.querySelectorAll('#requests .req .path')].some(p => p.textContent === '/hello?i=last')`)
	t.Logf("after a burst of %d requests, the next one shown within %s (measured by polling from the test)", n, time.Since(sent).Round(time.Millisecond))
	rows := eval[int](t, b, `document.querySelectorAll('#requests .req').length`)
	if rows != 500 {
		t.Errorf("%d request rows in the DOM after %d requests, want the newest 500", rows, n+1)
	}
	first := eval[string](t, b, `document.querySelector('#requests .req .path').textContent`)
	if first != "/hello?i=last" {
		t.Errorf("top row %q, want the newest request", first)
	}
	b.noConsoleErrors(t, nil)
}

// TestBrowserTenThousandRoutes measures how long the page takes to show
// 10,000 routes (10 as the baseline), and to show the last one after a
// jump to the end, and checks that the DOM holds only the rows in view.
// The figures are logged, not asserted:
//
//	go test -v -run TenThousand ./dashboard
func TestBrowserTenThousandRoutes(t *testing.T) {
	for _, n := range []int{10, 10_000} {
		t.Run(fmt.Sprintf("routes=%d", n), func(t *testing.T) { showRoutes(t, n) })
	}
}

func showRoutes(t *testing.T, n int) {
	var y strings.Builder
	y.WriteString("name: many\nroutes:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&y, "  - name: route %05d\n    method: GET\n    path: /items/%05d\n    respond: { status: 200 }\n", i, i)
	}
	m := startMock(t, server.Options{}, map[string]string{"many.yaml": y.String()})
	b := newBrowser(t)
	start := time.Now()
	b.do(t, "open the dashboard", chromedp.Navigate(m.base+"/__admin/ui"))
	// Measured in the page, from the start of the navigation.
	shownAt := eval[float64](t, b, fmt.Sprintf(`new Promise((resolve) => {
		const check = () => {
			const r = document.querySelector('#routes-rows .route[data-order="1"]:not(.pending)');
			if (r && document.getElementById('routes-count').textContent === '%d routes') resolve(performance.now());
			else requestAnimationFrame(check);
		};
		check();
	})`, n))
	wall := time.Since(start)
	jump := eval[float64](t, b, fmt.Sprintf(`new Promise((resolve) => {
		const vp = document.getElementById('routes-viewport');
		const t0 = performance.now();
		vp.scrollTop = vp.scrollHeight;
		const check = () => {
			const r = document.querySelector('#routes-rows .route[data-order="%d"]:not(.pending)');
			if (r && r.children[1].textContent === 'route %05d') resolve(performance.now() - t0);
			else requestAnimationFrame(check);
		};
		check();
	})`, n, n))
	rows := eval[int](t, b, `document.querySelectorAll('#routes-rows .route').length`)
	t.Logf("%d routes: first screen shown %.0f ms after navigation start (%s by the test's clock, navigation included); jump to the last route shown in %.0f ms; %d route rows in the DOM", n, shownAt, wall.Round(time.Millisecond), jump, rows)
	if rows > 100 {
		t.Errorf("%d route rows in the DOM: the table should hold only those in view", rows)
	}
	b.noConsoleErrors(t, nil)
}

// TestBrowserScreenshot writes the README's picture of the dashboard when
// SCENARIOMOCK_SCREENSHOT names the file:
//
//	SCENARIOMOCK_SCREENSHOT=$PWD/docs/dashboard.png go test -run Screenshot ./dashboard
func TestBrowserScreenshot(t *testing.T) {
	out := os.Getenv("SCENARIOMOCK_SCREENSHOT")
	if out == "" {
		t.Skip("set SCENARIOMOCK_SCREENSHOT=path/to/dashboard.png to take the README's screenshot")
	}
	example, err := os.ReadFile("../examples/payments-stateful.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := startMock(t, server.Options{Source: "examples/payments-stateful.yaml"}, map[string]string{"payments-stateful.yaml": string(example)})
	b := newBrowser(t)
	b.open(t, m)
	for i, body := range []string{`{"amount": 9800, "currency": "eur"}`, `{"amount": 1200, "currency": "usd"}`} {
		key := fmt.Sprintf("demo-%d", i+1)
		m.call(t, "POST", "/payments", body, "Content-Type", "application/json", "Idempotency-Key", key)
		m.call(t, "POST", "/payments", body, "Content-Type", "application/json", "Idempotency-Key", key)
	}
	m.call(t, "GET", "/payments", "")
	m.call(t, "POST", "/payments", `{"amount": 5}`, "Content-Type", "application/json")
	m.call(t, "DELETE", "/payments", "")
	b.until(t, "the requests", `document.querySelectorAll('#requests .req').length >= 7`)
	b.until(t, "the keys", `document.querySelectorAll('#idem-rows tr').length >= 2 && !document.querySelector('#idem-rows td.empty')`)
	b.do(t, "expand the miss", chromedp.Click(chromedp.CSS(`#requests details[data-route=""] > summary`)))
	b.until(t, "the near misses", `document.querySelector('#requests .near-misses') !== null`)
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", out, len(png))
}
