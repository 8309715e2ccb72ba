package openapi_test

import (
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stripe/stripe-mock/embedded"

	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/server"
)

// stripeFiles writes stripe-mock's copy of Stripe's spec and fixtures
// into a fresh directory.
func stripeFiles(tb testing.TB) (spec, fixtures string) {
	tb.Helper()
	dir := tb.TempDir()
	spec, fixtures = filepath.Join(dir, "spec3.json"), filepath.Join(dir, "fixtures3.json")
	if err := os.WriteFile(spec, embedded.OpenAPISpec, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(fixtures, embedded.OpenAPIFixtures, 0o644); err != nil {
		tb.Fatal(err)
	}
	return spec, fixtures
}

func stripeSet(tb testing.TB, spec, fixtures string, cache *openapi.Cache) (*scenarios.Set, error) {
	set, err := scenarios.LoadBytes("stripe", []byte("routes: []\n"))
	if err != nil {
		tb.Fatal(err)
	}
	return set, openapi.Expand(set, openapi.Options{Extra: []*scenarios.OpenAPISource{openapi.FileSource(spec, fixtures)}, Cache: cache})
}

func TestStripeSpec(t *testing.T) {
	t.Parallel()
	spec, fixtures := stripeFiles(t)
	set, err := stripeSet(t, spec, fixtures, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(set.Routes()); n != 594 {
		t.Errorf("%d routes; want one per operation of Stripe's spec, 594", n)
	}
	srv, err := server.New(server.Options{Load: func() (*scenarios.Set, error) { return set, nil }, Rand: server.SeededRand(7)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	auth := []string{"Authorization", "Bearer sk_test_123"}
	form := url.Values{
		"email": {"jenny@example.com"}, "name": {"Jenny"}, "metadata[order]": {"6735"},
		"shipping[name]": {"Jenny"}, "shipping[address][line1]": {"1 Main St"}, "expand[]": {"tax"},
	}
	created := call(t, "POST", hs.URL+"/v1/customers", "application/x-www-form-urlencoded", form.Encode(), auth...)
	if created.status != 200 || created.json["email"] != "jenny@example.com" || created.json["object"] != "customer" {
		t.Fatalf("create customer: %d %s; want 200, a customer with the email reflected", created.status, created.body)
	}
	if md, _ := created.json["metadata"].(map[string]any); md["order"] != "6735" {
		t.Errorf("metadata %v; want metadata[order] reflected", created.json["metadata"])
	}
	id, _ := created.json["id"].(string)
	if !strings.HasPrefix(id, "cus_") {
		t.Fatalf("id %q; want a fresh cus_ id", id)
	}
	got := call(t, "GET", hs.URL+"/v1/customers/"+id, "", "", auth...)
	if got.status != 200 || got.json["id"] != id || got.json["email"] != "jenny@example.com" {
		t.Fatalf("retrieve: %d %s; want the stored customer", got.status, got.body)
	}
	missing := call(t, "GET", hs.URL+"/v1/customers/cus_never", "", "", auth...)
	if missing.status != 404 || !strings.Contains(missing.body, "resource_missing") {
		t.Fatalf("retrieve an id never created: %d %s; want Stripe's 404 resource_missing", missing.status, missing.body)
	}
	bad := call(t, "POST", hs.URL+"/v1/payment_intents", "application/x-www-form-urlencoded", "currency=usd&amount=abc", auth...)
	if bad.status != 400 || !strings.Contains(bad.body, `"pointer":"#/amount"`) {
		t.Fatalf("amount=abc: %d %s; want 400 with a violation at #/amount", bad.status, bad.body)
	}
}

// BenchmarkStripeLoad compiles Stripe's spec (594 operations) cold, and
// again from the cache (the unchanged reload: a hash of the files).
func BenchmarkStripeLoad(b *testing.B) {
	spec, fixtures := stripeFiles(b)
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := stripeSet(b, spec, fixtures, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unchanged", func(b *testing.B) {
		cache := openapi.NewCache()
		if _, err := stripeSet(b, spec, fixtures, cache); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := stripeSet(b, spec, fixtures, cache); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStripeCheck is validation's cost per request on Stripe's spec:
// a form-encoded create and a retrieve with expand[].
func BenchmarkStripeCheck(b *testing.B) {
	spec, fixtures := stripeFiles(b)
	set, err := stripeSet(b, spec, fixtures, nil)
	if err != nil {
		b.Fatal(err)
	}
	ops := map[string]*openapi.Operation{}
	for _, r := range set.Routes() {
		ops[r.Name], _ = r.Operation.(*openapi.Operation)
	}
	form := url.Values{
		"email": {"jenny@example.com"}, "name": {"Jenny"}, "metadata[order]": {"6735"},
		"shipping[name]": {"Jenny"}, "shipping[address][line1]": {"1 Main St"}, "expand[]": {"tax"},
	}.Encode()
	cases := []struct {
		name, op, method, target, body string
	}{
		{"POST /v1/customers form", "PostCustomers", "POST", "/v1/customers", form},
		{"GET /v1/customers/{customer}", "GetCustomersCustomer", "GET", "/v1/customers/cus_123?expand[]=default_source", ""},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			op := ops[tc.op]
			if op == nil {
				b.Fatalf("no operation %s", tc.op)
			}
			r := httptest.NewRequest(tc.method, tc.target, nil)
			r.Header.Set("Authorization", "Bearer sk_test_123")
			if tc.body != "" {
				r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			if vs := op.Check(r, []byte(tc.body)); len(vs) > 0 {
				b.Fatalf("violations %v; want a valid request", vs)
			}
			b.ReportAllocs()
			for b.Loop() {
				op.Check(r, []byte(tc.body))
			}
		})
	}
}

func TestStripeErrorShape(t *testing.T) {
	t.Parallel()
	spec, fixtures := stripeFiles(t)
	src := openapi.FileSource(spec, fixtures)
	src.Errors = "stripe"
	set, err := scenarios.LoadBytes("stripe", []byte("routes: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := openapi.Expand(set, openapi.Options{Extra: []*scenarios.OpenAPISource{src}}); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Load: func() (*scenarios.Set, error) { return set, nil }})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	cases := []struct {
		name, body string
		status     int
		code       string
		param      string
	}{
		{"invalid integer", "currency=usd&amount=abc", 400, "parameter_invalid_integer", "amount"},
		{"missing param", "amount=100", 400, "parameter_missing", "currency"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, "POST", hs.URL+"/v1/payment_intents", "application/x-www-form-urlencoded", tc.body, "Authorization", "Bearer sk_test_1")
			e, _ := got.json["error"].(map[string]any)
			if got.status != tc.status || e["type"] != "invalid_request_error" || e["code"] != tc.code || e["param"] != tc.param {
				t.Fatalf("%d %s; want %d with Stripe's error object, code %s, param %s", got.status, got.body, tc.status, tc.code, tc.param)
			}
		})
	}
}

// BenchmarkStripeMatch compares a hit and a miss among the 594 routes
// generated from Stripe's spec (issue 15: a miss within 10x of a hit).
func BenchmarkStripeMatch(b *testing.B) {
	spec, fixtures := stripeFiles(b)
	set, err := stripeSet(b, spec, fixtures, nil)
	if err != nil {
		b.Fatal(err)
	}
	t, err := matcher.Compile(set)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, method, target string }{
		{"hit", "GET", "/v1/customers/cus_123"},
		{"miss", "GET", "/v1/nothing/cus_123"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := httptest.NewRequest(tc.method, tc.target, nil)
			in := matcher.NewRequest(r, nil)
			if _, ok := t.Match(in); ok != (tc.name == "hit") {
				b.Fatalf("%s %s matched %v", tc.method, tc.target, ok)
			}
			b.ReportAllocs()
			for b.Loop() {
				t.Match(matcher.NewRequest(r, nil))
			}
		})
	}
}

// TestStripeFormTyping sends form values whose type only the schema says,
// where stripe-go's own suite sends them: inside an anyOf (card is an
// object or a token; returned_at an integer or ""; up_to "inf" or an
// integer), inside a map (currency_options[eur]), and lists sent with
// indexes. Each is accepted, and a value reflected into the answer has the
// schema's type, also where the answer's field was null.
func TestStripeFormTyping(t *testing.T) {
	t.Parallel()
	spec, fixtures := stripeFiles(t)
	set, err := stripeSet(t, spec, fixtures, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Load: func() (*scenarios.Set, error) { return set, nil }})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	auth := []string{"Authorization", "Bearer sk_test_1"}
	for _, tc := range []struct {
		name, path string
		form       url.Values
	}{
		{"anyOf object", "/v1/payment_methods", url.Values{"type": {"card"}, "card[number]": {"4242424242424242"}, "card[exp_month]": {"8"}, "card[exp_year]": {"2030"}, "card[cvc]": {"314"}}},
		{"map values", "/v1/prices", url.Values{"currency": {"usd"}, "unit_amount": {"1000"}, "product": {"prod_1"}, "currency_options[eur][unit_amount]": {"900"}}},
		{"anyOf enum or integer, indexed list", "/v1/prices", url.Values{"currency": {"usd"}, "product": {"prod_1"}, "billing_scheme": {"tiered"}, "tiers_mode": {"graduated"}, "recurring[interval]": {"month"},
			"tiers[0][up_to]": {"1000"}, "tiers[0][unit_amount]": {"10"}, "tiers[1][up_to]": {"inf"}, "tiers[1][unit_amount]": {"5"}}},
		{"x-stripeBypassValidation: a dictionary for a string", "/v1/accounts", url.Values{"type": {"custom"}, "external_account[object]": {"bank_account"}, "external_account[country]": {"US"}, "external_account[currency]": {"usd"}, "external_account[account_number]": {"000123456789"}}},
		{"indexed list in a map", "/v1/terminal/configurations", url.Values{"tipping[usd][fixed_amounts][0]": {"100"}, "tipping[usd][fixed_amounts][1]": {"200"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, "POST", hs.URL+tc.path, "application/x-www-form-urlencoded", tc.form.Encode(), auth...)
			if got.status != 200 {
				t.Fatalf("%d %s; want 200", got.status, got.body)
			}
		})
	}
	// amount_details is null in the fixture: the integers still arrive as
	// integers, as the request schema types them.
	got := call(t, "POST", hs.URL+"/v1/test_helpers/issuing/authorizations", "application/x-www-form-urlencoded",
		url.Values{"card": {"ic_1"}, "amount": {"100"}, "amount_details[atm_fee]": {"10"}, "amount_details[cashback_amount]": {"5"}}.Encode(), auth...)
	ad, _ := got.json["amount_details"].(map[string]any)
	if got.status != 200 || ad["atm_fee"] != float64(10) || ad["cashback_amount"] != float64(5) {
		t.Fatalf("%d amount_details %v; want 200 and {atm_fee: 10, cashback_amount: 5} as numbers", got.status, got.json["amount_details"])
	}
	// A value that is none of an anyOf's branches is still refused.
	bad := call(t, "POST", hs.URL+"/v1/payment_methods", "application/x-www-form-urlencoded", url.Values{"type": {"card"}, "card[exp_month]": {"August"}}.Encode(), auth...)
	if bad.status != 400 {
		t.Fatalf("card[exp_month]=August: %d %s; want 400", bad.status, bad.body)
	}
}

// TestStripeExpand creates a customer and a payment intent for it; the
// intent read back with expand[]=customer (query, or the form of a create
// or update) holds the stored customer, without it the id; an id never
// created stays an id.
func TestStripeExpand(t *testing.T) {
	t.Parallel()
	spec, fixtures := stripeFiles(t)
	set, err := stripeSet(t, spec, fixtures, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Load: func() (*scenarios.Set, error) { return set, nil }})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	auth := []string{"Authorization", "Bearer sk_test_1"}
	form := "application/x-www-form-urlencoded"
	cus := call(t, "POST", hs.URL+"/v1/customers", form, "email=expand@example.com", auth...)
	cusID, _ := cus.json["id"].(string)
	if cus.status != 200 || cusID == "" {
		t.Fatalf("create customer: %d %s", cus.status, cus.body)
	}
	pi := call(t, "POST", hs.URL+"/v1/payment_intents", form, url.Values{"amount": {"2000"}, "currency": {"usd"}, "customer": {cusID}, "expand[]": {"customer"}}.Encode(), auth...)
	piID, _ := pi.json["id"].(string)
	if c, _ := pi.json["customer"].(map[string]any); pi.status != 200 || c["id"] != cusID || c["email"] != "expand@example.com" {
		t.Fatalf("create with expand[]=customer: %d customer %v; want the stored customer", pi.status, pi.json["customer"])
	}
	plain := call(t, "GET", hs.URL+"/v1/payment_intents/"+piID, "", "", auth...)
	if plain.status != 200 || plain.json["customer"] != cusID {
		t.Errorf("retrieve without expand: %d customer %v; want the id %s", plain.status, plain.json["customer"], cusID)
	}
	got := call(t, "GET", hs.URL+"/v1/payment_intents/"+piID+"?expand[]=customer", "", "", auth...)
	if c, _ := got.json["customer"].(map[string]any); got.status != 200 || c["id"] != cusID || c["object"] != "customer" {
		t.Errorf("retrieve with expand[]=customer: %d customer %v; want the stored customer", got.status, got.json["customer"])
	}
	other := call(t, "POST", hs.URL+"/v1/payment_intents", form, url.Values{"amount": {"100"}, "currency": {"usd"}, "customer": {"cus_nothere"}, "expand[]": {"customer"}}.Encode(), auth...)
	if other.status != 200 || other.json["customer"] != "cus_nothere" {
		t.Errorf("expand of an id never created: %d customer %v; want the id", other.status, other.json["customer"])
	}
}

// TestStripeScopePerCredential serves Stripe's spec from an openapi:
// block with scope: credential: a customer created with one key is
// listed and read with that key, in Bearer or Basic auth alike, and is a
// 404 and absent from the list with another key.
func TestStripeScopePerCredential(t *testing.T) {
	t.Parallel()
	spec, _ := stripeFiles(t)
	dir := filepath.Dir(spec)
	scenario := filepath.Join(dir, "stripe.yaml")
	if err := os.WriteFile(scenario, []byte("openapi: {spec: spec3.json, fixtures: fixtures3.json, errors: stripe, scope: credential}\nroutes: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Load: func() (*scenarios.Set, error) {
		set, err := scenarios.Load(scenario)
		if err != nil {
			return nil, err
		}
		return set, openapi.Expand(set, openapi.Options{})
	}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	alice := []string{"Authorization", "Bearer sk_test_alice"}
	aliceBasic := []string{"Authorization", "Basic c2tfdGVzdF9hbGljZTo="} // curl -u sk_test_alice:
	bob := []string{"Authorization", "Bearer sk_test_bob"}
	created := call(t, "POST", hs.URL+"/v1/customers", "application/x-www-form-urlencoded", "email=alice@example.com", alice...)
	id, _ := created.json["id"].(string)
	if created.status != 200 || id == "" {
		t.Fatalf("create: %d %s", created.status, created.body)
	}
	for _, tc := range []struct {
		name string
		auth []string
		want int
	}{{"same key", alice, 200}, {"same key, Basic auth", aliceBasic, 200}, {"another key", bob, 404}} {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, "GET", hs.URL+"/v1/customers/"+id, "", "", tc.auth...)
			if got.status != tc.want {
				t.Errorf("retrieve: %d %s; want %d", got.status, got.body, tc.want)
			}
			list := call(t, "GET", hs.URL+"/v1/customers", "", "", tc.auth...)
			listed := strings.Contains(list.body, id)
			if list.status != 200 || listed != (tc.want == 200) {
				t.Errorf("list: %d, listed %v; want listed %v", list.status, listed, tc.want == 200)
			}
		})
	}
}
