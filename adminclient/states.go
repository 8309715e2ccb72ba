package adminclient

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// StateRef names one route state (a route's state: block).
type StateRef struct {
	Name string
	// Key is what the state's per: rendered (an order id), "" for a
	// state without per:.
	Key string
	// Session is the test session of the routes whose state it is, ""
	// for the routes of no session.
	Session string
}

func (r StateRef) values() url.Values {
	q := url.Values{}
	if r.Key != "" {
		q.Set("key", r.Key)
	}
	if r.Session != "" {
		q.Set("session", r.Session)
	}
	return q
}

// State is one route state's value.
type State struct {
	Session string `json:"session,omitempty"`
	Name    string `json:"name"`
	Key     string `json:"key,omitempty"`
	Value   string `json:"value"`
}

// States lists the route states that were set, of every session, by
// session, name and key; a state not listed is Started.
func (c *Client) States(ctx context.Context) ([]State, error) {
	var out struct {
		States []State `json:"states"`
	}
	err := c.do(ctx, http.MethodGet, "/__admin/states", nil, &out)
	return out.States, err
}

// State returns one route state's value: Started when it was never set.
// A name no route uses is a *StatusError 404.
func (c *Client) State(ctx context.Context, ref StateRef) (string, error) {
	var out State
	err := c.do(ctx, http.MethodGet, "/__admin/states/"+url.PathEscape(ref.Name), ref.values(), &out)
	return out.Value, err
}

// SetState sets one route state to value, as if a route's to: had moved
// it. A name no route uses is a *StatusError 404.
func (c *Client) SetState(ctx context.Context, ref StateRef, value string) error {
	body, err := json.Marshal(map[string]string{"value": value})
	if err != nil {
		return err
	}
	return c.doBody(ctx, http.MethodPut, "/__admin/states/"+url.PathEscape(ref.Name), ref.values(),
		http.Header{"Content-Type": {"application/json"}}, bytes.NewReader(body), nil)
}

// ResetStates sets every route state, of every session, back to Started.
func (c *Client) ResetStates(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "/__admin/states", nil, nil)
}
