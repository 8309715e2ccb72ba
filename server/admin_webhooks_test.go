package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/webhooks"
)

// openHookStream opens GET /__admin/webhooks/stream?query and returns a
// reader of its attempts (keep-alive comments skipped) with their ids.
func openHookStream(t *testing.T, base, query string) func() (string, webhooks.Attempt) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/__admin/webhooks/stream?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	return func() (string, webhooks.Attempt) {
		t.Helper()
		var id, event, data string
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the stream: %v", err)
			}
			line = strings.TrimSuffix(line, "\n")
			if line == "" {
				if event == "" {
					continue // a keep-alive comment
				}
				if event != "attempt" {
					t.Fatalf("event %q, want attempt", event)
				}
				var a webhooks.Attempt
				if err := json.Unmarshal([]byte(data), &a); err != nil {
					t.Fatalf("attempt %q: %v", data, err)
				}
				return id, a
			}
			k, v, _ := strings.Cut(line, ": ")
			switch k {
			case "id":
				id = v
			case "event":
				event = v
			case "data":
				data = v
			}
		}
	}
}

// TestWebhooksStream: the stream sends each attempt as it is logged (only
// those from now on, by default), with the filters of the list; ?after=0
// replays the log.
func TestWebhooksStream(t *testing.T) {
	t.Parallel()
	rc := newHookReceiver(t, "whsec_test_123")
	_, base, _ := serveYAMLRunning(t, Options{Webhooks: webhooks.Options{TimeScale: 0.001}}, strings.Replace(hooksYAML, "%s", rc.URL, 1))
	do(t, "POST", base+"/v1/payment_intents", `{}`) // before the stream: not sent by it
	// Both of its events: the dispatcher may deliver them in either
	// order, and one still in flight would reach the stream.
	eventually(t, patience, func() string {
		r := do(t, "GET", base+"/__admin/webhooks?outcome=delivered", "")
		if !strings.Contains(r.body, "payment_intent.succeeded") || !strings.Contains(r.body, "payment_intent.created") {
			return "the first POST's events not both delivered yet"
		}
		return ""
	})
	all := openHookStream(t, base, "")
	succeeded := openHookStream(t, base, "type=payment_intent.succeeded")
	r := do(t, "POST", base+"/v1/payment_intents", `{}`)
	pi := r.json(t)["id"].(string)
	types := map[string]bool{}
	var ids []string
	for range 2 {
		id, a := all()
		if a.Endpoint != "shop" || a.Attempt != 1 || a.Outcome != webhooks.Delivered || a.EventID == "" || a.Seq < 3 {
			t.Errorf("attempt %+v: want a first, delivered attempt to shop of the second POST's events", a)
		}
		types[a.Type] = true
		ids = append(ids, id)
	}
	if !types["payment_intent.created"] || !types["payment_intent.succeeded"] {
		t.Errorf("streamed %v, want the second POST's two events", types)
	}
	if _, a := succeeded(); a.Type != "payment_intent.succeeded" {
		t.Errorf("filtered stream sent %+v", a)
	} else if ev := rc.got(); len(ev) != 4 {
		t.Errorf("receiver got %d events, want 4", len(ev))
	} else {
		var obj string
		for _, e := range ev {
			if e["id"] == a.EventID {
				obj = e["data"].(map[string]any)["object"].(map[string]any)["id"].(string)
			}
		}
		if obj != pi {
			t.Errorf("streamed event %s is of object %q, want the second POST's %s", a.EventID, obj, pi)
		}
	}
	replay := openHookStream(t, base, "after=0")
	for range 4 {
		if id, a := replay(); id != strconv.FormatInt(a.Seq, 10) {
			t.Fatalf("replayed id %s for seq %d", id, a.Seq)
		}
	}
	if r := do(t, "GET", base+"/__admin/webhooks/stream?after=x", ""); r.status != 400 {
		t.Errorf("after=x: %d %s", r.status, r.body)
	}
}

// TestWebhooksFiltersRefuseMisspellings: an endpoint no one ever had, or
// an outcome that is none, is a 400 problem on the list and the stream,
// not an empty answer that a check for "none undelivered" takes as a pass.
func TestWebhooksFiltersRefuseMisspellings(t *testing.T) {
	t.Parallel()
	rc := newHookReceiver(t, "whsec_test_123")
	_, base, _ := serveYAMLRunning(t, Options{Webhooks: webhooks.Options{TimeScale: 0.001}}, strings.Replace(hooksYAML, "%s", rc.URL, 1))
	for _, tc := range []struct {
		name, query string
		status      int
		detail      string // in the problem's detail
	}{
		{"a known endpoint", "endpoint=shop&outcome=undelivered", 200, ""},
		{"undelivered", "outcome=undelivered", 200, ""},
		{"a misspelt endpoint", "endpoint=shopp", 400, `Bad filter endpoint="shopp": no webhook endpoint has that name, and none did; its endpoints are shop.`},
		{"a misspelt outcome", "outcome=delivred", 400, `Bad filter outcome="delivred": want one of delivered, retrying, failed, disabled, overflow, pending, undelivered.`},
	} {
		for _, path := range []string{"/__admin/webhooks", "/__admin/webhooks/stream"} {
			if tc.status == 200 && strings.HasSuffix(path, "stream") {
				continue // a stream that opens stays open
			}
			r := do(t, "GET", base+path+"?"+tc.query, "")
			if r.status != tc.status {
				t.Errorf("%s: GET %s?%s = %d %s, want %d", tc.name, path, tc.query, r.status, r.body, tc.status)
				continue
			}
			if tc.status == 200 {
				continue
			}
			if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("%s: %s: Content-Type %q", tc.name, path, ct)
			}
			if got := r.json(t)["detail"]; got != tc.detail {
				t.Errorf("%s: %s: detail %q, want %q", tc.name, path, got, tc.detail)
			}
		}
	}
}

// TestWebhooksPerSession: the deliveries and attempts of the events a
// session's requests caused carry the session, and ?session= selects them,
// so that parallel tests sharing a receiver check their own.
func TestWebhooksPerSession(t *testing.T) {
	t.Parallel()
	rc := newHookReceiver(t, "whsec_test_123")
	_, base, _ := serveYAMLRunning(t, Options{Webhooks: webhooks.Options{TimeScale: 0.001}}, strings.Replace(hooksYAML, "%s", rc.URL, 1))
	do(t, "POST", base+"/v1/customers", `{}`, SessionHeader, "alpha")
	do(t, "POST", base+"/__session/beta/v1/customers", `{}`)
	do(t, "POST", base+"/v1/customers", `{}`)
	var got struct {
		Deliveries []webhooks.Delivery `json:"deliveries"`
		Attempts   []webhooks.Attempt  `json:"attempts"`
	}
	for _, session := range []string{"alpha", "beta"} {
		eventually(t, patience, func() string {
			r := do(t, "GET", base+"/__admin/webhooks?outcome=delivered&session="+session, "")
			got.Deliveries, got.Attempts = nil, nil
			if err := json.Unmarshal([]byte(r.body), &got); err != nil {
				return err.Error()
			}
			if len(got.Deliveries) != 1 || len(got.Attempts) != 1 {
				return session + ": " + r.body
			}
			return ""
		})
		if d, a := got.Deliveries[0], got.Attempts[0]; d.Session != session || a.Session != session || d.Type != "customer.created" {
			t.Errorf("%s: delivery %+v, attempt %+v", session, d, a)
		}
	}
	eventually(t, patience, func() string {
		r := do(t, "GET", base+"/__admin/webhooks?outcome=delivered", "")
		if n := strings.Count(r.body, `"state": "delivered"`); n != 3 {
			return "want 3 deliveries in all: " + r.body
		}
		return ""
	})
}

// TestSendEvent sends events no route made over the admin API: each is
// signed and delivered as a route's is, to every endpoint or those named,
// with the object and previous attributes sent, and its deliveries carry
// the session of the headers given. What cannot make an event is a 400
// problem listing every reason, and sends nothing.
func TestSendEvent(t *testing.T) {
	t.Parallel()
	shop := newHookReceiver(t, "whsec_test_shop")
	audit := newHookReceiver(t, "whsec_test_audit")
	_, base, _ := serveYAMLRunning(t, Options{Webhooks: webhooks.Options{TimeScale: 0.001}}, fmt.Sprintf(`
webhooks:
  endpoints:
    - { name: shop, url: %s, secret: whsec_test_shop }
    - { name: audit, url: %s, secret: whsec_test_audit }
routes: []
`, shop.URL, audit.URL))
	send := func(body string) response {
		t.Helper()
		return do(t, "POST", base+"/__admin/webhooks/events", body, "Content-Type", "application/json")
	}
	r := send(`{"type": "charge.dispute.created", "object": {"id": "dp_1", "object": "dispute", "amount": 500}, "endpoints": ["shop"], "headers": {"X-Scenariomock-Session": "suite-7"}}`)
	if r.status != 202 {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	id, _ := r.json(t)["event"].(map[string]any)["id"].(string)
	eventually(t, patience, func() string {
		for _, ev := range shop.got() {
			if ev["id"] == id && ev["type"] == "charge.dispute.created" && ev["data"].(map[string]any)["object"].(map[string]any)["amount"] == float64(500) {
				return ""
			}
		}
		return fmt.Sprintf("shop got %v; want event %s, signed", shop.got(), id)
	})
	if got := do(t, "GET", base+"/__admin/webhooks?session=suite-7", "").json(t)["deliveries"].([]any); len(got) != 1 || got[0].(map[string]any)["endpoint"] != "shop" {
		t.Errorf("deliveries of session suite-7: %v; want the one to shop", got)
	}
	r = send(`{"type": "customer.updated", "object": {"id": "cus_1", "email": "new@example.com"}, "previousAttributes": {"email": "old@example.com"}}`)
	if r.status != 202 || r.json(t)["queued"] != float64(2) {
		t.Fatalf("send to every endpoint: %d %s", r.status, r.body)
	}
	eventually(t, patience, func() string {
		for _, ev := range audit.got() {
			if ev["type"] == "customer.updated" && ev["data"].(map[string]any)["previous_attributes"].(map[string]any)["email"] == "old@example.com" {
				return ""
			}
		}
		return fmt.Sprintf("audit got %v; want customer.updated with previous_attributes", audit.got())
	})
	if n := len(audit.got()); n != 1 {
		t.Errorf("audit got %d events; the dispute went to shop alone", n)
	}

	for _, tc := range []struct{ body, want string }{
		{`{"type": "x.y", "objekt": {}}`, `unknown field \"objekt`},
		{`{"type": "", "object": []}`, "type: want an event type"},
		{`{"type": "x.y", "object": []}`, "object: want a JSON object"},
		{`{"type": "x.y", "object": {}, "endpoints": ["shopp"]}`, `shopp\" (the scenarios define shop, audit)`},
		{`{"type": "x.y"}`, `object: required`},
		{`not json`, "Send a JSON object"},
	} {
		r := send(tc.body)
		if r.status != 400 || !strings.Contains(r.body, tc.want) {
			t.Errorf("send %s: %d %s; want 400 with %q", tc.body, r.status, r.body, tc.want)
		}
	}
	if n := len(do(t, "GET", base+"/__admin/webhooks", "").json(t)["deliveries"].([]any)); n != 3 {
		t.Errorf("%d deliveries after the refusals; want the 3 sent before", n)
	}
}

// TestWebhooksListsAreArrays: a server with no webhook endpoint lists its
// endpoints as [], as it lists no deliveries and no attempts, not as null
// (which a client that reads endpoints.length trips on).
func TestWebhooksListsAreArrays(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, "routes:\n  - {path: /x, respond: {status: 200}}\n")
	r := do(t, "GET", hs.URL+"/__admin/webhooks", "")
	if r.status != 200 {
		t.Fatalf("GET /__admin/webhooks: %d %s", r.status, r.body)
	}
	v := r.json(t)
	for _, field := range []string{"endpoints", "deliveries", "attempts"} {
		if list, ok := v[field].([]any); !ok || len(list) != 0 {
			t.Errorf("%s is %#v, want []", field, v[field])
		}
	}
}
