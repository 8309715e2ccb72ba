package adminclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/scenariomock/scenariomock/webhooks"
)

// WebhookFilter selects deliveries and attempts in GET /__admin/webhooks;
// an empty field matches all. Outcome is a delivery's state (pending,
// delivered, failed, disabled) or "undelivered" for all but delivered.
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
