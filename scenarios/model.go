package scenarios

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"time"
)

// Set is every scenario file loaded together, in match order before
// priorities apply: files in the order given (directory contents in lexical
// order), routes in file order. A Set is immutable and safe for concurrent
// reads.
type Set struct {
	Files []*File
	// Fallback answers requests that no route matches; nil means the
	// built-in 404 problem answer. At most one file may define it.
	Fallback *Response
	// Hash identifies the content of every file read (scenarios and body
	// files); equal hashes mean nothing changed.
	Hash string
	// Deps are the body files the set read, in the order read, for the
	// watcher and for Hash.
	Deps []string

	paths []string // given to Load, for Rehash; nil for LoadBytes
	// hash is the running content hash, which Extend adds to.
	hash *contentHash
	// Seeds are the collections the files fill, in file order; a
	// collection is seeded by one file only.
	Seeds []*Seed
}

// Routes returns every route of s in file order.
func (s *Set) Routes() []*Route {
	var out []*Route
	for _, f := range s.Files {
		out = append(out, f.Routes...)
	}
	return out
}

// File is one scenario file.
type File struct {
	Path   string // as the user named it, for messages
	Name   string // the file's name: field
	Routes []*Route
	// CORS is the file's cors: block; nil when it has none.
	CORS *CORS
	// OpenAPI is the file's openapi: block; nil when it has none. Package
	// openapi compiles it into routes (see Set.Extend).
	OpenAPI *OpenAPISource
	// Webhooks is the file's webhooks: block; nil when it has none.
	Webhooks *Webhooks
	// Session is the file's session: name; its routes answer only the
	// requests of that session. "" for every request.
	Session string
	// Runtime is the id of the runtime document (POST /__admin/scenarios)
	// the file is; "" for a file on disk.
	Runtime string
}

// Route maps a method, a path and conditions to one response or a sequence
// of responses.
type Route struct {
	Pos  Pos
	Name string // unique in the set; generated from method and path when not written
	// Named reports whether Name was written in the file.
	Named bool
	// Methods are as written (methods are case-sensitive; see checkMethod);
	// empty means any method.
	Methods []string
	Path    string // a gorilla/mux path template
	PathPos Pos
	// Template is Path compiled, so that matcher.Compile need not compile
	// it again; nil in a route not made by Load.
	Template *PathTemplate
	Vars     []string // the path's variable names
	Priority int
	When     When
	// Responses has one element for respond: and one or more for responses:.
	Responses []*Response
	// Sequence says how Responses are chosen; nil for a single response.
	Sequence *Sequence
	// Idempotency, when set, emulates an Idempotency-Key API on the route.
	Idempotency *Idempotency
	// Identity stays the same across reloads exactly when the route's name
	// and definition do, so that its sequence state can be kept.
	Identity string
	// CORS is the cors: block of the route's file; nil when it has none.
	CORS *CORS
	// Operation is set on the routes compiled from an OpenAPI document
	// (package openapi), and on a route written in YAML that names one
	// (OperationName): the value that validates requests and generates
	// answers; the server asserts it to the interface it calls. Nil for
	// other routes.
	Operation any
	// OperationName is the route's operation: (an operationId of an
	// openapi: spec of the set), at OperationPos; package openapi links
	// it to Operation. "" for a route that answers by itself.
	OperationName string
	OperationPos  Pos
	// Unmatched marks a catch-all (unmatched: true): its answers are
	// journaled as matching no route, so that verify --no-unmatched
	// counts the calls a file does not fake.
	Unmatched bool
	// Events are sent after the route's effects are committed.
	Events []*Event
	// Refuse, on a route that names an operation, answers instead of the
	// operation when the object it acts on, as stored before the request,
	// is in a state the operation refuses: the first refusal whose Item
	// the stored object contains answers, the operation neither runs nor
	// stores, and no event is sent (Stripe's
	// payment_intent_unexpected_state: a succeeded intent confirmed
	// again).
	Refuse []*Refusal
	// Cases, on a route that names an operation, choose the operation's
	// response by the object it acts on, as stored before the request,
	// once no refusal answered: the first case whose Item the stored
	// object contains gives the response in place of the route's own, the
	// operation runs and stores as ever, and the route's events are sent
	// (their when: sees the answer). A payment intent whose stored payment
	// method declines is declined by a bare confirm.
	Cases []*Refusal
	// CreateUnknown (unknownIds: create), on a route that names an update
	// or action, makes an object of the operation's resource from the spec
	// for an id never created, stores it with that id, and lets the
	// operation act on it (Stripe's test payment methods, pm_card_visa,
	// attached to a customer). A deleted id stays the operation's 404.
	CreateUnknown    bool
	CreateUnknownPos Pos
	// Lock names the objects the route's requests act on, which requests
	// naming the same one act on one at a time (lock:, or the file's
	// defaults: wait and timeout only); nil for the defaults. See Lock.
	Lock *Lock
	// State is the route's state: block: the state it answers in and the
	// one its answer moves to; nil for a route that has none. See
	// RouteState.
	State *RouteState
	// Session is its file's session: name; the route answers only the
	// requests that carry it. "" answers every request.
	Session string
	// ScopeOf (scopeOf:) makes the request act for whoever stored an
	// object; nil for a route whose requests act for themselves.
	ScopeOf *ScopeOf
}

// ScopeOf is a route's scopeOf: block: a stored object of a resource of
// an OpenAPI document of the set, named by a template of its id. The
// request acts in the scope that object was stored in, whichever API key
// (and scope header) stored it, as if it had carried them: its
// operation, the template functions stored and storedWhere, its save:
// entries and its events are that scope's, and the events go to that
// scope's webhook endpoints. A browser, which carries no API key, pays a
// Stripe Checkout Session on the mock's own page this way. An id stored
// in no scope is the route's missing: answer, if it has one; else the
// request goes on in its own scope. A route with scopeOf: that
// names an operation may have a path of its own (its variables the
// operation's): the page is not the API.
type ScopeOf struct {
	Pos      Pos
	Resource string
	// ID renders the object's id; always a template.
	ID *template.Template
	// Operation is an operation of the document that stores Resource,
	// linked by package openapi: the server asserts it to the type it
	// calls. The route's own operation when it names one.
	Operation any
}

// PathShape is the route's path with its variables' patterns left out:
// the path an OpenAPI operation names, which a route written for it may
// narrow ({payment_method:pm_card_.+} is still the operation's
// {payment_method}).
func (r *Route) PathShape() string {
	if r.Template == nil {
		return r.Path
	}
	return r.Template.Shape()
}

// Refusal is one entry of a route's refuse: or cases:.
type Refusal struct {
	Pos Pos
	// Item is a partial JSON document, matched against the stored object
	// as an event's when: json is against the answer (matcher.ContainsJSON);
	// nil when the entry has only Holds.
	Item any
	// Holds (when: holds:) is a template that must render true, seeing
	// what a response template sees (.Request, .Item, stored): a test of
	// the request against stored objects, such as a refund of more than
	// its payment intent received. Rendered only once Item holds.
	Holds *template.Template
	// Response is the answer; it sees the stored object as .Item. The
	// route's own response's delay and fault apply to it.
	Response *Response
}

// When holds a route's conditions; all of them must hold.
type When struct {
	Headers []Field // names in canonical MIME form
	Query   []Field
	Body    *BodyCondition
}

// Len returns the number of conditions.
func (w When) Len() int {
	n := len(w.Headers) + len(w.Query)
	if w.Body != nil {
		n++
	}
	return n
}

// Field is a condition on one named header or query parameter.
type Field struct {
	Name string
	Cond Condition
}

// Condition tests a string value. Every part that is set must hold; a
// value that is absent satisfies only Absent.
type Condition struct {
	Pos      Pos
	Presence Presence
	Equals   *string
	Contains *string
	Regex    *regexp.Regexp
	// NotRegex is the value's test that must fail: a value it matches
	// fails the condition ("any key but a test key").
	NotRegex *regexp.Regexp
	OneOf    []string
}

// Presence is what a condition requires of a value's existence.
type Presence int

const (
	// PresenceAny is implied: any test other than absent needs a value.
	PresenceAny Presence = iota
	// Present requires the value to exist.
	Present
	// Absent requires it not to exist.
	Absent
)

// Test reports whether the value satisfies c; ok says whether it exists.
func (c *Condition) Test(v string) bool {
	if c.Equals != nil && v != *c.Equals {
		return false
	}
	if c.Contains != nil && !strings.Contains(v, *c.Contains) {
		return false
	}
	if c.Regex != nil && !c.Regex.MatchString(v) {
		return false
	}
	if c.NotRegex != nil && c.NotRegex.MatchString(v) {
		return false
	}
	if c.OneOf != nil {
		found := false
		for _, o := range c.OneOf {
			if v == o {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// String describes what c requires, as in `= "JPY"` or `absent`.
func (c *Condition) String() string {
	var parts []string
	switch c.Presence {
	case Present:
		parts = append(parts, "present")
	case Absent:
		return "absent"
	}
	if c.Equals != nil {
		parts = append(parts, "= "+strconv.Quote(*c.Equals))
	}
	if c.Contains != nil {
		parts = append(parts, "contains "+strconv.Quote(*c.Contains))
	}
	if c.Regex != nil {
		parts = append(parts, "matches /"+c.Regex.String()+"/")
	}
	if c.NotRegex != nil {
		parts = append(parts, "does not match /"+c.NotRegex.String()+"/")
	}
	if c.OneOf != nil {
		q := make([]string, len(c.OneOf))
		for i, o := range c.OneOf {
			q[i] = strconv.Quote(o)
		}
		parts = append(parts, "one of ["+strings.Join(q, ", ")+"]")
	}
	return strings.Join(parts, " and ")
}

// BodyCondition tests the request body: raw text tests, a partial JSON
// match, or conditions on the fields of a form. Every part that is set
// must hold.
type BodyCondition struct {
	Pos Pos
	Raw *Condition // equals, contains, regex on the raw body
	// JSON is a partial document: objects match when every key given
	// matches, arrays when every element given matches some element.
	JSON    any
	HasJSON bool
	JSONPos Pos
	// Form tests the fields of an application/x-www-form-urlencoded body,
	// by their keys as sent (metadata[order_id]), like query parameters.
	Form []Field
}

// Response is one canned answer, with the file's defaults already merged.
type Response struct {
	Pos     Pos
	Status  int
	Headers []Header // in file order; defaults first unless overridden
	// Body is the encoded body: a YAML mapping or list as JSON, a string as
	// written, a bodyFile's bytes.
	Body []byte
	// BodyTemplate, when the response is a template, renders Body.
	// JSONTemplate renders a mapping or list body leaf by leaf, so that
	// request values are always JSON-escaped.
	BodyTemplate *template.Template
	JSONTemplate *JSONTemplate
	Delay        Delay
	// Fault, when set, breaks the exchange for some or all requests.
	Fault *Fault
	// Template reports whether headers and body are templates.
	Template bool
	// Save, when set, stores the rendered body as an item once the answer
	// is produced (not on an idempotent replay, not when it is released).
	Save *ItemRef
	// Also are the items save: makes beside the answer (its entries with
	// a body: of their own, ItemRef.Body), saved when and where Save
	// would be, in the order written: a subscription's first invoice.
	// On a route that names an operation they are saved with a 2xx
	// answer the operation made only.
	Also []*ItemRef
	// Op and Ref, when Op is set, read or delete stored items: Ref names
	// the collection (and the item, for load and delete).
	Op  CollectionOp
	Ref *ItemRef
	// Missing answers a load or delete that finds no item; nil means a 404
	// problem naming the collection and the id.
	Missing *Response
	// Proxy, when set, makes the answer the upstream's: status, headers
	// and body come from it, and delay, fault and idempotency apply to it.
	Proxy *Proxy
	// Envelope, on a route that names an operation, is the answer made
	// of the operation's own: a JSON template that sees that answer as
	// .Answer, sent with EnvelopeStatus (the operation's status when 0).
	// The operation stores what it made, and the route's events see its
	// answer, as if it had been sent: Stripe's card error carries the
	// payment intent that the decline left stored. It applies to a 2xx
	// answer of the operation only.
	Envelope       *JSONTemplate
	EnvelopeStatus int
	// EnvelopeText is an envelope: written as a string instead: a text
	// template (it sees .Answer too) sent as written, with the route's
	// Content-Type or, without one, the type its text has (Sniff): the
	// short HTML note a 303 from a form's POST carries (RFC 9110, 15.4.4).
	EnvelopeText *template.Template
	// Override, on a route that names an operation, is a JSON object laid
	// on the operation's answer after the request's values, and so on what
	// a create, update or action stores: what the request sent does not
	// show through (a declined payment intent keeps no payment_method).
	// With template: true it is OverrideTemplate instead, a JSON template
	// that sees what body: sees (.Request, .Item), rendered per request.
	Override         []byte
	OverrideTemplate *JSONTemplate
	// Idempotency, when set, is what this answer does to a claimed
	// Idempotency-Key in place of the idempotency block's store: rule
	// (release: nothing is stored, saved or sent as an event). Not on a
	// response that runs an operation, which has stored what it made.
	Idempotency KeyEffect
}

// Proxy is a response's proxy: block: the upstream that answers.
type Proxy struct {
	Pos Pos
	// URL is the upstream's base URL (http or https, no query); request
	// paths are appended to its path.
	URL string
	// Timeout bounds the wait for the upstream (0: the default, 30s).
	Timeout time.Duration
	// Set are headers set on the forwarded request, in file order;
	// Remove names headers not forwarded.
	Set    []Header
	Remove []string
}

// Header is one response header value; Template is set when it is
// templated. A header written with a list of values is one Header per
// value, adjacent and in the order written, each sent as its own line.
type Header struct {
	Name     string // canonical MIME form
	Value    string
	Template *template.Template
}

// Header returns the value of the named header (canonical form) and
// whether it is set.
func (r *Response) Header(name string) (string, bool) {
	for _, h := range r.Headers {
		if h.Name == name {
			return h.Value, true
		}
	}
	return "", false
}

// DelayKind says how a delay is drawn.
type DelayKind int

const (
	// NoDelay answers at once.
	NoDelay DelayKind = iota
	// Fixed waits Fixed.
	Fixed
	// Uniform waits a uniformly random time in [Min, Max].
	Uniform
	// LogNormal waits Median·e^(Sigma·N(0,1)), the long-tailed shape of real
	// latencies, capped at Max when Max is set.
	LogNormal
)

// Delay is how long to wait before answering.
type Delay struct {
	Kind   DelayKind
	Fixed  time.Duration
	Min    time.Duration
	Max    time.Duration
	Median time.Duration
	Sigma  float64
}

// String describes d, as in "10s" or "100ms..2s".
func (d Delay) String() string {
	switch d.Kind {
	case Fixed:
		return d.Fixed.String()
	case Uniform:
		return d.Min.String() + ".." + d.Max.String()
	case LogNormal:
		s := "lognormal(median " + d.Median.String() + ", sigma " + strconv.FormatFloat(d.Sigma, 'g', -1, 64)
		if d.Max > 0 {
			s += ", max " + d.Max.String()
		}
		return s + ")"
	}
	return "0s"
}

// Fault is a way of failing at the connection level instead of answering
// normally: before the route is processed (After: Arrival) or once it has
// been (After: Processing), for a Chance of the requests the response
// serves.
type Fault struct {
	Pos  Pos
	Kind FaultKind
	// After says how far the route runs before the fault. At Arrival
	// nothing of the route's state changes (no save, no delete, no stored
	// idempotent answer: the key is released); a kind that sends part of
	// the answer still renders it. At Processing the route runs to its end
	// (its item saved, its idempotent answer stored) and then the answer
	// is lost this way: the request succeeded and the client never learns
	// it.
	After FaultStage
	// Chance is the fraction of the requests served this response that get
	// the fault, in [0, 1]; the others get the answer. 1 when not written.
	Chance float64
	// Bytes, for partial-body, is how many bytes of the body are sent;
	// -1 (not written) sends half of it.
	Bytes int
	// Over, for slow-body, is how long the body takes to arrive, and
	// Chunks how many pieces it comes in (DefaultSlowChunks when not
	// written; never more than the body has bytes).
	Over   time.Duration
	Chunks int
	// Rate, for bandwidth, is the bytes per second the answer's body is
	// sent at, and the request's body is taken at.
	Rate int
	// Latency, for latency, is how long the answer is held back, give or
	// take Jitter (drawn evenly in [Latency-Jitter, Latency+Jitter]), and
	// On where: before its first byte (FirstByte) or between its head and
	// its body, so that its last byte comes that late (Whole).
	Latency time.Duration
	Jitter  time.Duration
	On      LatencyOn
	// Size and Gap, for slice, are the pieces the body is written in (the
	// last may be shorter) and the wait between two.
	Size int
	Gap  time.Duration
}

// Shapes reports whether the fault only changes how the answer travels
// (bandwidth, latency, slice): the whole answer arrives, so the route
// runs to its end and its effects are kept, whatever after: says.
func (f *Fault) Shapes() bool {
	switch f.Kind {
	case Bandwidth, Latency, Slice:
		return true
	}
	return false
}

// Always reports whether every request gets the fault.
func (f *Fault) Always() bool { return f.Chance >= 1 }

// SendsAnswer reports whether the fault sends (part of) the answer, so
// that the answer must be rendered even at arrival.
func (f *Fault) SendsAnswer() bool {
	switch f.Kind {
	case PartialBody, SlowBody, MalformedChunk, Bandwidth, Latency, Slice, Limit:
		return true
	}
	return false
}

// String describes f as written in its long form, leaving out what is at
// its default: "connection-reset", "slow-body over 5s in 10 chunks,
// after processing, chance 0.2".
func (f *Fault) String() string {
	s := string(f.Kind)
	switch f.Kind {
	case PartialBody:
		if f.Bytes >= 0 {
			s += " of " + strconv.Itoa(f.Bytes) + " bytes"
		}
	case SlowBody:
		s += " over " + f.Over.String() + " in " + strconv.Itoa(f.Chunks) + " chunks"
	case Bandwidth:
		s += " at " + strconv.Itoa(f.Rate) + " bytes/s"
	case Latency:
		s += " of " + f.Latency.String()
		if f.Jitter > 0 {
			s += " ± " + f.Jitter.String()
		}
		if f.On == Whole {
			s += " on the whole answer"
		}
	case Slice:
		s += " in " + strconv.Itoa(f.Size) + "-byte pieces"
		if f.Gap > 0 {
			s += " every " + f.Gap.String()
		}
	case Limit:
		s += " after " + strconv.Itoa(f.Bytes) + " bytes"
	}
	if f.After == AfterProcessing && !f.Shapes() {
		s += ", after processing"
	}
	if !f.Always() {
		s += ", chance " + strconv.FormatFloat(f.Chance, 'g', -1, 64)
	}
	return s
}

// FaultKind names how a fault breaks the exchange.
type FaultKind string

// The fault kinds, after WireMock's names for the same behaviours where it
// has them.
const (
	// ConnectionReset closes the connection with a TCP RST.
	ConnectionReset FaultKind = "connection-reset"
	// EmptyResponse closes the connection without writing anything.
	EmptyResponse FaultKind = "empty-response"
	// MalformedChunk sends the answer's status line and headers with
	// chunked encoding, then a broken chunk, then closes.
	MalformedChunk FaultKind = "malformed-chunk"
	// RandomData sends random bytes, then closes.
	RandomData FaultKind = "random-data"
	// PartialBody sends the status line, the headers with the full
	// Content-Length and part of the body, then closes.
	PartialBody FaultKind = "partial-body"
	// SlowBody sends the answer whole, its body dribbled in chunks over a
	// duration (WireMock's chunked dribble delay).
	SlowBody FaultKind = "slow-body"
	// Hang never answers: the request ends when the client leaves or the
	// server shuts down.
	Hang FaultKind = "hang"
	// Bandwidth sends the answer's body at Rate bytes per second, and
	// takes the request's body as slowly (Toxiproxy's bandwidth, at the
	// HTTP level: the answer still starts with its status line).
	Bandwidth FaultKind = "bandwidth"
	// Latency holds the answer back (Toxiproxy's latency): before its
	// first byte, or between its head and its body.
	Latency FaultKind = "latency"
	// Slice writes the body in pieces of Size bytes, Gap apart, each
	// flushed: clients that assume one read is the whole body break.
	Slice FaultKind = "slice"
	// Limit closes the connection after Bytes bytes of the answer as
	// written on the wire, status line and headers counted (Toxiproxy's
	// limit_data): a cut in the headers or in the body.
	Limit FaultKind = "limit"
)

// LatencyOn says where a latency fault's wait falls.
type LatencyOn string

// Where a latency fault waits.
const (
	FirstByte LatencyOn = "first-byte"
	Whole     LatencyOn = "whole"
)

// DefaultSlowChunks is how many pieces a slow-body sends when chunks: is
// not written.
const DefaultSlowChunks = 10

// FaultStage says how far a route runs before its fault.
type FaultStage string

// The stages a fault can strike at.
const (
	AfterArrival    FaultStage = "arrival"
	AfterProcessing FaultStage = "processing"
)

var (
	faults      = []string{string(ConnectionReset), string(EmptyResponse), string(MalformedChunk), string(RandomData), string(PartialBody), string(SlowBody), string(Hang), string(Bandwidth), string(Latency), string(Slice), string(Limit)}
	faultFields = []string{"kind", "after", "chance", "bytes", "over", "chunks", "rate", "latency", "jitter", "on", "size", "gap"}
	latencyOns  = []string{string(FirstByte), string(Whole)}
	faultStages = []string{string(AfterArrival), string(AfterProcessing)}
)

// Sequence says how a route picks one of its responses.
type Sequence struct {
	// Per, when set, keeps a separate position for each distinct value of
	// a request attribute; otherwise the position is shared by all calls.
	Per   *Attribute
	After After
}

// After says what a sequence does once its last response was served.
type After string

// The ways a sequence can continue.
const (
	RepeatLast After = "repeat-last"
	Cycle      After = "cycle"
)

// AttributeKind names the part of a request an attribute reads.
type AttributeKind string

// The request parts an attribute may read.
const (
	HeaderAttr AttributeKind = "header"
	QueryAttr  AttributeKind = "query"
	PathAttr   AttributeKind = "path"
	BodyAttr   AttributeKind = "body"
	// FormAttr reads a field of a form body by its key as sent, brackets
	// included: form.metadata[order_id].
	FormAttr AttributeKind = "form"
)

// Attribute is one value of a request: a header, a query parameter, a path
// variable, a field of the JSON body (a dotted path, numbers index
// arrays) or a field of a form body.
type Attribute struct {
	Kind AttributeKind
	Name string   // header (canonical), query parameter, path variable or form key
	Path []string // body field path
}

// String returns the attribute as written, e.g. header.Idempotency-Key.
func (a *Attribute) String() string {
	if a.Kind == BodyAttr {
		return "body." + strings.Join(a.Path, ".")
	}
	return string(a.Kind) + "." + a.Name
}

// Describe returns one line per condition, e.g. `header Idempotency-Key
// absent` or `body json {"currency":"JPY"}`, for listings and the admin API.
func (w When) Describe() []string {
	var out []string
	for _, h := range w.Headers {
		out = append(out, "header "+h.Name+" "+h.Cond.String())
	}
	for _, q := range w.Query {
		out = append(out, "query "+q.Name+" "+q.Cond.String())
	}
	if b := w.Body; b != nil {
		if b.Raw != nil {
			out = append(out, "body "+b.Raw.String())
		}
		if b.HasJSON {
			j, _ := json.Marshal(b.JSON)
			out = append(out, "body json "+string(j))
		}
		for _, f := range b.Form {
			out = append(out, "body form "+f.Name+" "+f.Cond.String())
		}
	}
	return out
}
