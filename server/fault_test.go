package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// seen is what a client saw of one request: the response, if its
// head arrived, the body bytes read, and the first error.
type seen struct {
	resp  *http.Response
	body  []byte
	err   error // from Do, or from reading the body
	start time.Time
	head  time.Time   // when the head arrived
	reads []time.Time // when each read that brought bytes returned
}

// fresh sends one request on a connection of its own (no keep-alive), so
// that Go's transport never resends it after a broken connection, which
// it does for a request on a reused one. The Idempotency-Key goes under a
// non-canonical spelling for the same reason (see the README). timeout 0
// means none. Each read of the body takes what has arrived (up to 64
// bytes), so that a body that arrives in pieces takes several reads.
func fresh(method, url, body string, timeout time.Duration, headers ...string) seen {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return seen{err: err}
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header[strings.ToLower(headers[i])] = []string{headers[i+1]}
	}
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: timeout}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return seen{err: err, start: start}
	}
	defer resp.Body.Close()
	ex := seen{resp: resp, start: start, head: time.Now()}
	buf := make([]byte, 64)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			ex.body = append(ex.body, buf[:n]...)
			ex.reads = append(ex.reads, time.Now())
		}
		if err == io.EOF {
			return ex
		}
		if err != nil {
			ex.err = err
			return ex
		}
	}
}

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || err != nil && strings.Contains(err.Error(), "connection reset")
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// logLines returns the request log lines (JSON) of path.
func logLines(logs *syncBuffer, path string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == requestMsg && m["path"] == path {
			out = append(out, m)
		}
	}
	return out
}

// TestFaultKinds sends each kind of fault to a real net/http client and
// checks that it sees the failure the kind promises, and that the log
// line names the fault and its stage.
func TestFaultKinds(t *testing.T) {
	t.Parallel()
	const hello = "hello, world: a body of 32 bytes"
	_, hs, logs := serveYAML(t, Options{}, `
routes:
  - { path: /reset, respond: { fault: connection-reset } }
  - { path: /empty, respond: { fault: empty-response } }
  - { path: /chunk, respond: { status: 201, body: { id: 1 }, fault: malformed-chunk } }
  - { path: /random, respond: { fault: random-data } }
  - { path: /partial, respond: { body: "`+hello+`", fault: partial-body } }
  - { path: /partial5, respond: { template: true, body: "{{ .Request.Path }} and more", fault: { kind: partial-body, bytes: 5 } } }
  - { path: /slow, respond: { body: "`+hello+`", fault: { kind: slow-body, over: 2s, chunks: 4 } } }
  - { path: /slow-timeout, respond: { body: "`+hello+`", fault: { kind: slow-body, over: 1h } } }
  - { path: /hang, respond: { fault: hang } }
  - { path: /lost, method: POST, respond: { status: 201, fault: { kind: empty-response, after: processing } } }
`)
	cases := []struct {
		path    string
		timeout time.Duration // the client's; 0 for none
		check   func(ex seen) string
		kind    string
		status  float64 // on the log line: 0 when no status line went out
		after   string
	}{
		{"/reset", 0, func(ex seen) string {
			if !isReset(ex.err) {
				return fmt.Sprintf("want a connection reset, got %v", ex.err)
			}
			return ""
		}, "connection-reset", 0, "arrival"},
		{"/empty", 0, func(ex seen) string {
			if !errors.Is(ex.err, io.EOF) {
				return fmt.Sprintf("want EOF, got %v", ex.err)
			}
			return ""
		}, "empty-response", 0, "arrival"},
		{"/chunk", 0, func(ex seen) string {
			if ex.resp == nil || ex.resp.StatusCode != 201 || ex.err == nil || !strings.Contains(ex.err.Error(), "chunk") {
				return fmt.Sprintf("want the 201 head, then a chunked-encoding error; got %+v", ex)
			}
			return ""
		}, "malformed-chunk", 201, "arrival"},
		{"/random", 0, func(ex seen) string {
			if ex.resp != nil || ex.err == nil {
				return fmt.Sprintf("want a malformed response, got %+v", ex)
			}
			return ""
		}, "random-data", 0, "arrival"},
		{"/partial", 0, func(ex seen) string {
			if ex.resp == nil || ex.resp.ContentLength != int64(len(hello)) || !errors.Is(ex.err, io.ErrUnexpectedEOF) || string(ex.body) != hello[:len(hello)/2] {
				return fmt.Sprintf("want the full Content-Length, half the body, then unexpected EOF; got %+v, body %q", ex, ex.body)
			}
			return ""
		}, "partial-body", 200, "arrival"},
		{"/partial5", 0, func(ex seen) string {
			if ex.resp == nil || ex.resp.ContentLength != int64(len("/partial5 and more")) || !errors.Is(ex.err, io.ErrUnexpectedEOF) || string(ex.body) != "/part" {
				return fmt.Sprintf("want 5 bytes of the rendered body, then unexpected EOF; got %+v, body %q", ex, ex.body)
			}
			return ""
		}, "partial-body", 200, "arrival"},
		{"/slow", 0, func(ex seen) string {
			if ex.err != nil || string(ex.body) != hello {
				return fmt.Sprintf("want the whole body, got %q, %v", ex.body, ex.err)
			}
			// Four pieces, one every 500ms: a read finds only what has
			// come, so the client needed more than one (all in one would
			// take a client stalled for 1.5s), and the last piece came
			// no sooner than 2s after the request.
			if len(ex.reads) < 2 {
				return fmt.Sprintf("the body came in %d read(s), want it in pieces", len(ex.reads))
			}
			if took := ex.reads[len(ex.reads)-1].Sub(ex.start); took < 2*time.Second {
				return fmt.Sprintf("the body took %s, want at least the 2s of over:", took)
			}
			return ""
		}, "slow-body", 200, "arrival"},
		{"/slow-timeout", 200 * time.Millisecond, func(ex seen) string {
			if !isTimeout(ex.err) || ex.resp == nil || len(ex.body) == len(hello) {
				return fmt.Sprintf("want the head, then the client's timeout; got %+v", ex)
			}
			return ""
		}, "slow-body", 200, "arrival"},
		{"/hang", 200 * time.Millisecond, func(ex seen) string {
			if !isTimeout(ex.err) || ex.resp != nil {
				return fmt.Sprintf("want the client's timeout and no answer, got %+v", ex)
			}
			return ""
		}, "hang", 0, "arrival"},
		{"/lost", 0, func(ex seen) string {
			if !errors.Is(ex.err, io.EOF) {
				return fmt.Sprintf("want EOF, got %v", ex.err)
			}
			return ""
		}, "empty-response", 0, "processing"},
	}
	for _, tc := range cases {
		t.Run(strings.TrimPrefix(tc.path, "/"), func(t *testing.T) {
			t.Parallel()
			method := "GET"
			if tc.path == "/lost" {
				method = "POST"
			}
			if msg := tc.check(fresh(method, hs.URL+tc.path, "", tc.timeout)); msg != "" {
				t.Error(msg)
			}
			// The handler ends too: a hang and a slow body once the
			// client has left.
			eventually(t, patience, func() string {
				lines := logLines(logs, tc.path)
				if len(lines) != 1 {
					return fmt.Sprintf("%d log lines for %s", len(lines), tc.path)
				}
				l := lines[0]
				if l["fault"] != tc.kind || l["fault_after"] != tc.after || l["status"] != tc.status {
					return fmt.Sprintf("log line %v: want fault %s, fault_after %s, status %v", l, tc.kind, tc.after, tc.status)
				}
				return ""
			})
		})
	}
}

// lostPayments is a payment provider whose answers get lost: /payments
// after processing (the payment exists, the client never hears of it),
// /refused at arrival (nothing happens), each with an Idempotency-Key.
const lostPayments = `
defaults:
  idempotency: { key: header.Idempotency-Key, required: true }
routes:
  - name: create payment
    method: POST
    path: /payments
    respond:
      status: 201
      template: true
      body: { id: 'pay_{{ randomHex 24 }}', amount: '{{ .Request.JSON.amount }}' }
      save: { collection: payments, id: '{{ .Response.JSON.id }}' }
      fault: { kind: connection-reset, after: processing }
  - name: refused payment
    method: POST
    path: /refused
    responses:
      - { status: 201, template: true, body: { id: 'pay_{{ randomHex 24 }}' }, save: { collection: payments, id: '{{ .Response.JSON.id }}' }, fault: { kind: partial-body, bytes: 3 } }
      - { status: 201, template: true, body: { id: 'pay_{{ randomHex 24 }}' }, save: { collection: payments, id: '{{ .Response.JSON.id }}' } }
  - { name: get payment, method: GET, path: '/payments/{id}', idempotency: off, respond: { load: { collection: payments, id: '{{ .Request.Vars.id }}' } } }
  - { name: list payments, method: GET, path: /payments, idempotency: off, respond: { list: { collection: payments } } }
`

// TestFaultLostAnswer is the lost answer end to end: the POST is
// processed, its payment saved and its answer stored, and then the
// connection is reset; the retry with the same key gets the stored answer
// as a replay, and exactly one payment exists.
func TestFaultLostAnswer(t *testing.T) {
	t.Parallel()
	_, hs, logs := serveYAML(t, Options{}, lostPayments)
	const body = `{"amount":9800}`
	first := fresh("POST", hs.URL+"/payments", body, 0, "Content-Type", jsonCT, "Idempotency-Key", "lost-1")
	if !isReset(first.err) {
		t.Fatalf("first POST: want a connection reset, got %+v", first)
	}
	ids := listPayments(t, hs.URL)
	if len(ids) != 1 {
		t.Fatalf("after the lost answer: payments %v, want exactly one (it was processed)", ids)
	}
	retry := post(t, hs.URL+"/payments", "lost-1", body)
	if retry.status != 201 || !replayed(retry) {
		t.Fatalf("retry with the same key: %d replayed=%v %s, want the stored 201 as a replay", retry.status, replayed(retry), retry.body)
	}
	v := retry.json(t)
	if v["id"] != ids[0] || v["amount"] != float64(9800) {
		t.Errorf("replayed %s, want the stored payment %s", retry.body, ids[0])
	}
	if again := post(t, hs.URL+"/payments", "lost-1", body); again.body != retry.body || !replayed(again) {
		t.Errorf("second retry: %s, want the same replay %s", again.body, retry.body)
	}
	if got := do(t, "GET", hs.URL+"/payments/"+ids[0], ""); got.status != 200 || got.body != retry.body {
		t.Errorf("GET the payment: %d %s, want the replayed body %s", got.status, got.body, retry.body)
	}
	if ids := listPayments(t, hs.URL); len(ids) != 1 {
		t.Errorf("after the retries: payments %v, want still one", ids)
	}
	// The journal has the request before the reset; its log line is
	// written once the handler is done, after the client saw the reset,
	// so it may come after the retries' lines.
	eventually(t, patience, func() string {
		lines := logLines(logs, "/payments")
		for _, l := range lines {
			if l["method"] == "POST" && l["idempotency"] == "new" {
				if l["fault"] != "connection-reset" || l["fault_after"] != "processing" {
					return fmt.Sprintf("the lost answer's log line %v: want fault connection-reset after processing", l)
				}
				return ""
			}
		}
		return fmt.Sprintf("no log line of the lost answer (POST, idempotency new) among %v", lines)
	})
}

// TestFaultAtArrivalChangesNothing: a fault at arrival that still sends
// part of the answer renders it, but saves nothing and releases the key,
// so that the retry with the same key runs the route (its next response).
func TestFaultAtArrivalChangesNothing(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, lostPayments)
	first := fresh("POST", hs.URL+"/refused", `{}`, 0, "Content-Type", jsonCT, "Idempotency-Key", "a-1")
	if first.resp == nil || first.resp.StatusCode != 201 || !errors.Is(first.err, io.ErrUnexpectedEOF) || string(first.body) != `{"i` {
		t.Fatalf("first POST: want a 201 head and 3 bytes of the body, got %+v body %q", first, first.body)
	}
	if ids := listPayments(t, hs.URL); len(ids) != 0 {
		t.Fatalf("a fault at arrival saved %v", ids)
	}
	retry := post(t, hs.URL+"/refused", "a-1", `{}`)
	if retry.status != 201 || replayed(retry) {
		t.Fatalf("retry: %d replayed=%v, want the route to run again", retry.status, replayed(retry))
	}
	if ids := listPayments(t, hs.URL); len(ids) != 1 || ids[0] != retry.json(t)["id"] {
		t.Errorf("after the retry: payments %v, want the retry's one", ids)
	}
}

// TestFaultProcessingWithoutIdempotency: on a plain route, a fault after
// processing still saves the item and runs the delete; at arrival the
// delete finds the item and leaves it.
func TestFaultProcessingWithoutIdempotency(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
collections:
  things: [{ id: a, n: 1 }, { id: b, n: 2 }]
routes:
  - { method: POST, path: /things, respond: { status: 201, body: { id: c }, save: { collection: things, id: c }, fault: { kind: hang, after: processing } } }
  - { method: DELETE, path: '/things/{id}', respond: { delete: { collection: things, id: '{{ .Request.Vars.id }}' }, fault: partial-body } }
  - { method: DELETE, path: '/gone/{id}', respond: { delete: { collection: things, id: '{{ .Request.Vars.id }}' }, fault: { kind: empty-response, after: processing } } }
  - { method: GET, path: /things, respond: { list: { collection: things } } }
`)
	items := func() string { return do(t, "GET", hs.URL+"/things", "").body }
	if ex := fresh("POST", hs.URL+"/things", "", 200*time.Millisecond); !isTimeout(ex.err) {
		t.Fatalf("POST: want a hang, got %+v", ex)
	}
	if got := items(); got != `[{"id":"a","n":1},{"id":"b","n":2},{"id":"c"}]` {
		t.Errorf("after a hang after processing: %s, want c saved", got)
	}
	if ex := fresh("DELETE", hs.URL+"/things/a", "", 0); !errors.Is(ex.err, io.ErrUnexpectedEOF) || !strings.HasPrefix(`{"id":"a","n":1}`, string(ex.body)) {
		t.Fatalf("DELETE with partial-body at arrival: %+v %q", ex, ex.body)
	}
	if got := items(); !strings.Contains(got, `"a"`) {
		t.Errorf("a delete with a fault at arrival removed the item: %s", got)
	}
	if ex := fresh("DELETE", hs.URL+"/gone/b", "", 0); !errors.Is(ex.err, io.EOF) {
		t.Fatalf("DELETE with empty-response after processing: %+v", ex)
	}
	if got := items(); strings.Contains(got, `"b"`) {
		t.Errorf("a delete with a fault after processing kept the item: %s", got)
	}
}

// faultPattern sends n GETs to path and returns which failed, as a string
// of 'x' (fault) and '.' (answer).
func faultPattern(t *testing.T, url string, n int) string {
	t.Helper()
	var b strings.Builder
	for range n {
		ex := fresh("GET", url, "", 0)
		switch {
		case ex.err == nil && ex.resp.StatusCode == 200 && string(ex.body) == "ok":
			b.WriteByte('.')
		case errors.Is(ex.err, io.EOF):
			b.WriteByte('x')
		default:
			t.Fatalf("request %d: neither the answer nor the fault: %+v", b.Len(), ex)
		}
	}
	return b.String()
}

// TestFaultChance: chance faults that fraction of the requests, and the
// others get the answer. With a seed the pattern is the same on every
// server; the fraction over 200 requests is plausible for 0.3 (60 expected,
// a standard deviation of 6.5: 35 to 85 is nearly four of them).
func TestFaultChance(t *testing.T) {
	t.Parallel()
	const yaml = `
routes:
  - { path: /some, respond: { body: ok, fault: { kind: empty-response, chance: 0.3 } } }
  - { path: /never, respond: { body: ok, fault: { kind: empty-response, chance: 0 } } }
  - { path: /always, respond: { body: ok, fault: { kind: empty-response, chance: 1 } } }
`
	const n = 200
	var patterns [2]string
	for i := range patterns {
		_, hs, _ := serveYAML(t, Options{Rand: SeededRand(42)}, yaml)
		patterns[i] = faultPattern(t, hs.URL+"/some", n)
		if i == 0 {
			if p := faultPattern(t, hs.URL+"/never", 20); strings.Contains(p, "x") {
				t.Errorf("chance 0 faulted: %s", p)
			}
			if p := faultPattern(t, hs.URL+"/always", 20); strings.Contains(p, ".") {
				t.Errorf("chance 1 answered: %s", p)
			}
		}
	}
	if patterns[0] != patterns[1] {
		t.Errorf("two servers with seed 42 faulted differently:\n%s\n%s", patterns[0], patterns[1])
	}
	if k := strings.Count(patterns[0], "x"); k < 35 || k > 85 {
		t.Errorf("chance 0.3 faulted %d of %d requests: %s", k, n, patterns[0])
	}
	_, hs, _ := serveYAML(t, Options{Rand: SeededRand(43)}, yaml)
	if other := faultPattern(t, hs.URL+"/some", n); other == patterns[0] {
		t.Errorf("seeds 42 and 43 gave the same pattern %s", other)
	}
}

// TestSeedRepeatable: two servers with the same seed render the same
// randomInt, randomHex and uuid values, save the same ids and draw the
// same delays; another seed does not.
func TestSeedRepeatable(t *testing.T) {
	t.Parallel()
	const yaml = `
routes:
  - path: /dice
    respond:
      template: true
      delay: { min: 1ms, max: 2s }
      body: '{{ randomInt 1 1000000 }} {{ randomHex 16 }} {{ uuid }} {{ randomInt -9223372036854775808 9223372036854775807 }}'
  - method: POST
    path: /things
    respond:
      status: 201
      template: true
      delay: { median: 10ms, sigma: 1 }
      body: { id: '{{ uuid }}' }
      save: { collection: things, id: '{{ .Response.JSON.id }}' }
  - { path: /things, respond: { list: { collection: things } } }
`
	run := func(seed uint64) (string, []time.Duration) {
		clock := &testClock{scale: 0} // record the delays, wait none
		_, hs, _ := serveYAML(t, Options{Rand: SeededRand(seed), Clock: clock}, yaml)
		var out strings.Builder
		for range 5 {
			out.WriteString(do(t, "GET", hs.URL+"/dice", "").body + "\n")
			do(t, "POST", hs.URL+"/things", "")
		}
		out.WriteString(do(t, "GET", hs.URL+"/things", "").body)
		waits, _ := clock.recorded()
		return out.String(), waits
	}
	a, aw := run(7)
	b, bw := run(7)
	if a != b || fmt.Sprint(aw) != fmt.Sprint(bw) {
		t.Errorf("seed 7 twice:\n%s\n%v\n---\n%s\n%v", a, aw, b, bw)
	}
	if len(aw) != 10 {
		t.Errorf("%d delays drawn, want 10", len(aw))
	}
	if c, cw := run(8); c == a || fmt.Sprint(cw) == fmt.Sprint(aw) {
		t.Errorf("seeds 7 and 8 gave the same values:\n%s\n%v", c, cw)
	}
	if !strings.Contains(a, "-4") || strings.Count(a, "-4") < 5 { // the uuid's version digit, once per line at least
		t.Errorf("no version 4 uuids in:\n%s", a)
	}
}

// TestHangEndsAtShutdown: a hang ends when shutdown begins, even with
// WaitDelaysOnShutdown (a hang is not work to finish), and leaves no
// goroutine behind.
func TestHangEndsAtShutdown(t *testing.T) {
	before := runtime.NumGoroutine()
	logs := &syncBuffer{}
	url, stop := serveReal(t, Options{ShutdownTimeout: time.Minute, WaitDelaysOnShutdown: true, Logger: slog.New(slog.NewJSONHandler(logs, nil))},
		"routes: [{ path: /hang, respond: { fault: hang } }]")
	waitListening(t, url)
	errc := make(chan error, 1)
	go func() { errc <- fresh("GET", url+"/hang", "", 0).err }()
	// The route counts the request when it arrives; it then hangs.
	eventually(t, patience, func() string {
		r := do(t, "GET", url+"/__admin/scenarios", "")
		if !strings.Contains(r.body, `"hits": 1`) {
			return "the request has not arrived: " + r.body
		}
		return ""
	})
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("Serve returned %v", err)
	}
	if el := time.Since(start); el > 30*time.Second {
		t.Errorf("shutdown took %s: it waited for the hang", el)
	}
	if err := <-errc; err == nil {
		t.Error("the hanging request got an answer")
	}
	if !strings.Contains(logs.String(), "hang ended by shutdown") {
		t.Errorf("no log line says shutdown ended the hang:\n%s", logs.String())
	}
	http.DefaultClient.CloseIdleConnections()
	settledGoroutines(t, before)
}

// TestPanicIsLogged: a panic while a request is handled (a bug) is logged
// at error level with its stack, and ends the request as an abort, so
// that net/http closes the connection without its own debug-level line.
func TestPanicIsLogged(t *testing.T) {
	t.Parallel()
	srv, _, logs := serveYAML(t, Options{}, lostPayments)
	r := httptest.NewRequest("GET", "/payments?x=1", nil)
	func() {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Errorf("recovered %v; want http.ErrAbortHandler", v)
			}
		}()
		defer srv.survive(r)
		var m map[string]int
		m["boom"]++ // a nil map: a bug's panic
	}()
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "panicked") {
			line = l
		}
	}
	if !strings.Contains(line, `"level":"ERROR"`) || !strings.Contains(line, "assignment to entry in nil map") || !strings.Contains(line, `"path":"/payments"`) || !strings.Contains(line, "TestPanicIsLogged") {
		t.Fatalf("log line %q; want an error naming the panic, the path and the stack", line)
	}
}
