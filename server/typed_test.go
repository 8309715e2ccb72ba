package server

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/state"
)

const formCT = "application/x-www-form-urlencoded"

func TestTypedLeaves(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - method: POST
    path: /echo
    respond:
      template: true
      body:
        amount: '{{ .Request.JSON.amount }}'
        big: '{{ .Request.JSON.big }}'
        customer: '{{ .Request.JSON.customer }}'
        items: '{{ .Request.JSON.items }}'
        missing: '{{ .Request.JSON.nope }}'
        null: '{{ .Request.JSON.nothing }}'
        flag: '{{ .Request.JSON.flag }}'
        name: '{{ .Request.JSON.name }}'
        mixed: 'amount {{ .Request.JSON.amount }}'
        spaced: ' {{ .Request.JSON.amount }}'
        quoted: '{{ json .Request.JSON.customer }}'
        call: '{{ .Call }}'
        ifaction: '{{ if .Request.JSON.flag }}{{ .Request.JSON.amount }}{{ end }}'
        nested: { list: ['{{ .Request.JSON.amount }}', 'n{{ .Request.JSON.amount }}'], deep: { c: '{{ .Request.JSON.customer.id }}' } }
`)
	r := do(t, "POST", hs.URL+"/echo",
		`{"amount": 2000, "big": 12345678901234567890.50, "customer": {"z": 1, "id": "cus_1", "a": [1, "<b>"]}, "items": [{"sku": "A"}], "nothing": null, "flag": true, "name": "O\"Brien\n"}`,
		"Content-Type", jsonCT)
	want := `{"amount":2000,"big":12345678901234567890.50,"customer":{"z":1,"id":"cus_1","a":[1,"<b>"]},` +
		`"items":[{"sku":"A"}],"missing":null,"null":null,"flag":true,"name":"O\"Brien\n",` +
		`"mixed":"amount 2000","spaced":" 2000","quoted":"{\"z\":1,\"id\":\"cus_1\",\"a\":[1,\"<b>\"]}",` +
		`"call":1,"ifaction":"2000","nested":{"list":[2000,"n2000"],"deep":{"c":"cus_1"}}}`
	if r.status != 200 || r.body != want {
		t.Fatalf("%d\n got %s\nwant %s", r.status, r.body, want)
	}
	if !json.Valid([]byte(r.body)) {
		t.Errorf("not JSON: %s", r.body)
	}
}

func TestTemplateHelpers(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 23, 0, 0, 0, time.UTC)
	_, hs, _ := serveYAML(t, Options{Clock: fixedClock{at}, Rand: func() float64 { return 0.7 }}, `
routes:
  - method: POST
    path: /charges
    respond:
      template: true
      body:
        id: 'ch_{{ randomHex 24 }}'
        hex: '{{ randomHex 3 }}'
        created: '{{ unix }}'
        amount: '{{ int .Request.Form.amount }}'
        rate: '{{ float .Request.Form.rate }}'
        capture: '{{ bool .Request.Form.capture }}'
        absent: '{{ int .Request.Form.nope }}'
        text: 'amount={{ int .Request.Form.amount }}'
        query: '{{ .Request.Query.Get "page" | int }}'
        json: '{{ int .Request.JSON.n }}'
        now: '{{ .Now }}'
        total: '{{ mul .Request.Form.amount (add 1 (sub .Request.Form.page 1)) }}'
        expires: '{{ add .Now.Unix 86400 }}'
        unknown: '{{ add .Request.Form.nothing 1 }}'
  - method: POST
    path: /bad
    respond:
      template: true
      body: { amount: '{{ int .Request.Form.amount }}' }
  - method: POST
    path: /badbool
    respond:
      template: true
      body: { nested: { capture: '{{ bool .Request.Form.capture }}' } }
  - method: POST
    path: /badmul
    respond:
      template: true
      body: { total: '{{ mul .Request.Form.amount .Request.Form.quantity }}' }
`)
	r := do(t, "POST", hs.URL+"/charges?page=3", "amount=2000&rate=0.25&capture=true&page=3", "Content-Type", formCT)
	want := `{"id":"ch_bbbbbbbbbbbbbbbbbbbbbbbb","hex":"bbb","created":` + "1796252400" +
		`,"amount":2000,"rate":0.25,"capture":true,"absent":null,"text":"amount=2000","query":3,"json":null,"now":"2026-12-02 23:00:00 +0000 UTC",` +
		`"total":6000,"expires":1796338800,"unknown":null}`
	if r.status != 200 || r.body != want {
		t.Fatalf("%d\n got %s\nwant %s", r.status, r.body, want)
	}
	if at.Unix() != 1796252400 {
		t.Fatalf("the expected time is wrong: %d", at.Unix())
	}
	cases := []struct{ name, path, body, want string }{
		{"not an integer", "/bad", "amount=20.00", `route \"POST /bad\": response template failed: body.amount: at <int .Request.Form.amount>: error calling int: \"20.00\" is not an integer`},
		{"not a boolean", "/badbool", "capture=yes", `body.nested.capture: at <bool .Request.Form.capture>: error calling bool: \"yes\" is not a boolean (want true or false)`},
		{"arithmetic of a non-integer", "/badmul", "amount=2000&quantity=x", `body.total: at <mul .Request.Form.amount .Request.Form.quantity>: error calling mul: mul: \"x\" is not an integer`},
		{"arithmetic past int64", "/badmul", "amount=9223372036854775807&quantity=2", `error calling mul: mul: the product passes the range of a 64-bit integer`},
	}
	for _, c := range cases {
		r := do(t, "POST", hs.URL+c.path, c.body, "Content-Type", formCT)
		if r.status != 500 || !strings.Contains(r.body, c.want) || r.header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %s, want a 500 problem with %s", c.name, r.status, r.body, c.want)
		}
	}
}

// stripeBody is a PaymentIntent create as stripe-go v82 encodes it:
// nested parameters with brackets, arrays with indexes.
const stripeBody = "amount=2000&currency=usd&metadata[order_id]=6735&metadata[note]=a+b%26c&expand[0]=customer&expand[1]=payment_method" +
	"&payment_method_types[0]=card&line_items[0][price]=price_1&line_items[0][quantity]=2&line_items[1][price]=price_2" +
	"&tags[]=x&tags[]=y&dup=first&dup=second"

func TestRequestForm(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - method: POST
    path: /v1/payment_intents
    respond:
      template: true
      body:
        object: payment_intent
        amount: '{{ int .Request.Form.amount }}'
        currency: '{{ .Request.Form.currency }}'
        metadata: '{{ .Request.Form.metadata }}'
        order: 'order {{ .Request.Form.metadata.order_id }}'
        expand: '{{ .Request.Form.expand }}'
        second: '{{ index .Request.Form.line_items 1 "price" }}'
        items: '{{ .Request.Form.line_items }}'
        tags: '{{ .Request.Form.tags }}'
        dup: '{{ .Request.Form.dup }}'
        form: '{{ .Request.Form }}'
  - method: POST
    path: /v1/customers
    respond: { template: true, body: { amount: '{{ int .Request.Form.amount }}', form: '{{ .Request.Form }}' } }
`)
	r := do(t, "POST", hs.URL+"/v1/payment_intents", stripeBody, "Content-Type", formCT+"; charset=utf-8")
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	want := map[string]any{
		"object":   "payment_intent",
		"amount":   2000.0,
		"currency": "usd",
		"metadata": map[string]any{"order_id": "6735", "note": "a b&c"},
		"order":    "order 6735",
		"expand":   []any{"customer", "payment_method"},
		"second":   "price_2",
		"items":    []any{map[string]any{"price": "price_1", "quantity": "2"}, map[string]any{"price": "price_2"}},
		"tags":     []any{"x", "y"},
		"dup":      "first",
	}
	for k, v := range want {
		if g, _ := json.Marshal(got[k]); string(g) != mustJSON(t, v) {
			t.Errorf("%s = %s, want %s", k, g, mustJSON(t, v))
		}
	}
	if form, _ := got["form"].(map[string]any); form["currency"] != "usd" || len(form) != 8 {
		t.Errorf("form = %v", got["form"])
	}

	// A body that is not a form has an empty .Request.Form.
	r = do(t, "POST", hs.URL+"/v1/customers", `{"amount":1}`, "Content-Type", jsonCT)
	if r.status != 200 || r.body != `{"amount":null,"form":{}}` {
		t.Errorf("JSON body: %d %s", r.status, r.body)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFormConditions(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - name: usd with order
    method: POST
    path: /v1/charges
    when:
      body:
        form:
          currency: usd
          amount: { regex: '^[0-9]{4,}$' }
          metadata[order_id]: { present: true }
          expand[0]: { oneOf: [customer, balance_transaction] }
          email: { absent: true }
    respond: { status: 201, body: { ok: true } }
`)
	ok := do(t, "POST", hs.URL+"/v1/charges", stripeBody, "Content-Type", formCT)
	if ok.status != 201 {
		t.Fatalf("matching form: %d %s", ok.status, ok.body)
	}
	listing := do(t, "GET", hs.URL+"/__admin/scenarios", "")
	for _, want := range []string{`"body form currency = \"usd\""`, `"body form metadata[order_id] present"`, `"body form email absent"`} {
		if !strings.Contains(listing.body, want) {
			t.Errorf("the admin listing lacks %s: %s", want, listing.body)
		}
	}
	cases := []struct{ name, body, contentType, reason string }{
		{"regex fails", "amount=20&currency=usd&metadata[order_id]=1&expand[0]=customer", formCT,
			`form amount is "20", want matches /^[0-9]{4,}$/`},
		{"absent field", "amount=2000&currency=usd&expand[0]=customer", formCT,
			`form metadata[order_id] is absent`},
		{"present but must be absent", "amount=2000&currency=usd&metadata[order_id]=1&expand[0]=customer&email=a%40b.c", formCT,
			`form email is present ("a@b.c"), want absent`},
		{"equals fails", "amount=2000&currency=eur", formCT, `form currency is "eur", want = "usd"`},
		{"not a form", `{"amount":2000,"currency":"usd"}`, jsonCT,
			`form currency is absent (the body is not a form: Content-Type is "application/json", want application/x-www-form-urlencoded)`},
	}
	for _, c := range cases {
		r := do(t, "POST", hs.URL+"/v1/charges", c.body, "Content-Type", c.contentType)
		if r.status != 404 {
			t.Errorf("%s: %d %s, want 404", c.name, r.status, r.body)
			continue
		}
		var p struct {
			Closest []struct{ Route, Reason string }
		}
		if err := json.Unmarshal([]byte(r.body), &p); err != nil || len(p.Closest) == 0 {
			t.Fatalf("%s: %v %s", c.name, err, r.body)
		}
		if p.Closest[0].Route != "usd with order" || p.Closest[0].Reason != c.reason {
			t.Errorf("%s: closest %+v, want reason %s", c.name, p.Closest[0], c.reason)
		}
	}
}

func TestFormAttributes(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - name: per order
    method: POST
    path: /orders
    sequence: { per: 'form.metadata[order_id]' }
    responses:
      - { status: 201, template: true, body: { call: '{{ .Call }}' } }
      - { status: 200, template: true, body: { call: '{{ .Call }}' } }
  - name: keyed by form
    method: POST
    path: /refunds
    idempotency: { key: form.idempotency_key, fingerprint: [form.amount] }
    respond: { status: 201, template: true, body: { id: 're_{{ randomHex 8 }}', amount: '{{ int .Request.Form.amount }}' } }
`)
	post := func(path, body string) response { return do(t, "POST", hs.URL+path, body, "Content-Type", formCT) }
	for i, c := range []struct {
		body   string
		status int
		want   string
	}{
		{"metadata[order_id]=1", 201, `{"call":1}`},
		{"metadata[order_id]=2&x=1", 201, `{"call":1}`},
		{"x=2&metadata[order_id]=1", 200, `{"call":2}`},
	} {
		if r := post("/orders", c.body); r.status != c.status || r.body != c.want {
			t.Errorf("order call %d: %d %s, want %d %s", i, r.status, r.body, c.status, c.want)
		}
	}

	first := post("/refunds", "idempotency_key=k1&amount=500&note=a")
	// Only form.amount is in the fingerprint: another note is the same request.
	again := post("/refunds", "note=b&amount=500&idempotency_key=k1")
	if first.status != 201 || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay by form key: first %d %s, again %d %s %v", first.status, first.body, again.status, again.body, again.header)
	}
	if mismatch := post("/refunds", "idempotency_key=k1&amount=600"); mismatch.status != 422 {
		t.Errorf("other amount, same key: %d %s, want 422", mismatch.status, mismatch.body)
	}
	if other := post("/refunds", "idempotency_key=k2&amount=500"); other.status != 201 || other.body == first.body {
		t.Errorf("another key: %d %s", other.status, other.body)
	}
}

func TestSeqCounters(t *testing.T) {
	t.Parallel()
	const routes = `
routes:
  - method: POST
    path: /orders
    respond: { status: 201, template: true, body: { id: 'ord_{{ seq "orders" }}', n: '{{ seq "orders" }}', other: '{{ "other" | seq }}' } }
  - method: GET
    path: /next
    respond: { template: true, body: 'next={{ seq "orders" }}%s' }
`
	path := filepath.Join(t.TempDir(), "s.yaml")
	write := func(extra string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(strings.Replace(routes, "%s", extra, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("")
	s, hs, _ := newTestServer(t, Options{}, path)
	check := func(step string, r response, want string) {
		t.Helper()
		if r.body != want {
			t.Errorf("%s: %d %s, want %s", step, r.status, r.body, want)
		}
	}
	check("first", do(t, "POST", hs.URL+"/orders", ""), `{"id":"ord_1","n":2,"other":1}`)
	check("another route", do(t, "GET", hs.URL+"/next", ""), `next=3`)

	write(" (reloaded)") // another route definition: its own sequence restarts, counters do not
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if s.Version() != 2 {
		t.Fatalf("version %d after reload", s.Version())
	}
	check("after reload", do(t, "GET", hs.URL+"/next", ""), `next=4 (reloaded)`)

	list := do(t, "GET", hs.URL+"/__admin/counters", "")
	if list.status != 200 || normalJSON(t, list.body) != `{"counters":[{"name":"orders","value":4},{"name":"other","value":1}],"offset":0,"total":2}` {
		t.Errorf("counters: %d %s", list.status, list.body)
	}
	if r := do(t, "POST", hs.URL+"/__admin/reset", ""); r.status != 200 {
		t.Fatalf("reset: %d %s", r.status, r.body)
	}
	check("after reset", do(t, "POST", hs.URL+"/orders", ""), `{"id":"ord_1","n":2,"other":1}`)
	if r := do(t, "POST", hs.URL+"/__admin/counters", ""); r.status != 405 || r.header.Get("Allow") != "GET" {
		t.Errorf("POST /__admin/counters: %d %v", r.status, r.header)
	}
}

func normalJSON(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return mustJSON(t, v)
}

// brokenCounters is a store whose counters fail, as a remote store's do
// when its connection is lost.
type brokenCounters struct{ *state.Memory }

func (brokenCounters) Counters() state.Counters { return failingCounters{} }

type failingCounters struct{}

var errCountersDown = errors.New("connection refused")

func (failingCounters) Next(context.Context, string) (int64, error)   { return 0, errCountersDown }
func (failingCounters) List(context.Context) ([]state.Counter, error) { return nil, errCountersDown }
func (failingCounters) Reset(context.Context, string) error           { return errCountersDown }

func TestSeqCounterError(t *testing.T) {
	t.Parallel()
	store := brokenCounters{state.NewMemory(state.Options{})}
	t.Cleanup(func() { _ = store.Close() })
	_, hs, _ := serveYAML(t, Options{State: store}, `
routes:
  - method: POST
    path: /orders
    respond: { status: 201, template: true, body: { id: 'ord_{{ seq "orders" }}' } }
`)
	r := do(t, "POST", hs.URL+"/orders", "")
	if r.status != 503 || r.header.Get("Retry-After") == "" || !strings.Contains(r.body, `body.id: the state store did not answer: at <seq $ \"orders\">: error calling seq: connection refused`) {
		t.Errorf("counter down: %d %s, want a 503 problem with Retry-After naming the field and the error", r.status, r.body)
	}
	if r := do(t, "GET", hs.URL+"/__admin/counters", ""); r.status != 503 {
		t.Errorf("GET /__admin/counters with the store down: %d %s, want 503", r.status, r.body)
	}
}
