package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/state"
)

// TestStateSerializedWhateverTheRouteOrder: two payments at once are
// answered 200 and 409 also when the "already paid" route comes first:
// the second payment read the state (Started) for that route before the
// first one moved it, and must not judge it by that stale read once it
// has waited for the lock and found the state paid.
func TestStateSerializedWhateverTheRouteOrder(t *testing.T) {
	t.Parallel()
	srv, hs, _ := serveYAML(t, Options{}, `
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
`)
	first := make(chan response, 1)
	go func() {
		r, err := doCtx(t.Context(), "POST", hs.URL+"/orders/o1/pay", "")
		if err != nil {
			t.Error(err)
		}
		first <- r
	}()
	// The first payment holds the state's lock through its delay.
	eventually(t, 20*time.Second, func() string {
		if n := srv.state.Locks().(*state.LocalLocks).Held(); n != 1 {
			return fmt.Sprintf("locks held = %d, want the first payment's", n)
		}
		return ""
	})
	second := do(t, "POST", hs.URL+"/orders/o1/pay", "")
	r := <-first
	if got := fmt.Sprint(r.status, " ", r.body, ", ", second.status, " ", strings.TrimSpace(second.body)); got != "200 paying, 409 already paid" {
		t.Fatalf("two payments at once = %s, want 200 paying, 409 already paid", got)
	}
}
