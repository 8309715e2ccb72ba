package webhooks

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"strconv"
	"time"
)

// DefaultAPIVersion is the api_version of events whose endpoint names none:
// the version stripe-go v85 expects, so that its ConstructEvent accepts
// them without options.
const DefaultAPIVersion = "2026-03-25.dahlia"

// Event is one event as a provider records it. Object is data.object and
// Previous data.previous_attributes (nil when the event is not an update);
// both must be JSON. An Event is not changed once sent.
type Event struct {
	ID      string
	Type    string
	Created time.Time
	Object  json.RawMessage
	// Previous holds the old values of the attributes an update changed.
	Previous json.RawMessage
	// RequestID and IdempotencyKey name the API call that caused the
	// event; empty when none did (a redelivery keeps the original's).
	RequestID      string
	IdempotencyKey string
	// Session is the session of the request that caused the event
	// (X-Scenariomock-Session), "" for none; its deliveries and attempts
	// carry it, for the admin API's ?session= filter.
	Session string
}

// NewID returns a fresh event id, evt_ and 24 random characters, as
// Stripe's look.
func NewID() string { return "evt_" + randomToken(24) }

const alnum = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	for i := range b {
		b[i] = alnum[int(b[i])%len(alnum)]
	}
	return string(b)
}

// ObjectID returns data.object.id, or "" when the object has none; the
// reorder fault orders the events of one object.
func (e *Event) ObjectID() string {
	var o struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(e.Object, &o) != nil || o.ID == nil {
		return ""
	}
	var s string
	if json.Unmarshal(o.ID, &s) == nil {
		return s
	}
	return string(o.ID)
}

// JSON encodes the event in Stripe's shape, as a delivery carries it; ID,
// Created and Object must be set (Send sets them).
func (e *Event) JSON(apiVersion string, pendingWebhooks int) []byte {
	return e.payload(apiVersion, pendingWebhooks)
}

// payload encodes the event for one endpoint, in Stripe's shape.
func (e *Event) payload(apiVersion string, pending int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"id":`)
	writeString(&b, e.ID)
	b.WriteString(`,"object":"event","api_version":`)
	writeString(&b, apiVersion)
	b.WriteString(`,"created":`)
	b.WriteString(strconv.FormatInt(e.Created.Unix(), 10))
	b.WriteString(`,"data":{"object":`)
	obj := e.Object
	if len(obj) == 0 {
		obj = json.RawMessage("{}")
	}
	b.Write(obj)
	if len(e.Previous) > 0 {
		b.WriteString(`,"previous_attributes":`)
		b.Write(e.Previous)
	}
	b.WriteString(`},"livemode":false,"pending_webhooks":`)
	b.WriteString(strconv.Itoa(pending))
	b.WriteString(`,"request":{"id":`)
	writeNullable(&b, e.RequestID)
	b.WriteString(`,"idempotency_key":`)
	writeNullable(&b, e.IdempotencyKey)
	b.WriteString(`},"type":`)
	writeString(&b, e.Type)
	b.WriteString("}")
	return b.Bytes()
}

func writeString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s)
	b.Write(q)
}

func writeNullable(b *bytes.Buffer, s string) {
	if s == "" {
		b.WriteString("null")
		return
	}
	writeString(b, s)
}
