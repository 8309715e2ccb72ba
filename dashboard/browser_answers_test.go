package dashboard_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/scenariomock/scenariomock/server"
)

// startPayments serves examples/payments-stateful.yaml: an idempotent
// create that saves each payment, and a lost answer for keys lost-….
func startPayments(t *testing.T) *mock {
	t.Helper()
	example, err := os.ReadFile("../examples/payments-stateful.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return startMock(t, server.Options{}, map[string]string{"payments-stateful.yaml": string(example)})
}

// pay posts a payment with an Idempotency-Key (none for ""), and returns
// the status, or 0 when the connection broke.
func (m *mock) pay(t *testing.T, key, body string) int {
	t.Helper()
	req, err := http.NewRequest("POST", m.base+"/payments", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// routeRow is the JavaScript for the route row named name.
func routeRow(name string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('#routes-rows .route')].find(r => r.querySelector('.name').textContent === %q)`, name)
}

// A route's runs and its requests, side by side: a replay and a refusal
// take the route without running it, so the route shows 1 run and 4
// requests (1 replayed, 2 refused), as many as the journal has.
func TestBrowserRunsAndRequests(t *testing.T) {
	m := startPayments(t)
	b := newBrowser(t)
	b.open(t, m)
	for _, c := range []struct {
		key, body string
		status    int
	}{
		{"key-a", `{"amount": 9800, "currency": "eur"}`, 201}, // runs
		{"key-a", `{"amount": 9800, "currency": "eur"}`, 201}, // replayed
		{"key-a", `{"amount": 1, "currency": "eur"}`, 422},    // refused: another body for the key
		{"", `{"amount": 9800, "currency": "eur"}`, 400},      // refused: no key
	} {
		if got := m.pay(t, c.key, c.body); got != c.status {
			t.Fatalf("POST /payments %q %s: %d, want %d", c.key, c.body, got, c.status)
		}
	}
	row := routeRow("create payment")
	b.until(t, "create payment's counts", row+`?.querySelector('.reqs .total')?.textContent === '4'`)
	got := eval[[]string](t, b, `(() => { const r = `+row+`; return [r.querySelector('.hits').textContent, r.querySelector('.reqs').textContent]; })()`)
	if got[0] != "1" || got[1] != "4 (1 replayed, 2 refused)" {
		t.Errorf("runs %q, requests %q; want 1 and \"4 (1 replayed, 2 refused)\"", got[0], got[1])
	}
	// The labels say which is which.
	head := eval[string](t, b, `document.querySelector('.routes-panel .thead').textContent`)
	if !strings.Contains(head, "Runs") || !strings.Contains(head, "Requests") {
		t.Errorf("table head %q, want Runs and Requests", head)
	}
	if _, body := m.call(t, "GET", "/__admin/requests/count?route=create+payment", ""); !strings.Contains(body, `"count": 4`) && !strings.Contains(body, `"count":4`) {
		t.Errorf("the journal counts %s for create payment, want 4", body)
	}
	b.noConsoleErrors(t, nil)
}

// The detail of a request shows the answer it got: a replay's status,
// head and body; a lost answer (made, then eaten by a fault) marked as
// such with what the client never got; a refusal's problem.
func TestBrowserAnswerDetail(t *testing.T) {
	m := startPayments(t)
	b := newBrowser(t)
	b.open(t, m)
	body := `{"amount": 9800, "currency": "eur"}`
	m.pay(t, "key-a", body)
	if got := m.pay(t, "key-a", body); got != 201 {
		t.Fatalf("replay: %d", got)
	}
	if got := m.pay(t, "lost-1", body); got != 0 {
		t.Fatalf("lost-1 answered %d, want the connection reset", got)
	}
	if got := m.pay(t, "key-a", `{"amount": 1}`); got != 422 {
		t.Fatalf("mismatch: %d", got)
	}
	b.until(t, "four payment rows", `document.querySelectorAll('#requests details[data-path="/payments"]').length === 4`)
	// Newest first: the 422, the lost one, the replay, the first.
	rows := `document.querySelectorAll('#requests details[data-path="/payments"]')`
	detail := func(i int) string {
		t.Helper()
		b.do(t, fmt.Sprintf("expand row %d", i), chromedp.Click(chromedp.CSS(fmt.Sprintf(`#requests details[data-path="/payments"]:nth-child(%d) > summary`, i+1))))
		b.until(t, "its detail", fmt.Sprintf(`%s[%d].querySelector('.answer') !== null`, rows, i))
		return eval[string](t, b, fmt.Sprintf(`%s[%d].querySelector('.answer').innerText`, rows, i))
	}
	var ids []string
	for i, wants := range [][]string{
		{"Response\n", "422 Unprocessable Content", "application/problem+json", "Idempotency-Key"},
		{"Response: lost", "after processing", "201 Created", `"object": "payment"`, `"id": "pay_`},
		{"201 Created", "Idempotent-Replayed", "true", `"id": "pay_`, `"amount": 9800`},
		{"201 Created", `"id": "pay_`},
	} {
		d := detail(i)
		for _, w := range wants {
			if !strings.Contains(strings.ToLower(d), strings.ToLower(w)) { // headings are upper-cased by CSS
				t.Errorf("row %d's answer lacks %q:\n%s", i, w, d)
			}
		}
		if i == 2 || i == 3 {
			ids = append(ids, d[strings.Index(d, `"id": "pay_`):][:len(`"id": "pay_`)+24])
		}
	}
	if len(ids) == 2 && ids[0] != ids[1] {
		t.Errorf("the replay shows %s, the first answer %s: a replay is the stored answer", ids[0], ids[1])
	}
	b.noConsoleErrors(t, nil)
}

// The collections panel browses a collection: its items a page at a
// time, and one item's body whole.
func TestBrowserCollectionItems(t *testing.T) {
	m := startPayments(t)
	b := newBrowser(t)
	b.open(t, m)
	for i := range 25 {
		if got := m.pay(t, fmt.Sprintf("key-%02d", i), fmt.Sprintf(`{"amount": %d, "currency": "eur"}`, 100+i)); got != 201 {
			t.Fatalf("payment %d: %d", i, got)
		}
	}
	_, raw := m.call(t, "GET", "/__admin/collections/payments?limit=100", "")
	var all struct {
		Items []struct {
			ID   string
			Body json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(raw), &all); err != nil || len(all.Items) != 25 {
		t.Fatalf("GET /__admin/collections/payments: %v %s", err, raw)
	}
	b.until(t, "the payments collection", `document.querySelector('#coll-rows tr.coll[data-name="payments"]')?.children[1].textContent === '25'`)
	b.do(t, "open payments", chromedp.Click(chromedp.CSS(`#coll-rows tr.coll[data-name="payments"]`)))
	b.until(t, "the first page", `document.getElementById('coll-range').textContent === 'items 1–20 of 25'`)
	page := func() []string {
		return eval[[]string](t, b, `[...document.querySelectorAll('#coll-items tr')].map(r => r.dataset.id)`)
	}
	want := func(from, to int) string {
		var ids []string
		for _, it := range all.Items[from:to] {
			ids = append(ids, it.ID)
		}
		return strings.Join(ids, ",")
	}
	if got := strings.Join(page(), ","); got != want(0, 20) {
		t.Errorf("first page %s, want %s", got, want(0, 20))
	}
	if eval[bool](t, b, `!document.getElementById('coll-prev').disabled`) {
		t.Error("Previous is enabled on the first page")
	}
	b.do(t, "next page", chromedp.Click(chromedp.ID("coll-next")))
	b.until(t, "the second page", `document.getElementById('coll-range').textContent === 'items 21–25 of 25'`)
	if got := strings.Join(page(), ","); got != want(20, 25) {
		t.Errorf("second page %s, want %s", got, want(20, 25))
	}
	if eval[bool](t, b, `!document.getElementById('coll-next').disabled`) {
		t.Error("Next is enabled on the last page")
	}
	last := all.Items[24]
	b.do(t, "open the last item", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#coll-items tr[data-id=%q]`, last.ID))))
	b.until(t, "the item", `!document.getElementById('coll-item').hidden`)
	shown := eval[string](t, b, `document.getElementById('coll-item-body').textContent`)
	var got, stored map[string]any
	if err := json.Unmarshal([]byte(shown), &got); err != nil {
		t.Fatalf("item body %q: %v", shown, err)
	}
	_ = json.Unmarshal(last.Body, &stored)
	if fmt.Sprint(got) != fmt.Sprint(stored) || got["amount"] != float64(124) {
		t.Errorf("item shown %v, stored %v", got, stored)
	}
	b.do(t, "back", chromedp.Click(chromedp.ID("coll-prev")))
	b.until(t, "the first page again", `document.getElementById('coll-range').textContent === 'items 1–20 of 25'`)
	b.noConsoleErrors(t, nil)
}

// At 1,400 px wide (newBrowser's window) a long route name is shown
// whole: it had a column of about 150 px and was cut with an ellipsis.
func TestBrowserLongRouteName(t *testing.T) {
	const long = "create a payment with an idempotency key, a webhook and a lost answer"
	m := startMock(t, server.Options{}, map[string]string{"long.yaml": `routes:
  - name: ` + long + `
    method: POST
    path: /v1/payment_intents/{intent}/confirm_with_a_long_segment
    respond: { status: 200 }
  - name: short
    path: /short
    respond: { status: 200 }
`})
	b := newBrowser(t)
	b.open(t, m)
	if w := eval[int](t, b, `window.innerWidth`); w != 1400 {
		t.Fatalf("window %d px wide, want 1400", w)
	}
	b.until(t, "the long route", routeRow(long)+` !== undefined`)
	got := eval[[]int](t, b, `(() => { const n = `+routeRow(long)+`.querySelector('.name'); return [n.scrollWidth, n.clientWidth]; })()`)
	if got[0] > got[1] {
		t.Errorf("the long name is cut: %d px of text in %d px", got[0], got[1])
	}
	b.noConsoleErrors(t, nil)
}
