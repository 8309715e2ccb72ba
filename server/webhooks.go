package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"reflect"
	"slices"
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
	// sources are the files' endpointsFrom: blocks, each with its
	// file's webhooks scope (nil: none).
	sources atomic.Pointer[[]endpointSource]
}

// endpointSource is one endpointsFrom: block, and the scope of its
// collection: (its webhooks: block's).
type endpointSource struct {
	*scenarios.EndpointSource
	scope scenarios.Scope
	// op is an operation of the OpenAPI document that keeps the source's
	// resource: of its file's, else the first that does (nil: none, or a
	// collection: source).
	op *openapi.Operation
}

// resourceOperation returns an operation of the document that keeps the
// resource e reads (see endpointSource.op), found
// once per load rather than per request among every route.
func resourceOperation(set *scenarios.Set, e *scenarios.EndpointSource) *openapi.Operation {
	if e.Resource == "" {
		return nil
	}
	bare := &http.Request{Header: http.Header{}}
	var other *openapi.Operation
	for _, r := range set.Routes() {
		op, ok := r.Operation.(*openapi.Operation)
		if !ok || op.ResourceCollection(bare, e.Resource) == "" {
			continue
		}
		if r.Pos.File == e.Pos.File {
			return op
		}
		if other == nil {
			other = op
		}
	}
	return other
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

// configureWebhooks gives the dispatcher the set's endpoints, and the
// sources of the endpoints that routes store (endpointsFrom:), which
// commitEvents reads per request. An endpoint whose secretEnv names an
// empty variable is left out, and said so.
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
	var srcs []webhooks.Source
	var from []endpointSource
	for _, f := range set.Files {
		if f.Webhooks == nil || f.Webhooks.EndpointsFrom == nil {
			continue
		}
		e := f.Webhooks.EndpointsFrom
		st := &e.Settings
		srcs = append(srcs, webhooks.Source{
			Name: e.Name(), Signing: webhooks.Signing(st.Signing), Retry: webhooks.Retry{Schedule: st.Schedule, Timeout: st.Timeout},
			TimeScale: st.TimeScale, APIVersion: st.APIVersion,
		})
		from = append(from, endpointSource{EndpointSource: e, scope: f.Webhooks.Scope, op: resourceOperation(set, e)})
	}
	if err := s.hooks.d.SetSources(srcs); err != nil {
		s.log.Error("webhook endpoint sources not changed", "error", err.Error())
		return
	}
	s.hooks.sources.Store(&from)
}

// targets are the endpoints that routes stored (endpointsFrom:) and that
// an event goes to, read once per request that sends events: found
// reads them on first use.
type targets struct {
	found bool
	all   []storedEndpoint
}

// storedEndpoint is one stored endpoint object that may receive events.
type storedEndpoint struct {
	webhooks.Target
	types []string // the event types it takes; "*" takes every one
	every bool     // the source names no events field: every type
}

// forType returns the targets that take events of type typ.
func (ts *targets) forType(typ string) []webhooks.Target {
	var out []webhooks.Target
	for _, e := range ts.all {
		if e.every || slices.Contains(e.types, typ) || slices.Contains(e.types, "*") {
			out = append(out, e.Target)
		}
	}
	return out
}

// storedEndpoints reads, once, the endpoint objects of every
// endpointsFrom: block in the scope the request headers h give: those
// that contain the block's when: item. An object without a URL, or
// without the secret its signing needs, is left out, and said so.
func (s *Server) storedEndpoints(ctx context.Context, h http.Header, ts *targets) {
	if ts.found {
		return
	}
	ts.found = true
	p := s.hooks.sources.Load()
	if p == nil {
		return
	}
	for _, src := range *p {
		coll := s.sourceCollection(src, h)
		if coll == "" {
			continue
		}
		items, _, err := s.state.Collections().List(context.WithoutCancel(ctx), coll, 0, 0)
		if err != nil {
			s.log.Error("webhook endpoints not read: events go to the configured ones only", "collection", coll, "error", err.Error())
			continue
		}
		for _, it := range items {
			obj, ok := parseItem(it.Body).(map[string]any)
			if !ok || src.HasWhen && !matcher.ContainsJSON(src.When, obj) {
				continue
			}
			e := storedEndpoint{Target: webhooks.Target{Name: it.ID, Source: src.Name()}, every: src.Events == ""}
			e.URL, _ = field(obj, src.URL).(string)
			switch v := field(obj, src.Secret).(type) {
			case string:
				if v != "" {
					e.Secrets = []string{v}
				}
			case []any:
				for _, x := range v {
					if sec, ok := x.(string); ok && sec != "" {
						e.Secrets = append(e.Secrets, sec)
					}
				}
			}
			if list, ok := field(obj, src.Events).([]any); ok {
				for _, x := range list {
					if typ, ok := x.(string); ok {
						e.types = append(e.types, typ)
					}
				}
			}
			if ws, ok := s.hooks.d.Source(src.Name()); ok {
				if err := e.Check(&ws); err != nil {
					s.log.Warn("stored webhook endpoint left out", "collection", coll, "endpoint", it.ID, "error", err.Error())
					continue
				}
			}
			ts.all = append(ts.all, e)
		}
	}
}

// sourceCollection is the stored collection src reads for a request with
// headers h: its collection in its webhooks: block's scope, or where the
// OpenAPI document of its file (else the first that has one) keeps its
// resource, in the document's scope; "" when no document stores it.
func (s *Server) sourceCollection(src endpointSource, h http.Header) string {
	if src.Collection != "" {
		return scopedCollection(src.Collection, src.scope, h)
	}
	if src.op == nil {
		return ""
	}
	return src.op.ResourceCollection(&http.Request{Header: h}, src.Resource)
}

// owns reports whether coll (a collection of the state store) is where
// the source's endpoints are kept, in whatever scope.
func (src endpointSource) owns(coll string) bool {
	if src.Collection != "" {
		return coll == src.Collection || strings.HasPrefix(coll, src.Collection+" ")
	}
	return src.op != nil && src.op.OwnsCollection(coll, src.Resource)
}

// storedEndpointNamed reports whether an endpointsFrom: source keeps an
// endpoint of that id, in any scope, so that the admin API takes a
// filter naming one that has had no delivery yet (verify --webhook
// we_… --none).
func (s *Server) storedEndpointNamed(ctx context.Context, id string) (bool, error) {
	p := s.hooks.sources.Load()
	if p == nil || len(*p) == 0 {
		return false, nil
	}
	_, ok, err := s.findStored(ctx, func(coll string) bool {
		return slices.ContainsFunc(*p, func(src endpointSource) bool { return src.owns(coll) })
	}, id)
	return ok, err
}

// field is the value at a dotted path of obj; nil when there is none.
func field(obj map[string]any, path string) any {
	if path == "" {
		return nil
	}
	var v any = obj
	for part := range strings.SplitSeq(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[part]
	}
	return v
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
	var stored targets
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
				if so := m.Route.ScopeOf; d.op == nil && so != nil {
					d.op, _ = so.Operation.(*openapi.Operation) // a route of its own that acts for an object's owner
				}
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
		var to []webhooks.Target
		if len(e.Endpoints) == 0 {
			// To every endpoint: the stored ones of the request's scope too.
			s.storedEndpoints(ctx, in.HTTP.Header, &stored)
			to = stored.forType(e.Type)
		}
		if err := s.hooks.d.SendTo(ev, e.Endpoints, to, e.After, f); err != nil {
			s.log.Error("webhook event not queued", "route", m.Route.Name, "type", e.Type, "error", err.Error())
		}
		s.keepEvent(ctx, in.HTTP.Header, ev, len(e.Endpoints), len(to))
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
		out.Delay.Median, out.Delay.Sigma, out.Delay.Max = f.Delay.Median, f.Delay.Sigma, f.Delay.Max
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

// keepEvent saves ev, sent to the endpoints to (0: every one) and to
// stored ones (endpointsFrom:), in the events collection, when the
// scenarios keep one, in the scope the request headers h give: as GET
// /v1/events serves it.
func (s *Server) keepEvent(ctx context.Context, h http.Header, ev *webhooks.Event, to, stored int) {
	c := s.hooks.collection.Load()
	if c == nil || c.name == "" || ev.ID == "" {
		return
	}
	coll := scopedCollection(c.name, c.scope, h)
	if to == 0 {
		to = len(s.hooks.d.Endpoints())
	}
	if _, err := s.state.Collections().Save(context.WithoutCancel(ctx), coll, ev.ID, ev.JSON(webhooks.DefaultAPIVersion, to+stored)); err != nil {
		s.log.Error("webhook event not kept in its collection", "collection", coll, "event", ev.ID, "error", err.Error())
	}
}
