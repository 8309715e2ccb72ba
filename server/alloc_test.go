package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"
)

// allocScenario has the routes of the load harness's workloads: a fixed
// GET, a constant POST, and an idempotent POST answered, stored and
// replayed.
const allocScenario = `routes:
  - name: get payment
    method: GET
    path: /payments/pay_demo_0001
    respond:
      headers: { Cache-Control: no-store }
      body: { id: pay_demo_0001, amount: 9800, currency: JPY, status: succeeded }
  - name: create payment
    method: POST
    path: /payments
    idempotency: { key: header.Idempotency-Key, required: true }
    respond:
      status: 201
      headers: { Location: /payments/pay_demo_0001 }
      body: { id: pay_demo_0001, amount: 9800, currency: JPY, status: succeeded }
  - name: constant post
    method: POST
    path: /transfers
    respond: { status: 201, body: { id: tr_1 } }
`

// stageHarness runs a request through the pipeline one stage at a time,
// on an exchange kept in a connection's context as Serve keeps it.
type stageHarness struct {
	s    *Server
	w    *discardWriter
	r    *http.Request
	body []byte
	keys [][]string // fresh Idempotency-Keys, made outside the measured runs
	next int
}

func newStageHarness(t *testing.T, method, target, body string) *stageHarness {
	t.Helper()
	s, err := New(Options{
		Load: func() (*scenarios.Set, error) { return scenarios.LoadBytes("s.yaml", []byte(allocScenario)) },
		// The defaults of serve: a log line per request, the journal on
		// (small, so that its ring is full and reused at once).
		Logger:      slog.New(NewLogHandler(io.Discard, false, slog.LevelInfo)),
		JournalSize: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	conn := connExchange(context.Background(), nil)
	r := httptest.NewRequestWithContext(conn, method, target, nil)
	h := &stageHarness{s: s, w: &discardWriter{h: http.Header{}}, r: r, body: []byte(body)}
	for i := range 5000 { // more than the runs of TestStageAllocations: each key is fresh once
		h.keys = append(h.keys, []string{"key-" + strconv.Itoa(i)})
	}
	return h
}

// exchange starts the next request: the body as read, the route matched.
func (h *stageHarness) exchange() *exchange {
	clear(h.w.h)
	x := h.s.exchangeFor(h.w, h.r, time.Now(), h.s.snap.Load())
	x.body = h.body
	if !h.s.match(x) {
		panic("no route for " + h.r.URL.Path)
	}
	return x
}

// freshKey gives the request a key no request has used.
func (h *stageHarness) freshKey() {
	h.r.Header["Idempotency-Key"] = h.keys[h.next%len(h.keys)]
	h.next++
}

// TestStageAllocations holds each stage of the pipeline to its
// allocation budget, on the paths the load harness measures. A stage's
// count is what the request costs up to and including it, less the
// stages before: regressions show in the stage that made them.
func TestStageAllocations(t *testing.T) {
	// Not parallel: testing.AllocsPerRun counts the whole process.
	if raceEnabled {
		t.Skip("allocation counts need a build without -race (.ci/run runs this test so)")
	}
	stages := []string{"match", "claim", "advance", "wait", "produce", "commit", "deliver", "finish"}
	run := func(s *Server, x *exchange, upTo int) {
		ok := true
		for _, name := range stages[1 : upTo+1] {
			switch name {
			case "claim":
				ok = ok && s.claim(x)
			case "advance":
				ok = ok && s.advance(x)
			case "wait":
				ok = ok && s.wait(x)
			case "produce":
				if ok {
					s.produce(x)
				}
			case "commit":
				s.commit(x)
			case "deliver":
				s.deliver(x)
			case "finish":
				s.finish(x)
			}
		}
		if upTo < len(stages)-1 {
			// Leave nothing claimed for the next run.
			s.releaseClaim(x)
		}
		x.end()
	}
	for _, tc := range []struct {
		name                 string
		method, target, body string
		key                  string // "fresh": a new key each run; else this key, stored before
		status               int
		// budget is the allocations allowed per stage, in the order of
		// stages.
		budget [8]float64
	}{
		{"get", "GET", "/payments/pay_demo_0001", "", "", 200, [8]float64{0, 0, 0, 0, 0, 0, 0, 0}},
		{"post", "POST", "/transfers", `{"amount":9800,"currency":"JPY"}`, "", 201, [8]float64{0, 0, 0, 0, 0, 0, 0, 0}},
		// The claim's and the commit's are the memory store's (a new
		// entry, the answer it encodes), with one of room for each. The
		// journal copies the body into its slot's buffer, and a replay
		// decodes its header into the connection's scratch slices: none.
		{"idempotent-new", "POST", "/payments", `{"amount":9800,"currency":"JPY"}`, "fresh", 201, [8]float64{0, 2, 0, 0, 0, 2, 0, 0}},
		{"idempotent-replay", "POST", "/payments", `{"amount":9800,"currency":"JPY"}`, "stored", 201, [8]float64{0, 0, 0, 0, 0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newStageHarness(t, tc.method, tc.target, tc.body)
			if tc.key == "stored" {
				h.r.Header.Set("Idempotency-Key", "stored-key")
				run(h.s, h.exchange(), len(stages)-1)
			}
			// Totals through each stage are held to the budgets' sums:
			// AllocsPerRun rounds each total down, so that stage by stage
			// differences of a store that allocates now and then (a
			// sweep, a map growing) would wobble by one.
			var prev, allowed float64
			for i, name := range stages {
				n := testing.AllocsPerRun(500, func() {
					if tc.key == "fresh" {
						h.freshKey()
					}
					run(h.s, h.exchange(), i)
				})
				allowed += tc.budget[i]
				t.Logf("through %s: %.0f allocations (%+.0f)", name, n, n-prev)
				if n > allowed {
					t.Errorf("through stage %s: %.0f allocations, the budgets so far allow %.0f", name, n, allowed)
				}
				prev = n
			}
			if h.w.status != tc.status {
				t.Errorf("status %d, want %d", h.w.status, tc.status)
			}
		})
	}
}
