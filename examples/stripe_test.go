package examples_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/server"
	"github.com/stripe/stripe-go/v85"
)

const testKey = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"

// stripeSpecs keeps Stripe's spec compiled once for every test here:
// each server gets its own state, and the compiled operations are
// immutable.
var stripeSpecs = openapi.NewCache()

// serveStripe serves stripe.yaml (with Stripe's spec beside it, in
// stripe/) on an httptest server, as serve examples/stripe.yaml does.
func serveStripe(t *testing.T) *httptest.Server {
	t.Helper()
	return serveStripeWith(t, server.Options{})
}

// serveStripeWith is serveStripe with the options o (a state store, the
// webhooks' time scale); it sets Load and, unless o has one, Logger.
func serveStripeWith(t *testing.T, o server.Options) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(stripeServer(t, o))
	t.Cleanup(hs.Close)
	return hs
}

// stripeServer is the server of stripe.yaml with the options o (Load
// set, and Logger unless o has one).
func stripeServer(t *testing.T, o server.Options) *server.Server {
	t.Helper()
	o.Load = func() (*scenarios.Set, error) {
		set, err := scenarios.Load("stripe.yaml")
		if err != nil {
			return nil, err
		}
		return set, openapi.Expand(set, openapi.Options{Cache: stripeSpecs})
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s, err := server.New(o)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	return s
}

// client is the official client pointed at the mock, its automatic
// retries on (with their real sleeps).
func client(hs *httptest.Server, key string) *stripe.Client {
	retries := int64(5)
	backends := stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:               stripe.String(hs.URL),
		HTTPClient:        hs.Client(),
		MaxNetworkRetries: &retries,
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})
	return stripe.NewClient(key, stripe.WithBackends(backends))
}

// newCustomer creates a customer with sc, for a test that names one.
func newCustomer(t *testing.T, sc *stripe.Client) *stripe.Customer {
	t.Helper()
	c, err := sc.V1Customers.Create(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newProduct creates a product named name with sc, for a test's prices.
func newProduct(t *testing.T, sc *stripe.Client, name string) *stripe.Product {
	t.Helper()
	p, err := sc.V1Products.Create(context.Background(), &stripe.ProductCreateParams{Name: stripe.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// eventsOf lists the events of type typ, newest first, as stripe-go
// pages them.
func eventsOf(t *testing.T, sc *stripe.Client, typ string) []*stripe.Event {
	t.Helper()
	var out []*stripe.Event
	for ev, err := range sc.V1Events.List(context.Background(), &stripe.EventListParams{Type: stripe.String(typ)}).All(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// stripeError returns err as a *stripe.Error, failing the test otherwise.
func stripeError(t *testing.T, err error) *stripe.Error {
	t.Helper()
	var se *stripe.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *stripe.Error", err, err)
	}
	return se
}

func TestStripeCustomers(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()

	params := &stripe.CustomerCreateParams{
		Email:       stripe.String("ada@example.com"),
		Name:        stripe.String("Ada Lovelace"),
		Description: stripe.String("first customer"),
	}
	params.AddMetadata("order_id", "6735")
	params.AddMetadata("tier", "gold")
	before := time.Now().Unix()
	c, err := sc.V1Customers.Create(ctx, params)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if !strings.HasPrefix(c.ID, "cus_") || c.Object != "customer" || c.Email != "ada@example.com" || c.Name != "Ada Lovelace" ||
		c.Description != "first customer" || c.Livemode || c.Created < before || c.Created > time.Now().Unix()+1 ||
		c.Metadata["order_id"] != "6735" || c.Metadata["tier"] != "gold" || len(c.Metadata) != 2 {
		t.Errorf("created: %+v", c)
	}
	if rid := c.LastResponse.RequestID; !strings.HasPrefix(rid, "req_") {
		t.Errorf("Request-Id %q", rid)
	}

	got, err := sc.V1Customers.Retrieve(ctx, c.ID, nil)
	if err != nil {
		t.Fatalf("retrieve: %v", err)
	}
	if got.ID != c.ID || got.Email != c.Email || got.Created != c.Created || got.Metadata["order_id"] != "6735" {
		t.Errorf("retrieved %+v, created %+v", got, c)
	}

	// Without metadata, Stripe sends an empty object, not null.
	plain, err := sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{})
	if err != nil {
		t.Fatalf("create without parameters: %v", err)
	}
	raw := map[string]json.RawMessage{}
	if err := json.Unmarshal(plain.LastResponse.RawJSON, &raw); err != nil {
		t.Fatal(err)
	}
	if string(raw["metadata"]) != "{}" || string(raw["email"]) != "null" || plain.ID == c.ID {
		t.Errorf("customer without parameters: %s", plain.LastResponse.RawJSON)
	}

	_, err = sc.V1Customers.Retrieve(ctx, "cus_nope", nil)
	se := stripeError(t, err)
	if se.HTTPStatusCode != 404 || se.Code != stripe.ErrorCodeResourceMissing || se.Type != stripe.ErrorTypeInvalidRequest ||
		se.Param != "id" || se.Msg != "No such customer: 'cus_nope'" || !strings.HasPrefix(se.RequestID, "req_") {
		t.Errorf("missing customer: %+v", se)
	}
}

func TestStripePaymentIntents(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()

	cus, err := sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String("pays@example.com")})
	if err != nil {
		t.Fatal(err)
	}
	params := &stripe.PaymentIntentCreateParams{
		Amount:   stripe.Int64(2000),
		Currency: stripe.String("usd"),
		Customer: stripe.String(cus.ID),
	}
	params.AddMetadata("order_id", "6735")
	pi, err := sc.V1PaymentIntents.Create(ctx, params)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if !strings.HasPrefix(pi.ID, "pi_") || pi.Object != "payment_intent" || pi.Amount != 2000 || pi.Currency != "usd" ||
		pi.Customer == nil || pi.Customer.ID != cus.ID || pi.Status != stripe.PaymentIntentStatusRequiresPaymentMethod ||
		!strings.HasPrefix(pi.ClientSecret, pi.ID+"_secret_") || pi.Metadata["order_id"] != "6735" || pi.Created == 0 || pi.Livemode {
		t.Errorf("created: %+v", pi)
	}
	raw := map[string]json.RawMessage{}
	if err := json.Unmarshal(pi.LastResponse.RawJSON, &raw); err != nil {
		t.Fatal(err)
	}
	if string(raw["amount"]) != "2000" {
		t.Errorf("amount is %s, want the number 2000", raw["amount"])
	}

	got, err := sc.V1PaymentIntents.Retrieve(ctx, pi.ID, nil)
	if err != nil {
		t.Fatalf("retrieve: %v", err)
	}
	if got.ID != pi.ID || got.Amount != 2000 || got.Currency != "usd" || got.Customer == nil || got.Customer.ID != cus.ID || got.ClientSecret != pi.ClientSecret {
		t.Errorf("retrieved %+v, created %+v", got, pi)
	}

	_, err = sc.V1PaymentIntents.Retrieve(ctx, "pi_nope", nil)
	if se := stripeError(t, err); se.HTTPStatusCode != 404 || se.Code != stripe.ErrorCodeResourceMissing || se.Msg != "No such payment_intent: 'pi_nope'" {
		t.Errorf("missing payment intent: %+v", se)
	}

	// A validation error is not stored under the key: the corrected
	// request with the same key goes through.
	bad := &stripe.PaymentIntentCreateParams{Currency: stripe.String("usd")}
	bad.SetIdempotencyKey("fix-me")
	_, err = sc.V1PaymentIntents.Create(ctx, bad)
	if se := stripeError(t, err); se.HTTPStatusCode != 400 || se.Code != stripe.ErrorCodeParameterMissing || se.Param != "amount" {
		t.Errorf("without amount: %+v", se)
	}
	good := &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(500), Currency: stripe.String("eur")}
	good.SetIdempotencyKey("fix-me")
	if pi, err := sc.V1PaymentIntents.Create(ctx, good); err != nil || pi.Amount != 500 || pi.Customer != nil {
		t.Errorf("corrected request with the same key: %+v, %v", pi, err)
	}
}

func TestStripeAPIKey(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	for _, tc := range []struct{ name, key, msg string }{
		{"empty key", "", "You did not provide an API key."},
		{"live key", "sk_live_abc", "Invalid API Key provided."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client(hs, tc.key).V1Customers.Create(context.Background(), &stripe.CustomerCreateParams{})
			se := stripeError(t, err)
			if se.HTTPStatusCode != 401 || se.Type != stripe.ErrorTypeInvalidRequest || !strings.HasPrefix(se.Msg, tc.msg) || !strings.HasPrefix(se.RequestID, "req_") {
				t.Errorf("%+v", se)
			}
		})
	}
	// No Authorization header at all (stripe-go always sends one).
	res, err := http.Post(hs.URL+"/v1/customers", "application/x-www-form-urlencoded", strings.NewReader("email=a@b.c"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 401 || !strings.Contains(string(body), `"type":"invalid_request_error"`) || !strings.HasPrefix(res.Header.Get("Request-Id"), "req_") {
		t.Errorf("no Authorization: %d %s", res.StatusCode, body)
	}
	// Nothing was created by any of these.
	if n := collectionTotal(t, hs, "customers"); n != 0 {
		t.Errorf("%d customers after refused requests", n)
	}
}

// TestStripeBasicAuth sends the key as Stripe's docs do, curl -u
// sk_test_…: (HTTP Basic auth, the key as the user name, no password), and
// as the key itself after "Basic ", which Stripe also takes: both create
// and read back a customer; an empty, live or publishable key in Basic auth
// is refused as in Bearer auth.
func TestStripeBasicAuth(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	do := func(method, path, form string, auth func(*http.Request)) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, hs.URL+path, strings.NewReader(form))
		if form != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		auth(req)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var v map[string]any
		if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return res.StatusCode, v
	}
	for _, tc := range []struct {
		name string
		auth func(*http.Request)
	}{
		{"curl -u key:", func(r *http.Request) { r.SetBasicAuth(testKey, "") }},
		{"Basic key", func(r *http.Request) { r.Header.Set("Authorization", "Basic "+testKey) }},
		{"short key", func(r *http.Request) { r.SetBasicAuth("sk_test_1", "") }},
		// An authentication scheme is case-insensitive (RFC 9110 11.1).
		{"lowercase bearer", func(r *http.Request) { r.Header.Set("Authorization", "bearer "+testKey) }},
		{"uppercase BASIC", func(r *http.Request) { r.Header.Set("Authorization", "BASIC "+testKey) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, cus := do("POST", "/v1/customers", "email=basic@example.com", tc.auth)
			id, _ := cus["id"].(string)
			if status != 200 || !strings.HasPrefix(id, "cus_") || cus["email"] != "basic@example.com" {
				t.Fatalf("create: %d %v", status, cus)
			}
			if status, got := do("GET", "/v1/customers/"+id, "", tc.auth); status != 200 || got["id"] != id {
				t.Errorf("retrieve: %d %v", status, got)
			}
		})
	}
	for _, tc := range []struct{ name, user, msg string }{
		{"empty key", "", "You did not provide an API key."},
		{"live key", "sk_live_abc", "Invalid API Key provided."},
		{"publishable key", "pk_test_abc", "Invalid API Key provided."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, v := do("POST", "/v1/customers", "email=a@b.c", func(r *http.Request) { r.SetBasicAuth(tc.user, "") })
			e, _ := v["error"].(map[string]any)
			if msg, _ := e["message"].(string); status != 401 || !strings.HasPrefix(msg, tc.msg) {
				t.Errorf("%d %v", status, v)
			}
		})
	}
}

func TestStripeIdempotency(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	create := func(sc *stripe.Client, key, email string) (*stripe.Customer, error) {
		p := &stripe.CustomerCreateParams{Email: stripe.String(email)}
		p.SetIdempotencyKey(key)
		return sc.V1Customers.Create(ctx, p)
	}

	first, err := create(sc, "key-1", "a@example.com")
	if err != nil {
		t.Fatal(err)
	}
	again, err := create(sc, "key-1", "a@example.com")
	if err != nil || again.ID != first.ID || again.LastResponse.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: %+v, %v", again, err)
	}
	// Stripe echoes the key; stripe-go reads it into LastResponse.
	if first.LastResponse.IdempotencyKey != "key-1" || again.LastResponse.IdempotencyKey != "key-1" {
		t.Errorf("Idempotency-Key answered %q, then %q", first.LastResponse.IdempotencyKey, again.LastResponse.IdempotencyKey)
	}
	if got, err := sc.V1Customers.Retrieve(ctx, first.ID, nil); err != nil || got.LastResponse.Header.Values("Idempotency-Key") != nil {
		t.Errorf("a GET without a key answered Idempotency-Key %q (%v)", got.LastResponse.Header.Values("Idempotency-Key"), err)
	}

	_, err = create(sc, "key-1", "b@example.com")
	se := stripeError(t, err)
	var ie *stripe.IdempotencyError
	if se.HTTPStatusCode != 400 || se.Type != stripe.ErrorTypeIdempotency || !errors.As(err, &ie) ||
		!strings.Contains(se.Msg, "Try using a key other than 'key-1'") {
		t.Errorf("other parameters: %+v", se)
	}

	// Keys are scoped per API key: another account's key-1 is a new request.
	other, err := create(client(hs, "sk_test_other"), "key-1", "a@example.com")
	if err != nil || other.ID == first.ID || other.LastResponse.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("other API key: %+v, %v", other, err)
	}
	if n := collectionTotal(t, hs, "customers"); n != 2 {
		t.Errorf("%d customers, want 2", n)
	}

	// A key longer than Stripe's 255 characters (stripe-go refuses to
	// send one; stripe-node, stripe-python and curl send it): Stripe's 400
	// invalid_request_error, which the clients read as a Stripe error
	// (before, the built-in problem, which they could not), and nothing
	// is made.
	req, err := http.NewRequest(http.MethodPost, hs.URL+"/v1/customers", strings.NewReader("email=c%40example.com"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Idempotency-Key", strings.Repeat("k", 300))
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Error stripe.Error }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "application/json" || body.Error.Type != stripe.ErrorTypeInvalidRequest ||
		body.Error.Msg != "Idempotent key length is 300, which is outside accepted lengths. Idempotent Keys must be 1-255 characters long. If you're looking for a decent generator, try using a UUID defined by IETF RFC 4122." {
		t.Errorf("a key of 300 characters: %d %s %+v; want 400 application/json, invalid_request_error with Stripe's message", resp.StatusCode, resp.Header.Get("Content-Type"), body.Error)
	}
	if n := collectionTotal(t, hs, "customers"); n != 2 {
		t.Errorf("%d customers after a refused key, want 2", n)
	}
}

// TestStripeConcurrentCreates sends ten creates with one Idempotency-Key
// at once. The route's 300ms delay keeps the first running while the
// others arrive; they get 409 idempotency_key_in_use. stripe-go (v85)
// never retries an answer that carries a Stripe error body, 409 included
// (its retrier check precedes the status check), so each goroutine does
// what the message asks, "try again later", until it gets the replay.
// All ten must end with the same customer, and exactly one is stored.
func TestStripeConcurrentCreates(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	const n = 10
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		ids      = map[string]int{}
		inFlight int
		errs     []error
	)
	start := make(chan struct{})
	deadline := time.Now().Add(30 * time.Second)
	for range n {
		wg.Go(func() {
			<-start
			for {
				p := &stripe.CustomerCreateParams{Email: stripe.String("once@example.com"), Name: stripe.String("Once")}
				p.AddMetadata("attempt", "same")
				p.SetIdempotencyKey("concurrent-key")
				c, err := sc.V1Customers.Create(context.Background(), p)
				var se *stripe.Error
				if errors.As(err, &se) && se.HTTPStatusCode == 409 && se.Code == stripe.ErrorCodeIdempotencyKeyInUse && time.Now().Before(deadline) {
					mu.Lock()
					inFlight++
					mu.Unlock()
					time.Sleep(50 * time.Millisecond) // the client's back-off, not a synchronisation
					continue
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				ids[c.ID]++
				return
			}
		})
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 || len(ids) != 1 {
		t.Fatalf("ids %v, errors %v", ids, errs)
	}
	if got := collectionTotal(t, hs, "customers"); got != 1 {
		t.Errorf("%d customers stored, want 1", got)
	}
	t.Logf("%d answers were 409 idempotency_key_in_use", inFlight)
}

// TestStripeParameterErrors sends what stripe-go's types cannot: an
// amount that is not an integer, and no currency.
func TestStripeParameterErrors(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	for _, tc := range []struct{ form, code, param string }{
		{"amount=20.00&currency=usd", "parameter_invalid_integer", "amount"},
		{"amount=&currency=usd", "parameter_invalid_integer", "amount"},
		{"amount=2000", "parameter_missing", "currency"},
		{"currency=usd", "parameter_missing", "amount"},
	} {
		req, _ := http.NewRequest("POST", hs.URL+"/v1/payment_intents", strings.NewReader(tc.form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.Header.Set("Idempotency-Key", "same-key-for-all") // validation failures are not stored
		req.Header.Set("Stripe-Version", "2024-06-20")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Error struct{ Code, Param, Type string }
		}
		err = json.NewDecoder(res.Body).Decode(&v)
		res.Body.Close()
		if err != nil || res.StatusCode != 400 || v.Error.Code != tc.code || v.Error.Param != tc.param || v.Error.Type != "invalid_request_error" {
			t.Errorf("%s: %d %+v %v", tc.form, res.StatusCode, v, err)
		}
		// A refusal carries the headers of every answer, as Stripe's
		// does: stripe-go puts the Request-Id in its error.
		if id, ver := res.Header.Get("Request-Id"), res.Header.Get("Stripe-Version"); !strings.HasPrefix(id, "req_") || ver != "2024-06-20" {
			t.Errorf("%s: Request-Id %q, Stripe-Version %q; want req_… and the version sent", tc.form, id, ver)
		}
	}
	if n := collectionTotal(t, hs, "payment_intents"); n != 0 {
		t.Errorf("%d payment intents after refused requests", n)
	}
}

// loseFirstAnswer delivers the first request and then reports a broken
// connection instead of its answer: the payment went through while the
// client was not listening.
type loseFirstAnswer struct {
	next http.RoundTripper
	once sync.Once
}

func (l *loseFirstAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := l.next.RoundTrip(req)
	lost := false
	l.once.Do(func() { lost = true })
	if err != nil || !lost {
		return res, err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return nil, errors.New("connection reset by peer (the test lost the answer)")
}

// TestStripeLostAnswerRetried lets stripe-go's automatic retry resend a
// create whose answer was lost, with the same Idempotency-Key: the retry
// is a replay of the first answer, and one customer exists.
func TestStripeLostAnswerRetried(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	retries := int64(2)
	sc := stripe.NewClient(testKey, stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:               stripe.String(hs.URL),
		HTTPClient:        &http.Client{Transport: &loseFirstAnswer{next: hs.Client().Transport}},
		MaxNetworkRetries: &retries,
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})))
	c, err := sc.V1Customers.Create(context.Background(), &stripe.CustomerCreateParams{Email: stripe.String("lost@example.com")})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if c.LastResponse.Header.Get("Idempotent-Replayed") != "true" || c.Email != "lost@example.com" {
		t.Errorf("the retry was not a replay: %v %+v", c.LastResponse.Header, c)
	}
	if n := collectionTotal(t, hs, "customers"); n != 1 {
		t.Errorf("%d customers stored, want 1", n)
	}
}

// collectionTotal asks the admin API how many objects of a kind
// (customers, payment_intents) are stored, for every API key together:
// the spec's routes keep each key's in a collection of its own, named
// "openapi <key> /v1/customers".
func collectionTotal(t *testing.T, hs *httptest.Server, kind string) int {
	t.Helper()
	res, err := http.Get(hs.URL + "/__admin/collections")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v struct {
		Collections []struct {
			Name  string
			Items int
		}
	}
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil || res.StatusCode != 200 {
		t.Fatalf("admin collections: %d %v", res.StatusCode, err)
	}
	total := 0
	for _, c := range v.Collections {
		if strings.HasPrefix(c.Name, "openapi ") && strings.HasSuffix(c.Name, " /v1/"+kind) {
			total += c.Items
		}
	}
	return total
}

// TestStripeEvents: each creation records an event, which stripe-go lists
// (newest first, paged both ways) and retrieves; a replay of an Idempotency-Key records none.
func TestStripeEvents(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()

	cp := &stripe.CustomerCreateParams{Email: stripe.String("ada@example.com")}
	cp.SetIdempotencyKey("create-ada")
	c, err := sc.V1Customers.Create(ctx, cp)
	if err != nil {
		t.Fatalf("create customer: %v", err)
	}
	again := &stripe.CustomerCreateParams{Email: stripe.String("ada@example.com")}
	again.SetIdempotencyKey("create-ada")
	if replay, err := sc.V1Customers.Create(ctx, again); err != nil || replay.ID != c.ID {
		t.Fatalf("replay: %v %v", replay, err)
	}
	pi, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(2000), Currency: stripe.String("usd")})
	if err != nil {
		t.Fatalf("create payment intent: %v", err)
	}

	var events []*stripe.Event
	for ev, err := range sc.V1Events.List(ctx, &stripe.EventListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(1)}}).All(ctx) {
		if err != nil {
			t.Fatalf("list events: %v", err)
		}
		events = append(events, ev)
	}
	if len(events) != 2 {
		t.Fatalf("listed %d events, want 2 (the replay records none)", len(events))
	}
	// Newest first, as Stripe lists; stripe-go paged with starting_after.
	if e := events[1]; e.Type != "customer.created" || e.Data.Object["id"] != c.ID || e.Request == nil || e.Request.IdempotencyKey != "create-ada" ||
		!strings.HasPrefix(e.ID, "evt_") || e.Livemode || e.APIVersion != stripe.APIVersion {
		t.Errorf("second (older) event: %+v (request %+v)", e, e.Request)
	}
	if e := events[0]; e.Type != "payment_intent.created" || e.Data.Object["id"] != pi.ID {
		t.Errorf("first (newest) event: %+v", e)
	}
	// ending_before pages towards the newer events.
	var back []*stripe.Event
	for ev, err := range sc.V1Events.List(ctx, &stripe.EventListParams{ListParams: stripe.ListParams{EndingBefore: stripe.String(events[1].ID)}}).All(ctx) {
		if err != nil {
			t.Fatalf("list events ending before %s: %v", events[1].ID, err)
		}
		back = append(back, ev)
	}
	if len(back) != 1 || back[0].ID != events[0].ID {
		t.Errorf("ending_before the older event listed %d events, want the newer one %s", len(back), events[0].ID)
	}
	// Narrowed by type, one or a group of them, and by creation time.
	values := func(ps []*string) (out []string) {
		for _, p := range ps {
			out = append(out, *p)
		}
		return out
	}
	for _, tc := range []struct {
		params *stripe.EventListParams
		want   []string
	}{
		{&stripe.EventListParams{Type: stripe.String("customer.created")}, []string{events[1].ID}},
		{&stripe.EventListParams{Type: stripe.String("payment_intent.*")}, []string{events[0].ID}},
		{&stripe.EventListParams{Type: stripe.String("charge.*")}, nil},
		// types[0]=…&types[1]=…, as stripe-go sends a list: any of them.
		{&stripe.EventListParams{Types: stripe.StringSlice([]string{"customer.created", "payment_intent.created"})}, []string{events[0].ID, events[1].ID}},
		{&stripe.EventListParams{Types: stripe.StringSlice([]string{"invoice.paid", "customer.created"})}, []string{events[1].ID}},
		{&stripe.EventListParams{Types: stripe.StringSlice([]string{"invoice.paid"})}, nil},
		{&stripe.EventListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: events[1].Created}}, []string{events[0].ID, events[1].ID}},
		{&stripe.EventListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThan: events[0].Created}}, nil},
	} {
		var ids []string
		for ev, err := range sc.V1Events.List(ctx, tc.params).All(ctx) {
			if err != nil {
				t.Fatalf("list events with type %v, types %q: %v", stripe.StringValue(tc.params.Type), values(tc.params.Types), err)
			}
			ids = append(ids, ev.ID)
		}
		if !slices.Equal(ids, tc.want) {
			t.Errorf("events listed with type %v, types %q, created %+v: %v; want %v", stripe.StringValue(tc.params.Type), values(tc.params.Types), tc.params.CreatedRange, ids, tc.want)
		}
	}
	// A cursor naming no event is Stripe's 400, naming the parameter.
	for _, lp := range []stripe.ListParams{
		{StartingAfter: stripe.String("evt_nope")},
		{StartingAfter: stripe.String(events[0].ID), EndingBefore: stripe.String(events[1].ID)},
	} {
		for _, err := range sc.V1Events.List(ctx, &stripe.EventListParams{ListParams: lp}).All(ctx) {
			se := stripeError(t, err)
			if se.HTTPStatusCode != 400 || se.Type != stripe.ErrorTypeInvalidRequest || se.Param == "" {
				t.Errorf("list events with %+v: %+v; want a 400 invalid_request_error naming the parameter", lp, se)
			}
			break
		}
	}
	got, err := sc.V1Events.Retrieve(ctx, events[0].ID, nil)
	if err != nil || got.ID != events[0].ID || got.Type != "payment_intent.created" {
		t.Errorf("retrieve: %+v, %v", got, err)
	}
	_, err = sc.V1Events.Retrieve(ctx, "evt_nope", nil)
	if se := stripeError(t, err); se.HTTPStatusCode != 404 || se.Code != stripe.ErrorCodeResourceMissing {
		t.Errorf("missing event: %+v", se)
	}
	// Another API key is another account: it lists none of these events,
	// cannot read one, and lists its own.
	other := client(hs, "sk_test_other")
	if _, err := other.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String("bob@example.com")}); err != nil {
		t.Fatalf("create customer with another key: %v", err)
	}
	var theirs []string
	for ev, err := range other.V1Events.List(ctx, nil).All(ctx) {
		if err != nil {
			t.Fatalf("list events with another key: %v", err)
		}
		theirs = append(theirs, string(ev.Type))
	}
	if !slices.Equal(theirs, []string{"customer.created"}) {
		t.Errorf("another key lists events %v; want its own customer.created alone", theirs)
	}
	_, err = other.V1Events.Retrieve(ctx, events[0].ID, nil)
	if se := stripeError(t, err); se.HTTPStatusCode != 404 || se.Code != stripe.ErrorCodeResourceMissing {
		t.Errorf("another key retrieving %s: %+v; want a 404 resource_missing", events[0].ID, se)
	}
}

// TestStripeCustomerLifecycle goes through a customer's life with
// stripe-go: create, retrieve, update, list with the client's
// auto-pagination (newest first, two per page), delete, and a 404 after.
func TestStripeCustomerLifecycle(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()

	var created []string
	for i, email := range []string{"a@example.com", "b@example.com", "c@example.com", "d@example.com", "e@example.com"} {
		c, err := sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String(email)})
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		created = append(created, c.ID)
	}
	first := created[0]
	got, err := sc.V1Customers.Retrieve(ctx, first, nil)
	if err != nil || got.Email != "a@example.com" {
		t.Fatalf("retrieve: %+v, %v", got, err)
	}
	up := &stripe.CustomerUpdateParams{Name: stripe.String("Ada Lovelace")}
	up.AddMetadata("tier", "gold")
	updated, err := sc.V1Customers.Update(ctx, first, up)
	if err != nil || updated.ID != first || updated.Name != "Ada Lovelace" || updated.Email != "a@example.com" || updated.Metadata["tier"] != "gold" {
		t.Fatalf("update: %+v, %v", updated, err)
	}
	if again, err := sc.V1Customers.Retrieve(ctx, first, nil); err != nil || again.Name != "Ada Lovelace" || again.Metadata["tier"] != "gold" {
		t.Fatalf("retrieve after update: %+v, %v", again, err)
	}
	// Metadata keys merge; an empty value unsets, as Stripe documents: a
	// key, the whole metadata, or a field (null).
	more := &stripe.CustomerUpdateParams{Description: stripe.String("vip")}
	more.AddMetadata("plan", "pro")
	if got, err := sc.V1Customers.Update(ctx, first, more); err != nil || got.Metadata["tier"] != "gold" || got.Metadata["plan"] != "pro" || got.Description != "vip" {
		t.Fatalf("update adding a metadata key: %+v, %v", got, err)
	}
	unset := &stripe.CustomerUpdateParams{Description: stripe.String("")}
	unset.AddMetadata("plan", "")
	got, err = sc.V1Customers.Update(ctx, first, unset)
	if err != nil || got.Metadata["tier"] != "gold" || len(got.Metadata) != 1 || !strings.Contains(string(got.LastResponse.RawJSON), `"description":null`) {
		t.Fatalf("update unsetting plan and the description: %+v (%s), %v", got, got.LastResponse.RawJSON, err)
	}
	all := &stripe.CustomerUpdateParams{}
	all.AddExtra("metadata", "")
	if got, err := sc.V1Customers.Update(ctx, first, all); err != nil || len(got.Metadata) != 0 || got.Name != "Ada Lovelace" {
		t.Fatalf("update unsetting the metadata: %+v, %v", got, err)
	}
	restore := &stripe.CustomerUpdateParams{}
	restore.AddMetadata("tier", "gold")
	if _, err := sc.V1Customers.Update(ctx, first, restore); err != nil {
		t.Fatal(err)
	}

	// GET /v1/customers/search searches the stored customers with
	// Stripe's query language (it is the search operation, not a customer
	// whose id is "search", though the example writes the route for
	// /v1/customers/{customer}); stripe-go pages with next_page.
	search := func(query string, limit int64) (ids []string, err error) {
		p := &stripe.CustomerSearchParams{SearchParams: stripe.SearchParams{Query: query, Limit: stripe.Int64(limit)}}
		for c, err := range sc.V1Customers.Search(ctx, p).All(ctx) {
			if err != nil {
				return ids, err
			}
			ids = append(ids, c.ID)
		}
		return ids, nil
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"email:'A@example.com'", []string{first}},
		{"name~'lovelace' AND metadata['tier']:'gold'", []string{first}},
		{"email:'b@example.com' OR email:'c@example.com'", []string{created[2], created[1]}},
		{"-email:'a@example.com'", []string{created[4], created[3], created[2], created[1]}},
		{"email:'nobody@example.com'", nil},
	} {
		if got, err := search(tc.query, 3); err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("search %s: %v, %v; want %v", tc.query, got, err, tc.want)
		}
	}
	if _, err := search("email:'a@example.com' AND name:'x' OR name:'y'", 10); stripeError(t, err).Param != "query" {
		t.Errorf("a query mixing AND and OR: %v; want a 400 naming query", err)
	}
	var listed []string
	for c, err := range sc.V1Customers.List(ctx, &stripe.CustomerListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(2)}}).All(ctx) {
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		listed = append(listed, c.ID)
	}
	want := slices.Clone(created)
	slices.Reverse(want) // newest first
	if !slices.Equal(listed, want) {
		t.Fatalf("listed %v, want the five newest first %v (three pages of two)", listed, want)
	}

	deleted, err := sc.V1Customers.Delete(ctx, first, nil)
	if err != nil || !deleted.Deleted || deleted.ID != first {
		t.Fatalf("delete: %+v, %v", deleted, err)
	}
	// Stripe still reads a deleted customer, as the deleted object (its
	// read answers anyOf customer, deleted_customer); it updates or
	// deletes it no more. An id never created is the 404.
	gone, err := sc.V1Customers.Retrieve(ctx, first, nil)
	if err != nil || !gone.Deleted || gone.ID != first || gone.Email != "" || gone.LastResponse.StatusCode != 200 {
		t.Errorf("retrieve after delete: %+v, %v; want 200 {id, object: customer, deleted: true}", gone, err)
	} else if raw := string(gone.LastResponse.RawJSON); raw != `{"deleted":true,"id":"`+first+`","object":"customer"}` {
		t.Errorf("retrieve after delete: %s; want the deleted object alone", raw)
	}
	_, err = sc.V1Customers.Update(ctx, first, &stripe.CustomerUpdateParams{Name: stripe.String("x")})
	if se := stripeError(t, err); se.HTTPStatusCode != 404 || se.Code != stripe.ErrorCodeResourceMissing {
		t.Errorf("update after delete: %+v", se)
	}
	_, err = sc.V1Customers.Delete(ctx, first, nil)
	if se := stripeError(t, err); se.HTTPStatusCode != 404 || se.Code != stripe.ErrorCodeResourceMissing || se.Msg != "No such customer: '"+first+"'" {
		t.Errorf("delete after delete: %+v", se)
	}
	_, err = sc.V1Customers.Retrieve(ctx, "cus_never", nil)
	if se := stripeError(t, err); se.HTTPStatusCode != 404 || se.Code != stripe.ErrorCodeResourceMissing || se.Param != "id" {
		t.Errorf("retrieve of an id never created: %+v", se)
	}
	if n := collectionTotal(t, hs, "customers"); n != 4 {
		t.Errorf("%d customers stored after one of five was deleted, want 4", n)
	}
}

// TestStripeExpandCustomer: expand[] on a customer, whose answer is
// anyOf a customer or a deleted one, answers the stored test clock.
func TestStripeExpandCustomer(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	clock, err := sc.V1TestHelpersTestClocks.Create(ctx, &stripe.TestHelpersTestClockCreateParams{FrozenTime: stripe.Int64(1700000000)})
	if err != nil {
		t.Fatal(err)
	}
	cus, err := sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String("clock@example.com"), TestClock: stripe.String(clock.ID)})
	if err != nil {
		t.Fatal(err)
	}
	rp := &stripe.CustomerRetrieveParams{}
	rp.AddExpand("test_clock")
	got, err := sc.V1Customers.Retrieve(ctx, cus.ID, rp)
	if err != nil || got.TestClock == nil || got.TestClock.ID != clock.ID || got.TestClock.FrozenTime != 1700000000 {
		t.Fatalf("retrieve with expand[]=test_clock: %+v (clock %+v), %v", got, got.TestClock, err)
	}
	// An includable list that state does not keep is empty, not the
	// spec's made-up subscription of another customer.
	up := &stripe.CustomerUpdateParams{}
	up.AddExpand("subscriptions")
	got, err = sc.V1Customers.Update(ctx, cus.ID, up)
	if err != nil || got.Subscriptions == nil || len(got.Subscriptions.Data) != 0 || got.Subscriptions.HasMore {
		t.Fatalf("update with expand[]=subscriptions: %+v, %v", got.Subscriptions, err)
	}
}

// TestStripePaymentIntentLifecycle: an intent for a stored customer, read
// back with expand[]=customer, confirmed (and read back succeeded),
// refunded; another canceled (and read back canceled). Each step keeps
// the intent's id.
func TestStripePaymentIntentLifecycle(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()

	cus, err := sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String("payer@example.com")})
	if err != nil {
		t.Fatal(err)
	}
	pi, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(2000), Currency: stripe.String("usd"), Customer: stripe.String(cus.ID)})
	if err != nil || pi.Status != stripe.PaymentIntentStatusRequiresPaymentMethod || pi.CanceledAt != 0 || pi.LastPaymentError != nil {
		t.Fatalf("create: %+v, %v", pi, err)
	}
	rp := &stripe.PaymentIntentRetrieveParams{}
	rp.AddExpand("customer")
	expanded, err := sc.V1PaymentIntents.Retrieve(ctx, pi.ID, rp)
	if err != nil || expanded.Customer == nil || expanded.Customer.ID != cus.ID || expanded.Customer.Email != "payer@example.com" {
		t.Fatalf("retrieve with expand[]=customer: %+v (customer %+v), %v", expanded, expanded.Customer, err)
	}

	confirmed, err := sc.V1PaymentIntents.Confirm(ctx, pi.ID, &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String("pm_card_visa")})
	if err != nil || confirmed.ID != pi.ID || confirmed.Status != stripe.PaymentIntentStatusSucceeded || confirmed.PaymentMethod == nil || confirmed.PaymentMethod.ID != "pm_card_visa" || confirmed.Amount != 2000 {
		t.Fatalf("confirm: %+v, %v", confirmed, err)
	}
	if got, err := sc.V1PaymentIntents.Retrieve(ctx, pi.ID, nil); err != nil || got.Status != stripe.PaymentIntentStatusSucceeded {
		t.Fatalf("retrieve after confirm: %+v, %v", got, err)
	}
	refund, err := sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{PaymentIntent: stripe.String(pi.ID), Amount: stripe.Int64(2000)})
	if err != nil || !strings.HasPrefix(refund.ID, "re_") || refund.PaymentIntent == nil || refund.PaymentIntent.ID != pi.ID || refund.Amount != 2000 || refund.Status != stripe.RefundStatusSucceeded {
		t.Fatalf("refund: %+v, %v", refund, err)
	}
	if got, err := sc.V1Refunds.Retrieve(ctx, refund.ID, nil); err != nil || got.PaymentIntent == nil || got.PaymentIntent.ID != pi.ID {
		t.Fatalf("retrieve the refund: %+v, %v", got, err)
	}
	// Deeper expansion, as Stripe's: the refund's intent and its customer;
	// and on a list, each item's customer.
	rr := &stripe.RefundRetrieveParams{}
	rr.AddExpand("payment_intent.customer")
	if got, err := sc.V1Refunds.Retrieve(ctx, refund.ID, rr); err != nil || got.PaymentIntent == nil || got.PaymentIntent.Amount != 2000 ||
		got.PaymentIntent.Customer == nil || got.PaymentIntent.Customer.Email != "payer@example.com" {
		t.Fatalf("retrieve the refund with expand[]=payment_intent.customer: %+v, %v", got, err)
	}
	lp := &stripe.PaymentIntentListParams{Customer: stripe.String(cus.ID)}
	lp.AddExpand("data.customer")
	n := 0
	for got, err := range sc.V1PaymentIntents.List(ctx, lp).All(ctx) {
		if err != nil || got.Customer == nil || got.Customer.Email != "payer@example.com" {
			t.Fatalf("list with expand[]=data.customer: %+v, %v", got, err)
		}
		n++
	}
	if n != 1 {
		t.Errorf("listed %d intents of the customer, want 1", n)
	}

	other, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(500), Currency: stripe.String("eur")})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Unix()
	canceled, err := sc.V1PaymentIntents.Cancel(ctx, other.ID, &stripe.PaymentIntentCancelParams{CancellationReason: stripe.String("requested_by_customer")})
	if err != nil || canceled.ID != other.ID || canceled.Status != stripe.PaymentIntentStatusCanceled || canceled.CanceledAt < before ||
		canceled.CancellationReason != stripe.PaymentIntentCancellationReasonRequestedByCustomer {
		t.Fatalf("cancel: %+v, %v", canceled, err)
	}
	if got, err := sc.V1PaymentIntents.Retrieve(ctx, other.ID, nil); err != nil || got.Status != stripe.PaymentIntentStatusCanceled {
		t.Fatalf("retrieve after cancel: %+v, %v", got, err)
	}
	paid, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(700), Currency: stripe.String("usd"), PaymentMethod: stripe.String("pm_card_visa"), Confirm: stripe.Bool(true)})
	if err != nil || paid.Status != stripe.PaymentIntentStatusSucceeded || paid.PaymentMethod == nil || paid.PaymentMethod.ID != "pm_card_visa" {
		t.Fatalf("create with confirm=true: %+v, %v", paid, err)
	}
	_, err = sc.V1PaymentIntents.Confirm(ctx, "pi_nope", nil)
	if se := stripeError(t, err); se.HTTPStatusCode != 404 || se.Code != stripe.ErrorCodeResourceMissing {
		t.Errorf("confirm an intent never created: %+v", se)
	}
}

// TestStripeDeclines pays with the declining test cards Stripe documents
// (a test payment method, a card number, a token): each raises stripe-go's
// card error with Stripe's code and decline code. A retry with the same
// key replays the decline, as Stripe stores it. A payment intent confirmed
// with a declining payment method is kept, as Stripe keeps it:
// requires_payment_method, with the error as its last_payment_error; the
// error carries it (Error.PaymentIntent), and payment_intent.payment_failed
// is sent once per decline, not per replay.
func TestStripeDeclines(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	pending, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(100), Currency: stripe.String("usd")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		pay     func(key string) error
		code    stripe.ErrorCode
		decline stripe.DeclineCode
		intent  string // the intent the error carries: "new", the pending one's id, or "" for none
		method  string // the payment method that declined, of an intent
		charged bool   // a failed charge is made, which the error names
	}{
		{"create and confirm, pm_card_chargeDeclined", func(key string) error {
			p := &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(2000), Currency: stripe.String("usd"), PaymentMethod: stripe.String("pm_card_chargeDeclined"), Confirm: stripe.Bool(true)}
			p.SetIdempotencyKey(key)
			_, err := sc.V1PaymentIntents.Create(ctx, p)
			return err
		}, stripe.ErrorCodeCardDeclined, stripe.DeclineCodeGenericDecline, "new", "pm_card_chargeDeclined", true},
		{"create and confirm, card number 4000000000009995", func(key string) error {
			p := &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(2000), Currency: stripe.String("usd"), Confirm: stripe.Bool(true),
				PaymentMethodData: &stripe.PaymentIntentCreatePaymentMethodDataParams{Type: stripe.String("card")}}
			p.AddExtra("payment_method_data[card][number]", "4000000000009995")
			p.SetIdempotencyKey(key)
			_, err := sc.V1PaymentIntents.Create(ctx, p)
			return err
		}, stripe.ErrorCodeCardDeclined, stripe.DeclineCodeInsufficientFunds, "", "", false},
		{"confirm, pm_card_chargeDeclinedExpiredCard", func(key string) error {
			p := &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String("pm_card_chargeDeclinedExpiredCard")}
			p.SetIdempotencyKey(key)
			_, err := sc.V1PaymentIntents.Confirm(ctx, pending.ID, p)
			return err
		}, stripe.ErrorCodeExpiredCard, stripe.DeclineCodeExpiredCard, pending.ID, "pm_card_chargeDeclinedExpiredCard", true},
		{"charge, tok_chargeDeclinedIncorrectCvc", func(key string) error {
			p := &stripe.ChargeCreateParams{Amount: stripe.Int64(2000), Currency: stripe.String("usd"), Source: &stripe.PaymentSourceSourceParams{Token: stripe.String("tok_chargeDeclinedIncorrectCvc")}}
			p.SetIdempotencyKey(key)
			_, err := sc.V1Charges.Create(ctx, p)
			return err
		}, stripe.ErrorCodeIncorrectCVC, stripe.DeclineCodeIncorrectCVC, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			failedCharges := map[string]bool{}
			defer func() {
				if tc.charged && len(failedCharges) != 1 || !tc.charged && len(failedCharges) != 0 {
					t.Errorf("failed charges %v; want one (the replay's the first's) if charged (%v)", failedCharges, tc.charged)
				}
			}()
			for attempt, wantReplay := range []string{"", "true"} {
				err := tc.pay("decline " + tc.name)
				se := stripeError(t, err)
				var ce *stripe.CardError
				if !errors.As(err, &ce) || se.HTTPStatusCode != 402 || se.Type != stripe.ErrorTypeCard || se.Code != tc.code || ce.DeclineCode != tc.decline ||
					se.Msg == "" || !strings.HasPrefix(se.RequestID, "req_") {
					t.Fatalf("attempt %d: %+v (card error %+v)", attempt+1, se, ce)
				}
				if got := se.LastResponse.Header.Get("Idempotent-Replayed"); got != wantReplay {
					t.Errorf("attempt %d: Idempotent-Replayed %q, want %q", attempt+1, got, wantReplay)
				}
				if tc.charged && tc.intent == "" {
					// A charge declined: made, failed, and named by the error.
					ch, err := sc.V1Charges.Retrieve(ctx, se.ChargeID, nil)
					if err != nil || !strings.HasPrefix(ch.ID, "ch_") || ch.Status != stripe.ChargeStatusFailed || ch.Paid || ch.Captured || ch.Amount != 2000 ||
						ch.FailureCode != string(tc.code) || ch.FailureMessage != se.Msg || ch.Outcome == nil || ch.Outcome.Type != "issuer_declined" || ch.Outcome.Reason != string(tc.decline) {
						t.Fatalf("attempt %d: the error's charge %q read back: %+v, %v; want it failed, %s, %s", attempt+1, se.ChargeID, ch, err, tc.code, tc.decline)
					}
					failedCharges[ch.ID] = true
				} else if !tc.charged && se.ChargeID != "" {
					t.Errorf("attempt %d: the error names charge %q; want none", attempt+1, se.ChargeID)
				}
				pi := se.PaymentIntent
				switch {
				case tc.intent == "" && pi != nil:
					t.Errorf("attempt %d: the error carries a payment intent %+v; want none", attempt+1, pi)
				case tc.intent == "":
				case pi == nil || pi.Status != stripe.PaymentIntentStatusRequiresPaymentMethod || pi.LastPaymentError == nil || pi.LastPaymentError.Code != tc.code:
					t.Errorf("attempt %d: the error's payment intent %+v; want one requiring a payment method, last error %s", attempt+1, pi, tc.code)
				case tc.intent != "new" && pi.ID != tc.intent:
					t.Errorf("attempt %d: the error's payment intent %s; want the one confirmed, %s", attempt+1, pi.ID, tc.intent)
				default:
					got, err := sc.V1PaymentIntents.Retrieve(ctx, pi.ID, nil)
					if err != nil || got.Status != stripe.PaymentIntentStatusRequiresPaymentMethod || got.LastPaymentError == nil ||
						got.LastPaymentError.Code != tc.code || got.LastPaymentError.DeclineCode != tc.decline || got.LastPaymentError.Type != stripe.ErrorTypeCard {
						t.Errorf("attempt %d: the declined intent read back: %+v, %v", attempt+1, got, err)
					}
					// As Stripe's: the intent keeps no payment method, its
					// last error names the one that declined.
					if got != nil && (got.PaymentMethod != nil || got.LastPaymentError == nil || got.LastPaymentError.PaymentMethod == nil || got.LastPaymentError.PaymentMethod.ID != tc.method) {
						t.Errorf("attempt %d: the declined intent's payment method %+v, its last error's %+v; want none, and %s", attempt+1, got.PaymentMethod, got.LastPaymentError, tc.method)
					}
					// The decline made a charge, failed, which the intent,
					// its last error and the 402 name.
					if got == nil || got.LatestCharge == nil || !strings.HasPrefix(got.LatestCharge.ID, "ch_") || got.LastPaymentError == nil ||
						got.LastPaymentError.ChargeID != got.LatestCharge.ID || se.ChargeID != got.LatestCharge.ID || pi.LatestCharge == nil || pi.LatestCharge.ID != got.LatestCharge.ID {
						t.Fatalf("attempt %d: the declined intent read back %+v, the 402's %+v, its charge %q; want one ch_ named by the intent, its last error and the error", attempt+1, got, pi, se.ChargeID)
					}
					failedCharges[got.LatestCharge.ID] = true
					ch, err := sc.V1Charges.Retrieve(ctx, got.LatestCharge.ID, nil)
					if err != nil || ch.Status != stripe.ChargeStatusFailed || ch.Paid || ch.Captured || ch.AmountCaptured != 0 || ch.Amount != got.Amount || ch.Currency != got.Currency ||
						ch.FailureCode != string(tc.code) || ch.FailureMessage != se.Msg || ch.PaymentIntent == nil || ch.PaymentIntent.ID != got.ID ||
						ch.PaymentMethod != tc.method {
						t.Fatalf("attempt %d: the failed charge read back: %+v, %v; want failed, not paid or captured, of %s, failure %s %q, payment method %s", attempt+1, ch, err, got.ID, tc.code, se.Msg, tc.method)
					}
					seller := "The bank did not return any further details with this decline."
					if tc.decline != stripe.DeclineCodeGenericDecline {
						seller = "The bank returned the decline code `" + string(tc.decline) + "`."
					}
					if o := ch.Outcome; o == nil || o.Type != "issuer_declined" || o.NetworkStatus != "declined_by_network" || o.Reason != string(tc.decline) || o.SellerMessage != seller {
						t.Errorf("attempt %d: the failed charge's outcome %+v; want issuer_declined, declined_by_network, reason %s, %q", attempt+1, o, tc.decline, seller)
					}
				}
			}
		})
	}
	// Confirmed again without a payment method, the declined intent is
	// Stripe's 400: it has none.
	_, err = sc.V1PaymentIntents.Confirm(ctx, pending.ID, nil)
	if se := stripeError(t, err); se.HTTPStatusCode != 400 || string(se.Code) != "payment_intent_unexpected_state" || !strings.Contains(se.Msg, "missing a payment method") {
		t.Errorf("confirm the declined intent sending no payment method: %+v", se)
	}
	if n := collectionTotal(t, hs, "payment_intents"); n != 2 {
		t.Errorf("%d payment intents stored, want the pending one and the one created and declined", n)
	}
	failed := eventsOf(t, sc, "payment_intent.payment_failed")
	for _, ev := range failed {
		if pi, _ := ev.Data.Object["status"].(string); pi != "requires_payment_method" {
			t.Errorf("payment_failed event's object: %v", ev.Data.Object)
		}
	}
	if len(failed) != 2 {
		t.Errorf("%d payment_intent.payment_failed events; want one per declined intent, not per replay: 2", len(failed))
	}
	chargeFailed := eventsOf(t, sc, "charge.failed")
	for _, ev := range chargeFailed {
		if ev.Data.Object["status"] != "failed" || ev.Data.Object["paid"] != false || !strings.HasPrefix(fmt.Sprint(ev.Data.Object["id"]), "ch_") {
			t.Errorf("charge.failed event's object: %v", ev.Data.Object)
		}
	}
	if len(chargeFailed) != 3 {
		t.Errorf("%d charge.failed events; want one per declined intent or charge, not per replay: 3", len(chargeFailed))
	}
	// Confirmed again with a card that pays, the intent succeeds with a
	// charge of its own; the failed one stays failed.
	paid, err := sc.V1PaymentIntents.Confirm(ctx, pending.ID, &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String("pm_card_visa")})
	if err != nil || paid.Status != stripe.PaymentIntentStatusSucceeded || paid.LastPaymentError != nil || paid.LatestCharge == nil {
		t.Fatalf("confirm the declined intent with pm_card_visa: %+v, %v; want succeeded, no last error, a charge", paid, err)
	}
	var statuses []string
	for ch, err := range sc.V1Charges.List(ctx, &stripe.ChargeListParams{PaymentIntent: stripe.String(pending.ID)}).All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, string(ch.Status))
	}
	if !slices.Equal(statuses, []string{"succeeded", "failed"}) {
		t.Errorf("the intent's charges, newest first: %v; want succeeded, failed", statuses)
	}
}

// TestStripeStateErrors: an action on an intent in a state it does not
// take is Stripe's 400 payment_intent_unexpected_state (or
// setup_intent_unexpected_state), carrying the intent as stored, and
// changes nothing: confirming a succeeded intent (with a declining
// payment method too), or one without a payment method sending none,
// canceling a succeeded or canceled one, capturing one that is not
// requires_capture. No event is sent for a refusal, and
// a replay of the key answers it again.
func TestStripeStateErrors(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	paid, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(700), Currency: stripe.String("usd"), PaymentMethod: stripe.String("pm_card_visa"), Confirm: stripe.Bool(true)})
	if err != nil || paid.Status != stripe.PaymentIntentStatusSucceeded {
		t.Fatalf("create and confirm: %+v, %v", paid, err)
	}
	fresh, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(300), Currency: stripe.String("usd")})
	if err != nil {
		t.Fatal(err)
	}
	canceled, err := sc.V1PaymentIntents.Cancel(ctx, fresh.ID, nil)
	if err != nil || canceled.Status != stripe.PaymentIntentStatusCanceled {
		t.Fatalf("cancel: %+v, %v", canceled, err)
	}
	pending, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(400), Currency: stripe.String("usd")})
	if err != nil {
		t.Fatal(err)
	}
	manual, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(500), Currency: stripe.String("usd"), PaymentMethod: stripe.String("pm_card_visa"), Confirm: stripe.Bool(true), CaptureMethod: stripe.String("manual")})
	if err != nil || manual.Status != stripe.PaymentIntentStatusRequiresCapture {
		t.Fatalf("create with manual capture: %+v, %v", manual, err)
	}
	if got, err := sc.V1PaymentIntents.Capture(ctx, manual.ID, nil); err != nil || got.Status != stripe.PaymentIntentStatusSucceeded {
		t.Fatalf("capture: %+v, %v", got, err)
	}
	for _, tc := range []struct {
		name   string
		call   func(key string) error
		id     string
		status stripe.PaymentIntentStatus
		msg    string
	}{
		{"confirm a succeeded intent", func(key string) error {
			p := &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String("pm_card_visa")}
			p.SetIdempotencyKey(key)
			_, err := sc.V1PaymentIntents.Confirm(ctx, paid.ID, p)
			return err
		}, paid.ID, stripe.PaymentIntentStatusSucceeded, "You cannot confirm this PaymentIntent because it has a status of succeeded."},
		{"confirm a succeeded intent with a declining payment method", func(key string) error {
			p := &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String("pm_card_chargeDeclined")}
			p.SetIdempotencyKey(key)
			_, err := sc.V1PaymentIntents.Confirm(ctx, paid.ID, p)
			return err
		}, paid.ID, stripe.PaymentIntentStatusSucceeded, "You cannot confirm this PaymentIntent because it has a status of succeeded."},
		{"confirm a canceled intent", func(key string) error {
			p := &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String("pm_card_visa")}
			p.SetIdempotencyKey(key)
			_, err := sc.V1PaymentIntents.Confirm(ctx, fresh.ID, p)
			return err
		}, fresh.ID, stripe.PaymentIntentStatusCanceled, "You cannot confirm this PaymentIntent because it has a status of canceled."},
		{"cancel a succeeded intent", func(key string) error {
			p := &stripe.PaymentIntentCancelParams{}
			p.SetIdempotencyKey(key)
			_, err := sc.V1PaymentIntents.Cancel(ctx, paid.ID, p)
			return err
		}, paid.ID, stripe.PaymentIntentStatusSucceeded, "You cannot cancel this PaymentIntent because it has a status of succeeded."},
		{"cancel a canceled intent", func(key string) error {
			p := &stripe.PaymentIntentCancelParams{}
			p.SetIdempotencyKey(key)
			_, err := sc.V1PaymentIntents.Cancel(ctx, fresh.ID, p)
			return err
		}, fresh.ID, stripe.PaymentIntentStatusCanceled, "You cannot cancel this PaymentIntent because it has a status of canceled."},
		{"confirm, sending none, an intent without a payment method", func(key string) error {
			p := &stripe.PaymentIntentConfirmParams{}
			p.SetIdempotencyKey(key)
			_, err := sc.V1PaymentIntents.Confirm(ctx, pending.ID, p)
			return err
		}, pending.ID, stripe.PaymentIntentStatusRequiresPaymentMethod, "You cannot confirm this PaymentIntent because it's missing a payment method."},
		{"capture an intent that requires a payment method", func(key string) error {
			p := &stripe.PaymentIntentCaptureParams{}
			p.SetIdempotencyKey(key)
			_, err := sc.V1PaymentIntents.Capture(ctx, pending.ID, p)
			return err
		}, pending.ID, stripe.PaymentIntentStatusRequiresPaymentMethod, "This PaymentIntent could not be captured because it has a status of requires_payment_method."},
		{"capture a captured intent", func(key string) error {
			p := &stripe.PaymentIntentCaptureParams{}
			p.SetIdempotencyKey(key)
			_, err := sc.V1PaymentIntents.Capture(ctx, manual.ID, p)
			return err
		}, manual.ID, stripe.PaymentIntentStatusSucceeded, "This PaymentIntent could not be captured because it has a status of succeeded."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for attempt, wantReplay := range []string{"", "true"} {
				se := stripeError(t, tc.call("state "+tc.name))
				if se.HTTPStatusCode != 400 || se.Type != stripe.ErrorTypeInvalidRequest || string(se.Code) != "payment_intent_unexpected_state" ||
					!strings.HasPrefix(se.Msg, tc.msg) || !strings.HasPrefix(se.RequestID, "req_") {
					t.Fatalf("attempt %d: %+v; want 400 payment_intent_unexpected_state, %q", attempt+1, se, tc.msg)
				}
				if got := se.LastResponse.Header.Get("Idempotent-Replayed"); got != wantReplay {
					t.Errorf("attempt %d: Idempotent-Replayed %q, want %q", attempt+1, got, wantReplay)
				}
				if pi := se.PaymentIntent; pi == nil || pi.ID != tc.id || pi.Status != tc.status {
					t.Errorf("attempt %d: the error's payment intent %+v; want %s, %s", attempt+1, pi, tc.id, tc.status)
				}
			}
			if got, err := sc.V1PaymentIntents.Retrieve(ctx, tc.id, nil); err != nil || got.Status != tc.status || got.LastPaymentError != nil {
				t.Errorf("the intent read back: %+v, %v; want it unchanged, %s", got, err, tc.status)
			}
		})
	}

	// One created with payment_method_data has the payment method made
	// from it: a bare confirm succeeds.
	withData, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(600), Currency: stripe.String("usd"),
		PaymentMethodData: &stripe.PaymentIntentCreatePaymentMethodDataParams{Type: stripe.String("ideal")}})
	if err != nil || withData.Status != stripe.PaymentIntentStatusRequiresConfirmation || withData.PaymentMethod == nil || !strings.HasPrefix(withData.PaymentMethod.ID, "pm_") {
		t.Fatalf("create with payment_method_data: %+v, %v", withData, err)
	}
	if got, err := sc.V1PaymentIntents.Confirm(ctx, withData.ID, nil); err != nil || got.Status != stripe.PaymentIntentStatusSucceeded {
		t.Errorf("a bare confirm of the intent created with payment_method_data: %+v, %v", got, err)
	}
	// The intent without one, confirmed with one, succeeds.
	if got, err := sc.V1PaymentIntents.Confirm(ctx, pending.ID, &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String("pm_card_visa")}); err != nil || got.Status != stripe.PaymentIntentStatusSucceeded {
		t.Errorf("confirm the intent without a payment method, sending one: %+v, %v", got, err)
	}

	seti, err := sc.V1SetupIntents.Create(ctx, &stripe.SetupIntentCreateParams{PaymentMethod: stripe.String("pm_card_visa"), Confirm: stripe.Bool(true)})
	if err != nil || seti.Status != stripe.SetupIntentStatusSucceeded {
		t.Fatalf("setup intent, confirmed: %+v, %v", seti, err)
	}
	_, err = sc.V1SetupIntents.Confirm(ctx, seti.ID, &stripe.SetupIntentConfirmParams{PaymentMethod: stripe.String("pm_card_visa")})
	if se := stripeError(t, err); se.HTTPStatusCode != 400 || string(se.Code) != "setup_intent_unexpected_state" || se.SetupIntent == nil || se.SetupIntent.ID != seti.ID ||
		!strings.HasPrefix(se.Msg, "You cannot confirm this SetupIntent because it has a status of succeeded.") {
		t.Errorf("confirm a succeeded setup intent: %+v", se)
	}
	_, err = sc.V1SetupIntents.Cancel(ctx, seti.ID, nil)
	if se := stripeError(t, err); se.HTTPStatusCode != 400 || string(se.Code) != "setup_intent_unexpected_state" ||
		!strings.HasPrefix(se.Msg, "You cannot cancel this SetupIntent because it has a status of succeeded.") {
		t.Errorf("cancel a succeeded setup intent: %+v", se)
	}

	counts := map[string]int{}
	for ev, err := range sc.V1Events.List(ctx, nil).All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		counts[string(ev.Type)]++
	}
	want := map[string]int{"payment_intent.created": 5, "payment_intent.succeeded": 4, "payment_intent.canceled": 1, "payment_intent.amount_capturable_updated": 1, "setup_intent.created": 1, "setup_intent.succeeded": 1}
	for typ, n := range want {
		if counts[typ] != n {
			t.Errorf("%d %s events, want %d (none for a refusal): %v", counts[typ], typ, n, counts)
		}
	}
	if counts["payment_intent.payment_failed"] != 0 || counts["setup_intent.canceled"] != 0 {
		t.Errorf("events %v; want no payment_failed or setup_intent.canceled: those calls were refused", counts)
	}
}

// TestStripeLostAnswerKey: a create whose Idempotency-Key starts with
// lost- makes the customer and then resets the connection, on the
// server; stripe-go's own retry resends it with the same key and gets
// the answer as a replay, and one customer exists.
func TestStripeLostAnswerKey(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	p := &stripe.CustomerCreateParams{Email: stripe.String("lost@example.com")}
	p.SetIdempotencyKey("lost-1")
	c, err := sc.V1Customers.Create(context.Background(), p)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if c.LastResponse.Header.Get("Idempotent-Replayed") != "true" || c.Email != "lost@example.com" {
		t.Errorf("the retry was not a replay: %v %+v", c.LastResponse.Header, c)
	}
	if n := collectionTotal(t, hs, "customers"); n != 1 {
		t.Errorf("%d customers stored, want 1", n)
	}
	res, err := http.Get(hs.URL + "/__admin/requests?route=" + url.QueryEscape("PostCustomers, answer lost"))
	if err != nil {
		t.Fatal(err)
	}
	var journal struct{ Total int }
	err = json.NewDecoder(res.Body).Decode(&journal)
	res.Body.Close()
	if err != nil || journal.Total != 2 {
		t.Errorf("the lost-answer route answered %d requests (%v), want 2: the lost one and the replay", journal.Total, err)
	}
}

// TestStripeLostConfirmedPayment: the lost answer of the hard path, a
// payment intent created and confirmed at once (and one authorized only,
// and one created with a payment method to confirm later): stripe-go's
// retry with the same key gets the intent as a replay, in the state the
// answer had, and it was paid once.
func TestStripeLostConfirmedPayment(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	for _, tc := range []struct {
		key, capture string
		status       stripe.PaymentIntentStatus
	}{
		{"lost-pay-1", "", stripe.PaymentIntentStatusSucceeded},
		{"lost-pay-2", "manual", stripe.PaymentIntentStatusRequiresCapture},
	} {
		p := &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(1500), Currency: stripe.String("usd"), PaymentMethod: stripe.String("pm_card_visa"), Confirm: stripe.Bool(true)}
		if tc.capture != "" {
			p.CaptureMethod = stripe.String(tc.capture)
		}
		p.SetIdempotencyKey(tc.key)
		pi, err := sc.V1PaymentIntents.Create(ctx, p)
		if err != nil || pi.Status != tc.status || pi.LastResponse.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("%s: %+v, %v; want %s, answered to the retry as a replay", tc.key, pi, err, tc.status)
		}
		if got, err := sc.V1PaymentIntents.Retrieve(ctx, pi.ID, nil); err != nil || got.Status != tc.status {
			t.Errorf("%s read back: %+v, %v", tc.key, got, err)
		}
	}
	// Created with a payment method, not confirmed: the lost answer's
	// intent waits for its confirmation, as the answered one does.
	p := &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(1500), Currency: stripe.String("usd"), PaymentMethod: stripe.String("pm_card_visa")}
	p.SetIdempotencyKey("lost-pay-3")
	pending, err := sc.V1PaymentIntents.Create(ctx, p)
	if err != nil || pending.Status != stripe.PaymentIntentStatusRequiresConfirmation || pending.LastResponse.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("lost-pay-3: %+v, %v; want requires_confirmation, answered to the retry as a replay", pending, err)
	}
	if got, err := sc.V1PaymentIntents.Confirm(ctx, pending.ID, nil); err != nil || got.Status != stripe.PaymentIntentStatusSucceeded {
		t.Errorf("a bare confirm of the lost answer's intent: %+v, %v", got, err)
	}
	if n := collectionTotal(t, hs, "payment_intents"); n != 3 {
		t.Errorf("%d payment intents stored, want 3: one per key", n)
	}
	counts := map[string]int{}
	for ev, err := range sc.V1Events.List(ctx, nil).All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		counts[string(ev.Type)]++
	}
	if counts["payment_intent.succeeded"] != 2 || counts["payment_intent.amount_capturable_updated"] != 1 || counts["payment_intent.created"] != 3 {
		t.Errorf("events %v; want each intent's once", counts)
	}
}

// TestStripeUnknownURL: a URL Stripe's spec does not have gets Stripe's
// 404, and is journaled as unmatched; one it has, listing customers,
// answers (the hand-written example answered it with the 404).
func TestStripeUnknownURL(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	for _, tc := range []struct {
		method, path string
		status       int
		want         string
	}{
		{"GET", "/v1/nothing/here", 404, "Unrecognized request URL (GET: /v1/nothing/here)"},
		{"PUT", "/v1/customers", 404, "Unrecognized request URL (PUT: /v1/customers)"},
		{"GET", "/v1/customers", 200, `"object":"list"`},
		{"GET", "/v1/balance", 200, `"object":"balance"`},
	} {
		req, _ := http.NewRequest(tc.method, hs.URL+tc.path, nil)
		req.SetBasicAuth(testKey, "")
		req.Header.Set("Stripe-Version", "2024-06-20")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s %s: %d %s; want %d with %s", tc.method, tc.path, res.StatusCode, body, tc.status, tc.want)
		}
		if v := res.Header.Get("Stripe-Version"); v != "2024-06-20" {
			t.Errorf("%s %s: Stripe-Version %q, want the request's echoed", tc.method, tc.path, v)
		}
		if rid := res.Header.Get("Request-Id"); !strings.HasPrefix(rid, "req_") || len(rid) != 18 {
			t.Errorf("%s %s: Request-Id %q", tc.method, tc.path, rid)
		}
	}
	res, err := http.Get(hs.URL + "/__admin/requests?matched=false")
	if err != nil {
		t.Fatal(err)
	}
	var journal struct{ Total int }
	err = json.NewDecoder(res.Body).Decode(&journal)
	res.Body.Close()
	if err != nil || journal.Total != 2 {
		t.Errorf("%d requests journaled as unmatched (%v), want the two 404s", journal.Total, err)
	}
}

// TestStripeKeyOnAnotherEndpoint: a key is the account's, whatever the
// endpoint, as Stripe's is: sent with the same (empty) parameters to
// another endpoint it is refused, both on the overlay's routes and on the
// ones generated from the spec, and nothing is done there.
func TestStripeKeyOnAnotherEndpoint(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	pi, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(100), Currency: stripe.String("usd")})
	if err != nil {
		t.Fatal(err)
	}
	refused := func(what string, err error) {
		t.Helper()
		var ie *stripe.IdempotencyError
		if se := stripeError(t, err); se.HTTPStatusCode != 400 || !errors.As(err, &ie) {
			t.Errorf("%s: %+v; want a 400 idempotency error", what, se)
		}
	}
	cp := &stripe.CustomerCreateParams{}
	cp.SetIdempotencyKey("shared-key")
	if _, err := sc.V1Customers.Create(ctx, cp); err != nil {
		t.Fatal(err)
	}
	xp := &stripe.PaymentIntentCancelParams{}
	xp.SetIdempotencyKey("shared-key")
	_, err = sc.V1PaymentIntents.Cancel(ctx, pi.ID, xp)
	refused("cancel with a key a customer create used", err)
	if got, err := sc.V1PaymentIntents.Retrieve(ctx, pi.ID, nil); err != nil || got.Status != stripe.PaymentIntentStatusRequiresPaymentMethod {
		t.Errorf("the intent after the refused cancel: %+v, %v", got, err)
	}
	// Two operations the overlay does not name: routes generated from
	// the spec.
	up := &stripe.PaymentIntentUpdateParams{}
	up.SetIdempotencyKey("generated-key")
	if _, err := sc.V1PaymentIntents.Update(ctx, pi.ID, up); err != nil {
		t.Fatal(err)
	}
	ap := &stripe.PaymentIntentApplyCustomerBalanceParams{}
	ap.SetIdempotencyKey("generated-key")
	_, err = sc.V1PaymentIntents.ApplyCustomerBalance(ctx, pi.ID, ap)
	refused("apply_customer_balance with the key an update used", err)
}

// A customer's payment methods are those attached to it: GET
// /v1/customers/{customer}/payment_methods lists them newest first,
// pages, narrows by type, and loses one when it is detached. A payment
// method's metadata is what the client sent, not the fixture's.
func TestStripeCustomerPaymentMethods(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()

	c, err := sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String("pm@example.com")})
	if err != nil {
		t.Fatal(err)
	}
	other, err := sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String("other@example.com")})
	if err != nil {
		t.Fatal(err)
	}
	var pms []string
	for range 3 {
		pm, err := sc.V1PaymentMethods.Create(ctx, &stripe.PaymentMethodCreateParams{
			Type: stripe.String("card"), Card: &stripe.PaymentMethodCreateCardParams{Token: stripe.String("tok_visa")}})
		if err != nil {
			t.Fatal(err)
		}
		// The fixture's metadata (order_id) is not the client's.
		if len(pm.Metadata) != 0 {
			t.Errorf("payment method created without metadata has %v", pm.Metadata)
		}
		pms = append(pms, pm.ID)
	}
	tagged := &stripe.PaymentMethodCreateParams{Type: stripe.String("card"), Card: &stripe.PaymentMethodCreateCardParams{Token: stripe.String("tok_visa")}}
	tagged.AddMetadata("user", "42")
	if pm, err := sc.V1PaymentMethods.Create(ctx, tagged); err != nil || len(pm.Metadata) != 1 || pm.Metadata["user"] != "42" {
		t.Errorf("payment method created with metadata user=42: %v, %v", pm.Metadata, err)
	}
	for _, id := range pms[:2] {
		pm, err := sc.V1PaymentMethods.Attach(ctx, id, &stripe.PaymentMethodAttachParams{Customer: stripe.String(c.ID)})
		if err != nil || pm.Customer == nil || pm.Customer.ID != c.ID {
			t.Fatalf("attach %s: %+v, %v", id, pm, err)
		}
	}
	list := func(p *stripe.CustomerListPaymentMethodsParams) []string {
		t.Helper()
		var ids []string
		for pm, err := range sc.V1Customers.ListPaymentMethods(ctx, p).All(ctx) {
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			ids = append(ids, pm.ID)
		}
		return ids
	}
	// One a page: the client follows has_more and starting_after.
	paged := &stripe.CustomerListPaymentMethodsParams{Customer: stripe.String(c.ID), ListParams: stripe.ListParams{Limit: stripe.Int64(1)}}
	if got, want := list(paged), []string{pms[1], pms[0]}; !slices.Equal(got, want) {
		t.Errorf("customer's payment methods %v, want %v (newest first)", got, want)
	}
	// One of them, read through the customer; another customer's or one
	// never attached is Stripe's 404.
	if got, err := sc.V1Customers.RetrievePaymentMethod(ctx, pms[0], &stripe.CustomerRetrievePaymentMethodParams{Customer: stripe.String(c.ID)}); err != nil || got.ID != pms[0] {
		t.Errorf("customer's payment method %s: %+v, %v", pms[0], got, err)
	}
	for _, tc := range [][2]string{{other.ID, pms[0]}, {c.ID, pms[2]}} {
		_, err := sc.V1Customers.RetrievePaymentMethod(ctx, tc[1], &stripe.CustomerRetrievePaymentMethodParams{Customer: stripe.String(tc[0])})
		if se := stripeError(t, err); se.HTTPStatusCode != 404 || se.Code != stripe.ErrorCodeResourceMissing {
			t.Errorf("payment method %s through customer %s: %+v; want 404", tc[1], tc[0], se)
		}
	}
	if got := list(&stripe.CustomerListPaymentMethodsParams{Customer: stripe.String(c.ID), Type: stripe.String("sepa_debit")}); len(got) != 0 {
		t.Errorf("type=sepa_debit: %v, want none", got)
	}
	if got := list(&stripe.CustomerListPaymentMethodsParams{Customer: stripe.String(other.ID)}); len(got) != 0 {
		t.Errorf("another customer's payment methods: %v, want none", got)
	}

	pm, err := sc.V1PaymentMethods.Detach(ctx, pms[1], nil)
	if err != nil || pm.Customer != nil {
		t.Fatalf("detach: %+v, %v", pm, err)
	}
	if got, want := list(&stripe.CustomerListPaymentMethodsParams{Customer: stripe.String(c.ID)}), []string{pms[0]}; !slices.Equal(got, want) {
		t.Errorf("after detaching %s: %v, want %v", pms[1], got, want)
	}

	// A customer never created, or another API key's, is Stripe's 404.
	for _, tc := range []struct {
		sc *stripe.Client
		id string
	}{{sc, "cus_nope"}, {client(hs, testKey+"x"), c.ID}} {
		var err error
		for _, err = range tc.sc.V1Customers.ListPaymentMethods(ctx, &stripe.CustomerListPaymentMethodsParams{Customer: stripe.String(tc.id)}).All(ctx) {
			break
		}
		se := stripeError(t, err)
		if se.HTTPStatusCode != 404 || se.Code != stripe.ErrorCodeResourceMissing || se.Msg != "No such customer: '"+tc.id+"'" {
			t.Errorf("payment methods of %s: %+v", tc.id, se)
		}
	}
}

// Canceling a subscription (DELETE /v1/subscriptions/{id}) keeps it,
// canceled, as Stripe does: it is read back and listed so, where before
// it was deleted and a retrieve was a 404.
func TestStripeSubscriptionCancel(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()

	c, err := sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String("sub@example.com")})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := sc.V1Subscriptions.Create(ctx, &stripe.SubscriptionCreateParams{
		Customer: stripe.String(c.ID), Items: []*stripe.SubscriptionCreateItemParams{{Price: stripe.String("price_1")}}})
	if err != nil || sub.Customer == nil || sub.Customer.ID != c.ID || sub.Status == stripe.SubscriptionStatusCanceled {
		t.Fatalf("create: %+v, %v", sub, err)
	}
	before := time.Now().Unix()
	canceled, err := sc.V1Subscriptions.Cancel(ctx, sub.ID, nil)
	if err != nil || canceled.ID != sub.ID || canceled.Status != stripe.SubscriptionStatusCanceled || canceled.CanceledAt < before {
		t.Fatalf("cancel: %+v, %v", canceled, err)
	}
	got, err := sc.V1Subscriptions.Retrieve(ctx, sub.ID, nil)
	if err != nil || got.Status != stripe.SubscriptionStatusCanceled || got.CanceledAt != canceled.CanceledAt || got.Customer == nil || got.Customer.ID != c.ID {
		t.Fatalf("retrieve after cancel: %+v, %v", got, err)
	}
	var listed []string
	for s, err := range sc.V1Subscriptions.List(ctx, &stripe.SubscriptionListParams{Customer: stripe.String(c.ID), Status: stripe.String("canceled")}).All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, s.ID)
	}
	if !slices.Equal(listed, []string{sub.ID}) {
		t.Errorf("canceled subscriptions of the customer: %v, want [%s]", listed, sub.ID)
	}
}

// A Connect platform's request with Stripe-Account acts on that connected
// account: its customers, events and Idempotency-Keys are the account's,
// apart from the platform's own (the same API key without the header).
func TestStripeConnectedAccount(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	const acct = "acct_1Connected"

	mine := &stripe.CustomerCreateParams{Email: stripe.String("platform@example.com")}
	mine.SetIdempotencyKey("same-key")
	platform, err := sc.V1Customers.Create(ctx, mine)
	if err != nil {
		t.Fatal(err)
	}
	// The same Idempotency-Key, other parameters: another account's key,
	// so a create of its own, not Stripe's 400 idempotency_error.
	theirs := &stripe.CustomerCreateParams{Email: stripe.String("connected@example.com")}
	theirs.SetIdempotencyKey("same-key")
	theirs.SetStripeAccount(acct)
	connected, err := sc.V1Customers.Create(ctx, theirs)
	if err != nil || connected.ID == platform.ID || connected.Email != "connected@example.com" {
		t.Fatalf("create on the connected account: %+v, %v", connected, err)
	}

	as := func(account string) *stripe.CustomerRetrieveParams {
		p := &stripe.CustomerRetrieveParams{}
		if account != "" {
			p.SetStripeAccount(account)
		}
		return p
	}
	if _, err := sc.V1Customers.Retrieve(ctx, connected.ID, as("")); stripeError(t, err).HTTPStatusCode != 404 {
		t.Errorf("the platform read the connected account's customer")
	}
	if _, err := sc.V1Customers.Retrieve(ctx, platform.ID, as(acct)); stripeError(t, err).HTTPStatusCode != 404 {
		t.Errorf("the connected account read the platform's customer")
	}
	if got, err := sc.V1Customers.Retrieve(ctx, connected.ID, as(acct)); err != nil || got.Email != "connected@example.com" {
		t.Errorf("the connected account's customer: %+v, %v", got, err)
	}

	list := func(account string) (customers, events []string) {
		t.Helper()
		cp := &stripe.CustomerListParams{}
		ep := &stripe.EventListParams{}
		if account != "" {
			cp.SetStripeAccount(account)
			ep.SetStripeAccount(account)
		}
		for c, err := range sc.V1Customers.List(ctx, cp).All(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			customers = append(customers, c.ID)
		}
		for e, err := range sc.V1Events.List(ctx, ep).All(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			var obj struct{ ID string }
			_ = json.Unmarshal(e.Data.Raw, &obj)
			events = append(events, string(e.Type)+" "+obj.ID)
		}
		return customers, events
	}
	if customers, events := list(acct); !slices.Equal(customers, []string{connected.ID}) || !slices.Equal(events, []string{"customer.created " + connected.ID}) {
		t.Errorf("the connected account lists customers %v and events %v; want its own alone", customers, events)
	}
	if customers, events := list(""); !slices.Equal(customers, []string{platform.ID}) || !slices.Equal(events, []string{"customer.created " + platform.ID}) {
		t.Errorf("the platform lists customers %v and events %v; want its own alone", customers, events)
	}
}

// The states of a payment that an integration waits on: automatic
// capture succeeds with the whole amount received; capture_method=manual
// stops in requires_capture with the amount capturable, and a capture
// receives amount_to_capture or the whole; a setup intent, a Checkout
// Session and an invoice move as their actions say.
func TestStripeStateTransitions(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	pi := func(manual, confirm bool, amount int64) *stripe.PaymentIntent {
		t.Helper()
		p := &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(amount), Currency: stripe.String("usd"), PaymentMethod: stripe.String("pm_card_visa")}
		if manual {
			p.CaptureMethod = stripe.String("manual")
		}
		if confirm {
			p.Confirm = stripe.Bool(true)
		}
		got, err := sc.V1PaymentIntents.Create(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	check := func(what string, got *stripe.PaymentIntent, err error, status stripe.PaymentIntentStatus, received, capturable int64) {
		t.Helper()
		if err != nil || got.Status != status || got.AmountReceived != received || got.AmountCapturable != capturable {
			t.Errorf("%s: %v; want %s, received %d, capturable %d", what, err, status, received, capturable)
			if got != nil {
				t.Logf("got %s, received %d, capturable %d", got.Status, got.AmountReceived, got.AmountCapturable)
			}
		}
	}

	auto := pi(false, true, 1500)
	check("confirm=true", auto, nil, stripe.PaymentIntentStatusSucceeded, 1500, 0)

	held := pi(true, true, 2000)
	check("confirm=true, capture_method=manual", held, nil, stripe.PaymentIntentStatusRequiresCapture, 0, 2000)
	got, err := sc.V1PaymentIntents.Capture(ctx, held.ID, &stripe.PaymentIntentCaptureParams{AmountToCapture: stripe.Int64(1200)})
	check("capture of 1200", got, err, stripe.PaymentIntentStatusSucceeded, 1200, 0)

	// A refund without an amount refunds what the intent received less
	// its earlier refunds, in its currency; with one, that amount.
	for _, tc := range []struct {
		pi         string
		amount, of int64
	}{{auto.ID, 300, 300}, {auto.ID, 0, 1200}, {held.ID, 0, 1200}} {
		p := &stripe.RefundCreateParams{PaymentIntent: stripe.String(tc.pi)}
		if tc.amount > 0 {
			p.Amount = stripe.Int64(tc.amount)
		}
		re, err := sc.V1Refunds.Create(ctx, p)
		if err != nil || re.Amount != tc.of || re.Currency != "usd" || re.PaymentIntent == nil || re.PaymentIntent.ID != tc.pi {
			t.Errorf("refund of %s (amount %d): %+v, %v; want %d usd", tc.pi, tc.amount, re, err, tc.of)
		}
	}
	// A charge's refund: the refund route reads no stored charge, so the
	// fixture's amount, not null.
	ch, err := sc.V1Charges.Create(ctx, &stripe.ChargeCreateParams{Amount: stripe.Int64(1500), Currency: stripe.String("usd"), Source: &stripe.PaymentSourceSourceParams{Token: stripe.String("tok_visa")}})
	if err != nil {
		t.Fatal(err)
	}
	if re, err := sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{Charge: stripe.String(ch.ID)}); err != nil || re.Amount == 0 || re.Currency == "" {
		t.Errorf("refund of a charge: %+v, %v; want an amount and a currency", re, err)
	}

	later := pi(true, false, 700)
	if later.Status != stripe.PaymentIntentStatusRequiresConfirmation {
		t.Errorf("created with a payment method, not confirmed: %s, want requires_confirmation", later.Status)
	}
	got, err = sc.V1PaymentIntents.Confirm(ctx, later.ID, nil)
	check("confirm of a manual intent", got, err, stripe.PaymentIntentStatusRequiresCapture, 0, 700)
	got, err = sc.V1PaymentIntents.Capture(ctx, later.ID, nil)
	check("capture of the whole", got, err, stripe.PaymentIntentStatusSucceeded, 700, 0)
	got, err = sc.V1PaymentIntents.Retrieve(ctx, later.ID, nil)
	check("read back", got, err, stripe.PaymentIntentStatusSucceeded, 700, 0)
	// Its confirm said amount_capturable_updated, not succeeded; its
	// capture said succeeded.
	var types []string
	for e, err := range sc.V1Events.List(ctx, &stripe.EventListParams{}).All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		var obj struct{ ID string }
		if json.Unmarshal(e.Data.Raw, &obj) == nil && obj.ID == later.ID {
			types = append(types, string(e.Type))
		}
	}
	if want := []string{"payment_intent.succeeded", "payment_intent.amount_capturable_updated", "payment_intent.created"}; !slices.Equal(types, want) {
		t.Errorf("events of the manual intent, newest first: %v, want %v", types, want)
	}

	si, err := sc.V1SetupIntents.Create(ctx, &stripe.SetupIntentCreateParams{})
	if err != nil || si.Status != stripe.SetupIntentStatusRequiresPaymentMethod || si.NextAction != nil {
		t.Fatalf("setup intent: %+v, %v", si, err)
	}
	if si, err = sc.V1SetupIntents.Confirm(ctx, si.ID, &stripe.SetupIntentConfirmParams{PaymentMethod: stripe.String("pm_card_visa")}); err != nil || si.Status != stripe.SetupIntentStatusSucceeded {
		t.Errorf("setup intent confirmed: %+v, %v", si, err)
	}

	cs, err := sc.V1CheckoutSessions.Create(ctx, &stripe.CheckoutSessionCreateParams{Mode: stripe.String("payment"), SuccessURL: stripe.String("https://example.com/ok"),
		LineItems: []*stripe.CheckoutSessionCreateLineItemParams{{Price: stripe.String("price_1"), Quantity: stripe.Int64(1)}}})
	if err != nil {
		t.Fatal(err)
	}
	if cs, err = sc.V1CheckoutSessions.Expire(ctx, cs.ID, nil); err != nil || cs.Status != stripe.CheckoutSessionStatusExpired {
		t.Errorf("checkout session expired: %v, %v", cs.Status, err)
	}

	cus := newCustomer(t, sc)
	in, err := sc.V1Invoices.Create(ctx, &stripe.InvoiceCreateParams{Customer: stripe.String(cus.ID)})
	if err != nil {
		t.Fatal(err)
	}
	if in, err = sc.V1Invoices.FinalizeInvoice(ctx, in.ID, nil); err != nil || in.Status != stripe.InvoiceStatusOpen {
		t.Errorf("invoice finalized: %v, %v", in.Status, err)
	}
	if in, err = sc.V1Invoices.Pay(ctx, in.ID, nil); err != nil || in.Status != stripe.InvoiceStatusPaid || in.AmountPaid != in.AmountDue || in.AmountRemaining != 0 {
		t.Errorf("invoice paid: %+v, %v", in, err)
	}
}

// What a create answers is what was asked, not the fixture's other
// example: a price without recurring is one-time, a product has no
// default price, a payment method has the billing details sent, and a
// new subscription is neither canceled nor paused nor in a trial.
func TestStripeCreatesAreNotTheFixtures(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()

	prod := newProduct(t, sc, "Basic")
	once, err := sc.V1Prices.Create(ctx, &stripe.PriceCreateParams{Product: stripe.String(prod.ID), UnitAmount: stripe.Int64(500), Currency: stripe.String("usd")})
	if err != nil || once.Type != stripe.PriceTypeOneTime || once.Recurring != nil {
		t.Errorf("price without recurring: %v %+v, %v", once.Type, once.Recurring, err)
	}
	// Its decimal amount is its amount, and it transforms no quantity.
	if once.UnitAmountDecimal != 500 || once.TransformQuantity != nil || once.CustomUnitAmount != nil {
		t.Errorf("price of 500: unit_amount_decimal %v, transform_quantity %+v, custom_unit_amount %+v; want 500, none, none", once.UnitAmountDecimal, once.TransformQuantity, once.CustomUnitAmount)
	}
	monthly, err := sc.V1Prices.Create(ctx, &stripe.PriceCreateParams{Product: stripe.String(prod.ID), UnitAmount: stripe.Int64(900), Currency: stripe.String("usd"),
		Recurring: &stripe.PriceCreateRecurringParams{Interval: stripe.String("year")}})
	if err != nil || monthly.Type != stripe.PriceTypeRecurring || monthly.Recurring == nil || monthly.Recurring.Interval != "year" || monthly.UnitAmountDecimal != 900 || monthly.TransformQuantity != nil {
		t.Errorf("price with recurring[interval]=year: %v %+v, unit_amount_decimal %v, transform_quantity %+v, %v", monthly.Type, monthly.Recurring, monthly.UnitAmountDecimal, monthly.TransformQuantity, err)
	}
	if p, err := sc.V1Products.Create(ctx, &stripe.ProductCreateParams{Name: stripe.String("Pro")}); err != nil || p.DefaultPrice != nil || p.Name != "Pro" {
		t.Errorf("product: %+v, %v", p, err)
	}
	pm, err := sc.V1PaymentMethods.Create(ctx, &stripe.PaymentMethodCreateParams{Type: stripe.String("card"), Card: &stripe.PaymentMethodCreateCardParams{Token: stripe.String("tok_visa")},
		BillingDetails: &stripe.PaymentMethodCreateBillingDetailsParams{Name: stripe.String("Ada")}})
	if err != nil || pm.BillingDetails.Name != "Ada" || pm.BillingDetails.Email != "" || pm.BillingDetails.Address.City != "" {
		t.Errorf("payment method billing details: %+v, %v", pm.BillingDetails, err)
	}
	before := time.Now().Unix()
	cus := newCustomer(t, sc)
	sub, err := sc.V1Subscriptions.Create(ctx, &stripe.SubscriptionCreateParams{Customer: stripe.String(cus.ID), Items: []*stripe.SubscriptionCreateItemParams{{Price: stripe.String(monthly.ID)}}})
	if err != nil || sub.CancelAtPeriodEnd || sub.CanceledAt != 0 || sub.EndedAt != 0 || sub.TrialEnd != 0 || sub.PauseCollection != nil || sub.StartDate < before {
		t.Errorf("new subscription: cancel_at_period_end %v canceled_at %d ended_at %d trial_end %d pause %+v start %d (want ≥ %d), %v",
			sub.CancelAtPeriodEnd, sub.CanceledAt, sub.EndedAt, sub.TrialEnd, sub.PauseCollection, sub.StartDate, before, err)
	}
}

// A limit outside 1..100 on GET /v1/events is taken as the operation's
// generated lists take it (the default page), not refused with a problem
// that a Stripe client cannot read.
func TestStripeEventsLimitOutOfRange(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	for _, limit := range []string{"0", "101"} {
		req, _ := http.NewRequest("GET", hs.URL+"/v1/events?limit="+limit, nil)
		req.SetBasicAuth(testKey, "")
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var list struct{ Object string }
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if resp.StatusCode != 200 || err != nil || list.Object != "list" || resp.Header.Get("Request-Id") == "" {
			t.Errorf("limit=%s: %d %s, object %q, Request-Id %q; want Stripe's list", limit, resp.StatusCode, resp.Header.Get("Content-Type"), list.Object, resp.Header.Get("Request-Id"))
		}
	}
}

// An update's *.updated event says what changed in
// data.previous_attributes, with the values before, as Stripe's do.
func TestStripeUpdatedEventPreviousAttributes(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	c, err := sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String("prev@example.com"), Name: stripe.String("Ada")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.V1Customers.Update(ctx, c.ID, &stripe.CustomerUpdateParams{Name: stripe.String("Ada Lovelace")}); err != nil {
		t.Fatal(err)
	}
	sub, err := sc.V1Subscriptions.Create(ctx, &stripe.SubscriptionCreateParams{Customer: stripe.String(c.ID), Items: []*stripe.SubscriptionCreateItemParams{{Price: stripe.String("price_1")}}})
	if err != nil {
		t.Fatal(err)
	}
	// Expanded in the answer, the customer is no change: the event has
	// the subscription as stored, its customer an id.
	up := &stripe.SubscriptionUpdateParams{CancelAtPeriodEnd: stripe.Bool(true)}
	up.AddExpand("customer")
	if got, err := sc.V1Subscriptions.Update(ctx, sub.ID, up); err != nil || got.Customer == nil || got.Customer.Email != "prev@example.com" {
		t.Fatalf("update with expand[]=customer: %+v, %v", got, err)
	}
	want := map[stripe.EventType]map[string]any{
		"customer.updated":              {"name": "Ada"},
		"customer.subscription.updated": {"cancel_at_period_end": false},
	}
	for e, err := range sc.V1Events.List(ctx, &stripe.EventListParams{}).All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		w, ok := want[e.Type]
		if !ok {
			if e.Data.PreviousAttributes != nil {
				t.Errorf("%s has previous_attributes %v", e.Type, e.Data.PreviousAttributes)
			}
			continue
		}
		delete(want, e.Type)
		if fmt.Sprint(e.Data.PreviousAttributes) != fmt.Sprint(w) {
			t.Errorf("%s: previous_attributes %v, want %v", e.Type, e.Data.PreviousAttributes, w)
		}
		if c, _ := e.Data.Object["customer"].(map[string]any); c != nil {
			t.Errorf("%s: data.object.customer expanded: %v", e.Type, c)
		}
	}
	if len(want) > 0 {
		t.Errorf("events not recorded: %v", want)
	}
}

// TestStripePaymentMethodSources: where an intent's payment method comes
// from, as Stripe keeps it. Confirming with payment_method_data or a
// confirmation token gives the intent the payment method made from it;
// updating an intent's payment method (or payment_method_data) makes it
// requires_confirmation, so that a bare confirm goes through, and is
// refused once the intent succeeded; creating and confirming at once
// without any is the 400 carrying the intent, which is kept.
func TestStripePaymentMethodSources(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	create := func() *stripe.PaymentIntent {
		t.Helper()
		pi, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(800), Currency: stripe.String("usd")})
		if err != nil {
			t.Fatal(err)
		}
		return pi
	}
	made := func(pi *stripe.PaymentIntent) bool {
		return pi.PaymentMethod != nil && strings.HasPrefix(pi.PaymentMethod.ID, "pm_") && pi.PaymentMethod.ID != "pm_card_visa"
	}
	// A payment method made from payment_method_data is stored: it reads
	// back, of the type sent.
	stored := func(what string, pi *stripe.PaymentIntent) {
		t.Helper()
		if pm, err := sc.V1PaymentMethods.Retrieve(ctx, pi.PaymentMethod.ID, nil); err != nil || pm.ID != pi.PaymentMethod.ID || pm.Type != "ideal" {
			t.Errorf("%s: the payment method made, read back: %+v, %v; want %s, ideal", what, pm, err, pi.PaymentMethod.ID)
		}
	}

	for name, p := range map[string]*stripe.PaymentIntentConfirmParams{
		"payment_method_data": {PaymentMethodData: &stripe.PaymentIntentPaymentMethodDataParams{Type: stripe.String("ideal")}},
		"confirmation_token":  {ConfirmationToken: stripe.String("ctoken_1")},
	} {
		pi := create()
		got, err := sc.V1PaymentIntents.Confirm(ctx, pi.ID, p)
		if err != nil || got.Status != stripe.PaymentIntentStatusSucceeded || !made(got) {
			t.Errorf("confirm with %s: %+v, %v; want succeeded with a payment method made from it", name, got, err)
			continue
		}
		if back, err := sc.V1PaymentIntents.Retrieve(ctx, pi.ID, nil); err != nil || back.PaymentMethod == nil || back.PaymentMethod.ID != got.PaymentMethod.ID {
			t.Errorf("confirmed with %s, read back: %+v, %v; want payment method %s kept", name, back, err, got.PaymentMethod.ID)
		}
		if name == "payment_method_data" {
			stored("confirmed with payment_method_data", got)
		}
	}
	// Expanded in the answer that makes it.
	p := &stripe.PaymentIntentConfirmParams{PaymentMethodData: &stripe.PaymentIntentPaymentMethodDataParams{Type: stripe.String("ideal")}}
	p.AddExpand("payment_method")
	if got, err := sc.V1PaymentIntents.Confirm(ctx, create().ID, p); err != nil || !made(got) || got.PaymentMethod.Type != "ideal" || got.PaymentMethod.Object != "payment_method" {
		t.Errorf("confirm with payment_method_data and expand[]=payment_method: %+v, %v; want the payment method made, expanded", got, err)
	}

	// Created and confirmed at once (confirm=true), with or without a
	// manual capture: the same.
	for name, p := range map[string]*stripe.PaymentIntentCreateParams{
		"payment_method_data":         {PaymentMethodData: &stripe.PaymentIntentCreatePaymentMethodDataParams{Type: stripe.String("ideal")}},
		"confirmation_token":          {ConfirmationToken: stripe.String("ctoken_1")},
		"payment_method_data, manual": {PaymentMethodData: &stripe.PaymentIntentCreatePaymentMethodDataParams{Type: stripe.String("ideal")}, CaptureMethod: stripe.String("manual")},
	} {
		p.Amount, p.Currency, p.Confirm = stripe.Int64(800), stripe.String("usd"), stripe.Bool(true)
		got, err := sc.V1PaymentIntents.Create(ctx, p)
		if err != nil || !made(got) {
			t.Errorf("create with %s and confirm=true: %+v, %v; want a payment method made from it", name, got, err)
			continue
		}
		if back, err := sc.V1PaymentIntents.Retrieve(ctx, got.ID, nil); err != nil || back.PaymentMethod == nil || back.PaymentMethod.ID != got.PaymentMethod.ID {
			t.Errorf("created with %s and confirm=true, read back: %+v, %v; want payment method %s kept", name, back, err, got.PaymentMethod.ID)
		}
		if strings.HasPrefix(name, "payment_method_data") {
			stored("created with "+name+" and confirm=true", got)
		}
	}

	pi := create()
	updated, err := sc.V1PaymentIntents.Update(ctx, pi.ID, &stripe.PaymentIntentUpdateParams{PaymentMethod: stripe.String("pm_card_visa")})
	if err != nil || updated.Status != stripe.PaymentIntentStatusRequiresConfirmation || updated.PaymentMethod == nil || updated.PaymentMethod.ID != "pm_card_visa" {
		t.Fatalf("update the payment method: %+v, %v; want requires_confirmation with pm_card_visa", updated, err)
	}
	if got, err := sc.V1PaymentIntents.Confirm(ctx, pi.ID, nil); err != nil || got.Status != stripe.PaymentIntentStatusSucceeded || got.PaymentMethod == nil || got.PaymentMethod.ID != "pm_card_visa" {
		t.Errorf("a bare confirm after the update: %+v, %v; want succeeded with pm_card_visa", got, err)
	}
	_, err = sc.V1PaymentIntents.Update(ctx, pi.ID, &stripe.PaymentIntentUpdateParams{PaymentMethod: stripe.String("pm_card_mastercard")})
	if se := stripeError(t, err); se.HTTPStatusCode != 400 || string(se.Code) != "payment_intent_unexpected_state" || se.Param != "payment_method" ||
		!strings.HasPrefix(se.Msg, "This PaymentIntent's payment_method could not be updated because it has a status of succeeded.") {
		t.Errorf("update the payment method of a succeeded intent: %+v", se)
	}
	if got, err := sc.V1PaymentIntents.Update(ctx, pi.ID, &stripe.PaymentIntentUpdateParams{Description: stripe.String("paid")}); err != nil || got.Status != stripe.PaymentIntentStatusSucceeded || got.Description != "paid" {
		t.Errorf("update the description of a succeeded intent: %+v, %v; want it taken, the status kept", got, err)
	}

	pi = create()
	updated, err = sc.V1PaymentIntents.Update(ctx, pi.ID, &stripe.PaymentIntentUpdateParams{PaymentMethodData: &stripe.PaymentIntentUpdatePaymentMethodDataParams{Type: stripe.String("ideal")}})
	if err != nil || updated.Status != stripe.PaymentIntentStatusRequiresConfirmation || !made(updated) {
		t.Fatalf("update with payment_method_data: %+v, %v; want requires_confirmation with a payment method made from it", updated, err)
	}
	stored("updated with payment_method_data", updated)
	if got, err := sc.V1PaymentIntents.Confirm(ctx, pi.ID, nil); err != nil || got.Status != stripe.PaymentIntentStatusSucceeded || got.PaymentMethod == nil || got.PaymentMethod.ID != updated.PaymentMethod.ID {
		t.Errorf("a bare confirm after the update with payment_method_data: %+v, %v", got, err)
	}

	// An empty payment_method unsets it.
	withPM, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(800), Currency: stripe.String("usd"), PaymentMethod: stripe.String("pm_card_visa")})
	if err != nil {
		t.Fatal(err)
	}
	unset, err := sc.V1PaymentIntents.Update(ctx, withPM.ID, &stripe.PaymentIntentUpdateParams{PaymentMethod: stripe.String("")})
	if err != nil || unset.Status != stripe.PaymentIntentStatusRequiresPaymentMethod || unset.PaymentMethod != nil {
		t.Errorf("update with an empty payment_method: %+v, %v; want requires_payment_method, none", unset, err)
	}

	_, err = sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(900), Currency: stripe.String("usd"), Confirm: stripe.Bool(true)})
	se := stripeError(t, err)
	if se.HTTPStatusCode != 400 || string(se.Code) != "payment_intent_unexpected_state" || !strings.HasPrefix(se.Msg, "You cannot confirm this PaymentIntent because it's missing a payment method.") ||
		se.PaymentIntent == nil || se.PaymentIntent.Status != stripe.PaymentIntentStatusRequiresPaymentMethod || se.PaymentIntent.Amount != 900 {
		t.Fatalf("create and confirm without a payment method: %+v; want the 400 carrying the intent, requires_payment_method", se)
	}
	if got, err := sc.V1PaymentIntents.Retrieve(ctx, se.PaymentIntent.ID, nil); err != nil || got.Status != stripe.PaymentIntentStatusRequiresPaymentMethod || got.Amount != 900 {
		t.Errorf("the intent of the refused confirm, read back: %+v, %v; want it kept", got, err)
	}

	// A declining payment method the intent has (given at its creation, or
	// by an update) declines a bare confirm, as one sent with it does.
	atCreation, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(700), Currency: stripe.String("usd"), PaymentMethod: stripe.String("pm_card_chargeDeclined")})
	if err != nil {
		t.Fatal(err)
	}
	byUpdate := create()
	if _, err := sc.V1PaymentIntents.Update(ctx, byUpdate.ID, &stripe.PaymentIntentUpdateParams{PaymentMethod: stripe.String("pm_card_chargeDeclinedExpiredCard")}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id, pm           string
		code, param, msg string
	}{
		{atCreation.ID, "pm_card_chargeDeclined", "card_declined", "", "Your card was declined."},
		{byUpdate.ID, "pm_card_chargeDeclinedExpiredCard", "expired_card", "exp_month", "Your card has expired."},
	} {
		_, err := sc.V1PaymentIntents.Confirm(ctx, tc.id, nil)
		se := stripeError(t, err)
		if se.HTTPStatusCode != 402 || se.Type != stripe.ErrorTypeCard || string(se.Code) != tc.code || se.Param != tc.param || se.Msg != tc.msg ||
			se.PaymentMethod == nil || se.PaymentMethod.ID != tc.pm || se.PaymentIntent == nil || se.PaymentIntent.ID != tc.id ||
			se.PaymentIntent.Status != stripe.PaymentIntentStatusRequiresPaymentMethod || se.PaymentIntent.PaymentMethod != nil {
			t.Errorf("a bare confirm of an intent with %s: %+v; want the 402 %s naming it, the intent requires_payment_method without it", tc.pm, se, tc.code)
			continue
		}
		got, err := sc.V1PaymentIntents.Retrieve(ctx, tc.id, nil)
		if err != nil || got.Status != stripe.PaymentIntentStatusRequiresPaymentMethod || got.PaymentMethod != nil || got.LastPaymentError == nil || string(got.LastPaymentError.Code) != tc.code {
			t.Errorf("the intent declined with %s, read back: %+v, %v; want requires_payment_method, no payment method, last_payment_error %s", tc.pm, got, err, tc.code)
			continue
		}
		// Its failed charge, as a confirm sending the payment method makes.
		if got.LatestCharge == nil || se.ChargeID != got.LatestCharge.ID || got.LastPaymentError.ChargeID != se.ChargeID {
			t.Errorf("the intent declined with %s: latest_charge %+v, the 402's charge %q, the last error's %q; want one ch_", tc.pm, got.LatestCharge, se.ChargeID, got.LastPaymentError.ChargeID)
			continue
		}
		if ch, err := sc.V1Charges.Retrieve(ctx, se.ChargeID, nil); err != nil || ch.Status != stripe.ChargeStatusFailed || ch.Paid || ch.FailureCode != tc.code || ch.PaymentMethod != tc.pm || ch.Amount != got.Amount {
			t.Errorf("the charge of the intent declined with %s: %+v, %v; want failed, %s, of %s", tc.pm, ch, err, tc.code, tc.pm)
		}
	}
	// A decline that names no parameter has param null, as Stripe's
	// (stripe-go reads null and "" alike; the JSON is read here).
	raw := func(path, form string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest("POST", hs.URL+path, strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(testKey, "")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var v struct{ Error map[string]any }
		if err := json.NewDecoder(res.Body).Decode(&v); err != nil || res.StatusCode != 402 {
			t.Fatalf("POST %s %s: %d, %v; want a 402 card error", path, form, res.StatusCode, err)
		}
		return v.Error
	}
	bare := create()
	if _, err := sc.V1PaymentIntents.Update(ctx, bare.ID, &stripe.PaymentIntentUpdateParams{PaymentMethod: stripe.String("pm_card_chargeDeclined")}); err != nil {
		t.Fatal(err)
	}
	for what, e := range map[string]map[string]any{
		"sent":   raw("/v1/payment_intents/"+create().ID+"/confirm", "payment_method=pm_card_chargeDeclined"),
		"stored": raw("/v1/payment_intents/"+bare.ID+"/confirm", ""),
	} {
		if param, set := e["param"]; !set || param != nil || e["code"] != "card_declined" {
			t.Errorf("a generic decline, its payment method %s: param %#v (set %v) in %v; want null", what, param, set, e)
		}
	}

	// Any update clears the last payment error; the amount of a paid
	// intent stays.
	cleared, err := sc.V1PaymentIntents.Update(ctx, atCreation.ID, &stripe.PaymentIntentUpdateParams{Description: stripe.String("retry later")})
	if err != nil || cleared.LastPaymentError != nil || cleared.Status != stripe.PaymentIntentStatusRequiresPaymentMethod {
		t.Errorf("update a declined intent's description: %+v, %v; want last_payment_error cleared", cleared, err)
	}
	if got, err := sc.V1PaymentIntents.Update(ctx, atCreation.ID, &stripe.PaymentIntentUpdateParams{Amount: stripe.Int64(750)}); err != nil || got.Amount != 750 {
		t.Errorf("update the amount of an intent that requires a payment method: %+v, %v; want 750", got, err)
	}
	_, err = sc.V1PaymentIntents.Update(ctx, pi.ID, &stripe.PaymentIntentUpdateParams{Amount: stripe.Int64(1)})
	if se := stripeError(t, err); se.HTTPStatusCode != 400 || string(se.Code) != "payment_intent_unexpected_state" || se.Param != "amount" ||
		!strings.HasPrefix(se.Msg, "This PaymentIntent's amount could not be updated because it has a status of succeeded.") {
		t.Errorf("update the amount of a succeeded intent: %+v", se)
	}
	if got, err := sc.V1PaymentIntents.Retrieve(ctx, pi.ID, nil); err != nil || got.Amount != 800 {
		t.Errorf("the succeeded intent read back: %+v, %v; want its amount, 800", got, err)
	}

	if failed := len(eventsOf(t, sc, "payment_intent.payment_failed")); failed != 4 {
		t.Errorf("%d payment_intent.payment_failed events; want one per declined confirm: 4", failed)
	}
	if failed := len(eventsOf(t, sc, "charge.failed")); failed != 4 {
		t.Errorf("%d charge.failed events; want one per declined confirm: 4", failed)
	}
}

// TestStripeTestPaymentMethods: Stripe's test payment methods attach to a
// customer without being created first, of their card's brand, are
// listed among the customer's and detach; an id never created is still
// Stripe's 404, and another API key does not see them.
func TestStripeTestPaymentMethods(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	cus, err := sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String("test-pms@example.com")})
	if err != nil {
		t.Fatal(err)
	}
	for id, brand := range map[string]stripe.PaymentMethodCardBrand{"pm_card_visa": "visa", "pm_card_mastercard": "mastercard", "pm_card_amex": "amex"} {
		pm, err := sc.V1PaymentMethods.Attach(ctx, id, &stripe.PaymentMethodAttachParams{Customer: stripe.String(cus.ID)})
		if err != nil || pm.ID != id || pm.Customer == nil || pm.Customer.ID != cus.ID || pm.Type != stripe.PaymentMethodTypeCard || pm.Card == nil || pm.Card.Brand != brand ||
			pm.Card.DisplayBrand != string(brand) || pm.Card.Networks == nil || !slices.Equal(pm.Card.Networks.Available, []stripe.PaymentMethodCardNetworksAvailable{stripe.PaymentMethodCardNetworksAvailable(brand)}) {
			t.Errorf("attach %s: %+v, %v; want it attached to %s, a %s card", id, pm, err, cus.ID, brand)
			continue
		}
		if age := time.Since(time.Unix(pm.Created, 0)); age < -time.Minute || age > time.Hour {
			t.Errorf("attach %s: created %d; want now, as a payment method made now", id, pm.Created)
		}
	}
	listed := func() []string {
		var ids []string
		for pm, err := range sc.V1Customers.ListPaymentMethods(ctx, &stripe.CustomerListPaymentMethodsParams{Customer: stripe.String(cus.ID)}).All(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, pm.ID)
		}
		slices.Sort(ids)
		return ids
	}
	if got := listed(); !slices.Equal(got, []string{"pm_card_amex", "pm_card_mastercard", "pm_card_visa"}) {
		t.Errorf("the customer's payment methods: %v; want the three attached", got)
	}
	if pm, err := sc.V1PaymentMethods.Detach(ctx, "pm_card_visa", nil); err != nil || pm.Customer != nil {
		t.Errorf("detach pm_card_visa: %+v, %v", pm, err)
	}
	if got := listed(); !slices.Equal(got, []string{"pm_card_amex", "pm_card_mastercard"}) {
		t.Errorf("the customer's payment methods after a detach: %v", got)
	}
	_, err = sc.V1PaymentMethods.Attach(ctx, "pm_never_created", &stripe.PaymentMethodAttachParams{Customer: stripe.String(cus.ID)})
	if se := stripeError(t, err); se.HTTPStatusCode != 404 || string(se.Code) != "resource_missing" {
		t.Errorf("attach an id never created: %+v; want Stripe's 404", se)
	}
	_, err = client(hs, "sk_test_another_account").V1PaymentMethods.Retrieve(ctx, "pm_card_amex", nil)
	if se := stripeError(t, err); se.HTTPStatusCode != 404 {
		t.Errorf("another key reads pm_card_amex: %+v; want a 404: each key has its own", se)
	}
}

// TestStripeRefundRefusals: a refund of a payment intent that has not
// succeeded, or of more than it received, is Stripe's 400 naming the
// parameter, replayed under its key, and makes no refund and no
// refund.created event; a partial and then a default refund of the paid
// intent go through with their amounts.
func TestStripeRefundRefusals(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	pending, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(2000), Currency: stripe.String("usd")})
	if err != nil {
		t.Fatal(err)
	}
	for attempt := range 2 {
		p := &stripe.RefundCreateParams{PaymentIntent: stripe.String(pending.ID)}
		p.SetIdempotencyKey("refund-unpaid")
		_, err := sc.V1Refunds.Create(ctx, p)
		se := stripeError(t, err)
		if se.HTTPStatusCode != 400 || se.Type != stripe.ErrorTypeInvalidRequest || se.Param != "payment_intent" || se.Msg != "This PaymentIntent ("+pending.ID+") does not have a successful charge to refund." {
			t.Errorf("attempt %d: refund of an intent that has not succeeded: %+v", attempt+1, se)
		}
	}
	paid, err := sc.V1PaymentIntents.Confirm(ctx, pending.ID, &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String("pm_card_visa")})
	if err != nil || paid.Status != stripe.PaymentIntentStatusSucceeded {
		t.Fatalf("confirm: %+v, %v", paid, err)
	}
	_, err = sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{PaymentIntent: stripe.String(paid.ID), Amount: stripe.Int64(2001)})
	if se := stripeError(t, err); se.HTTPStatusCode != 400 || se.Param != "amount" || !strings.Contains(se.Msg, "is greater than charge amount (2000 usd)") {
		t.Errorf("refund of more than received: %+v", se)
	}
	if n := collectionTotal(t, hs, "refunds"); n != 0 {
		t.Errorf("%d refunds stored after three refused; want none", n)
	}
	// An amount below 1 is Stripe's parameter_invalid_integer, not saved
	// under its Idempotency-Key: the corrected request with the key is made.
	for _, amount := range []int64{0, -5} {
		p := &stripe.RefundCreateParams{PaymentIntent: stripe.String(paid.ID), Amount: stripe.Int64(amount)}
		p.SetIdempotencyKey("refund-zero")
		_, err = sc.V1Refunds.Create(ctx, p)
		if se := stripeError(t, err); se.HTTPStatusCode != 400 || se.Code != stripe.ErrorCodeParameterInvalidInteger || se.Param != "amount" || se.Msg != "This value must be greater than or equal to 1." {
			t.Errorf("refund of %d: %+v", amount, se)
		}
	}
	if n := collectionTotal(t, hs, "refunds"); n != 0 {
		t.Errorf("%d refunds stored after five refused; want none", n)
	}
	partParams := &stripe.RefundCreateParams{PaymentIntent: stripe.String(paid.ID), Amount: stripe.Int64(500)}
	partParams.SetIdempotencyKey("refund-zero")
	part, err := sc.V1Refunds.Create(ctx, partParams)
	if err != nil || part.Amount != 500 || part.Status != stripe.RefundStatusSucceeded || part.Currency != "usd" {
		t.Fatalf("partial refund: %+v, %v", part, err)
	}
	// Earlier refunds count: what is left is 1500.
	_, err = sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{PaymentIntent: stripe.String(paid.ID), Amount: stripe.Int64(1501)})
	if se := stripeError(t, err); se.HTTPStatusCode != 400 || se.Param != "amount" || se.Msg != "Refund amount (1501 usd) is greater than unrefunded amount on charge (1500 usd)" {
		t.Errorf("refund of more than is left: %+v", se)
	}
	rest, err := sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{PaymentIntent: stripe.String(paid.ID)})
	if err != nil || rest.Amount != 1500 {
		t.Fatalf("refund by default after 500 refunded: %+v, %v; want the 1500 left", rest, err)
	}
	for _, amount := range []*int64{nil, stripe.Int64(1)} {
		_, err = sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{PaymentIntent: stripe.String(paid.ID), Amount: amount})
		if se := stripeError(t, err); se.HTTPStatusCode != 400 || se.Code != stripe.ErrorCodeChargeAlreadyRefunded || se.Param != "payment_intent" {
			t.Errorf("refund of an intent refunded in whole (amount %v): %+v", amount, se)
		}
	}
	if created := len(eventsOf(t, sc, "refund.created")); created != 2 {
		t.Errorf("%d refund.created events; want 2, none for the refusals", created)
	}
}

// TestStripeCaptureAmountAndEndpointSecret: capturing more than an
// intent can capture is Stripe's 400 amount_too_large and leaves it
// requires_capture; a partial capture receives that amount; canceling an
// authorized intent leaves nothing capturable. A webhook endpoint's
// signing secret is in the answer that creates it, not in a read.
func TestStripeCaptureAmountAndEndpointSecret(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	authorize := func() *stripe.PaymentIntent {
		t.Helper()
		pi, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(5000), Currency: stripe.String("usd"), PaymentMethod: stripe.String("pm_card_visa"), Confirm: stripe.Bool(true), CaptureMethod: stripe.String("manual")})
		if err != nil || pi.Status != stripe.PaymentIntentStatusRequiresCapture || pi.AmountCapturable != 5000 {
			t.Fatalf("authorize: %+v, %v", pi, err)
		}
		return pi
	}
	pi := authorize()
	_, err := sc.V1PaymentIntents.Capture(ctx, pi.ID, &stripe.PaymentIntentCaptureParams{AmountToCapture: stripe.Int64(5001)})
	if se := stripeError(t, err); se.HTTPStatusCode != 400 || se.Code != stripe.ErrorCodeAmountTooLarge || se.Param != "amount_to_capture" {
		t.Errorf("capture of more than capturable: %+v", se)
	}
	if got, err := sc.V1PaymentIntents.Retrieve(ctx, pi.ID, nil); err != nil || got.Status != stripe.PaymentIntentStatusRequiresCapture {
		t.Errorf("after the refused capture: %+v, %v; want it still requires_capture", got, err)
	}
	if got, err := sc.V1PaymentIntents.Capture(ctx, pi.ID, &stripe.PaymentIntentCaptureParams{AmountToCapture: stripe.Int64(4000)}); err != nil || got.AmountReceived != 4000 || got.AmountCapturable != 0 || got.Status != stripe.PaymentIntentStatusSucceeded {
		t.Errorf("partial capture: %+v, %v", got, err)
	}
	if got, err := sc.V1PaymentIntents.Cancel(ctx, authorize().ID, nil); err != nil || got.Status != stripe.PaymentIntentStatusCanceled || got.AmountCapturable != 0 {
		t.Errorf("cancel an authorized intent: %+v, %v; want canceled with nothing capturable", got, err)
	}
	we, err := sc.V1WebhookEndpoints.Create(ctx, &stripe.WebhookEndpointCreateParams{URL: stripe.String("https://example.com/hook"), EnabledEvents: []*string{stripe.String("*")}})
	if err != nil || !strings.HasPrefix(we.Secret, "whsec_") || we.Status != "enabled" {
		t.Fatalf("create a webhook endpoint: %+v, %v; want its whsec_ secret", we, err)
	}
	if got, err := sc.V1WebhookEndpoints.Retrieve(ctx, we.ID, nil); err != nil || got.Secret != "" || got.URL != "https://example.com/hook" {
		t.Errorf("read the endpoint: %+v, %v; want it without its secret", got, err)
	}
	if got, err := sc.V1WebhookEndpoints.Update(ctx, we.ID, &stripe.WebhookEndpointUpdateParams{Description: stripe.String("hook")}); err != nil || got.Secret != "" {
		t.Errorf("update the endpoint: %+v, %v; want it without its secret", got, err)
	}
}

// TestStripeSetupIntentPaymentMethod: a setup intent created with a
// payment method waits for its confirm (requires_confirmation); one
// confirmed without ever having one is Stripe's 400 "…missing a payment
// method", at creation (confirm=true, nothing made) and later (the intent
// unchanged), and succeeds once confirmed with one.
func TestStripeSetupIntentPaymentMethod(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	const missing = "You cannot confirm this SetupIntent because it's missing a payment method."
	withPM, err := sc.V1SetupIntents.Create(ctx, &stripe.SetupIntentCreateParams{PaymentMethod: stripe.String("pm_card_visa")})
	if err != nil || withPM.Status != stripe.SetupIntentStatusRequiresConfirmation {
		t.Fatalf("create with a payment method: %+v, %v; want requires_confirmation", withPM, err)
	}
	if got, err := sc.V1SetupIntents.Confirm(ctx, withPM.ID, nil); err != nil || got.Status != stripe.SetupIntentStatusSucceeded {
		t.Errorf("bare confirm of one with a payment method: %+v, %v", got, err)
	}
	before := collectionTotal(t, hs, "setup_intents")
	_, err = sc.V1SetupIntents.Create(ctx, &stripe.SetupIntentCreateParams{Confirm: stripe.Bool(true)})
	if se := stripeError(t, err); se.HTTPStatusCode != 400 || se.Code != stripe.ErrorCodeSetupIntentUnexpectedState || !strings.HasPrefix(se.Msg, missing) {
		t.Errorf("create with confirm=true and no payment method: %+v", se)
	}
	if n := collectionTotal(t, hs, "setup_intents"); n != before {
		t.Errorf("%d setup intents after the refused create; want %d", n, before)
	}
	bare, err := sc.V1SetupIntents.Create(ctx, nil)
	if err != nil || bare.Status != stripe.SetupIntentStatusRequiresPaymentMethod {
		t.Fatalf("create: %+v, %v", bare, err)
	}
	_, err = sc.V1SetupIntents.Confirm(ctx, bare.ID, nil)
	if se := stripeError(t, err); se.HTTPStatusCode != 400 || !strings.HasPrefix(se.Msg, missing) || se.SetupIntent == nil || se.SetupIntent.ID != bare.ID {
		t.Errorf("bare confirm of one without a payment method: %+v", se)
	}
	if got, err := sc.V1SetupIntents.Confirm(ctx, bare.ID, &stripe.SetupIntentConfirmParams{PaymentMethod: stripe.String("pm_card_visa")}); err != nil || got.Status != stripe.SetupIntentStatusSucceeded || got.PaymentMethod == nil || got.PaymentMethod.ID != "pm_card_visa" {
		t.Errorf("confirm with one: %+v, %v", got, err)
	}
	// A payment method made from payment_method_data, at creation or at
	// the confirm; one given by an update; an empty one is none.
	pmd := &stripe.SetupIntentCreatePaymentMethodDataParams{Type: stripe.String("us_bank_account")}
	made, err := sc.V1SetupIntents.Create(ctx, &stripe.SetupIntentCreateParams{PaymentMethodData: pmd})
	if err != nil || made.Status != stripe.SetupIntentStatusRequiresConfirmation || made.PaymentMethod == nil || !strings.HasPrefix(made.PaymentMethod.ID, "pm_") {
		t.Errorf("create with payment_method_data: %+v, %v; want requires_confirmation with a pm_", made, err)
	} else if pm, err := sc.V1PaymentMethods.Retrieve(ctx, made.PaymentMethod.ID, nil); err != nil || pm.Type != "us_bank_account" {
		t.Errorf("the payment method made from payment_method_data, read back: %+v, %v; want it stored, us_bank_account", pm, err)
	}
	later, err := sc.V1SetupIntents.Create(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sc.V1SetupIntents.Confirm(ctx, later.ID, &stripe.SetupIntentConfirmParams{PaymentMethodData: &stripe.SetupIntentConfirmPaymentMethodDataParams{Type: stripe.String("us_bank_account")}})
	if err != nil || got.Status != stripe.SetupIntentStatusSucceeded || got.PaymentMethod == nil || !strings.HasPrefix(got.PaymentMethod.ID, "pm_") {
		t.Errorf("confirm with payment_method_data: %+v, %v; want succeeded with a pm_", got, err)
	}
	updated, err := sc.V1SetupIntents.Create(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := sc.V1SetupIntents.Update(ctx, updated.ID, &stripe.SetupIntentUpdateParams{PaymentMethod: stripe.String("pm_card_visa")}); err != nil || got.Status != stripe.SetupIntentStatusRequiresConfirmation {
		t.Errorf("update with a payment method: %+v, %v; want requires_confirmation", got, err)
	}
	if got, err := sc.V1SetupIntents.Create(ctx, &stripe.SetupIntentCreateParams{PaymentMethod: stripe.String("")}); err != nil || got.Status != stripe.SetupIntentStatusRequiresPaymentMethod {
		t.Errorf("create with payment_method empty: %+v, %v; want requires_payment_method", got, err)
	}
	// An empty payment_method= takes the payment method away, and a
	// confirm sending it empty has none; payment_method_data makes one.
	if got, err := sc.V1SetupIntents.Update(ctx, updated.ID, &stripe.SetupIntentUpdateParams{PaymentMethod: stripe.String("")}); err != nil || got.Status != stripe.SetupIntentStatusRequiresPaymentMethod || got.PaymentMethod != nil {
		t.Errorf("update with payment_method empty: %+v, %v; want requires_payment_method, none", got, err)
	}
	_, err = sc.V1SetupIntents.Confirm(ctx, updated.ID, &stripe.SetupIntentConfirmParams{PaymentMethod: stripe.String("")})
	if se := stripeError(t, err); se.HTTPStatusCode != 400 || !strings.HasPrefix(se.Msg, missing) {
		t.Errorf("confirm sending payment_method empty: %+v", se)
	}
	if got, err := sc.V1SetupIntents.Update(ctx, updated.ID, &stripe.SetupIntentUpdateParams{PaymentMethodData: &stripe.SetupIntentUpdatePaymentMethodDataParams{Type: stripe.String("us_bank_account")}}); err != nil || got.Status != stripe.SetupIntentStatusRequiresConfirmation || got.PaymentMethod == nil || !strings.HasPrefix(got.PaymentMethod.ID, "pm_") {
		t.Errorf("update with payment_method_data: %+v, %v; want requires_confirmation with a pm_", got, err)
	}
}

// TestStripeObjectEvents: updating and deleting a product, creating,
// updating and deleting a coupon, and creating an invoice record the
// events Stripe sends for them, an update's with previous_attributes.
func TestStripeObjectEvents(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	prod := newProduct(t, sc, "Tea")
	if _, err := sc.V1Products.Update(ctx, prod.ID, &stripe.ProductUpdateParams{Name: stripe.String("Green tea")}); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.V1Products.Delete(ctx, prod.ID, nil); err != nil {
		t.Fatal(err)
	}
	coupon, err := sc.V1Coupons.Create(ctx, &stripe.CouponCreateParams{PercentOff: stripe.Float64(10), Duration: stripe.String("once")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.V1Coupons.Update(ctx, coupon.ID, &stripe.CouponUpdateParams{Name: stripe.String("Ten")}); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.V1Coupons.Delete(ctx, coupon.ID, nil); err != nil {
		t.Fatal(err)
	}
	cus, err := sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String("tea@example.com")})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := sc.V1Invoices.Create(ctx, &stripe.InvoiceCreateParams{Customer: stripe.String(cus.ID)})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	objects := map[string]string{}
	for ev, err := range sc.V1Events.List(ctx, &stripe.EventListParams{}).All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, string(ev.Type))
		id, _ := ev.Data.Object["id"].(string)
		objects[string(ev.Type)] = id
		if ev.Type == "product.updated" && ev.Data.PreviousAttributes["name"] != "Tea" {
			t.Errorf("product.updated previous_attributes %v; want the name it had", ev.Data.PreviousAttributes)
		}
	}
	slices.Reverse(types)
	want := []string{"product.created", "product.updated", "product.deleted", "coupon.created", "coupon.updated", "coupon.deleted", "customer.created", "invoice.created"}
	if !slices.Equal(types, want) {
		t.Errorf("events, oldest first: %v; want %v", types, want)
	}
	if objects["product.deleted"] != prod.ID || objects["coupon.deleted"] != coupon.ID || objects["invoice.created"] != inv.ID {
		t.Errorf("the events' objects %v; want the product %s, coupon %s and invoice %s", objects, prod.ID, coupon.ID, inv.ID)
	}
}

// TestStripeExpandUnknown: expanding a property Stripe does not list as
// expandable is Stripe's 400 naming it (before, it was ignored); on a
// list, a field of its items gets Stripe's hint to expand data.field,
// which works.
func TestStripeExpandUnknown(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	cus, err := sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String("x@example.com")})
	if err != nil {
		t.Fatal(err)
	}
	pi, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(100), Currency: stripe.String("usd"), Customer: stripe.String(cus.ID)})
	if err != nil {
		t.Fatal(err)
	}
	p := &stripe.PaymentIntentRetrieveParams{}
	p.AddExpand("amount")
	_, err = sc.V1PaymentIntents.Retrieve(ctx, pi.ID, p)
	if se := stripeError(t, err); se.HTTPStatusCode != 400 || se.Msg != "This property cannot be expanded (amount)." || se.Param != "expand" {
		t.Errorf("expand[]=amount: %+v", se)
	}
	lp := &stripe.PaymentIntentListParams{}
	lp.AddExpand("customer")
	for _, err := range sc.V1PaymentIntents.List(ctx, lp).All(ctx) {
		if se := stripeError(t, err); se.HTTPStatusCode != 400 || !strings.Contains(se.Msg, "You may want to try expanding 'data.customer' instead.") {
			t.Errorf("a list with expand[]=customer: %+v", se)
		}
		break
	}
	lp = &stripe.PaymentIntentListParams{}
	lp.AddExpand("data.customer")
	for got, err := range sc.V1PaymentIntents.List(ctx, lp).All(ctx) {
		if err != nil || got.Customer == nil || got.Customer.Email != "x@example.com" {
			t.Errorf("a list with expand[]=data.customer: %+v, %v; want the customer expanded", got, err)
		}
		break
	}
}

// TestStripeReferences: a body naming an object by an id the account has
// not got is Stripe's 400 resource_missing naming the parameter, and
// nothing is made or changed: a customer never created, another API
// key's, or deleted; a payment method never created. Stripe's test
// payment methods (pm_card_visa) are in every account. Before, each was
// taken, and the intent named a customer nothing could read.
func TestStripeReferences(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc, other := client(hs, testKey), client(hs, "sk_test_other")
	ctx := context.Background()
	mine := newCustomer(t, sc)
	theirs := newCustomer(t, other)
	gone := newCustomer(t, sc)
	if _, err := sc.V1Customers.Delete(ctx, gone.ID, nil); err != nil {
		t.Fatal(err)
	}
	refused := func(what string, err error, param, id string) {
		t.Helper()
		se := stripeError(t, err)
		if se.HTTPStatusCode != 400 || se.Code != stripe.ErrorCodeResourceMissing || se.Type != stripe.ErrorTypeInvalidRequest ||
			se.Param != param || se.Msg != "No such "+param+": '"+id+"'" {
			t.Errorf("%s: %+v; want 400 resource_missing, param %s", what, se, param)
		}
	}
	for _, id := range []string{"cus_nope", theirs.ID, gone.ID} {
		_, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(900), Currency: stripe.String("usd"), Customer: stripe.String(id)})
		refused("intent for customer "+id, err, "customer", id)
	}
	_, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(900), Currency: stripe.String("usd"), PaymentMethod: stripe.String("pm_nope")})
	refused("intent with payment method pm_nope", err, "payment_method", "pm_nope")
	if n := collectionTotal(t, hs, "payment_intents"); n != 0 {
		t.Errorf("%d payment intents made by refused requests", n)
	}

	pi, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(900), Currency: stripe.String("usd"), Customer: stripe.String(mine.ID), PaymentMethod: stripe.String("pm_card_visa")})
	if err != nil || pi.Customer == nil || pi.Customer.ID != mine.ID || pi.PaymentMethod == nil || pi.PaymentMethod.ID != "pm_card_visa" {
		t.Fatalf("intent for the account's customer with a test card: %+v, %v", pi, err)
	}
	_, err = sc.V1PaymentIntents.Update(ctx, pi.ID, &stripe.PaymentIntentUpdateParams{Customer: stripe.String(gone.ID)})
	refused("update to a deleted customer", err, "customer", gone.ID)
	if got, err := sc.V1PaymentIntents.Retrieve(ctx, pi.ID, nil); err != nil || got.Customer == nil || got.Customer.ID != mine.ID {
		t.Errorf("after a refused update: %+v, %v; want customer %s kept", got, err, mine.ID)
	}
}

// TestStripePaymentIntentAmountChecks: a payment intent below its
// currency's minimum charge is Stripe's 400 amount_too_small, naming the
// minimum as Stripe writes it (a zero-decimal currency's in whole yen);
// an amount below 1 and a currency Stripe does not know are its 400s
// too; none makes an intent, confirmed or not. The minimum itself goes
// through.
func TestStripePaymentIntentAmountChecks(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		amount   int64
		currency string
		confirm  bool
		code     stripe.ErrorCode // "" for none
		param    string
		msg      string // the message, or its start
	}{
		{"usd", 49, "usd", false, stripe.ErrorCodeAmountTooSmall, "amount", "Amount must be at least $0.50 usd"},
		{"usd confirmed", 10, "usd", true, stripe.ErrorCodeAmountTooSmall, "amount", "Amount must be at least $0.50 usd"},
		{"eur", 49, "eur", false, stripe.ErrorCodeAmountTooSmall, "amount", "Amount must be at least €0.50 eur"},
		{"gbp", 29, "gbp", false, stripe.ErrorCodeAmountTooSmall, "amount", "Amount must be at least £0.30 gbp"},
		{"jpy", 49, "jpy", false, stripe.ErrorCodeAmountTooSmall, "amount", "Amount must be at least ¥50 jpy"},
		{"zero", 0, "usd", false, stripe.ErrorCodeParameterInvalidInteger, "amount", "This value must be greater than or equal to 1."},
		{"negative", -100, "usd", true, stripe.ErrorCodeParameterInvalidInteger, "amount", "This value must be greater than or equal to 1."},
		{"unknown currency", 2000, "xyz", false, "", "currency", "Invalid currency: xyz. Stripe currently supports these currencies: usd, aed, "},
	} {
		p := &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(tc.amount), Currency: stripe.String(tc.currency)}
		if tc.confirm {
			p.PaymentMethod, p.Confirm = stripe.String("pm_card_visa"), stripe.Bool(true)
		}
		key := "amount-check-" + tc.name
		p.SetIdempotencyKey(key)
		before := collectionTotal(t, hs, "payment_intents")
		_, err := sc.V1PaymentIntents.Create(ctx, p)
		se := stripeError(t, err)
		if se.HTTPStatusCode != 400 || se.Type != stripe.ErrorTypeInvalidRequest || se.Code != tc.code || se.Param != tc.param || !strings.HasPrefix(se.Msg, tc.msg) {
			t.Errorf("%s: %d %s %s %s %q; want 400 %s %s %q", tc.name, se.HTTPStatusCode, se.Type, se.Code, se.Param, se.Msg, tc.code, tc.param, tc.msg)
		}
		// Stripe saves no result for a request that fails validation: the
		// corrected request, sent with the same key, is made.
		if n := collectionTotal(t, hs, "payment_intents"); n != before {
			t.Errorf("%s: %d payment intents stored after the refusal, %d before; want none made", tc.name, n, before)
		}
		fixed := &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(2000), Currency: stripe.String("usd")}
		fixed.SetIdempotencyKey(key)
		pi, err := sc.V1PaymentIntents.Create(ctx, fixed)
		if err != nil || pi.Amount != 2000 {
			t.Errorf("%s: the corrected request with the same Idempotency-Key: %v; want it made", tc.name, err)
		}
	}
	for _, min := range []struct {
		amount   int64
		currency string
	}{{50, "usd"}, {50, "eur"}, {30, "gbp"}, {50, "jpy"}} {
		pi, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(min.amount), Currency: stripe.String(min.currency)})
		if err != nil || pi.Amount != min.amount {
			t.Errorf("%d %s, the minimum: %+v, %v", min.amount, min.currency, pi, err)
		}
	}
}

// TestStripePaymentIntentCurrencyCase: Stripe takes a currency in any
// case and keeps it lower case, in the answer and read back, whichever
// way the intent is created (confirmed, declined, with a payment method),
// and a refund of it is in that currency; a price's too.
func TestStripePaymentIntentCurrencyCase(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		currency string
		pm       string
		confirm  bool
	}{
		{"plain", "USD", "", false},
		{"with a payment method", "Eur", "pm_card_visa", false},
		{"confirmed", "GBP", "pm_card_visa", true},
		{"declined", "JPY", "pm_card_chargeDeclined", true},
	} {
		p := &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(2000), Currency: stripe.String(tc.currency)}
		if tc.pm != "" {
			p.PaymentMethod = stripe.String(tc.pm)
		}
		if tc.confirm {
			p.Confirm = stripe.Bool(true)
		}
		want := stripe.Currency(strings.ToLower(tc.currency))
		pi, err := sc.V1PaymentIntents.Create(ctx, p)
		if tc.pm == "pm_card_chargeDeclined" {
			pi = stripeError(t, err).PaymentIntent
		} else if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if pi == nil || pi.Currency != want {
			t.Errorf("%s: created %+v; want currency %s", tc.name, pi, want)
			continue
		}
		if got, err := sc.V1PaymentIntents.Retrieve(ctx, pi.ID, nil); err != nil || got.Currency != want {
			t.Errorf("%s: read back %+v, %v; want currency %s", tc.name, got, err, want)
		}
		if tc.name == "confirmed" {
			re, err := sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{PaymentIntent: stripe.String(pi.ID)})
			if err != nil || re.Currency != want {
				t.Errorf("refund: %+v, %v; want currency %s", re, err, want)
			}
		}
	}
	prod := newProduct(t, sc, "Pro")
	for _, recurring := range []*stripe.PriceCreateRecurringParams{nil, {Interval: stripe.String("month")}} {
		price, err := sc.V1Prices.Create(ctx, &stripe.PriceCreateParams{Product: stripe.String(prod.ID), UnitAmount: stripe.Int64(900), Currency: stripe.String("USD"), Recurring: recurring})
		if err != nil || price.Currency != "usd" {
			t.Errorf("price (recurring %v): %+v, %v; want currency usd", recurring != nil, price, err)
			continue
		}
		if got, err := sc.V1Prices.Retrieve(ctx, price.ID, nil); err != nil || got.Currency != "usd" {
			t.Errorf("price read back: %+v, %v; want currency usd", got, err)
		}
	}
}

// TestStripeCheckoutSessionAmounts: a Checkout Session for a price the
// account made totals the price's unit_amount times the quantity, in the
// price's currency, read back so; it expires in 24 hours and has no
// payment intent until the customer pays.
func TestStripeCheckoutSessionAmounts(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	prod := newProduct(t, sc, "T-shirt")
	price, err := sc.V1Prices.Create(ctx, &stripe.PriceCreateParams{Product: stripe.String(prod.ID), UnitAmount: stripe.Int64(1500), Currency: stripe.String("eur")})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Unix()
	cs, err := sc.V1CheckoutSessions.Create(ctx, &stripe.CheckoutSessionCreateParams{Mode: stripe.String("payment"), SuccessURL: stripe.String("https://example.com/ok"),
		LineItems: []*stripe.CheckoutSessionCreateLineItemParams{{Price: stripe.String(price.ID), Quantity: stripe.Int64(2)}}})
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, cs *stripe.CheckoutSession) {
		t.Helper()
		if cs.AmountSubtotal != 3000 || cs.AmountTotal != 3000 || cs.Currency != "eur" || cs.PaymentIntent != nil || cs.Status != stripe.CheckoutSessionStatusOpen ||
			cs.ExpiresAt < before+86400 || cs.ExpiresAt > time.Now().Unix()+86400 {
			t.Errorf("%s: subtotal %d total %d %s, payment intent %v, %s, expires %d (now %d); want 3000 3000 eur, none, open, in 24 hours",
				what, cs.AmountSubtotal, cs.AmountTotal, cs.Currency, cs.PaymentIntent, cs.Status, cs.ExpiresAt, before)
		}
		// Its url names it, not the fixture's session.
		if !strings.HasSuffix(cs.URL, "/"+cs.ID) {
			t.Errorf("%s: url %s; want one that ends in /%s", what, cs.URL, cs.ID)
		}
	}
	check("created", cs)
	got, err := sc.V1CheckoutSessions.Retrieve(ctx, cs.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("read back", got)
}

// TestStripeRefundsOfAnUnknownIntent: under --unknown-ids generate, an
// intent nobody created here (an id the client made up) is refunded as
// before, twice too. Before, the second refund was a 500: the default
// amount summed the earlier refunds of that id, the first of which had
// no amount (there was no stored intent to take it from).
func TestStripeRefundsOfAnUnknownIntent(t *testing.T) {
	t.Parallel()
	s, err := server.New(server.Options{
		Load: func() (*scenarios.Set, error) {
			set, err := scenarios.Load("stripe.yaml")
			if err != nil {
				return nil, err
			}
			return set, openapi.Expand(set, openapi.Options{Cache: stripeSpecs, UnknownIDs: "generate"})
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	// Plain requests: stripe-go would retry a 500.
	for i := range 2 {
		req, _ := http.NewRequest("POST", hs.URL+"/v1/refunds", strings.NewReader("payment_intent=pi_3MadeUpByTheClient"))
		req.SetBasicAuth(testKey, "")
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"status":"succeeded"`) {
			t.Errorf("refund %d of an intent not stored here: %d %s", i+1, resp.StatusCode, b)
		}
	}
}

// Paying an invoice that is already paid is Stripe's 400 "Invoice is
// already paid" (what stripe-node raises as StripeInvalidRequestError),
// and the invoice stays as it was, with no second invoice.paid event.
func TestStripeInvoiceAlreadyPaid(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	cus := newCustomer(t, sc)
	in, err := sc.V1Invoices.Create(ctx, &stripe.InvoiceCreateParams{Customer: stripe.String(cus.ID)})
	if err != nil {
		t.Fatal(err)
	}
	if in, err = sc.V1Invoices.Pay(ctx, in.ID, nil); err != nil || in.Status != stripe.InvoiceStatusPaid {
		t.Fatalf("invoice paid: %v, %v", in.Status, err)
	}
	_, err = sc.V1Invoices.Pay(ctx, in.ID, nil)
	se := stripeError(t, err)
	if se.HTTPStatusCode != http.StatusBadRequest || se.Type != stripe.ErrorTypeInvalidRequest || se.Msg != "Invoice is already paid" {
		t.Errorf("paid again: %d %s %q; want 400 invalid_request_error \"Invoice is already paid\"", se.HTTPStatusCode, se.Type, se.Msg)
	}
	if got, err := sc.V1Invoices.Retrieve(ctx, in.ID, nil); err != nil || got.Status != stripe.InvoiceStatusPaid {
		t.Errorf("read back: %v, %v", got.Status, err)
	}
	if evs := eventsOf(t, sc, "invoice.paid"); len(evs) != 1 {
		t.Errorf("%d invoice.paid events; want 1", len(evs))
	}
}

// A subscription of a stored price has one item of that price, in the
// quantity sent, naming the new subscription, with its plan, period and
// currency made from the price; its status is what the spec's
// payment_behavior says: incomplete with default_incomplete, else active
// when there is a default payment method to pay its first invoice with
// (the request's, or the customer's invoice_settings'), incomplete when
// there is none; a price of 0 leaves nothing to pay.
func TestStripeSubscriptionOfAStoredPrice(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	prod := newProduct(t, sc, "Gold")
	price, err := sc.V1Prices.Create(ctx, &stripe.PriceCreateParams{Product: stripe.String(prod.ID), UnitAmount: stripe.Int64(1500), Currency: stripe.String("eur"),
		Recurring: &stripe.PriceCreateRecurringParams{Interval: stripe.String("month")}})
	if err != nil {
		t.Fatal(err)
	}
	free, err := sc.V1Prices.Create(ctx, &stripe.PriceCreateParams{Product: stripe.String(prod.ID), UnitAmount: stripe.Int64(0), Currency: stripe.String("eur"),
		Recurring: &stripe.PriceCreateRecurringParams{Interval: stripe.String("week")}})
	if err != nil {
		t.Fatal(err)
	}
	bare := newCustomer(t, sc)
	paying, err := sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{InvoiceSettings: &stripe.CustomerCreateInvoiceSettingsParams{DefaultPaymentMethod: stripe.String("pm_card_visa")}})
	if err != nil {
		t.Fatal(err)
	}

	before := time.Now().Unix()
	sub, err := sc.V1Subscriptions.Create(ctx, &stripe.SubscriptionCreateParams{Customer: stripe.String(paying.ID),
		Items: []*stripe.SubscriptionCreateItemParams{{Price: stripe.String(price.ID), Quantity: stripe.Int64(3)}}})
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, sub *stripe.Subscription) {
		t.Helper()
		if sub.Items == nil || len(sub.Items.Data) != 1 {
			t.Fatalf("%s: items %+v; want one", what, sub.Items)
		}
		it := sub.Items.Data[0]
		p := it.Price
		if p == nil || p.ID != price.ID || p.UnitAmount != 1500 || p.Currency != "eur" || p.Recurring == nil || p.Recurring.Interval != "month" || p.Product == nil || p.Product.ID != prod.ID {
			t.Errorf("%s: item's price %+v; want the stored %s, 1500 eur monthly of %s", what, p, price.ID, prod.ID)
		}
		if it.Quantity != 3 || it.Subscription != sub.ID || !strings.HasPrefix(it.ID, "si_") || sub.Currency != "eur" {
			t.Errorf("%s: item %s quantity %d of subscription %q, currency %s; want si_…, 3, %q, eur", what, it.ID, it.Quantity, it.Subscription, sub.Currency, sub.ID)
		}
		if it.Plan == nil || it.Plan.ID != price.ID || it.Plan.Amount != 1500 || it.Plan.Interval != "month" || it.Plan.Currency != "eur" {
			t.Errorf("%s: item's plan %+v; want the price's", what, it.Plan)
		}
		if it.CurrentPeriodStart < before || it.CurrentPeriodEnd != time.Unix(it.CurrentPeriodStart, 0).AddDate(0, 1, 0).Unix() {
			t.Errorf("%s: period %d–%d; want a month from now (%d)", what, it.CurrentPeriodStart, it.CurrentPeriodEnd, before)
		}
		if !strings.HasSuffix(sub.Items.URL, "subscription="+sub.ID) {
			t.Errorf("%s: items url %s; want one naming %s", what, sub.Items.URL, sub.ID)
		}
	}
	check("created", sub)
	if sub.Status != stripe.SubscriptionStatusActive {
		t.Errorf("customer with a default payment method: %s; want active", sub.Status)
	}
	got, err := sc.V1Subscriptions.Retrieve(ctx, sub.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("read back", got)

	for _, tc := range []struct {
		name     string
		customer string
		price    string
		behavior string // payment_behavior, when sent
		method   string // default_payment_method, when sent
		want     stripe.SubscriptionStatus
	}{
		{"no payment method", bare.ID, price.ID, "", "", stripe.SubscriptionStatusIncomplete},
		{"allow_incomplete, no payment method", bare.ID, price.ID, "allow_incomplete", "", stripe.SubscriptionStatusIncomplete},
		{"default_payment_method sent", bare.ID, price.ID, "", "pm_card_visa", stripe.SubscriptionStatusActive},
		{"default_incomplete", paying.ID, price.ID, "default_incomplete", "", stripe.SubscriptionStatusIncomplete},
		{"default_incomplete, nothing to pay", bare.ID, free.ID, "default_incomplete", "", stripe.SubscriptionStatusActive},
	} {
		params := &stripe.SubscriptionCreateParams{Customer: stripe.String(tc.customer), Items: []*stripe.SubscriptionCreateItemParams{{Price: stripe.String(tc.price)}}}
		if tc.behavior != "" {
			params.PaymentBehavior = stripe.String(tc.behavior)
		}
		if tc.method != "" {
			params.DefaultPaymentMethod = stripe.String(tc.method)
		}
		sub, err := sc.V1Subscriptions.Create(ctx, params)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if sub.Status != tc.want || sub.Items.Data[0].Quantity != 1 {
			t.Errorf("%s: %s, quantity %d; want %s, 1", tc.name, sub.Status, sub.Items.Data[0].Quantity, tc.want)
		}
	}
}

// An invoice's amounts are those of the invoice items added to it
// (invoice=in_…): a new invoice is a draft of 0, a draft read back sums
// its items, and finalizing and paying keep that sum (amount_due, total,
// amount_paid). The customer's pending items are not on it: the spec's
// pending_invoice_items_behavior defaults to exclude.
func TestStripeInvoiceAmountsFromItems(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	cus := newCustomer(t, sc)
	in, err := sc.V1Invoices.Create(ctx, &stripe.InvoiceCreateParams{Customer: stripe.String(cus.ID)})
	if err != nil {
		t.Fatal(err)
	}
	if in.Status != stripe.InvoiceStatusDraft || in.AmountDue != 0 || in.Total != 0 || len(in.Lines.Data) != 0 {
		t.Errorf("new invoice: %s, amount due %d, total %d, %d lines; want a draft of 0 with none", in.Status, in.AmountDue, in.Total, len(in.Lines.Data))
	}
	for _, item := range []*stripe.InvoiceItemCreateParams{
		{Customer: stripe.String(cus.ID), Invoice: stripe.String(in.ID), Amount: stripe.Int64(700), Currency: stripe.String("usd")},
		{Customer: stripe.String(cus.ID), Invoice: stripe.String(in.ID), Amount: stripe.Int64(350), Currency: stripe.String("usd")},
		{Customer: stripe.String(cus.ID), Amount: stripe.Int64(5000), Currency: stripe.String("usd")}, // pending: on no invoice
	} {
		if _, err := sc.V1InvoiceItems.Create(ctx, item); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, in *stripe.Invoice, err error, status stripe.InvoiceStatus, paid, remaining int64) {
		t.Helper()
		if err != nil || in.Status != status || in.AmountDue != 1050 || in.Total != 1050 || in.Subtotal != 1050 || in.AmountPaid != paid || in.AmountRemaining != remaining {
			t.Errorf("%s: %v; %s due %d total %d subtotal %d paid %d remaining %d; want %s due 1050 total 1050 subtotal 1050 paid %d remaining %d",
				what, err, in.Status, in.AmountDue, in.Total, in.Subtotal, in.AmountPaid, in.AmountRemaining, status, paid, remaining)
		}
	}
	got, err := sc.V1Invoices.Retrieve(ctx, in.ID, nil)
	check("draft read back", got, err, stripe.InvoiceStatusDraft, 0, 1050)
	got, err = sc.V1Invoices.FinalizeInvoice(ctx, in.ID, nil)
	check("finalized", got, err, stripe.InvoiceStatusOpen, 0, 1050)
	got, err = sc.V1Invoices.Retrieve(ctx, in.ID, nil)
	check("open read back", got, err, stripe.InvoiceStatusOpen, 0, 1050)
	got, err = sc.V1Invoices.Pay(ctx, in.ID, nil)
	check("paid", got, err, stripe.InvoiceStatusPaid, 1050, 0)
}

// Stripe's "Build a subscriptions integration": a subscription created
// with payment_behavior=default_incomplete and
// expand[]=latest_invoice.confirmation_secret is incomplete, and its
// first invoice, made and stored with it, is open for the price times the
// quantity, with the secret the client confirms the payment with; it is
// read back and listed, and paying it makes it paid and the subscription
// active. A subscription
// active at once has its first invoice paid. A replay of the create makes
// no second invoice.
func TestStripeSubscriptionFirstInvoice(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	prod := newProduct(t, sc, "Gold")
	price, err := sc.V1Prices.Create(ctx, &stripe.PriceCreateParams{Product: stripe.String(prod.ID), UnitAmount: stripe.Int64(1500), Currency: stripe.String("usd"),
		Recurring: &stripe.PriceCreateRecurringParams{Interval: stripe.String("month")}})
	if err != nil {
		t.Fatal(err)
	}
	cus := newCustomer(t, sc)
	params := &stripe.SubscriptionCreateParams{Customer: stripe.String(cus.ID), PaymentBehavior: stripe.String("default_incomplete"),
		Items: []*stripe.SubscriptionCreateItemParams{{Price: stripe.String(price.ID), Quantity: stripe.Int64(2)}}}
	params.AddExpand("latest_invoice.confirmation_secret")
	params.SetIdempotencyKey("first-invoice")
	sub, err := sc.V1Subscriptions.Create(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if sub.Status != stripe.SubscriptionStatusIncomplete {
		t.Errorf("default_incomplete: %s; want incomplete", sub.Status)
	}
	check := func(what string, in *stripe.Invoice, status stripe.InvoiceStatus, paid int64) {
		t.Helper()
		if in == nil || !strings.HasPrefix(in.ID, "in_") {
			t.Fatalf("%s: invoice %+v; want in_…", what, in)
		}
		if in.Status != status || in.AmountDue != 3000 || in.Total != 3000 || in.Subtotal != 3000 || in.AmountPaid != paid || in.AmountRemaining != 3000-paid {
			t.Errorf("%s: %s due %d total %d subtotal %d paid %d remaining %d; want %s due 3000 total 3000 subtotal 3000 paid %d remaining %d",
				what, in.Status, in.AmountDue, in.Total, in.Subtotal, in.AmountPaid, in.AmountRemaining, status, paid, 3000-paid)
		}
		if in.Currency != "usd" || in.Customer == nil || in.Customer.ID != cus.ID || in.BillingReason != stripe.InvoiceBillingReasonSubscriptionCreate {
			t.Errorf("%s: currency %s, customer %+v, billing reason %s; want usd, %s, subscription_create", what, in.Currency, in.Customer, in.BillingReason, cus.ID)
		}
		if in.Parent == nil || in.Parent.SubscriptionDetails == nil || in.Parent.SubscriptionDetails.Subscription == nil || in.Parent.SubscriptionDetails.Subscription.ID != sub.ID {
			t.Errorf("%s: parent %+v; want subscription %s", what, in.Parent, sub.ID)
		}
		if in.Lines == nil || len(in.Lines.Data) != 1 || in.Lines.Data[0].Amount != 3000 || in.Lines.Data[0].Quantity != 2 || in.Lines.Data[0].Pricing == nil ||
			in.Lines.Data[0].Pricing.PriceDetails == nil || in.Lines.Data[0].Pricing.PriceDetails.Price == nil || in.Lines.Data[0].Pricing.PriceDetails.Price.ID != price.ID {
			t.Errorf("%s: lines %+v; want one of 2 × %s, 3000", what, in.Lines, price.ID)
		}
	}
	first := sub.LatestInvoice
	check("expanded", first, stripe.InvoiceStatusOpen, 0)
	if first.ConfirmationSecret == nil || first.ConfirmationSecret.ClientSecret == "" {
		t.Errorf("confirmation_secret %+v; want a client secret", first.ConfirmationSecret)
	}
	replayed, err := sc.V1Subscriptions.Create(ctx, params)
	if err != nil || replayed.ID != sub.ID || replayed.LatestInvoice == nil || replayed.LatestInvoice.ID != first.ID {
		t.Fatalf("replayed: %+v, %v; want %s with %s", replayed, err, sub.ID, first.ID)
	}
	got, err := sc.V1Subscriptions.Retrieve(ctx, sub.ID, nil)
	if err != nil || got.LatestInvoice == nil || got.LatestInvoice.ID != first.ID {
		t.Fatalf("subscription read back: %+v, %v; want latest_invoice %s", got, err, first.ID)
	}
	in, err := sc.V1Invoices.Retrieve(ctx, first.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("read back", in, stripe.InvoiceStatusOpen, 0)
	var listed []string
	for in, err := range sc.V1Invoices.List(ctx, &stripe.InvoiceListParams{Customer: stripe.String(cus.ID)}).All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, in.ID)
	}
	if !slices.Equal(listed, []string{first.ID}) {
		t.Errorf("the customer's invoices, after a replay: %v; want [%s]", listed, first.ID)
	}
	in, err = sc.V1Invoices.Pay(ctx, first.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("paid", in, stripe.InvoiceStatusPaid, 3000)
	if in, err = sc.V1Invoices.Retrieve(ctx, first.ID, nil); err != nil {
		t.Fatal(err)
	}
	check("paid, read back", in, stripe.InvoiceStatusPaid, 3000)
	if got, err = sc.V1Subscriptions.Retrieve(ctx, sub.ID, nil); err != nil || got.Status != stripe.SubscriptionStatusActive {
		t.Errorf("subscription after its first invoice was paid: %v, %v; want active", got.Status, err)
	}
	// Stripe sends the activation as customer.subscription.updated, with
	// the status it had (paying again is refused, and sends nothing).
	if _, err := sc.V1Invoices.Pay(ctx, first.ID, nil); err == nil {
		t.Errorf("paying the paid invoice again: no error; want Stripe's 400")
	}
	updated := eventsOf(t, sc, "customer.subscription.updated")
	if len(updated) != 1 || updated[0].Data.Object["id"] != sub.ID || updated[0].Data.Object["status"] != "active" ||
		len(updated[0].Data.PreviousAttributes) != 1 || updated[0].Data.PreviousAttributes["status"] != "incomplete" {
		t.Fatalf("customer.subscription.updated events: %+v; want one, of %s active, previous_attributes {status: incomplete}", updated, sub.ID)
	}

	active, err := sc.V1Subscriptions.Create(ctx, &stripe.SubscriptionCreateParams{Customer: stripe.String(cus.ID), DefaultPaymentMethod: stripe.String("pm_card_visa"),
		Items: []*stripe.SubscriptionCreateItemParams{{Price: stripe.String(price.ID), Quantity: stripe.Int64(2)}}})
	if err != nil || active.Status != stripe.SubscriptionStatusActive || active.LatestInvoice == nil {
		t.Fatalf("with a default payment method: %+v, %v; want active, with an invoice", active, err)
	}
	if in, err = sc.V1Invoices.Retrieve(ctx, active.LatestInvoice.ID, nil); err != nil {
		t.Fatal(err)
	}
	sub = active // check compares the parent with sub
	check("active's", in, stripe.InvoiceStatusPaid, 3000)
	if n := len(eventsOf(t, sc, "customer.subscription.updated")); n != 1 {
		t.Errorf("%d customer.subscription.updated events after a subscription made active; want still 1", n)
	}

	// Each subscription's invoices, as the spec's API version names it
	// (parent.subscription_details.subscription): not the other's, nor an
	// invoice of the customer made by itself, which has no parent; one
	// made with subscription= is that subscription's.
	plain, err := sc.V1Invoices.Create(ctx, &stripe.InvoiceCreateParams{Customer: stripe.String(cus.ID)})
	if err != nil || plain.Parent != nil {
		t.Fatalf("an invoice made for no subscription: %+v, %v; want no parent", plain, err)
	}
	made, err := sc.V1Invoices.Create(ctx, &stripe.InvoiceCreateParams{Customer: stripe.String(cus.ID), Subscription: stripe.String(active.ID)})
	if err != nil || made.Parent == nil || made.Parent.Type != "subscription_details" || made.Parent.QuoteDetails != nil ||
		made.Parent.SubscriptionDetails == nil || made.Parent.SubscriptionDetails.Subscription == nil || made.Parent.SubscriptionDetails.Subscription.ID != active.ID {
		t.Fatalf("an invoice made with subscription=%s: %+v, %v; want its parent to name it", active.ID, made, err)
	}
	var top map[string]any
	if err := json.Unmarshal(made.LastResponse.RawJSON, &top); err != nil || top["subscription"] != nil {
		t.Errorf("an invoice made with subscription=: top-level subscription %v (%v); want none (not in this API version)", top["subscription"], err)
	}
	for _, tc := range []struct {
		sub      string
		invoices []string // newest first
	}{{first.Parent.SubscriptionDetails.Subscription.ID, []string{first.ID}}, {active.ID, []string{made.ID, active.LatestInvoice.ID}}} {
		var listed []string
		for in, err := range sc.V1Invoices.List(ctx, &stripe.InvoiceListParams{Subscription: stripe.String(tc.sub)}).All(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			listed = append(listed, in.ID)
		}
		if !slices.Equal(listed, tc.invoices) {
			t.Errorf("GET /v1/invoices?subscription=%s: %v; want %v", tc.sub, listed, tc.invoices)
		}
	}
}

// TestStripeCharges: an intent paid or authorized has its charge
// (latest_charge), stored: it reads back and expands, captured when the
// intent succeeded, and captured by the intent's capture; charge.succeeded
// and charge.captured are recorded.
func TestStripeCharges(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	charge := func(what string, pi *stripe.PaymentIntent, captured bool, amountCaptured int64) *stripe.Charge {
		t.Helper()
		if pi.LatestCharge == nil || !strings.HasPrefix(pi.LatestCharge.ID, "ch_") {
			t.Fatalf("%s: latest_charge %+v; want a ch_", what, pi.LatestCharge)
		}
		ch, err := sc.V1Charges.Retrieve(ctx, pi.LatestCharge.ID, nil)
		if err != nil || ch.ID != pi.LatestCharge.ID || ch.Amount != pi.Amount || ch.Currency != pi.Currency || ch.PaymentIntent == nil || ch.PaymentIntent.ID != pi.ID ||
			!ch.Paid || ch.Status != stripe.ChargeStatusSucceeded || ch.Captured != captured || ch.AmountCaptured != amountCaptured || ch.Refunded {
			t.Errorf("%s: the charge read back: %+v, %v; want the intent's, captured %v (%d)", what, ch, err, captured, amountCaptured)
		}
		if ch != nil && (ch.Outcome == nil || ch.Outcome.Type != "authorized" || ch.Outcome.NetworkStatus != "approved_by_network" || ch.Outcome.SellerMessage != "Payment complete.") {
			t.Errorf("%s: the charge's outcome %+v; want authorized, approved_by_network, Payment complete.", what, ch.Outcome)
		}
		return ch
	}

	p := &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(2000), Currency: stripe.String("usd"), PaymentMethod: stripe.String("pm_card_visa"), Confirm: stripe.Bool(true)}
	p.AddExpand("latest_charge")
	paid, err := sc.V1PaymentIntents.Create(ctx, p)
	if err != nil || paid.Status != stripe.PaymentIntentStatusSucceeded {
		t.Fatalf("create and confirm: %+v, %v", paid, err)
	}
	if paid.LatestCharge == nil || paid.LatestCharge.Amount != 2000 || paid.LatestCharge.Object != "charge" {
		t.Errorf("expand[]=latest_charge: %+v; want the charge, expanded", paid.LatestCharge)
	}
	charge("created with confirm=true", paid, true, 2000)

	later, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(1500), Currency: stripe.String("usd"), CaptureMethod: stripe.String("manual")})
	if err != nil || later.LatestCharge != nil {
		t.Fatalf("create: %+v, %v; want no charge yet", later, err)
	}
	authorized, err := sc.V1PaymentIntents.Confirm(ctx, later.ID, &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String("pm_card_visa")})
	if err != nil || authorized.Status != stripe.PaymentIntentStatusRequiresCapture {
		t.Fatalf("confirm a manual capture: %+v, %v", authorized, err)
	}
	charge("authorized", authorized, false, 0)
	captured, err := sc.V1PaymentIntents.Capture(ctx, later.ID, &stripe.PaymentIntentCaptureParams{AmountToCapture: stripe.Int64(1000)})
	if err != nil || captured.LatestCharge == nil || captured.LatestCharge.ID != authorized.LatestCharge.ID {
		t.Fatalf("capture: %+v, %v; want the same charge", captured, err)
	}
	charge("captured", captured, true, 1000)

	var succeeded, capturedEvents []string
	for _, e := range eventsOf(t, sc, "charge.succeeded") {
		succeeded = append(succeeded, fmt.Sprint(e.Data.Object["id"]))
	}
	for _, e := range eventsOf(t, sc, "charge.captured") {
		capturedEvents = append(capturedEvents, fmt.Sprint(e.Data.Object["id"]))
	}
	if !slices.Contains(succeeded, paid.LatestCharge.ID) || !slices.Contains(succeeded, authorized.LatestCharge.ID) || !slices.Equal(capturedEvents, []string{authorized.LatestCharge.ID}) {
		t.Errorf("charge.succeeded of %v, charge.captured of %v; want both charges succeeded, the second captured", succeeded, capturedEvents)
	}
}

// TestStripeRefundsCountOnTheCharge: a refund names its intent's charge,
// which counts what its refunds returned (amount_refunded) and is
// refunded once they are all of it; charge.refunded is recorded each time.
func TestStripeRefundsCountOnTheCharge(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	pi, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(2000), Currency: stripe.String("usd"), PaymentMethod: stripe.String("pm_card_visa"), Confirm: stripe.Bool(true)})
	if err != nil || pi.LatestCharge == nil {
		t.Fatalf("create and confirm: %+v, %v", pi, err)
	}
	for i, step := range []struct {
		amount   int64
		refunded int64
		whole    bool
	}{{500, 500, false}, {1500, 2000, true}} {
		re, err := sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{PaymentIntent: stripe.String(pi.ID), Amount: stripe.Int64(step.amount)})
		if err != nil || re.Charge == nil || re.Charge.ID != pi.LatestCharge.ID {
			t.Fatalf("refund %d: %+v, %v; want it to name charge %s", i, re, err, pi.LatestCharge.ID)
		}
		ch, err := sc.V1Charges.Retrieve(ctx, pi.LatestCharge.ID, nil)
		if err != nil || ch.AmountRefunded != step.refunded || ch.Refunded != step.whole {
			t.Errorf("the charge after refund %d: %+v, %v; want %d refunded, whole %v", i, ch, err, step.refunded, step.whole)
		}
	}
	if evs := eventsOf(t, sc, "charge.refunded"); len(evs) != 2 || evs[0].Data.Object["amount_refunded"] != 2000.0 || evs[0].Data.Object["refunded"] != true {
		t.Errorf("charge.refunded events: %d, the newest %v; want 2, the newest refunded in whole", len(evs), evs[0].Data.Object)
	}
}

// TestStripeRefundsOfACharge: a refund that names the charge (charge=ch_…,
// as older integrations and Stripe's docs refund) is checked and counted
// as one of its payment intent is. Before, it refunded any amount (5000
// of a 2000 charge), named no payment intent, refunded a charge already
// refunded in whole, and left the charge's amount_refunded at 0.
func TestStripeRefundsOfACharge(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	pi, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(2000), Currency: stripe.String("usd"), PaymentMethod: stripe.String("pm_card_visa"), Confirm: stripe.Bool(true)})
	if err != nil || pi.LatestCharge == nil {
		t.Fatalf("create and confirm: %+v, %v", pi, err)
	}
	chID := pi.LatestCharge.ID
	re, err := sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{Charge: stripe.String(chID), Amount: stripe.Int64(500)})
	if err != nil || re.Amount != 500 || re.Currency != "usd" || re.PaymentIntent == nil || re.PaymentIntent.ID != pi.ID || re.Charge == nil || re.Charge.ID != chID {
		t.Fatalf("refund of 500 by charge: %+v, %v; want 500 usd naming %s and %s", re, err, chID, pi.ID)
	}
	_, err = sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{Charge: stripe.String(chID), Amount: stripe.Int64(5000)})
	if se := stripeError(t, err); se.HTTPStatusCode != 400 || se.Param != "amount" || se.Msg != "Refund amount (5000 usd) is greater than unrefunded amount on charge (1500 usd)" {
		t.Errorf("refund of more than is left: %d %s %q; want Stripe's 400 on amount", se.HTTPStatusCode, se.Param, se.Msg)
	}
	// A refund of the intent counts the charge's, and the charge's the
	// intent's: the default is what is left.
	if re, err := sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{PaymentIntent: stripe.String(pi.ID), Amount: stripe.Int64(1000)}); err != nil || re.Amount != 1000 {
		t.Fatalf("refund of 1000 by intent: %+v, %v", re, err)
	}
	if re, err := sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{Charge: stripe.String(chID)}); err != nil || re.Amount != 500 {
		t.Fatalf("refund of the rest by charge: %+v, %v; want 500", re, err)
	}
	ch, err := sc.V1Charges.Retrieve(ctx, chID, nil)
	if err != nil || ch.AmountRefunded != 2000 || !ch.Refunded {
		t.Errorf("the charge: %+v, %v; want 2000 refunded, refunded", ch, err)
	}
	_, err = sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{Charge: stripe.String(chID)})
	if se := stripeError(t, err); se.HTTPStatusCode != 400 || se.Code != stripe.ErrorCodeChargeAlreadyRefunded {
		t.Errorf("refund of a charge refunded in whole: %d %s; want 400 charge_already_refunded", se.HTTPStatusCode, se.Code)
	}
	if n := collectionTotal(t, hs, "refunds"); n != 3 {
		t.Errorf("%d refunds, want 3", n)
	}

	// A charge of Stripe's older API (a token as its source) is captured
	// unless capture=false (before, never: captured false, 0 captured, the
	// fixture's outcome), so that a refund of it refunds the amount.
	legacy, err := sc.V1Charges.Create(ctx, &stripe.ChargeCreateParams{Amount: stripe.Int64(1200), Currency: stripe.String("usd"), Source: &stripe.PaymentSourceSourceParams{Token: stripe.String("tok_visa")}})
	if err != nil || !legacy.Captured || legacy.AmountCaptured != 1200 || !legacy.Paid || legacy.Status != stripe.ChargeStatusSucceeded || legacy.Outcome == nil || legacy.Outcome.Type != "authorized" {
		t.Fatalf("charge of tok_visa: %+v, %v; want it paid, captured, 1200 captured, authorized", legacy, err)
	}
	if re, err := sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{Charge: stripe.String(legacy.ID)}); err != nil || re.Amount != 1200 || re.PaymentIntent != nil {
		t.Errorf("refund of the token's charge: %+v, %v; want 1200, no payment intent", re, err)
	}
	uncaptured, err := sc.V1Charges.Create(ctx, &stripe.ChargeCreateParams{Amount: stripe.Int64(1200), Currency: stripe.String("usd"), Source: &stripe.PaymentSourceSourceParams{Token: stripe.String("tok_visa")}, Capture: stripe.Bool(false)})
	if err != nil || uncaptured.Captured || uncaptured.AmountCaptured != 0 {
		t.Errorf("charge with capture=false: %+v, %v; want it not captured", uncaptured, err)
	}
}
