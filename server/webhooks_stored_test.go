package server

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

	"github.com/scenariomock/scenariomock/internal/redistest"
	"github.com/scenariomock/scenariomock/state/redis"
	"github.com/scenariomock/scenariomock/webhooks"
	"github.com/stripe/stripe-go/v85/webhook"
)

// storedHooksYAML stores endpoints at run time, per API key, as Stripe's
// POST /v1/webhook_endpoints does, without Stripe: endpointsFrom: reads
// them when an event is sent.
const storedHooksYAML = `
webhooks:
  scope: credential
  endpointsFrom:
    collection: hooks
    events: events
    when: { item: { enabled: true } }
    retry: { schedule: [1s, 1s], timeout: 5s }
routes:
  - name: create hook
    method: POST
    path: /hooks
    respond:
      status: 201
      template: true
      body: { id: 'hk_{{ randomHex 8 }}', url: '{{ .Request.JSON.url }}', secret: '{{ .Request.JSON.secret }}', events: '{{ .Request.JSON.events }}', enabled: true }
      save: { collection: hooks, scope: credential, id: '{{ .Response.JSON.id }}' }
  - name: disable hook
    method: POST
    path: /hooks/{id}/disable
    respond:
      body: { disabled: true }
      save: [{ collection: hooks, scope: credential, merge: true, id: '{{ .Request.Vars.id }}', body: { enabled: false } }]
  - name: delete hook
    method: DELETE
    path: /hooks/{id}
    respond: { delete: { collection: hooks, scope: credential, id: '{{ .Request.Vars.id }}' } }
  - name: create thing
    method: POST
    path: /things
    respond: { status: 201, template: true, body: { id: 'th_{{ randomHex 8 }}', object: thing } }
    events: [{ type: thing.created }]
  - name: ship thing
    method: POST
    path: /things/{id}/ship
    respond: { template: true, body: { id: '{{ .Request.Vars.id }}', object: thing, shipped: true } }
    events: [{ type: thing.shipped }]
`

// storedReceiver verifies deliveries with stripe-go and the secret its
// endpoint was stored with, answering 500 to the first failFirst of them.
type storedReceiver struct {
	*httptest.Server
	mu       sync.Mutex // guards events and calls
	events   []map[string]any
	calls    int
	rejected []string
}

func newStoredReceiver(t *testing.T, secret string, failFirst int) *storedReceiver {
	rc := &storedReceiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.calls++
		if rc.calls <= failFirst {
			http.Error(w, "not yet", http.StatusInternalServerError)
			return
		}
		ev, err := webhook.ConstructEvent(body, r.Header.Get("Stripe-Signature"), secret)
		if err != nil {
			rc.rejected = append(rc.rejected, err.Error())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.events = append(rc.events, map[string]any{"id": ev.ID, "type": string(ev.Type), "object": ev.Data.Object["id"]})
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *storedReceiver) got() (events []map[string]any, calls int, rejected []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]map[string]any(nil), rc.events...), rc.calls, append([]string(nil), rc.rejected...)
}

// TestStoredWebhookEndpoints: endpoints that routes stored (endpointsFrom:)
// receive the events of their API key whose types they list, signed with
// their own secret, retried after a 500; a disabled, a deleted and
// another key's endpoint, and one of other types, get none; the admin
// API's event goes to the stored endpoints of its headers' key.
func TestStoredWebhookEndpoints(t *testing.T) {
	t.Parallel()
	_, base, _ := serveYAMLRunning(t, Options{Webhooks: webhooks.Options{TimeScale: 0.001}}, storedHooksYAML)
	keyA, keyB := []string{"Authorization", "Bearer key_a"}, []string{"Authorization", "Bearer key_b"}
	create := func(rc *storedReceiver, secret, events string, key []string) string {
		t.Helper()
		r := do(t, "POST", base+"/hooks", fmt.Sprintf(`{"url": %q, "secret": %q, "events": %s}`, rc.URL, secret, events), key...)
		if r.status != 201 {
			t.Fatalf("create hook: %d %s", r.status, r.body)
		}
		return r.json(t)["id"].(string)
	}
	created := newStoredReceiver(t, "whsec_created", 1) // answers 500 once
	shipped := newStoredReceiver(t, "whsec_shipped", 0)
	disabled := newStoredReceiver(t, "whsec_disabled", 0)
	deleted := newStoredReceiver(t, "whsec_deleted", 0)
	otherKey := newStoredReceiver(t, "whsec_other", 0)
	createdID := create(created, "whsec_created", `["thing.created"]`, keyA)
	create(shipped, "whsec_shipped", `["thing.shipped"]`, keyA)
	disabledID := create(disabled, "whsec_disabled", `["*"]`, keyA)
	deletedID := create(deleted, "whsec_deleted", `["*"]`, keyA)
	create(otherKey, "whsec_other", `["*"]`, keyB)
	if r := do(t, "POST", base+"/hooks/"+disabledID+"/disable", "", keyA...); r.status != 200 {
		t.Fatalf("disable: %d %s", r.status, r.body)
	}
	if r := do(t, "DELETE", base+"/hooks/"+deletedID, "", keyA...); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}

	thing := do(t, "POST", base+"/things", `{}`, keyA...).json(t)["id"].(string)
	eventually(t, patience, func() string {
		if evs, calls, rej := created.got(); len(evs) != 1 || calls != 2 || len(rej) > 0 {
			return fmt.Sprintf("the thing.created endpoint: %v in %d calls (rejected %v); want the event, after a 500 and its retry", evs, calls, rej)
		}
		return ""
	})
	if evs, _, _ := created.got(); evs[0]["type"] != "thing.created" || evs[0]["object"] != thing {
		t.Errorf("delivered %v, want thing.created of %s", evs[0], thing)
	}
	// The event's deliveries were queued before its answer: one, to the
	// endpoint that takes it.
	var list adminWebhooks
	eventually(t, patience, func() string {
		if err := json.Unmarshal([]byte(do(t, "GET", base+"/__admin/webhooks?type=thing.created", "").body), &list); err != nil {
			return err.Error()
		}
		if len(list.Deliveries) != 1 || list.Deliveries[0].Endpoint != createdID || list.Deliveries[0].State != webhooks.Delivered || list.Deliveries[0].Attempts != 2 {
			return fmt.Sprintf("thing.created's deliveries = %+v, want one to %s, delivered at its second attempt", list.Deliveries, createdID)
		}
		return ""
	})
	// The log knows the stored endpoint by its id (verify --webhook).
	if r := do(t, "GET", base+"/__admin/webhooks?endpoint="+createdID+"&outcome=delivered", ""); r.status != 200 {
		t.Errorf("?endpoint=%s: %d %s", createdID, r.status, r.body)
	}

	// An endpoint that is stored but has had no delivery is known too
	// (verify --webhook hk_… --none), in the scope it was stored in; an
	// id nothing stores is not.
	if r := do(t, "GET", base+"/__admin/webhooks?endpoint="+disabledID, ""); r.status != 200 || r.json(t)["deliveries"] == nil {
		t.Errorf("?endpoint=%s (stored, never delivered to): %d %s, want its deliveries: none", disabledID, r.status, r.body)
	}
	if r := do(t, "GET", base+"/__admin/webhooks?endpoint=hk_nothing", ""); r.status != 400 {
		t.Errorf("?endpoint=hk_nothing: %d %s, want 400: no endpoint has that name", r.status, r.body)
	} else if !strings.Contains(r.body, "no stored endpoint (endpointsFrom:) has that id") {
		t.Errorf("?endpoint=hk_nothing: %s, want it to say no stored endpoint has that id", r.body)
	}

	// Positive controls, sent after: the thing.shipped endpoint gets its
	// event, and key_b's endpoint the admin API's event of key_b.
	do(t, "POST", base+"/things/"+thing+"/ship", "", keyA...)
	if r := do(t, "POST", base+"/__admin/webhooks/events", `{"type": "thing.created", "object": {"id": "th_b"}, "headers": {"Authorization": "Bearer key_b"}}`, "Content-Type", "application/json"); r.status != 202 {
		t.Fatalf("admin event: %d %s", r.status, r.body)
	}
	eventually(t, patience, func() string {
		if evs, _, _ := shipped.got(); len(evs) != 1 || evs[0]["type"] != "thing.shipped" {
			return fmt.Sprintf("the thing.shipped endpoint got %v, want thing.shipped", evs)
		}
		if evs, _, _ := otherKey.got(); len(evs) != 1 || evs[0]["object"] != "th_b" {
			return fmt.Sprintf("key_b's endpoint got %v, want the admin API's event", evs)
		}
		if err := json.Unmarshal([]byte(do(t, "GET", base+"/__admin/webhooks?outcome=pending", "").body), &list); err != nil || len(list.Deliveries) != 0 {
			return fmt.Sprintf("deliveries still pending: %+v %v", list.Deliveries, err)
		}
		return ""
	})
	for name, rc := range map[string]*storedReceiver{"disabled": disabled, "deleted": deleted} {
		if _, calls, _ := rc.got(); calls != 0 {
			t.Errorf("the %s endpoint was called %d times, want none", name, calls)
		}
	}
	if evs, calls, _ := created.got(); len(evs) != 1 || calls != 2 {
		t.Errorf("the thing.created endpoint got %v in %d calls after the others' events, want its one", evs, calls)
	}
	if evs, _, _ := otherKey.got(); len(evs) != 1 {
		t.Errorf("key_b's endpoint got %v, want only key_b's event", evs)
	}
}

// TestStoredWebhookEndpointAcrossReplicas: two replicas share Redis; one
// (whose dispatcher does not run) stores an endpoint and makes its
// event, the other makes the attempts, with the URL and secret that the
// delivery carried through the shared outbox, retrying after a 500.
func TestStoredWebhookEndpointAcrossReplicas(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	replica := func() Options {
		st, err := redis.Open(context.Background(), rs.URL(), redis.Options{Prefix: "stored-hooks:"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return Options{State: st, Webhooks: webhooks.Options{TimeScale: 0.001, Outbox: st.Outbox(0), Shared: st.History(0)}}
	}
	_, maker, _ := serveYAML(t, replica(), storedHooksYAML) // Serve does not run: no dispatcher
	_, sender, _ := serveYAMLRunning(t, replica(), storedHooksYAML)
	rc := newStoredReceiver(t, "whsec_replicas", 1)
	key := []string{"Authorization", "Bearer key_a", "Content-Type", "application/json"}
	r := do(t, "POST", maker.URL+"/hooks", fmt.Sprintf(`{"url": %q, "secret": "whsec_replicas", "events": ["thing.created"]}`, rc.URL), key...)
	if r.status != 201 {
		t.Fatalf("create hook: %d %s", r.status, r.body)
	}
	id := r.json(t)["id"].(string)
	thing := do(t, "POST", maker.URL+"/things", `{}`, key...).json(t)["id"].(string)
	eventually(t, patience, func() string {
		if evs, calls, rej := rc.got(); len(evs) != 1 || evs[0]["object"] != thing || calls != 2 || len(rej) > 0 {
			return fmt.Sprintf("the receiver accepted %v in %d calls (refused %v); want thing.created of %s after a 500 and its retry", evs, calls, rej, thing)
		}
		var list adminWebhooks
		if err := json.Unmarshal([]byte(do(t, "GET", sender+"/__admin/webhooks?endpoint="+id, "").body), &list); err != nil {
			return err.Error()
		}
		if len(list.Deliveries) != 1 || list.Deliveries[0].State != webhooks.Delivered {
			return fmt.Sprintf("deliveries to %s: %+v; want one delivered", id, list.Deliveries)
		}
		return ""
	})
}
