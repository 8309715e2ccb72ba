package dashboard_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/scenariomock/scenariomock/server"
)

// statesYAML is the README's orders: a state per order id.
const statesYAML = `
routes:
  - name: order pending
    method: GET
    path: /orders/{id}
    state: { name: order, per: '{{ .Request.Vars.id }}', is: Started }
    respond: { template: true, body: { id: '{{ .Request.Vars.id }}', status: pending } }
  - name: order paid
    method: GET
    path: /orders/{id}
    state: { name: order, per: '{{ .Request.Vars.id }}', is: paid }
    respond: { template: true, body: { id: '{{ .Request.Vars.id }}', status: paid } }
  - name: pay
    method: POST
    path: /orders/{id}/pay
    state: { name: order, per: '{{ .Request.Vars.id }}', is: Started, to: paid }
    respond: { template: true, body: { id: '{{ .Request.Vars.id }}', status: paid } }
`

// TestBrowserRouteStates: a state a request moved shows its name, key and
// value; its Reset button sets that one back to Started (as the admin API
// and the routes then see it), and leaves another order's alone.
func TestBrowserRouteStates(t *testing.T) {
	m := startMock(t, server.Options{}, map[string]string{"orders.yaml": statesYAML})
	b := newBrowser(t)
	b.open(t, m)
	b.until(t, "the state name, Started", `document.querySelector('#states-rows tr.started[data-name="order"] .value')?.textContent === 'Started'`)

	for _, id := range []string{"ord_1", "ord_2"} {
		if status, body := m.call(t, "POST", "/orders/"+id+"/pay", ""); status != 200 {
			t.Fatalf("pay %s: %d %s", id, status, body)
		}
	}
	rows := `[...document.querySelectorAll('#states-rows tr.state')].map(r => [...r.children].slice(0, 3).map(c => c.textContent).join(' ')).join('|')`
	b.until(t, "both orders paid", rows+` === 'order ord_1 paid|order ord_2 paid'`)

	b.do(t, "click ord_1's Reset", chromedp.Click(chromedp.CSS(`#states-rows tr[data-name="order"][data-key="ord_1"] button`)))
	b.until(t, "the reset's confirmation", `document.getElementById('action-msg').textContent === 'State order ord_1 reset.'`)
	b.until(t, "ord_1 gone from the states set", rows+` === 'order ord_2 paid'`)
	if _, body := m.call(t, "GET", "/__admin/states/order?key=ord_1", ""); !strings.Contains(body, `"value":"Started"`) && !strings.Contains(body, `"value": "Started"`) {
		t.Errorf("ord_1's state after Reset: %s, want Started", body)
	}
	if _, body := m.call(t, "GET", "/__admin/states/order?key=ord_2", ""); !strings.Contains(body, `"paid"`) {
		t.Errorf("ord_2's state after ord_1's Reset: %s, want paid still", body)
	}
	if _, body := m.call(t, "GET", "/orders/ord_1", ""); !strings.Contains(body, "pending") {
		t.Errorf("GET /orders/ord_1 after Reset: %s, want pending", body)
	}
	b.noConsoleErrors(t, nil)
}
