package examples_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stripe/stripe-go/v85"
)

// browser is a shopper's browser on the mock's Checkout page: no API key,
// and redirects are not followed, so that the test sees the 303.
var browser = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// page sends a browser's request for the Checkout page at u (a POST of
// its form, empty, when method is POST) and returns the status, the
// headers and the body.
func page(t *testing.T, method, u string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestStripeCheckoutPage: a shop rehearses Stripe Checkout end to end. It
// creates a session (success_url with {CHECKOUT_SESSION_ID}) and a
// webhook endpoint; the buyer's browser, with no API key, opens the
// session's url, which is the mock's page showing the amount; Decline
// keeps the session open; Pay answers 303 to the success URL with the
// id, and the session reads back complete and paid, with a payment
// intent that succeeded and its charge; the endpoint receives a verified
// checkout.session.completed for it. A second Pay makes no second payment,
// an expired session refuses, and another API key cannot read the
// session.
func TestStripeCheckoutPage(t *testing.T) {
	t.Parallel()
	base := serveStripeRunning(t)
	sc := clientAt(base, testKey)
	ctx := context.Background()

	rc := newEndpointReceiver(t, 0)
	we, err := sc.V1WebhookEndpoints.Create(ctx, &stripe.WebhookEndpointCreateParams{URL: stripe.String(rc.URL + "/webhook"),
		EnabledEvents: stripe.StringSlice([]string{"checkout.session.completed", "payment_intent.succeeded", "charge.succeeded"})})
	if err != nil {
		t.Fatal(err)
	}
	rc.setSecret(we.Secret)
	price, err := sc.V1Prices.Create(ctx, &stripe.PriceCreateParams{Currency: stripe.String("eur"), UnitAmount: stripe.Int64(1250),
		ProductData: &stripe.PriceCreateProductDataParams{Name: stripe.String("T-shirt <b>bold</b>")}})
	if err != nil {
		t.Fatal(err)
	}
	newSession := func() *stripe.CheckoutSession {
		t.Helper()
		cs, err := sc.V1CheckoutSessions.Create(ctx, &stripe.CheckoutSessionCreateParams{
			Mode:       stripe.String("payment"),
			SuccessURL: stripe.String("https://shop.test/thanks?session_id={CHECKOUT_SESSION_ID}"),
			CancelURL:  stripe.String("https://shop.test/cart?<script>"),
			LineItems:  []*stripe.CheckoutSessionCreateLineItemParams{{Price: stripe.String(price.ID), Quantity: stripe.Int64(2)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	cs := newSession()
	if want := base + "/c/pay/" + cs.ID; cs.URL != want || cs.Status != stripe.CheckoutSessionStatusOpen || cs.AmountTotal != 2500 {
		t.Fatalf("created: url %q, status %s, amount_total %d; want url %q, open, 2500", cs.URL, cs.Status, cs.AmountTotal, want)
	}
	if got, err := sc.V1CheckoutSessions.Retrieve(ctx, cs.ID, nil); err != nil || got.URL != cs.URL {
		t.Fatalf("read back: %+v, %v; want its url %q stored", got, err, cs.URL)
	}

	// The page, in a browser: the session and its amount, the buttons,
	// the cancel_url escaped.
	status, h, body := page(t, http.MethodGet, cs.URL)
	if status != 200 || h.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET the url: %d %s; want 200 text/html; charset=utf-8\n%s", status, h.Get("Content-Type"), body)
	}
	for _, want := range []string{cs.ID, `<strong id="amount">2500</strong>`, ">eur<", `action="/c/pay/` + cs.ID + `/pay"`, `action="/c/pay/` + cs.ID + `/decline"`, `href="https://shop.test/cart?&lt;script&gt;"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page has no %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<script>") {
		t.Errorf("the page carries the caller's markup unescaped:\n%s", body)
	}

	// Decline: the page again, with the decline; the session stays open.
	status, _, body = page(t, http.MethodPost, cs.URL+"/decline")
	if status != 402 || !strings.Contains(body, "Your card was declined.") {
		t.Errorf("Decline: %d; want 402 and the decline on the page\n%s", status, body)
	}
	if got, err := sc.V1CheckoutSessions.Retrieve(ctx, cs.ID, nil); err != nil || got.Status != stripe.CheckoutSessionStatusOpen || got.PaymentIntent != nil {
		t.Fatalf("after Decline: %+v, %v; want it open without a payment intent", got, err)
	}

	// Pay: 303 to the success URL, with the id.
	status, h, body = page(t, http.MethodPost, cs.URL+"/pay")
	if want := "https://shop.test/thanks?session_id=" + cs.ID; status != http.StatusSeeOther || h.Get("Location") != want {
		t.Fatalf("Pay: %d Location %q; want 303 to %q\n%s", status, h.Get("Location"), want, body)
	}
	// A 303 from a form's POST carries a short hypertext note with a link
	// to the same URL (RFC 9110, 15.4.4), not the session as JSON.
	if link := `<a href="https://shop.test/thanks?session_id=` + cs.ID + `">`; !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(body, link) {
		t.Errorf("Pay: Content-Type %q, body %q; want an HTML note with %s", h.Get("Content-Type"), body, link)
	}
	paid, err := sc.V1CheckoutSessions.Retrieve(ctx, cs.ID, &stripe.CheckoutSessionRetrieveParams{Params: stripe.Params{Expand: []*string{stripe.String("payment_intent")}}})
	if err != nil || paid.Status != stripe.CheckoutSessionStatusComplete || paid.PaymentStatus != stripe.CheckoutSessionPaymentStatusPaid || paid.PaymentIntent == nil {
		t.Fatalf("after Pay: %+v, %v; want it complete, paid, with a payment intent", paid, err)
	}
	pi, err := sc.V1PaymentIntents.Retrieve(ctx, paid.PaymentIntent.ID, nil)
	if err != nil || pi.Status != stripe.PaymentIntentStatusSucceeded || pi.Amount != 2500 || pi.AmountReceived != 2500 || pi.Currency != "eur" || pi.LatestCharge == nil {
		t.Fatalf("its payment intent: %+v, %v; want it succeeded, 2500 eur received, with its charge", pi, err)
	}
	if ch, err := sc.V1Charges.Retrieve(ctx, pi.LatestCharge.ID, nil); err != nil || ch.Status != stripe.ChargeStatusSucceeded || ch.Amount != 2500 || ch.PaymentIntent == nil || ch.PaymentIntent.ID != pi.ID {
		t.Fatalf("its charge: %+v, %v; want it succeeded, of 2500, for %s", ch, err, pi.ID)
	}

	// The shop's endpoint gets checkout.session.completed, signed with its
	// secret, about this session.
	eventually(t, func() string {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		for _, ev := range rc.events {
			if ev.Type == "checkout.session.completed" && ev.Data.Object["id"] == cs.ID && ev.Data.Object["payment_status"] == "paid" {
				return ""
			}
		}
		return "no verified checkout.session.completed for " + cs.ID + " at the endpoint"
	})
	types, _, rejected := rc.got()
	for _, want := range []string{"payment_intent.succeeded", "charge.succeeded"} {
		if !slices.Contains(types, want) {
			eventually(t, func() string {
				if types, _, _ = rc.got(); !slices.Contains(types, want) {
					return "no " + want + " at the endpoint: " + strings.Join(types, ", ")
				}
				return ""
			})
		}
	}
	if len(rejected) > 0 {
		t.Errorf("deliveries the endpoint could not verify: %v", rejected)
	}

	// A second Pay (a double submit) makes no second payment.
	status, h, body = page(t, http.MethodPost, cs.URL+"/pay")
	if status != http.StatusConflict || h.Get("Location") != "" || !strings.Contains(body, "complete") {
		t.Errorf("Pay again: %d Location %q; want 409 and the page saying it is complete\n%s", status, h.Get("Location"), body)
	}
	n := 0
	for range sc.V1PaymentIntents.List(ctx, &stripe.PaymentIntentListParams{}).All(ctx) {
		n++
	}
	if again, err := sc.V1CheckoutSessions.Retrieve(ctx, cs.ID, nil); n != 1 || err != nil || again.PaymentIntent.ID != pi.ID {
		t.Errorf("after a second Pay: %d payment intents, the session's %v (%v); want the one, %s", n, again.PaymentIntent, err, pi.ID)
	}
	if ev := eventsOf(t, sc, "checkout.session.completed"); len(ev) != 1 {
		t.Errorf("checkout.session.completed recorded %d times, want once", len(ev))
	}

	// An expired session refuses.
	gone := newSession()
	if _, err := sc.V1CheckoutSessions.Expire(ctx, gone.ID, nil); err != nil {
		t.Fatal(err)
	}
	status, _, body = page(t, http.MethodPost, base+"/c/pay/"+gone.ID+"/pay")
	if status != http.StatusGone || !strings.Contains(body, "expired") {
		t.Errorf("Pay an expired session: %d; want 410 and the page saying it expired\n%s", status, body)
	}
	if got, err := sc.V1CheckoutSessions.Retrieve(ctx, gone.ID, nil); err != nil || got.Status != stripe.CheckoutSessionStatusExpired || got.PaymentIntent != nil {
		t.Errorf("the expired session after Pay: %+v, %v; want it expired, unpaid", got, err)
	}

	// A session of mode setup is not played: Pay refuses it, and it stays
	// open.
	setup, err := sc.V1CheckoutSessions.Create(ctx, &stripe.CheckoutSessionCreateParams{Mode: stripe.String("setup"), Currency: stripe.String("usd"),
		SuccessURL: stripe.String("https://shop.test/thanks?session_id={CHECKOUT_SESSION_ID}")})
	if err != nil {
		t.Fatal(err)
	}
	status, h, body = page(t, http.MethodPost, setup.URL+"/pay")
	if status != http.StatusNotImplemented || h.Get("Location") != "" || !strings.Contains(body, "not played") {
		t.Errorf("Pay a setup session: %d Location %q; want 501 and the page saying so\n%s", status, h.Get("Location"), body)
	}
	if got, err := sc.V1CheckoutSessions.Retrieve(ctx, setup.ID, nil); err != nil || got.Status != stripe.CheckoutSessionStatusOpen {
		t.Errorf("the setup session after Pay: %+v, %v; want it open", got, err)
	}

	// A session never created.
	for _, tc := range []struct{ method, path string }{{"GET", ""}, {"POST", "/pay"}, {"POST", "/decline"}} {
		if status, _, body := page(t, tc.method, base+"/c/pay/cs_test_nope"+tc.path); status != 404 || !strings.Contains(body, "No such Checkout Session") {
			t.Errorf("%s %s of a session never created: %d; want 404 and the page saying so\n%s", tc.method, tc.path, status, body)
		}
	}

	// The page acted for the key that made the session; another key still
	// cannot read it.
	other := clientAt(base, "sk_test_another_account")
	if _, err := other.V1CheckoutSessions.Retrieve(ctx, cs.ID, nil); stripeError(t, err).HTTPStatusCode != 404 {
		t.Errorf("another key reads the session: %v; want Stripe's 404", err)
	}
}

// TestStripeCheckoutDoubleSubmit: Pay pressed several times at once (a
// buyer's double click, a browser's retry) makes one payment: one 303 to
// the success URL, the others the page's 409, one payment intent and one
// checkout.session.completed.
func TestStripeCheckoutDoubleSubmit(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	price, err := sc.V1Prices.Create(ctx, &stripe.PriceCreateParams{Currency: stripe.String("usd"), UnitAmount: stripe.Int64(900),
		ProductData: &stripe.PriceCreateProductDataParams{Name: stripe.String("mug")}})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sc.V1CheckoutSessions.Create(ctx, &stripe.CheckoutSessionCreateParams{Mode: stripe.String("payment"), SuccessURL: stripe.String("https://shop.test/thanks"),
		LineItems: []*stripe.CheckoutSessionCreateLineItemParams{{Price: stripe.String(price.ID), Quantity: stripe.Int64(1)}}})
	if err != nil {
		t.Fatal(err)
	}
	const presses = 6
	statuses := make(chan int, presses)
	var wg sync.WaitGroup
	for range presses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, cs.URL+"/pay", nil)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err := browser.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(statuses)
	got := map[int]int{}
	for s := range statuses {
		got[s]++
	}
	if got[http.StatusSeeOther] != 1 || got[http.StatusConflict] != presses-1 {
		t.Errorf("%d presses of Pay at once answered %v; want one 303 and the rest 409", presses, got)
	}
	n := 0
	for range sc.V1PaymentIntents.List(ctx, &stripe.PaymentIntentListParams{}).All(ctx) {
		n++
	}
	if n != 1 {
		t.Errorf("%d payment intents after %d presses, want 1", n, presses)
	}
	if ev := eventsOf(t, sc, "checkout.session.completed"); len(ev) != 1 {
		t.Errorf("checkout.session.completed recorded %d times, want once", len(ev))
	}
}

// TestStripeCheckoutBehindTLSProxy: the mock behind a reverse proxy that
// ends TLS (Go's httputil.ReverseProxy, which says so in
// X-Forwarded-Proto: https and keeps the Host) answers a Checkout
// Session whose url is https, at the proxy's address: the url a browser
// can open, and does, through the proxy. Before, the url said http, which
// the proxy's TLS port does not speak. An X-Forwarded-Proto other than
// http or https is not taken.
func TestStripeCheckoutBehindTLSProxy(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	target, err := url.Parse(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewTLSServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host
		r.SetXForwarded()
	}})
	t.Cleanup(proxy.Close)
	sc := client(proxy, testKey)
	ctx := context.Background()
	price, err := sc.V1Prices.Create(ctx, &stripe.PriceCreateParams{Currency: stripe.String("eur"), UnitAmount: stripe.Int64(700),
		ProductData: &stripe.PriceCreateProductDataParams{Name: stripe.String("Mug")}})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sc.V1CheckoutSessions.Create(ctx, &stripe.CheckoutSessionCreateParams{Mode: stripe.String("payment"), SuccessURL: stripe.String("https://shop.test/ok"),
		LineItems: []*stripe.CheckoutSessionCreateLineItemParams{{Price: stripe.String(price.ID), Quantity: stripe.Int64(1)}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := proxy.URL + "/c/pay/" + cs.ID; cs.URL != want {
		t.Fatalf("url %q through a TLS proxy; want %q", cs.URL, want)
	}
	resp, err := proxy.Client().Get(cs.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `<strong id="amount">700</strong>`) {
		t.Errorf("GET %s: %d; want the page, of 700\n%s", cs.URL, resp.StatusCode, b)
	}

	// Straight to the mock: the request's own scheme, whatever else
	// X-Forwarded-Proto says.
	for _, tc := range []struct{ proto, scheme string }{{"", "http"}, {"https", "https"}, {"HTTPS", "https"}, {"javascript", "http"}, {"https, http", "http"}} {
		form := url.Values{"mode": {"payment"}, "success_url": {"https://shop.test/ok"}, "line_items[0][price]": {price.ID}, "line_items[0][quantity]": {"1"}}
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/v1/checkout/sessions", strings.NewReader(form.Encode()))
		req.SetBasicAuth(testKey, "")
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if tc.proto != "" {
			req.Header.Set("X-Forwarded-Proto", tc.proto)
		}
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ ID, URL string }
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if want := tc.scheme + "://" + target.Host + "/c/pay/" + got.ID; err != nil || got.URL != want {
			t.Errorf("X-Forwarded-Proto %q: url %q (%v); want %q", tc.proto, got.URL, err, want)
		}
	}
}

// TestStripeCheckoutPriceData: a session whose one line item gives its
// price inline (price_data, as many shops do for a cart) totals its
// unit_amount times the quantity, in its currency, as Stripe computes it;
// before, amount_total was the fixture's null, and the page showed none.
func TestStripeCheckoutPriceData(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	cs, err := sc.V1CheckoutSessions.Create(ctx, &stripe.CheckoutSessionCreateParams{Mode: stripe.String("payment"), SuccessURL: stripe.String("https://shop.test/ok"),
		LineItems: []*stripe.CheckoutSessionCreateLineItemParams{{Quantity: stripe.Int64(3), PriceData: &stripe.CheckoutSessionCreateLineItemPriceDataParams{
			Currency: stripe.String("usd"), UnitAmount: stripe.Int64(999), ProductData: &stripe.CheckoutSessionCreateLineItemPriceDataProductDataParams{Name: stripe.String("Cart")}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if cs.AmountSubtotal != 2997 || cs.AmountTotal != 2997 || cs.Currency != "usd" {
		t.Fatalf("created: subtotal %d total %d %s; want 2997 2997 usd", cs.AmountSubtotal, cs.AmountTotal, cs.Currency)
	}
	if status, _, body := page(t, http.MethodGet, cs.URL); status != 200 || !strings.Contains(body, `<strong id="amount">2997</strong>`) {
		t.Errorf("the page: %d; want it to show 2997\n%s", status, body)
	}
}

// TestStripeCheckoutSessionLineItems: a session of several line items, of
// stored prices and of price_data, has their sum as its amounts (before,
// null: the template's sum rendered as a string) and lists them, in the
// order sent, at GET …/line_items, which stripe-go pages (before, the
// fixture's T-shirt for any session); the payment page lists them, and a
// session never created is Stripe's 404.
func TestStripeCheckoutSessionLineItems(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	shirt, err := sc.V1Prices.Create(ctx, &stripe.PriceCreateParams{Product: stripe.String(newProduct(t, sc, "Shirt").ID), UnitAmount: stripe.Int64(1500), Currency: stripe.String("usd")})
	if err != nil {
		t.Fatal(err)
	}
	mug, err := sc.V1Prices.Create(ctx, &stripe.PriceCreateParams{Product: stripe.String(newProduct(t, sc, "Mug").ID), UnitAmount: stripe.Int64(700), Currency: stripe.String("usd")})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sc.V1CheckoutSessions.Create(ctx, &stripe.CheckoutSessionCreateParams{
		Mode: stripe.String("payment"), SuccessURL: stripe.String("https://example.com/ok"),
		LineItems: []*stripe.CheckoutSessionCreateLineItemParams{
			{Price: stripe.String(shirt.ID), Quantity: stripe.Int64(2)},
			{Price: stripe.String(mug.ID), Quantity: stripe.Int64(1)},
			{Quantity: stripe.Int64(4), PriceData: &stripe.CheckoutSessionCreateLineItemPriceDataParams{
				Currency: stripe.String("USD"), UnitAmount: stripe.Int64(250),
				ProductData: &stripe.CheckoutSessionCreateLineItemPriceDataProductDataParams{Name: stripe.String("Sticker")}}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	if cs.AmountSubtotal != 4700 || cs.AmountTotal != 4700 || cs.Currency != "usd" || cs.TotalDetails == nil || cs.TotalDetails.AmountTax != 0 || cs.TotalDetails.AmountDiscount != 0 {
		t.Errorf("session: subtotal %d total %d %s, total details %+v; want 4700 4700 usd, no tax or discount", cs.AmountSubtotal, cs.AmountTotal, cs.Currency, cs.TotalDetails)
	}
	type line struct {
		desc         string
		qty, total   int64
		price, curr  string
		priceUnit    int64
		priceProduct bool
	}
	want := []line{
		{"Shirt", 2, 3000, shirt.ID, "usd", 1500, true},
		{"Mug", 1, 700, mug.ID, "usd", 700, true},
		{"Sticker", 4, 1000, "", "usd", 250, true},
	}
	var got []line
	params := &stripe.CheckoutSessionListLineItemsParams{Session: stripe.String(cs.ID)}
	params.Limit = stripe.Int64(2) // two pages
	for li, err := range sc.V1CheckoutSessions.ListLineItems(ctx, params).All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		l := line{desc: li.Description, qty: li.Quantity, total: li.AmountTotal, curr: string(li.Currency)}
		if li.Price != nil {
			l.priceUnit, l.priceProduct = li.Price.UnitAmount, li.Price.Product != nil && li.Price.Product.ID != ""
			if li.Price.ID != shirt.ID && li.Price.ID != mug.ID {
				if !strings.HasPrefix(li.Price.ID, "price_") {
					t.Errorf("line %s: price %q; want a price_… made from price_data", li.Description, li.Price.ID)
				}
			} else {
				l.price = li.Price.ID
			}
		}
		if li.AmountSubtotal != l.total || !strings.HasPrefix(li.ID, "li_") || li.Object != "item" {
			t.Errorf("line %s: id %s, object %s, subtotal %d; want li_…, item, %d", li.Description, li.ID, li.Object, li.AmountSubtotal, l.total)
		}
		got = append(got, l)
	}
	if !slices.Equal(got, want) {
		t.Errorf("line items\n got %+v\nwant %+v", got, want)
	}

	_, _, body := page(t, http.MethodGet, cs.URL)
	for _, li := range []string{"2 × Shirt 3000 usd", "1 × Mug 700 usd", "4 × Sticker 1000 usd", `<strong id="amount">4700</strong>`} {
		if !strings.Contains(body, li) {
			t.Errorf("payment page lists no %q:\n%s", li, body)
		}
	}

	for _, err := range sc.V1CheckoutSessions.ListLineItems(ctx, &stripe.CheckoutSessionListLineItemsParams{Session: stripe.String("cs_test_nope")}).All(ctx) {
		if se := stripeError(t, err); se.HTTPStatusCode != 404 || se.Code != stripe.ErrorCodeResourceMissing {
			t.Errorf("line items of a session never created: %d %s; want 404 resource_missing", se.HTTPStatusCode, se.Code)
		}
		break
	}
}
