package examples_test

import (
	"context"
	"testing"

	"github.com/stripe/stripe-go/v85"
)

// TestStripeChargeCapture: a charge made with capture=false is captured
// by POST /v1/charges/{charge}/capture (the whole amount, or the amount
// sent), reads back captured, can then be refunded, and a second capture
// is Stripe's 400 charge_already_captured. Before, the capture answered
// the spec's fixture and stored nothing.
func TestStripeChargeCapture(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	auth := func() *stripe.Charge {
		t.Helper()
		ch, err := sc.V1Charges.Create(ctx, &stripe.ChargeCreateParams{Amount: stripe.Int64(1500), Currency: stripe.String("usd"), Source: &stripe.PaymentSourceSourceParams{Token: stripe.String("tok_visa")}, Capture: stripe.Bool(false)})
		if err != nil || ch.Captured || ch.AmountCaptured != 0 {
			t.Fatalf("charge with capture=false: %+v, %v; want it not captured", ch, err)
		}
		return ch
	}

	ch := auth()
	got, err := sc.V1Charges.Capture(ctx, ch.ID, nil)
	if err != nil || got.ID != ch.ID || !got.Captured || got.AmountCaptured != 1500 || got.Amount != 1500 {
		t.Fatalf("capture: %+v, %v; want %s captured, 1500 captured", got, err, ch.ID)
	}
	if back, err := sc.V1Charges.Retrieve(ctx, ch.ID, nil); err != nil || !back.Captured || back.AmountCaptured != 1500 {
		t.Errorf("the captured charge read back: %+v, %v; want it captured", back, err)
	}
	_, err = sc.V1Charges.Capture(ctx, ch.ID, nil)
	if se := stripeError(t, err); se.HTTPStatusCode != 400 || se.Code != stripe.ErrorCodeChargeAlreadyCaptured || se.Msg != "Charge "+ch.ID+" has already been captured." {
		t.Errorf("second capture: %d %s %q; want 400 charge_already_captured", se.HTTPStatusCode, se.Code, se.Msg)
	}
	if re, err := sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{Charge: stripe.String(ch.ID)}); err != nil || re.Amount != 1500 {
		t.Errorf("refund of the captured charge: %+v, %v; want 1500", re, err)
	}

	part := auth()
	if got, err := sc.V1Charges.Capture(ctx, part.ID, &stripe.ChargeCaptureParams{Amount: stripe.Int64(600)}); err != nil || !got.Captured || got.AmountCaptured != 600 {
		t.Fatalf("capture of 600: %+v, %v; want 600 captured", got, err)
	}
	if evs := eventsOf(t, sc, "charge.captured"); len(evs) != 2 {
		t.Errorf("%d charge.captured events, want 2", len(evs))
	}

	over := auth()
	_, err = sc.V1Charges.Capture(ctx, over.ID, &stripe.ChargeCaptureParams{Amount: stripe.Int64(1501)})
	if se := stripeError(t, err); se.HTTPStatusCode != 400 || se.Param != "amount" {
		t.Errorf("capture of more than the charge: %d %s; want 400 on amount", se.HTTPStatusCode, se.Param)
	}
	_, err = sc.V1Charges.Capture(ctx, "ch_neverMade", nil)
	if se := stripeError(t, err); se.HTTPStatusCode != 404 || se.Code != stripe.ErrorCodeResourceMissing {
		t.Errorf("capture of an unknown charge: %d %s; want 404 resource_missing", se.HTTPStatusCode, se.Code)
	}
}
