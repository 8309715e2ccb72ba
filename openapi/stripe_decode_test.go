package openapi_test

import (
	"encoding/json"
	"net/url"
	"testing"

	stripe "github.com/stripe/stripe-go/v85"

	"github.com/scenariomock/scenariomock/scenarios"
)

// TestStripeCreatesDecode: a create whose form sends nested values that
// the fixture has no field for (a plan's tiers, an issuing transaction's
// purchase_details) answers what stripe-go decodes: the form's strings
// were echoed untyped ("inf" for an integer up_to, "1" for a number), and
// stripe-go's own TestPlanNew and the force-capture examples failed to
// decode. A plan's metadata, nullable in the spec, is {} as Stripe
// answers it, not null.
func TestStripeCreatesDecode(t *testing.T) {
	t.Parallel()
	hs := stripeServer(t, func(src *scenarios.OpenAPISource) { src.Errors, src.UnknownIDs = "stripe", "generate" })
	auth := []string{"Authorization", "Bearer sk_test_1"}
	form := "application/x-www-form-urlencoded"
	plan := call(t, "POST", hs.URL+"/v1/plans", form, url.Values{
		"currency": {"usd"}, "interval": {"month"}, "product[name]": {"Sapphire"}, "billing_scheme": {"tiered"},
		"tiers_mode": {"volume"}, "amount_decimal": {"0.0123456789"},
		"tiers[0][up_to]": {"5"}, "tiers[0][unit_amount]": {"500"}, "tiers[1][up_to]": {"inf"}, "tiers[1][unit_amount]": {"200"},
	}.Encode(), auth...)
	var p stripe.Plan
	if err := json.Unmarshal([]byte(plan.body), &p); plan.status != 200 || err != nil {
		t.Fatalf("plan: %d %v: %s", plan.status, err, plan.body)
	}
	if md, ok := plan.json["metadata"].(map[string]any); !ok || len(md) != 0 {
		t.Errorf("plan metadata %v; want {}", plan.json["metadata"])
	}
	tx := call(t, "POST", hs.URL+"/v1/test_helpers/issuing/transactions/create_force_capture", form, url.Values{
		"card": {"ic_1"}, "amount": {"100"}, "currency": {"usd"},
		"purchase_details[fuel][unit_cost_decimal]": {"3.5"}, "purchase_details[lodging][nights]": {"2"},
		"purchase_details[receipt][0][quantity]": {"1"}, "purchase_details[receipt][0][total]": {"200"},
	}.Encode(), auth...)
	var it stripe.IssuingTransaction
	if err := json.Unmarshal([]byte(tx.body), &it); tx.status != 200 || err != nil {
		t.Fatalf("force capture: %d %v: %s", tx.status, err, tx.body)
	}
}
