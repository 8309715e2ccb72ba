package adminclient

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/scenariomock/scenariomock/webhooks"
)

// WebhookFilter selects deliveries and attempts in GET /__admin/webhooks;
// an empty field matches all. Outcome is a delivery's state (pending,
// delivered, failed, disabled) or "undelivered" for all but delivered
// (and but a failed one whose event another delivery, a redelivery,
// got accepted at its endpoint).
// Session selects the events of one session's requests.
type WebhookFilter struct {
	Endpoint, Type, Event, Outcome, Session string
}

// Webhooks is GET /__admin/webhooks: the deliveries and attempts a filter
// selects, oldest first.
type Webhooks struct {
	Endpoints  []string            `json:"endpoints"`
	Pending    int                 `json:"pending"`
	Deliveries []webhooks.Delivery `json:"deliveries"`
	Attempts   []webhooks.Attempt  `json:"attempts"`
}

// Webhooks lists the server's webhook deliveries and attempts that f
// selects.
func (c *Client) Webhooks(ctx context.Context, f WebhookFilter) (Webhooks, error) {
	q := url.Values{}
	for k, v := range map[string]string{"endpoint": f.Endpoint, "type": f.Type, "event": f.Event, "outcome": f.Outcome, "session": f.Session} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var out Webhooks
	err := c.do(ctx, http.MethodGet, "/__admin/webhooks", q, &out)
	return out, err
}

// Event is an event to send with SendEvent, as a route would have made
// it (POST /__admin/webhooks/events).
type Event struct {
	Type string `json:"type"`
	// Object is data.object; over the served OpenAPI document's fixture
	// of the object Type is about, when it has one (else required).
	Object json.RawMessage `json:"object,omitempty"`
	// PreviousAttributes is data.previous_attributes.
	PreviousAttributes json.RawMessage `json:"previousAttributes,omitempty"`
	// Endpoints names where it goes; empty means every endpoint.
	Endpoints []string `json:"endpoints,omitempty"`
	// Headers are those of the request it is kept as made by: the events
	// collection's scope (Authorization) and the deliveries' session.
	Headers map[string]string `json:"headers,omitempty"`
}

// SentEvent is SendEvent's answer: the event as kept, and how many
// deliveries were queued.
type SentEvent struct {
	Event  json.RawMessage `json:"event"`
	Queued int             `json:"queued"`
}

// SendEvent sends ev to the server's webhook endpoints, signed and
// delivered as a route's events are, as `stripe trigger` does; a refused
// one is a *StatusError 400 whose Detail lists why.
func (c *Client) SendEvent(ctx context.Context, ev Event) (SentEvent, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return SentEvent{}, err
	}
	var out SentEvent
	err = c.doBody(ctx, http.MethodPost, "/__admin/webhooks/events", nil, http.Header{"Content-Type": {"application/json"}}, bytes.NewReader(body), &out)
	return out, err
}
