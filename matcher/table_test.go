package matcher

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/scenarios"
)

func compile(t testing.TB, yaml string) *Table {
	t.Helper()
	set, err := scenarios.LoadBytes("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	tab, err := Compile(set)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return tab
}

type req struct {
	method, target, body string
	headers              map[string]string
}

func (r req) build() *Request {
	method := r.method
	if method == "" {
		method = http.MethodGet
	}
	h := httptest.NewRequest(method, r.target, strings.NewReader(r.body))
	for k, v := range r.headers {
		h.Header.Add(k, v)
	}
	return NewRequest(h, []byte(r.body))
}

func matchName(t *Table, r req) string {
	m, ok := t.Match(r.build())
	if !ok {
		return ""
	}
	return m.Route.Name
}

const conditionScenarios = `
routes:
  - name: exact header
    path: /h
    when: { headers: { x-mode: live } }
    respond: {}
  - name: regex header
    path: /h
    when: { headers: { X-Mode: { regex: "^test-[0-9]+$" } } }
    respond: {}
  - name: oneOf header
    path: /h
    when: { headers: { X-Mode: { oneOf: [a, b] } } }
    respond: {}
  - name: contains header
    path: /h
    when: { headers: { X-Mode: { contains: sandbox } } }
    respond: {}
  - name: absent header
    path: /h
    when: { headers: { X-Mode: { absent: true } } }
    respond: {}
  - name: present header
    path: /h
    when: { headers: { X-Mode: { present: true } } }
    respond: {}
  - name: host
    path: /host
    when: { headers: { Host: api.example.test } }
    respond: {}
  - name: query
    path: /q
    when: { query: { page: "2", sort: { oneOf: [asc, desc] }, debug: { absent: true } } }
    respond: {}
  - name: json body
    method: POST
    path: /b
    when: { body: { json: { currency: JPY, amount: 9800, meta: { tags: [vip] } } } }
    respond: {}
  - name: raw equals body
    method: POST
    path: /b
    when: { body: { equals: "ping" } }
    respond: {}
  - name: raw regex body
    method: POST
    path: /b
    when: { body: { regex: "^<xml" } }
    respond: {}
  - name: raw contains body
    method: POST
    path: /b
    when: { body: { contains: "needle" } }
    respond: {}
  - name: scalar body
    method: POST
    path: /b
    when: { body: "exactly this" }
    respond: {}
  - name: json array element
    method: POST
    path: /arr
    when: { body: { json: [{ sku: B }] } }
    respond: {}
  - name: any method var
    path: /items/{n:[0-9]+}
    respond: {}
  - name: get only
    method: [GET, HEAD]
    path: /m
    respond: {}
`

func TestConditionKinds(t *testing.T) {
	t.Parallel()
	tab := compile(t, conditionScenarios)
	cases := []struct {
		name string
		req  req
		want string // route name; "" for no match
	}{
		{"exact header, any case of name", req{target: "/h", headers: map[string]string{"X-MODE": "live"}}, "exact header"},
		{"exact header is case-sensitive in value", req{target: "/h", headers: map[string]string{"X-Mode": "LIVE"}}, "present header"},
		{"regex header", req{target: "/h", headers: map[string]string{"X-Mode": "test-42"}}, "regex header"},
		{"regex anchored", req{target: "/h", headers: map[string]string{"X-Mode": "test-42x"}}, "present header"},
		{"oneOf header", req{target: "/h", headers: map[string]string{"x-mode": "b"}}, "oneOf header"},
		{"contains header", req{target: "/h", headers: map[string]string{"X-Mode": "my-sandbox-1"}}, "contains header"},
		{"absent header", req{target: "/h"}, "absent header"},
		{"host header", req{target: "http://api.example.test/host"}, "host"},
		{"other host", req{target: "http://other.test/host"}, ""},
		{"query all hold", req{target: "/q?page=2&sort=asc"}, "query"},
		{"query wrong value", req{target: "/q?page=3&sort=asc"}, ""},
		{"query must be absent", req{target: "/q?page=2&sort=asc&debug=1"}, ""},
		{"query missing", req{target: "/q?sort=asc"}, ""},
		{"partial json with extra fields", req{method: "POST", target: "/b", body: `{"amount":9800.0,"currency":"JPY","meta":{"tags":["new","vip"],"x":1},"extra":true}`}, "json body"},
		{"json number compared by value", req{method: "POST", target: "/b", body: `{"amount":9.8e3,"currency":"JPY","meta":{"tags":["vip"]}}`}, "json body"},
		{"json wrong value", req{method: "POST", target: "/b", body: `{"amount":9800,"currency":"USD","meta":{"tags":["vip"]}}`}, ""},
		{"json missing nested", req{method: "POST", target: "/b", body: `{"amount":9800,"currency":"JPY","meta":{}}`}, ""},
		{"malformed json does not match, does not crash", req{method: "POST", target: "/b", body: `{"amount":`}, ""},
		{"raw equals", req{method: "POST", target: "/b", body: "ping"}, "raw equals body"},
		{"raw regex", req{method: "POST", target: "/b", body: "<xml/>"}, "raw regex body"},
		{"raw contains", req{method: "POST", target: "/b", body: "hay needle hay"}, "raw contains body"},
		{"scalar body is equals", req{method: "POST", target: "/b", body: "exactly this"}, "scalar body"},
		{"json array element anywhere", req{method: "POST", target: "/arr", body: `[{"sku":"A"},{"sku":"B","n":2}]`}, "json array element"},
		{"json array without element", req{method: "POST", target: "/arr", body: `[{"sku":"A"}]`}, ""},
		{"path var regex", req{method: "DELETE", target: "/items/42"}, "any method var"},
		{"path var regex fails", req{target: "/items/4x"}, ""},
		{"method list", req{method: "HEAD", target: "/m"}, "get only"},
		{"method not in list", req{method: "POST", target: "/m"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := matchName(tab, c.req); got != c.want {
				t.Errorf("matched %q, want %q", got, c.want)
			}
		})
	}
}

func TestMultiValuedHeader(t *testing.T) {
	t.Parallel()
	tab := compile(t, `
routes:
  - { name: any value, path: /h, when: { headers: { Accept: application/json } }, respond: {} }
`)
	r := req{target: "/h"}.build()
	r.HTTP.Header["Accept"] = []string{"text/html", "application/json"}
	if m, ok := tab.Match(r); !ok || m.Route.Name != "any value" {
		t.Error("a condition should hold when any of a header's values satisfies it")
	}
}

func TestPriorityAndOrder(t *testing.T) {
	t.Parallel()
	tab := compile(t, `
routes:
  - { name: general, path: "/p/{id}", respond: {} }
  - { name: specific, path: /p/special, respond: {} }
  - { name: urgent, path: "/p/{id}", priority: 10, when: { headers: { X-Urgent: "1" } }, respond: {} }
`)
	cases := []struct {
		r    req
		want string
	}{
		{req{target: "/p/special"}, "general"}, // file order: the general route comes first
		{req{target: "/p/special", headers: map[string]string{"X-Urgent": "1"}}, "urgent"},
		{req{target: "/p/1"}, "general"},
	}
	for _, c := range cases {
		if got := matchName(tab, c.r); got != c.want {
			t.Errorf("%s %v: matched %q, want %q", c.r.target, c.r.headers, got, c.want)
		}
	}
	var order []string
	for _, r := range tab.Routes() {
		order = append(order, r.Name)
	}
	if strings.Join(order, ",") != "urgent,general,specific" {
		t.Errorf("match order = %v", order)
	}
}

// TestConcreteFirst: a route serving an OpenAPI operation whose path is
// a written operation route's with a variable made concrete is tried
// before it (GET /v1/customers/search before GET /v1/customers/{customer});
// a route without an operation, or of another method, keeps file order.
func TestConcreteFirst(t *testing.T) {
	t.Parallel()
	set, err := scenarios.LoadBytes("test.yaml", []byte(`
routes:
  - { name: written, method: GET, path: "/v1/customers/{customer}", respond: {} }
  - { name: plain, method: GET, path: /v1/customers/plain, respond: {} }
  - { name: search, method: GET, path: /v1/customers/search, respond: {} }
  - { name: post, method: POST, path: /v1/customers/other, respond: {} }
  - { name: deeper, method: GET, path: "/v1/customers/{customer}/sources", respond: {} }
  - { name: generated, method: GET, path: "/v1/customers/{customer}", respond: {} }
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range set.Routes() {
		switch r.Name {
		case "written":
			r.Operation, r.OperationName = 1, "generated"
		case "search", "post", "deeper", "generated":
			r.Operation = 1
		}
	}
	tab, err := Compile(set)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range tab.Routes() {
		order = append(order, r.Name)
	}
	if got := strings.Join(order, ","); got != "search,written,plain,post,deeper,generated" {
		t.Errorf("match order = %s", got)
	}
	for target, want := range map[string]string{"/v1/customers/search": "search", "/v1/customers/plain": "written", "/v1/customers/cus_1": "written"} {
		if got := matchName(tab, req{method: "GET", target: target}); got != want {
			t.Errorf("GET %s: matched %q, want %q", target, got, want)
		}
	}
}

func TestVars(t *testing.T) {
	t.Parallel()
	tab := compile(t, `routes: [{ path: "/orgs/{org}/items/{n:[0-9]+}.json", respond: {} }]`)
	m, ok := tab.Match(req{target: "/orgs/acme/items/7.json"}.build())
	if !ok || m.Vars["org"] != "acme" || m.Vars["n"] != "7" || len(m.Vars) != 2 {
		t.Fatalf("match = %v %v", ok, m.Vars)
	}
}

func TestExplain(t *testing.T) {
	t.Parallel()
	tab := compile(t, `
routes:
  - name: payment without key
    method: POST
    path: /payments
    when: { headers: { Idempotency-Key: { absent: true } } }
    respond: {}
  - name: payment created
    method: POST
    path: /payments
    when: { headers: { Idempotency-Key: { present: true }, Content-Type: application/json }, body: { json: { currency: JPY } } }
    respond: {}
  - name: payment found
    method: GET
    path: /payments/{id}
    respond: {}
  - name: health
    path: /healthz
    respond: {}
`)
	cases := []struct {
		name string
		req  req
		want []string
	}{
		{
			"condition fails", req{method: "POST", target: "/payments", body: `{"currency":"USD"}`, headers: map[string]string{"Idempotency-Key": "k1", "Content-Type": "application/json"}},
			[]string{
				`payment created: body json.currency is "USD", want "JPY"`,
				`payment without key: header Idempotency-Key is present ("k1"), want absent`,
				`payment found: path /payments does not match /payments/{id}`,
			},
		},
		{
			"header value", req{method: "POST", target: "/payments", headers: map[string]string{"Idempotency-Key": "k1", "Content-Type": "text/plain"}},
			[]string{
				`payment created: header Content-Type is "text/plain", want = "application/json"`,
				`payment without key: header Idempotency-Key is present ("k1"), want absent`,
				`payment found: path /payments does not match /payments/{id}`,
			},
		},
		{
			"not json", req{method: "POST", target: "/payments", body: "amount=1", headers: map[string]string{"Idempotency-Key": "k1", "Content-Type": "application/json"}},
			[]string{`payment created: body is not JSON (invalid character 'a' looking for beginning of value)`},
		},
		{
			"method", req{method: "DELETE", target: "/payments/pay_1"},
			[]string{`payment found: method is DELETE, want GET`},
		},
		{
			"typo in path", req{target: "/helthz"},
			[]string{`health: path /helthz does not match /healthz`},
		},
		{
			"one route per path when the path fails", req{method: "POST", target: "/paymentz"},
			[]string{
				`payment without key: path /paymentz does not match /payments`,
				`payment found: path /paymentz does not match /payments/{id}`,
				`health: path /paymentz does not match /healthz`,
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			in := c.req.build()
			if _, ok := tab.Match(in); ok {
				t.Fatal("request matched; the case needs a miss")
			}
			got := tab.Explain(in)
			for i, w := range c.want {
				if i >= len(got) {
					t.Fatalf("only %d near misses, want %q next", len(got), w)
				}
				if g := got[i].Route + ": " + got[i].Reason; g != w {
					t.Errorf("near miss %d = %q\nwant %q", i, g, w)
				}
			}
		})
	}
}

// TestIndexAgreesWithScan builds random route sets and random requests and
// checks that the indexed Match picks exactly the route a plain scan in
// match order picks.
func TestIndexAgreesWithScan(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	segs := []string{"a", "b", "payments", "{id}", "{n:[0-9]+}", "x{v}", ""}
	reqSegs := []string{"a", "b", "payments", "1", "42", "xy", "", "zz"}
	matched := 0
	for round := 0; round < 200; round++ {
		var b strings.Builder
		b.WriteString("routes:\n")
		n := 1 + rng.IntN(30)
		for i := 0; i < n; i++ {
			depth := 1 + rng.IntN(3)
			path := ""
			used := map[string]bool{}
			for d := 0; d < depth; d++ {
				s := segs[rng.IntN(len(segs))]
				if strings.Contains(s, "{") {
					name := fmt.Sprintf("v%d", d)
					s = strings.Replace(strings.Replace(s, "{id}", "{"+name+"}", 1), "{n:", "{"+name+":", 1)
					s = strings.Replace(s, "{v}", "{"+name+"}", 1)
					if used[name] {
						continue
					}
					used[name] = true
				}
				path += "/" + s
			}
			method := []string{"GET", "POST", "ANY"}[rng.IntN(3)]
			fmt.Fprintf(&b, "  - { path: %q, method: %s, priority: %d, respond: {} }\n", path, method, rng.IntN(3))
		}
		tab := compile(t, b.String())
		for k := 0; k < 50; k++ {
			depth := 1 + rng.IntN(3)
			path := ""
			for d := 0; d < depth; d++ {
				path += "/" + reqSegs[rng.IntN(len(reqSegs))]
			}
			method := []string{"GET", "POST", "PUT"}[rng.IntN(3)]
			in := req{method: method, target: path}.build()
			want := ""
			for _, r := range tab.Routes() {
				if _, ok := r.matchPath(path); ok && r.methodOK(method) {
					want = r.Name
					break
				}
			}
			got := ""
			if m, ok := tab.Match(in); ok {
				got = m.Route.Name
				matched++
			}
			if got != want {
				t.Fatalf("round %d: %s %s matched %q, a scan finds %q\nroutes:\n%s", round, method, path, got, want, b.String())
			}
		}
	}
	if matched < 1000 {
		t.Errorf("only %d of 10000 random requests matched: the test is not exercising the index", matched)
	}
	t.Logf("%d of 10000 random requests matched", matched)
}

func TestAttribute(t *testing.T) {
	t.Parallel()
	in := req{method: "POST", target: "/x?k=q1", body: `{"customer":{"id":"cus_1","n":7,"tags":["a"]},"list":[{"id":"e0"}]}`, headers: map[string]string{"Idempotency-Key": "abc"}}.build()
	vars := map[string]string{"id": "p1"}
	cases := []struct {
		attr scenarios.Attribute
		want string
		ok   bool
	}{
		{scenarios.Attribute{Kind: scenarios.HeaderAttr, Name: "Idempotency-Key"}, "abc", true},
		{scenarios.Attribute{Kind: scenarios.HeaderAttr, Name: "X-None"}, "", false},
		{scenarios.Attribute{Kind: scenarios.QueryAttr, Name: "k"}, "q1", true},
		{scenarios.Attribute{Kind: scenarios.PathAttr, Name: "id"}, "p1", true},
		{scenarios.Attribute{Kind: scenarios.BodyAttr, Path: []string{"customer", "id"}}, "cus_1", true},
		{scenarios.Attribute{Kind: scenarios.BodyAttr, Path: []string{"customer", "n"}}, "7", true},
		{scenarios.Attribute{Kind: scenarios.BodyAttr, Path: []string{"customer", "tags"}}, `["a"]`, true},
		{scenarios.Attribute{Kind: scenarios.BodyAttr, Path: []string{"list", "0", "id"}}, "e0", true},
		{scenarios.Attribute{Kind: scenarios.BodyAttr, Path: []string{"list", "9"}}, "", false},
	}
	for _, c := range cases {
		got, ok := in.Attribute(&c.attr, vars)
		if got != c.want || ok != c.ok {
			t.Errorf("%s = %q, %v; want %q, %v", c.attr.String(), got, ok, c.want, c.ok)
		}
	}
}

// TestFormConditionsCachedApart: two routes whose body conditions are
// form fields only must not share a remembered outcome (their cache key
// once held the raw and JSON parts alone), and a form failure, the
// fourth body outcome, must not spill into the next condition's
// remembered slot (it did: the lost-answer route of the Stripe example,
// whose header condition comes next, then matched a request without the
// header).
func TestFormConditionsCachedApart(t *testing.T) {
	t.Parallel()
	tab := compile(t, `
routes:
  - { name: card, method: POST, path: /pay, priority: 2, when: { body: { form: { pm: declined } } }, respond: {} }
  - { name: number, method: POST, path: /pay, priority: 2, when: { body: { form: { number: "4000000000000002" } } }, respond: {} }
  - { name: lost, method: POST, path: /pay, priority: 1, when: { headers: { Idempotency-Key: { regex: "^lost-" } } }, respond: {} }
  - { name: pay, method: POST, path: /pay, respond: {} }
`)
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	for _, tc := range []struct{ name, body, want string }{
		{"the second form condition holds", "number=4000000000000002", "number"},
		{"no form condition holds, no key", "amount=1", "pay"},
		{"the first holds", "pm=declined", "card"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := matchName(tab, req{method: "POST", target: "/pay", body: tc.body, headers: form}); got != tc.want {
				t.Errorf("matched %q, want %q", got, tc.want)
			}
		})
	}
}

// TestNotRegex: notRegex holds for a value it does not match, and not for
// an absent one; with regex, both must hold. The Stripe example answers
// any Authorization but a test key's with its 401 this way.
func TestNotRegex(t *testing.T) {
	t.Parallel()
	tab := compile(t, `
routes:
  - name: invalid key
    path: /v1/x
    priority: 1
    when: { headers: { Authorization: { notRegex: '^Bearer sk_test_' } } }
    respond: {}
  - name: odd test key
    path: /v1/y
    when: { headers: { Authorization: { regex: '^Bearer ', notRegex: '_test_' } } }
    respond: {}
  - { name: served, path: '/v1/{p}', respond: {} }
`)
	for _, tc := range []struct{ path, auth, want string }{
		{"/v1/x", "Bearer sk_live_1", "invalid key"},
		{"/v1/x", "Bearer sk_test_1", "served"},
		{"/v1/x", "", "served"}, // absent: notRegex needs a value
		{"/v1/y", "Bearer sk_live_1", "odd test key"},
		{"/v1/y", "Bearer sk_test_1", "served"},
		{"/v1/y", "Basic sk_live_1", "served"},
	} {
		h := map[string]string{}
		if tc.auth != "" {
			h["Authorization"] = tc.auth
		}
		if got := matchName(tab, req{target: tc.path, headers: h}); got != tc.want {
			t.Errorf("%s with %q: matched %q, want %q", tc.path, tc.auth, got, tc.want)
		}
	}
	if got := tab.Routes()[0].When.Describe(); len(got) != 1 || got[0] != `header Authorization does not match /^Bearer sk_test_/` {
		t.Errorf("described as %q", got)
	}
}
