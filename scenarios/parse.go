package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/textproto"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The fields of each mapping in the format, in the order the README lists
// them (also the order "did you mean" considers them).
var (
	fileFields     = []string{"name", "description", "defaults", "cors", "collections", "routes", "fallback", "webhooks", "openapi", "session"}
	defaultsFields = []string{"headers", "delay", "idempotency", "template", "lock"}
	routeFields    = []string{"name", "description", "method", "path", "priority", "when", "operation", "respond", "responses", "sequence", "idempotency", "missing", "unmatched", "events", "refuse", "cases", "unknownIds", "lock", "scopeOf", "state"}
	whenFields     = []string{"headers", "query", "body"}
	conditionKinds = []string{"equals", "contains", "regex", "notRegex", "oneOf", "present", "absent"}
	bodyKinds      = []string{"json", "form", "equals", "contains", "regex"}
	responseFields = []string{"status", "headers", "body", "bodyFile", "delay", "fault", "template", "save", "load", "list", "delete", "missing", "proxy", "envelope", "override", "idempotency"}
	proxyFields    = []string{"url", "timeout", "headers"}
	proxyHeaders   = []string{"set", "remove"}
	delayFields    = []string{"min", "max", "median", "sigma"}
	// faultFields and faultStages are in model.go, next to the kinds.
	sequenceFields  = []string{"per", "after"}
	afterValues     = []string{string(RepeatLast), string(Cycle)}
	attributeKinds  = []string{string(HeaderAttr), string(QueryAttr), string(PathAttr), string(BodyAttr), string(FormAttr)}
	adminPathPrefix = "/__admin"
)

// fileDecoder decodes one scenario file.
type fileDecoder struct {
	decoder
	// readBody reads a bodyFile given relative to the scenario file; it
	// returns an error message fit for the user.
	readBody func(rel string) ([]byte, string, error)
	defaults defaults
	// defaultsNode feeds route identities: a change of defaults changes
	// every route of the file.
	defaultsNode *yaml.Node
	// bodies collects the body files read for the route being decoded,
	// for its identity.
	bodies bytes.Buffer
	// names are the route names written, also of routes with errors, so
	// that a duplicate name is reported even when its twin is broken.
	names []nameAt
	// operation says the route being decoded names an OpenAPI operation
	// (operation:), whose responses patch the generated answer.
	operation bool
	// chunked says the routes: list is decoded apart, in slices
	// (decodeInChunks): the head decodeFile sees has routes: with nothing.
	chunked bool
}

type nameAt struct {
	name string
	pos  Pos
}

type defaults struct {
	headers []Header
	delay   Delay
	// idempotency applies to every route without a block of its own.
	idempotency *Idempotency
	// lock is every route's wait and timeout answer (not its names).
	lock *Lock
}

// parsed is what one file contributes to a set.
type parsed struct {
	file        *File
	fallback    *Response
	fallbackPos Pos
	seeds       []*Seed
}

// servesNone says how a file serves no routes on purpose. A file with
// nothing in it, or that stops at or before its routes: key, is refused:
// it is what a save in progress or cut short leaves on disk, and a reload
// that took it would stop serving the file's routes; routes: [] cannot be
// a cut (its ] closes it).
const servesNone = "(routes: [] for a file that serves none)"

func (d *fileDecoder) decodeFile(doc *yaml.Node, path string) parsed {
	out := parsed{file: &File{Path: path}}
	root := doc
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			d.errs = append(d.errs, &Error{Pos: Pos{File: d.file, Line: 1, Col: 1}, Msg: "the file is empty: want a mapping with routes: " + servesNone})
			return out
		}
		root = doc.Content[0]
	}
	fs, ok := d.fields(root, "", fileFields...)
	if !ok {
		return out
	}
	if p, ok := fs["name"]; ok {
		out.file.Name, _ = d.str(p.val, "name")
	}
	if p, ok := fs["description"]; ok {
		d.str(p.val, "description")
	}
	if p, ok := fs["session"]; ok {
		if v, ok := d.str(p.val, "session"); ok {
			if !sessionRE.MatchString(v) {
				d.fail(p.val, "session", "%q is not a session name: want 1 to 64 letters, digits, '.', '_' or '-'", v)
			} else {
				out.file.Session = v
			}
		}
	}
	if p, ok := fs["defaults"]; ok {
		d.decodeDefaults(p.val)
		d.defaultsNode = p.val
	}
	if p, ok := fs["cors"]; ok {
		out.file.CORS = d.cors(p.val)
	}
	if p, ok := fs["collections"]; ok {
		out.seeds = d.seeds(p.val)
	}
	if p, ok := fs["openapi"]; ok {
		out.file.OpenAPI = d.openapi(p.key, p.val)
	}
	if p, ok := fs["webhooks"]; ok {
		out.file.Webhooks = d.webhooks(p.val)
	}
	if p, ok := fs["fallback"]; ok {
		d.prefix = "fallback: "
		out.fallback = d.response(p.val, "", nil)
		out.fallbackPos = d.pos(p.key)
		d.prefix = ""
	}
	p, ok := fs["routes"]
	if !ok {
		if out.fallback == nil && out.file.Webhooks == nil && out.file.OpenAPI == nil {
			d.fail(root, "", "no routes: (a scenario file needs routes, a fallback, an openapi: block, or some of them; routes: [] for a file that serves none)")
		}
		return out
	}
	list := d.resolve(p.val)
	if list.Kind != yaml.SequenceNode {
		if list.Kind == yaml.ScalarNode && list.ShortTag() == "!!null" {
			// What a write cut short after "routes:" leaves, which
			// would otherwise serve none of the file's routes until
			// the rest of the write came: a file that serves none
			// says routes: []. (A chunked decode's head has the list
			// cut out: it decodes apart.)
			if !d.chunked {
				d.fail(list, "routes", "is empty: want a list of routes "+servesNone)
			}
			return out
		}
		d.fail(list, "routes", "want a list of routes, got %s", describe(list))
		return out
	}
	for i, rn := range list.Content {
		if r := d.route(rn, i); r != nil {
			out.file.Routes = append(out.file.Routes, r)
		}
		// A decoded route's nodes can go (aliases keep what they point
		// to): at 100,000 routes the node tree and the routes decoded
		// from it no longer peak together.
		list.Content[i] = nil
	}
	return out
}

func (d *fileDecoder) decodeDefaults(n *yaml.Node) {
	fs, ok := d.fields(n, "defaults", defaultsFields...)
	if !ok {
		return
	}
	// template: true makes the defaults' header values templates (a
	// Request-Id per answer, a version echoed from the request), rendered
	// on every answer of the file, the routes an openapi: block generates
	// included.
	tmpl := false
	if p, ok := fs["template"]; ok {
		tmpl, _ = d.boolean(p.val, "defaults.template")
	}
	if p, ok := fs["headers"]; ok {
		d.defaults.headers = d.responseHeaders(p.val, "defaults.headers", tmpl)
	}
	if p, ok := fs["delay"]; ok {
		d.defaults.delay, _ = d.delay(p.val, "defaults.delay")
	}
	if p, ok := fs["idempotency"]; ok {
		// Decoded once for the file; with no path variables, since each
		// route has its own.
		d.defaults.idempotency = d.idempotency(p.val, "defaults.idempotency", nil)
	}
	if p, ok := fs["lock"]; ok {
		d.defaults.lock = d.lock(p.val, "defaults.lock", nil, true)
	}
}

// sessionRE is what a session name may be: it travels in a header and
// in a path segment (/__session/NAME/...), unescaped in both.
var sessionRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ValidSession reports whether name is a session name.
func ValidSession(name string) bool { return sessionRE.MatchString(name) }

var tokenRE = regexp.MustCompile("^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$")

func (d *fileDecoder) route(n *yaml.Node, idx int) *Route {
	d.prefix = fmt.Sprintf("routes[%d]: ", idx)
	if name := peekName(d.resolve(n)); name != "" {
		d.prefix = fmt.Sprintf("route %q: ", name) // also for fields written before name:
	}
	defer func() { d.prefix = "" }()
	d.bodies.Reset()
	before := len(d.errs)
	fs, ok := d.fields(n, "", routeFields...)
	if !ok {
		return nil
	}
	// After a misspelt field, "path: is required" or "needs respond:" only
	// repeats the same mistake.
	misspelt := len(d.errs) > before
	r := &Route{Pos: d.pos(d.resolve(n))}
	if p, ok := fs["name"]; ok {
		if name, ok := d.str(p.val, "name"); ok {
			if strings.TrimSpace(name) == "" {
				d.fail(p.val, "name", "must not be empty")
			} else {
				r.Name, r.Named = name, true
				d.names = append(d.names, nameAt{name, r.Pos})
			}
		}
	}
	if p, ok := fs["description"]; ok {
		d.str(p.val, "description")
	}
	if p, ok := fs["method"]; ok {
		r.Methods = d.methods(p.val)
	}
	if p, ok := fs["path"]; ok {
		d.path(p.val, r)
	} else if !misspelt {
		d.fail(d.resolve(n), "", "path: is required")
	}
	if p, ok := fs["priority"]; ok {
		r.Priority, _ = d.integer(p.val, "priority")
	}
	if p, ok := fs["when"]; ok {
		r.When = d.when(p.val)
	}
	if p, ok := fs["unmatched"]; ok {
		r.Unmatched, _ = d.boolean(p.val, "unmatched")
	}
	if p, ok := fs["operation"]; ok {
		if name, ok := d.str(p.val, "operation"); ok {
			if strings.TrimSpace(name) == "" {
				d.fail(p.val, "operation", "must not be empty; want an operationId of the file's openapi: spec")
			} else {
				r.OperationName, r.OperationPos = name, d.pos(d.resolve(p.val))
			}
		}
	}
	d.operation = r.OperationName != ""
	defer func() { d.operation = false }()
	respond, hasRespond := fs["respond"]
	responses, hasResponses := fs["responses"]
	seq, hasSeq := fs["sequence"]
	switch {
	case hasRespond && hasResponses:
		d.fail(responses.key, "", "respond: and responses: exclude each other (respond: is one response, responses: a sequence)")
	case hasRespond:
		if hasSeq {
			d.fail(seq.key, "sequence", "needs responses: (a list), not respond:")
		}
		if resp := d.response(respond.val, "respond", r.Vars); resp != nil {
			r.Responses = []*Response{resp}
		}
	case hasResponses:
		r.Responses = d.responseList(responses.val, r.Vars)
		r.Sequence = &Sequence{After: RepeatLast}
		if hasSeq {
			d.sequence(seq.val, r)
		}
	case d.operation:
		// The operation's answer as generated, with the file's defaults.
		r.Responses = []*Response{{Pos: r.Pos, Status: http.StatusOK, Headers: mergeHeaders(d.defaults.headers, nil), Delay: d.defaults.delay}}
	case !misspelt:
		d.fail(d.resolve(n), "", "needs respond: (one response) or responses: (a sequence)")
	}
	if p, ok := fs["scopeOf"]; ok {
		r.ScopeOf = d.scopeOf(p) // before missing:, its answer too
	}
	if p, ok := fs["missing"]; ok {
		d.routeMissing(p, r)
	}
	if p, ok := fs["idempotency"]; ok {
		r.Idempotency = d.idempotency(p.val, "idempotency", r.Vars)
	} else if id := d.defaults.idempotency; id != nil {
		cp := *id
		r.Idempotency = &cp
	}
	if r.Idempotency != nil && r.Idempotency.Group == "" {
		r.Idempotency.Group = defaultGroup(r)
	}
	if p, ok := fs["events"]; ok {
		r.Events = d.events(p.val, "events")
	}
	if p, ok := fs["lock"]; ok {
		r.Lock = d.lock(p.val, "lock", d.defaults.lock, false)
	} else {
		r.Lock = d.defaults.lock
	}
	if p, ok := fs["state"]; ok {
		r.State = d.routeState(p.val)
	}
	if p, ok := fs["refuse"]; ok {
		if d.operation {
			r.Refuse = d.refusals(p.val, r.Vars)
		} else {
			d.fail(p.key, "refuse", "goes with operation: (it tests the object the operation acts on, as stored); a route of its own can load: the item and answer by its conditions")
		}
	}
	if p, ok := fs["unknownIds"]; ok {
		if !d.operation {
			d.fail(p.key, "unknownIds", "goes with operation: (what the operation does with an id never created); a route of its own answers what it says")
		} else if v, ok := d.str(p.val, "unknownIds"); ok {
			if v != "create" {
				d.fail(p.val, "unknownIds", "want create (an id never created is made from the spec and stored, then acted on), got %q; the openapi: block's unknownIds: (404 or generate) is every route's", v)
			} else {
				r.CreateUnknown, r.CreateUnknownPos = true, d.pos(p.key)
			}
		}
	}
	if p, ok := fs["cases"]; ok {
		if d.operation {
			r.Cases = d.cases(p.val, r.Vars)
		} else {
			d.fail(p.key, "cases", "goes with operation: (it tests the object the operation acts on, as stored); a route of its own can load: the item and answer by its conditions")
		}
	}
	if d.operation && slices.ContainsFunc(r.Responses, func(x *Response) bool { return x != nil && x.Proxy != nil }) {
		for _, k := range []string{"cases", "unknownIds"} {
			if p, ok := fs[k]; ok {
				d.fail(p.key, k, "does not go with a proxy: answer (the upstream answers; the operation checks the request and the upstream's answer)")
			}
		}
	}
	if len(d.errs) > before {
		return nil
	}
	r.Identity = d.identity(n, d.bodies.Bytes())
	return r
}

// scopeOf decodes a route's scopeOf: { resource, id } (see ScopeOf);
// package openapi checks the resource against the set's documents.
func (d *fileDecoder) scopeOf(p pair) *ScopeOf {
	before := len(d.errs)
	fs, ok := d.fields(p.val, "scopeOf", "resource", "id")
	if !ok || len(d.errs) > before {
		return nil // a misspelt field: "id: is required" would repeat it
	}
	res, ok := fs["resource"]
	if !ok {
		d.fail(d.resolve(p.val), "scopeOf", "resource: is required: the resource of the route's OpenAPI document whose stored object the request acts for (checkout.session)")
		return nil
	}
	name, ok := d.str(res.val, "scopeOf.resource")
	if !ok {
		return nil
	}
	if name == "" {
		d.fail(d.resolve(res.val), "scopeOf.resource", "want a resource's name (its x-resourceId: checkout.session), got an empty string")
		return nil
	}
	so := &ScopeOf{Pos: d.pos(d.resolve(res.val)), Resource: name}
	if so.ID = d.itemID(p.val, fs, "scopeOf"); so.ID == nil {
		return nil
	}
	return so
}

// refusals decodes a route's refuse: list (see Route.Refuse).
func (d *fileDecoder) refusals(n *yaml.Node, vars []string) []*Refusal {
	return d.itemList(n, "refuse", "refusals", "the answer instead of the operation's", func(p pair, field string) *Response {
		return d.refusalResponse(p, field, vars)
	})
}

// cases decodes a route's cases: list (see Route.Cases).
func (d *fileDecoder) cases(n *yaml.Node, vars []string) []*Refusal {
	return d.itemList(n, "cases", "cases", "the response the operation answers with in this case", func(p pair, field string) *Response {
		return d.caseResponse(p, field, vars)
	})
}

// itemList decodes a list of { when: { item: <partial JSON>, holds: <template> }, respond }
// under key (refuse: or cases:), each respond: by response.
func (d *fileDecoder) itemList(n *yaml.Node, key, plural, respondIs string, response func(pair, string) *Response) []*Refusal {
	n = d.resolve(n)
	switch {
	case n.Kind != yaml.SequenceNode:
		d.fail(n, key, "want a list of %s, each { when: { item: { status: succeeded } }, respond: { status: 400, ... } }, got %s", plural, describe(n))
		return nil
	case len(n.Content) == 0:
		d.fail(n, key, "the list is empty; leave %s: out, or give it an entry { when: { item: { status: succeeded } }, respond: ... }", key)
		return nil
	}
	out := make([]*Refusal, 0, len(n.Content))
	for i, en := range n.Content {
		field := fmt.Sprintf("%s[%d]", key, i)
		before := len(d.errs)
		fs, ok := d.fields(en, field, "when", "respond")
		if !ok {
			continue
		}
		rf := &Refusal{Pos: d.pos(d.resolve(en))}
		if w, ok := fs["when"]; !ok {
			if len(d.errs) == before {
				d.fail(d.resolve(en), field, "when: is required: what the stored object must contain, e.g. when: { item: { status: succeeded } }")
			}
		} else if ws, ok := d.fields(w.val, join(field, "when"), "item", "holds"); ok {
			it, hasItem := ws["item"]
			h, hasHolds := ws["holds"]
			if !hasItem && !hasHolds && len(d.errs) == before {
				d.fail(d.resolve(w.val), join(field, "when"), "item: or holds: is required: what the stored object must contain, e.g. { item: { status: succeeded } }, or a template that renders true, e.g. { holds: '{{ gt (int .Request.Form.amount) 100 }}' }")
			}
			if hasItem {
				f := join(field, "when.item")
				if vn := d.resolve(it.val); vn.Kind != yaml.MappingNode {
					d.fail(vn, f, "want a mapping of the fields the stored object must have, e.g. { status: succeeded }, got %s", describe(vn))
				} else {
					rf.Item, _ = d.value(it.val, f, 0)
				}
			}
			if hasHolds {
				f := join(field, "when.holds")
				text, ok := d.str(h.val, f)
				switch {
				case !ok:
				case !strings.Contains(text, "{{"):
					d.fail(d.resolve(h.val), f, "want a template that renders true or false, e.g. '{{ gt (int .Request.Form.amount) 100 }}', got the plain text %q", text)
				default:
					t, err := parseTemplate(text)
					if err != nil {
						d.templateError(d.resolve(h.val), f, err)
						break
					}
					rf.Holds = t
				}
			}
		}
		if rp, ok := fs["respond"]; !ok {
			if len(d.errs) == before {
				d.fail(d.resolve(en), field, "respond: is required: %s", respondIs)
			}
		} else {
			rf.Response = response(rp, join(field, "respond"))
		}
		if len(d.errs) == before {
			out = append(out, rf)
		}
	}
	return out
}

// refusalResponse decodes a refusal's respond:, which answers in place of
// the operation and so does no work of its own, and takes the delay and
// fault of the route's response (drawn before the stored object is read).
func (d *fileDecoder) refusalResponse(p pair, field string, vars []string) *Response {
	if kv, ok := d.firstOf(p.val, field, "delay", "fault", "save", "load", "list", "delete", "proxy", "envelope", "override"); ok {
		if k := kv.key.Value; k == "delay" || k == "fault" {
			d.fail(kv.key, join(field, k), "is the route's: the %s of the route's response applies to its refusals too", k)
		} else {
			d.fail(kv.key, join(field, k), "does not go with a refusal: it answers instead of the operation and does nothing else")
		}
		return nil
	}
	return d.missingResponse(p.val, field, vars)
}

// caseResponse decodes a case's respond:, a response of the route's
// operation (body:, override:, envelope: with its status:, missing:)
// that takes the delay and fault of the route's response, drawn before
// the stored object is read.
func (d *fileDecoder) caseResponse(p pair, field string, vars []string) *Response {
	if kv, ok := d.firstOf(p.val, field, "delay", "fault", "headers", "load", "list", "save"); ok {
		switch k := kv.key.Value; k {
		case "load", "list":
			d.fail(kv.key, join(field, k), "does not go with a case: the operation acts on the stored object the case tested")
		case "save":
			d.fail(kv.key, join(field, k), "is the route's: write it on the route's respond:, whose save: applies to its cases too")
		default:
			d.fail(kv.key, join(field, k), "is the route's: the %s of the route's response applies to its cases too", k)
		}
		return nil
	}
	return d.response(p.val, field, vars)
}

// firstOf returns the first of the mapping n's keys, merge keys expanded
// (<<: *base counts), that is one of keys. What is wrong with the mapping
// itself is left to the decoder that reads it next, which reports it once.
func (d *fileDecoder) firstOf(n *yaml.Node, field string, keys ...string) (pair, bool) {
	before := len(d.errs)
	ps, _ := d.pairs(n, field)
	d.errs = d.errs[:before]
	for _, kv := range ps {
		if slices.Contains(keys, kv.key.Value) {
			return kv, true
		}
	}
	return pair{}, false
}

// peekName returns the scalar value of a mapping's name: key, if any.
func peekName(n *yaml.Node) string {
	if n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k, v := n.Content[i], n.Content[i+1]; k.Value == "name" && v.Kind == yaml.ScalarNode {
			return strings.TrimSpace(v.Value)
		}
	}
	return ""
}

func (d *fileDecoder) methods(n *yaml.Node) []string {
	n = d.resolve(n)
	nodes := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		nodes = n.Content
	}
	var out []string
	for i, e := range nodes {
		field := "method"
		if n.Kind == yaml.SequenceNode {
			field = fmt.Sprintf("method[%d]", i)
		}
		m, ok := d.str(e, field)
		if !ok {
			continue
		}
		m = strings.TrimSpace(m)
		if strings.EqualFold(m, "ANY") || m == "*" {
			return nil
		}
		if msg := checkMethod(m); msg != "" {
			d.fail(d.resolve(e), field, "%s", msg)
			continue
		}
		if !contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// commonMethods are the methods of RFC 9110 and PATCH (RFC 5789): the ones
// a misspelling most likely meant.
var commonMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"}

// registeredMethods are the other methods of the IANA HTTP Method Registry
// (WebDAV, CalDAV, QUERY...), known so that "propfind" can be told to be
// PROPFIND.
var registeredMethods = []string{"ACL", "BASELINE-CONTROL", "BIND", "CHECKIN", "CHECKOUT", "COPY", "LABEL", "LINK",
	"LOCK", "MERGE", "MKACTIVITY", "MKCALENDAR", "MKCOL", "MKREDIRECTREF", "MKWORKSPACE", "MOVE", "ORDERPATCH",
	"PRI", "PROPFIND", "PROPPATCH", "QUERY", "REBIND", "REPORT", "SEARCH", "UNBIND", "UNCHECKOUT", "UNLINK",
	"UNLOCK", "UPDATE", "UPDATEREDIRECTREF", "VERSION-CONTROL"}

// checkMethod returns why m cannot be a route's method, or "". The rule:
//
//   - A method is a token (RFC 9110 §9.1), so "GET /x" or "" is refused.
//   - Methods are case-sensitive (RFC 9110 §9.1) and a request's method is
//     compared as sent, so "get" would never match a GET: a method that
//     differs only in case from a common or registered one is refused
//     with the right spelling.
//   - A method one edit (a letter added, dropped, changed, or two neighbours
//     swapped) from a common one, ignoring case, is a typo that could never
//     match: GTE, PSOT, PUTT are refused with "did you mean".
//   - Any other token is an extension method and is kept as written:
//     PURGE, PROPFIND, M-SEARCH. No registered method is one edit from a
//     common one, so none of them is refused by the rule above.
func checkMethod(m string) string {
	if !tokenRE.MatchString(m) {
		return fmt.Sprintf("%q is not an HTTP method (a method is one word of letters, digits and !#$%%&'*+-.^_`|~)", m)
	}
	if contains(commonMethods, m) || contains(registeredMethods, m) {
		return ""
	}
	upper := strings.ToUpper(m)
	if contains(commonMethods, upper) || contains(registeredMethods, upper) {
		return fmt.Sprintf("unknown method %q: methods are case-sensitive (did you mean %q?)", m, upper)
	}
	for _, c := range commonMethods {
		if oneEdit(upper, c) {
			return fmt.Sprintf("unknown method %q (did you mean %q?)", m, c)
		}
	}
	return ""
}

// oneEdit reports whether a and b differ by exactly one insertion,
// deletion, substitution or swap of adjacent bytes.
func oneEdit(a, b string) bool {
	if a == b {
		return false
	}
	if len(a) == len(b) {
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		if a[i+1:] == b[i+1:] {
			return true // substitution
		}
		return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:] // swap
	}
	if len(a) < len(b) {
		a, b = b, a
	}
	if len(a) != len(b)+1 {
		return false
	}
	i := 0
	for i < len(b) && a[i] == b[i] {
		i++
	}
	return a[i+1:] == b[i:]
}

func (d *fileDecoder) path(n *yaml.Node, r *Route) {
	path, ok := d.str(n, "path")
	if !ok {
		return
	}
	n = d.resolve(n)
	r.Path, r.PathPos = path, d.pos(n)
	if path == adminPathPrefix || strings.HasPrefix(path, adminPathPrefix+"/") {
		d.fail(n, "path", "%s is reserved for the admin API", adminPathPrefix)
		return
	}
	t, off, err := CompilePath(path)
	if err != nil {
		at := *n
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
			off++
		}
		at.Column += off
		d.fail(&at, "path", "%v", err)
		return
	}
	r.Vars, r.Template = t.Vars, t
}

func (d *fileDecoder) when(n *yaml.Node) When {
	var w When
	fs, ok := d.fields(n, "when", whenFields...)
	if !ok {
		return w
	}
	if p, ok := fs["headers"]; ok {
		w.Headers = d.fieldConditions(p.val, "when.headers", "header")
	}
	if p, ok := fs["query"]; ok {
		w.Query = d.fieldConditions(p.val, "when.query", "query parameter")
	}
	if p, ok := fs["body"]; ok {
		w.Body = d.bodyCondition(p.val, "when.body")
	}
	return w
}

// headerName checks a header name written as a mapping key and returns it
// in canonical form; seen holds the names so far, which ignore case.
func (d *fileDecoder) headerName(key *yaml.Node, field string, seen map[string]bool) (string, bool) {
	if !tokenRE.MatchString(key.Value) {
		d.fail(key, field, "%q is not a valid header name", key.Value)
		return "", false
	}
	name := textproto.CanonicalMIMEHeaderKey(key.Value)
	if seen[name] {
		d.fail(key, field, "header %s appears twice (header names ignore case)", name)
		return "", false
	}
	seen[name] = true
	return name, true
}

// fieldConditions decodes name → condition for what: "header", "query
// parameter" or "form field". Header names are matched without regard to
// case, so two spellings of one header are a duplicate.
func (d *fileDecoder) fieldConditions(n *yaml.Node, field, what string) []Field {
	ps, ok := d.pairs(n, field)
	if !ok {
		return nil
	}
	var out []Field
	seen := map[string]bool{}
	for _, p := range ps {
		name := p.key.Value
		f := join(field, name)
		if what == "header" {
			var ok bool
			if name, ok = d.headerName(p.key, f, seen); !ok {
				continue
			}
		} else if name == "" {
			d.fail(p.key, f, "empty %s name", what)
			continue
		}
		if c, ok := d.condition(p.val, f); ok {
			out = append(out, Field{Name: name, Cond: c})
		}
	}
	return out
}

// condition decodes a scalar (an exact value) or a mapping of condition
// kinds.
func (d *fileDecoder) condition(n *yaml.Node, field string) (Condition, bool) {
	n = d.resolve(n)
	c := Condition{Pos: d.pos(n)}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			d.fail(n, field, "want a value or a condition such as {present: true}, got null")
			return c, false
		}
		v := n.Value
		c.Equals = &v
		return c, true
	case yaml.SequenceNode:
		d.fail(n, field, "a list is not a condition; for alternatives write {oneOf: [...]}")
		return c, false
	}
	ps, ok := d.pairs(n, field)
	if !ok {
		return c, false
	}
	if len(ps) == 0 {
		d.fail(n, field, "empty condition; want one of %s", strings.Join(conditionKinds, ", "))
		return c, false
	}
	good := true
	var presence, absence *yaml.Node
	for _, p := range ps {
		kind, f := p.key.Value, join(field, p.key.Value)
		switch kind {
		case "equals", "contains":
			s, ok := d.str(p.val, f)
			good = good && ok
			if kind == "equals" {
				c.Equals = &s
			} else {
				c.Contains = &s
			}
		case "regex":
			c.Regex, ok = d.regex(p.val, f)
			good = good && ok
		case "notRegex":
			c.NotRegex, ok = d.regex(p.val, f)
			good = good && ok
		case "oneOf":
			list := d.resolve(p.val)
			if list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
				d.fail(list, f, "want a non-empty list of values, got %s", describe(list))
				good = false
				continue
			}
			vals, ok := d.strList(list, f)
			good = good && ok
			c.OneOf = vals
		case "present", "absent":
			b, ok := d.boolean(p.val, f)
			if !ok {
				good = false
				continue
			}
			if (kind == "present") == b {
				c.Presence, presence = Present, p.key
			} else {
				c.Presence, absence = Absent, p.key
			}
		default:
			d.unknown(p.key, field, "condition", kind, conditionKinds)
			good = false
		}
	}
	if presence != nil && absence != nil {
		d.fail(absence, field, "present and absent contradict each other")
		good = false
	}
	if absence != nil && (c.Equals != nil || c.Contains != nil || c.Regex != nil || c.NotRegex != nil || c.OneOf != nil) {
		d.fail(absence, field, "absent cannot be combined with a test on the value")
		good = false
	}
	return c, good
}

func (d *fileDecoder) regex(n *yaml.Node, field string) (*regexp.Regexp, bool) {
	s, ok := d.str(n, field)
	if !ok {
		return nil, false
	}
	re, err := regexp.Compile(s)
	if err != nil {
		d.fail(d.resolve(n), field, "bad regex: %s", regexpMessage(err))
		return nil, false
	}
	return re, true
}

func (d *fileDecoder) bodyCondition(n *yaml.Node, field string) *BodyCondition {
	n = d.resolve(n)
	b := &BodyCondition{Pos: d.pos(n)}
	if n.Kind == yaml.ScalarNode {
		c, ok := d.condition(n, field)
		if !ok {
			return nil
		}
		b.Raw = &c
		return b
	}
	ps, ok := d.pairs(n, field)
	if !ok {
		return nil
	}
	raw := Condition{Pos: b.Pos}
	hasRaw, good := false, true
	var jsonKey, formKey *yaml.Node
	for _, p := range ps {
		kind, f := p.key.Value, join(field, p.key.Value)
		switch kind {
		case "json":
			if vn := d.resolve(p.val); vn.Kind == yaml.ScalarNode && vn.ShortTag() == "!!str" {
				// A string here would only ever match a body that is that
				// JSON string, never the object pasted inside it.
				d.jsonString(vn, f)
				good = false
				continue
			}
			v, ok := d.value(p.val, f, 0)
			b.JSON, b.HasJSON, b.JSONPos = v, ok, d.pos(d.resolve(p.val))
			good, jsonKey = good && ok, p.key
		case "form":
			before := len(d.errs)
			b.Form, formKey = d.fieldConditions(p.val, f, "form field"), p.key
			if len(d.errs) > before {
				good = false
			} else if len(b.Form) == 0 {
				d.fail(d.resolve(p.val), f, "no fields; want form fields and their conditions, e.g. form: { currency: usd }")
				good = false
			}
		case "equals", "contains":
			s, ok := d.str(p.val, f)
			good = good && ok
			if kind == "equals" {
				raw.Equals = &s
			} else {
				raw.Contains = &s
			}
			hasRaw = true
		case "regex":
			re, ok := d.regex(p.val, f)
			raw.Regex, hasRaw, good = re, true, good && ok
		default:
			d.unknown(p.key, field, "body condition", kind, bodyKinds)
			good = false
		}
	}
	if jsonKey != nil && formKey != nil {
		d.fail(formKey, join(field, "form"), "json: and form: exclude each other (a body is JSON or a form, never both)")
		good = false
	}
	if !good {
		return nil
	}
	if len(ps) == 0 {
		d.fail(n, field, "empty body condition; want one of %s", strings.Join(bodyKinds, ", "))
		return nil
	}
	if hasRaw {
		b.Raw = &raw
	}
	return b
}

// jsonString refuses a string given as a JSON condition. JSON is YAML, so
// JSON pasted inside quotes works once the quotes go.
func (d *fileDecoder) jsonString(n *yaml.Node, field string) {
	if t := strings.TrimSpace(n.Value); (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Valid([]byte(t)) {
		doc := "{...}"
		if len(t) <= 60 && !strings.ContainsAny(t, "\n\r") {
			doc = t
		}
		d.fail(n, field, "want the JSON document, not a string holding it; write json: %s without quotes (JSON is YAML), or use equals: to compare the body as text", doc)
		return
	}
	d.fail(n, field, "want a mapping or a list to match the JSON body against, got the string %s; write the JSON as YAML, or use equals: or contains: for text", strconv.Quote(n.Value))
}

func (d *fileDecoder) responseList(n *yaml.Node, vars []string) []*Response {
	n = d.resolve(n)
	if n.Kind != yaml.SequenceNode {
		d.fail(n, "responses", "want a list of responses, got %s", describe(n))
		return nil
	}
	if len(n.Content) == 0 {
		d.fail(n, "responses", "the list is empty; a sequence needs at least one response")
		return nil
	}
	out := make([]*Response, 0, len(n.Content))
	for i, rn := range n.Content {
		if r := d.response(rn, fmt.Sprintf("responses[%d]", i), vars); r != nil {
			out = append(out, r)
		}
	}
	return out
}

func (d *fileDecoder) response(n *yaml.Node, field string, vars []string) *Response {
	before := len(d.errs)
	fs, ok := d.fields(n, field, responseFields...)
	if !ok {
		return nil
	}
	r := &Response{Pos: d.pos(d.resolve(n)), Status: http.StatusOK, Delay: d.defaults.delay}
	if p, ok := fs["template"]; ok {
		r.Template, _ = d.boolean(p.val, join(field, "template"))
	}
	if p, ok := fs["status"]; ok {
		f := join(field, "status")
		if s, ok := d.integer(p.val, f); ok {
			if s < 200 || s > 599 {
				d.fail(d.resolve(p.val), f, "status %d is not between 200 and 599", s)
			}
			r.Status = s
		}
	}
	var own []Header
	if p, ok := fs["headers"]; ok {
		own = d.responseHeaders(p.val, join(field, "headers"), r.Template)
	}
	r.Headers = mergeHeaders(d.defaults.headers, own)
	if p, ok := fs["delay"]; ok {
		r.Delay, _ = d.delay(p.val, join(field, "delay"))
	}
	var faultNode *yaml.Node
	if p, ok := fs["fault"]; ok {
		r.Fault = d.fault(p.val, join(field, "fault"))
		faultNode = d.resolve(p.val)
	}
	body, hasBody := fs["body"]
	file, hasFile := fs["bodyFile"]
	var contentType string
	switch {
	case hasBody && hasFile:
		d.fail(file.key, join(field, "bodyFile"), "body: and bodyFile: exclude each other")
	case hasBody:
		contentType = d.body(body.val, join(field, "body"), r)
	case hasFile:
		contentType = d.bodyFile(file.val, join(field, "bodyFile"), r)
	}
	if p, ok := fs["idempotency"]; ok {
		if d.operation {
			d.fail(p.key, join(field, "idempotency"), "does not go with an answer of operation: (the operation has stored what it made); write it on a refusal's or missing:'s respond:, which answer instead of the operation")
		} else {
			r.Idempotency = KeyEffect(d.choice(p.val, field, "idempotency", keyEffects))
		}
	}
	if d.operation {
		d.operationResponse(fs, field, r)
	} else {
		if p, ok := fs["envelope"]; ok {
			d.fail(p.key, join(field, "envelope"), "goes with operation: (it wraps the operation's answer, .Answer); a route of its own writes its answer in body:")
		}
		if p, ok := fs["override"]; ok {
			d.fail(p.key, join(field, "override"), "goes with operation: (it is laid on the operation's answer after the request's values); a route of its own writes its answer in body:")
		}
	}
	d.collectionOps(fs, field, r, hasBody || hasFile, vars)
	if p, ok := fs["proxy"]; ok {
		r.Proxy = d.proxy(p.val, join(field, "proxy"))
		d.proxyAlone(fs, field, r)
	}
	if r.Fault != nil {
		d.faultFits(faultNode, join(field, "fault"), r)
	}
	if len(r.Body) > 0 || r.BodyTemplate != nil || r.JSONTemplate != nil {
		if r.Status == http.StatusNoContent || r.Status == http.StatusNotModified {
			d.fail(d.resolve(n), field, "a %d response cannot have a body", r.Status)
		}
		if _, set := r.Header("Content-Type"); !set && contentType != "" {
			r.Headers = append(r.Headers, Header{Name: "Content-Type", Value: contentType})
		}
	}
	if len(d.errs) > before {
		return nil
	}
	return r
}

// operationResponse checks a response of a route that names an
// operation: the operation makes the answer, so the response may add a
// body: mapping whose fields are laid on that answer, headers, a delay, a
// fault, missing:, load: (an item of a collection of the file's,
// answered when there is one, the operation answering an id not found),
// and list: (a collection of the file's, answered by the route's body,
// narrowed by the operation's filters, its cursor errors the
// operation's), and nothing else that makes an answer of its own.
func (d *fileDecoder) operationResponse(fs map[string]pair, field string, r *Response) {
	envelope, wraps := fs["envelope"]
	if _, proxies := fs["proxy"]; proxies {
		return // the upstream makes the answer, and the operation checks it (proxyAlone)
	}
	for _, k := range []string{"bodyFile", "delete", "status"} {
		if p, ok := fs[k]; ok && (k != "status" || !wraps) {
			d.fail(p.key, join(field, k), "does not go with operation: (the operation makes the answer; body: a mapping is laid on it, load: answers a stored item first, list: answers with body:, envelope: wraps it, with its own status:; proxy: has a real upstream make it, which the operation checks)")
		}
	}
	override, overrides := fs["override"]
	_, lists := fs["list"]
	_, loads := fs["load"]
	for _, k := range []string{"envelope", "override"} {
		switch p, ok := fs[k]; {
		case !ok:
		case lists:
			d.fail(p.key, join(field, k), "does not go with list: (body: renders the list)")
		case loads:
			d.fail(p.key, join(field, k), "does not go with load: (an item found is answered as it was saved)")
		}
	}
	if lists {
		return // the body renders the list, as on any route
	}
	if loads {
		overrides, wraps = false, false
	}
	if overrides {
		f := join(field, "override")
		if n := d.resolve(override.val); n.Kind != yaml.MappingNode {
			d.fail(n, f, "is laid on the operation's answer after the request's values (its fields replace what the request sent): want a mapping, e.g. { payment_method: null }, got %s", describe(n))
		} else if r.Template {
			// A template, as body: is: it sees .Request and .Item
			// ({ currency: '{{ lower .Request.Form.currency }}' }).
			r.OverrideTemplate, _ = d.jsonTemplate(n, f)
		} else if v, ok := d.value(n, f, 0); ok {
			r.Override, _ = json.Marshal(v)
		}
	}
	if wraps {
		f := join(field, "envelope")
		n := d.resolve(envelope.val)
		switch {
		case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
			// Text: a page, or the note a redirect carries.
			t, err := parseTemplate(n.Value)
			if err != nil {
				d.templateError(n, f, err)
				break
			}
			r.EnvelopeText = t
		case n.Kind != yaml.MappingNode:
			d.fail(n, f, "wraps the operation's answer: want a mapping (a JSON template that sees the answer as .Answer: { error: { payment_intent: '{{ .Answer }}' } }) or a string (a text template), got %s", describe(n))
		default:
			r.Envelope, _ = d.jsonTemplate(n, f)
		}
		if _, set := fs["status"]; set && (r.Envelope != nil || r.EnvelopeText != nil) {
			r.EnvelopeStatus = r.Status
		}
	}
	if p, ok := fs["body"]; ok {
		if b := d.resolve(p.val); b.Kind != yaml.MappingNode {
			d.fail(b, join(field, "body"), "with operation:, body: is laid on the generated answer (its fields replace the answer's): want a mapping, got %s", describe(b))
		}
	}
}

// mergeHeaders returns the defaults overridden by own, defaults first.
func mergeHeaders(defaults, own []Header) []Header {
	out := make([]Header, 0, len(defaults)+len(own))
	for _, h := range defaults {
		overridden := false
		for _, o := range own {
			if o.Name == h.Name {
				overridden = true
				break
			}
		}
		if !overridden {
			out = append(out, h)
		}
	}
	return append(out, own...)
}

// responseHeaders decodes name → value, or name → [values] for a header
// sent once per value (Set-Cookie, Link). The values of one name stay
// together and in order; when any of them is a template, all of them are,
// so that the server renders them in the order written.
func (d *fileDecoder) responseHeaders(n *yaml.Node, field string, tmpl bool) []Header {
	ps, ok := d.pairs(n, field)
	if !ok {
		return nil
	}
	var out []Header
	seen := map[string]bool{}
	for _, p := range ps {
		f := join(field, p.key.Value)
		name, ok := d.headerName(p.key, f, seen)
		if !ok {
			continue
		}
		items, fields := []*yaml.Node{p.val}, []string{f}
		if list := d.resolve(p.val); list.Kind == yaml.SequenceNode {
			if len(list.Content) == 0 {
				d.fail(list, f, "an empty list sends no header; give at least one value or remove the header")
				continue
			}
			items, fields = list.Content, nil
			for i := range items {
				fields = append(fields, fmt.Sprintf("%s[%d]", f, i))
			}
		}
		var hs []Header
		templated := false
		for i, item := range items {
			v, ok := d.str(item, fields[i])
			if !ok {
				continue
			}
			if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
				d.fail(d.resolve(item), fields[i], "header values cannot hold control characters such as newlines")
				continue
			}
			hs = append(hs, Header{Name: name, Value: v})
			templated = templated || tmpl && strings.Contains(v, "{{")
		}
		if len(hs) != len(items) {
			continue
		}
		if templated {
			for i := range hs {
				t, err := parseTemplate(hs[i].Value)
				if err != nil {
					d.templateError(d.resolve(items[i]), fields[i], err)
					continue
				}
				hs[i].Template = t
			}
		}
		out = append(out, hs...)
	}
	return out
}

// body encodes an inline body and returns the Content-Type it implies.
func (d *fileDecoder) body(n *yaml.Node, field string, r *Response) string {
	n = d.resolve(n)
	if n.Kind == yaml.ScalarNode {
		switch n.ShortTag() {
		case "!!null":
			return ""
		case "!!str":
			return d.textBody(n, field, []byte(n.Value), r)
		}
	}
	if r.Template {
		t, ok := d.jsonTemplate(n, field)
		r.JSONTemplate = t
		if !ok {
			return ""
		}
		return "application/json"
	}
	var buf bytes.Buffer
	if d.encodeJSON(&buf, n, field, 0) {
		r.Body = buf.Bytes()
	}
	return "application/json"
}

// textBody keeps text as the body (or its template) and guesses its type.
func (d *fileDecoder) textBody(n *yaml.Node, field string, text []byte, r *Response) string {
	if r.Template && bytes.Contains(text, []byte("{{")) {
		t, err := parseTemplate(string(text))
		if err != nil {
			d.templateError(n, field, err)
			return ""
		}
		r.BodyTemplate = t
	} else {
		r.Body = text
	}
	if r.BodyTemplate != nil {
		t := bytes.TrimSpace(text)
		if bytes.HasPrefix(t, []byte("{{")) {
			// Its type is what it renders (an echo of the request, text,
			// nothing at all): the server labels each answer (Sniff).
			return ""
		}
		if t[0] == '{' || t[0] == '[' {
			return "application/json" // a JSON template
		}
	}
	return Sniff(text)
}

// Sniff returns the Content-Type a body implies: application/json for a
// JSON object or array, none for an empty body, otherwise net/http's
// content sniffing. It is the type a static body gets when its response
// names none, and the server's for a text template's output when the
// template's own text does not say (it begins with an action).
func Sniff(body []byte) string {
	if len(body) == 0 {
		return ""
	}
	t := bytes.TrimSpace(body)
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(t) {
		return "application/json"
	}
	return http.DetectContentType(body)
}

func (d *fileDecoder) bodyFile(n *yaml.Node, field string, r *Response) string {
	rel, ok := d.str(n, field)
	if !ok {
		return ""
	}
	n = d.resolve(n)
	data, msg, err := d.readBody(rel)
	if err != nil {
		d.fail(n, field, "%s", msg)
		return ""
	}
	ct := d.textBody(n, field, data, r)
	if byExt := mime.TypeByExtension(filepath.Ext(rel)); byExt != "" {
		ct = byExt
	}
	return ct
}

func (d *fileDecoder) delay(n *yaml.Node, field string) (Delay, bool) {
	n = d.resolve(n)
	if n.Kind == yaml.ScalarNode {
		v, ok := d.duration(n, field)
		if !ok {
			return Delay{}, false
		}
		if v == 0 {
			return Delay{}, true
		}
		return Delay{Kind: Fixed, Fixed: v}, true
	}
	fs, ok := d.fields(n, field, delayFields...)
	if !ok {
		return Delay{}, false
	}
	var dl Delay
	good := true
	get := func(name string) bool {
		p, ok := fs[name]
		if !ok {
			return false
		}
		v, ok := d.duration(p.val, join(field, name))
		good = good && ok
		switch name {
		case "min":
			dl.Min = v
		case "max":
			dl.Max = v
		case "median":
			dl.Median = v
		}
		return true
	}
	hasMin, hasMax, hasMedian := get("min"), get("max"), get("median")
	sigma, hasSigma := fs["sigma"]
	switch {
	case hasMedian:
		dl.Kind = LogNormal
		if hasMin {
			d.fail(fs["min"].key, field, "min: does not go with median: (a log-normal delay takes median, sigma and an optional max)")
			good = false
		}
		if !hasSigma {
			d.fail(n, field, "a log-normal delay needs sigma: as well as median:")
			return Delay{}, false
		}
		s, ok := d.float(sigma.val, join(field, "sigma"))
		if ok && (s < 0 || s > 10) {
			d.fail(d.resolve(sigma.val), join(field, "sigma"), "sigma %g is not between 0 and 10", s)
			ok = false
		}
		dl.Sigma, good = s, good && ok
		if good && hasMax && dl.Max < dl.Median {
			d.fail(fs["max"].val, join(field, "max"), "max %s is below median %s", dl.Max, dl.Median)
			good = false
		}
	case hasSigma:
		d.fail(sigma.key, field, "sigma: needs median: (a log-normal delay)")
		return Delay{}, false
	case hasMin && hasMax:
		dl.Kind = Uniform
		if good && dl.Min > dl.Max {
			d.fail(fs["max"].val, join(field, "max"), "max %s is below min %s", dl.Max, dl.Min)
			good = false
		}
	case !hasMin && !hasMax && len(n.Content) > 0:
		// Every key is unknown and already reported ("unknown field
		// lognormal"); a second line about ranges would only mislead.
		return Delay{}, false
	default:
		d.fail(n, field, "a delay range needs both min: and max:, e.g. {min: 100ms, max: 2s}")
		return Delay{}, false
	}
	return dl, good
}

func (d *fileDecoder) sequence(n *yaml.Node, r *Route) {
	fs, ok := d.fields(n, "sequence", sequenceFields...)
	if !ok {
		return
	}
	if p, ok := fs["after"]; ok {
		if s, ok := d.str(p.val, "sequence.after"); ok {
			if !contains(afterValues, s) {
				d.unknown(d.resolve(p.val), "sequence", "after", s, afterValues)
			}
			r.Sequence.After = After(s)
		}
	}
	if p, ok := fs["per"]; ok {
		r.Sequence.Per = d.attribute(p.val, "sequence.per", r.Vars)
	}
}

// attribute parses header.Name, query.name, path.var, body.a.b or
// form.key (the key as sent: form.metadata[order_id]).
func (d *fileDecoder) attribute(n *yaml.Node, field string, vars []string) *Attribute {
	s, ok := d.str(n, field)
	if !ok {
		return nil
	}
	n = d.resolve(n)
	kind, name, _ := strings.Cut(s, ".")
	if !contains(attributeKinds, kind) {
		if sg := Suggest(kind, attributeKinds); sg != "" {
			d.fail(n, field, "unknown request attribute %q (did you mean %q?)", s, sg+"."+name)
		} else {
			d.fail(n, field, "unknown request attribute %q (want header.<name>, query.<name>, path.<variable>, body.<field> or form.<field>)", s)
		}
		return nil
	}
	if name == "" {
		example := map[string]string{"header": "Idempotency-Key", "query": "page", "path": "id", "body": "customer.id", "form": "metadata[order_id]"}[kind]
		d.fail(n, field, "%q needs a name after the dot, e.g. %s.%s", s, kind, example)
		return nil
	}
	a := &Attribute{Kind: AttributeKind(kind), Name: name}
	switch a.Kind {
	case HeaderAttr:
		a.Name = textproto.CanonicalMIMEHeaderKey(name)
	case PathAttr:
		if !contains(vars, name) {
			if sg := Suggest(name, vars); sg != "" {
				d.fail(n, field, "the path has no variable %q (did you mean %q?)", name, sg)
			} else {
				d.fail(n, field, "the path has no variable %q (it has %s)", name, quoteList(vars))
			}
			return nil
		}
	case BodyAttr:
		a.Name = ""
		a.Path = strings.Split(name, ".")
		for _, seg := range a.Path {
			if seg == "" {
				d.fail(n, field, "empty field name in %q", s)
				return nil
			}
		}
	}
	return a
}

func quoteList(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// maxSlowChunks bounds chunks: of a slow-body; each chunk is a wait.
const maxSlowChunks = 10_000

// fault decodes fault: kind, or its long form { kind, after, chance,
// bytes, over, chunks }. A misspelt kind stops there: what else the block
// says would only be judged against the wrong kind.
func (d *fileDecoder) fault(n *yaml.Node, field string) *Fault {
	n = d.resolve(n)
	f := &Fault{Pos: d.pos(n), After: AfterArrival, Chance: 1, Bytes: -1}
	if n.Kind == yaml.ScalarNode {
		s, ok := d.str(n, field)
		if !ok || !d.faultKind(n, field, s, f) {
			return nil
		}
		switch f.Kind {
		case SlowBody:
			d.fail(n, field, "slow-body needs over: (how long the body takes), e.g. fault: { kind: slow-body, over: 5s }")
			return nil
		case Bandwidth:
			d.fail(n, field, "bandwidth needs rate: (bytes per second), e.g. fault: { kind: bandwidth, rate: 16384 }")
			return nil
		case Latency:
			d.fail(n, field, "latency needs latency: (how long the answer is held back), e.g. fault: { kind: latency, latency: 2s }")
			return nil
		case Limit:
			d.fail(n, field, "limit needs bytes: (how many bytes of the answer are sent), e.g. fault: { kind: limit, bytes: 100 }")
			return nil
		case Slice:
			f.Size, f.After = defaultSlice, AfterProcessing
		}
		return f
	}
	fs, ok := d.fields(n, field, faultFields...)
	if !ok {
		return nil
	}
	before := len(d.errs)
	kind, ok := fs["kind"]
	if !ok {
		if len(d.errs) == before {
			d.fail(n, field, "kind: is required (one of %s)", strings.Join(faults, ", "))
		}
		return nil
	}
	s, ok := d.str(kind.val, join(field, "kind"))
	if !ok || !d.faultKind(d.resolve(kind.val), join(field, "kind"), s, f) {
		return nil
	}
	if p, ok := fs["after"]; ok {
		if s, ok := d.str(p.val, join(field, "after")); ok {
			if contains(faultStages, s) {
				f.After = FaultStage(s)
			} else {
				d.unknown(d.resolve(p.val), join(field, "after"), "stage", s, faultStages)
			}
		}
	}
	if p, ok := fs["chance"]; ok {
		if c, ok := d.float(p.val, join(field, "chance")); ok {
			if c < 0 || c > 1 {
				d.fail(d.resolve(p.val), join(field, "chance"), "chance %g is not between 0 and 1 (0.2 faults one request in five)", c)
			}
			f.Chance = c
		}
	}
	// The fields of one kind on another are mistakes: say whose they are.
	only := func(name string, kinds ...FaultKind) (pair, bool) {
		p, ok := fs[name]
		if ok && !slices.Contains(kinds, f.Kind) {
			names := make([]string, len(kinds))
			for i, k := range kinds {
				names[i] = string(k)
			}
			d.fail(p.key, join(field, name), "goes only with kind: %s, not %s", strings.Join(names, " or "), f.Kind)
			return p, false
		}
		return p, ok
	}
	if p, ok := only("bytes", PartialBody, Limit); ok {
		if b, ok := d.integer(p.val, join(field, "bytes")); ok {
			if b < 0 {
				d.fail(d.resolve(p.val), join(field, "bytes"), "bytes %d is negative; want how many bytes of the answer are sent", b)
			}
			f.Bytes = b
		}
	} else if f.Kind == Limit && !ok {
		d.fail(n, field, "limit needs bytes: (how many bytes of the answer, headers counted, are sent before the close), e.g. bytes: 100")
	}
	over, hasOver := only("over", SlowBody)
	if hasOver {
		if v, ok := d.duration(over.val, join(field, "over")); ok {
			if v == 0 {
				d.fail(d.resolve(over.val), join(field, "over"), "over must be more than 0 (how long the body takes)")
			}
			f.Over = v
		}
	} else if f.Kind == SlowBody {
		d.fail(n, field, "slow-body needs over: (how long the body takes), e.g. over: 5s")
	}
	if f.Kind == SlowBody {
		f.Chunks = DefaultSlowChunks
	}
	if p, ok := only("chunks", SlowBody); ok {
		if c, ok := d.integer(p.val, join(field, "chunks")); ok {
			if c < 1 || c > maxSlowChunks {
				d.fail(d.resolve(p.val), join(field, "chunks"), "chunks %d is not between 1 and %d", c, maxSlowChunks)
			}
			f.Chunks = c
		}
	}
	d.shapeFields(n, field, f, fs, only)
	if len(d.errs) > before {
		return nil
	}
	return f
}

// The bounds of the shaping faults' fields: a piece is a write and a wait.
const (
	maxSliceSize = 1 << 20
	defaultSlice = 64
)

// shapeFields decodes the fields of bandwidth, latency and slice (the
// faults that change how the answer travels, not whether it arrives) and
// checks that each has what it needs. Their after: does not apply: the
// whole answer arrives, so the route always runs to its end.
func (d *fileDecoder) shapeFields(n *yaml.Node, field string, f *Fault, fs map[string]pair, only func(string, ...FaultKind) (pair, bool)) {
	if f.Shapes() {
		if p, ok := fs["after"]; ok {
			d.fail(p.key, join(field, "after"), "does not go with %s: the whole answer arrives, so the route always runs to its end (its effects are kept)", f.Kind)
		}
		f.After = AfterProcessing
	}
	if p, ok := only("rate", Bandwidth); ok {
		if r, ok := d.integer(p.val, join(field, "rate")); ok {
			if r < 1 {
				d.fail(d.resolve(p.val), join(field, "rate"), "rate %d is not a speed; want bytes per second, 1 or more (16384 is 16 KiB/s)", r)
			}
			f.Rate = r
		}
	} else if f.Kind == Bandwidth {
		d.fail(n, field, "bandwidth needs rate: (bytes per second), e.g. rate: 16384")
	}
	if p, ok := only("latency", Latency); ok {
		if v, ok := d.duration(p.val, join(field, "latency")); ok {
			if v == 0 {
				d.fail(d.resolve(p.val), join(field, "latency"), "latency must be more than 0")
			}
			f.Latency = v
		}
	} else if f.Kind == Latency {
		d.fail(n, field, "latency needs latency: (how long the answer is held back), e.g. latency: 2s")
	}
	if p, ok := only("jitter", Latency); ok {
		if v, ok := d.duration(p.val, join(field, "jitter")); ok {
			if v > f.Latency && f.Latency > 0 {
				d.fail(d.resolve(p.val), join(field, "jitter"), "jitter %s is more than the latency %s: a wait cannot be negative", v, f.Latency)
			}
			f.Jitter = v
		}
	}
	if f.Kind == Latency {
		f.On = FirstByte
	}
	if p, ok := only("on", Latency); ok {
		if v, ok := d.str(p.val, join(field, "on")); ok {
			if contains(latencyOns, v) {
				f.On = LatencyOn(v)
			} else {
				d.unknown(d.resolve(p.val), join(field, "on"), "place", v, latencyOns)
			}
		}
	}
	if f.Kind == Slice {
		f.Size = defaultSlice
	}
	if p, ok := only("size", Slice); ok {
		if v, ok := d.integer(p.val, join(field, "size")); ok {
			if v < 1 || v > maxSliceSize {
				d.fail(d.resolve(p.val), join(field, "size"), "size %d is not between 1 and %d bytes", v, maxSliceSize)
			}
			f.Size = v
		}
	}
	if p, ok := only("gap", Slice); ok {
		if v, ok := d.duration(p.val, join(field, "gap")); ok {
			f.Gap = v
		}
	}
}

// faultKind sets f.Kind from s, or reports an unknown kind at n.
func (d *fileDecoder) faultKind(n *yaml.Node, field, s string, f *Fault) bool {
	if !contains(faults, s) {
		d.unknown(n, field, "fault", s, faults)
		return false
	}
	f.Kind = FaultKind(s)
	return true
}

// faultFits checks a fault against the rest of its response: a
// partial-body needs a body to cut, and a static one must be longer than
// the bytes sent.
func (d *fileDecoder) faultFits(n *yaml.Node, field string, r *Response) {
	f := r.Fault
	if f.Kind != PartialBody {
		return
	}
	dynamic := r.Proxy != nil || r.BodyTemplate != nil || r.JSONTemplate != nil || r.Op == OpLoad || r.Op == OpList || r.Op == OpDelete
	switch {
	case !dynamic && len(r.Body) == 0:
		d.fail(n, field, "partial-body needs a body to cut (body:, bodyFile:, load: or list:)")
	case !dynamic && f.Bytes >= len(r.Body):
		d.fail(n, field, "bytes %d would send the whole body (%d bytes); want fewer", f.Bytes, len(r.Body))
	}
}
