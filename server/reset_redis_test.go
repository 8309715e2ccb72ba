package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/scenariomock/scenariomock/internal/redistest"
	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/state/redis"
)

// replicaResetScenario has a delayed route with every effect a straggler could
// leave (a claim, a seq counter, a saved item), one without a delay that
// shows where the counter stands, and a proxied idempotent route whose
// upstream answers when the test says.
const replicaResetScenario = `
routes:
  - name: pay
    method: POST
    path: /pay
    idempotency: { key: header.Idempotency-Key }
    respond:
      status: 201
      delay: 1s
      template: true
      body: { id: 'pay_{{ seq "pay" }}' }
      save: { collection: payments, id: '{{ .Response.JSON.id }}' }
  - name: now
    method: POST
    path: /now
    respond:
      status: 201
      template: true
      body: { id: 'pay_{{ seq "pay" }}' }
      save: { collection: payments, id: '{{ .Response.JSON.id }}' }
  - name: upstream
    method: POST
    path: /up
    idempotency: { key: header.Idempotency-Key }
    respond: { proxy: %s }
  - name: static
    method: POST
    path: /static
    respond: { status: 202, delay: 1s, body: { ok: true } }
`

// TestResetFencesReplicas: two replicas share one redis-server; a
// request on replica B is in flight when replica A is reset. It gets a
// 503 that names the reset and leaves nothing in the shared state (no
// item, counter, idempotency key or journal entry, as listed through
// either replica), and the next request starts the counter over (issue
// 19 item 4, across replicas). Two ways to be in flight: in its delay
// (B's copy of the epoch has moved by the time it goes on: fenceIn), and
// waiting for its upstream after fenceIn (Redis refuses its completion:
// the store's own check). A static answer in its delay has no effects to
// refuse: it gets its answer, and no journal entry.
func TestResetFencesReplicas(t *testing.T) {
	rs := redistest.Start(t)
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"id":"up_1"}`)
	}))
	defer upstream.Close()
	scenario := fmt.Sprintf(replicaResetScenario, upstream.URL)
	open := func(prefix string) state.Store {
		st, err := redis.Open(context.Background(), rs.URL(), redis.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	for _, tc := range []struct {
		name string
		path string
		want int // the straggler's status
		// inFlight waits until the straggler is where the reset must
		// overtake it; goOn lets it go on.
		inFlight func(t *testing.T, clock *gateClock)
		goOn     func(clock *gateClock)
	}{
		{"in its delay", "/pay", 503,
			func(t *testing.T, clock *gateClock) { clock.waitBegan(t, 1) },
			func(clock *gateClock) { close(clock.gate) }},
		{"waiting for its upstream", "/up", 503,
			func(t *testing.T, _ *gateClock) { <-arrived },
			func(*gateClock) { close(release) }},
		{"static, in its delay", "/static", 202,
			func(t *testing.T, clock *gateClock) { clock.waitBegan(t, 1) },
			func(clock *gateClock) { close(clock.gate) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := strings.NewReplacer(" ", "-", ",", "").Replace(tc.name) + ":"
			_, a, _ := serveYAML(t, Options{State: open(prefix)}, scenario)
			clock := newGateClock()
			_, b, _ := serveYAML(t, Options{State: open(prefix), Clock: clock}, scenario)
			// Some state from before, which the reset forgets.
			if r := do(t, "POST", a.URL+"/now", `{}`, "Content-Type", "application/json"); r.status != 201 || r.body != `{"id":"pay_1"}` {
				t.Fatalf("before: %d %s", r.status, r.body)
			}
			var wg sync.WaitGroup
			var straggler response
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := doCtx(context.Background(), "POST", b.URL+tc.path, `{}`, "Idempotency-Key", "k1", "Content-Type", "application/json")
				if err != nil {
					t.Errorf("straggler: %v", err)
				}
				straggler = r
			}()
			tc.inFlight(t, clock)
			if r := do(t, "POST", a.URL+"/__admin/reset", ""); r.status != 200 {
				t.Fatalf("reset through A: %d %s", r.status, r.body)
			}
			tc.goOn(clock)
			wg.Wait()
			if straggler.status != tc.want || tc.want == 503 && !strings.Contains(straggler.body, "reset") {
				t.Errorf("the straggler on B: %d %s, want %d (a 503 names the reset)", straggler.status, straggler.body, tc.want)
			}
			for _, replica := range []string{a.URL, b.URL} {
				for _, c := range []struct{ path, want string }{
					{"/__admin/collections", `"items":0`},
					{"/__admin/counters", `"total":0`},
					{"/__admin/idempotency", `"keys":[]`},
					{"/__admin/requests/count", `"count":0`},
				} {
					r := do(t, "GET", replica+c.path, "")
					if r.status != 200 || !strings.Contains(strings.ReplaceAll(r.body, " ", ""), c.want) {
						t.Errorf("after the reset, GET %s%s: %d %s, want %s", replica, c.path, r.status, r.body, c.want)
					}
				}
			}
			// The next request, on either replica, starts over.
			if r := do(t, "POST", b.URL+"/now", `{}`, "Content-Type", "application/json"); r.status != 201 || r.body != `{"id":"pay_1"}` {
				t.Errorf("the next request on B after the reset: %d %s, want pay_1", r.status, r.body)
			}
			if r := do(t, "POST", a.URL+"/now", `{}`, "Content-Type", "application/json"); r.status != 201 || r.body != `{"id":"pay_2"}` {
				t.Errorf("the one after on A: %d %s, want pay_2", r.status, r.body)
			}
		})
	}
}
