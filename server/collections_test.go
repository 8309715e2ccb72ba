package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/scenarios"
)

const paymentsScenario = `
collections:
  customers:
    - { id: cus_1, name: Ada }
    - { id: cus_2, name: Grace }
routes:
  - name: create payment
    method: POST
    path: /v1/payments
    respond:
      status: 201
      template: true
      body: { id: 'pay_{{ .Request.JSON.n }}', amount: '{{ .Request.JSON.amount }}', status: succeeded }
      save: { collection: payments, id: '{{ .Response.JSON.id }}' }
  - name: get payment
    method: GET
    path: /v1/payments/{id}
    respond:
      load: { collection: payments, id: '{{ .Request.Vars.id }}' }
  - name: list payments
    method: GET
    path: /v1/payments
    respond:
      list: { collection: payments }
  - name: list customers, Stripe style
    method: GET
    path: /v1/customers
    respond:
      template: true
      body: '{"object":"list","data":{{ json .Items }},"has_more":false,"url":"{{ .Request.Path }}"}'
      list: { collection: customers }
  - name: list payments, paged
    method: GET
    path: /v2/payments
    respond:
      template: true
      list: { collection: payments, paged: true }
      body: '{"object":"list","data":{{ json .Items }},"has_more":{{ .HasMore }}}'
  - name: list payments, newest first
    method: GET
    path: /v3/payments
    respond:
      template: true
      list: { collection: payments, paged: true, newest: true }
      body: '{"object":"list","data":{{ json .Items }},"has_more":{{ .HasMore }}}'
  - name: delete payment
    method: DELETE
    path: /v1/payments/{id}
    respond:
      template: true
      body: { id: '{{ .Item.id }}', object: payment, deleted: true }
      delete: { collection: payments, id: '{{ .Request.Vars.id }}' }
      missing: { status: 404, template: true, body: { error: { type: invalid_request_error, message: 'No such payment: {{ .Request.Vars.id }}' } } }
  - name: delete customer
    method: DELETE
    path: /v1/customers/{id}
    respond:
      status: 204
      delete: { collection: customers, id: '{{ .Request.Vars.id }}' }
  - name: get customer
    method: GET
    path: /v1/customers/{id}
    missing: { status: 404, body: { error: no such customer } }
    respond:
      load: { collection: customers, id: '{{ .Request.Vars.id }}' }
  - name: idempotent charge
    method: POST
    path: /v1/charges
    idempotency: { key: header.Idempotency-Key }
    responses:
      - { status: 500, template: true, body: { id: 'ch_{{ .Call }}' }, save: { collection: charges, id: 'ch_{{ .Call }}' } }
      - { status: 201, template: true, body: { id: 'ch_{{ .Call }}', n: '{{ randomInt 5 1 }}' }, save: { collection: charges, id: 'ch_{{ .Call }}' } }
      - { fault: connection-reset }
      - { status: 201, template: true, body: { id: 'ch_{{ .Call }}' }, save: { collection: charges, id: 'ch_{{ .Call }}' } }
  - name: refund
    method: POST
    path: /v1/refunds
    idempotency: { key: header.Idempotency-Key }
    respond: { status: 201, template: true, body: { id: 're_{{ .Call }}' }, save: { collection: refunds, id: '{{ .Response.JSON.id }}' } }
  - name: list charges
    method: GET
    path: /v1/charges
    respond: { list: { collection: charges } }
`

func TestCollectionsLifecycle(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, paymentsScenario)
	created := do(t, "POST", hs.URL+"/v1/payments", `{"n":1,"amount":100}`, "Content-Type", jsonCT)
	const want1 = `{"id":"pay_1","amount":100,"status":"succeeded"}`
	if created.status != 201 || created.body != want1 {
		t.Fatalf("create: %d %s", created.status, created.body)
	}
	do(t, "POST", hs.URL+"/v1/payments", `{"n":2,"amount":200}`, "Content-Type", jsonCT)
	got := do(t, "GET", hs.URL+"/v1/payments/pay_1", "")
	if got.status != 200 || got.body != want1 || got.header.Get("Content-Type") != jsonCT {
		t.Errorf("load: %d %q %v", got.status, got.body, got.header)
	}
	list := do(t, "GET", hs.URL+"/v1/payments", "")
	if list.status != 200 || list.body != `[`+want1+`,{"id":"pay_2","amount":200,"status":"succeeded"}]` {
		t.Errorf("list: %d %s", list.status, list.body)
	}
	del := do(t, "DELETE", hs.URL+"/v1/payments/pay_1", "")
	if del.status != 200 || del.body != `{"id":"pay_1","object":"payment","deleted":true}` {
		t.Errorf("delete: %d %s", del.status, del.body)
	}
	gone := do(t, "GET", hs.URL+"/v1/payments/pay_1", "")
	if gone.status != 404 || gone.header.Get("Content-Type") != "application/problem+json" ||
		!strings.Contains(gone.body, `No item \"pay_1\" in collection \"payments\".`) {
		t.Errorf("load after delete: %d %s", gone.status, gone.body)
	}
	again := do(t, "DELETE", hs.URL+"/v1/payments/pay_1", "")
	if again.status != 404 || again.body != `{"error":{"type":"invalid_request_error","message":"No such payment: pay_1"}}` {
		t.Errorf("second delete (own missing answer): %d %s", again.status, again.body)
	}
	if l := do(t, "GET", hs.URL+"/v1/payments", ""); l.body != `[{"id":"pay_2","amount":200,"status":"succeeded"}]` {
		t.Errorf("list after delete: %s", l.body)
	}
	// Saving the same id again replaces the item in place.
	do(t, "POST", hs.URL+"/v1/payments", `{"n":2,"amount":250}`, "Content-Type", jsonCT)
	if l := do(t, "GET", hs.URL+"/v1/payments", ""); l.body != `[{"id":"pay_2","amount":250,"status":"succeeded"}]` {
		t.Errorf("list after replacing: %s", l.body)
	}
}

func TestCollectionsSeedListAndReset(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, paymentsScenario)
	const seeded = `{"object":"list","data":[{"id":"cus_1","name":"Ada"},{"id":"cus_2","name":"Grace"}],"has_more":false,"url":"/v1/customers"}`
	if l := do(t, "GET", hs.URL+"/v1/customers", ""); l.status != 200 || l.body != seeded {
		t.Fatalf("seeded list: %d %s", l.status, l.body)
	}
	if d := do(t, "DELETE", hs.URL+"/v1/customers/cus_1", ""); d.status != 204 || d.body != "" || d.header.Get("Content-Type") != "" {
		t.Errorf("delete 204: %d %q", d.status, d.body)
	}
	if g := do(t, "GET", hs.URL+"/v1/customers/cus_1", ""); g.status != 404 || g.body != `{"error":"no such customer"}` {
		t.Errorf("deleted seed (the route's missing answer): %d %s", g.status, g.body)
	}
	do(t, "POST", hs.URL+"/v1/payments", `{"n":1,"amount":100}`, "Content-Type", jsonCT)
	if r := do(t, "POST", hs.URL+"/__admin/reset", ""); r.status != 200 {
		t.Fatalf("reset: %d %s", r.status, r.body)
	}
	if l := do(t, "GET", hs.URL+"/v1/customers", ""); l.body != seeded {
		t.Errorf("after reset, the seed is back: %s", l.body)
	}
	if l := do(t, "GET", hs.URL+"/v1/payments", ""); l.body != `[]` {
		t.Errorf("after reset, no payments: %s", l.body)
	}
}

// TestCollectionsSaveOncePerAnswer: on an idempotent route, an item is
// saved with the stored answer: not by a 5xx, a template failure or a
// fault (all released), and not again by a replay.
func TestCollectionsSaveOncePerAnswer(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, paymentsScenario)
	charge := func(key string) response {
		return do(t, "POST", hs.URL+"/v1/charges", `{}`, "Content-Type", jsonCT, "Idempotency-Key", key)
	}
	if r := charge("k1"); r.status != 500 {
		t.Fatalf("first: %d %s", r.status, r.body)
	}
	if r := charge("k1"); r.status != 500 || !strings.Contains(r.body, "randomInt") {
		t.Fatalf("second (template failure): %d %s", r.status, r.body)
	}
	req, _ := http.NewRequest("POST", hs.URL+"/v1/charges", strings.NewReader(`{}`))
	req.Header["idempotency-key"] = []string{"k1"} // see TestIdempotencyReleased
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("fault: got %d", resp.StatusCode)
	}
	if l := do(t, "GET", hs.URL+"/v1/charges", ""); l.body != `[]` {
		t.Fatalf("released answers saved: %s", l.body)
	}
	first := charge("k1")
	if first.status != 201 || first.body != `{"id":"ch_4"}` {
		t.Fatalf("fourth: %d %s", first.status, first.body)
	}
	for range 3 {
		if r := charge("k1"); r.body != first.body || r.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %d %s %v", r.status, r.body, r.header)
		}
	}
	if l := do(t, "GET", hs.URL+"/v1/charges", ""); l.body != `[{"id":"ch_4"}]` {
		t.Errorf("after replays: %s", l.body)
	}
}

func TestCollectionsFull(t *testing.T) {
	t.Parallel()
	// Two seeded customers leave room for one payment.
	_, hs, _ := serveYAML(t, Options{MaxCollectionItems: 3}, paymentsScenario)
	if r := do(t, "POST", hs.URL+"/v1/payments", `{"n":1}`, "Content-Type", jsonCT); r.status != 201 {
		t.Fatalf("first: %d %s", r.status, r.body)
	}
	r := do(t, "POST", hs.URL+"/v1/payments", `{"n":2}`, "Content-Type", jsonCT)
	if r.status != 507 || r.header.Get("Content-Type") != "application/problem+json" || !strings.Contains(r.body, "--max-collection-items") {
		t.Fatalf("past the bound: %d %s", r.status, r.body)
	}
	if l := do(t, "GET", hs.URL+"/v1/payments", ""); l.body != `[{"id":"pay_1","amount":null,"status":"succeeded"}]` {
		t.Errorf("after 507: %s", l.body)
	}
	// Replacing an item needs no room.
	if r := do(t, "POST", hs.URL+"/v1/payments", `{"n":1,"amount":5}`, "Content-Type", jsonCT); r.status != 201 {
		t.Errorf("replace at the bound: %d %s", r.status, r.body)
	}
	// A 507 on an idempotent route releases the key: the retry runs the
	// route again once there is room, rather than replaying the 507.
	refund := func() response {
		return do(t, "POST", hs.URL+"/v1/refunds", `{}`, "Content-Type", jsonCT, "Idempotency-Key", "r1")
	}
	if r := refund(); r.status != 507 {
		t.Fatalf("idempotent save past the bound: %d %s", r.status, r.body)
	}
	do(t, "DELETE", hs.URL+"/__admin/collections/payments", "")
	if r := refund(); r.status != 201 || r.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("retry after 507: %d %s %v", r.status, r.body, r.header)
	}
}

func TestCollectionsReload(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.yaml")
	write := func(content string) {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(paymentsScenario)
	s, hs, _ := newTestServer(t, Options{Load: func() (*scenarios.Set, error) { return scenarios.Load(path) }})
	do(t, "POST", hs.URL+"/v1/payments", `{"n":1,"amount":100}`, "Content-Type", jsonCT)
	do(t, "DELETE", hs.URL+"/v1/customers/cus_2", "")
	do(t, "DELETE", hs.URL+"/v1/customers/cus_1", "")
	// A reload that leaves the seed alone keeps what the run did.
	write(paymentsScenario + "\n  - { name: extra, path: /extra, respond: { status: 200 } }\n")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if g := do(t, "GET", hs.URL+"/v1/payments/pay_1", ""); g.status != 200 {
		t.Errorf("payment lost at reload: %d %s", g.status, g.body)
	}
	if l := do(t, "GET", hs.URL+"/v1/customers", ""); !strings.Contains(l.body, `"data":[]`) {
		t.Errorf("deleted seeds came back at a reload that did not change them: %s", l.body)
	}
	// A reload that changes the seed saves the seeded items again; items
	// created at run time stay.
	write(strings.Replace(paymentsScenario, "name: Grace", "name: Hopper", 1))
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if l := do(t, "GET", hs.URL+"/v1/customers", ""); !strings.Contains(l.body, `"data":[{"id":"cus_1","name":"Ada"},{"id":"cus_2","name":"Hopper"}]`) {
		t.Errorf("changed seed: %s", l.body)
	}
	if g := do(t, "GET", hs.URL+"/v1/payments/pay_1", ""); g.status != 200 {
		t.Errorf("payment lost at seed change: %d", g.status)
	}
}

func TestCollectionsAdmin(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, paymentsScenario)
	for i := range 3 {
		do(t, "POST", hs.URL+"/v1/payments", fmt.Sprintf(`{"n":%d}`, i), "Content-Type", jsonCT)
	}
	var counts struct {
		Collections []adminCollection
		Items       int
		MaxItems    int
	}
	r := do(t, "GET", hs.URL+"/__admin/collections", "")
	if err := json.Unmarshal([]byte(r.body), &counts); err != nil || r.status != 200 {
		t.Fatalf("counts: %d %s %v", r.status, r.body, err)
	}
	if fmt.Sprint(counts.Collections) != "[{customers 2} {payments 3}]" || counts.Items != 5 || counts.MaxItems != 100_000 {
		t.Errorf("counts: %s", r.body)
	}
	var page struct {
		Name   string
		Total  int
		Offset int
		Items  []struct {
			ID   string
			Body json.RawMessage
		}
	}
	r = do(t, "GET", hs.URL+"/__admin/collections/payments?offset=1&limit=1", "")
	if err := json.Unmarshal([]byte(r.body), &page); err != nil {
		t.Fatal(err)
	}
	if page.Total != 3 || len(page.Items) != 1 || page.Items[0].ID != "pay_1" || compact(t, page.Items[0].Body) != `{"id":"pay_1","amount":null,"status":"succeeded"}` {
		t.Errorf("page: %s", r.body)
	}
	if r := do(t, "GET", hs.URL+"/__admin/collections/payments?limit=x", ""); r.status != 400 {
		t.Errorf("bad limit: %d", r.status)
	}
	if r := do(t, "POST", hs.URL+"/__admin/collections/payments", ""); r.status != 405 || r.header.Get("Allow") != "GET, DELETE" {
		t.Errorf("405: %d %v", r.status, r.header)
	}
	if r := do(t, "GET", hs.URL+"/__admin/scenarios", ""); !strings.Contains(r.body, `"collection": "save payments"`) || !strings.Contains(r.body, `"collection": "load payments"`) {
		t.Errorf("scenarios listing does not say what responses do with collections: %s", r.body)
	}
	if r := do(t, "DELETE", hs.URL+"/__admin/collections/payments", ""); r.status != 200 || !strings.Contains(r.body, `"deleted": 3`) {
		t.Errorf("delete one: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", hs.URL+"/v1/customers/cus_1", ""); r.status != 200 {
		t.Errorf("another collection emptied: %d", r.status)
	}
	if r := do(t, "DELETE", hs.URL+"/__admin/collections", ""); r.status != 200 || !strings.Contains(r.body, `"deleted": 2`) {
		t.Errorf("delete all: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", hs.URL+"/__admin/collections", ""); !strings.Contains(r.body, `"collections": []`) {
		t.Errorf("after delete all: %s", r.body)
	}
}

func compact(t *testing.T, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestCollectionsSeedPastBound: seeds that do not fit fail the first load
// with the file's position, as any scenario problem does.
func TestCollectionsSeedPastBound(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(paymentsScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(Options{MaxCollectionItems: 1, Load: func() (*scenarios.Set, error) { return scenarios.Load(path) }})
	ps := scenarios.Problems(err)
	if len(ps) != 1 || !strings.HasSuffix(ps[0].Error(), `s.yaml:3:3: collections: customers: not seeded: its 2 items would pass the limit of 1 items in all collections (--max-collection-items)`) {
		t.Errorf("New: %v", err)
	}
}

func TestCollectionsPaged(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, paymentsScenario)
	for i := 1; i <= 5; i++ {
		do(t, "POST", hs.URL+"/v1/payments", fmt.Sprintf(`{"n":%d}`, i), "Content-Type", jsonCT)
	}
	for _, tc := range []struct{ path, query, want string }{
		{"/v2/payments", "", "pay_1 pay_2 pay_3 pay_4 pay_5 more=false"},
		{"/v2/payments", "?limit=2", "pay_1 pay_2 more=true"},
		{"/v2/payments", "?limit=2&starting_after=pay_2", "pay_3 pay_4 more=true"},
		{"/v2/payments", "?limit=2&starting_after=pay_4", "pay_5 more=false"},
		{"/v2/payments", "?limit=2&starting_after=pay_5", "more=false"},
		{"/v2/payments", "?limit=2&ending_before=pay_5", "pay_3 pay_4 more=true"},
		{"/v2/payments", "?limit=5&ending_before=pay_3", "pay_1 pay_2 more=false"},
		// newest: true lists as Stripe does: starting_after goes to older
		// items, ending_before to newer ones.
		{"/v3/payments", "", "pay_5 pay_4 pay_3 pay_2 pay_1 more=false"},
		{"/v3/payments", "?limit=2", "pay_5 pay_4 more=true"},
		{"/v3/payments", "?limit=2&starting_after=pay_4", "pay_3 pay_2 more=true"},
		{"/v3/payments", "?limit=2&starting_after=pay_2", "pay_1 more=false"},
		{"/v3/payments", "?limit=2&ending_before=pay_1", "pay_3 pay_2 more=true"},
		{"/v3/payments", "?limit=5&ending_before=pay_3", "pay_5 pay_4 more=false"},
	} {
		r := do(t, "GET", hs.URL+tc.path+tc.query, "")
		var page struct {
			Data []struct {
				ID string
			}
			HasMore bool `json:"has_more"`
		}
		if err := json.Unmarshal([]byte(r.body), &page); err != nil || r.status != 200 {
			t.Errorf("%s%s: %d %s %v", tc.path, tc.query, r.status, r.body, err)
			continue
		}
		var got []string
		for _, it := range page.Data {
			got = append(got, it.ID)
		}
		got = append(got, fmt.Sprint("more=", page.HasMore))
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s%s: got %s, want %s", tc.path, tc.query, strings.Join(got, " "), tc.want)
		}
	}
	for _, q := range []string{"?limit=0", "?limit=101", "?limit=x", "?starting_after=nope", "?starting_after=pay_1&ending_before=pay_3"} {
		if r := do(t, "GET", hs.URL+"/v2/payments"+q, ""); r.status != 400 || r.header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %s", q, r.status, r.body)
		}
	}
}
