package examples_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stripe/stripe-go/v85"
)

// TestStripeChargeRefunds: a refund made by the charge's own URL (POST
// /v1/charges/{charge}/refunds) is a refund of the charge as one made by
// POST /v1/refunds with charge= is: by default what is left, refused past
// it, counted on the charge, read back by GET /v1/refunds/{id}. Before, it
// answered the fixture (100 of another charge) and counted nothing.
func TestStripeChargeRefunds(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	ch, err := sc.V1Charges.Create(ctx, &stripe.ChargeCreateParams{Amount: stripe.Int64(2000), Currency: stripe.String("usd"), Source: &stripe.PaymentSourceSourceParams{Token: stripe.String("tok_visa")}})
	if err != nil {
		t.Fatal(err)
	}
	// stripe-go has no method of its own for this URL: its backend calls it.
	refund := func(amount int64) (*stripe.Refund, error) {
		p := &stripe.RefundCreateParams{}
		p.Context = ctx
		if amount > 0 {
			p.Amount = stripe.Int64(amount)
		}
		re := &stripe.Refund{}
		err := sc.V1Refunds.B.Call(http.MethodPost, "/v1/charges/"+ch.ID+"/refunds", testKey, p, re)
		return re, err
	}
	re, err := refund(500)
	if err != nil || re.Amount != 500 || re.Currency != "usd" || re.Charge == nil || re.Charge.ID != ch.ID {
		t.Fatalf("refund of 500: %+v, %v; want 500 usd of %s", re, err, ch.ID)
	}
	if back, err := sc.V1Refunds.Retrieve(ctx, re.ID, nil); err != nil || back.Amount != 500 || back.Charge == nil || back.Charge.ID != ch.ID {
		t.Errorf("GET /v1/refunds/%s: %+v, %v; want it", re.ID, back, err)
	}
	_, err = refund(1600)
	if se := stripeError(t, err); se.HTTPStatusCode != 400 || se.Param != "amount" || se.Msg != "Refund amount (1600 usd) is greater than unrefunded amount on charge (1500 usd)" {
		t.Errorf("refund of more than is left: %d %s %q", se.HTTPStatusCode, se.Param, se.Msg)
	}
	// One by POST /v1/refunds counts the charge URL's, and the rest is left.
	if re, err := sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{Charge: stripe.String(ch.ID), Amount: stripe.Int64(1000)}); err != nil || re.Amount != 1000 {
		t.Fatalf("refund of 1000 by /v1/refunds: %+v, %v", re, err)
	}
	if re, err := refund(0); err != nil || re.Amount != 500 {
		t.Fatalf("refund of the rest: %+v, %v; want 500", re, err)
	}
	got, err := sc.V1Charges.Retrieve(ctx, ch.ID, nil)
	if err != nil || got.AmountRefunded != 2000 || !got.Refunded {
		t.Errorf("the charge: refunded %d %v, %v; want 2000, refunded", got.AmountRefunded, got.Refunded, err)
	}
	_, err = refund(0)
	if se := stripeError(t, err); se.HTTPStatusCode != 400 || se.Code != stripe.ErrorCodeChargeAlreadyRefunded || se.Msg != "Charge "+ch.ID+" has already been refunded." {
		t.Errorf("refund of a charge refunded in whole: %d %s %q", se.HTTPStatusCode, se.Code, se.Msg)
	}
	if n := collectionTotal(t, hs, "refunds"); n != 3 {
		t.Errorf("%d refunds in /v1/refunds, want 3", n)
	}
}
