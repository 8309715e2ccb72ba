package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync/atomic"

	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/webhooks"
)

// hooks is the server's webhook dispatcher and the goroutine that runs it.
// The dispatcher exists from New; it delivers while Serve runs.
type hooks struct {
	d    *webhooks.Dispatcher
	done chan struct{} // closed when Run returns; nil before Serve
	// collection is where events are saved too (webhooks.collection and
	// its scope); a name "" for none.
	collection atomic.Pointer[eventCollection]
}

// eventCollection is the collection events are kept in, and its scope.
type eventCollection struct {
	name  string
	scope scenarios.Scope
}

// maxEventBody bounds what a route's answer contributes to its events.
const maxEventBody = 1 << 20

func (s *Server) newHooks() {
	s.hooks.d = webhooks.New(s.opts.Webhooks)
}

// configureWebhooks gives the dispatcher the set's endpoints. An endpoint
// whose secretEnv names an empty variable is left out, and said so.
func (s *Server) configureWebhooks(set *scenarios.Set) {
	var eps []webhooks.Endpoint
	for _, e := range set.WebhookEndpoints() {
		ep := webhooks.Endpoint{
			Name: e.Name, URL: e.URL, Signing: webhooks.Signing(e.Signing), Secrets: e.Secrets,
			Retry: webhooks.Retry{Schedule: e.Schedule, Timeout: e.Timeout}, TimeScale: e.TimeScale, APIVersion: e.APIVersion,
		}
		if e.SecretEnv != "" {
			v := os.Getenv(e.SecretEnv)
			if v == "" {
				s.log.Error("webhook endpoint skipped: its secret's environment variable is empty", "endpoint", e.Name, "secretEnv", e.SecretEnv, "at", e.Pos.String())
				continue
			}
			ep.Secrets = []string{v}
		}
		eps = append(eps, ep)
	}
	s.hooks.collection.Store(&eventCollection{name: set.EventCollection(), scope: set.EventScope()})
	if err := s.hooks.d.SetEndpoints(eps); err != nil {
		s.log.Error("webhook endpoints not changed", "error", err.Error())
	}
}

// startWebhooks delivers until shutdown begins.
func (s *Server) startWebhooks() {
	s.hooks.done = make(chan struct{})
	go func() {
		defer close(s.hooks.done)
		n := s.hooks.d.Run(s.stopping)
		switch {
		case n > 0 && s.opts.Webhooks.Outbox != nil:
			// A shared outbox (Redis) keeps them: another replica, or
			// this one restarted, sends them.
			s.log.Info("webhook deliveries left pending in the shared outbox", "pending", n)
		case n > 0:
			s.log.Warn("webhook deliveries pending at shutdown, not sent", "pending", n)
		}
	}()
}

// waitWebhooks waits for the dispatcher that startWebhooks started.
func (s *Server) waitWebhooks() {
	if s.hooks.done != nil {
		<-s.hooks.done
	}
}

// commitEvents sends events (the route's, or a save: entry's, whose body
// is the item it saved) after the request's effects are committed: the
// answer (status, header, body) is the one written or stored. Only a
// 2xx answer sends events, as a provider sends none for a refused call; a
// replayed Idempotency-Key never reaches here.
//
// before and after are the object a route naming an operation acted on,
// as stored before and after the request (nil when none): a *.updated
// event without data: is the object after, unexpanded as Stripe's are,
// and says what changed from before in data.previous_attributes.
func (s *Server) commitEvents(ctx context.Context, in *matcher.Request, m matcher.Match, events []*scenarios.Event, call int64, status int, header http.Header, body []byte, before, after []byte) {
	if m.Route == nil || len(events) == 0 || status < 200 || status > 299 {
		return
	}
	var d *templateData
	resp := &templateResponse{Status: status, Headers: header, Body: string(body), JSON: map[string]any{}}
	if obj, ok := parseItem(body).(map[string]any); ok {
		resp.JSON = obj
	}
	reqID := header.Get("Request-Id")
	if reqID == "" {
		reqID = "req_" + webhooks.NewID()[4:18]
	}
	key := in.HTTP.Header.Get("Idempotency-Key")
	if m.Route.Idempotency != nil {
		key, _ = in.Attribute(m.Route.Idempotency.Key, m.Vars)
	}
	var answer any // the answer's JSON, for the events' when:
	for _, e := range events {
		if e.HasWhen {
			if answer == nil {
				answer = parseItem(body)
			}
			if !matcher.ContainsJSON(e.When, answer) {
				continue
			}
		}
		ev := &webhooks.Event{Type: e.Type, RequestID: reqID, IdempotencyKey: key, Session: in.Session}
		if e.Data == nil {
			ev.Object = json.RawMessage("{}")
			if json.Valid(body) && bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
				ev.Object = body
				if before != nil && after != nil && strings.HasSuffix(e.Type, ".updated") {
					ev.Object, ev.Previous = after, changed(before, after)
				}
			}
		} else {
			if d == nil {
				d = s.templateData(context.WithoutCancel(ctx), in, m, call)()
				d.Response = resp
				// stored reads the route's document's objects here too:
				// an event about another object the route made (the
				// charge of a paid payment intent).
				d.op, _ = m.Route.Operation.(*openapi.Operation)
			}
			var buf bytes.Buffer
			if err := e.Data.Execute(&buf, d, s.opts.MaxTemplateOutput); err != nil {
				s.log.Error("webhook event not sent: its data did not render", "route", m.Route.Name, "type", e.Type, "error", err.Error())
				continue
			}
			ev.Object, ev.Previous = overlay(buf.Bytes())
		}
		var f *webhooks.Fault
		if e.Fault != nil {
			f = eventFault(e.Fault)
		}
		if err := s.hooks.d.Send(ev, e.Endpoints, e.After, f); err != nil {
			s.log.Error("webhook event not queued", "route", m.Route.Name, "type", e.Type, "error", err.Error())
		}
		s.keepEvent(ctx, in.HTTP.Header, ev, len(e.Endpoints))
	}
}

// changed is Stripe's previous_attributes of an update: each top-level
// field of the object before whose value after differs (or that after
// lacks), with its value before; a field after added is null before. Nil
// when nothing changed or either is not an object.
func changed(before, after []byte) json.RawMessage {
	var b, a map[string]json.RawMessage
	if json.Unmarshal(before, &b) != nil || json.Unmarshal(after, &a) != nil || b == nil || a == nil {
		return nil
	}
	prev := map[string]json.RawMessage{}
	for k, av := range a {
		bv, had := b[k]
		switch {
		case !had:
			prev[k] = json.RawMessage("null")
		case !jsonEqual(bv, av):
			prev[k] = bv
		}
	}
	for k, bv := range b {
		if _, has := a[k]; !has {
			prev[k] = bv
		}
	}
	if len(prev) == 0 {
		return nil
	}
	out, _ := json.Marshal(prev)
	return out
}

// jsonEqual says whether two JSON values are the same value, whatever
// their spacing and key order.
func jsonEqual(x, y json.RawMessage) bool {
	if bytes.Equal(x, y) {
		return true
	}
	var xv, yv any
	if json.Unmarshal(x, &xv) != nil || json.Unmarshal(y, &yv) != nil {
		return false
	}
	return reflect.DeepEqual(xv, yv)
}

// overlay reads data: {object: <an object>, key: value…} as the object
// with the other keys set over it, their old values (null when absent)
// being the previous attributes; anything else is the object itself.
func overlay(rendered []byte) (object, previous json.RawMessage) {
	var top map[string]json.RawMessage
	if json.Unmarshal(rendered, &top) != nil {
		return rendered, nil
	}
	base, ok := top["object"]
	var obj map[string]json.RawMessage
	if !ok || json.Unmarshal(base, &obj) != nil || obj == nil {
		return rendered, nil
	}
	prev := map[string]json.RawMessage{}
	for k, v := range top {
		if k == "object" {
			continue
		}
		old, had := obj[k]
		if !had {
			old = json.RawMessage("null")
		}
		prev[k] = old
		obj[k] = v
	}
	object, _ = json.Marshal(obj)
	if len(prev) > 0 {
		previous, _ = json.Marshal(prev)
	}
	return object, previous
}

func eventFault(f *scenarios.EventFault) *webhooks.Fault {
	out := &webhooks.Fault{
		Duplicate: f.Duplicate, Reorder: f.Reorder, DropFirst: f.DropFirst,
		Negative: map[webhooks.Negative]float64{
			webhooks.StaleTimestamp: f.StaleTimestamp, webhooks.BadSignature: f.BadSignature,
			webhooks.WrongSecret: f.WrongSecret, webhooks.NoSignature: f.NoSignature,
		},
	}
	switch f.Delay.Kind {
	case scenarios.Fixed:
		out.Delay.Fixed = f.Delay.Fixed
	case scenarios.Uniform:
		out.Delay.Min, out.Delay.Max = f.Delay.Min, f.Delay.Max
	case scenarios.LogNormal:
		out.Delay.Median, out.Delay.Sigma = f.Delay.Median, f.Delay.Sigma
	}
	return out
}

// eventTee keeps a copy of what a route writes, for its events.
type eventTee struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (t *eventTee) WriteHeader(status int) {
	if t.status == 0 {
		t.status = status
	}
	t.ResponseWriter.WriteHeader(status)
}

func (t *eventTee) Write(b []byte) (int, error) {
	if t.status == 0 {
		t.status = http.StatusOK
	}
	if t.body.Len()+len(b) <= maxEventBody {
		t.body.Write(b)
	}
	return t.ResponseWriter.Write(b)
}

func (t *eventTee) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// keepEvent saves ev, sent to the endpoints to (0: every one), in the
// events collection, when the scenarios keep one, in the scope the
// request headers h give: as GET /v1/events serves it.
func (s *Server) keepEvent(ctx context.Context, h http.Header, ev *webhooks.Event, to int) {
	c := s.hooks.collection.Load()
	if c == nil || c.name == "" || ev.ID == "" {
		return
	}
	coll := scopedCollection(c.name, c.scope, h)
	if to == 0 {
		to = len(s.hooks.d.Endpoints())
	}
	if _, err := s.state.Collections().Save(context.WithoutCancel(ctx), coll, ev.ID, ev.JSON(webhooks.DefaultAPIVersion, to)); err != nil {
		s.log.Error("webhook event not kept in its collection", "collection", coll, "event", ev.ID, "error", err.Error())
	}
}
