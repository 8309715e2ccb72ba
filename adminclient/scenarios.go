package adminclient

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"time"
)

// Document is a runtime scenario document the server serves on top of its
// files (POST /__admin/scenarios).
type Document struct {
	ID      string    `json:"id"`
	Added   time.Time `json:"added"`
	Session string    `json:"session,omitempty"` // its session: name, if any
	Routes  []string  `json:"routes"`            // its routes' names
	Bytes   int       `json:"bytes"`
}

// AddScenarios adds a runtime scenario document (YAML or JSON, as a
// scenario file) and returns it as the server serves it; the server
// serves its routes before it answers. A document with problems is a
// *StatusError 400 whose Detail lists each at its line:col.
func (c *Client) AddScenarios(ctx context.Context, doc []byte) (Document, error) {
	var out Document
	err := c.doBody(ctx, http.MethodPost, "/__admin/scenarios", nil, http.Header{"Content-Type": {"application/yaml"}}, bytes.NewReader(doc), &out)
	return out, err
}

// RemoveScenarios removes the runtime scenario document id.
func (c *Client) RemoveScenarios(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/__admin/scenarios/"+url.PathEscape(id), nil, nil)
}

// ClearScenarios removes every runtime scenario document.
func (c *Client) ClearScenarios(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "/__admin/scenarios", url.Values{"runtime": {"true"}}, nil)
}

// RuntimeScenarios lists the runtime scenario documents, oldest first.
func (c *Client) RuntimeScenarios(ctx context.Context) ([]Document, error) {
	var out struct {
		Runtime []Document `json:"runtime"`
	}
	err := c.do(ctx, http.MethodGet, "/__admin/scenarios", url.Values{"runtime": {"true"}}, &out)
	return out.Runtime, err
}
