package examples_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stripe/stripe-go/v85"
)

// TestStripeAuthenticationRequired: a payment intent confirmed with one
// of Stripe's test payment methods whose card asks for 3D Secure
// (pm_card_threeDSecure2Required, pm_card_authenticationRequired) is not
// paid: it waits, requires_action, with a next_action (use_stripe_sdk, or
// redirect_to_url back to the return_url sent), no charge, and
// payment_intent.requires_action; at its creation (confirm=true), by a
// confirm sending it, and by a confirm of an intent that has it. It can
// still be canceled. Before, each was paid (succeeded).
func TestStripeAuthenticationRequired(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	waits := func(what string, pi *stripe.PaymentIntent, err error, redirect string) {
		t.Helper()
		if err != nil || pi.Status != stripe.PaymentIntentStatusRequiresAction || pi.LatestCharge != nil || pi.AmountReceived != 0 || pi.NextAction == nil {
			t.Fatalf("%s: %+v, %v; want requires_action with a next_action, nothing charged", what, pi, err)
		}
		na := pi.NextAction
		switch {
		case redirect == "" && (na.Type != stripe.PaymentIntentNextActionTypeUseStripeSDK || na.UseStripeSDK == nil):
			t.Errorf("%s: next_action %+v; want use_stripe_sdk", what, na)
		case redirect != "" && (na.Type != stripe.PaymentIntentNextActionTypeRedirectToURL || na.RedirectToURL == nil || na.RedirectToURL.ReturnURL != redirect || !strings.HasPrefix(na.RedirectToURL.URL, "https://")):
			t.Errorf("%s: next_action %+v; want redirect_to_url back to %s", what, na, redirect)
		}
	}

	pi, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(2000), Currency: stripe.String("eur"), PaymentMethod: stripe.String("pm_card_threeDSecure2Required"), Confirm: stripe.Bool(true)})
	waits("created and confirmed with pm_card_threeDSecure2Required", pi, err, "")
	if back, err := sc.V1PaymentIntents.Retrieve(ctx, pi.ID, nil); err != nil || back.Status != stripe.PaymentIntentStatusRequiresAction {
		t.Errorf("read back: %+v, %v; want requires_action", back, err)
	}
	if got, err := sc.V1PaymentIntents.Cancel(ctx, pi.ID, nil); err != nil || got.Status != stripe.PaymentIntentStatusCanceled {
		t.Errorf("cancel it: %+v, %v; want canceled", got, err)
	}

	pi, err = sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(2000), Currency: stripe.String("eur")})
	if err != nil {
		t.Fatal(err)
	}
	pi, err = sc.V1PaymentIntents.Confirm(ctx, pi.ID, &stripe.PaymentIntentConfirmParams{PaymentMethod: stripe.String("pm_card_authenticationRequired"), ReturnURL: stripe.String("https://shop.example/done")})
	waits("confirmed with pm_card_authenticationRequired and a return_url", pi, err, "https://shop.example/done")

	pi, err = sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(2000), Currency: stripe.String("eur"), PaymentMethod: stripe.String("pm_card_authenticationRequired")})
	if err != nil {
		t.Fatal(err)
	}
	pi, err = sc.V1PaymentIntents.Confirm(ctx, pi.ID, nil)
	waits("an intent with pm_card_authenticationRequired confirmed", pi, err, "")

	if evs := eventsOf(t, sc, "payment_intent.requires_action"); len(evs) != 3 {
		t.Errorf("%d payment_intent.requires_action events, want 3", len(evs))
	}
	if evs := eventsOf(t, sc, "charge.succeeded"); len(evs) != 0 {
		t.Errorf("%d charge.succeeded events, want none", len(evs))
	}
}
