package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"

	"github.com/scenariomock/scenariomock/state"
)

// payAgainFirst pays an order once, with the "already paid" route
// listed before the paying one, whose answer takes 2 s: a second payment
// sent meanwhile waits for the state's lock.
const payAgainFirst = `
routes:
  - name: pay again
    method: POST
    path: /orders/{id}/pay
    state: { name: order, per: '{{ .Request.Vars.id }}', is: paid }
    respond: { status: 409, body: already paid }
  - name: pay
    method: POST
    path: /orders/{id}/pay
    state: { name: order, per: '{{ .Request.Vars.id }}', is: Started, to: paid }
    lock: { wait: 30s }
    respond: { body: paying, delay: 2s }
`

// TestStateSerializedWhateverTheRouteOrder: two payments at once are
// answered 200 and 409 also when the "already paid" route comes first:
// the second payment read the state (Started) for that route before the
// first one moved it, and must not judge it by that stale read once it
// has waited for the lock and found the state paid.
func TestStateSerializedWhateverTheRouteOrder(t *testing.T) {
	t.Parallel()
	srv, hs, _ := serveYAML(t, Options{}, payAgainFirst)
	first := payFirst(t, hs.URL+"/orders/o1/pay")
	// The first payment holds the state's lock through its delay.
	untilHeld(t, srv, "the first payment's")
	second := do(t, "POST", hs.URL+"/orders/o1/pay", "")
	r := <-first
	if got := fmt.Sprint(r.status, " ", r.body, ", ", second.status, " ", strings.TrimSpace(second.body)); got != "200 paying, 409 already paid" {
		t.Fatalf("two payments at once = %s, want 200 paying, 409 already paid", got)
	}
}

// TestStateBounds: a state's key comes from the request, so the states
// are bounded: a per: that renders more than the bound is refused (no
// state kept), reads of many keys keep nothing, and moves of new keys
// past the store's bound are refused while known keys still move.
func TestStateBounds(t *testing.T) {
	t.Parallel()
	srv, hs, _ := serveYAML(t, Options{State: state.NewMemory(state.Options{MaxStates: 2})}, `
routes:
  - name: read
    method: GET
    path: /k/{id}
    state: { name: s, per: '{{ .Request.Vars.id }}{{ .Request.Body }}', is: Started }
    respond: { body: started }
  - name: move
    method: POST
    path: /k/{id}
    state: { name: s, per: '{{ .Request.Vars.id }}{{ .Request.Body }}', to: moved }
    respond: { body: moved }
`)
	for i := range 50 {
		if r := do(t, "GET", fmt.Sprintf("%s/k/r%d", hs.URL, i), ""); r.status != 200 {
			t.Fatalf("GET = %d %s", r.status, r.body)
		}
	}
	huge := strings.Repeat("x", 4096)
	if r := do(t, "POST", hs.URL+"/k/h", huge); r.status < 400 {
		t.Fatalf("a move whose per: renders 4 KiB = %d %s, want refused", r.status, r.body)
	}
	if r := do(t, "GET", hs.URL+"/k/h", huge); r.status < 400 {
		t.Fatalf("a read whose per: renders 4 KiB = %d %s, want refused", r.status, r.body)
	}
	for _, id := range []string{"a", "b"} {
		if r := do(t, "POST", hs.URL+"/k/"+id, ""); r.status != 200 {
			t.Fatalf("move %s = %d %s", id, r.status, r.body)
		}
	}
	r := do(t, "POST", hs.URL+"/k/c", "")
	if r.status != 507 {
		t.Fatalf("a third key past --max-states 2 = %d %s, want 507", r.status, r.body)
	}
	if r := do(t, "POST", hs.URL+"/k/a", ""); r.status != 200 {
		t.Fatalf("a known key past the bound = %d %s", r.status, r.body)
	}
	vs, err := srv.state.States().List(t.Context(), state.AllStates)
	if err != nil || len(vs) != 2 {
		t.Fatalf("states kept = %v, %v; want a and b", vs, err)
	}
	if n := srv.state.Locks().(*state.LocalLocks).Held(); n != 0 {
		t.Fatalf("locks held = %d", n)
	}
}

// payAfter is orderStates's payment with a delay, which it takes with
// the order's state locked.
func payAfter(delay string) string {
	return strings.Replace(orderStates, "respond: { body: paying }", "respond: { body: paying, delay: "+delay+" }\n    lock: { wait: 1m }", 1)
}

// TestStateLockClientLeaves: a client that leaves during the delay it
// waits with the state locked gives the lock back at once, not when its
// delay would have ended, and moves nothing; the next payment runs.
func TestStateLockClientLeaves(t *testing.T) {
	t.Parallel()
	srv, hs, _ := serveYAML(t, Options{}, payAfter("2m"))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = doCtx(ctx, "POST", hs.URL+"/orders/o1/pay", "")
	}()
	locks := srv.state.Locks().(*state.LocalLocks)
	untilHeld(t, srv, "the payment's")
	cancel()
	<-done
	eventually(t, 30*time.Second, func() string {
		if n := locks.Held(); n != 0 {
			return fmt.Sprintf("locks held = %d after the client left", n)
		}
		return ""
	})
	wantBody(t, hs.URL+"/orders/o1", 200, "o1 pending")
}

// TestStateResetDuringMove: a payment in its delay when POST
// /__admin/reset runs moves nothing into the state after the reset.
func TestStateResetDuringMove(t *testing.T) {
	t.Parallel()
	srv, hs, _ := serveYAML(t, Options{}, payAfter("1s"))
	done := make(chan response, 1)
	go func() {
		r, _ := doCtx(t.Context(), "POST", hs.URL+"/orders/o1/pay", "")
		done <- r
	}()
	untilHeld(t, srv, "the payment's")
	if r := do(t, "POST", hs.URL+"/__admin/reset", ""); r.status != 200 {
		t.Fatalf("reset = %d %s", r.status, r.body)
	}
	r := <-done
	t.Logf("the payment reset under it: %d %s", r.status, r.body)
	wantBody(t, hs.URL+"/orders/o1", 200, "o1 pending")
	if r := do(t, "POST", hs.URL+"/orders/o1/pay", ""); r.status != 200 || r.body != "paying" {
		t.Fatalf("a payment after the reset = %d %s", r.status, r.body)
	}
}

// TestStateHead: a HEAD request answered by a GET route reads its state
// as GET does, and moves it as GET does.
func TestStateHead(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - name: first look
    method: GET
    path: /orders/{id}
    state: { name: seen, per: '{{ .Request.Vars.id }}', is: Started, to: seen }
    respond: { body: new }
  - name: seen
    method: GET
    path: /orders/{id}
    state: { name: seen, per: '{{ .Request.Vars.id }}', is: seen }
    respond: { status: 203, body: seen }
`)
	if r := do(t, "HEAD", hs.URL+"/orders/o1", ""); r.status != 200 {
		t.Fatalf("HEAD = %d", r.status)
	}
	if r := do(t, "HEAD", hs.URL+"/orders/o1", ""); r.status != 203 {
		t.Fatalf("second HEAD = %d, want 203 (the first moved the state)", r.status)
	}
	wantBody(t, hs.URL+"/orders/o1", 203, "seen")
}

// TestStateLockShutdown: a request waiting for a state's lock ends when
// shutdown begins.
func TestStateLockShutdown(t *testing.T) {
	watch := lockWatch{state.NewMemory(state.Options{}), make(chan struct{}, 1)}
	opts := Options{State: watch, ShutdownTimeout: time.Minute, Logger: slog.New(slog.DiscardHandler)}
	opts.Load = func() (*scenarios.Set, error) { return scenarios.LoadBytes("s.yaml", []byte(payAfter("1s"))) }
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String()
	waitListening(t, url)
	release, err := watch.Store.Locks().Lock(t.Context(), []string{stateLockName(state.StateKey{Name: "order", Key: "o1"})}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	errc := make(chan error, 1)
	go func() {
		_, err := doCtx(context.Background(), "POST", url+"/orders/o1/pay", "")
		errc <- err
	}()
	select {
	case <-watch.asked:
	case <-time.After(patience):
		t.Fatal("the request did not ask for its lock")
	}
	start := time.Now()
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("Serve returned %v", err)
	}
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("shutdown took %s: it waited for the state's lock", el)
	}
	if err := <-errc; err == nil {
		t.Error("the request waiting for the state's lock got an answer")
	}
	http.DefaultClient.CloseIdleConnections()
}

// TestStateAdminRefuses: PUT /__admin/states refuses what would set a
// state nothing reads or a value nothing can match, with a 4xx problem,
// and sets nothing.
func TestStateAdminRefuses(t *testing.T) {
	t.Parallel()
	srv, hs, _ := serveYAML(t, Options{}, orderStates)
	for _, tc := range []struct {
		name, query, body string
		status            int
	}{
		{"bad JSON", "order?key=o1", `{"value":`, 400},
		{"not an object", "order?key=o1", `"paid"`, 400},
		{"a number", "order?key=o1", `{"value": 1}`, 400},
		{"unknown field", "order?key=o1", `{"value":"paid","vlaue":"x"}`, 400},
		{"blank value", "order?key=o1", `{"value":"  "}`, 400},
		{"huge value", "order?key=o1", `{"value":"` + strings.Repeat("x", 2000) + `"}`, 400},
		{"huge body", "order?key=o1", `{"value":"` + strings.Repeat("x", 20<<20) + `"}`, 413},
		{"misspelt name", "ordr?key=o1", `{"value":"paid"}`, 404},
		{"huge key", "order?key=" + strings.Repeat("k", 2000), `{"value":"paid"}`, 400},
		{"NUL in key", "order?key=%00", `{"value":"paid"}`, 400},
		{"bad session", "order?key=o1&session=a%20b", `{"value":"paid"}`, 400},
		{"unknown parameter", "order?id=o1", `{"value":"paid"}`, 400},
	} {
		r := do(t, "PUT", hs.URL+"/__admin/states/"+tc.query, tc.body, "Content-Type", "application/json")
		if r.status != tc.status || !strings.Contains(r.header.Get("Content-Type"), "problem+json") {
			t.Errorf("%s: PUT = %d %s %.200s, want a %d problem", tc.name, r.status, r.header.Get("Content-Type"), r.body, tc.status)
		}
	}
	if vs, err := srv.state.States().List(t.Context(), state.AllStates); err != nil || len(vs) != 0 {
		t.Fatalf("states set by refused PUTs: %v, %v", vs, err)
	}
}

// TestStateLockOptOut: with lock: [] two payments at once both see
// Started and both pay, as WireMock answers them.
func TestStateLockOptOut(t *testing.T) {
	t.Parallel()
	srv, hs, _ := serveYAML(t, Options{}, strings.Replace(orderStates, "respond: { body: paying }", "respond: { body: paying, delay: 2s }\n    lock: []", 1))
	got := payAtOnce(t, "/orders/o1/pay", hs.URL, hs.URL)
	if want := []string{"200 paying", "200 paying"}; !slices.Equal(got, want) {
		t.Fatalf("two payments at once with lock: [] = %q, want %q", got, want)
	}
	if n := srv.state.Locks().(*state.LocalLocks).Held(); n != 0 {
		t.Fatalf("locks held = %d", n)
	}
}

// TestStateReplayMovesNothing: a replay of a payment does not move its
// state again: set back to Started over the admin API, the retry of the
// first payment's key replays its answer and leaves the state Started.
func TestStateReplayMovesNothing(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, strings.Replace(orderStates, "respond: { body: paying }", "respond: { body: paying }\n    idempotency: { key: header.Idempotency-Key }", 1))
	if r := do(t, "POST", hs.URL+"/orders/o1/pay", "", "Idempotency-Key", "k1"); r.status != 200 {
		t.Fatalf("pay = %d %s", r.status, r.body)
	}
	if r := do(t, "PUT", hs.URL+"/__admin/states/order?key=o1", `{"value":"Started"}`, "Content-Type", "application/json"); r.status != 200 {
		t.Fatalf("PUT = %d %s", r.status, r.body)
	}
	r := do(t, "POST", hs.URL+"/orders/o1/pay", "", "Idempotency-Key", "k1")
	if r.status != 200 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry = %d %s %v, want a replay", r.status, r.body, r.header)
	}
	wantBody(t, hs.URL+"/orders/o1", 200, "o1 pending")
	r = do(t, "GET", hs.URL+"/__admin/requests", "")
	if n := strings.Count(r.body, `"to": "paid"`); n != 1 {
		t.Fatalf("journal entries with a move = %d, want the first payment's only:\n%s", n, r.body)
	}
}

// TestStateReloadInFlight: payments and reads in flight while reloads
// swap in tables that reorder the routes, rename the state and change
// is: and to: end with an answer of the table they started on; no race,
// no lock left held.
func TestStateReloadInFlight(t *testing.T) {
	t.Parallel()
	base := payAfter("20ms")
	variants := []string{
		base,
		strings.ReplaceAll(base, "name: order,", "name: orders,"),
		strings.ReplaceAll(base, "is: paid", "is: settled"),
		strings.Replace(strings.ReplaceAll(base, "to: paid", "to: settled"), "is: paid }\n    respond: { template: true", "is: settled }\n    respond: { template: true", 1),
	}
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, hs, _ := newTestServer(t, Options{}, path)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				url := fmt.Sprintf("%s/orders/o%d", hs.URL, (w+i)%3)
				method := "GET"
				if i%2 == 0 {
					url, method = url+"/pay", "POST"
				}
				r, err := doCtx(t.Context(), method, url, "")
				if err != nil {
					t.Error(err)
					return
				}
				if r.status != 200 && r.status != 409 && r.status != 404 {
					t.Errorf("%s %s = %d %s", method, url, r.status, r.body)
				}
			}
		}()
	}
	for i := range 20 {
		if err := os.WriteFile(path, []byte(variants[i%len(variants)]), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := srv.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	eventually(t, 20*time.Second, func() string {
		if n := srv.state.Locks().(*state.LocalLocks).Held(); n != 0 {
			return fmt.Sprintf("locks held = %d", n)
		}
		return ""
	})
}

// TestStateParallelSessions: two sessions paying the same order id at
// once hold their own states' locks: neither waits for the other, and
// each session's order is paid once.
func TestStateParallelSessions(t *testing.T) {
	t.Parallel()
	srv, hs, _ := serveYAML(t, Options{}, orderStates)
	for _, session := range []string{"alpha", "beta"} {
		postDoc(t, hs.URL, "session: "+session+"\n"+payAfter("1m"))
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, session := range []string{"alpha", "beta"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = doCtx(ctx, "POST", hs.URL+"/__session/"+session+"/orders/o1/pay", "")
		}()
	}
	// Both hold their session's lock of order o1 at once.
	eventually(t, 20*time.Second, func() string {
		if n := srv.state.Locks().(*state.LocalLocks).Held(); n != 2 {
			return fmt.Sprintf("locks held = %d, want one per session", n)
		}
		return ""
	})
	// The order of no session is not theirs: paid at once.
	if r := do(t, "POST", hs.URL+"/orders/o1/pay", ""); r.status != 200 {
		t.Fatalf("pay of no session = %d %s", r.status, r.body)
	}
	cancel()
	wg.Wait()
	eventually(t, 20*time.Second, func() string {
		if n := srv.state.Locks().(*state.LocalLocks).Held(); n != 0 {
			return fmt.Sprintf("locks held = %d after the clients left", n)
		}
		return ""
	})
	wantBody(t, hs.URL+"/__session/alpha/orders/o1", 200, "o1 pending")
	wantBody(t, hs.URL+"/orders/o1", 200, "o1 paid")
}

// TestStateNoRouteForValue: a state no route answers in (set over the
// admin API) is a 404 whose detail names the routes of the state and
// the value each wants, with the order's key.
func TestStateNoRouteForValue(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, orderStates)
	if r := do(t, "PUT", hs.URL+"/__admin/states/order?key=o1", `{"value":"shipped"}`, "Content-Type", "application/json"); r.status != 200 {
		t.Fatalf("PUT = %d %s", r.status, r.body)
	}
	r := do(t, "GET", hs.URL+"/orders/o1", "")
	detail, _ := r.json(t)["detail"].(string)
	for _, want := range []string{`route "pending": state order ["o1"] is "shipped", want "Started"`, `route "paid": state order ["o1"] is "shipped", want "paid"`} {
		if r.status != 404 || !strings.Contains(detail, want) {
			t.Fatalf("GET = %d %s, want a 404 whose detail says %s", r.status, detail, want)
		}
	}
}

// TestStateLockDuringDelay: a payment in a 10 s delay holds its order's
// state: another payment of the order waits the default lock wait (2 s)
// and is answered 429 with Retry-After, moving nothing; a read (is:
// only) of the order is not held.
func TestStateLockDuringDelay(t *testing.T) {
	t.Parallel()
	srv, hs, _ := serveYAML(t, Options{}, strings.Replace(orderStates, "respond: { body: paying }", "respond: { body: paying, delay: 10s }", 1))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = doCtx(ctx, "POST", hs.URL+"/orders/o1/pay", "")
	}()
	defer func() { cancel(); <-done }()
	untilHeld(t, srv, "the payment's")
	start := time.Now()
	r := do(t, "POST", hs.URL+"/orders/o1/pay", "")
	if r.status != 429 || r.header.Get("Retry-After") == "" || !strings.Contains(r.body, `order [\"o1\"]`) {
		t.Fatalf("a second payment during the first's delay = %d %v %s, want a 429 naming the state", r.status, r.header, r.body)
	}
	if el := time.Since(start); el < 2*time.Second {
		t.Fatalf("the second payment was answered after %s, before the default lock wait", el)
	}
	wantBody(t, hs.URL+"/orders/o1", 200, "o1 pending")
}

// TestStatePaymentStorm: six payments of each of five orders at once,
// with the "already paid" route listed first: each order is paid once
// and every other payment of it is answered 409.
func TestStatePaymentStorm(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - name: pay again
    method: POST
    path: /orders/{id}/pay
    state: { name: order, per: '{{ .Request.Vars.id }}', is: paid }
    respond: { status: 409, body: already paid }
  - name: pay
    method: POST
    path: /orders/{id}/pay
    state: { name: order, per: '{{ .Request.Vars.id }}', is: Started, to: paid }
    lock: { wait: 1m }
    respond: { body: paying, delay: 50ms }
`)
	var mu sync.Mutex
	got := map[string][]int{}
	var wg sync.WaitGroup
	for o := range 5 {
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprint("o", o)
				r, err := doCtx(t.Context(), "POST", hs.URL+"/orders/"+id+"/pay", "")
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got[id] = append(got[id], r.status)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	for id, statuses := range got {
		slices.Sort(statuses)
		if want := []int{200, 409, 409, 409, 409, 409}; !slices.Equal(statuses, want) {
			t.Errorf("payments of %s = %v, want %v", id, statuses, want)
		}
	}
}

// TestStateSecondRouteLocks: two routes with is: and to: on one state
// and one path (pay, then refund): a request that read the state under
// the first route's lock and gave it back (not its is:) takes the lock
// again for the second route rather than reuse the read, so two refunds
// at once run one after the other and the second finds nothing to do.
// Before, the second route moved the state with no lock held, and both
// refunds answered 200.
func TestStateSecondRouteLocks(t *testing.T) {
	t.Parallel()
	srv, hs, _ := serveYAML(t, Options{}, `
routes:
  - name: pay
    method: POST
    path: /orders/{id}/act
    state: { name: order, per: '{{ .Request.Vars.id }}', is: Started, to: paid }
    lock: { wait: 30s }
    respond: { body: paying }
  - name: refund
    method: POST
    path: /orders/{id}/act
    state: { name: order, per: '{{ .Request.Vars.id }}', is: paid, to: refunded }
    lock: { wait: 30s }
    respond: { body: refunding, delay: 2s }
  - name: done
    method: POST
    path: /orders/{id}/act
    respond: { status: 409, body: nothing to do }
`)
	if r := do(t, "POST", hs.URL+"/orders/o1/act", ""); r.status != 200 || r.body != "paying" {
		t.Fatalf("the payment = %d %s", r.status, r.body)
	}
	first := payFirst(t, hs.URL+"/orders/o1/act")
	// The first refund holds the state's lock through its delay.
	untilHeld(t, srv, "the first refund's")
	second := do(t, "POST", hs.URL+"/orders/o1/act", "")
	r := <-first
	if got := fmt.Sprint(r.status, " ", r.body, ", ", second.status, " ", strings.TrimSpace(second.body)); got != "200 refunding, 409 nothing to do" {
		t.Fatalf("two refunds at once = %s, want 200 refunding, 409 nothing to do", got)
	}
}

// untilHeld waits until srv holds one lock, whose's (a payment held in
// its delay with its state's lock).
func untilHeld(t *testing.T, srv *Server, whose string) {
	t.Helper()
	eventually(t, 20*time.Second, func() string {
		if n := srv.state.Locks().(*state.LocalLocks).Held(); n != 1 {
			return fmt.Sprintf("locks held = %d, want %s", n, whose)
		}
		return ""
	})
}
