package examples_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestStripeSendEvent sends, over the admin API, an event of a flow the
// Stripe example does not play (a renewal's failed payment), as `stripe
// trigger invoice.payment_failed` does: its data.object is Stripe's
// fixture of an invoice with the fields sent laid over it, and it is kept
// for the API key named in headers, so that stripe-go lists and reads it
// with that key and not with another.
func TestStripeSendEvent(t *testing.T) {
	t.Parallel()
	hs := serveStripe(t)
	send := func(body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(hs.URL+"/__admin/webhooks/events", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var v map[string]any
		_ = json.Unmarshal(b, &v)
		return resp.StatusCode, v
	}
	status, v := send(`{"type": "invoice.payment_failed",
		"object": {"id": "in_renewal_1", "customer": "cus_renewing", "billing_reason": "subscription_cycle", "status_transitions": {"finalized_at": 1700000000}},
		"previousAttributes": {"attempt_count": 0},
		"headers": {"Authorization": "Bearer ` + testKey + `"}}`)
	if status != 202 {
		t.Fatalf("POST /__admin/webhooks/events: %d %v", status, v)
	}
	evt, _ := v["event"].(map[string]any)
	obj, _ := evt["data"].(map[string]any)["object"].(map[string]any)
	if obj["object"] != "invoice" || obj["id"] != "in_renewal_1" || obj["customer"] != "cus_renewing" || obj["lines"] == nil {
		t.Fatalf("the event's object %v: want the invoice fixture with the fields sent laid on it", obj)
	}
	if st, _ := obj["status_transitions"].(map[string]any); st["finalized_at"] != float64(1700000000) || !hasKey(st, "voided_at") {
		t.Errorf("status_transitions %v: want the fixture's, merged with the finalized_at sent", obj["status_transitions"])
	}

	ctx := context.Background()
	got := eventsOf(t, client(hs, testKey), "invoice.payment_failed")
	if len(got) != 1 || got[0].ID != evt["id"] || got[0].Data.Object["id"] != "in_renewal_1" || got[0].Data.PreviousAttributes["attempt_count"] != float64(0) {
		t.Fatalf("stripe-go lists %v; want the event sent", got)
	}
	if ev, err := client(hs, testKey).V1Events.Retrieve(ctx, got[0].ID, nil); err != nil || ev.Type != "invoice.payment_failed" {
		t.Fatalf("retrieve the event: %v %v", ev, err)
	}
	if other := eventsOf(t, client(hs, "sk_test_another_account"), "invoice.payment_failed"); len(other) != 0 {
		t.Errorf("another API key lists %d of the events; want none", len(other))
	}
	_, err := client(hs, "sk_test_another_account").V1Events.Retrieve(ctx, got[0].ID, nil)
	if se := stripeError(t, err); se.HTTPStatusCode != 404 {
		t.Errorf("another API key reads the event: %v", err)
	}

	// customer.subscription.* is about a subscription: its fixture.
	if status, v := send(`{"type": "customer.subscription.trial_will_end"}`); status != 202 {
		t.Fatalf("trial_will_end: %d %v", status, v)
	} else if o := v["event"].(map[string]any)["data"].(map[string]any)["object"].(map[string]any); o["object"] != "subscription" {
		t.Errorf("trial_will_end's object is a %v; want a subscription", o["object"])
	}
	// A type whose object has no fixture needs an object.
	if status, v := send(`{"type": "acme.thing.happened"}`); status != 400 || !strings.Contains(v["errors"].([]any)[0].(string), "object: required") {
		t.Errorf("an event of no known object without object: %d %v; want 400 asking for object", status, v)
	}
}

func hasKey(m map[string]any, k string) bool { _, ok := m[k]; return ok }
