package server

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/scenariomock/scenariomock/internal/redistest"
	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/state/redis"
)

// claimWatch is a store that says when a request claims an
// Idempotency-Key.
type claimWatch struct {
	state.Store
	claimed chan struct{}
}

func (w claimWatch) Idempotency() state.Idempotency {
	return claimedKeys{w.Store.Idempotency(), w.claimed}
}

type claimedKeys struct {
	state.Idempotency
	claimed chan struct{}
}

func (c claimedKeys) Claim(ctx context.Context, k state.Key, fp state.Fingerprint, o state.ClaimOptions) (state.Claim, error) {
	select {
	case c.claimed <- struct{}{}:
	default:
	}
	return c.Idempotency.Claim(ctx, k, fp, o)
}

// TestStateSameKeyAtOnce: a retry with the payment's Idempotency-Key,
// sent while the payment runs (holding its order's state), gets what
// it gets on a route without a state: the 409 of a key in flight at
// once, or with inFlight: wait the payment's answer replayed once it is
// done; not a 429 after the state lock's wait (before claimEarly), nor,
// with a longer wait, the "already paid" route's 409. On one server's
// memory and on two replicas of one redis-server.
func TestStateSameKeyAtOnce(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	for _, tc := range []struct {
		name     string
		redis    bool
		inFlight string // the payment's idempotency inFlight:
	}{
		{"memory", false, "conflict"},
		{"memory inFlight wait", false, "wait"},
		{"redis", true, "conflict"},
		{"redis inFlight wait", true, "wait"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := strings.Replace(orderStates, "respond: { body: paying }",
				"respond: { body: paying, delay: 1s }\n    lock: { wait: 50ms }\n    idempotency: { key: header.Idempotency-Key, inFlight: "+tc.inFlight+" }", 1)
			clock := newGateClock()
			claimed := make(chan struct{}, 10)
			var urls [2]string
			for i := range urls {
				var st state.Store = state.NewMemory(state.Options{})
				if tc.redis {
					rst, err := redis.Open(context.Background(), rs.URL(), redis.Options{Prefix: strings.ReplaceAll(tc.name, " ", "-") + ":"})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { rst.Close() })
					st = rst
				} else if i == 1 {
					break // one server
				}
				_, hs, _ := serveYAML(t, Options{Clock: clock, State: claimWatch{st, claimed}}, yaml)
				urls[i] = hs.URL
			}
			// A failure leaves no payment in its delay, which the
			// servers' close would wait for.
			var once sync.Once
			release := func() { once.Do(func() { close(clock.gate) }) }
			t.Cleanup(release)
			second := urls[1]
			if second == "" {
				second = urls[0]
			}
			pay := func(base string) response {
				r, err := doCtx(t.Context(), "POST", base+"/orders/o1/pay", "", "Idempotency-Key", "k1")
				if err != nil {
					t.Error(err)
				}
				return r
			}
			first := payFirst(t, urls[0]+"/orders/o1/pay", "Idempotency-Key", "k1")
			clock.waitBegan(t, 1) // the payment holds the order's state in its delay
			<-claimed
			var retry response
			if tc.inFlight == "wait" {
				done := make(chan response, 1)
				go func() { done <- pay(second) }()
				select {
				case <-claimed: // the retry waits for the payment's answer
				case r := <-done:
					t.Fatalf("the retry = %d %s while the payment ran, want it to wait for its answer", r.status, r.body)
				}
				release()
				retry = <-done
				if retry.status != 200 || retry.body != "paying" || retry.header.Get("Idempotent-Replayed") != "true" {
					t.Fatalf("the retry = %d %v %s, want the payment's answer replayed", retry.status, retry.header, retry.body)
				}
			} else {
				retry = pay(second)
				release()
				if retry.status != 409 || !strings.Contains(retry.body, "outstanding for this Idempotency-Key") {
					t.Fatalf("the retry = %d %v %s, want the 409 of a key in flight", retry.status, retry.header, retry.body)
				}
			}
			if r := <-first; r.status != 200 || r.body != "paying" {
				t.Fatalf("the payment = %d %s", r.status, r.body)
			}
			wantBody(t, second+"/orders/o1", 200, "o1 paid")
			if r := do(t, "GET", urls[0]+"/__admin/requests", ""); strings.Count(r.body, `"to": "paid"`) != 1 {
				t.Fatalf("journal entries with a move, want the payment's only:\n%s", r.body)
			}
		})
	}
}

// TestStatePreflightTakesNoLock: a CORS preflight of a route that takes
// any method, with is: and to:, is answered at once while a payment holds
// the state's lock: a preflight changes nothing (before, it waited for
// the lock and got a 429).
func TestStatePreflightTakesNoLock(t *testing.T) {
	t.Parallel()
	clock := newGateClock()
	srv, hs, _ := serveYAML(t, Options{CORS: true, Clock: clock}, `
routes:
  - name: pay
    path: /orders/{id}/pay
    state: { name: order, per: '{{ .Request.Vars.id }}', is: Started, to: paid }
    lock: { wait: 50ms }
    respond: { body: paying, delay: 1s }
`)
	first := payFirst(t, hs.URL+"/orders/o1/pay")
	clock.waitBegan(t, 1) // the payment holds the order's state in its delay
	r := do(t, "OPTIONS", hs.URL+"/orders/o1/pay", "", "Origin", "http://localhost:5173", "Access-Control-Request-Method", "POST")
	if r.status != 204 || r.header.Get("Access-Control-Allow-Origin") == "" {
		t.Fatalf("a preflight while the payment runs = %d %v %s, want 204", r.status, r.header, r.body)
	}
	close(clock.gate)
	if r := <-first; r.status != 200 || r.body != "paying" {
		t.Fatalf("the payment = %d %s", r.status, r.body)
	}
	if n := srv.state.Locks().(*state.LocalLocks).Held(); n != 0 {
		t.Fatalf("locks held = %d", n)
	}
}

// TestStateLockTimeoutAnswer: a request that waited longer than the
// route's lock: wait: for the state a payment holds gets the route's
// lock: timeout: answer, rendered with its path variables, as a request
// that waited for the route's objects does (before, a 429 problem).
func TestStateLockTimeoutAnswer(t *testing.T) {
	t.Parallel()
	clock := newGateClock()
	_, hs, _ := serveYAML(t, Options{Clock: clock}, strings.Replace(orderStates, "respond: { body: paying }",
		"respond: { body: paying, delay: 1s }\n    lock: { wait: 50ms, timeout: { status: 423, template: true, body: 'order {{ .Request.Vars.id }} busy' } }", 1))
	first := payFirst(t, hs.URL+"/orders/o1/pay")
	clock.waitBegan(t, 1) // the payment holds the order's state in its delay
	if r := do(t, "POST", hs.URL+"/orders/o1/pay", ""); r.status != 423 || r.body != "order o1 busy" {
		t.Fatalf("a second payment = %d %s, want the lock's timeout answer", r.status, r.body)
	}
	close(clock.gate)
	if r := <-first; r.status != 200 || r.body != "paying" {
		t.Fatalf("the payment = %d %s", r.status, r.body)
	}
	wantBody(t, hs.URL+"/orders/o1", 200, "o1 paid")
}
