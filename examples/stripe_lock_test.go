package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/internal/redistest"
	"github.com/scenariomock/scenariomock/server"
	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/state/redis"
	"github.com/stripe/stripe-go/v85"
)

// TestStripeConcurrentRefunds: 40 refunds of 100 sent at once for one
// payment of 2000 refund exactly 2000, as at Stripe, which locks the
// payment while a refund acts on it: 20 succeed, the other 20 are
// refused for what is left, and the charge counts 2000 refunded. Before
// the refunds locked the payment, each read the refunds stored so far
// before the others stored theirs: in one run 34 refunds of 100 were made
// of 2000, and the charge's amount_refunded lost updates.
func TestStripeConcurrentRefunds(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	sc := client(hs, testKey)
	ctx := context.Background()
	paid, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{
		Amount: stripe.Int64(2000), Currency: stripe.String("usd"),
		PaymentMethod: stripe.String("pm_card_visa"), Confirm: stripe.Bool(true),
	})
	if err != nil || paid.Status != stripe.PaymentIntentStatusSucceeded || paid.LatestCharge == nil {
		t.Fatalf("paid intent: %+v, %v", paid, err)
	}
	const n = 40
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		refunded int64
		made     int
		refused  = map[string]int{}
	)
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			r, err := sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{PaymentIntent: stripe.String(paid.ID), Amount: stripe.Int64(100)})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				se := stripeError(t, err)
				refused[fmt.Sprintf("%d %s %s", se.HTTPStatusCode, se.Code, se.Param)]++
				return
			}
			made++
			refunded += r.Amount
		})
	}
	close(start)
	wg.Wait()
	if made != 20 || refunded != 2000 {
		t.Errorf("%d refunds made, of %d in all, from 40 of 100 sent at once for a payment of 2000; want 20 and 2000 (refused: %v)", made, refunded, refused)
	}
	for reason, count := range refused {
		if reason != "400  amount" && reason != "400 charge_already_refunded payment_intent" {
			t.Errorf("%d refunds refused with %s; want 400s for the amount left", count, reason)
		}
	}
	var listed int64
	for r, err := range sc.V1Refunds.List(ctx, &stripe.RefundListParams{PaymentIntent: stripe.String(paid.ID)}).All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		listed += r.Amount
	}
	if listed != 2000 {
		t.Errorf("the payment's refunds list %d refunded, want 2000", listed)
	}
	ch, err := sc.V1Charges.Retrieve(ctx, paid.LatestCharge.ID, nil)
	if err != nil || ch.AmountRefunded != 2000 || !ch.Refunded {
		t.Errorf("charge after the refunds: amount_refunded %d, refunded %v (%v); want 2000, true", ch.AmountRefunded, ch.Refunded, err)
	}
}

// TestStripeConcurrentConfirms: 20 confirms of one intent sent at once
// make one payment: one succeeds with its charge, the other 19 find the
// intent succeeded (Stripe's 400 payment_intent_unexpected_state). Ten
// intents are confirmed so at once, through two replicas on one Redis.
// Without the lock the confirm takes on its intent, confirms that read it
// before one stored it all succeed, each with a charge (up to 17 of 20
// in one run; Redis's round trips widen the gap between the read and the
// write).
func TestStripeConcurrentConfirms(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	var scs []*stripe.Client
	for range 2 {
		st, err := redis.Open(context.Background(), rs.URL(), redis.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		scs = append(scs, client(serveStripeWith(t, server.Options{State: st}), testKey))
	}
	sc := scs[0]
	ctx := context.Background()
	const intents, confirms = 10, 20
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		charges = map[string]map[string]bool{}
		refused = map[string]int{}
	)
	start := make(chan struct{})
	var ids []string
	for range intents {
		pi, err := sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{
			Amount: stripe.Int64(1500), Currency: stripe.String("usd"), PaymentMethod: stripe.String("pm_card_visa"),
		})
		if err != nil || pi.Status != stripe.PaymentIntentStatusRequiresConfirmation {
			t.Fatalf("intent: %+v, %v", pi, err)
		}
		ids = append(ids, pi.ID)
		charges[pi.ID] = map[string]bool{}
		for i := range confirms {
			wg.Go(func() {
				<-start
				got, err := scs[i%2].V1PaymentIntents.Confirm(ctx, pi.ID, nil)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					se := stripeError(t, err)
					refused[fmt.Sprintf("%d %s", se.HTTPStatusCode, se.Code)]++
					return
				}
				if got.LatestCharge != nil {
					charges[pi.ID][got.LatestCharge.ID] = true
				}
			})
		}
	}
	close(start)
	wg.Wait()
	for id, made := range charges {
		if len(made) != 1 {
			t.Errorf("%d confirms of %s at once made charges %v; want one", confirms, id, made)
		}
	}
	if want := intents * (confirms - 1); refused["400 payment_intent_unexpected_state"] != want || len(refused) != 1 {
		t.Errorf("refused %v; want %d payment_intent_unexpected_state", refused, want)
	}
	for _, id := range ids {
		count := 0
		for _, err := range sc.V1Charges.List(ctx, &stripe.ChargeListParams{PaymentIntent: stripe.String(id)}).All(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			count++
		}
		if count != 1 {
			t.Errorf("%d charges listed for %s, want 1", count, id)
		}
	}
}

// TestStripeLockTimeout: a confirm that waits longer than 2 s for an
// intent another request holds gets Stripe's 429 lock_timeout with
// Stripe-Should-Retry: true (stripe-node retries a 429 only on that
// header), and changes nothing; stripe-go, retrying, gets through once
// the intent is free.
func TestStripeLockTimeout(t *testing.T) {
	t.Parallel()
	st := state.NewMemory(state.Options{})
	hs := serveStripeWith(t, server.Options{State: st})
	ctx := context.Background()
	pi, err := client(hs, testKey).V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{
		Amount: stripe.Int64(1500), Currency: stripe.String("usd"), PaymentMethod: stripe.String("pm_card_visa"),
	})
	if err != nil {
		t.Fatal(err)
	}
	release, err := st.Locks().Lock(ctx, []string{pi.ID}, time.Second) // another request holds the intent
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", hs.URL+"/v1/payment_intents/"+pi.ID+"/confirm", nil)
	req.SetBasicAuth(testKey, "")
	res, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 429 || res.Header.Get("Stripe-Should-Retry") != "true" || !strings.Contains(string(body), `"code":"lock_timeout"`) {
		t.Fatalf("a confirm of a held intent = %d, Stripe-Should-Retry %q, %s; want 429 lock_timeout with the header true", res.StatusCode, res.Header.Get("Stripe-Should-Retry"), body)
	}
	// stripe-go retries it: freed during its retries, the intent is confirmed once.
	done := make(chan error, 1)
	go func() {
		got, err := client(hs, testKey).V1PaymentIntents.Confirm(ctx, pi.ID, nil)
		if err == nil && got.Status != stripe.PaymentIntentStatusSucceeded {
			err = fmt.Errorf("status %s", got.Status)
		}
		done <- err
	}()
	// Its first try waits out the lock: then the intent is freed, and a
	// retry of stripe-go's confirms it.
	for deadline := time.Now().Add(patience); lockTimeouts(t, hs) < 2; {
		if time.Now().After(deadline) {
			t.Fatal("stripe-go's confirm never got its 429")
		}
		time.Sleep(10 * time.Millisecond)
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("stripe-go's confirm once the intent is free: %v", err)
	}
}

// lockTimeouts counts the 429 answers in the journal.
func lockTimeouts(t *testing.T, hs *httptest.Server) int {
	t.Helper()
	res, err := http.Get(hs.URL + "/__admin/requests/count?status=429")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v struct{ Count int }
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v.Count
}
