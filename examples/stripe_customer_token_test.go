package examples_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stripe/stripe-go/v85"
)

// TestStripeCustomerCreatedWithToken: a customer created with a card
// token (source=tok_mastercard) has the token's card as its
// default_source, listed among its sources, and a charge of the customer
// charges it. Before, the customer had no default_source, no card, and
// its charge was Stripe's 402 "Cannot charge a customer that has no
// active card".
func TestStripeCustomerCreatedWithToken(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	cus, err := sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String("ada@example.com"), Source: stripe.String("tok_mastercard")})
	if err != nil {
		t.Fatal(err)
	}
	if cus.DefaultSource == nil || !strings.HasPrefix(cus.DefaultSource.ID, "card_") {
		t.Fatalf("the customer created with tok_mastercard: default_source %+v; want a card_…", cus.DefaultSource)
	}
	card := cus.DefaultSource.ID
	if got, err := sc.V1Customers.Retrieve(ctx, cus.ID, nil); err != nil || got.DefaultSource == nil || got.DefaultSource.ID != card {
		t.Errorf("the customer read back: %+v, %v; want default_source %s", got, err, card)
	}
	var listed []*stripe.PaymentSource
	for src, err := range sc.V1PaymentSources.List(ctx, &stripe.PaymentSourceListParams{Customer: stripe.String(cus.ID)}).All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, src)
	}
	if len(listed) != 1 || listed[0].Card == nil || listed[0].Card.ID != card || listed[0].Card.Last4 != "4444" || listed[0].Card.Brand != stripe.CardBrandMasterCard || listed[0].Card.Customer == nil || listed[0].Card.Customer.ID != cus.ID {
		t.Errorf("the customer's sources: %+v; want the one card %s, MasterCard 4444, of %s", listed, card, cus.ID)
	}
	ch, err := sc.V1Charges.Create(ctx, &stripe.ChargeCreateParams{Amount: stripe.Int64(900), Currency: stripe.String("usd"), Customer: stripe.String(cus.ID)})
	if err != nil || ch.Source == nil || ch.Source.ID != card || ch.Source.Card == nil || ch.Source.Card.Last4 != "4444" || !ch.Paid {
		t.Errorf("charge the customer: %+v, %v; want its card %s charged", ch, err, card)
	}
	if evs := eventsOf(t, sc, "customer.source.created"); len(evs) != 1 {
		t.Errorf("%d customer.source.created events, want 1", len(evs))
	}
}

// TestStripeBankAccountTokens: a bank account token (btok_…, Stripe's
// ACH test account) added to a customer, at its creation or by POST
// /v1/customers/{customer}/sources, is a bank account (STRIPE TEST BANK
// 6789, verified for btok_us_verified, else new), listed among the
// customer's sources, and the customer's first source its default_source.
// Before, the creation made none, and the sources answered an account (the
// first type of the operation's anyOf).
func TestStripeBankAccountTokens(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	isBank := func(what string, ba *stripe.BankAccount, id, customer string, status stripe.BankAccountStatus) {
		t.Helper()
		if ba == nil || !strings.HasPrefix(ba.ID, "ba_") || id != "" && ba.ID != id || ba.Last4 != "6789" || ba.BankName != "STRIPE TEST BANK" || ba.RoutingNumber != "110000000" || ba.Status != status || ba.Customer == nil || ba.Customer.ID != customer {
			t.Errorf("%s: %+v; want a ba_… %s, STRIPE TEST BANK 6789, %s, of %s", what, ba, id, status, customer)
		}
	}

	cus, err := sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Source: stripe.String("btok_us_verified")})
	if err != nil || cus.DefaultSource == nil || !strings.HasPrefix(cus.DefaultSource.ID, "ba_") {
		t.Fatalf("a customer created with btok_us_verified: %+v, %v; want a ba_… default_source", cus, err)
	}
	back, err := sc.V1PaymentSources.Retrieve(ctx, cus.DefaultSource.ID, &stripe.PaymentSourceRetrieveParams{Customer: stripe.String(cus.ID)})
	if err != nil || back.Type != stripe.PaymentSourceTypeBankAccount {
		t.Fatalf("its default source read back: %+v, %v; want a bank account", back, err)
	}
	isBank("its default source", back.BankAccount, cus.DefaultSource.ID, cus.ID, stripe.BankAccountStatusVerified)

	other := newCustomer(t, sc)
	src, err := sc.V1PaymentSources.Create(ctx, &stripe.PaymentSourceCreateParams{Customer: stripe.String(other.ID), Source: &stripe.PaymentSourceSourceParams{Token: stripe.String("btok_us")}})
	if err != nil || src.Type != stripe.PaymentSourceTypeBankAccount {
		t.Fatalf("add btok_us to %s: %+v, %v; want a bank account", other.ID, src, err)
	}
	isBank("btok_us added", src.BankAccount, "", other.ID, stripe.BankAccountStatusNew)
	var listed []string
	for s, err := range sc.V1PaymentSources.List(ctx, &stripe.PaymentSourceListParams{Customer: stripe.String(other.ID)}).All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, s.ID)
	}
	if len(listed) != 1 || listed[0] != src.ID {
		t.Errorf("%s's sources: %v; want %s", other.ID, listed, src.ID)
	}
	if got, err := sc.V1Customers.Retrieve(ctx, other.ID, nil); err != nil || got.DefaultSource == nil || got.DefaultSource.ID != src.ID {
		t.Errorf("%s read back: %+v, %v; want default_source %s", other.ID, got, err, src.ID)
	}
}

// TestStripeDecliningTokenNotAttached: a declining test token attached to
// a customer, at its creation or as a source, is Stripe's 402 card error
// (stripe-go's CardError), and nothing is made: no customer, no source.
// Stripe checks a card it attaches; only 4000000000000341 attaches and
// declines later. Before, the creation made a customer (and, with the
// token cards of TestStripeCustomerCreatedWithToken, a Visa 4242 that
// charged), and the source was a Visa 4242.
func TestStripeDecliningTokenNotAttached(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	declined := func(what string, err error, code stripe.ErrorCode) {
		t.Helper()
		if se := stripeError(t, err); se.HTTPStatusCode != 402 || se.Type != stripe.ErrorTypeCard || se.Code != code {
			t.Errorf("%s: %d %s %s; want 402 card_error %s", what, se.HTTPStatusCode, se.Type, se.Code, code)
		}
	}
	_, err := sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Source: stripe.String("tok_chargeDeclinedExpiredCard")})
	declined("a customer created with tok_chargeDeclinedExpiredCard", err, stripe.ErrorCodeExpiredCard)
	cus := newCustomer(t, sc)
	_, err = sc.V1PaymentSources.Create(ctx, &stripe.PaymentSourceCreateParams{Customer: stripe.String(cus.ID), Source: &stripe.PaymentSourceSourceParams{Token: stripe.String("tok_chargeDeclined")}})
	declined("tok_chargeDeclined added to a customer", err, stripe.ErrorCodeCardDeclined)
	var customers, sources int
	for _, err := range sc.V1Customers.List(ctx, nil).All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		customers++
	}
	for _, err := range sc.V1PaymentSources.List(ctx, &stripe.PaymentSourceListParams{Customer: stripe.String(cus.ID)}).All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		sources++
	}
	if customers != 1 || sources != 0 {
		t.Errorf("%d customers, %d sources of %s; want the one customer created without a token, and no source", customers, sources, cus.ID)
	}
}

// TestStripeChargeCustomerSource: a charge of a customer naming one of its
// cards (customer=cus_…, source=card_…) charges that card, not its
// default; one the customer has not got is Stripe's 404 "Customer cus_…
// does not have a linked source with ID card_…." (code missing, param
// source). Before, both were charged, their source the fixture's card
// (obj_123).
func TestStripeChargeCustomerSource(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	cus, err := sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Source: stripe.String("tok_visa")})
	if err != nil {
		t.Fatal(err)
	}
	mc, err := sc.V1PaymentSources.Create(ctx, &stripe.PaymentSourceCreateParams{Customer: stripe.String(cus.ID), Source: &stripe.PaymentSourceSourceParams{Token: stripe.String("tok_mastercard")}})
	if err != nil || mc.Card == nil {
		t.Fatalf("add tok_mastercard: %+v, %v", mc, err)
	}
	ch, err := sc.V1Charges.Create(ctx, &stripe.ChargeCreateParams{Amount: stripe.Int64(800), Currency: stripe.String("usd"), Customer: stripe.String(cus.ID), Source: &stripe.PaymentSourceSourceParams{Token: stripe.String(mc.ID)}})
	if err != nil || ch.Source == nil || ch.Source.ID != mc.ID || ch.Source.Card == nil || ch.Source.Card.Last4 != "4444" || ch.PaymentMethod != mc.ID || ch.Customer == nil || ch.Customer.ID != cus.ID {
		t.Errorf("charge %s's card %s: %+v, %v; want that card (4444) charged", cus.ID, mc.ID, ch, err)
	}
	_, err = sc.V1Charges.Create(ctx, &stripe.ChargeCreateParams{Amount: stripe.Int64(800), Currency: stripe.String("usd"), Customer: stripe.String(cus.ID), Source: &stripe.PaymentSourceSourceParams{Token: stripe.String("card_notHers")}})
	want := "Customer " + cus.ID + " does not have a linked source with ID card_notHers."
	if se := stripeError(t, err); se.HTTPStatusCode != 404 || se.Code != stripe.ErrorCodeMissing || se.Param != "source" || se.Msg != want {
		t.Errorf("charge a card the customer has not got: %d %s %s %q; want 404 missing, param source, %q", se.HTTPStatusCode, se.Code, se.Param, se.Msg, want)
	}
}
