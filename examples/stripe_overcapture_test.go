package examples_test

import (
	"context"
	"testing"

	"github.com/stripe/stripe-go/v85"
)

// overCaptureMessage is Stripe's answer to a capture of more than was
// authorized, as integrations log it (amount_too_large, an
// invalid_request_error).
const overCaptureMessage = "The payment could not be captured because the requested capture amount is greater than the authorized amount. If you are trying to collect a tip or over-capture, your account might not be configured for those features. Contact us via https://support.stripe.com/contact/"

// TestStripeOverCapture: capturing more than a payment intent or a charge
// authorized is Stripe's 400 amount_too_large with Stripe's sentence, the
// intent's error carrying the intent (stripe-go's Error.PaymentIntent), and
// nothing is captured. Before, each answered a sentence of this file's own
// ("The amount_to_capture (5001) is greater than the amount_capturable…",
// "The amount to capture (1501) must be at least 1…", the latter with no code).
func TestStripeOverCapture(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()

	pi, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(5000), Currency: stripe.String("usd"), PaymentMethod: stripe.String("pm_card_visa"), Confirm: stripe.Bool(true), CaptureMethod: stripe.String("manual")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sc.V1PaymentIntents.Capture(ctx, pi.ID, &stripe.PaymentIntentCaptureParams{AmountToCapture: stripe.Int64(5001)})
	se := stripeError(t, err)
	if se.HTTPStatusCode != 400 || se.Type != stripe.ErrorTypeInvalidRequest || se.Code != stripe.ErrorCodeAmountTooLarge || se.Msg != overCaptureMessage {
		t.Errorf("capture 5001 of an intent authorized for 5000: %d %s %s %q; want 400 invalid_request_error amount_too_large %q", se.HTTPStatusCode, se.Type, se.Code, se.Msg, overCaptureMessage)
	}
	if se.PaymentIntent == nil || se.PaymentIntent.ID != pi.ID || se.PaymentIntent.Status != stripe.PaymentIntentStatusRequiresCapture {
		t.Errorf("the error's payment intent: %+v; want %s, requires_capture", se.PaymentIntent, pi.ID)
	}

	ch, err := sc.V1Charges.Create(ctx, &stripe.ChargeCreateParams{Amount: stripe.Int64(1500), Currency: stripe.String("usd"), Source: &stripe.PaymentSourceSourceParams{Token: stripe.String("tok_visa")}, Capture: stripe.Bool(false)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sc.V1Charges.Capture(ctx, ch.ID, &stripe.ChargeCaptureParams{Amount: stripe.Int64(1501)})
	se = stripeError(t, err)
	if se.HTTPStatusCode != 400 || se.Type != stripe.ErrorTypeInvalidRequest || se.Code != stripe.ErrorCodeAmountTooLarge || se.Msg != overCaptureMessage || se.Param != "amount" {
		t.Errorf("capture 1501 of a charge of 1500: %d %s %s %q param %q; want 400 invalid_request_error amount_too_large %q, param amount", se.HTTPStatusCode, se.Type, se.Code, se.Msg, se.Param, overCaptureMessage)
	}
	if back, err := sc.V1Charges.Retrieve(ctx, ch.ID, nil); err != nil || back.Captured {
		t.Errorf("the charge after the refused capture: %+v, %v; want it not captured", back, err)
	}
}
