package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/server"
	"github.com/scenariomock/scenariomock/webhooks"
	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"
)

// patience bounds every wait on a condition here: generous, for a loaded
// 2-core machine under -race; a condition that holds early costs nothing.
const patience = 30 * time.Second

// serveStripeRunning serves stripe.yaml with Serve, as `scenariomock serve`
// does, so that the webhook dispatcher delivers (serveStripe's httptest
// server does not run it); waits are scaled by 0.01.
func serveStripeRunning(t *testing.T) string {
	t.Helper()
	s := stripeServer(t, server.Options{Webhooks: webhooks.Options{TimeScale: 0.01}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(patience):
			t.Error("Serve did not return")
		}
	})
	return "http://" + ln.Addr().String()
}

// endpointReceiver is an app's webhook handler: it verifies each delivery
// with stripe-go's webhook.ConstructEvent and the secret its endpoint's
// creation answered (set once it is known), and answers 500 to the first
// failFirst deliveries.
type endpointReceiver struct {
	*httptest.Server
	failFirst int

	mu       sync.Mutex // guards the fields below
	secret   string
	calls    int
	events   []stripe.Event
	rejected []string
}

func newEndpointReceiver(t *testing.T, failFirst int) *endpointReceiver {
	rc := &endpointReceiver{failFirst: failFirst}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.calls++
		if rc.calls <= rc.failFirst {
			http.Error(w, "try again", http.StatusInternalServerError)
			return
		}
		ev, err := webhook.ConstructEvent(body, r.Header.Get("Stripe-Signature"), rc.secret)
		if err != nil {
			rc.rejected = append(rc.rejected, err.Error())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.events = append(rc.events, ev)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *endpointReceiver) setSecret(s string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.secret = s
}

// got returns the types of the events accepted, in order, the calls made
// and the deliveries refused.
func (rc *endpointReceiver) got() (types []string, calls int, rejected []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, ev := range rc.events {
		types = append(types, string(ev.Type))
	}
	return types, rc.calls, append([]string(nil), rc.rejected...)
}

// TestStripeWebhookEndpointDeliveries: an endpoint created through the
// API (stripe-go's V1WebhookEndpoints.Create, pointed at the app's
// handler) receives its account's events of its enabled_events, signed
// with the secret its creation answered (webhook.ConstructEvent accepts
// them), after an update too; a 500 is retried. An endpoint of other
// enabled_events, a disabled one, a deleted one and another API key's get
// none of them.
func TestStripeWebhookEndpointDeliveries(t *testing.T) {
	t.Parallel()
	base := serveStripeRunning(t)
	sc := clientAt(base, testKey)
	other := clientAt(base, "sk_test_another_account")
	ctx := context.Background()
	create := func(sc *stripe.Client, rc *endpointReceiver, events ...string) *stripe.WebhookEndpoint {
		t.Helper()
		we, err := sc.V1WebhookEndpoints.Create(ctx, &stripe.WebhookEndpointCreateParams{URL: stripe.String(rc.URL + "/webhook"), EnabledEvents: stripe.StringSlice(events)})
		if err != nil || len(we.Secret) < len("whsec_")+16 || we.Secret[:6] != "whsec_" || we.Status != "enabled" {
			t.Fatalf("create a webhook endpoint: %+v, %v; want it enabled, with its whsec_ secret", we, err)
		}
		rc.setSecret(we.Secret)
		return we
	}

	paid := newEndpointReceiver(t, 1) // answers 500 to the first delivery
	updated := newEndpointReceiver(t, 0)
	disabled := newEndpointReceiver(t, 0)
	deleted := newEndpointReceiver(t, 0)
	another := newEndpointReceiver(t, 0)
	paidWE := create(sc, paid, "customer.created", "payment_intent.succeeded")
	create(sc, updated, "customer.updated")
	disabledWE := create(sc, disabled, "*")
	deletedWE := create(sc, deleted, "*")
	create(other, another, "*")

	// Stripe shows the secret at creation only; an update keeps it (the
	// deliveries below are signed with it).
	if got, err := sc.V1WebhookEndpoints.Update(ctx, paidWE.ID, &stripe.WebhookEndpointUpdateParams{Description: stripe.String("orders")}); err != nil || got.Secret != "" || got.Description != "orders" || got.Status != "enabled" {
		t.Fatalf("update: %+v, %v; want it described, enabled, without its secret", got, err)
	}
	if got, err := sc.V1WebhookEndpoints.Retrieve(ctx, paidWE.ID, nil); err != nil || got.Secret != "" {
		t.Fatalf("read: %+v, %v; want it without its secret", got, err)
	}
	listed := 0
	for we, err := range sc.V1WebhookEndpoints.List(ctx, &stripe.WebhookEndpointListParams{}).All(ctx) {
		if err != nil || we.Secret != "" || we.URL == "" {
			t.Fatalf("list: %+v, %v; want each endpoint without its secret", we, err)
		}
		listed++
	}
	if listed != 4 {
		t.Fatalf("list: %d endpoints, want the key's 4", listed)
	}
	if got, err := sc.V1WebhookEndpoints.Update(ctx, disabledWE.ID, &stripe.WebhookEndpointUpdateParams{Disabled: stripe.Bool(true)}); err != nil || got.Status != "disabled" {
		t.Fatalf("disable: %+v, %v; want status disabled", got, err)
	}
	if got, err := sc.V1WebhookEndpoints.Delete(ctx, deletedWE.ID, nil); err != nil || !got.Deleted {
		t.Fatalf("delete: %+v, %v", got, err)
	}

	cus := newCustomer(t, sc)
	pi, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(2000), Currency: stripe.String("usd"), PaymentMethod: stripe.String("pm_card_visa"), Customer: stripe.String(cus.ID)})
	if err != nil {
		t.Fatal(err)
	}
	if pi, err = sc.V1PaymentIntents.Confirm(ctx, pi.ID, nil); err != nil || pi.Status != stripe.PaymentIntentStatusSucceeded {
		t.Fatalf("confirm: %+v, %v", pi, err)
	}
	want := []string{"customer.created", "payment_intent.succeeded"}
	eventually(t, func() string {
		types, calls, rejected := paid.got()
		if !slices.Equal(sorted(types), want) || calls != 3 || len(rejected) > 0 {
			return fmt.Sprintf("the endpoint of %v accepted %v in %d calls (refused %v); want both, after a 500 and its retry", want, types, calls, rejected)
		}
		return ""
	})
	paid.mu.Lock()
	for _, ev := range paid.events {
		if id, _ := ev.Data.Object["id"].(string); ev.Type == "payment_intent.succeeded" && id != pi.ID || ev.Type == "customer.created" && id != cus.ID {
			t.Errorf("%s is about %s", ev.Type, id)
		}
	}
	paid.mu.Unlock()
	// The journal of deliveries names the endpoint by its id, as verify
	// --webhook does: both delivered, one after a retry.
	eventually(t, func() string {
		ds := deliveries(t, base, "endpoint="+paidWE.ID)
		if len(ds) != 2 || ds[0].State != webhooks.Delivered || ds[1].State != webhooks.Delivered || ds[0].Attempts+ds[1].Attempts != 3 {
			return fmt.Sprintf("deliveries to %s: %+v; want 2 delivered, in 3 attempts", paidWE.ID, ds)
		}
		return ""
	})

	// Positive controls, after: the customer.updated endpoint gets the
	// update, and the other key's endpoint its own key's customer.
	if _, err := sc.V1Customers.Update(ctx, cus.ID, &stripe.CustomerUpdateParams{Name: stripe.String("Ada")}); err != nil {
		t.Fatal(err)
	}
	newCustomer(t, other)
	eventually(t, func() string {
		if types, _, rejected := updated.got(); !slices.Equal(types, []string{"customer.updated"}) || len(rejected) > 0 {
			return fmt.Sprintf("the customer.updated endpoint accepted %v (refused %v)", types, rejected)
		}
		if types, _, rejected := another.got(); !slices.Equal(types, []string{"customer.created"}) || len(rejected) > 0 {
			return fmt.Sprintf("the other key's endpoint accepted %v (refused %v); want its customer.created", types, rejected)
		}
		if ds := deliveries(t, base, "outcome=pending"); len(ds) != 0 {
			return fmt.Sprintf("deliveries pending: %+v", ds)
		}
		return ""
	})
	for name, rc := range map[string]*endpointReceiver{"disabled": disabled, "deleted": deleted} {
		if _, calls, _ := rc.got(); calls != 0 {
			t.Errorf("the %s endpoint was called %d times; want never", name, calls)
		}
	}
	// The journal of deliveries knows the disabled endpoint, which had
	// none: verify --webhook we_… --none holds rather than failing on an
	// unknown name.
	if ds := deliveries(t, base, "endpoint="+disabledWE.ID); len(ds) != 0 {
		t.Errorf("deliveries to the disabled endpoint: %+v, want none", ds)
	}
	if types, calls, _ := paid.got(); !slices.Equal(sorted(types), want) || calls != 3 {
		t.Errorf("the endpoint of %v accepted %v in %d calls by the end; want only those", want, types, calls)
	}
}

// clientAt is the official client pointed at the mock at base, its
// automatic retries on.
func clientAt(base, key string) *stripe.Client {
	retries := int64(5)
	return stripe.NewClient(key, stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:               stripe.String(base),
		MaxNetworkRetries: &retries,
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})))
}

// deliveries lists GET /__admin/webhooks?query's deliveries.
func deliveries(t *testing.T, base, query string) []webhooks.Delivery {
	t.Helper()
	resp, err := http.Get(base + "/__admin/webhooks?" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Deliveries []webhooks.Delivery `json:"deliveries"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /__admin/webhooks?%s: %d %v", query, resp.StatusCode, err)
	}
	return out.Deliveries
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// eventually retries check until it returns "" or patience runs out.
func eventually(t *testing.T, check func() string) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", patience, msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
