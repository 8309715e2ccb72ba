package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/upstream"
)

// prepared is a response made ready to write: static headers with their
// value slices built, the Content-Length computed once. Prepared responses
// belong to a snapshot and are never changed.
type prepared struct {
	src    *scenarios.Response
	status int
	// header is a slice, not a map, so that copying it touches a few
	// contiguous cache lines; the value slices are shared and read-only.
	header []headerValue
	body   []byte
	// stored is the header of a static answer (neither templated nor
	// generated) as the idempotency store keeps it (recorder.response):
	// known before any request, so storing the answer neither walks nor
	// sorts a header map, nor packs it.
	stored *storedHeader
	// head is the same header as the journal encodes it; none when a
	// field is one the journal redacts (journal.Secrets).
	head journalHead
	// templates are the headers rendered per request.
	templates []scenarios.Header
	templated bool
	// sniff says that a text template's answers are labelled by what
	// they render (scenarios.Sniff): its text did not say, and the
	// response names no Content-Type.
	sniff bool
	// missing answers a load or delete that finds nothing (nil: a 404
	// problem).
	missing *prepared
	// refuse answers instead of a route's operation when the object it
	// acts on, as stored, is in a state it refuses (scenarios.Refusal).
	refuse []refusal
	// cases choose the response of a route's operation by the object it
	// acts on, as stored, once no refusal answered (scenarios.Route.Cases).
	cases []refusal
	// op generates the answer of a route compiled from an OpenAPI
	// document (see openapi.go); nil otherwise. before says that its
	// route records a *.updated event, whose previous_attributes need the
	// object as it was stored before the request (.Item).
	op     *openapi.Operation
	before bool
	// create makes an update or action on an id never created act on an
	// object made from the spec (scenarios.Route.CreateUnknown).
	create bool
	// target is where a proxied response forwards (nil: not proxied);
	// targetErr a target that could not be built, answered as a 500.
	target    *upstream.Target
	targetErr error
}

// refusal is a scenarios.Refusal prepared: the stored object's test and
// the answer.
type refusal struct {
	item  any
	holds *template.Template
	p     *prepared
}

type headerValue struct {
	name  string
	value []string
}

// saves reports whether commit saves items for p's answer (save:).
func (p *prepared) saves() bool { return p.src.Save != nil || len(p.src.Also) > 0 }

func prepare(r *scenarios.Response) *prepared {
	p := &prepared{src: r, status: r.Status, body: r.Body}
	for _, h := range r.Headers {
		if h.Template != nil {
			p.templates = append(p.templates, h)
			continue
		}
		if n := len(p.header); n > 0 && p.header[n-1].name == h.Name {
			p.header[n-1].value = append(p.header[n-1].value, h.Value) // a list: one line per value
			continue
		}
		p.header = append(p.header, headerValue{h.Name, []string{h.Value}})
	}
	if r.Missing != nil {
		p.missing = prepare(r.Missing)
	}
	if r.Proxy != nil {
		prepareProxy(p, r.Proxy)
		return p
	}
	if _, set := r.Header("Content-Type"); !set && (r.Op == scenarios.OpLoad || r.Op != "" && r.Status != http.StatusNoContent && len(r.Body) == 0 && r.BodyTemplate == nil && r.JSONTemplate == nil) {
		p.header = append(p.header, headerValue{"Content-Type", []string{"application/json"}}) // the stored item
	}
	if _, set := r.Header("Content-Type"); !set && r.BodyTemplate != nil {
		p.sniff = true
	}
	// A collection operation's body is known only per request.
	p.templated = r.BodyTemplate != nil || r.JSONTemplate != nil || len(p.templates) > 0 || r.Op != ""
	if !p.templated {
		// A length the file sets on an answer without a body is a HEAD's
		// (the GET's length, as a recorded HEAD keeps it): it is sent as
		// written, and net/http sends no body after it; computed, it was
		// 0. (To a GET it promises a body that never comes.)
		if _, set := r.Header("Content-Length"); !set || len(r.Body) > 0 {
			p.header = append(p.header, headerValue{"Content-Length", []string{strconv.Itoa(len(r.Body))}})
		}
		// As render writes it into an empty header, as response reads it.
		rec := recorder{header: http.Header{}}
		for _, hv := range p.header {
			rec.header[hv.name] = hv.value
		}
		fields := slices.Clone(rec.response().Header)
		p.stored = &storedHeader{fields: fields, packed: state.PackHeader(fields)}
		p.head = newJournalHead(rec.header)
	}
	return p
}

// templateData is what a response template sees. Its fields are part of
// the scenario format (documented in the README).
type templateData struct {
	Request templateRequest
	Route   string
	// Call is the 1-based number of this call: of the route, or of its key
	// when the sequence is per key.
	Call int64
	Now  time.Time
	env  templateEnv

	// ctx and maxSteps bound the render (see Step); steps counts.
	ctx             context.Context
	steps, maxSteps int
	// Item is the item load: or delete: found, and Items the items list:
	// found, parsed from JSON (numbers as written).
	Item  any
	Items []any
	// HasMore says whether a paged list: has items past this page.
	HasMore bool
	// Response is the answer just rendered; only save's id sees it.
	Response *templateResponse
	// Answer is the answer of the operation a route names, decoded, for
	// the route's envelope:.
	Answer any

	// What the collection operation found, as stored: the answer of a
	// load, list or delete without a body of its own.
	item       []byte
	items      [][]byte
	collection string
	id         string
	// in is the request, for a generated answer.
	in *matcher.Request
	// opMissing: a load: of a route that names an operation found
	// nothing, and the operation answers for the id it lacks
	// (openapi.Exchange.Missing).
	opMissing bool
	// op is the operation a generated answer's route names, whose
	// stored resources the stored function reads (StoredResource).
	op *openapi.Operation
	// after is the object that operation acted on as stored after the
	// request (item is it before), for a *.updated event.
	after []byte
	// wrapped says that an envelope: wrapped the operation's answer,
	// answered and answeredStatus (a 204's body is nil): what the route's
	// events see.
	wrapped        bool
	answered       []byte
	answeredStatus int
	// instead says that the route answered in the operation's place (its
	// missing: or a refuse:): nothing was done, so no event is sent.
	instead bool
	// remembered keeps remember's values while the answer is made (made
	// on first use).
	remembered map[string]any
	// saved are the items the save: entries with events: saved, for
	// those events (sendEvents).
	saved []savedItem
}

// savedItem is an item a save: entry with events: saved: before is it as
// stored before a merge (nil for a new one), after as saved.
type savedItem struct {
	events        []*scenarios.Event
	before, after []byte
}

// Remember keeps v under name for the rest of this answer, unless a
// value is kept there already, and returns the one kept
// (scenarios.Memory).
func (d *templateData) Remember(name string, v any) any {
	if kept, ok := d.remembered[name]; ok {
		return kept
	}
	if d.remembered == nil {
		d.remembered = map[string]any{}
	}
	d.remembered[name] = v
	return v
}

// StoredResource reads a stored object of the route's operation's
// document for the template function stored (scenarios.Resources); nil
// for a route that names no operation.
func (d *templateData) StoredResource(resource, id string) (any, error) {
	if d.op == nil {
		return nil, nil
	}
	ctx, ox := d.opExchange()
	b, found, err := d.op.StoredResource(ctx, ox, resource, id)
	if err != nil || !found {
		return nil, err
	}
	return parseItem(b), nil
}

// StoredWhere reads the stored objects of a resource of the route's
// operation's document whose field is value (or, expanded, has that id),
// for the template function storedWhere; none for a route that names no
// operation. Each object looked at is a step of the render's budget.
func (d *templateData) StoredWhere(resource, field, value string) ([]any, error) {
	if d.op == nil {
		return nil, nil
	}
	ctx, ox := d.opExchange()
	items, err := d.op.StoredResources(ctx, ox, resource, field, value)
	if err != nil {
		return nil, err
	}
	var out []any
	for _, b := range items {
		if err := d.Step(); err != nil {
			return nil, err
		}
		// An item whose text cannot hold the value (no escapes, and the
		// value nowhere in it) is passed over undecoded: most items of
		// a collection name other objects.
		if !bytes.Contains(b, []byte(value)) && !bytes.ContainsRune(b, '\\') {
			continue
		}
		obj, _ := parseItem(b).(map[string]any)
		v := obj[field]
		if m, ok := v.(map[string]any); ok {
			v = m["id"]
		}
		switch x := v.(type) {
		case string:
			if x == value {
				out = append(out, obj)
			}
		case json.Number:
			if x.String() == value {
				out = append(out, obj)
			}
		}
	}
	return out, nil
}

// Step is called by every range iteration of a render (the check
// scenarios puts in range bodies). It ends the render once the request's
// context ends (the client left, or shutdown) or the render has taken
// maxSteps steps (scenarios.MaxRangeSteps): text/template has no cancellation of its
// own, and an empty range body writes nothing for a size cap to stop.
func (d *templateData) Step() error {
	d.steps++
	if d.maxSteps > 0 && d.steps > d.maxSteps {
		return &budgetError{max: d.maxSteps}
	}
	if d.ctx != nil {
		select {
		case <-d.ctx.Done():
			return fmt.Errorf("%w: %w", errRenderCancelled, context.Cause(d.ctx))
		default:
		}
	}
	return nil
}

// budgetError is a render cut off after max steps.
type budgetError struct{ max int }

func (e *budgetError) Error() string {
	return fmt.Sprintf("%v: more than %d range iterations", errRenderBudget, e.max)
}

func (e *budgetError) Is(target error) bool { return target == errRenderBudget }

// renderBuffer is where a template renders: it refuses output past max
// bytes, so that a template cannot build a body of any size.
type renderBuffer struct {
	bytes.Buffer
	max int
}

func (b *renderBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		return 0, scenarios.ErrOutputLimit
	}
	return b.Buffer.Write(p)
}

func (b *renderBuffer) WriteString(s string) (int, error) {
	if b.Len()+len(s) > b.max {
		return 0, scenarios.ErrOutputLimit
	}
	return b.Buffer.WriteString(s)
}

// templateEnv is what seq, randomHex and unix take from the server
// (scenarios.Runtime).
type templateEnv struct {
	ctx         context.Context
	counters    state.Counters
	rand        func() float64
	collections state.Collections
}

// env returns what a template rendered for a request with context ctx
// needs of the server.
func (s *Server) env(ctx context.Context) templateEnv {
	return templateEnv{ctx: ctx, counters: s.state.Counters(), rand: s.opts.Rand, collections: s.state.Collections()}
}

// NextCount gives seq the server's named counters, which all routes share
// and reloads keep.
func (d *templateData) NextCount(name string) (int64, error) {
	n, err := d.env.counters.Next(d.env.ctx, name)
	if errors.Is(err, state.ErrFenced) {
		return 0, err // a straggler of a reset (fence.go): a 503, nothing written
	}
	if errors.Is(err, state.ErrCountersFull) || errors.Is(err, state.ErrCounterName) {
		return 0, boundErr{err} // a 507: the store is up, its bound is met
	}
	if err != nil {
		return 0, storeErr{err} // a 503, not the template's fault
	}
	return n, nil
}

// storeErr marks a failure of the state store met while rendering, so
// that it answers 503 (statusOf) with its message unchanged.
type storeErr struct{ error }

func (e storeErr) Is(target error) bool { return target == errStore }

// boundErr marks a counter the store refused because of its bounds (too
// many names, a name too long), so that it answers 507 (statusOf) as a
// full collection does, with its message unchanged.
type boundErr struct{ error }

func (e boundErr) Is(target error) bool { return target == state.ErrFull }

func (e boundErr) Unwrap() error { return e.error }

// RandomFloat gives randomHex the server's randomness (Options.Rand).
func (d *templateData) RandomFloat() float64 { return d.env.rand() }

// Time gives unix the time the answer is made at, which .Now shows too.
func (d *templateData) Time() time.Time { return d.Now }

type templateRequest struct {
	Method string
	Path   string
	// Scheme is https for a request that came over TLS, else http: with
	// Host, the address the client reached the server at.
	Scheme  string
	Host    string
	Vars    map[string]string
	Query   url.Values
	Headers http.Header
	Body    string
	// JSON is the body parsed as JSON when it is an object, otherwise an
	// empty object, so that .Request.JSON.field renders empty rather than
	// failing for a body that is missing or not an object.
	JSON map[string]any
	// Form is a form body with its bracket keys nested
	// (matcher.Request.Form), or an empty object, as JSON is.
	Form map[string]any
}

// RequestJSON hands the json template function the body and the document
// parsed from it, so that it echoes request JSON as it came
// (scenarios.JSONSource).
func (d *templateData) RequestJSON() (string, any) { return d.Request.Body, d.Request.JSON }

func newTemplateData(in *matcher.Request, m matcher.Match, call int64, now time.Time, env templateEnv) *templateData {
	parsed, _ := in.JSON()
	doc, ok := parsed.(map[string]any)
	if !ok {
		doc = map[string]any{}
	}
	form := in.Form()
	if form == nil {
		form = map[string]any{}
	}
	route := ""
	if m.Route != nil {
		route = m.Route.Name
	}
	return &templateData{
		Request: templateRequest{
			Method:  in.HTTP.Method,
			Path:    in.HTTP.URL.Path,
			Scheme:  schemeOf(in.HTTP),
			Host:    in.HTTP.Host,
			Vars:    m.Vars,
			Query:   in.Query(),
			Headers: in.HTTP.Header,
			Body:    string(in.Body),
			JSON:    doc,
			Form:    form,
		},
		Route: route,
		Call:  call + 1,
		Now:   now,
		env:   env,
		in:    in,
	}
}

// schemeOf is the scheme r came by: https over TLS, else http.
func schemeOf(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// render makes the response into rec: its headers, status and body. A
// template that fails to render is an error naming the template's error,
// and so is one whose output (a header or the body) would pass limit
// bytes; the caller answers a 500 problem instead, and nothing has been
// sent. A static body is rec's without a copy.
func (p *prepared) render(rec *recorder, limit int, data dataSource) error {
	h := rec.header
	rec.stored, rec.head = nil, journalHead{}
	rec.key = p.src.Idempotency // a refusal's or missing:'s, rendered last, decides
	for _, hv := range p.header {
		h[hv.name] = hv.value
	}
	if p.op != nil && p.src.Op == "" {
		return p.generated(rec, limit, data)
	}
	body := p.body
	if p.templated {
		d := data.templateData()
		if err := p.renderHeaders(h, limit, data); err != nil {
			return err
		}
		buf := renderBuffer{max: limit}
		switch {
		case p.src.JSONTemplate != nil:
			b, err := renderJSON(p.src.JSONTemplate, "body", d, limit)
			if err != nil {
				return err
			}
			body = b
		case p.src.BodyTemplate != nil:
			if err := p.src.BodyTemplate.Execute(&buf, d); err != nil {
				return renderError("body", limit, err)
			}
			body = buf.Bytes()
			if p.sniff {
				if ct := scenarios.Sniff(body); ct != "" {
					h["Content-Type"] = []string{ct} // none for an empty answer
				}
			}
		case len(p.body) > 0: // a body of its own
		case p.src.Op == scenarios.OpList:
			body = joinItems(d.items)
		case p.src.Op == scenarios.OpLoad || p.src.Op == scenarios.OpDelete && p.status != http.StatusNoContent:
			body = d.item
		}
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	rec.status, rec.body = p.status, body
	if !p.templated {
		rec.stored, rec.head = p.stored, p.head // what render wrote, whatever else h holds
	}
	return nil
}

// generated makes the operation's answer into rec, with the response's
// headers: templated ones (a file's defaults with template: true) go on
// generated answers too.
func (p *prepared) generated(rec *recorder, limit int, data dataSource) error {
	if err := p.headers(rec.header, limit, data); err != nil {
		return err
	}
	return p.writeGenerated(rec, limit, data)
}

// headers sets the response's headers in h: the static ones, then the
// templated ones rendered.
func (p *prepared) headers(h http.Header, limit int, data dataSource) error {
	for _, hv := range p.header {
		h[hv.name] = hv.value
	}
	return p.renderHeaders(h, limit, data)
}

// renderJSON renders t, what (body, envelope) of an answer, within limit
// bytes; an error names the leaf that failed (body.amount).
func renderJSON(t *scenarios.JSONTemplate, what string, d *templateData, limit int) ([]byte, error) {
	buf := renderBuffer{max: limit}
	err := t.Execute(&buf.Buffer, d, limit)
	if err == nil && buf.Len() > limit {
		// Escaping made it longer than its leaves, or a typed leaf
		// wrote a whole value at once.
		err = scenarios.ErrOutputLimit
	}
	if err != nil {
		var le *scenarios.LeafError
		if errors.As(err, &le) {
			what, err = what+le.Field, le.Err
		}
		return nil, renderError(what, limit, err)
	}
	return buf.Bytes(), nil
}

// renderHeaders renders the templated headers into h.
func (p *prepared) renderHeaders(h http.Header, limit int, data dataSource) error {
	if len(p.templates) == 0 {
		return nil
	}
	d := data.templateData()
	for i, t := range p.templates {
		b := renderBuffer{max: limit}
		if err := t.Template.Execute(&b, d); err != nil {
			return renderError("header "+t.Name, limit, err)
		}
		v := strings.Map(func(r rune) rune {
			if r < ' ' && r != '\t' || r == 0x7f {
				return ' ' // a request value must not split the header
			}
			return r
		}, b.String())
		switch {
		case i > 0 && p.templates[i-1].Name == t.Name:
			// A list (its values are adjacent): one line per value,
			// none for a value that renders empty.
			if v != "" {
				h[t.Name] = append(h[t.Name], v)
			}
		case v == "":
			// A header that renders empty is not sent, so that one can
			// echo a request header only when it came.
			delete(h, t.Name)
		default:
			h[t.Name] = []string{v}
		}
	}
	return nil
}

// renderError says why what (a header or the body) did not render.
func renderError(what string, limit int, err error) error {
	switch {
	case errors.Is(err, scenarios.ErrOutputLimit):
		return fmt.Errorf("%w: %s: the rendered output passes the limit of %d bytes (--max-template-output)", errRenderTooLarge, what, limit)
	case errors.Is(err, errRenderBudget):
		var be *budgetError
		errors.As(err, &be)
		return fmt.Errorf("%w: %s: %w", errTemplate, what, be)
	case errors.Is(err, errRenderCancelled):
		return fmt.Errorf("%w: %s: %w", errTemplate, what, errRenderCancelled)
	case errors.Is(err, state.ErrFenced):
		return fmt.Errorf("%s: %w", what, state.ErrFenced)
	case errors.Is(err, state.ErrCountersFull), errors.Is(err, state.ErrCounterName):
		// seq met the store's bound: a 507, not a broken template.
		return boundErr{fmt.Errorf("%s: %s", what, templateMessage(err))}
	case errors.Is(err, errStore):
		// seq could not reach the store: a 503, not a broken template.
		return storeErr{fmt.Errorf("%s: %w: %s", what, errStore, templateMessage(err))}
	}
	return fmt.Errorf("%w: %s: %s", errTemplate, what, templateMessage(err))
}

// templateMessage strips text/template's own naming from an execution
// error ("template: t:1:16: executing \"t\" at <.x>: ..." becomes
// "at <.x>: ..."), since the route and field already say which template.
func templateMessage(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, `executing "t" `); i >= 0 {
		return msg[i+len(`executing "t" `):]
	}
	return strings.TrimPrefix(msg, "template: ")
}

// pickDelay draws a delay; u returns uniform numbers in [0, 1).
func pickDelay(d scenarios.Delay, u func() float64) time.Duration {
	switch d.Kind {
	case scenarios.Fixed:
		return d.Fixed
	case scenarios.Uniform:
		return d.Min + time.Duration(u()*float64(d.Max-d.Min))
	case scenarios.LogNormal:
		// Box–Muller: 1-u is in (0, 1], so the logarithm is finite.
		z := math.Sqrt(-2*math.Log(1-u())) * math.Cos(2*math.Pi*u())
		v := float64(d.Median) * math.Exp(d.Sigma*z)
		limit := float64(24 * time.Hour)
		if d.Max > 0 {
			limit = float64(d.Max)
		}
		return time.Duration(math.Min(v, limit))
	}
	return 0
}
