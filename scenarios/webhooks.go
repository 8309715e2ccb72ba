package scenarios

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Webhooks is a file's webhooks: block: where a route's events: go.
type Webhooks struct {
	Pos       Pos
	Endpoints []*WebhookEndpoint
	// Collection, when set, is where every event is also saved (by its
	// id), so that routes can serve them (GET /v1/events).
	Collection string
	// Scope is the collection's scope, as ItemRef.Scope: with
	// credential an event is kept for the API key of the request that
	// made it (and the values of the scope's headers).
	Scope Scope
	// EndpointsFrom, when set, is where more endpoints are read when an
	// event is sent; nil for none.
	EndpointsFrom *EndpointSource
}

// EndpointSource is a webhooks: block's endpointsFrom: endpoints that are
// the stored objects of a collection, or of an OpenAPI document's
// resource, made, changed and deleted by routes at run time (Stripe's
// POST /v1/webhook_endpoints makes one). An event that goes to every
// endpoint goes to each object, read when the event is sent, in the scope
// of the request that made the event, that contains When and whose
// Events field lists its type.
type EndpointSource struct {
	Pos Pos
	// Collection or Resource (one of them) holds the objects: a
	// collection, read in the block's Scope, or a resource (a schema's
	// x-resourceId, as save: entries name one) of the file's OpenAPI
	// document, read in the document's scope.
	Collection, Resource string
	// URL, Secret and Events are the fields of an object (dotted paths)
	// that hold its URL, its signing secret (a string or a list) and the
	// event types it takes (a list, in which "*" is every type); Events
	// "" takes every type.
	URL, Secret, Events string
	// When, when HasWhen, is a partial JSON document an object must
	// contain to receive events ({status: enabled}), matched as a
	// refusal's item: is.
	When    any
	HasWhen bool
	// Settings are what the endpoints share: Signing, Schedule,
	// Timeout, TimeScale and APIVersion; its other fields are unused.
	Settings WebhookEndpoint
}

// Name names the source in the outbox's deliveries and the log: its
// collection or resource.
func (e *EndpointSource) Name() string {
	if e.Resource != "" {
		return e.Resource
	}
	return e.Collection
}

// WebhookEndpoint is one receiver of events.
type WebhookEndpoint struct {
	Pos  Pos
	Name string
	URL  string
	// Signing is "stripe" (the default), "standard" or "none".
	Signing string
	// Secrets sign deliveries, the current one first; several during a
	// rotation. SecretEnv, when set, names an environment variable that
	// holds the secret instead, read by the server.
	Secrets   []string
	SecretEnv string
	// Schedule holds the waits before each retry; nil means the default.
	Schedule []time.Duration
	// Timeout bounds one attempt; 0 means the default.
	Timeout time.Duration
	// TimeScale multiplies the endpoint's waits; 0 means --time-scale's.
	TimeScale  float64
	APIVersion string
}

// Event is one event a route sends after its effects are committed.
type Event struct {
	Pos  Pos
	Type string
	// Data renders data.object; it sees what a response template sees,
	// and .Response, the answer sent. Nil means the answer's JSON body.
	Data *JSONTemplate
	// After delays the event's first attempt.
	After time.Duration
	// Endpoints names where it goes; empty means every endpoint.
	Endpoints []string
	Fault     *EventFault
	// When, when HasWhen, is a partial JSON document the answer's body
	// must contain for the event to be sent (when: { json: {status:
	// requires_capture} }), as a request body's json: condition matches.
	When    any
	HasWhen bool
}

// EventFault is how an event's deliveries go wrong. Rates are from 0 to 1
// (true is 1).
type EventFault struct {
	Duplicate, Reorder, DropFirst                          float64
	Delay                                                  Delay
	StaleTimestamp, BadSignature, WrongSecret, NoSignature float64
}

var (
	webhooksFields = []string{"endpoints", "collection", "scope", "endpointsFrom"}
	sourceFields   = []string{"collection", "resource", "url", "secret", "events", "when", "signing", "retry", "timeScale", "apiVersion"}
	endpointFields = []string{"name", "url", "signing", "secret", "secretEnv", "retry", "timeScale", "apiVersion"}
	retryFields    = []string{"schedule", "timeout"}
	eventFields    = []string{"type", "data", "after", "endpoints", "fault", "when"}
	eventFaults    = []string{"duplicate", "reorder", "delay", "dropFirst", "staleTimestamp", "badSignature", "wrongSecret", "noSignature"}
	signings       = []string{"stripe", "standard", "none"}
)

func (d *fileDecoder) webhooks(n *yaml.Node) *Webhooks {
	fs, ok := d.fields(n, "webhooks", webhooksFields...)
	if !ok {
		return nil
	}
	w := &Webhooks{Pos: d.pos(d.resolve(n))}
	if p, ok := fs["collection"]; ok {
		if s, ok := d.str(p.val, "webhooks.collection"); ok {
			if !validCollectionName(s) {
				d.fail(d.resolve(p.val), "webhooks.collection", "%q is not a collection name: use letters, digits, '-', '_' and '.'", s)
			}
			w.Collection = s
		}
	}
	if p, ok := fs["scope"]; ok {
		w.Scope = d.scope(p.val, "webhooks.scope")
	}
	_, from := fs["endpointsFrom"]
	if from {
		w.EndpointsFrom = d.endpointSource(fs["endpointsFrom"].val, "webhooks.endpointsFrom")
	}
	p, ok := fs["endpoints"]
	if !ok {
		if w.Collection == "" && !from {
			d.fail(d.resolve(n), "webhooks", "endpoints: is required (a list of {name, url, signing, secret}), or endpointsFrom: (endpoints that routes store), or collection: to keep the events only")
			return nil
		}
		return w
	}
	list := d.resolve(p.val)
	if list.Kind != yaml.SequenceNode {
		d.fail(list, "webhooks.endpoints", "want a list of endpoints, got %s", describe(list))
		return nil
	}
	seen := map[string]Pos{}
	for i, en := range list.Content {
		e := d.endpoint(en, fmt.Sprintf("webhooks.endpoints[%d]", i))
		if e == nil {
			continue
		}
		if first, dup := seen[e.Name]; dup {
			d.fail(d.resolve(en), fmt.Sprintf("webhooks.endpoints[%d].name", i), "endpoint %q is defined twice (first at %s)", e.Name, first)
			continue
		}
		seen[e.Name] = e.Pos
		w.Endpoints = append(w.Endpoints, e)
	}
	return w
}

func (d *fileDecoder) endpoint(n *yaml.Node, field string) *WebhookEndpoint {
	before := len(d.errs)
	fs, ok := d.fields(n, field, endpointFields...)
	if !ok {
		return nil
	}
	e := &WebhookEndpoint{Pos: d.pos(d.resolve(n)), Signing: "stripe"}
	if p, ok := fs["name"]; ok {
		if s, ok := d.str(p.val, join(field, "name")); ok && strings.TrimSpace(s) != "" {
			e.Name = s
		} else if ok {
			d.fail(p.val, join(field, "name"), "must not be empty")
		}
	} else {
		d.fail(d.resolve(n), field, "name: is required")
	}
	if p, ok := fs["url"]; ok {
		if s, ok := d.str(p.val, join(field, "url")); ok {
			u, err := url.Parse(s)
			switch {
			case err != nil:
				d.fail(p.val, join(field, "url"), "%v", err)
			case u.Scheme != "http" && u.Scheme != "https":
				d.fail(p.val, join(field, "url"), "want an http:// or https:// URL, got %q", s)
			case u.Host == "":
				d.fail(p.val, join(field, "url"), "%q has no host", s)
			default:
				e.URL = s
			}
		}
	} else {
		d.fail(d.resolve(n), field, "url: is required (the receiver under test, e.g. http://127.0.0.1:4242/webhooks)")
	}
	if p, ok := fs["signing"]; ok {
		if s, ok := d.str(p.val, join(field, "signing")); ok {
			if !contains(signings, s) {
				d.unknown(d.resolve(p.val), join(field, "signing"), "signing", s, signings)
			}
			e.Signing = s
		}
	}
	if p, ok := fs["secret"]; ok {
		if list, ok := d.strList(p.val, join(field, "secret")); ok {
			e.Secrets = list
			for _, s := range list {
				if s == "" {
					d.fail(d.resolve(p.val), join(field, "secret"), "must not be empty")
				} else if b64, ok := strings.CutPrefix(s, "whsec_"); e.Signing == "standard" && !ok {
					d.fail(d.resolve(p.val), join(field, "secret"), `a standard secret is "whsec_" and base64, e.g. whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw`)
				} else if key, err := base64.StdEncoding.DecodeString(b64); e.Signing == "standard" && (err != nil || len(key) == 0) {
					d.fail(d.resolve(p.val), join(field, "secret"), "the part after whsec_ is not base64 (Standard Webhooks keys are base64)")
				}
			}
		}
	}
	if p, ok := fs["secretEnv"]; ok {
		e.SecretEnv, _ = d.str(p.val, join(field, "secretEnv"))
		if _, both := fs["secret"]; both {
			d.fail(p.key, join(field, "secretEnv"), "secret: and secretEnv: exclude each other")
		}
	}
	if e.Signing != "none" && len(e.Secrets) == 0 && e.SecretEnv == "" {
		d.fail(d.resolve(n), field, "signing %s needs secret: (or secretEnv:, an environment variable that holds it)", e.Signing)
	}
	d.deliverySettings(fs, field, e)
	if len(d.errs) > before {
		return nil
	}
	return e
}

// endpointSource decodes endpointsFrom: at field.
func (d *fileDecoder) endpointSource(n *yaml.Node, field string) *EndpointSource {
	before := len(d.errs)
	fs, ok := d.fields(n, field, sourceFields...)
	if !ok {
		return nil
	}
	src := &EndpointSource{Pos: d.pos(d.resolve(n)), URL: "url", Secret: "secret", Settings: WebhookEndpoint{Signing: "stripe"}}
	c, hasColl := fs["collection"]
	r, hasRes := fs["resource"]
	switch {
	case hasColl && hasRes:
		d.fail(r.key, join(field, "resource"), "collection: and resource: exclude each other")
	case hasColl:
		if s, ok := d.str(c.val, join(field, "collection")); ok {
			if !validCollectionName(s) {
				d.fail(d.resolve(c.val), join(field, "collection"), "%q is not a collection name: use letters, digits, '-', '_' and '.'", s)
			}
			src.Collection = s
		}
	case hasRes:
		if s, ok := d.str(r.val, join(field, "resource")); ok {
			if strings.TrimSpace(s) == "" {
				d.fail(d.resolve(r.val), join(field, "resource"), "must not be empty")
			}
			src.Resource = s
		}
	default:
		d.fail(d.resolve(n), field, "collection: or resource: is required: where routes store the endpoint objects, e.g. { resource: webhook_endpoint } (an OpenAPI document's) or { collection: hooks }")
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"url", &src.URL}, {"secret", &src.Secret}, {"events", &src.Events}} {
		if p, ok := fs[f.name]; ok {
			if s, ok := d.str(p.val, join(field, f.name)); ok {
				if strings.TrimSpace(s) == "" || strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") || strings.Contains(s, "..") {
					d.fail(d.resolve(p.val), join(field, f.name), "want the name of the objects' field (dots for nested ones: hook.url), got %q", s)
				}
				*f.dst = s
			}
		}
	}
	if p, ok := fs["when"]; ok {
		f := join(field, "when")
		at := len(d.errs)
		ws, ok := d.fields(p.val, f, "item")
		it, hasItem := ws["item"]
		switch {
		case !ok:
		case !hasItem:
			if len(d.errs) == at { // else an unknown field was said already
				d.fail(d.resolve(p.val), f, "item: is required: what an endpoint object must contain to receive events, e.g. when: { item: { status: enabled } }")
			}
		case d.resolve(it.val).Kind != yaml.MappingNode:
			d.fail(d.resolve(it.val), join(f, "item"), "want a mapping of the fields an endpoint object must have, e.g. { status: enabled }, got %s", describe(d.resolve(it.val)))
		default:
			src.When, src.HasWhen = d.value(it.val, join(f, "item"), 0)
		}
	}
	e := &src.Settings
	if p, ok := fs["signing"]; ok {
		if s, ok := d.str(p.val, join(field, "signing")); ok {
			if !contains(signings, s) {
				d.unknown(d.resolve(p.val), join(field, "signing"), "signing", s, signings)
			}
			e.Signing = s
		}
	}
	d.deliverySettings(fs, field, e)
	if len(d.errs) > before {
		return nil
	}
	return src
}

// deliverySettings decodes what an endpoint and an endpointsFrom:
// source both set of their deliveries: retry:, timeScale: and
// apiVersion:.
func (d *fileDecoder) deliverySettings(fs map[string]pair, field string, e *WebhookEndpoint) {
	if p, ok := fs["retry"]; ok {
		d.retry(p.val, join(field, "retry"), e)
	}
	if p, ok := fs["timeScale"]; ok {
		if v, ok := d.float(p.val, join(field, "timeScale")); ok {
			if v <= 0 {
				d.fail(d.resolve(p.val), join(field, "timeScale"), "must be above 0 (0.01 makes a 1s wait 10ms)")
			}
			e.TimeScale = v
		}
	}
	if p, ok := fs["apiVersion"]; ok {
		e.APIVersion, _ = d.str(p.val, join(field, "apiVersion"))
	}
}

func (d *fileDecoder) retry(n *yaml.Node, field string, e *WebhookEndpoint) {
	fs, ok := d.fields(n, field, retryFields...)
	if !ok {
		return
	}
	if p, ok := fs["schedule"]; ok {
		list := d.resolve(p.val)
		if list.Kind != yaml.SequenceNode {
			d.fail(list, join(field, "schedule"), "want a list of waits, e.g. [1s, 5s, 30s], got %s", describe(list))
		} else {
			e.Schedule = []time.Duration{}
			for i, wn := range list.Content {
				if v, ok := d.duration(wn, fmt.Sprintf("%s.schedule[%d]", field, i)); ok {
					e.Schedule = append(e.Schedule, v)
				}
			}
		}
	}
	if p, ok := fs["timeout"]; ok {
		if v, ok := d.duration(p.val, join(field, "timeout")); ok {
			if v == 0 {
				d.fail(d.resolve(p.val), join(field, "timeout"), "must be above 0")
			}
			e.Timeout = v
		}
	}
}

// events decodes an events: list at field: a route's, or a save:
// entry's.
func (d *fileDecoder) events(n *yaml.Node, at string) []*Event {
	list := d.resolve(n)
	if list.Kind != yaml.SequenceNode {
		d.fail(list, at, "want a list of events ({type, data, after, fault}), got %s", describe(list))
		return nil
	}
	var out []*Event
	for i, en := range list.Content {
		field := fmt.Sprintf("%s[%d]", at, i)
		fs, ok := d.fields(en, field, eventFields...)
		if !ok {
			continue
		}
		ev := &Event{Pos: d.pos(d.resolve(en))}
		if p, ok := fs["type"]; ok {
			if s, ok := d.str(p.val, join(field, "type")); ok && strings.TrimSpace(s) != "" {
				ev.Type = s
			} else if ok {
				d.fail(p.val, join(field, "type"), "must not be empty")
			}
		} else {
			d.fail(d.resolve(en), field, "type: is required, e.g. payment_intent.succeeded")
		}
		if p, ok := fs["data"]; ok {
			ev.Data, _ = d.jsonTemplate(p.val, join(field, "data"))
		}
		if p, ok := fs["after"]; ok {
			ev.After, _ = d.duration(p.val, join(field, "after"))
		}
		if p, ok := fs["endpoints"]; ok {
			ev.Endpoints, _ = d.strList(p.val, join(field, "endpoints"))
		}
		if p, ok := fs["fault"]; ok {
			ev.Fault = d.eventFault(p.val, join(field, "fault"))
		}
		if p, ok := fs["when"]; ok {
			f := join(field, "when")
			before := len(d.errs)
			if ws, ok := d.fields(p.val, f, "json"); ok {
				if j, ok := ws["json"]; ok {
					if vn := d.resolve(j.val); vn.Kind == yaml.ScalarNode && vn.ShortTag() == "!!str" {
						d.jsonString(vn, join(f, "json")) // a string would only match an answer that is that string
					} else {
						ev.When, ev.HasWhen = d.value(j.val, join(f, "json"), 0)
					}
				} else if len(d.errs) == before { // an unknown field was said already
					d.fail(d.resolve(p.val), f, "json: is required: the answer's body must contain it, e.g. when: { json: { status: succeeded } }")
				}
			}
		}
		out = append(out, ev)
	}
	return out
}

func (d *fileDecoder) eventFault(n *yaml.Node, field string) *EventFault {
	fs, ok := d.fields(n, field, eventFaults...)
	if !ok {
		return nil
	}
	f := &EventFault{}
	for _, r := range []struct {
		name string
		dst  *float64
	}{
		{"duplicate", &f.Duplicate}, {"reorder", &f.Reorder}, {"dropFirst", &f.DropFirst},
		{"staleTimestamp", &f.StaleTimestamp}, {"badSignature", &f.BadSignature},
		{"wrongSecret", &f.WrongSecret}, {"noSignature", &f.NoSignature},
	} {
		if p, ok := fs[r.name]; ok {
			*r.dst = d.rate(p.val, join(field, r.name))
		}
	}
	if p, ok := fs["delay"]; ok {
		f.Delay, _ = d.delay(p.val, join(field, "delay"))
	}
	return f
}

// rate reads true, false or a probability from 0 to 1.
func (d *fileDecoder) rate(n *yaml.Node, field string) float64 {
	n = d.resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
		if b, _ := d.boolean(n, field); b {
			return 1
		}
		return 0
	}
	if n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!int" || n.ShortTag() == "!!float") {
		if v, ok := d.float(n, field); ok {
			if v < 0 || v > 1 {
				d.fail(n, field, "rate %g is not between 0 and 1", v)
				return 0
			}
			return v
		}
		return 0
	}
	d.fail(n, field, "want true, false or a rate from 0 to 1 (0.2 is one delivery in five), got %s", describe(n))
	return 0
}

// checkWebhooks runs the webhook checks that span files: endpoint names
// are unique in the set, and each event names endpoints that exist. A
// runtime document's events may name the files' endpoints, which it
// cannot see: Overlay checks them once it is laid on the files.
func (l *loader) checkWebhooks() {
	names, kept := map[string]Pos{}, false
	sources := map[string]Pos{}
	for _, f := range l.set.Files {
		if f.Webhooks == nil {
			continue
		}
		kept = kept || f.Webhooks.Collection != ""
		if src := f.Webhooks.EndpointsFrom; src != nil {
			kept = true // the events go to the endpoints routes store
			if first, dup := sources[src.Name()]; dup {
				l.failf(src.Pos, "webhooks.endpointsFrom: %q is read twice (first at %s)", src.Name(), first)
			}
			sources[src.Name()] = src.Pos
			if src.Resource != "" && f.OpenAPI == nil {
				l.failf(src.Pos, "webhooks.endpointsFrom.resource: %q needs an openapi: block in this file (its document stores the objects); a file without one names a collection:", src.Resource)
			}
		}
		for _, e := range f.Webhooks.Endpoints {
			if first, dup := names[e.Name]; dup {
				l.failf(e.Pos, "webhooks: endpoint %q is defined twice (first at %s)", e.Name, first)
				continue
			}
			names[e.Name] = e.Pos
		}
	}
	if !l.document {
		checkEvents(l.set.Routes(), names, kept, l.failf)
	}
}

// checkEvents reports each event of routes that names an endpoint not
// among names, or that has none to go to: no endpoint at all and no
// collection that keeps the events (kept).
func checkEvents(routes []*Route, names map[string]Pos, kept bool, fail func(Pos, string, ...any)) {
	check := func(r *Route, field string, events []*Event) {
		for i, ev := range events {
			if len(names) == 0 && !kept {
				fail(ev.Pos, "route %q: %s[%d]: no webhook endpoints are defined; add webhooks: {endpoints: [{name, url, secret}]} (or {collection: events}) to a file", r.Name, field, i)
				continue
			}
			for _, name := range ev.Endpoints {
				if _, ok := names[name]; !ok {
					fail(ev.Pos, "route %q: %s[%d].endpoints: no webhook endpoint %q", r.Name, field, i, name)
				}
			}
		}
	}
	for _, r := range routes {
		check(r, "events", r.Events)
		check(r, "save: events", r.SaveEvents())
	}
}

// SaveEvents returns the events of r's save: entries, in file order.
func (r *Route) SaveEvents() []*Event {
	var out []*Event
	for _, resp := range r.Responses {
		for _, ref := range resp.Also {
			out = append(out, ref.Events...)
		}
	}
	return out
}

// WebhookEndpoints returns the endpoints of every file, in file order.
func (s *Set) WebhookEndpoints() []*WebhookEndpoint {
	var out []*WebhookEndpoint
	for _, f := range s.Files {
		if f.Webhooks != nil {
			out = append(out, f.Webhooks.Endpoints...)
		}
	}
	return out
}

// EndpointSources returns the endpointsFrom: of every file, in file
// order.
func (s *Set) EndpointSources() []*EndpointSource {
	var out []*EndpointSource
	for _, f := range s.Files {
		if f.Webhooks != nil && f.Webhooks.EndpointsFrom != nil {
			out = append(out, f.Webhooks.EndpointsFrom)
		}
	}
	return out
}

// EventCollection returns the collection the events are saved in: the
// first file's webhooks.collection; "" for none.
func (s *Set) EventCollection() string {
	name, _ := s.eventCollection()
	return name
}

// EventScope returns the scope of EventCollection (ItemRef.Scope).
func (s *Set) EventScope() Scope {
	_, scope := s.eventCollection()
	return scope
}

func (s *Set) eventCollection() (name string, scope Scope) {
	for _, f := range s.Files {
		if f.Webhooks != nil && f.Webhooks.Collection != "" {
			return f.Webhooks.Collection, f.Webhooks.Scope
		}
	}
	return "", Scope{}
}
