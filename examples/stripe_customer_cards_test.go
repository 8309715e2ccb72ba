package examples_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stripe/stripe-go/v85"
)

// stripeJSON sends a request to the Stripe example as stripe-go would
// (the test key, a form body) and decodes its JSON answer, which the
// official client would decode into its types and so hide fields that
// card does not have.
func stripeJSON(t *testing.T, hs *httptest.Server, method, path string, form url.Values) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, hs.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(testKey, "")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
		t.Fatalf("%s %s: %d, %v", method, path, res.StatusCode, err)
	}
	return res.StatusCode, v
}

// accountFields are fields of Stripe's account that a card does not have.
var accountFields = []string{"business_profile", "business_type", "capabilities", "charges_enabled", "details_submitted", "external_accounts", "payouts_enabled", "requirements", "settings", "tos_acceptance"}

// TestStripeCustomerCardIsACard: a card token added to a customer stores
// a card with a card's fields only, as it answers, lists and reads back.
// The operation's answer is anyOf an account, a bank account, a card or
// a source; it made the first, an account, and the route's card fields
// were laid on it, so that the stored card, listed and read back, carried
// the account's business_profile, charges_enabled, settings….
func TestStripeCustomerCardIsACard(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	_, cus := stripeJSON(t, hs, http.MethodPost, "/v1/customers", url.Values{})
	c, _ := cus["id"].(string)
	status, card := stripeJSON(t, hs, http.MethodPost, "/v1/customers/"+c+"/sources", url.Values{"source": {"tok_visa"}})
	id, _ := card["id"].(string)
	if status != 200 || card["object"] != "card" || !strings.HasPrefix(id, "card_") {
		t.Fatalf("add tok_visa to %s: %d %v; want a card", c, status, card)
	}
	_, list := stripeJSON(t, hs, http.MethodGet, "/v1/customers/"+c+"/sources", nil)
	data, _ := list["data"].([]any)
	if len(data) != 1 {
		t.Fatalf("the customer's sources: %v; want the card", list)
	}
	listed, _ := data[0].(map[string]any)
	_, back := stripeJSON(t, hs, http.MethodGet, "/v1/customers/"+c+"/sources/"+id, nil)
	for what, v := range map[string]map[string]any{"created": card, "listed": listed, "read back": back} {
		if v["id"] != id || v["object"] != "card" || v["last4"] != "4242" || v["customer"] != c {
			t.Errorf("the card %s: %v; want %s, a card, 4242, on %s", what, v, id, c)
		}
		for _, f := range accountFields {
			if _, has := v[f]; has {
				t.Errorf("the card %s has an account's %s: %v", what, f, v[f])
			}
		}
	}
}

// TestStripeChargeCustomerDefaultSource: a charge of a customer without
// a source charges the customer's default card (its source is that card,
// its payment_method the card's id); a customer with no card is Stripe's
// 402 card error, code missing. Before, the charge answered the
// fixture's 4242 card whatever the customer had, and a customer without
// a card was charged.
func TestStripeChargeCustomerDefaultSource(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	cus := newCustomer(t, sc)
	_, err := sc.V1Charges.Create(ctx, &stripe.ChargeCreateParams{Amount: stripe.Int64(700), Currency: stripe.String("usd"), Customer: stripe.String(cus.ID)})
	if se := stripeError(t, err); se.HTTPStatusCode != 402 || se.Type != stripe.ErrorTypeCard || se.Code != stripe.ErrorCodeMissing || se.Msg != "Cannot charge a customer that has no active card" {
		t.Errorf("charge a customer with no card: %d %s %s %q; want 402 card_error missing", se.HTTPStatusCode, se.Type, se.Code, se.Msg)
	}
	src, err := sc.V1PaymentSources.Create(ctx, &stripe.PaymentSourceCreateParams{Customer: stripe.String(cus.ID), Source: &stripe.PaymentSourceSourceParams{Token: stripe.String("tok_mastercard")}})
	if err != nil || src.Card == nil {
		t.Fatalf("add tok_mastercard: %+v, %v", src, err)
	}
	ch, err := sc.V1Charges.Create(ctx, &stripe.ChargeCreateParams{Amount: stripe.Int64(700), Currency: stripe.String("usd"), Customer: stripe.String(cus.ID)})
	if err != nil || ch.Customer == nil || ch.Customer.ID != cus.ID || ch.PaymentMethod != src.Card.ID || ch.Source == nil || ch.Source.ID != src.Card.ID ||
		ch.Source.Card == nil || ch.Source.Card.Last4 != "4444" || ch.Amount != 700 || !ch.Paid {
		t.Errorf("charge the customer: %+v, %v; want %s's card %s (4444) charged", ch, err, cus.ID, src.Card.ID)
	}
}
