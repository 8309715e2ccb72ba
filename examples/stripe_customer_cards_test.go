package examples_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
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
