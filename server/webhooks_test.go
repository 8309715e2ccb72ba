package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/internal/redistest"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state/redis"
	"github.com/scenariomock/scenariomock/webhooks"
	"github.com/stripe/stripe-go/v85/webhook"
)

// hookReceiver is a receiver under test: it verifies with stripe-go and
// keeps the events it accepted.
type hookReceiver struct {
	*httptest.Server
	mu     sync.Mutex // guards events
	events []map[string]any
}

func newHookReceiver(t *testing.T, secret string) *hookReceiver {
	rc := &hookReceiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if _, err := webhook.ConstructEvent(body, r.Header.Get("Stripe-Signature"), secret); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var ev map[string]any
		_ = json.Unmarshal(body, &ev)
		rc.mu.Lock()
		rc.events = append(rc.events, ev)
		rc.mu.Unlock()
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *hookReceiver) got() []map[string]any {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]map[string]any(nil), rc.events...)
}

// serveYAMLRunning serves content with Serve, as the product does, so
// that the webhook dispatcher runs; it returns the base URL.
func serveYAMLRunning(t testing.TB, opts Options, content string) (*Server, string, *syncBuffer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	opts.Load = func() (*scenarios.Set, error) { return scenarios.Load(path) }
	opts.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(patience):
			t.Error("Serve did not return")
		}
	})
	return s, "http://" + ln.Addr().String(), logs
}

const hooksYAML = `
webhooks:
  endpoints:
    - name: shop
      url: %s
      secret: whsec_test_123
      retry: { schedule: [1s, 1s], timeout: 5s }
routes:
  - name: create payment intent
    method: POST
    path: /v1/payment_intents
    idempotency: { key: header.Idempotency-Key }
    respond:
      status: 200
      template: true
      headers: { Request-Id: req_abc }
      body: { id: 'pi_{{ randomHex 8 }}', object: payment_intent, status: requires_confirmation }
    events:
      - type: payment_intent.created
      - type: payment_intent.succeeded
        data: { object: '{{ .Response.JSON }}', status: succeeded }
  - name: refused
    method: POST
    path: /v1/refused
    respond: { status: 402, body: { error: card_declined } }
    events:
      - type: charge.failed
  - name: plain
    method: POST
    path: /v1/customers
    respond: { status: 201, body: { id: cus_1, object: customer } }
    events:
      - type: customer.created
`

func TestRouteEventsAreSignedAndSentOnce(t *testing.T) {
	t.Parallel()
	rc := newHookReceiver(t, "whsec_test_123")
	_, base, _ := serveYAMLRunning(t, Options{Webhooks: webhooks.Options{TimeScale: 0.001}}, fmt.Sprintf(hooksYAML, rc.URL))
	r := do(t, "POST", base+"/v1/payment_intents", `{}`, "Idempotency-Key", "k-1")
	if r.status != 200 {
		t.Fatalf("POST = %d %s", r.status, r.body)
	}
	pi := r.json(t)["id"].(string)
	eventually(t, patience, func() string {
		if n := len(rc.got()); n != 2 {
			return fmt.Sprintf("receiver accepted %d events, want 2", n)
		}
		return ""
	})
	byType := map[string]map[string]any{}
	for _, ev := range rc.got() {
		byType[ev["type"].(string)] = ev
	}
	created, succeeded := byType["payment_intent.created"], byType["payment_intent.succeeded"]
	if created == nil || succeeded == nil {
		t.Fatalf("events = %v", rc.got())
	}
	obj := created["data"].(map[string]any)["object"].(map[string]any)
	if obj["id"] != pi || obj["status"] != "requires_confirmation" {
		t.Errorf("created data.object = %v, want the answer", obj)
	}
	req := created["request"].(map[string]any)
	if req["id"] != "req_abc" || req["idempotency_key"] != "k-1" {
		t.Errorf("request = %v, want the answer's Request-Id and the key", req)
	}
	data := succeeded["data"].(map[string]any)
	if o := data["object"].(map[string]any); o["id"] != pi || o["status"] != "succeeded" {
		t.Errorf("succeeded data.object = %v", o)
	}
	if prev, _ := data["previous_attributes"].(map[string]any); prev["status"] != "requires_confirmation" {
		t.Errorf("previous_attributes = %v", data["previous_attributes"])
	}
	// The replay of the key sends nothing: the events are queued before
	// the first answer is written, so none can be on its way.
	if r2 := do(t, "POST", base+"/v1/payment_intents", `{}`, "Idempotency-Key", "k-1"); r2.body != r.body {
		t.Fatalf("replay = %d %s", r2.status, r2.body)
	}
	var list adminWebhooks
	if err := json.Unmarshal([]byte(do(t, "GET", base+"/__admin/webhooks", "").body), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Deliveries) != 2 {
		t.Errorf("after the replay, %d deliveries, want 2", len(list.Deliveries))
	}
	// A refused call sends no event; a route without idempotency sends its own.
	if r := do(t, "POST", base+"/v1/refused", `{}`); r.status != 402 {
		t.Fatalf("refused = %d", r.status)
	}
	do(t, "POST", base+"/v1/customers", `{}`)
	eventually(t, patience, func() string {
		if n := len(rc.got()); n != 3 {
			return fmt.Sprintf("receiver accepted %d events, want 3", n)
		}
		return ""
	})
	if typ := rc.got()[2]["type"]; typ != "customer.created" {
		t.Errorf("third event = %v", typ)
	}
	// Filters, redelivery and reset.
	if err := json.Unmarshal([]byte(do(t, "GET", base+"/__admin/webhooks?type=payment_intent.created&outcome=delivered", "").body), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Deliveries) != 1 || len(list.Attempts) != 1 || list.Attempts[0].Status != 200 {
		t.Fatalf("filtered list = %+v", list)
	}
	id := list.Deliveries[0].EventID
	if r := do(t, "POST", base+"/__admin/webhooks/"+id+"/redeliver", ""); r.status != http.StatusAccepted {
		t.Fatalf("redeliver = %d %s", r.status, r.body)
	}
	eventually(t, patience, func() string {
		if n := len(rc.got()); n != 4 {
			return fmt.Sprintf("receiver accepted %d events, want 4", n)
		}
		return ""
	})
	if rc.got()[3]["id"] != id {
		t.Errorf("redelivered %v, want %s", rc.got()[3]["id"], id)
	}
	if r := do(t, "POST", base+"/__admin/webhooks/evt_nope/redeliver", ""); r.status != http.StatusNotFound {
		t.Errorf("redeliver of an unknown event = %d", r.status)
	}
	do(t, "POST", base+"/__admin/reset", "")
	if err := json.Unmarshal([]byte(do(t, "GET", base+"/__admin/webhooks", "").body), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Deliveries) != 0 || len(list.Attempts) != 0 || list.Pending != 0 {
		t.Errorf("after reset: %+v", list)
	}
}

func TestResetDropsPendingDeliveries(t *testing.T) {
	t.Parallel()
	rc := newHookReceiver(t, "whsec_test_123")
	yaml := strings.Replace(fmt.Sprintf(hooksYAML, rc.URL), "      - type: payment_intent.created\n", "      - type: payment_intent.created\n        after: 1h\n", 1)
	_, base, _ := serveYAMLRunning(t, Options{}, yaml)
	do(t, "POST", base+"/v1/payment_intents", `{}`, "Idempotency-Key", "k-1")
	var list adminWebhooks
	if err := json.Unmarshal([]byte(do(t, "GET", base+"/__admin/webhooks?outcome=pending", "").body), &list); err != nil {
		t.Fatal(err)
	}
	later := false
	for _, d := range list.Deliveries {
		later = later || d.Type == "payment_intent.created" && d.Attempts == 0
	}
	if !later {
		t.Fatalf("pending = %+v, want the created event an hour away", list)
	}
	do(t, "POST", base+"/__admin/reset", "")
	if err := json.Unmarshal([]byte(do(t, "GET", base+"/__admin/webhooks", "").body), &list); err != nil {
		t.Fatal(err)
	}
	if list.Pending != 0 {
		t.Errorf("after reset, %d pending", list.Pending)
	}
}

func TestShutdownSaysHowManyDeliveriesWerePending(t *testing.T) {
	t.Parallel()
	rc := newHookReceiver(t, "whsec_test_123")
	yaml := strings.ReplaceAll(fmt.Sprintf(hooksYAML, rc.URL), "      - type: payment_intent.created\n", "      - type: payment_intent.created\n        after: 1h\n")
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	s, err := New(Options{
		Load:   func() (*scenarios.Set, error) { return scenarios.Load(path) },
		Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	do(t, "POST", "http://"+ln.Addr().String()+"/v1/payment_intents", `{}`, "Idempotency-Key", "k-1")
	eventually(t, patience, func() string {
		if n := len(rc.got()); n != 1 {
			return fmt.Sprintf("receiver accepted %d events, want the succeeded one", n)
		}
		// The receiver has the event before the dispatcher has its
		// answer: until then the attempt is in flight, and shutdown
		// would count it pending too.
		if n := s.hooks.d.Pending(); n != 1 {
			return fmt.Sprintf("%d deliveries pending, want the one an hour away", n)
		}
		return ""
	})
	cancel()
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatal("Serve did not return: the dispatcher held shutdown")
	}
	if !strings.Contains(logs.String(), `"msg":"webhook deliveries pending at shutdown, not sent","pending":1`) {
		t.Errorf("the log does not say one delivery was pending:\n%s", logs.String())
	}
}

// TestWebhookToItselfDoesNotLoop: an endpoint whose url leads back to a
// route with events gets its delivery answered, and the delivery sends no
// events of its own; before, each delivery sent another, without end.
func TestWebhookToItselfDoesNotLoop(t *testing.T) {
	t.Parallel()
	_, base, logs := serveYAMLRunning(t, Options{Webhooks: webhooks.Options{TimeScale: 0.001}}, "routes: []\n")
	postDoc(t, base, fmt.Sprintf(`
webhooks:
  endpoints:
    - { name: self, url: '%s/things', secret: whsec_test_123 }
routes:
  - name: create thing
    method: POST
    path: /things
    respond: { status: 200, body: { id: thing_1, object: thing } }
    events: [ { type: thing.created } ]
`, base))
	if r := do(t, "POST", base+"/things", `{}`, "Content-Type", "application/json"); r.status != 200 {
		t.Fatalf("POST /things: %d %s", r.status, r.body)
	}
	var list struct {
		Deliveries []webhooks.Delivery `json:"deliveries"`
	}
	eventually(t, patience, func() string {
		r := do(t, "GET", base+"/__admin/webhooks", "")
		list.Deliveries = nil
		if err := json.Unmarshal([]byte(r.body), &list); err != nil {
			return err.Error()
		}
		for _, d := range list.Deliveries {
			if d.State == webhooks.Delivered {
				return ""
			}
		}
		return "no delivery yet: " + r.body
	})
	// The delivery was answered after its route committed: any event it
	// sent is queued by now.
	if len(list.Deliveries) != 1 {
		t.Errorf("%d deliveries, want the one the client's request made", len(list.Deliveries))
	}
	if r := do(t, "GET", base+"/__admin/requests/count?path=/things", ""); !strings.Contains(r.body, `"count": 2`) {
		t.Errorf("requests to /things: %s, want 2 (the client's and the delivery)", r.body)
	}
	eventually(t, patience, func() string {
		if !strings.Contains(logs.String(), "does an endpoint's url lead back to this server?") {
			return "no warning logged:\n" + logs.String()
		}
		return ""
	})
}

// TestHangingEndpointLeavesOthersTheirs: a receiver that never answers
// holds fewer than half of --webhook-concurrency's attempts in flight, so
// another endpoint's deliveries all arrive while it hangs (in memory and
// with the outbox in Redis). Before, it came to hold all 8 and the other
// endpoint's deliveries waited for its retry.timeout (an hour here).
func TestHangingEndpointLeavesOthersTheirs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts func(t *testing.T) Options
	}{
		{"memory", func(*testing.T) Options { return Options{Webhooks: webhooks.Options{TimeScale: 0.001}} }},
		{"redis", func(t *testing.T) Options {
			rs := redistest.Start(t)
			st, err := redis.Open(context.Background(), rs.URL(), redis.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return Options{State: st, Webhooks: webhooks.Options{TimeScale: 0.001, Outbox: st.Outbox(0), Shared: st.History(0)}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var (
				mu      sync.Mutex
				hanging int
			)
			hang := make(chan struct{})
			slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body) // so that r.Context ends when the client leaves
				mu.Lock()
				hanging++
				mu.Unlock()
				select {
				case <-hang:
				case <-r.Context().Done():
				}
			}))
			t.Cleanup(slow.Close)
			t.Cleanup(func() { close(hang) }) // runs first
			rc := newHookReceiver(t, "whsec_test_123")
			_, base, _ := serveYAMLRunning(t, tc.opts(t), fmt.Sprintf(`
webhooks:
  endpoints:
    - name: hang
      url: %s
      secret: whsec_test_123
      retry: { schedule: [1s], timeout: 1h }
    - name: shop
      url: %s
      secret: whsec_test_123
routes:
  - name: plain
    method: POST
    path: /v1/customers
    respond: { status: 201, body: { id: cus_1, object: customer } }
    events:
      - type: customer.created
`, slow.URL, rc.URL))
			for range 12 {
				do(t, "POST", base+"/v1/customers", `{}`)
			}
			eventually(t, patience, func() string {
				if n := len(rc.got()); n != 12 {
					return fmt.Sprintf("the healthy endpoint got %d of 12 events while the other hangs", n)
				}
				return ""
			})
			mu.Lock()
			defer mu.Unlock()
			if hanging > 3 {
				t.Errorf("the hanging receiver holds %d attempts, want at most 3 ((8-1)/2)", hanging)
			}
		})
	}
}

// TestRedeliverToDisabledEndpoint: a redelivery to an endpoint that a 410
// disabled is a 409 naming it; to every endpoint, the answer says which
// it did not reach. Before, both answered 202 with no reason ("queued": 0
// for the first).
func TestRedeliverToDisabledEndpoint(t *testing.T) {
	t.Parallel()
	gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusGone)
	}))
	t.Cleanup(gone.Close)
	rc := newHookReceiver(t, "whsec_test_123")
	s, base, _ := serveYAMLRunning(t, Options{Webhooks: webhooks.Options{TimeScale: 0.001}}, fmt.Sprintf(`
webhooks:
  endpoints:
    - name: gone
      url: %s
      secret: whsec_test_123
    - name: shop
      url: %s
      secret: whsec_test_123
routes:
  - name: plain
    method: POST
    path: /v1/customers
    respond: { status: 201, body: { id: cus_1, object: customer } }
    events:
      - type: customer.created
`, gone.URL, rc.URL))
	do(t, "POST", base+"/v1/customers", `{}`)
	eventually(t, patience, func() string {
		if n := len(s.hooks.d.Deliveries(webhooks.Filter{Outcome: webhooks.Disabled})); n != 1 || len(rc.got()) != 1 {
			return fmt.Sprintf("%d deliveries disabled and %d delivered, want 1 and 1", n, len(rc.got()))
		}
		return ""
	})
	id, _ := rc.got()[0]["id"].(string)
	r := do(t, "POST", base+"/__admin/webhooks/"+id+"/redeliver?endpoint=gone", "")
	if r.status != http.StatusConflict || !strings.Contains(r.body, `\"gone\"`) || !strings.Contains(r.body, "410") {
		t.Errorf("redeliver to the disabled endpoint = %d %s, want a 409 naming it", r.status, r.body)
	}
	r = do(t, "POST", base+"/__admin/webhooks/"+id+"/redeliver", "")
	var got struct {
		Queued    int    `json:"queued"`
		NotQueued string `json:"notQueued"`
	}
	if err := json.Unmarshal([]byte(r.body), &got); err != nil || r.status != http.StatusAccepted || got.Queued != 1 || !strings.Contains(got.NotQueued, `"gone"`) {
		t.Errorf("redeliver to every endpoint = %d %s, want 202, one queued and gone named", r.status, r.body)
	}
	eventually(t, patience, func() string {
		if n := len(rc.got()); n != 2 {
			return fmt.Sprintf("the live endpoint got %d events, want 2", n)
		}
		return ""
	})
}

// TestRetryTimeoutAloneKeepsTheDefaultSchedule: a retry: block that gives
// only a timeout keeps the default schedule (the README's "(the
// default)"), for a file's endpoint and for endpointsFrom:. It was read
// as an empty schedule: one attempt, and a receiver's 500 failed the
// delivery for good.
func TestRetryTimeoutAloneKeepsTheDefaultSchedule(t *testing.T) {
	t.Parallel()
	t.Run("endpoints", func(t *testing.T) {
		t.Parallel()
		rc := newStoredReceiver(t, "whsec_test_123", 1) // answers 500 once
		yaml := strings.Replace(fmt.Sprintf(hooksYAML, rc.URL), "retry: { schedule: [1s, 1s], timeout: 5s }", "retry: { timeout: 5s }", 1)
		_, base, _ := serveYAMLRunning(t, Options{Webhooks: webhooks.Options{TimeScale: 0.001}}, yaml)
		if r := do(t, "POST", base+"/v1/customers", `{}`); r.status != 201 {
			t.Fatalf("POST = %d %s", r.status, r.body)
		}
		eventually(t, patience, func() string {
			if evs, calls, rej := rc.got(); len(evs) != 1 || calls != 2 || len(rej) > 0 {
				return fmt.Sprintf("receiver: %v in %d calls (rejected %v); want the event, after a 500 and its retry", evs, calls, rej)
			}
			return ""
		})
	})
	t.Run("endpointsFrom", func(t *testing.T) {
		t.Parallel()
		yaml := strings.Replace(storedHooksYAML, "retry: { schedule: [1s, 1s], timeout: 5s }", "retry: { timeout: 5s }", 1)
		_, base, _ := serveYAMLRunning(t, Options{Webhooks: webhooks.Options{TimeScale: 0.001}}, yaml)
		rc := newStoredReceiver(t, "whsec_a", 1)
		key := []string{"Authorization", "Bearer key_a"}
		if r := do(t, "POST", base+"/hooks", fmt.Sprintf(`{"url": %q, "secret": "whsec_a", "events": ["*"]}`, rc.URL), key...); r.status != 201 {
			t.Fatalf("create hook: %d %s", r.status, r.body)
		}
		if r := do(t, "POST", base+"/things", `{}`, key...); r.status != 201 {
			t.Fatalf("POST = %d %s", r.status, r.body)
		}
		eventually(t, patience, func() string {
			if evs, calls, rej := rc.got(); len(evs) != 1 || calls != 2 || len(rej) > 0 {
				return fmt.Sprintf("receiver: %v in %d calls (rejected %v); want the event, after a 500 and its retry", evs, calls, rej)
			}
			return ""
		})
	})
}

// TestEventDelayMaxIsHonoured: an event's log-normal delay fault keeps
// its max:, as a route's delay does; the parser took it and the
// dispatcher never saw it, so with sigma 10 a third of the events waited
// past 30 s (up to 24 h) where the file said 1 s at most.
func TestEventDelayMaxIsHonoured(t *testing.T) {
	t.Parallel()
	rc := newHookReceiver(t, "whsec_test_123")
	_, base, _ := serveYAMLRunning(t, Options{}, fmt.Sprintf(`
webhooks:
  endpoints:
    - name: shop
      url: %s
      secret: whsec_test_123
routes:
  - name: plain
    method: POST
    path: /v1/customers
    respond: { status: 201, body: { id: cus_1, object: customer } }
    events:
      - type: customer.created
        fault: { delay: { median: 1s, sigma: 10, max: 1s } }
`, rc.URL))
	for range 20 {
		do(t, "POST", base+"/v1/customers", `{}`)
	}
	eventually(t, patience, func() string {
		if n := len(rc.got()); n != 20 {
			return fmt.Sprintf("the endpoint got %d of 20 events, each delayed 1s at most", n)
		}
		return ""
	})
}
