package server

import (
	"context"
	"strings"
	"sync"
	"testing"
)

// TestResetFencesRequestsInFlight: a request in its delay when POST
// /__admin/reset runs writes nothing into the fresh state once it goes
// on (no item saved, no counter, no idempotency key, no journal entry):
// one test's stragglers cannot fill the next test's state (issue 19
// item 4). It gets a 503 that says why; a request that arrives after the
// reset runs as usual.
func TestResetFencesRequestsInFlight(t *testing.T) {
	t.Parallel()
	clock := newGateClock()
	_, hs, _ := serveYAML(t, Options{Clock: clock}, `
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
`)
	var wg sync.WaitGroup
	var straggler response
	wg.Add(1)
	go func() {
		defer wg.Done()
		r, err := doCtx(context.Background(), "POST", hs.URL+"/pay", `{}`, "Idempotency-Key", "k1", "Content-Type", "application/json")
		if err != nil {
			t.Errorf("straggler: %v", err)
		}
		straggler = r
	}()
	clock.waitBegan(t, 1)
	if r := do(t, "POST", hs.URL+"/__admin/reset", ""); r.status != 200 {
		t.Fatalf("reset: %d %s", r.status, r.body)
	}
	close(clock.gate)
	wg.Wait()
	if straggler.status != 503 || !strings.Contains(straggler.body, "reset") {
		t.Errorf("straggler: %d %s, want a 503 that names the reset", straggler.status, straggler.body)
	}
	for _, c := range []struct{ path, want string }{
		{"/__admin/collections", `"items":0`},
		{"/__admin/counters", `"total":0`},
		{"/__admin/idempotency", `"keys":[]`},
		{"/__admin/requests/count", `"count":0`},
	} {
		r := do(t, "GET", hs.URL+c.path, "")
		if r.status != 200 || !strings.Contains(strings.ReplaceAll(r.body, " ", ""), c.want) {
			t.Errorf("after reset, GET %s: %d %s, want %s", c.path, r.status, r.body, c.want)
		}
	}
	// The fresh state serves as usual: the counter starts again.
	if r := do(t, "POST", hs.URL+"/now", `{}`, "Content-Type", "application/json"); r.status != 201 || r.body != `{"id":"pay_1"}` {
		t.Errorf("after reset: %d %s", r.status, r.body)
	}
}
