package webhooks

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSendToTargets: an endpoint found at send time gets the event signed
// with its own secret (stripe-go's ConstructEvent checks it), with the
// retry policy of its source (a 500 is retried), beside the configured
// endpoints; pending_webhooks counts both; a redelivery reaches it again;
// a target of no configured source, or with no URL, is refused.
func TestSendToTargets(t *testing.T) {
	t.Parallel()
	const targetSecret = "whsec_target_456"
	shop := newReceiver(t, verifyStripe(secret))
	dyn := newReceiver(t, func(n int, r received) int {
		if n == 1 {
			return http.StatusInternalServerError
		}
		return verifyStripe(targetSecret)(n, r)
	})
	d := New(Options{})
	if err := d.SetEndpoints([]Endpoint{{Name: "shop", URL: shop.URL, Signing: Stripe, Secrets: []string{secret}}}); err != nil {
		t.Fatal(err)
	}
	if err := d.SetSources([]Source{{Name: "hooks", Retry: Retry{Schedule: []time.Duration{time.Millisecond}}}}); err != nil {
		t.Fatal(err)
	}
	stop := start(t, d)
	defer stop()
	target := Target{Name: "we_1", URL: dyn.URL, Secrets: []string{targetSecret}, Source: "hooks"}
	ev := &Event{Type: "customer.created", Object: json.RawMessage(`{"id":"cus_1"}`)}
	if err := d.SendTo(ev, nil, []Target{target}, 0, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the target's retry, and the configured endpoint's delivery", func() bool {
		return len(dyn.requests()) >= 2 && len(shop.requests()) >= 1 && len(d.Deliveries(Filter{Endpoint: "we_1", Outcome: Delivered})) == 1
	})
	var body struct {
		Pending int `json:"pending_webhooks"`
	}
	if err := json.Unmarshal(dyn.requests()[1].body, &body); err != nil || body.Pending != 2 {
		t.Errorf("pending_webhooks = %d (%v), want 2", body.Pending, err)
	}
	if as := d.Attempts(Filter{Endpoint: "we_1"}); len(as) != 2 || as[0].Status != 500 || as[0].Outcome != Retrying || as[1].Outcome != Delivered {
		t.Errorf("the target's attempts = %+v, want a 500 retried, then delivered", as)
	}
	if n, err := d.Redeliver(ev.ID, "we_1"); n != 1 || err != nil {
		t.Fatalf("Redeliver to the target = %d, %v", n, err)
	}
	waitFor(t, "the redelivery", func() bool { return len(dyn.requests()) == 3 })
	if r := dyn.requests()[2]; verifyStripe(targetSecret)(3, r) != http.StatusOK {
		t.Errorf("the redelivery is not signed with the target's secret: %s", r.header.Get("Stripe-Signature"))
	}
	if len(shop.requests()) != 1 {
		t.Errorf("the configured endpoint got %d deliveries, want 1 (the redelivery was the target's)", len(shop.requests()))
	}

	err := d.SendTo(&Event{Type: "customer.created"}, nil, []Target{{Name: "we_2", URL: dyn.URL, Source: "nope"}, {Name: "we_3", Source: "hooks", Secrets: []string{"x"}}}, 0, nil)
	if err == nil || !strings.Contains(err.Error(), `no endpoint source "nope"`) || !strings.Contains(err.Error(), "url: is required") {
		t.Errorf("SendTo of bad targets = %v, want both refused", err)
	}
}

// TestTargetSourceRemoved: a delivery to a target whose source a reload
// removed fails at its attempt, as one to a removed endpoint does.
func TestTargetSourceRemoved(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	d := New(Options{})
	if err := d.SetSources([]Source{{Name: "hooks"}}); err != nil {
		t.Fatal(err)
	}
	if err := d.SendTo(&Event{Type: "a.b"}, nil, []Target{{Name: "we_1", URL: rc.URL, Secrets: []string{secret}, Source: "hooks"}}, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.SetSources(nil); err != nil {
		t.Fatal(err)
	}
	stop := start(t, d)
	defer stop()
	waitFor(t, "the delivery to fail", func() bool { return len(d.Deliveries(Filter{Endpoint: "we_1", Outcome: Failed})) == 1 })
	if len(rc.requests()) != 0 {
		t.Errorf("the receiver got %d requests, want none", len(rc.requests()))
	}
	if as := d.Attempts(Filter{Endpoint: "we_1"}); len(as) != 1 || !strings.Contains(as[0].Error, `no webhook endpoint source "hooks"`) {
		t.Errorf("attempts = %+v", as)
	}
}

// TestGoneDisablesATarget: a stored endpoint (endpointsFrom:) that answers
// 410 gets no more events at that URL, as a configured endpoint does
// (README: "A 410 disables the endpoint"): the next event is a disabled
// attempt, a redelivery to it is ErrDisabled, until Reset; its object
// given a new URL is enabled there. Before, each later event went out to
// the receiver that had said 410 again.
func TestGoneDisablesATarget(t *testing.T) {
	t.Parallel()
	gone := newReceiver(t, func(int, received) int { return http.StatusGone })
	moved := newReceiver(t, nil)
	d := New(Options{})
	if err := d.SetSources([]Source{{Name: "hooks"}}); err != nil {
		t.Fatal(err)
	}
	start(t, d)
	target := Target{Name: "we_1", URL: gone.URL, Secrets: []string{secret}, Source: "hooks"}
	first := &Event{Type: "customer.created", Object: json.RawMessage(`{"id":"cus_1"}`)}
	if err := d.SendTo(first, nil, []Target{target}, 0, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the 410", func() bool { return len(d.Deliveries(Filter{Outcome: Disabled})) == 1 })
	if err := d.SendTo(&Event{Type: "customer.created", Object: json.RawMessage(`{"id":"cus_2"}`)}, nil, []Target{target}, 0, nil); err != nil {
		t.Fatal(err)
	}
	if as := d.Attempts(Filter{Endpoint: "we_1", Outcome: Disabled}); len(as) != 2 || as[1].Attempt != 0 {
		t.Errorf("disabled attempts = %+v, want the 410 and the second event refused unsent", as)
	}
	if n, err := d.Redeliver(first.ID, "we_1"); n != 0 || !errors.Is(err, ErrDisabled) {
		t.Errorf("Redeliver to the disabled target = %d, %v; want ErrDisabled", n, err)
	}
	if n, err := d.Redeliver(first.ID, ""); n != 0 || !errors.Is(err, ErrDisabled) {
		t.Errorf("Redeliver to where it went = %d, %v; want ErrDisabled", n, err)
	}
	if n := len(gone.requests()); n != 1 {
		t.Errorf("the receiver that answered 410 got %d requests, want 1", n)
	}
	target.URL = moved.URL
	if err := d.SendTo(&Event{Type: "customer.created"}, nil, []Target{target}, 0, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the event at the object's new URL", func() bool { return len(moved.requests()) == 1 })
	d.Reset()
	target.URL = gone.URL
	if err := d.SendTo(&Event{Type: "customer.created"}, nil, []Target{target}, 0, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a request after Reset enabled the target", func() bool { return len(gone.requests()) == 2 })
}
