package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
)

// gateClock holds every delay until the test opens the gate, so that a
// test decides when "the first request is still running" ends, and moves
// Now forward to expire keys without waiting.
type gateClock struct {
	mu     sync.Mutex // guards offset
	offset time.Duration
	began  chan time.Duration // one send per delay that begins
	gate   chan struct{}      // closed to let every delay end
}

func newGateClock() *gateClock {
	return &gateClock{began: make(chan time.Duration, 100), gate: make(chan struct{})}
}

func (c *gateClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *gateClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

func (c *gateClock) Wait(ctx context.Context, d time.Duration) bool {
	c.began <- d
	select {
	case <-c.gate:
		return true
	case <-ctx.Done():
		return false
	}
}

// waitBegan waits for n delays to begin.
func (c *gateClock) waitBegan(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-c.began:
		case <-time.After(30 * time.Second):
			t.Fatalf("after 30s: %d of %d delays began", i, n)
		}
	}
}

const idemScenario = `
routes:
  - name: create payment
    method: POST
    path: /payments
    idempotency: { key: header.Idempotency-Key, required: true, scope: [header.Authorization] }
    respond:
      status: 201
      template: true
      headers: { Location: '/payments/pay_{{ .Call }}' }
      body: { id: 'pay_{{ .Call }}', amount: '{{ .Request.JSON.amount }}' }
  - name: optional key
    method: POST
    path: /optional
    idempotency: { key: header.Idempotency-Key }
    respond: { status: 201, template: true, body: { id: 'opt_{{ .Call }}' } }
  - name: slow transfer
    method: POST
    path: /transfers
    idempotency: { key: header.Idempotency-Key }
    respond: { status: 201, delay: 10s, template: true, body: { id: 'tr_{{ .Call }}' } }
  - name: slow transfer, waiting
    method: POST
    path: /transfers-wait
    idempotency: { key: header.Idempotency-Key, inFlight: wait }
    respond: { status: 201, delay: 10s, template: true, body: { id: 'tw_{{ .Call }}' } }
  - name: discarded on abort
    method: POST
    path: /discard
    idempotency: { key: header.Idempotency-Key, onClientAbort: discard }
    respond: { status: 201, delay: 10s, template: true, body: { id: 'd_{{ .Call }}' } }
  - name: payout
    method: POST
    path: /payouts
    idempotency: { key: header.Idempotency-Key }
    responses:
      - { status: 500, body: { error: flaky } }
      - { status: 201, template: true, body: { id: 'po_{{ .Call }}' } }
  - name: faulty
    method: POST
    path: /faulty
    idempotency: { key: header.Idempotency-Key }
    responses:
      - { fault: connection-reset }
      - { status: 201, template: true, body: { id: 'f_{{ .Call }}' } }
  - name: custom errors
    method: POST
    path: /custom
    idempotency:
      key: header.Idempotency-Key
      required: true
      errors:
        missing: { body: { error: { type: idempotency_error, message: 'no key on {{ .Request.Path }}' } }, template: true }
        mismatch: { status: 400, body: { error: { type: idempotency_error } } }
    respond: { status: 200, body: { ok: true } }
`

const jsonCT = "application/json"

func TestIdempotencyReplay(t *testing.T) {
	t.Parallel()
	_, hs, logs := serveYAML(t, Options{Clock: newGateClock()}, idemScenario)
	first := do(t, "POST", hs.URL+"/payments", `{"amount":9800,"currency":"JPY"}`, "Content-Type", jsonCT, "Idempotency-Key", "k1")
	if first.status != 201 || first.body != `{"id":"pay_1","amount":9800}` || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %q replayed=%q", first.status, first.body, first.header.Get("Idempotent-Replayed"))
	}
	// Key order, whitespace and the spelling of a number do not make
	// another request; the draft's quoted sf-string names the same key.
	for _, body := range []string{`{"amount":9800,"currency":"JPY"}`, `{ "currency": "JPY", "amount": 9800.0 }`} {
		for _, key := range []string{"k1", `"k1"`} {
			again := do(t, "POST", hs.URL+"/payments", body, "Content-Type", jsonCT, "Idempotency-Key", key)
			if again.status != 201 || again.body != first.body || again.header.Get("Location") != first.header.Get("Location") ||
				again.header.Get("Content-Type") != first.header.Get("Content-Type") || again.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("replay of %s with key %s: %d %q %v", body, key, again.status, again.body, again.header)
			}
		}
	}
	// A new key runs the route again: the sequence moved once per new key.
	other := do(t, "POST", hs.URL+"/payments", `{"amount":1}`, "Content-Type", jsonCT, "Idempotency-Key", "k2")
	if other.body != `{"id":"pay_2","amount":1}` {
		t.Errorf("second key: %q", other.body)
	}
	// Another client (scope: Authorization) with the same key is another key.
	scoped := do(t, "POST", hs.URL+"/payments", `{"amount":9800,"currency":"JPY"}`, "Content-Type", jsonCT, "Idempotency-Key", "k1", "Authorization", "Bearer other")
	if scoped.body != `{"id":"pay_3","amount":9800}` || scoped.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("other scope: %q", scoped.body)
	}
	if !strings.Contains(logs.String(), `"idempotency":"replayed"`) {
		t.Errorf("no replay in the log:\n%s", logs)
	}
}

// TestIdempotencyScopeIsTheCredential: with scope: [header.Authorization]
// one API key is one scope however the client sends it (Bearer, Basic
// as curl -u key: sends it, Basic not base64, other spellings of the
// scheme), and another key is another scope.
func TestIdempotencyScopeIsTheCredential(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{Clock: newGateClock()}, idemScenario)
	body := `{"amount":100,"currency":"JPY"}`
	first := do(t, "POST", hs.URL+"/payments", body, "Content-Type", jsonCT, "Idempotency-Key", "same", "Authorization", "Bearer sk_test_x")
	if first.status != 201 || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %q", first.status, first.body)
	}
	for _, auth := range []string{
		"Basic " + base64.StdEncoding.EncodeToString([]byte("sk_test_x:")),
		"Basic " + base64.StdEncoding.EncodeToString([]byte("sk_test_x")),
		"Basic sk_test_x",
		"bearer  sk_test_x",
		" Bearer sk_test_x ",
		"sk_test_x", // no scheme: the value as it is
	} {
		again := do(t, "POST", hs.URL+"/payments", body, "Content-Type", jsonCT, "Idempotency-Key", "same", "Authorization", auth)
		if again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("Authorization %q: %d %q replayed=%q, want the replay of %q", auth, again.status, again.body, again.header.Get("Idempotent-Replayed"), first.body)
		}
	}
	for _, auth := range []string{
		"Bearer sk_test_y",
		"Basic " + base64.StdEncoding.EncodeToString([]byte("sk_test_x:secret")),
	} {
		other := do(t, "POST", hs.URL+"/payments", body, "Content-Type", jsonCT, "Idempotency-Key", "same", "Authorization", auth)
		if other.status != 201 || other.header.Get("Idempotent-Replayed") != "" || other.body == first.body {
			t.Errorf("Authorization %q: %d %q replayed=%q, want a new payment", auth, other.status, other.body, other.header.Get("Idempotent-Replayed"))
		}
	}
}

func TestIdempotencyRefusals(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{Clock: newGateClock()}, idemScenario)
	do(t, "POST", hs.URL+"/payments", `{"amount":100}`, "Content-Type", jsonCT, "Idempotency-Key", "used")
	for _, tc := range []struct {
		name    string
		path    string
		body    string
		headers []string
		status  int
		want    string // in the body
	}{
		{"mismatch", "/payments", `{"amount":200}`, []string{"Idempotency-Key", "used"}, 422, `"type":"https://github.com/scenariomock/scenariomock#idempotency-key-reused","title":"Idempotency-Key is already used","status":422`},
		{"missing", "/payments", `{"amount":200}`, nil, 400, `"type":"https://github.com/scenariomock/scenariomock#idempotency-key-missing","title":"Idempotency-Key is missing","status":400`},
		{"empty", "/payments", `{"amount":200}`, []string{"Idempotency-Key", `""`}, 400, `"type":"https://github.com/scenariomock/scenariomock#idempotency-key-invalid","title":"Idempotency-Key is invalid","status":400`},
		{"too long", "/payments", `{"amount":200}`, []string{"Idempotency-Key", strings.Repeat("k", 256)}, 400, "longer than 255"},
		{"bad sf-string", "/payments", `{"amount":200}`, []string{"Idempotency-Key", `"abc`}, 400, "not a valid quoted string"},
		{"custom missing, templated", "/custom", `{}`, nil, 400, `{"error":{"type":"idempotency_error","message":"no key on /custom"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, "POST", hs.URL+tc.path, tc.body, append([]string{"Content-Type", jsonCT}, tc.headers...)...)
			if r.status != tc.status || !strings.Contains(r.body, tc.want) {
				t.Errorf("%d %s; want %d with %s", r.status, r.body, tc.status, tc.want)
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(tc.name, "custom") && ct != "application/problem+json" {
				t.Errorf("Content-Type %q, want application/problem+json", ct)
			}
		})
	}
	// A custom mismatch answer with its own status.
	do(t, "POST", hs.URL+"/custom", `{"a":1}`, "Content-Type", jsonCT, "Idempotency-Key", "c1")
	if r := do(t, "POST", hs.URL+"/custom", `{"a":2}`, "Content-Type", jsonCT, "Idempotency-Key", "c1"); r.status != 400 || r.body != `{"error":{"type":"idempotency_error"}}` {
		t.Errorf("custom mismatch: %d %s", r.status, r.body)
	}
	// Without required, a request with no key runs the route every time.
	a := do(t, "POST", hs.URL+"/optional", `{}`)
	b := do(t, "POST", hs.URL+"/optional", `{}`)
	if a.body == b.body || a.status != 201 || b.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("optional key, none sent: %q then %q", a.body, b.body)
	}
}

func TestIdempotencyInFlight(t *testing.T) {
	t.Parallel()
	clock := newGateClock()
	_, hs, _ := serveYAML(t, Options{Clock: clock}, idemScenario)
	type result struct {
		r   response
		err error
	}
	first := make(chan result, 1)
	go func() {
		r, err := doCtx(context.Background(), "POST", hs.URL+"/transfers", `{"amount":1}`, "Content-Type", jsonCT, "Idempotency-Key", "t1")
		first <- result{r, err}
	}()
	clock.waitBegan(t, 1)
	// The first is in its delay: the same key gets 409, another body 422,
	// and another key runs at once (two keys never block each other).
	if r := do(t, "POST", hs.URL+"/transfers", `{"amount":1}`, "Content-Type", jsonCT, "Idempotency-Key", "t1"); r.status != 409 || r.header.Get("Retry-After") != "1" ||
		!strings.Contains(r.body, `"type":"https://github.com/scenariomock/scenariomock#idempotency-key-in-flight","title":"A request is outstanding for this Idempotency-Key","status":409`) {
		t.Errorf("retry in flight: %d %s %v", r.status, r.body, r.header)
	}
	if r := do(t, "POST", hs.URL+"/transfers", `{"amount":2}`, "Content-Type", jsonCT, "Idempotency-Key", "t1"); r.status != 422 {
		t.Errorf("other body in flight: %d %s", r.status, r.body)
	}
	second := make(chan result, 1)
	go func() {
		r, err := doCtx(context.Background(), "POST", hs.URL+"/transfers", `{"amount":1}`, "Content-Type", jsonCT, "Idempotency-Key", "t2")
		second <- result{r, err}
	}()
	clock.waitBegan(t, 1) // t2 claimed its key and reached its delay while t1 holds its own
	close(clock.gate)
	r1, r2 := <-first, <-second
	if r1.err != nil || r1.r.status != 201 || r2.err != nil || r2.r.status != 201 || r1.r.body == r2.r.body {
		t.Fatalf("after the delay: %+v / %+v", r1, r2)
	}
	if r := do(t, "POST", hs.URL+"/transfers", `{"amount":1}`, "Content-Type", jsonCT, "Idempotency-Key", "t1"); r.body != r1.r.body || r.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry after completion: %d %q", r.status, r.body)
	}
}

// TestIdempotencyConcurrent sends ten requests with one key at once:
// exactly one runs the route; with inFlight: conflict the nine others get
// 409, with inFlight: wait all ten get the same body.
func TestIdempotencyConcurrent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ path, mode string }{{"/transfers", "conflict"}, {"/transfers-wait", "wait"}} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			clock := newGateClock()
			_, hs, _ := serveYAML(t, Options{Clock: clock}, idemScenario)
			var wg sync.WaitGroup
			var done atomic.Int32
			results := make([]response, 10)
			errs := make([]error, 10)
			for i := range results {
				wg.Go(func() {
					results[i], errs[i] = doCtx(context.Background(), "POST", hs.URL+tc.path, `{"amount":5}`, "Content-Type", jsonCT, "Idempotency-Key", "same")
					done.Add(1)
				})
			}
			clock.waitBegan(t, 1) // one claimed the key and runs
			if tc.mode == "conflict" {
				// The nine others are answered while the first still runs.
				eventually(t, 30*time.Second, func() string {
					if n := done.Load(); n < 9 {
						return fmt.Sprintf("%d of 9 answered while the first runs", n)
					}
					return ""
				})
			}
			close(clock.gate)
			wg.Wait()
			count := map[int]int{}
			bodies := map[string]int{}
			for i, r := range results {
				if errs[i] != nil {
					t.Fatalf("request %d: %v", i, errs[i])
				}
				count[r.status]++
				if r.status == 201 {
					bodies[r.body]++
				}
			}
			select {
			case d := <-clock.began:
				t.Errorf("a second delay began (%s): the route ran twice", d)
			default:
			}
			switch tc.mode {
			case "conflict":
				if count[201] != 1 || count[409] != 9 {
					t.Errorf("statuses %v, want 1×201 and 9×409", count)
				}
			case "wait":
				if count[201] != 10 || len(bodies) != 1 {
					t.Errorf("statuses %v bodies %v, want 10× one body", count, bodies)
				}
			}
		})
	}
}

func TestIdempotencyClientAbort(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, path string
		replayed   bool // whether the retry finds the first request's answer
	}{{"complete", "/transfers", true}, {"discard", "/discard", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := newGateClock()
			_, hs, logs := serveYAML(t, Options{Clock: clock}, idemScenario)
			ctx, cancel := context.WithCancel(context.Background())
			gone := make(chan error, 1)
			go func() {
				_, err := doCtx(ctx, "POST", hs.URL+tc.path, `{"amount":1}`, "Content-Type", jsonCT, "Idempotency-Key", "a1")
				gone <- err
			}()
			clock.waitBegan(t, 1)
			cancel() // the client times out during the delay
			if err := <-gone; !errors.Is(err, context.Canceled) {
				t.Fatalf("client: %v", err)
			}
			if tc.replayed {
				// The server finishes the work once the delay ends.
				close(clock.gate)
				eventually(t, 30*time.Second, func() string {
					if !strings.Contains(logs.String(), `"status":201`) {
						return "the abandoned request did not complete"
					}
					return ""
				})
				r := do(t, "POST", hs.URL+tc.path, `{"amount":1}`, "Content-Type", jsonCT, "Idempotency-Key", "a1")
				if r.status != 201 || r.header.Get("Idempotent-Replayed") != "true" {
					t.Errorf("retry: %d %q %v", r.status, r.body, r.header)
				}
				return
			}
			eventually(t, 30*time.Second, func() string {
				if !strings.Contains(logs.String(), "client gone during delay") {
					return "the discarded request did not end"
				}
				return ""
			})
			close(clock.gate)
			r := do(t, "POST", hs.URL+tc.path, `{"amount":1}`, "Content-Type", jsonCT, "Idempotency-Key", "a1")
			if r.status != 201 || r.header.Get("Idempotent-Replayed") != "" || r.body != `{"id":"d_2"}` {
				t.Errorf("retry after discard: %d %q %v", r.status, r.body, r.header)
			}
		})
	}
}

// TestIdempotencyReleased checks that what must not be stored frees the
// key: a 5xx (outside the default store), and a fault.
func TestIdempotencyReleased(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{Clock: newGateClock()}, idemScenario)
	if r := do(t, "POST", hs.URL+"/payouts", `{"amount":1}`, "Content-Type", jsonCT, "Idempotency-Key", "p1"); r.status != 500 {
		t.Fatalf("first payout: %d %s", r.status, r.body)
	}
	r := do(t, "POST", hs.URL+"/payouts", `{"amount":1}`, "Content-Type", jsonCT, "Idempotency-Key", "p1")
	if r.status != 201 || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("retry after 500: %d %s", r.status, r.body)
	}
	if again := do(t, "POST", hs.URL+"/payouts", `{"amount":1}`, "Content-Type", jsonCT, "Idempotency-Key", "p1"); again.body != r.body || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("third: %d %s", again.status, again.body)
	}
	// Go's transport retries by itself a request that carries an
	// Idempotency-Key header in its canonical spelling, when the
	// connection breaks; a lower-case spelling keeps this one try.
	req, _ := http.NewRequest("POST", hs.URL+"/faulty", strings.NewReader(`{}`))
	req.Header["idempotency-key"] = []string{"f1"}
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("fault: got %d, want a connection error", resp.StatusCode)
	}
	if r := do(t, "POST", hs.URL+"/faulty", `{}`, "Content-Type", jsonCT, "Idempotency-Key", "f1"); r.status != 201 || r.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("retry after fault: %d %s", r.status, r.body)
	}
}

// TestIdempotencyLifetime covers expiry, reloads and reset.
func TestIdempotencyLifetime(t *testing.T) {
	t.Parallel()
	clock := newGateClock()
	s, hs, _ := serveYAML(t, Options{Clock: clock}, idemScenario)
	send := func() response {
		return do(t, "POST", hs.URL+"/optional", `{"a":1}`, "Content-Type", jsonCT, "Idempotency-Key", "life")
	}
	first := send()
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if r := send(); r.body != first.body || r.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("after reload: %q", r.body)
	}
	clock.advance(24*time.Hour + time.Second) // past the default ttl
	expired := send()
	if expired.body == first.body || expired.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("after expiry: %q, want a new answer", expired.body)
	}
	if r := do(t, "POST", hs.URL+"/__admin/reset", ""); r.status != 200 {
		t.Fatalf("reset: %d %s", r.status, r.body)
	}
	if r := send(); r.header.Get("Idempotent-Replayed") != "" || r.body != `{"id":"opt_1"}` {
		t.Errorf("after reset: %q %v", r.body, r.header)
	}
}

func TestIdempotencyAdmin(t *testing.T) {
	t.Parallel()
	clock := newGateClock()
	_, hs, _ := serveYAML(t, Options{Clock: clock}, idemScenario)
	do(t, "POST", hs.URL+"/payments", `{"amount":1}`, "Content-Type", jsonCT, "Idempotency-Key", "a", "Authorization", "Bearer sk_test_secret")
	do(t, "POST", hs.URL+"/payments", `{"amount":1}`, "Content-Type", jsonCT, "Idempotency-Key", "a", "Authorization", "Bearer sk_test_secret")
	do(t, "POST", hs.URL+"/optional", `{}`, "Idempotency-Key", "b")
	list := do(t, "GET", hs.URL+"/__admin/idempotency", "")
	v := list.json(t)
	keys, _ := v["keys"].([]any)
	if list.status != 200 || v["total"] != float64(2) || len(keys) != 2 {
		t.Fatalf("list: %d %s", list.status, list.body)
	}
	first := keys[0].(map[string]any)
	if first["group"] != "POST /payments" || first["key"] != "a" || first["state"] != "completed" || first["status"] != float64(201) || first["replays"] != float64(1) {
		t.Errorf("first key: %v", first)
	}
	if strings.Contains(list.body, "sk_test_secret") || first["scope"] == "" {
		t.Errorf("the scope must be listed as a hash, not as the credential: %v", first["scope"])
	}
	if r := do(t, "GET", hs.URL+"/__admin/idempotency?group=POST+/optional&limit=1", ""); !strings.Contains(r.body, `"key": "b"`) || strings.Contains(r.body, `"key": "a"`) {
		t.Errorf("by group: %s", r.body)
	}
	for _, q := range []string{"?limit=x", "?limit=-1", "?limit=10001", "?offset=x"} {
		if r := do(t, "GET", hs.URL+"/__admin/idempotency"+q, ""); r.status != 400 {
			t.Errorf("%s: %d, want 400", q, r.status)
		}
	}
	// limit=0 is one page, never the whole store at once.
	if r := do(t, "GET", hs.URL+"/__admin/idempotency?limit=0", ""); r.status != 200 || !strings.Contains(r.body, `"key": "b"`) {
		t.Errorf("limit=0: %d %s", r.status, r.body)
	}
	// Expire one key now: its retry runs the route again.
	if r := do(t, "POST", hs.URL+"/__admin/idempotency/expire?group=POST+/optional&key=b", ""); r.status != 200 || r.json(t)["expired"] != float64(1) {
		t.Errorf("expire: %d %s", r.status, r.body)
	}
	if r := do(t, "POST", hs.URL+"/optional", `{}`, "Idempotency-Key", "b"); r.header.Get("Idempotent-Replayed") != "" || r.body != `{"id":"opt_2"}` {
		t.Errorf("after expire: %q", r.body)
	}
	if r := do(t, "DELETE", hs.URL+"/__admin/idempotency", ""); r.status != 200 || r.json(t)["expired"] != float64(2) {
		t.Errorf("delete: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", hs.URL+"/__admin/idempotency", ""); !strings.Contains(r.body, `"total": 0`) {
		t.Errorf("after delete: %s", r.body)
	}
	if r := do(t, "PUT", hs.URL+"/__admin/idempotency", ""); r.status != 405 || r.header.Get("Allow") != "GET, DELETE" {
		t.Errorf("PUT: %d %v", r.status, r.header)
	}
}

// TestIdempotencyClaimedAtArrival: on the real clock a key is claimed at
// the request's arrival, the time its journal entry records, rather than
// at a clock read of its own (the store on the real clock takes the
// server's reading, ClaimOptions.Arrived).
func TestIdempotencyClaimedAtArrival(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, idemScenario)
	do(t, "POST", hs.URL+"/optional", `{}`, "Idempotency-Key", "arrival")
	var keys struct {
		Keys []struct {
			Created time.Time `json:"created"`
		} `json:"keys"`
	}
	var requests struct {
		Requests []struct {
			Time time.Time `json:"time"`
		} `json:"requests"`
	}
	for _, g := range []struct {
		path string
		v    any
	}{{"/__admin/idempotency", &keys}, {"/__admin/requests", &requests}} {
		r := do(t, "GET", hs.URL+g.path, "")
		if err := json.Unmarshal([]byte(r.body), g.v); err != nil {
			t.Fatalf("%s: %v: %s", g.path, err, r.body)
		}
	}
	if len(keys.Keys) != 1 || len(requests.Requests) != 1 {
		t.Fatalf("%d keys, %d requests, want 1 each", len(keys.Keys), len(requests.Requests))
	}
	if created, arrived := keys.Keys[0].Created, requests.Requests[0].Time; !created.Equal(arrived) {
		t.Errorf("key created %v, request arrived %v: want the arrival", created, arrived)
	}
}

// TestReplayHeadersOnConnection replays a stored answer again and again
// over one keep-alive connection under Serve, where a replay's header
// values are held in the connection's exchange, with other answers in
// between: each replay carries the stored fields and values, and the next
// answer on the connection none of them.
func TestReplayHeadersOnConnection(t *testing.T) {
	_, base, _ := serveYAMLRunning(t, Options{}, `routes:
  - name: create payment
    method: POST
    path: /payments
    idempotency: { key: header.Idempotency-Key, required: true }
    respond:
      status: 201
      headers: { Location: /payments/pay_1, X-A: "a", X-B: "b", Cache-Control: no-store }
      body: { id: pay_1 }
  - name: other
    method: GET
    path: /other
    respond: { headers: { X-C: "c" }, body: { ok: true } }
`)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	send := func(method, path, key string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(`{"amount":1}`))
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp
	}
	want := map[string]string{"Location": "/payments/pay_1", "X-A": "a", "X-B": "b", "Cache-Control": "no-store", "Content-Type": "application/json"}
	for _, key := range []string{"k1", "k2"} {
		if first := send("POST", "/payments", key); first.StatusCode != 201 {
			t.Fatalf("first use of %s: status %d", key, first.StatusCode)
		}
		for i := range 3 {
			resp := send("POST", "/payments", key)
			if resp.StatusCode != 201 || resp.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("replay %d of %s: status %d, headers %v", i, key, resp.StatusCode, resp.Header)
			}
			for name, v := range want {
				if got := resp.Header.Values(name); len(got) != 1 || got[0] != v {
					t.Errorf("replay %d of %s: %s = %q, want [%q]", i, key, name, got, v)
				}
			}
			other := send("GET", "/other", "")
			if other.Header.Get("X-C") != "c" || other.Header.Get("X-A") != "" || other.Header.Get("Location") != "" {
				t.Errorf("the answer after replay %d of %s: headers %v", i, key, other.Header)
			}
		}
	}
}

// TestReplayHeadersOutliveTheRequest replays two stored answers, one
// after the other, through ServeHTTP called directly (as a handler under
// another server or a recorder in a test gets it), and reads each
// recorder's header afterwards: the first answer's values must still be
// its own once the second request has run, which reuses the first's
// exchange from the pool.
func TestReplayHeadersOutliveTheRequest(t *testing.T) {
	s, err := New(Options{Load: func() (*scenarios.Set, error) {
		return scenarios.LoadBytes("s.yaml", []byte(`routes:
  - name: a
    method: POST
    path: /a
    idempotency: { key: header.Idempotency-Key }
    respond: { status: 201, headers: { Location: /a/1, X-Route: a }, body: { id: a } }
  - name: b
    method: POST
    path: /b
    idempotency: { key: header.Idempotency-Key }
    respond: { status: 201, headers: { Location: /b/1, X-Route: b }, body: { id: b } }
`))
	}})
	if err != nil {
		t.Fatal(err)
	}
	send := func(path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", path, strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "k")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec
	}
	send("/a")
	send("/b")
	for range 20 {
		a, b := send("/a"), send("/b")
		for _, c := range []struct {
			rec  *httptest.ResponseRecorder
			want string
		}{{a, "a"}, {b, "b"}} {
			h := c.rec.Header()
			if h.Get("Idempotent-Replayed") != "true" || h.Get("X-Route") != c.want || h.Get("Location") != "/"+c.want+"/1" {
				t.Fatalf("replay of /%s, read after the next request: headers %v", c.want, h)
			}
		}
	}
}

// TestReplayHeaderFields checks how a replay sets its stored fields in
// w's header: each name once when the fields come sorted into an empty
// header (the fast way), and by looking names up when a name repeats (a
// list), when they come out of order, or when w has fields already (CORS
// headers): a repeated name's values all arrive, in order.
func TestReplayHeaderFields(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before http.Header // what w carries before the replay
		fields []state.Header
		want   http.Header
	}{
		{"sorted", nil, []state.Header{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
			http.Header{"A": {"1"}, "B": {"2"}}},
		{"a list", nil, []state.Header{{Name: "A", Value: "1"}, {Name: "A", Value: "2"}, {Name: "B", Value: "3"}},
			http.Header{"A": {"1", "2"}, "B": {"3"}}},
		{"out of order", nil, []state.Header{{Name: "B", Value: "1"}, {Name: "A", Value: "2"}, {Name: "B", Value: "3"}},
			http.Header{"A": {"2"}, "B": {"1", "3"}}},
		{"w has fields", http.Header{"B": {"0"}}, []state.Header{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
			http.Header{"A": {"1"}, "B": {"0", "2"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newStageHarness(t, "POST", "/payments", `{}`)
			x := h.exchange()
			for name, vs := range tc.before {
				h.w.h[name] = slices.Clone(vs)
			}
			x.stored = state.Response{Status: 201, Header: tc.fields, Body: []byte("{}")}
			h.s.replay(x)
			got := h.w.h.Clone()
			got.Del("Content-Length")
			got.Del("Idempotent-Replayed")
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("header %v, want %v", got, tc.want)
			}
			x.end()
		})
	}
}

// TestIdempotencyPerAnswer checks a response's own idempotency: choice:
// release frees the key, so that a corrected retry with the same key
// runs (Stripe saves no result for a request that fails validation), and
// saves nothing; store keeps an answer the store: rule would not.
func TestIdempotencyPerAnswer(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{Clock: newGateClock()}, `
defaults:
  idempotency: { key: header.Idempotency-Key }
routes:
  - name: order refused
    method: POST
    path: /orders
    when: { body: { json: { amount: 0 } } }
    respond:
      status: 400
      idempotency: release
      body: { error: amount must be more than 0 }
      save: { collection: refusals, id: '{{ .Request.Headers.Get "Idempotency-Key" }}' }
  - name: order
    method: POST
    path: /orders
    respond: { status: 201, body: { ok: true } }
  - name: refusals
    method: GET
    path: /refusals/{id}
    respond: { load: { collection: refusals, id: '{{ .Request.Vars.id }}' } }
  - name: busy
    method: POST
    path: /busy
    respond: { status: 503, idempotency: store, body: { error: busy } }
`)
	if r := do(t, "POST", hs.URL+"/orders", `{"amount":0}`, "Content-Type", jsonCT, "Idempotency-Key", "o1"); r.status != 400 {
		t.Fatalf("first, amount 0: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", hs.URL+"/refusals/o1", ""); r.status != 404 {
		t.Errorf("a released answer was saved: %d %s", r.status, r.body)
	}
	r := do(t, "POST", hs.URL+"/orders", `{"amount":1}`, "Content-Type", jsonCT, "Idempotency-Key", "o1")
	if r.status != 201 || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("corrected retry with the same key: %d %s, want 201 run (the 400 was not stored)", r.status, r.body)
	}
	if again := do(t, "POST", hs.URL+"/orders", `{"amount":1}`, "Content-Type", jsonCT, "Idempotency-Key", "o1"); again.status != 201 || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("third: %d %s %v, want the 201 replayed", again.status, again.body, again.header)
	}
	first := do(t, "POST", hs.URL+"/busy", `{}`, "Content-Type", jsonCT, "Idempotency-Key", "b1")
	second := do(t, "POST", hs.URL+"/busy", `{}`, "Content-Type", jsonCT, "Idempotency-Key", "b1")
	if first.status != 503 || second.status != 503 || second.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("busy: %d then %d %v, want the 503 stored and replayed", first.status, second.status, second.header)
	}
}
