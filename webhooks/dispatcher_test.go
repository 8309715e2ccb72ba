package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"
)

const secret = "whsec_test_123"

// received is one request a test receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver is a real HTTP receiver: it records what arrives and answers
// with answer(n) for its n-th request (1-based).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex // guards got and cond's waits
	got    []received
	answer func(n int, r received) int
	notify chan struct{}
}

func newReceiver(t *testing.T, answer func(n int, r received) int) *receiver {
	t.Helper()
	rc := &receiver{answer: answer, notify: make(chan struct{}, 1)}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got := received{header: r.Header.Clone(), body: body}
		rc.mu.Lock()
		rc.got = append(rc.got, got)
		n := len(rc.got)
		rc.mu.Unlock()
		status := http.StatusOK
		if rc.answer != nil {
			status = rc.answer(n, got)
		}
		w.WriteHeader(status)
		select {
		case rc.notify <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(rc.Close)
	return rc
}

// hangingServer never answers; its handlers end when the client leaves or
// the test ends.
func hangingServer(t *testing.T) *httptest.Server {
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the body: net/http notices a client that left (and ends
		// r.Context) only once the body is consumed.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(hang) }) // runs first
	return slow
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// verifyStripe answers 200 to what stripe-go's ConstructEvent accepts and
// 400 to the rest.
func verifyStripe(secret string) func(int, received) int {
	return func(_ int, r received) int {
		if _, err := webhook.ConstructEvent(r.body, r.header.Get("Stripe-Signature"), secret); err != nil {
			return http.StatusBadRequest
		}
		return http.StatusOK
	}
}

// waitFor polls cond until it holds, failing after a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// start runs d until the test ends, and checks that Run returns.
func start(t *testing.T, d *Dispatcher) (stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	pending := -1
	stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case pending = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("Run did not return after its context ended")
			}
		})
		return pending
	}
	t.Cleanup(func() { stop() })
	return stop
}

func endpoint(name, url string) Endpoint {
	return Endpoint{Name: name, URL: url, Signing: Stripe, Secrets: []string{secret},
		Retry: Retry{Schedule: []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}, Timeout: 5 * time.Second}}
}

func newDispatcher(t *testing.T, opts Options, eps ...Endpoint) *Dispatcher {
	t.Helper()
	if opts.TimeScale == 0 {
		opts.TimeScale = 0.001
	}
	d := New(opts)
	if err := d.SetEndpoints(eps); err != nil {
		t.Fatal(err)
	}
	return d
}

func paymentIntent(id, status string) *Event {
	return &Event{Type: "payment_intent." + status, Object: json.RawMessage(`{"id":"` + id + `","object":"payment_intent","status":"` + status + `"}`),
		RequestID: "req_123", IdempotencyKey: "key-1"}
}

func TestStripeSignatureAcceptedByStripeGo(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, verifyStripe(secret))
	d := newDispatcher(t, Options{}, endpoint("shop", rc.URL))
	start(t, d)
	if err := d.Send(paymentIntent("pi_1", "created"), nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a delivery", func() bool { return len(d.Deliveries(Filter{Outcome: Delivered})) == 1 })
	got := rc.requests()
	if len(got) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(got))
	}
	ev, err := webhook.ConstructEvent(got[0].body, got[0].header.Get("Stripe-Signature"), secret)
	if err != nil {
		t.Fatalf("stripe-go refused the delivery: %v", err)
	}
	if !strings.HasPrefix(ev.ID, "evt_") || ev.Type != "payment_intent.created" || ev.Livemode || ev.PendingWebhooks != 1 {
		t.Errorf("event = %+v", ev)
	}
	if ev.Request == nil || ev.Request.ID != "req_123" || ev.Request.IdempotencyKey != "key-1" {
		t.Errorf("request = %+v, want the call that caused it", ev.Request)
	}
	if ev.Data == nil || ev.Data.Object["id"] != "pi_1" {
		t.Errorf("data.object = %v", ev.Data)
	}
	// One changed byte of the body fails verification.
	for _, i := range []int{0, len(got[0].body) / 2, len(got[0].body) - 1} {
		b := append([]byte(nil), got[0].body...)
		b[i] ^= 0x01
		if _, err := webhook.ConstructEvent(b, got[0].header.Get("Stripe-Signature"), secret); err == nil {
			t.Errorf("a body changed at byte %d verified", i)
		}
	}
	if _, err := webhook.ConstructEvent(got[0].body, got[0].header.Get("Stripe-Signature"), "whsec_other"); err == nil {
		t.Error("another secret verified the delivery")
	}
}

func TestStripeRotationSignsWithEverySecret(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	ep := endpoint("shop", rc.URL)
	ep.Secrets = []string{"whsec_new", "whsec_old"}
	d := newDispatcher(t, Options{}, ep)
	start(t, d)
	if err := d.Send(paymentIntent("pi_1", "created"), nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a delivery", func() bool { return len(rc.requests()) == 1 })
	r := rc.requests()[0]
	h := r.header.Get("Stripe-Signature")
	if strings.Count(h, "v1=") != 2 {
		t.Errorf("Stripe-Signature = %q, want two v1 signatures", h)
	}
	for _, s := range ep.Secrets {
		if _, err := webhook.ConstructEvent(r.body, h, s); err != nil {
			t.Errorf("secret %s: %v", s, err)
		}
	}
}

func TestRetriedUntilAccepted(t *testing.T) {
	t.Parallel()
	check := verifyStripe(secret)
	rc := newReceiver(t, func(n int, r received) int {
		if check(n, r) != http.StatusOK {
			return http.StatusBadRequest
		}
		if n <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	d := newDispatcher(t, Options{}, endpoint("shop", rc.URL))
	start(t, d)
	if err := d.Send(paymentIntent("pi_1", "created"), nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the delivery", func() bool { return len(d.Deliveries(Filter{Outcome: Delivered})) == 1 })
	got := rc.requests()
	if len(got) != 3 {
		t.Fatalf("receiver got %d attempts, want exactly 3", len(got))
	}
	ids := map[string]bool{}
	for _, r := range got {
		var ev struct{ ID string }
		if err := json.Unmarshal(r.body, &ev); err != nil {
			t.Fatal(err)
		}
		ids[ev.ID] = true
	}
	if len(ids) != 1 {
		t.Errorf("attempts carried event ids %v, want one", ids)
	}
	as := d.Attempts(Filter{})
	if len(as) != 3 || as[0].Outcome != Retrying || as[0].Status != 500 || as[1].Outcome != Retrying || as[2].Outcome != Delivered || as[2].Attempt != 3 {
		t.Errorf("attempt log = %+v", as)
	}
	if ds := d.Deliveries(Filter{}); len(ds) != 1 || ds[0].Attempts != 3 || ds[0].State != Delivered {
		t.Errorf("deliveries = %+v", ds)
	}
}

func TestFailuresThatAreRetried(t *testing.T) {
	t.Parallel()
	redirect := newReceiver(t, func(int, received) int { return http.StatusFound })
	refused := httptest.NewServer(http.NotFoundHandler())
	refused.Close() // nothing listens there now
	slow := hangingServer(t)
	reset := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		panic(http.ErrAbortHandler) // closes the connection without an answer
	}))
	t.Cleanup(reset.Close)
	t.Cleanup(func() {
		if n := len(redirect.requests()); n != 2 {
			t.Errorf("the redirecting receiver got %d requests, want 2 (redirects not followed)", n)
		}
	})
	for _, tc := range []struct {
		name, url, want string
	}{
		{"3xx is a failure, not followed", redirect.URL, "redirect"},
		{"refused", refused.URL, "refused"},
		{"timeout", slow.URL, "retry.timeout"},
		{"reset", reset.URL, "EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ep := endpoint("ep", tc.url)
			ep.Retry = Retry{Schedule: []time.Duration{time.Millisecond}, Timeout: 200 * time.Millisecond}
			d := newDispatcher(t, Options{}, ep)
			start(t, d)
			if err := d.Send(paymentIntent("pi_1", "created"), nil, 0, nil); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the schedule to end", func() bool { return len(d.Deliveries(Filter{Outcome: Failed})) == 1 })
			as := d.Attempts(Filter{})
			if len(as) != 2 || as[0].Outcome != Retrying || as[1].Outcome != Failed {
				t.Fatalf("attempts = %+v, want one retry then failed", as)
			}
			if !strings.Contains(as[0].Error, tc.want) {
				t.Errorf("error = %q, want it to mention %q", as[0].Error, tc.want)
			}
		})
	}
}

func TestGoneDisablesTheEndpoint(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(int, received) int { return http.StatusGone })
	ep := endpoint("shop", rc.URL)
	d := newDispatcher(t, Options{TimeScale: 1}, ep)
	start(t, d)
	if err := d.Send(paymentIntent("pi_1", "created"), nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the 410", func() bool { return len(d.Deliveries(Filter{Outcome: Disabled})) == 1 })
	if err := d.Send(paymentIntent("pi_2", "created"), nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	as := d.Attempts(Filter{Outcome: Disabled})
	if len(as) != 2 || as[1].EventID == as[0].EventID {
		t.Errorf("disabled attempts = %+v, want the 410 and the refused second event", as)
	}
	if n := len(rc.requests()); n != 1 {
		t.Errorf("receiver got %d requests, want 1", n)
	}
	d.Reset()
	if err := d.Send(paymentIntent("pi_3", "created"), nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a request after Reset enabled the endpoint", func() bool { return len(rc.requests()) == 2 })
}

// TestGoneDropsPendingAsUnattempted: the deliveries a 410 drops are no
// attempts. Each one's record is attempt 0, and its summary counts the
// attempts it made: one retried once counts 1, one never tried 0 (they
// counted one attempt more, which --attempts-at-most checks read).
func TestGoneDropsPendingAsUnattempted(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(n int, _ received) int {
		if n == 1 {
			return http.StatusInternalServerError // retried in an hour
		}
		return http.StatusGone
	})
	ep := endpoint("shop", rc.URL)
	ep.Retry.Schedule = []time.Duration{time.Hour}
	d := newDispatcher(t, Options{TimeScale: 1}, ep)
	start(t, d)
	retried, later, gone := paymentIntent("pi_1", "created"), paymentIntent("pi_2", "created"), paymentIntent("pi_3", "created")
	if err := d.Send(retried, nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first attempt's 500", func() bool { return len(d.Attempts(Filter{Outcome: Retrying})) == 1 })
	if err := d.Send(later, nil, time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Send(gone, nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the 410 and the two dropped", func() bool { return len(d.Deliveries(Filter{Outcome: Disabled})) == 3 })
	want := map[string]struct{ attempt, attempts int }{retried.ID: {0, 1}, later.ID: {0, 0}, gone.ID: {1, 1}}
	for _, a := range d.Attempts(Filter{Outcome: Disabled}) {
		if w := want[a.EventID]; a.Attempt != w.attempt {
			t.Errorf("event %s: attempt record %d, want %d", a.EventID, a.Attempt, w.attempt)
		}
	}
	for _, dl := range d.Deliveries(Filter{Outcome: Disabled}) {
		if w := want[dl.EventID]; dl.Attempts != w.attempts {
			t.Errorf("event %s: delivery counts %d attempts, want %d", dl.EventID, dl.Attempts, w.attempts)
		}
	}
	if n := len(rc.requests()); n != 2 {
		t.Errorf("receiver got %d requests, want 2", n)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		rc := newReceiver(t, nil)
		rc.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(status)
		})
		ep := endpoint("shop", rc.URL)
		ep.Retry.Schedule = []time.Duration{time.Hour}
		d := newDispatcher(t, Options{TimeScale: 1}, ep)
		start(t, d)
		if err := d.Send(paymentIntent("pi_1", "created"), nil, 0, nil); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the first attempt", func() bool { return len(d.Attempts(Filter{})) == 1 })
		a := d.Attempts(Filter{})[0]
		if a.Next == nil {
			t.Fatalf("%d: attempt %+v has no next", status, a)
		}
		// The receiver's 2s replaces the schedule's hour.
		if wait := a.Next.Sub(a.At); wait < 2*time.Second || wait > time.Minute {
			t.Errorf("%d: next attempt in %s, want Retry-After's 2s", status, wait)
		}
	}
}

// TestRetryAfterZeroIsAtOnce: Retry-After: 0 (or a date already past) on
// a 429 or 503 replaces the scheduled wait, as the README says any
// Retry-After does; it was taken for none, and the retry waited the
// schedule's hour.
func TestRetryAfterZeroIsAtOnce(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"0", "Mon, 07 Dec 2020 00:00:00 GMT"} {
		rc := newReceiver(t, nil)
		var mu sync.Mutex
		calls := 0
		rc.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			calls++
			n := calls
			mu.Unlock()
			if n == 1 {
				w.Header().Set("Retry-After", v)
				w.WriteHeader(http.StatusTooManyRequests)
			}
		})
		ep := endpoint("shop", rc.URL)
		ep.Retry.Schedule = []time.Duration{time.Hour}
		d := newDispatcher(t, Options{TimeScale: 1}, ep)
		start(t, d)
		if err := d.Send(paymentIntent("pi_1", "created"), nil, 0, nil); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the first attempt", func() bool { return len(d.Attempts(Filter{})) >= 1 })
		a := d.Attempts(Filter{})[0]
		if a.Next == nil || a.Next.Sub(a.At) > time.Minute {
			t.Fatalf("Retry-After %q: attempt %+v, want the next at once, not in the schedule's hour", v, a)
		}
		waitFor(t, "the retry", func() bool { return len(d.Deliveries(Filter{Outcome: Delivered})) == 1 })
	}
}

func TestOutboxIsBounded(t *testing.T) {
	t.Parallel()
	d := newDispatcher(t, Options{Queue: 3}, endpoint("a", "http://127.0.0.1:1/"), endpoint("b", "http://127.0.0.1:1/"))
	if err := d.Send(paymentIntent("pi_1", "created"), nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	err := d.Send(paymentIntent("pi_2", "created"), nil, 0, nil)
	if !errors.Is(err, ErrFull) {
		t.Fatalf("Send past the queue = %v, want ErrFull", err)
	}
	if n := d.Pending(); n != 3 {
		t.Errorf("pending = %d, want 3", n)
	}
	if as := d.Attempts(Filter{Outcome: Overflow}); len(as) != 1 || as[0].Endpoint != "b" {
		t.Errorf("overflow entries = %+v, want one for b", as)
	}
}

func TestShutdownIsPromptAndCountsPending(t *testing.T) {
	t.Parallel()
	slow := hangingServer(t)
	ep := endpoint("slow", slow.URL)
	ep.Retry.Timeout = time.Hour
	d := newDispatcher(t, Options{Concurrency: 2}, ep)
	stop := start(t, d)
	for i := range 5 {
		if err := d.Send(paymentIntent("pi_"+string(rune('a'+i)), "created"), nil, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Send(paymentIntent("pi_later", "created"), nil, time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	if n := stop(); n != 6 {
		t.Errorf("Run returned %d pending, want 6 (two cut in flight, three queued, one later)", n)
	}
}

func TestRedeliver(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, verifyStripe(secret))
	d := newDispatcher(t, Options{}, endpoint("shop", rc.URL))
	start(t, d)
	ev := paymentIntent("pi_1", "created")
	if err := d.Send(ev, nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the delivery", func() bool { return len(rc.requests()) == 1 })
	n, err := d.Redeliver(ev.ID, "")
	if err != nil || n != 1 {
		t.Fatalf("Redeliver = %d, %v", n, err)
	}
	waitFor(t, "the redelivery", func() bool { return len(d.Deliveries(Filter{EventID: ev.ID, Outcome: Delivered})) == 2 })
	got := rc.requests()
	if len(got) != 2 || string(got[0].body) != string(got[1].body) {
		t.Errorf("redelivery body differs from the first")
	}
	if _, err := d.Redeliver("evt_unknown", ""); err == nil {
		t.Error("Redeliver of an unknown event succeeded")
	}
}

// TestRedeliverGoesWhereTheEventWent: an event sent to some endpoints (a
// route's endpoints:) is redelivered, without ?endpoint=, to those alone;
// it went to every configured endpoint, so a receiver that never got the
// event, nor subscribed to it, got it on a redelivery.
func TestRedeliverGoesWhereTheEventWent(t *testing.T) {
	t.Parallel()
	shop := newReceiver(t, verifyStripe(secret))
	billing := newReceiver(t, verifyStripe(secret))
	d := newDispatcher(t, Options{}, endpoint("shop", shop.URL), endpoint("billing", billing.URL))
	start(t, d)
	ev := paymentIntent("pi_1", "created")
	if err := d.Send(ev, []string{"shop"}, 0, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the delivery", func() bool { return len(d.Deliveries(Filter{EventID: ev.ID, Outcome: Delivered})) == 1 })
	n, err := d.Redeliver(ev.ID, "")
	if err != nil || n != 1 {
		t.Errorf("Redeliver = %d, %v; want 1 delivery queued, to shop", n, err)
	}
	// Send queues at once: a delivery to billing would be listed now.
	if ds := d.Deliveries(Filter{Endpoint: "billing"}); len(ds) != 0 {
		t.Errorf("billing, which the event was not sent to, has deliveries %+v", ds)
	}
	waitFor(t, "the redelivery", func() bool { return len(d.Deliveries(Filter{EventID: ev.ID, Outcome: Delivered})) == 2 })
	if got := len(shop.requests()); got != 2 {
		t.Errorf("shop got %d requests, want 2", got)
	}
	if got := len(billing.requests()); got != 0 {
		t.Errorf("billing got %d requests, want none", got)
	}
	// Named, it still goes where it is told.
	if n, err := d.Redeliver(ev.ID, "billing"); err != nil || n != 1 {
		t.Errorf("Redeliver to billing = %d, %v", n, err)
	}
	waitFor(t, "the named redelivery", func() bool { return len(billing.requests()) == 1 })
}

func TestNegativeDeliveriesThenCleanRetry(t *testing.T) {
	t.Parallel()
	for _, neg := range Negatives {
		t.Run(string(neg), func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, verifyStripe(secret))
			d := newDispatcher(t, Options{}, endpoint("shop", rc.URL))
			start(t, d)
			f := &Fault{Negative: map[Negative]float64{neg: 1}}
			if err := d.Send(paymentIntent("pi_1", "created"), nil, 0, f); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the delivery", func() bool { return len(d.Deliveries(Filter{Outcome: Delivered})) == 1 })
			as := d.Attempts(Filter{})
			if len(as) != 2 || as[0].Status != http.StatusBadRequest || !strings.Contains(as[0].Fault, string(neg)) || as[1].Status != 200 {
				t.Errorf("attempts = %+v, want a refused %s then a clean 200", as, neg)
			}
		})
	}
}

func TestDropFirstSendsOnlyTheRetry(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, verifyStripe(secret))
	d := newDispatcher(t, Options{}, endpoint("shop", rc.URL))
	start(t, d)
	if err := d.Send(paymentIntent("pi_1", "created"), nil, 0, &Fault{DropFirst: 1}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the delivery", func() bool { return len(d.Deliveries(Filter{Outcome: Delivered})) == 1 })
	if n := len(rc.requests()); n != 1 {
		t.Errorf("receiver got %d requests, want 1", n)
	}
	if as := d.Attempts(Filter{}); len(as) != 2 || !strings.Contains(as[0].Error, "drop-first") {
		t.Errorf("attempts = %+v", as)
	}
}

// faultRun sends 500 objects' created and succeeded events (1,000 events)
// with fault f on succeeded to a receiver, one attempt at a time, and
// returns the event ids in arrival order.
func faultRun(t *testing.T, seed uint64, f *Fault) ([]received, *Dispatcher) {
	t.Helper()
	rc := newReceiver(t, nil)
	ep := endpoint("shop", rc.URL)
	d := newDispatcher(t, Options{Seed: seed, Concurrency: 1}, ep)
	for i := range 500 {
		id := fmt.Sprintf("pi_%04d", i)
		if err := d.Send(paymentIntent(id, "created"), nil, 0, nil); err != nil {
			t.Fatal(err)
		}
		if err := d.Send(paymentIntent(id, "succeeded"), nil, 0, f); err != nil {
			t.Fatal(err)
		}
	}
	start(t, d)
	waitFor(t, "every delivery", func() bool { return d.Pending() == 0 })
	return rc.requests(), d
}

type arrival struct{ ID, Type, Object string }

func arrivals(t *testing.T, got []received) []arrival {
	t.Helper()
	out := make([]arrival, len(got))
	for i, r := range got {
		var ev struct {
			ID   string
			Type string
			Data struct{ Object struct{ ID string } }
		}
		if err := json.Unmarshal(r.body, &ev); err != nil {
			t.Fatal(err)
		}
		out[i] = arrival{ev.ID, ev.Type, ev.Data.Object.ID}
	}
	return out
}

func TestFaultRatesOverAThousandEvents(t *testing.T) {
	t.Parallel()
	f := &Fault{Duplicate: 0.2, Reorder: 0.3}
	got, d := faultRun(t, 42, f)
	first := arrivals(t, got)
	// 1,000 events, and a duplicate for about 20% of the 500 succeeded.
	ids := map[string]int{}
	for _, a := range first {
		ids[a.ID]++
	}
	if len(ids) != 1000 {
		t.Fatalf("%d distinct events arrived, want 1000", len(ids))
	}
	dups := 0
	for _, n := range ids {
		if n == 2 {
			dups++
		} else if n != 1 {
			t.Fatalf("an event arrived %d times", n)
		}
	}
	// Reordered: the object's succeeded arrived before its created.
	created := map[string]bool{}
	early := map[string]bool{}
	for _, a := range first {
		switch a.Type {
		case "payment_intent.created":
			created[a.Object] = true
		case "payment_intent.succeeded":
			if !created[a.Object] {
				early[a.Object] = true
			}
		}
	}
	reordered := len(early)
	// Exactly the events whose reorder was drawn came early.
	drawn := 0
	for _, a := range d.Attempts(Filter{Type: "payment_intent.succeeded"}) {
		if a.Attempt == 1 && strings.Contains(a.Fault, "reorder") && !strings.Contains(a.Fault, "second copy") {
			drawn++
		}
	}
	if drawn != reordered {
		t.Errorf("%d objects' succeeded came first, but reorder was drawn for %d", reordered, drawn)
	}
	// The overtaken created events say by which event, and only they do.
	succeeded := map[string]string{} // object → its succeeded event's id
	for _, a := range first {
		if a.Type == "payment_intent.succeeded" {
			succeeded[a.Object] = a.ID
		}
	}
	overtaken := 0
	for _, a := range d.Attempts(Filter{Type: "payment_intent.created"}) {
		if a.Attempt != 1 || a.Fault == "" {
			continue
		}
		ev, _ := d.Event(a.EventID)
		obj := ev.ObjectID()
		if want := OvertakenBy(succeeded[obj]); !early[obj] || a.Fault != want {
			t.Errorf("created %s (early succeeded: %v): fault %q, want %q", a.EventID, early[obj], a.Fault, want)
		}
		overtaken++
	}
	if overtaken != reordered {
		t.Errorf("%d created events say they were overtaken, %d were", overtaken, reordered)
	}
	// Binomial(500, p): within four standard deviations.
	within := func(name string, got int, p float64) {
		mean, sd := 500*p, 4*math.Sqrt(500*p*(1-p))
		if float64(got) < mean-sd || float64(got) > mean+sd {
			t.Errorf("%s: %d of 500, want about %.0f", name, got, mean)
		}
	}
	within("duplicated", dups, 0.2)
	within("reordered", reordered, 0.3)
	// The same seed draws the same faults: the same events are duplicated
	// and reordered, in the same arrival order of objects and types.
	got2, _ := faultRun(t, 42, f)
	second := arrivals(t, got2)
	if len(second) != len(first) {
		t.Fatalf("second run: %d arrivals, first %d", len(second), len(first))
	}
	for i := range first {
		if first[i].Type != second[i].Type || first[i].Object != second[i].Object {
			t.Fatalf("arrival %d: %+v, then %+v with the same seed", i, first[i], second[i])
		}
	}
	t.Logf("duplicated %d, reordered %d of 500", dups, reordered)
}

// TestReorderHoldsWithConcurrentAttempts: with several attempts at once
// (the default), a reordered event is answered before its object's
// earlier event is sent, not merely claimed first and sent beside it.
func TestReorderHoldsWithConcurrentAttempts(t *testing.T) {
	t.Parallel()
	createdCame := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var order []string // "<type> arrived", "<type> answered"
	note := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	rc := newReceiver(t, func(_ int, r received) int {
		var ev struct{ Type string }
		_ = json.Unmarshal(r.body, &ev)
		note(ev.Type + " arrived")
		if ev.Type == "payment_intent.created" {
			once.Do(func() { close(createdCame) })
		} else {
			// Hold the answer a while: an earlier event sent beside
			// this one arrives meanwhile.
			select {
			case <-createdCame:
			case <-time.After(300 * time.Millisecond):
			}
		}
		note(ev.Type + " answered")
		return http.StatusOK
	})
	d := newDispatcher(t, Options{Seed: 1}, endpoint("shop", rc.URL))
	if err := d.Send(paymentIntent("pi_1", "created"), nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Send(paymentIntent("pi_1", "succeeded"), nil, 0, &Fault{Reorder: 1}); err != nil {
		t.Fatal(err)
	}
	start(t, d)
	waitFor(t, "both deliveries", func() bool { return len(d.Deliveries(Filter{Outcome: Delivered})) == 2 })
	mu.Lock()
	defer mu.Unlock()
	want := "[payment_intent.succeeded arrived payment_intent.succeeded answered payment_intent.created arrived payment_intent.created answered]"
	if got := fmt.Sprint(order); got != want {
		t.Errorf("the receiver saw %s, want %s", got, want)
	}
}

// TestReorderWaitIsBounded: a receiver that holds the reordered event
// until the overtaken one arrives still gets both, each on its first
// attempt: the overtaken event waits for the answer only orderWait, while
// its lease still covers its attempt.
func TestReorderWaitIsBounded(t *testing.T) {
	t.Parallel()
	createdCame := make(chan struct{})
	var once sync.Once
	rc := newReceiver(t, func(_ int, r received) int {
		var ev struct{ Type string }
		_ = json.Unmarshal(r.body, &ev)
		if ev.Type == "payment_intent.created" {
			once.Do(func() { close(createdCame) })
			return http.StatusOK
		}
		select {
		case <-createdCame:
		case <-time.After(20 * time.Second):
		}
		return http.StatusOK
	})
	ep := endpoint("shop", rc.URL)
	ep.Retry.Timeout = 10 * time.Second
	d := newDispatcher(t, Options{Seed: 1, TimeScale: 1}, ep)
	if err := d.Send(paymentIntent("pi_1", "created"), nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Send(paymentIntent("pi_1", "succeeded"), nil, 0, &Fault{Reorder: 1}); err != nil {
		t.Fatal(err)
	}
	start(t, d)
	waitFor(t, "both deliveries", func() bool { return len(d.Deliveries(Filter{Outcome: Delivered})) == 2 })
	for _, a := range d.Attempts(Filter{}) {
		if a.Attempt != 1 || a.Outcome != Delivered {
			t.Errorf("attempt %+v, want each delivered on its first", a)
		}
	}
	if n := len(rc.requests()); n != 2 {
		t.Errorf("the receiver got %d requests, want 2", n)
	}
}

func TestRingKeepsTheNewest(t *testing.T) {
	t.Parallel()
	r := newRing[int](3)
	for i := 1; i <= 5; i++ {
		old, dropped := r.push(i)
		if want := i > 3; dropped != want || (dropped && old != i-3) {
			t.Errorf("push %d: dropped %v (%d)", i, dropped, old)
		}
	}
	var got []int
	r.each(func(v *int) { got = append(got, *v) })
	if fmt.Sprint(got) != "[3 4 5]" {
		t.Errorf("ring holds %v, want [3 4 5]", got)
	}
	r.clear()
	if r.push(9); len(r.buf) != 1 {
		t.Errorf("after clear, %d elements", len(r.buf))
	}
}

// TestTwoHangingEndpointsLeaveTheOthersRoom: two endpoints whose receivers
// never answer, each with a backlog, hold no more than their bound; a
// third endpoint's event is delivered while they hang. With a bound of
// half the pool the two took every slot, and the third waited for their
// timeouts and then behind their older backlog.
func TestTwoHangingEndpointsLeaveTheOthersRoom(t *testing.T) {
	hangA, hangB := hangingServer(t), hangingServer(t)
	ok := newReceiver(t, nil)
	slow := func(name, url string) Endpoint {
		ep := endpoint(name, url)
		ep.Retry.Timeout = time.Hour
		return ep
	}
	for _, c := range []int{4, 8} {
		t.Run(fmt.Sprint("concurrency=", c), func(t *testing.T) {
			d := newDispatcher(t, Options{Concurrency: c}, slow("hang-a", hangA.URL), slow("hang-b", hangB.URL), endpoint("ok", ok.URL))
			start(t, d)
			for i := range 10 {
				for _, to := range []string{"hang-a", "hang-b"} {
					if err := d.Send(paymentIntent(fmt.Sprint("pi_", to, i), "created"), []string{to}, 0, nil); err != nil {
						t.Fatal(err)
					}
				}
			}
			per := d.perEndpoint().Max
			waitFor(t, "both hanging endpoints at their bound", func() bool {
				b := d.perEndpoint().Busy
				return b["hang-a"] == per && b["hang-b"] == per
			})
			before := len(ok.requests())
			if err := d.Send(paymentIntent("pi_ok", "created"), []string{"ok"}, 0, nil); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the third endpoint's delivery while two hang", func() bool { return len(ok.requests()) > before })
		})
	}
}

// TestFreedSlotGoesToAnIdleEndpoint: three endpoints whose receivers
// never answer fill every slot between them; when their attempts time
// out, a freed slot goes to a fourth endpoint that has none in flight,
// not to the hanging ones' older backlog, which the fourth's event
// waited behind (about a minute here, the backlog over the slots times
// the timeout).
func TestFreedSlotGoesToAnIdleEndpoint(t *testing.T) {
	ok := newReceiver(t, nil)
	eps := []Endpoint{endpoint("ok", ok.URL)}
	var hang []string
	for _, name := range []string{"hang-a", "hang-b", "hang-c"} {
		ep := endpoint(name, hangingServer(t).URL)
		ep.Retry.Timeout = 2 * time.Second
		eps = append(eps, ep)
		hang = append(hang, name)
	}
	d := newDispatcher(t, Options{Concurrency: 8}, eps...)
	start(t, d)
	for i := range 100 {
		for _, to := range hang {
			if err := d.Send(paymentIntent(fmt.Sprint("pi_", to, i), "created"), []string{to}, 0, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, "the hanging endpoints to fill every slot", func() bool {
		n := 0
		for _, c := range d.perEndpoint().Busy {
			n += c
		}
		return n == 8
	})
	if err := d.Send(paymentIntent("pi_ok", "created"), []string{"ok"}, 0, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the idle endpoint's delivery, once a slot is freed", func() bool { return len(ok.requests()) > 0 })
}

// TestHugeTimeScaleWaitsLong: an endpoint's timeScale so large that a
// scaled wait passes the largest Duration waits that long, not at once:
// float64(w)*s converted to a Duration wrapped to a negative wait (on
// amd64; +Inf too), so the retry went at once and an after: was none.
func TestHugeTimeScaleWaitsLong(t *testing.T) {
	t.Parallel()
	for _, s := range []float64{1e10, 1e300, math.MaxFloat64} {
		t.Run(fmt.Sprint("timeScale=", s), func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, func(int, received) int { return http.StatusInternalServerError })
			ep := endpoint("shop", rc.URL)
			ep.TimeScale = s
			d := newDispatcher(t, Options{}, ep)
			start(t, d)
			if err := d.Send(paymentIntent("pi_later", "created"), nil, time.Second, nil); err != nil {
				t.Fatal(err)
			}
			if err := d.Send(paymentIntent("pi_now", "created"), nil, 0, nil); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the first attempt", func() bool { return len(d.Attempts(Filter{})) >= 1 })
			a := d.Attempts(Filter{})[0]
			if a.Outcome != Retrying || a.Next == nil || a.Next.Sub(a.At) < 100*365*24*time.Hour {
				t.Fatalf("attempt %+v: want a retry centuries away", a)
			}
			queued, err := d.box.List(context.Background())
			if err != nil || len(queued) != 2 {
				t.Fatalf("outbox holds %d deliveries (%v), want 2", len(queued), err)
			}
			for _, p := range queued {
				if p.EventID == a.EventID {
					continue
				}
				if wait := p.Due.Sub(p.Created); wait < 100*365*24*time.Hour {
					t.Errorf("delivery of %s due %s after it was sent, want centuries", p.EventID, wait)
				}
			}
		})
	}
}

// TestLogNormalDelayStaysInRange: a log-normal delay fault's draw is
// never negative and never past its max (or 24 h). A draw past int64's
// range converted to a negative Duration, so the first attempt was due
// before the event was sent (sigma 10 and median 1h: 7% of draws).
func TestLogNormalDelayStaysInRange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		delay Delay
		most  time.Duration
	}{
		{"no max", Delay{Median: time.Hour, Sigma: 10}, maxDelay},
		{"max", Delay{Median: time.Hour, Sigma: 10, Max: 2 * time.Hour}, 2 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := newDispatcher(t, Options{TimeScale: 1}, endpoint("shop", "http://127.0.0.1:1/"))
			for i := range 200 {
				if err := d.Send(paymentIntent(fmt.Sprint("pi_", i), "created"), nil, 0, &Fault{Delay: tc.delay}); err != nil {
					t.Fatal(err)
				}
			}
			queued, err := d.box.List(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range queued {
				if wait := p.Due.Sub(p.Created); wait < 0 || wait > tc.most {
					t.Fatalf("delivery of %s due %s after it was sent, want 0 to %s", p.EventID, wait, tc.most)
				}
			}
		})
	}
}

// TestHangingEndpointsDoNotStarveOthersAtLowConcurrency: with 1 or 2
// slots, receivers that hang hold every one; when a timeout frees one,
// it goes to another endpoint's event before their own backlog. It went
// to the earliest due among the endpoints with none in flight, the
// hanging one's older backlog, so the healthy endpoint's event waited
// for all of it (30 timeouts of 1 s here).
func TestHangingEndpointsDoNotStarveOthersAtLowConcurrency(t *testing.T) {
	for _, tc := range []struct {
		concurrency int
		hanging     []string
	}{
		{1, []string{"hang-a"}},
		{2, []string{"hang-a", "hang-b"}},
	} {
		t.Run(fmt.Sprint("concurrency=", tc.concurrency), func(t *testing.T) {
			ok := newReceiver(t, nil)
			eps := []Endpoint{endpoint("ok", ok.URL)}
			for _, name := range tc.hanging {
				ep := endpoint(name, hangingServer(t).URL)
				ep.Retry.Timeout = time.Second
				eps = append(eps, ep)
			}
			d := newDispatcher(t, Options{Concurrency: tc.concurrency}, eps...)
			start(t, d)
			for i := range 30 {
				for _, to := range tc.hanging {
					if err := d.Send(paymentIntent(fmt.Sprint("pi_", to, i), "created"), []string{to}, 0, nil); err != nil {
						t.Fatal(err)
					}
				}
			}
			waitFor(t, "the hanging endpoints to fill every slot", func() bool {
				n := 0
				for _, c := range d.perEndpoint().Busy {
					n += c
				}
				return n == tc.concurrency
			})
			if err := d.Send(paymentIntent("pi_ok", "created"), []string{"ok"}, 0, nil); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the healthy endpoint's delivery, once a timeout frees a slot", func() bool { return len(ok.requests()) > 0 })
		})
	}
}
