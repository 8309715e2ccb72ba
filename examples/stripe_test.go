package examples_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/server"
	"github.com/stripe/stripe-go/v85"
)

const testKey = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"

// serveStripe serves stripe.yaml on an httptest server.
func serveStripe(t *testing.T) *httptest.Server {
	t.Helper()
	s, err := server.New(server.Options{
		Load:   func() (*scenarios.Set, error) { return scenarios.Load("stripe.yaml") },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return hs
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

	params := &stripe.PaymentIntentCreateParams{
		Amount:   stripe.Int64(2000),
		Currency: stripe.String("usd"),
		Customer: stripe.String("cus_123"),
	}
	params.AddMetadata("order_id", "6735")
	pi, err := sc.V1PaymentIntents.Create(ctx, params)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if !strings.HasPrefix(pi.ID, "pi_") || pi.Object != "payment_intent" || pi.Amount != 2000 || pi.Currency != "usd" ||
		pi.Customer == nil || pi.Customer.ID != "cus_123" || pi.Status != stripe.PaymentIntentStatusRequiresPaymentMethod ||
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
	if got.ID != pi.ID || got.Amount != 2000 || got.Currency != "usd" || got.Customer == nil || got.Customer.ID != "cus_123" || got.ClientSecret != pi.ClientSecret {
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

// collectionTotal asks the admin API how many items a collection holds.
func collectionTotal(t *testing.T, hs *httptest.Server, name string) int {
	t.Helper()
	res, err := http.Get(hs.URL + "/__admin/collections/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v struct{ Total int }
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil || res.StatusCode != 200 {
		t.Fatalf("admin collections: %d %v", res.StatusCode, err)
	}
	return v.Total
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
	got, err := sc.V1Events.Retrieve(ctx, events[0].ID, nil)
	if err != nil || got.ID != events[0].ID || got.Type != "payment_intent.created" {
		t.Errorf("retrieve: %+v, %v", got, err)
	}
	_, err = sc.V1Events.Retrieve(ctx, "evt_nope", nil)
	if se := stripeError(t, err); se.HTTPStatusCode != 404 || se.Code != stripe.ErrorCodeResourceMissing {
		t.Errorf("missing event: %+v", se)
	}
}
