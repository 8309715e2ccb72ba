package examples_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/server"
	"github.com/stripe/stripe-go/v85"
)

// TestStripeCustomerSources: a card token added to a customer (POST
// /v1/customers/{customer}/sources, source=tok_visa) is a card of the
// token's test card, on that customer, listed and read back as a card,
// and the customer's first source is its default_source; deleting it
// answers the deleted card and makes the customer's newest remaining
// card its default_source, or none when it has no other. Before, every
// answer was an account (the first type of the operation's anyOf), and
// the default_source stayed; later it became none even while other
// cards remained.
func TestStripeCustomerSources(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	cus := newCustomer(t, sc)
	add := func(token string) *stripe.Card {
		t.Helper()
		src, err := sc.V1PaymentSources.Create(ctx, &stripe.PaymentSourceCreateParams{Customer: stripe.String(cus.ID), Source: &stripe.PaymentSourceSourceParams{Token: stripe.String(token)}})
		if err != nil || src.Type != stripe.PaymentSourceTypeCard || src.Card == nil {
			t.Fatalf("add %s: %+v, %v; want a card", token, src, err)
		}
		return src.Card
	}
	visa := add("tok_visa")
	if !strings.HasPrefix(visa.ID, "card_") || visa.Customer == nil || visa.Customer.ID != cus.ID || visa.Brand != stripe.CardBrandVisa || visa.Last4 != "4242" || visa.Funding != stripe.CardFundingCredit {
		t.Errorf("tok_visa's card: %+v; want card_…, on %s, Visa 4242, credit", visa, cus.ID)
	}
	mc := add("tok_mastercard")
	if mc.ID == visa.ID || mc.Brand != stripe.CardBrandMasterCard || mc.Last4 != "4444" {
		t.Errorf("tok_mastercard's card: %+v; want another card, MasterCard 4444", mc)
	}

	got, err := sc.V1Customers.Retrieve(ctx, cus.ID, nil)
	if err != nil || got.DefaultSource == nil || got.DefaultSource.ID != visa.ID {
		t.Errorf("the customer: %+v, %v; want its first card, %s, as default_source", got, err, visa.ID)
	}
	var listed []string
	for src, err := range sc.V1PaymentSources.List(ctx, &stripe.PaymentSourceListParams{Customer: stripe.String(cus.ID)}).All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if src.Type != stripe.PaymentSourceTypeCard || src.Card == nil {
			t.Errorf("listed %+v; want a card", src)
			continue
		}
		listed = append(listed, src.Card.Last4)
	}
	if strings.Join(listed, ",") != "4444,4242" {
		t.Errorf("the customer's sources: %v; want 4444,4242, newest first", listed)
	}
	back, err := sc.V1PaymentSources.Retrieve(ctx, visa.ID, &stripe.PaymentSourceRetrieveParams{Customer: stripe.String(cus.ID)})
	if err != nil || back.Card == nil || back.Card.ID != visa.ID || back.Card.Last4 != "4242" {
		t.Errorf("read back %s: %+v, %v", visa.ID, back, err)
	}

	// Deleting the default card: the deleted card, gone from the list, and
	// the customer's newest remaining card is its default_source, as
	// Stripe makes it; deleting that one too leaves it none.
	amex := add("tok_amex")
	del, err := sc.V1PaymentSources.Delete(ctx, visa.ID, &stripe.PaymentSourceDeleteParams{Customer: stripe.String(cus.ID)})
	if err != nil || del.ID != visa.ID || !del.Deleted || del.Type != stripe.PaymentSourceTypeCard {
		t.Errorf("delete %s: %+v, %v; want it deleted, a card", visa.ID, del, err)
	}
	if got, err := sc.V1Customers.Retrieve(ctx, cus.ID, nil); err != nil || got.DefaultSource == nil || got.DefaultSource.ID != amex.ID {
		t.Errorf("the customer after its default card is deleted: %+v, %v; want its newest card, %s, as default_source", got, err, amex.ID)
	}
	_, err = sc.V1PaymentSources.Retrieve(ctx, visa.ID, &stripe.PaymentSourceRetrieveParams{Customer: stripe.String(cus.ID)})
	if se := stripeError(t, err); se.HTTPStatusCode != 404 {
		t.Errorf("read back the deleted card: %d, want 404", se.HTTPStatusCode)
	}
	// Deleting a card that is not the default leaves the default.
	if _, err := sc.V1PaymentSources.Delete(ctx, mc.ID, &stripe.PaymentSourceDeleteParams{Customer: stripe.String(cus.ID)}); err != nil {
		t.Fatal(err)
	}
	if got, err := sc.V1Customers.Retrieve(ctx, cus.ID, nil); err != nil || got.DefaultSource == nil || got.DefaultSource.ID != amex.ID {
		t.Errorf("the customer after another card is deleted: %+v, %v; want %s still its default_source", got, err, amex.ID)
	}
	if _, err := sc.V1PaymentSources.Delete(ctx, amex.ID, &stripe.PaymentSourceDeleteParams{Customer: stripe.String(cus.ID)}); err != nil {
		t.Fatal(err)
	}
	if got, err := sc.V1Customers.Retrieve(ctx, cus.ID, nil); err != nil || got.DefaultSource != nil {
		t.Errorf("the customer after its last card is deleted: %+v, %v; want no default_source", got, err)
	}

}

// TestStripeCustomerSourcesUnknownCustomer: under --unknown-ids generate
// a card token added to a customer never created (stripe-go's own suite
// adds tok_123 to cus_123) answers a card, and a card of it is deleted, as
// stripe-mock answers.
func TestStripeCustomerSourcesUnknownCustomer(t *testing.T) {
	t.Parallel()
	s, err := server.New(server.Options{
		Load: func() (*scenarios.Set, error) {
			set, err := scenarios.Load("stripe.yaml")
			if err != nil {
				return nil, err
			}
			return set, openapi.Expand(set, openapi.Options{Cache: stripeSpecs, UnknownIDs: "generate"})
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	sc := client(hs, testKey)
	src, err := sc.V1PaymentSources.Create(context.Background(), &stripe.PaymentSourceCreateParams{Customer: stripe.String("cus_123"), Source: &stripe.PaymentSourceSourceParams{Token: stripe.String("tok_123")}})
	if err != nil || src.Card == nil || src.Card.Customer == nil || src.Card.Customer.ID != "cus_123" {
		t.Errorf("tok_123 on cus_123: %+v, %v; want a card on cus_123", src, err)
	}
	del, err := sc.V1PaymentSources.Delete(context.Background(), "card_123", &stripe.PaymentSourceDeleteParams{Customer: stripe.String("cus_123")})
	if err != nil || del.ID != "card_123" || !del.Deleted {
		t.Errorf("delete card_123 of cus_123: %+v, %v; want it deleted", del, err)
	}
}
