package dashboard_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/scenariomock/scenariomock/server"
	"github.com/scenariomock/scenariomock/webhooks"
)

const hooksDashYAML = `
webhooks:
  endpoints:
    - name: shop
      url: %s
      signing: none
      retry: { schedule: [1s], timeout: 5s }
routes:
  - name: create payment intent
    method: POST
    path: /v1/payment_intents
    respond:
      status: 200
      template: true
      body: { id: 'pi_{{ randomHex 8 }}', object: payment_intent }
    events:
      - type: payment_intent.created
`

// TestBrowserWebhookAttempts: the dashboard lists the attempts made
// before it opened, then shows each new one live: a receiver refusing an
// event's first attempt shows it retrying, then delivered, newest first.
func TestBrowserWebhookAttempts(t *testing.T) {
	var mu sync.Mutex // guards seen
	seen := map[string]int{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 4096)
		n, _ := r.Body.Read(buf)
		mu.Lock()
		seen[string(buf[:n])]++
		first := seen[string(buf[:n])] == 1
		mu.Unlock()
		if first {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(recv.Close)
	m := startMock(t, server.Options{Webhooks: webhooks.Options{TimeScale: 0.01}}, map[string]string{"hooks.yaml": fmt.Sprintf(hooksDashYAML, recv.URL)})
	if status, body := m.call(t, "POST", "/v1/payment_intents", `{}`); status != 200 {
		t.Fatalf("POST: %d %s", status, body)
	}
	delivered := func(n int) string {
		return fmt.Sprintf(`document.querySelectorAll('#hooks-rows tr.hook[data-outcome="delivered"]').length === %d`, n)
	}
	b := newBrowser(t)
	b.open(t, m)
	b.until(t, "the attempts made before the page opened", delivered(1))

	if status, body := m.call(t, "POST", "/v1/payment_intents", `{}`); status != 200 {
		t.Fatalf("POST: %d %s", status, body)
	}
	b.until(t, "the second event's attempts, live", delivered(2))
	rows := eval[[]string](t, b, `[...document.querySelectorAll('#hooks-rows tr.hook')].map(r => [...r.children].slice(1).map(c => c.textContent).join('|'))`)
	if len(rows) != 4 {
		t.Fatalf("rows %q, want 4 attempts", rows)
	}
	ids := eval[[]string](t, b, `[...document.querySelectorAll('#hooks-rows tr.hook')].map(r => r.dataset.event)`)
	// Newest first: the second event's delivery, then its refused attempt.
	want := []string{
		"payment_intent.created|" + ids[0] + "|shop|2|delivered|200|",
		"payment_intent.created|" + ids[0] + "|shop|1|retrying|500|",
		"payment_intent.created|" + ids[2] + "|shop|2|delivered|200|",
		"payment_intent.created|" + ids[2] + "|shop|1|retrying|500|",
	}
	if ids[0] != ids[1] || ids[2] != ids[3] || ids[0] == ids[2] || !strings.HasPrefix(ids[0], "evt_") {
		t.Errorf("event ids %q: want two events, two attempts each", ids)
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	b.noConsoleErrors(t, nil)
}
