package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/pb33f/go-yaml"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/state"
)

// Exchange is what Respond needs of one request.
type Exchange struct {
	Request *http.Request
	Body    []byte
	Vars    map[string]string // the path's variables
	// Store holds the resources of state-by-convention; nil turns it off.
	Store state.Collections
	// Counters count the integer ids of created objects (1, 2, 3 per
	// collection); nil draws them at random.
	Counters state.Counters
	// Rand draws the fresh ids of created resources (seeded under
	// --seed, so that a run repeats).
	Rand func() float64
	// Patch, when set, is a JSON object laid on the answer (see
	// mergePatch) before the request's values are reflected, and so on the
	// object a create, update or action stores: what a route written in
	// YAML for the operation adds (Stripe's confirm sets status:
	// succeeded).
	Patch []byte
	// Override, when set, is a JSON object laid as Patch is, but after
	// the request's values: what the request sent does not show through
	// (Stripe's declined intent keeps no payment_method).
	Override []byte
	// Missing says that the route's own collection lacks the path's id
	// (a route written for the operation with a load: that found
	// nothing): where the operation keeps no state of its own for the
	// id, the answer is its 404, or under unknownIds: generate an object
	// generated with that id, even where the spec has no create for the
	// resource (Stripe's events, which only the provider makes).
	Missing bool
	// Create makes an update or action on an id never created (nor
	// deleted) act on an object made from the spec with that id, and
	// stored (scenarios.Route.CreateUnknown).
	Create bool
	// Values are the request's values as CheckValues read them (its form
	// body, nested and typed); nil makes Respond read the body itself.
	// Respond may keep them in what it answers and stores: the caller
	// hands them over.
	Values map[string]any
}

// opKind is what an operation does to the resource its path names.
type opKind int

const (
	opNone opKind = iota
	opCreate
	opRead
	opUpdate
	opDelete
	opList
	// opAction is a POST to a verb below a stored resource whose answer
	// is that resource (/v1/payment_intents/{intent}/confirm): it acts on
	// the stored object as an update does. See markActions.
	opAction
	// opSearch searches a collection's stored objects (search.go).
	opSearch
)

// classify finds the operation's part in state by convention: a POST to
// a collection path creates, GET, POST/PUT/PATCH and DELETE on the
// collection path with one more variable segment read, update and delete,
// and GET on the collection path lists.
func (o *Operation) classify() {
	p := o.Path
	if i := strings.LastIndex(p, "/{"); i >= 0 && strings.HasSuffix(p, "}") && !strings.Contains(p[i+2:len(p)-1], "{") {
		o.collection, o.idVar = p[:i], p[i+2:len(p)-1]
		switch o.Method {
		case http.MethodGet:
			o.kind = opRead
		case http.MethodPost, http.MethodPut, http.MethodPatch:
			o.kind = opUpdate
		case http.MethodDelete:
			o.kind = opDelete
		}
		return
	}
	o.collection = p
	switch o.Method {
	case http.MethodPost:
		o.kind = opCreate
	case http.MethodGet:
		o.kind = opList
	}
}

// collectionName is the stored collection of a path, with the parent's
// variables filled in (/v1/customers/cus_1/sources).
func (o *Operation) collectionName(r *http.Request, vars map[string]string) string {
	if o.storeKey != "" {
		return o.storeKey
	}
	name := o.collection
	for k, v := range vars {
		name = strings.ReplaceAll(name, "{"+k+"}", v)
	}
	return o.api.storeName(r, name)
}

// storeName is the stored collection of a path: "openapi /v1/customers",
// or with scope: credential "openapi sk_test_1 /v1/customers", and with
// a header in the scope "openapi sk_test_1 Stripe-Account=acct_1
// /v1/customers" (matcher.Owner).
func (a *api) storeName(r *http.Request, path string) string {
	if !a.scope.IsZero() {
		return "openapi " + matcher.Owner(a.scope, r.Header) + " " + path
	}
	return "openapi " + path
}

// errNoState marks an operation that state by convention does not apply
// to; it is answered from the spec alone.
var errNoState = errors.New("no state")

// Respond produces the operation's answer to x: the status, the
// Content-Type of the media type it is in ("" when there is nothing to
// say: a 204) and the body. A store failure is returned as an error (the
// server answers 503).
func (o *Operation) Respond(ctx context.Context, x Exchange) (int, string, []byte, error) {
	x.Vars = o.canonicalVars(x.Vars)
	// Read only: a request without a query (a create's form POST) parses
	// none, which allocated an empty map on every one.
	var q url.Values
	if x.Request.URL.RawQuery != "" {
		q = x.Request.URL.Query()
	}
	code, example, _ := preferred(x.Request, q)
	if code == o.status {
		code = 0 // the answer it gives anyway: stateful as ever
	}
	in := x.Values
	if in == nil {
		in = o.requestValues(x.Request, x.Body)
	}
	in = o.unwrapped(in)
	if code == 0 && example == "" && o.api.state && x.Store != nil && o.kind != opNone {
		status, body, err := o.stateful(ctx, x, in, q)
		if err == nil && status < 300 && (o.kind == opRead || o.kind == opDelete) {
			body = o.patchedItem(status, body, x.Patch, x.Override) // the answer only: nothing is stored
		}
		if !errors.Is(err, errNoState) {
			if err == nil && status < 300 && o.kind != opDelete { // a list's: data.customer
				body, err = o.expand(ctx, x, expandFields(x.Request, q, in), body)
			}
			return status, o.answerType(status, x.Request, body), body, err
		}
	}
	if x.Missing && code == 0 && example == "" && !o.api.generate && o.idVar != "" {
		// Nothing of the operation's own keeps the id either.
		status, body := o.missing(x.Vars[o.idVar])
		return status, o.answerType(status, x.Request, body), body, nil
	}
	if resp, _ := o.response(code); code != 0 && resp == nil {
		status, contentType, body := o.undeclared(code)
		return status, contentType, body, nil
	}
	status, body := o.generate(code, example, in, x)
	if code == 0 && example == "" && status < 300 && o.kind != opDelete && len(body) > 0 && o.answersJSON(status, x.Request) {
		var err error
		if body, err = o.expand(ctx, x, expandFields(x.Request, q, in), body); err != nil {
			return 0, "", nil, err
		}
	}
	return status, o.answerType(status, x.Request, body), body, nil
}

// undeclared answers Prefer: code= (or __code=) naming a status the
// operation declares no response for, and no default: that status, as
// asked, with a problem saying so and what it declares (Prism refuses
// with a 404 instead; the status asked is what a client rehearsing it
// wants to see). A 204 or 304 carries no body.
func (o *Operation) undeclared(code int) (int, string, []byte) {
	if code == http.StatusNoContent || code == http.StatusNotModified || code == http.StatusResetContent {
		return code, "", nil
	}
	declared := declaredCodes(o.op) // no default: undeclared answers only without one
	b, _ := json.Marshal(map[string]any{
		"type": "about:blank", "title": http.StatusText(code), "status": code,
		"detail": fmt.Sprintf("status %d asked for (Prefer: code= or __code=): operation %s declares no %d response and no default (it declares %s), so the spec gives this answer no body", code, o.Name, code, strings.Join(declared, ", ")),
	})
	return code, "application/problem+json", b
}

// answersJSON says whether the answer with status to r is JSON (which
// expand[] can act on).
func (o *Operation) answersJSON(status int, r *http.Request) bool {
	resp, _ := o.response(status)
	name, mt := pickMedia(resp, r)
	return mt != nil && isJSONMedia(name)
}

// answerType is the Content-Type of an answer: that of the media type it
// is in, "" when there is nothing to say (a 204).
func (o *Operation) answerType(status int, r *http.Request, body []byte) string {
	resp, _ := o.response(status)
	if name, mt := pickMedia(resp, r); len(body) == 0 && (mt == nil || isJSONMedia(name)) {
		return ""
	}
	if status >= 400 && isOwnProblem(body, status) {
		// fieldError's problem, for a response whose declared schema has
		// no error shape to fill (a 404 declared as application/json
		// with no message): a problem says so, whatever the spec's media.
		return "application/problem+json"
	}
	return o.contentType(status, r)
}

// isOwnProblem says whether body is a problem as fieldError writes one
// for status: type about:blank, its title and status, a detail, and
// perhaps errors, nothing else.
func isOwnProblem(body []byte, status int) bool {
	if !bytes.HasPrefix(body, []byte(`{"detail":`)) { // json.Marshal sorts a map's keys
		return false
	}
	var p map[string]any
	if json.Unmarshal(body, &p) != nil {
		return false
	}
	keys := 4 // type, title, status, detail
	if _, ok := p["errors"]; ok {
		keys++
	}
	return len(p) == keys && p["type"] == "about:blank" && p["title"] == http.StatusText(status) && p["status"] == float64(status)
}

// patched returns body with patch laid on it (RFC 7386), or body itself
// when either is not a JSON object.
func patched(body, patch []byte) []byte {
	if len(patch) == 0 {
		return body
	}
	obj, ok := decodeObject(body)
	if !ok {
		return body
	}
	p, ok := decodeObject(patch)
	if !ok {
		return body
	}
	mergePatch(obj, p)
	b, _ := marshal(obj)
	return b
}

// mergePatch lays patch on obj: an object merges into an object, any
// other value replaces the field's. Unlike a JSON merge patch (RFC 7386),
// null sets the field to null rather than removing it, since Stripe's
// objects list their empty fields as null.
func mergePatch(obj, patch map[string]any) {
	for k, v := range patch {
		switch pv := v.(type) {
		case map[string]any:
			cur, ok := decoded(obj[k]).(map[string]any) // a fixture's nested object may still be raw
			if !ok {
				cur = map[string]any{}
			}
			mergePatch(cur, pv)
			obj[k] = cur
		default:
			obj[k] = v
		}
	}
}

// preferred reads Prism's selection: Prefer: code=404, example=name, or
// the same as __code and __example query parameters. A code that is not a
// status from 200 to 599 is not honoured (code 0): a 1xx would be no
// answer at all, and net/http refuses others; bad is it as a violation,
// for the validation stage to refuse (nil when a code is honoured).
func preferred(r *http.Request, q url.Values) (code int, example string, bad *Violation) {
	// RFC 7240: a preference's parameters follow a ';', and of one given
	// twice only the first counts.
	var seenCode, seenExample bool
	for _, v := range r.Header["Prefer"] {
		for _, part := range strings.Split(v, ",") {
			part, _, _ = strings.Cut(part, ";")
			k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
			val = strings.Trim(val, `" `)
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "code":
				if !seenCode {
					seenCode = true
					if code = statusOf(val); code == 0 {
						bad = badStatus("header", "Prefer", "Prefer: code="+val)
					}
				}
			case "example":
				if !seenExample {
					seenExample, example = true, val
				}
			}
		}
	}
	if c := q.Get("__code"); c != "" {
		if code = statusOf(c); code == 0 {
			bad = badStatus("query", "__code", "__code="+c)
		}
	}
	if e := q.Get("__example"); e != "" {
		example = e
	}
	if code != 0 {
		bad = nil
	}
	return code, example, bad
}

// statusOf is s as a status from 200 to 599, else 0.
func statusOf(s string) int {
	if n, err := strconv.Atoi(s); err == nil && n >= 200 && n <= 599 {
		return n
	}
	return 0
}

// badStatus is the violation of a status selection asked as asked.
func badStatus(in, name, asked string) *Violation {
	return &Violation{In: in, Name: name, Detail: asked + ": the status to answer with must be a number from 200 to 599"}
}

// preferenceViolation is a request's bad selection, as a violation: a
// status out of range, or an example the chosen answer does not have (as
// Prism refuses one, rather than answering another example without
// saying so). Nil when it has none.
func (o *Operation) preferenceViolation(r *http.Request) []Violation {
	if header(r, "Prefer") == "" && !strings.Contains(r.URL.RawQuery, "__") {
		return nil
	}
	q := r.URL.Query()
	code, example, bad := preferred(r, q)
	if bad != nil {
		return []Violation{*bad}
	}
	if example == "" {
		return nil
	}
	resp, status := o.response(code)
	media, mt := pickMedia(resp, r)
	var names []string
	if mt != nil && mt.Examples != nil {
		if _, ok := mt.Examples.Get(example); ok {
			return nil
		}
		for n := mt.Examples.First(); n != nil; n = n.Next() {
			names = append(names, n.Key())
		}
	}
	v := Violation{In: "header", Name: "Prefer"}
	if q.Get("__example") != "" {
		v.In, v.Name = "query", "__example"
	}
	has := "it has no named examples"
	if len(names) > 0 {
		has = "it has " + strings.Join(names, ", ")
	}
	answer := strconv.Itoa(status)
	if media != "" {
		answer += " " + media
	}
	v.Detail = fmt.Sprintf("example %q: the %s answer has no example of that name (%s)", example, answer, has)
	return []Violation{v}
}

// response returns the response for code (0: the success one) and the
// code it answers with.
func (o *Operation) response(code int) (*v3.Response, int) {
	if code == 0 {
		code = o.status
	}
	if code == o.status && o.statusResp != nil {
		return o.statusResp, code
	}
	if o.op.Responses == nil {
		return nil, code
	}
	if o.op.Responses.Codes != nil {
		if r, ok := o.op.Responses.Codes.Get(strconv.Itoa(code)); ok {
			return r, code
		}
		// 4XX-style ranges
		if r, ok := o.op.Responses.Codes.Get(strconv.Itoa(code/100) + "XX"); ok {
			return r, code
		}
	}
	return o.op.Responses.Default, code
}

// Succeeds says whether status is a success the operation declares: a
// 2xx of its responses, or the one it answers by itself. A 2xx that
// Prefer: code= asks for and the spec does not declare is answered from
// its default response, an error.
func (o *Operation) Succeeds(status int) bool {
	if status < 200 || status > 299 {
		return false
	}
	if status == o.status {
		return true
	}
	resp, _ := o.response(status)
	return resp != nil && resp != o.op.Responses.Default
}

// generate builds the answer from the spec: the chosen example, else a
// fixture of the schema's resource, else values generated from the
// schema; request values are reflected and the path's id goes in id.
func (o *Operation) generate(code int, example string, in map[string]any, x Exchange) (int, []byte) {
	status, v, raw, isRaw := o.generateValue(code, example, in, x)
	if isRaw {
		return status, raw
	}
	b, _ := marshal(v)
	return status, b
}

// generateValue is generate before the answer is written: the value to
// write as JSON, or the raw body of a non-JSON media type (isRaw), so that
// a create can give it an id and write it once.
func (o *Operation) generateValue(code int, example string, in map[string]any, x Exchange) (status int, v any, raw []byte, isRaw bool) {
	resp, status := o.response(code)
	name, mt := pickMedia(resp, x.Request)
	if mt == nil {
		return status, nil, nil, true
	}
	if !isJSONMedia(name) {
		return status, nil, o.api.textBody(mt, example), true
	}
	var schema *base.Schema
	if mt.Schema != nil {
		schema = mt.Schema.Schema()
	}
	made := false
	fixture := "" // the fixture v is a copy of, as made (instanceOf)
	// Dynamic mode (dynamic.go): drawn afresh, no example, no fixture.
	drawn := example == "" && schema != nil && o.dynamic(x.Request)
	if drawn {
		v, drawn = o.drawAnswer(x.Request, resp, status, name, schema, x.Rand)
	}
	if !drawn {
		v, made, fixture = o.api.instanceOf(mt, schema, example)
	}
	// A success the spec declares: a Prefer'd 2xx it does not declare is
	// its default answer, an error that body: and override: are not laid on.
	success := status < 300 && (code == 0 || resp != o.op.Responses.Default)
	var patch map[string]any
	if success {
		patch = patchOf(x.Patch)
	}
	if b := constBranch(schema, patch, v); b != nil && example == "" && o.shapeOf().envelope == "" {
		// The route's body says which alternative it makes (Stripe's
		// object: card of a payment_source, anyOf an account, a bank
		// account, a card or a source): that one's fixture or values,
		// not the first's with the body's fields laid on them.
		if obj, ok := v.(map[string]any); ok {
			release(obj)
		}
		if drawn {
			v = faker{api: o.api, rnd: randOr(x.Rand)}.value(b, 0)
		} else {
			v, made, fixture = o.api.instanceOf(nil, b, "")
		}
		schema = b
	}
	if b := discriminated(schema, in, o.api); b != nil && example == "" {
		// The request says which kind it is (category: dessert): answer
		// that kind, not the example or first branch of another.
		if obj, ok := v.(map[string]any); !ok || obj[schema.Discriminator.PropertyName] != in[schema.Discriminator.PropertyName] {
			fixture = ""
			if drawn {
				v = faker{api: o.api, rnd: randOr(x.Rand)}.value(b, 0)
			} else {
				v = generator{api: o.api}.value(b, 0)
			}
		}
	}
	if made && example == "" && o.kind == opCreate {
		// A create of a dog, anyOf a cat or a dog: made from the dog's
		// schema, not the cat's with the dog's values laid on it.
		if b := sentBranch(schema, in); b != nil {
			if obj, ok := v.(map[string]any); ok {
				release(obj)
			}
			v, schema = generator{api: o.api}.value(b, 0), b
		}
	}
	if obj, ok := v.(map[string]any); ok {
		fillProblem(name, obj, status)
		if inner, env := o.itemIn(obj, status); inner != nil {
			// An envelope ({"data": {…}}): what follows is the item's.
			obj, schema, fixture = inner, o.itemSchema(schema, env), ""
		}
		mergePatch(obj, patch) // before the request's values, which it does not hide
		creates := o.kind == opCreate && o.api.state && status < 300 && code == 0
		form := o.formBody(x.Request)
		var absent map[string]any
		var sent *base.Schema
		if creates {
			sent = o.sentSchema(x.Request)
			o.api.exampleMaps(obj, schema, patch)
			// What the request sends that the example or fixture has no
			// field for (Mux's passthrough) is stored too.
			// A form's nested values are strings, typed by the
			// example's values they replace: with none to replace
			// (Stripe's plan tiers, an issuing transaction's
			// purchase_details), they would answer "inf" for an
			// integer. Its scalars are typed by their placeholder.
			absent = o.absentFields(obj, in, sent, schema, form)
		}
		if form {
			reflectForm(obj, in, schema)
		} else {
			reflectValues(obj, in, schema)
		}
		settle(obj, in, absent, schema)
		if creates && made {
			unsentOptional(obj, schema, in, patch, o.keyField())
		}
		if creates {
			o.unsentNulls(obj, in, patch, sent, schema, fixture)
		}
		if success {
			mergePatch(obj, patchOf(x.Override)) // after the request's values and the unsent fields
		}
		if o.idVar != "" {
			if id, ok := x.Vars[o.idVar]; ok {
				key := o.keyField()
				if cur, has := obj[key]; has {
					obj[key] = idLike(cur, id)
				}
			}
		}
		if o.kind == opList {
			if u, ok := obj["url"].(string); ok && u != "" {
				obj["url"] = x.Request.URL.Path
			}
		}
	}
	return status, v, nil, false
}

// sentBranch is the alternative of s's anyOf or oneOf (with no
// discriminator, which says for itself) that has the most of the fields
// in holds, when that is not the first one, which answers otherwise.
func sentBranch(s *base.Schema, in map[string]any) *base.Schema {
	if s == nil || len(in) == 0 || s.Discriminator != nil {
		return nil
	}
	alts := s.AnyOf
	if len(alts) == 0 {
		alts = s.OneOf
	}
	var best *base.Schema
	most := 0
	for i, sp := range alts {
		b := sp.Schema()
		n := 0
		for k := range in {
			if propertyOf(b, k, 0) != nil {
				n++
			}
		}
		if i == 0 {
			most = n // the first answers unless another has more
		} else if n > most {
			best, most = b, n
		}
	}
	return best
}

// itemIn is the item within an answer obj of status that is an
// envelope (shape.envelope: Mux's {"data": asset}) and the envelope's
// field, or nil when obj is the item itself.
func (o *Operation) itemIn(obj map[string]any, status int) (map[string]any, string) {
	env := o.shapeOf().envelope
	if env == "" || status != o.status {
		return nil, ""
	}
	inner, _ := obj[env].(map[string]any)
	return inner, env
}

// wrapped is the answer of status holding body, an item stored by an
// operation whose answers are envelopes: the answer made from the spec,
// its envelope's field the item. Other answers are body itself.
func (o *Operation) wrapped(status int, body []byte, x Exchange) []byte {
	env := o.shapeOf().envelope
	if env == "" || status != o.status {
		return body
	}
	x.Vars = nil // the item made keeps the example's id, to be told in the envelope's links
	_, v, _, isRaw := o.generateValue(0, "", nil, x)
	outer, ok := v.(map[string]any)
	if isRaw || !ok {
		return body
	}
	if made, ok := outer[env].(map[string]any); ok {
		if stored, ok := decodeObject(body); ok {
			key := o.keyField()
			carryEnvelope(outer, env, fmt.Sprint(made[key]), fmt.Sprint(stored[key]))
		}
	}
	outer[env] = json.RawMessage(body)
	b, _ := marshal(outer)
	return b
}

// carryEnvelope gives the fields of an envelope outer, beside its item's
// (env), the item's id where they carry old, the example's: JSON:API's
// links.self (https://api.example.com/articles/1) names the item answered.
// An id too short to be told from other text (1) is carried where it is
// a URL's last segment (…/articles/1, …/articles/1/author) only.
func carryEnvelope(outer map[string]any, env, old, id string) {
	if old == "" || old == id || old == "<nil>" {
		return
	}
	for k, v := range outer {
		if k == env {
			continue
		}
		if c, changed := carrySegment(v, old, id); changed {
			outer[k] = c
		} else if len(old) >= 8 {
			if c, changed := carryID(v, old, id); changed {
				outer[k] = c
			}
		}
	}
}

// carrySegment is v with old replaced by id where a string (in v, or
// in its objects) has it as a path segment after a "/".
func carrySegment(v any, old, id string) (any, bool) {
	switch t := v.(type) {
	case string:
		seg := "/" + old
		i := strings.Index(t, seg)
		for i >= 0 {
			end := i + len(seg)
			if end == len(t) || strings.ContainsRune("/?#", rune(t[end])) {
				return t[:i] + "/" + id + t[end:], true
			}
			j := strings.Index(t[end:], seg)
			if j < 0 {
				break
			}
			i = end + j
		}
	case map[string]any:
		changed := false
		for k, e := range t {
			if c, ok := carrySegment(e, old, id); ok {
				t[k], changed = c, true
			}
		}
		return t, changed
	}
	return v, false
}

// patchedItem is body, an answer of status, with patch and then override
// laid on the item it answers: within its envelope when it has one
// ({"data": note}), as a create's and an update's are laid on the item
// they store; else on body itself.
func (o *Operation) patchedItem(status int, body, patch, override []byte) []byte {
	if len(patch) == 0 && len(override) == 0 {
		return body
	}
	env := o.shapeOf().envelope
	if env == "" || status != o.status {
		return patched(patched(body, patch), override)
	}
	outer, _ := decodeObject(body)
	inner, isObject := outer[env].(map[string]any)
	if !isObject {
		return patched(patched(body, patch), override)
	}
	mergePatch(inner, patchOf(patch))
	mergePatch(inner, patchOf(override))
	b, _ := marshal(outer)
	return b
}

// itemSchema is the schema of the item within an answer of schema,
// an envelope whose field env holds it: the one the envelope's shape
// found, through allOf parts too, when schema is the operation's answer's.
func (o *Operation) itemSchema(schema *base.Schema, env string) *base.Schema {
	if sh := o.shapeOf(); sh.item != nil && env == sh.envelope {
		return sh.item
	}
	return propertyOf(schema, env, 0)
}

// unwrapped is a request's values sent in the envelope its answers have
// ({"data": {…}}, as JSON:API sends them): the item's; else in itself.
func (o *Operation) unwrapped(in map[string]any) map[string]any {
	env := o.shapeOf().envelope
	if env == "" || len(in) != 1 {
		return in
	}
	if inner, ok := in[env].(map[string]any); ok {
		return inner
	}
	return in
}

// instance is the value an answer starts from.
func (a *api) instance(mt *v3.MediaType, schema *base.Schema, example string) any {
	v, _ := a.instanceMade(mt, schema, example)
	return v
}

// instanceMade is instance, and whether it was made from the schema alone
// (no example, no fixture: its values are placeholders).
func (a *api) instanceMade(mt *v3.MediaType, schema *base.Schema, example string) (any, bool) {
	v, made, _ := a.instanceOf(mt, schema, example)
	return v, made
}

// instanceOf is instanceMade, and the name of the fixture the value is a
// copy of ("" when it is none).
func (a *api) instanceOf(mt *v3.MediaType, schema *base.Schema, example string) (any, bool, string) {
	if mt != nil {
		if example != "" && mt.Examples != nil {
			if ex, ok := mt.Examples.Get(example); ok && ex.Value != nil {
				return nodeValue(a.exampleValue(ex.Value)), false, ""
			}
		}
		if mt.Example != nil {
			return nodeValue(mt.Example), false, ""
		}
		if mt.Examples != nil {
			if first := mt.Examples.First(); first != nil && first.Value().Value != nil {
				return nodeValue(a.exampleValue(first.Value().Value)), false, ""
			}
		}
	}
	if schema == nil {
		return nil, false, ""
	}
	if fx, name := a.fixture(schema, mt); fx != nil {
		return fx, false, name
	}
	g := generator{api: a}
	return g.value(schema, 0), true, ""
}

// exampleValue is an example's value, unless that value is only a
// $ref to an example of the document's components: then that example's
// value. GitHub's description writes an example with its own summary so
// (examples: {default: {summary: Issue, value: {$ref:
// '#/components/examples/issue'}}}), and tools that resolve every $ref
// (Redocly, Prism) show the issue; answered as written it was the
// reference, {"$ref": "#/components/examples/issue"}.
func (a *api) exampleValue(n *yaml.Node) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode || len(n.Content) != 2 || n.Content[0].Value != "$ref" {
		return n
	}
	name, ok := strings.CutPrefix(n.Content[1].Value, "#/components/examples/")
	if !ok || a.model == nil || a.model.Components == nil || a.model.Components.Examples == nil {
		return n
	}
	if ex, ok := a.model.Components.Examples.Get(name); ok && ex != nil && ex.Value != nil {
		return ex.Value
	}
	return n
}

// unsentOptional takes out of a created object made from the schema alone
// the properties the schema does not require, the server does not set
// (readOnly), the request did not send and a route's body laid on it
// (patch) does not set: a pet created without a tag is stored without
// one, not with the placeholder "string" that a read would then give back
// as if the client had sent it. Of those it keeps, one that may be null
// and whose value is a placeholder (unsetByServer) is null: a GitHub
// issue just created has "closed_at": null, not a date beside "state":
// "open".
func unsentOptional(obj map[string]any, schema *base.Schema, in, patch map[string]any, key string) {
	required := requiredOf(schema, 0)
	for k := range obj {
		_, sent := in[k]
		_, laid := patch[k]
		if sent || laid || k == "id" || k == key {
			continue
		}
		p := propertyOf(schema, k, 0)
		if slices.Contains(required, k) || p != nil && p.ReadOnly != nil && *p.ReadOnly {
			if unsetByServer(p) {
				obj[k] = nil
			}
			continue
		}
		delete(obj, k)
	}
}

// unsetByServer says whether a field of schema s, made from the schema
// alone, is better null in an object just created: s lets it be null, it
// is a plain value, and the schema gives no value of its own (example,
// default, enum, const), so the generator's is a placeholder (a date, 0,
// "string") that tells the client a thing happened that did not.
func unsetByServer(s *base.Schema) bool {
	return s != nil && takesNull(s) && scalar(s) && s.Const == nil && s.Default == nil &&
		len(s.Enum) == 0 && s.Example == nil && len(s.Examples) == 0
}

// unsentNulls sets null, in a created object, each field that the
// request's body (of schema sent) could have given and did not, that the
// answer's schema lets be null and that a route's body (patch) did not
// lay; or the body's default for it, when it has one. A provider stores
// what it was sent: an issue created without an assignee has none, not
// the example's octocat, and a read gives back null rather than a value
// the client never wrote. A field the body does not list, or the answer
// marks readOnly, is the server's to set and stays as the example or
// fixture has it (Stripe's client_secret), as do the
// id and the field items are stored by.
//
// fixture names the fixture obj was made a copy of, "" when it was not:
// then only the fields that fixture has are looked at, and none is looked
// up in obj (nullablesIn).
func (o *Operation) unsentNulls(obj, in, patch map[string]any, sent, schema *base.Schema, fixture string) {
	if sent == nil {
		return
	}
	fields := o.api.nullables(sent, schema)
	if fixture != "" {
		fields = o.api.nullablesIn(sent, schema, fixture)
	}
	key := o.keyField()
	for _, f := range fields {
		_, given := in[f.name]
		_, laid := patch[f.name]
		if given || laid || f.name == "id" || f.name == key {
			continue
		}
		if fixture == "" {
			if _, has := obj[f.name]; !has {
				continue
			}
		}
		obj[f.name] = f.unsent
	}
}

// nullablesIn are the nullables of sent and schema that the fixture named
// fixture has, found once per fixture. A created object made a copy of
// that fixture has these of them and no other by the time unsentNulls
// looks (what is added to it comes from the request or a route's body,
// which unsentNulls leaves, and nothing takes a fixture's field out), so
// they are not looked up in it: most of the nullables of Stripe's
// customer are fields its fixture does not have, and looking each up was
// most of unsentNulls' cost.
func (a *api) nullablesIn(sent, schema *base.Schema, fixture string) []nullable {
	type key struct {
		sent, schema *base.Schema
		fixture      string
	}
	k := key{sent, schema, fixture}
	if v, ok := a.nullablesBy.Load(k); ok {
		return v.([]nullable)
	}
	fx, _ := a.decoded.Load(fixture) // decoded by the fixtureNamed that made the copy
	m, _ := fx.(map[string]any)
	out := []nullable{}
	for _, f := range a.nullables(sent, schema) {
		if _, has := m[f.name]; has {
			out = append(out, f)
		}
	}
	v, _ := a.nullablesBy.LoadOrStore(k, out)
	return v.([]nullable)
}

// nullable is a field of a created object that the request's body lists
// and the answer lets be null: what it is when not sent (null, or the
// body's default).
type nullable struct {
	name   string
	unsent any
}

// nullables are the fields unsentNulls sets, found once per pair of
// schemas (the body's, the answer's): looking each field of a created
// object up in both was a cost per create. Free-form maps (Stripe's
// metadata, nullable in its spec) are left to exampleMaps, which empties
// them as the provider answers {}.
func (a *api) nullables(sent, schema *base.Schema) []nullable {
	key := [2]*base.Schema{sent, schema}
	if v, ok := a.nullablesBy.Load(key); ok {
		return v.([]nullable)
	}
	free := a.freeFormProperties(schema)
	out := []nullable{}
	for _, name := range a.propertyNames(schema) {
		field := propertyOf(sent, name, 0)
		p := propertyOf(schema, name, 0)
		if field == nil || p == nil || !takesNull(p) || p.ReadOnly != nil && *p.ReadOnly || slices.Contains(free, name) {
			continue
		}
		f := nullable{name: name}
		if field.Default != nil {
			f.unsent = nodeValue(field.Default)
		}
		out = append(out, f)
	}
	v, _ := a.nullablesBy.LoadOrStore(key, out)
	return v.([]nullable)
}

// takesNull says whether s lets a value be null: 3.0's nullable: true,
// 3.1's "null" among its types, or an anyOf or oneOf alternative of type
// "null" (3.1's anyOf: [{$ref: …}, {type: "null"}]).
func takesNull(s *base.Schema) bool {
	if s.Nullable != nil && *s.Nullable || hasType(s, "null") {
		return true
	}
	for _, group := range [][]*base.SchemaProxy{s.AnyOf, s.OneOf} {
		for _, sp := range group {
			if a := sp.Schema(); a != nil && len(a.Type) == 1 && a.Type[0] == "null" {
				return true
			}
		}
	}
	return false
}

// exampleMaps empties, in a created object, the free-form maps a route's
// body did not lay (Stripe's metadata), before the request's values go
// in: their keys are the example's or the fixture's, not the client's. A
// payment method created without metadata reads back none, as Stripe's
// does, and one created with metadata[a]=b reads back that alone, not
// the fixture's order_id beside it.
func (a *api) exampleMaps(obj map[string]any, schema *base.Schema, patch map[string]any) {
	for _, k := range a.freeFormProperties(schema) {
		if _, laid := patch[k]; laid || !nonEmptyObject(obj[k]) {
			continue
		}
		obj[k] = map[string]any{}
	}
}

// freeFormProperties are the properties of s (its own, and its allOf,
// oneOf and anyOf parts', as propertyOf finds them) that are free-form
// maps, found once per schema: looking each field of a created object up
// in the schema was 3% of a Stripe create.
func (a *api) freeFormProperties(s *base.Schema) []string {
	if s == nil {
		return nil
	}
	if v, ok := a.freeForms.Load(s); ok {
		return v.([]string)
	}
	out := []string{} // not nil: a schema with none is found too
	for _, name := range a.propertyNames(s) {
		if p := propertyOf(s, name, 0); p != nil && freeForm(p) {
			out = append(out, name)
		}
	}
	v, _ := a.freeForms.LoadOrStore(s, out)
	return v.([]string)
}

// propertyNames are the names of s's properties, its own and its allOf,
// oneOf and anyOf parts' (as propertyOf finds them), sorted.
func (a *api) propertyNames(s *base.Schema) []string {
	var names []string
	eachProperty(s, true, func(name string, _ *base.SchemaProxy) { names = append(names, name) })
	slices.Sort(names)
	return slices.Compact(names)
}

// nonEmptyObject says whether v, decoded or raw (see shallow), is an
// object with a key.
func nonEmptyObject(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		return len(t) > 0
	case canonical:
		return isObjectWithKeys(t)
	case json.RawMessage:
		return isObjectWithKeys(t)
	}
	return false
}

func isObjectWithKeys(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 2 && raw[0] == '{' && len(bytes.TrimSpace(raw[1:len(raw)-1])) > 0
}

// freeForm says whether s is an object of any keys: no properties of its
// own, and additionalProperties a schema, true, or left out (JSON
// Schema's default: metadata: {type: object}).
func freeForm(s *base.Schema) bool {
	if !hasType(s, "object") || (s.Properties != nil && s.Properties.Len() > 0) {
		return false
	}
	ap := s.AdditionalProperties
	return ap == nil || ap.IsA() || (ap.IsB() && ap.B)
}

// requiredOf is the properties schema requires, with those of its allOf
// parts.
func requiredOf(s *base.Schema, depth int) []string {
	left := maxSchemaVisits
	return requiredIn(s, depth, &left)
}

// requiredIn is requiredOf, each schema it visits spending one of left.
func requiredIn(s *base.Schema, depth int, left *int) []string {
	if s == nil || depth > 4 || !hop(left) {
		return nil
	}
	out := s.Required
	for _, sp := range s.AllOf {
		out = append(slices.Clip(out), requiredIn(sp.Schema(), depth+1, left)...)
	}
	return out
}

// fixture returns a copy of the fixture for the schema's resource, and
// its name: by x-resourceId (Stripe's), else by the component name its
// $ref names.
func (a *api) fixture(schema *base.Schema, mt *v3.MediaType) (any, string) {
	if a.fixtures == nil {
		return nil, ""
	}
	var names []string
	if id := resourceID(schema); id != "" {
		names = append(names, id)
	}
	if mt != nil && mt.Schema != nil && mt.Schema.IsReference() {
		ref := mt.Schema.GetReference()
		names = append(names, ref[strings.LastIndex(ref, "/")+1:])
	}
	for _, n := range names {
		if v := a.fixtureNamed(n); v != nil {
			return v, n
		}
	}
	return nil, ""
}

// fixtureNamed returns a fresh copy of the fixture of a resource, or nil.
//
// A fixture is decoded once, when first answered, one level deep: its
// fields' objects and arrays stay the JSON they are (json.RawMessage),
// which an answer writes as it is and reflectValues decodes only where a
// request sets a value inside (fit). Each answer gets a copy of that top
// level. Decoding Stripe's customer for every create, and writing it back
// through encoding/json's reflection, was a third of a create's CPU.
func (a *api) fixtureNamed(name string) any {
	v, ok := a.decoded.Load(name)
	if !ok {
		raw, found := a.fixtures[name]
		if !found {
			return nil
		}
		v = shallow(raw)
		a.decoded.Store(name, v)
	}
	if m, isMap := v.(map[string]any); isMap {
		c := objects.Get().(map[string]any)
		for k, f := range m {
			c[k] = f
		}
		return c
	}
	return v // a scalar; an array fixture stays raw
}

// objects are maps that fixtureNamed copies a fixture into: a create
// gives its copy back once the answer is encoded (release), so that the
// copy, a third of a Stripe create's allocated bytes, is made once per
// connection's worth of creates rather than per create.
var objects = sync.Pool{New: func() any { return make(map[string]any, 32) }}

// release gives obj, which nothing will read again, back to objects.
func release(obj map[string]any) {
	if len(obj) > 256 {
		return // a rare large fixture: not worth keeping its room
	}
	clear(obj)
	objects.Put(obj)
}

// shallow decodes a JSON object one level deep: scalars become values,
// objects and arrays stay raw. Anything but an object stays raw whole (nil
// when it is not JSON).
func shallow(raw json.RawMessage) any {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return nil
		}
		return v
	}
	m := make(map[string]any, len(fields))
	for k, f := range fields {
		if len(f) > 0 && (f[0] == '{' || f[0] == '[') {
			if c, ok := toCanonical(f); ok {
				m[k] = c
				continue
			}
		}
		var v any
		_ = json.Unmarshal(f, &v)
		m[k] = v
	}
	return m
}

// decoded returns v with a raw field (see shallow) decoded; anything else
// as it is.
// decodedObject is decoded(v) as an object, nil when it is none; an
// empty one (a generated metadata, on every create that sends some) costs
// no decoding.
func decodedObject(v any) map[string]any {
	switch t := v.(type) {
	case canonical:
		if string(t) == "{}" {
			return nil
		}
	case json.RawMessage:
		if string(t) == "{}" {
			return nil
		}
	}
	m, _ := decoded(v).(map[string]any)
	return m
}

func decoded(v any) any {
	var raw []byte
	switch t := v.(type) {
	case canonical:
		raw = t
	case json.RawMessage:
		raw = t
	default:
		return v
	}
	var d any
	if json.Unmarshal(raw, &d) != nil {
		return nil
	}
	return d
}

func resourceID(s *base.Schema) string {
	if s == nil || s.Extensions == nil {
		return ""
	}
	if n, ok := s.Extensions.Get("x-resourceId"); ok && n != nil {
		return n.Value
	}
	return ""
}

// nodeValue decodes a YAML node (an example) into JSON-ready values.
func nodeValue(n *yaml.Node) any {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil
	}
	return jsonReady(v)
}

// jsonReady turns YAML's map[string]any / map[any]any into JSON objects.
func jsonReady(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = jsonReady(e)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = jsonReady(e)
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = jsonReady(e)
		}
	}
	return v
}

// maxDepth bounds generated objects: Stripe's schemas nest (and refer to
// each other) deeper than any answer needs. maxHops bounds the allOf,
// anyOf and oneOf followed within one level, and maxGenerated the values
// and properties one answer makes and looks at: a schema that is its own anyOf branch recursed until
// the stack overflowed and killed the server, and one whose 60 required
// properties refer to it made 60⁴ objects (1 GB, a minute) for one GET.
// Stripe's answers, from fixtures, make a few dozen.
const (
	maxDepth     = 4
	maxHops      = 16
	maxGenerated = 10_000
)

// generator makes deterministic values from schemas. A generator is
// used for one answer: its first value call sets the budget the answer's
// values share.
type generator struct {
	api  *api
	left *int // values the answer may still make; set by the first call
	hops int  // allOf, anyOf and oneOf followed since the last level
	// extending: the schema is an allOf member (a Cat's Pet), or the
	// subtype its discriminator picked, so it is not answered as one of
	// its subtypes again (subtype).
	extending bool
}

func (g generator) value(s *base.Schema, depth int) any {
	if g.left == nil {
		n := maxGenerated
		g.left = &n
	}
	if s == nil || *g.left <= 0 || g.hops > maxHops {
		return nil
	}
	*g.left--
	composed, nested := g, g
	composed.hops++
	nested.hops = 0
	// A resource nested in what is generated (a list's items, an
	// expanded field) is its fixture, as at the top (instance).
	if id := resourceID(s); id != "" {
		if fx := g.api.fixtureNamed(id); fx != nil {
			return fx
		}
	}
	if s.Const != nil {
		return nodeValue(s.Const)
	}
	if s.Default != nil {
		return nodeValue(s.Default) // one of the enum's, when there is one
	}
	if len(s.Enum) > 0 {
		return nodeValue(s.Enum[0])
	}
	if len(s.Examples) > 0 {
		return nodeValue(s.Examples[0])
	}
	if s.Example != nil {
		return nodeValue(s.Example)
	}
	if !g.extending {
		// A base whose subtypes extend it through allOf (OpenAPI 3.0's
		// inheritance: Cat is allOf Pet and its own fields) is answered
		// as its first mapped subtype, with the discriminator's value.
		if sub, name := g.api.subtype(s); sub != nil {
			ext := composed
			ext.extending = true
			v := ext.value(sub, depth)
			if obj, ok := v.(map[string]any); ok {
				obj[s.Discriminator.PropertyName] = name
			}
			return v
		}
	}
	// What s holds may be any kind again.
	g.extending, composed.extending, nested.extending = false, false, false
	if len(s.AllOf) > 0 {
		merged := map[string]any{}
		ext := composed
		ext.extending = true
		for _, p := range s.AllOf {
			if m, ok := ext.value(p.Schema(), depth).(map[string]any); ok {
				for k, v := range m {
					merged[k] = v
				}
			}
		}
		return merged
	}
	// anyOf/oneOf: the first alternative, which for Stripe's expandable
	// fields is the unexpanded id.
	for _, alts := range [][]*base.SchemaProxy{s.AnyOf, s.OneOf} {
		if len(alts) > 0 {
			return composed.value(alts[0].Schema(), depth)
		}
	}
	typ := ""
	for _, t := range s.Type {
		if t != "null" {
			typ = t
			break
		}
	}
	if typ == "" && s.Properties != nil {
		typ = "object"
	}
	switch typ {
	case "object":
		obj := map[string]any{}
		if s.Properties != nil {
			for p := s.Properties.First(); p != nil && *g.left > 0; p = p.Next() {
				*g.left-- // a property left out costs its look too
				ps := p.Value().Schema()
				required := slices.Contains(s.Required, p.Key())
				if depth > 1 && !required || writeOnly(ps) {
					continue // an answer never carries a writeOnly property
				}
				// Past maxDepth only required plain values are made, so
				// that the deepest objects still have what they must.
				if depth >= maxDepth && (!required || !scalar(ps)) {
					continue
				}
				obj[p.Key()] = nested.value(ps, depth+1)
			}
		}
		listed(obj)
		return obj
	case "array":
		if depth >= maxDepth || s.Items == nil || s.Items.A == nil {
			return []any{}
		}
		item := nested.value(s.Items.A.Schema(), depth+1)
		out := []any{item}
		if s.MinItems != nil && *s.MinItems > 1 && *s.MinItems <= 16 {
			for len(out) < int(*s.MinItems) {
				out = append(out, item)
			}
		}
		return out
	case "integer":
		return int64(number(s, true))
	case "number":
		return number(s, false)
	case "boolean":
		return false
	case "string":
		if s.Pattern == "" {
			return placeholderString(s)
		}
		if v, ok := g.api.patterned.Load(s); ok {
			return v // the pattern parsed, compiled and drawn once
		}
		v, _ := g.api.patterned.LoadOrStore(s, placeholderString(s))
		return v
	}
	return nil
}

// firstDraw makes drawRegexp deterministic: the first of each class and
// alternative.
func firstDraw() float64 { return 0 }

// placeholderString is a string its schema allows: by its format, else one its
// pattern matches, else "string", cut or padded to its lengths.
func placeholderString(s *base.Schema) any {
	switch s.Format {
	case "date-time":
		return "2026-01-01T00:00:00Z"
	case "date":
		return "2026-01-01"
	case "time":
		return "00:00:00Z"
	case "email":
		return "user@example.com"
	case "uuid":
		return "00000000-0000-4000-8000-000000000000"
	case "uri", "url":
		return "https://example.com/"
	case "uri-reference":
		return "/"
	case "hostname":
		return "example.com"
	case "ipv4":
		return "192.0.2.1"
	case "ipv6":
		return "2001:db8::1"
	case "byte":
		return "c3RyaW5n" // "string", base64
	case "duration":
		return "P1D"
	case "unix-time":
		return 1767225600
	}
	if s.Pattern != "" {
		if re, err := syntax.Parse(s.Pattern, syntax.Perl); err == nil {
			var b strings.Builder
			budget := maxDrawSteps
			drawRegexp(&b, re.Simplify(), firstDraw, 1, &budget)
			v := b.String()
			n := int64(utf8.RuneCountInString(v)) // JSON Schema counts characters
			if p, err := regexp.Compile(s.Pattern); err == nil && p.MatchString(v) &&
				(s.MinLength == nil || n >= *s.MinLength) && (s.MaxLength == nil || n <= *s.MaxLength) {
				return v
			}
		}
	}
	out := "string"
	if s.MinLength != nil && int64(len(out)) < *s.MinLength && *s.MinLength <= 4096 {
		out += strings.Repeat("x", int(*s.MinLength)-len(out))
	}
	if s.MaxLength != nil && int64(len(out)) > *s.MaxLength {
		out = out[:max(*s.MaxLength, 0)]
	}
	return out
}

// number is the value of a numeric schema nearest 0 that its bounds
// allow: minimum and maximum, exclusive ones (3.1's numbers, or 3.0's
// flags) stepped past by one, or for a range narrower than that, its
// middle; then the nearest multipleOf within them, written as the
// multiple's own decimals (0.1 gives 0.3, not 0.30000000000000004).
func number(s *base.Schema, integer bool) float64 {
	lo, loEx, hi, hiEx := bounds(s)
	if integer {
		// The integers the bounds allow: minimum 2.5 is 3, an exclusive
		// minimum 5 is 6.
		if !math.IsInf(lo, 0) {
			if loEx && lo == math.Floor(lo) {
				lo++
			}
			lo, loEx = math.Ceil(lo), false
		}
		if !math.IsInf(hi, 0) {
			if hiEx && hi == math.Floor(hi) {
				hi--
			}
			hi, hiEx = math.Floor(hi), false
		}
	}
	above := func(n float64) bool { return n > lo || !loEx && n == lo }
	below := func(n float64) bool { return n < hi || !hiEx && n == hi }
	// step moves x one past itself toward to (1, or the next float where
	// 1 is too small to change it).
	step := func(x, to float64) float64 {
		if y := x + math.Copysign(1, to-x); y != x {
			return y
		}
		return math.Nextafter(x, to)
	}
	n := 0.0
	switch {
	case !above(n) && loEx:
		n = step(lo, math.Inf(1))
	case !above(n):
		n = lo
	case !below(n) && hiEx:
		n = step(hi, math.Inf(-1))
	case !below(n):
		n = hi
	}
	if (!above(n) || !below(n)) && !math.IsInf(lo, 0) && !math.IsInf(hi, 0) {
		n = lo + (hi-lo)/2 // a range narrower than a step
	}
	if m := s.MultipleOf; m != nil && *m > 0 {
		decimals := -1
		if f := strconv.FormatFloat(*m, 'f', -1, 64); strings.Contains(f, ".") {
			decimals = len(f) - strings.Index(f, ".") - 1
		}
		round := func(v float64) float64 {
			if decimals < 0 {
				return v
			}
			r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', decimals, 64), 64)
			return r
		}
		finite := func(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }
		if up := round(math.Ceil(n / *m) * *m); finite(up) && below(up) && above(up) {
			n = up
		} else if down := round(math.Floor(n / *m) * *m); finite(down) && below(down) && above(down) {
			n = down
		}
	}
	if math.IsInf(n, 0) || math.IsNaN(n) {
		return 0
	}
	if integer {
		n = max(min(n, 1<<62), -(1 << 62)) // an int64, where the schema asks for more
	}
	return n
}

// writeOnly says whether a property is only ever sent (a password, an
// upload), never answered.
func writeOnly(s *base.Schema) bool { return s != nil && s.WriteOnly != nil && *s.WriteOnly }

// scalar says whether a schema is a plain value: not an object or a list.
func scalar(s *base.Schema) bool {
	if s == nil {
		return false
	}
	if s.Const != nil || len(s.Enum) > 0 {
		return true
	}
	for _, t := range s.Type {
		switch t {
		case "string", "integer", "number", "boolean":
			return true
		}
	}
	return false
}

// listed makes a generated list (object: list, or Stripe's
// search_result) say what it holds: total_count is the number of items
// in data, and a search without a next page has no next_page, as
// stripe-mock answers (stripe-go's suite checks both).
func listed(obj map[string]any) {
	kind, _ := obj["object"].(string)
	data, ok := decoded(obj["data"]).([]any)
	if !ok || (kind != "list" && kind != "search_result") {
		return
	}
	if _, has := obj["total_count"]; has {
		obj["total_count"] = len(data)
	}
	if more, _ := obj["has_more"].(bool); kind == "search_result" && !more {
		delete(obj, "next_page")
	}
}

// requestValues reads the request's JSON object body, or its form body
// with bracket keys nested (shipping[address][line1]) and each value typed
// by the body's schema (amount_details[atm_fee]=10 is the integer 10, also
// where the answer's field is null and cannot say).
func (o *Operation) requestValues(r *http.Request, body []byte) map[string]any {
	out := map[string]any{}
	if len(body) > 0 {
		if strings.HasPrefix(header(r, "Content-Type"), "application/x-www-form-urlencoded") {
			if v, err := formValues(body, o.formSchema(r)); err == nil {
				return v
			}
		}
		if ms := o.multipartSchema(r); ms != nil {
			if v, err := multipartValues(r, body, ms); err == nil {
				return v
			}
		}
		var m map[string]any
		if json.Unmarshal(body, &m) == nil {
			o.dropReadOnly(r, m)
			return m
		}
	}
	return out
}

// dropReadOnly removes from a JSON body's values the properties its
// schema marks readOnly (an id, a status the server sets): a request
// should not send them (OpenAPI 3.1, 4.8.24.2), and one that does must
// not set them in the answer or the stored object.
func (o *Operation) dropReadOnly(r *http.Request, m map[string]any) {
	s := o.bodySchema(r)
	if s == nil {
		return
	}
	for k := range m {
		if p := propertyOf(s, k, 0); p != nil && p.ReadOnly != nil && *p.ReadOnly {
			delete(m, k)
		}
	}
}

// sentSchema is the schema of r's body as its values are read: the
// body's, or the item's within the envelope the answers have ({"data":
// {…}}, unwrapped).
func (o *Operation) sentSchema(r *http.Request) *base.Schema {
	sent := o.formSchema(r) // Stripe's, without parsing the media type
	if sent == nil {
		sent = o.bodySchema(r)
	}
	if p := propertyOf(sent, o.shapeOf().envelope, 0); p != nil {
		sent = p
	}
	return sent
}

// bodySchema returns the schema of the request body's media type, or nil.
func (o *Operation) bodySchema(r *http.Request) *base.Schema {
	if o.op.RequestBody == nil || o.op.RequestBody.Content == nil {
		return nil
	}
	mt, _, _ := mime.ParseMediaType(header(r, "Content-Type"))
	media, ok := o.op.RequestBody.Content.Get(mt)
	if !ok || media == nil || media.Schema == nil {
		return nil
	}
	return media.Schema.Schema()
}

// unflatten nests form keys: a[b][c]=1 → {"a":{"b":{"c":"1"}}}, and
// a[]=x&a[]=y → {"a":["x","y"]}; a key given twice is a list too.
func unflatten(vals url.Values) map[string]any {
	out := map[string]any{}
	for key, vs := range vals {
		for _, v := range vs {
			setFormValue(out, key, v)
		}
	}
	return out
}

// parseForm reads a form body as url.ParseQuery does (the same pairs,
// the same first error), straight into unflatten's nested values: one
// pass, without the url.Values in between. A key nested more than
// maxBodyDepth levels is an error, as a JSON body nested so deep is: a
// 9 MB key of [a] three million times took 10 s and 1.3 GB of maps.
func parseForm(body string) (map[string]any, error) {
	out := map[string]any{}
	var err error
	var dec strings.Builder // the unescaped keys and values (formUnescape)
	room := len(body)
	for body != "" {
		var pair string
		pair, body, _ = strings.Cut(body, "&")
		if strings.Contains(pair, ";") {
			if err == nil {
				err = errors.New("invalid semicolon separator in query")
			}
			continue
		}
		if pair == "" {
			continue
		}
		key, value, _ := strings.Cut(pair, "=")
		key, err1 := formUnescape(&dec, key, room)
		if err1 == nil {
			value, err1 = formUnescape(&dec, value, room)
		}
		if err1 != nil {
			if err == nil {
				err = err1
			}
			continue
		}
		if strings.Count(key, "[") > maxBodyDepth {
			if err == nil {
				err = fmt.Errorf("the key %q nests more than %d levels deep", shortKey(key), maxBodyDepth)
			}
			continue
		}
		setFormValue(out, key, value)
	}
	return out, err
}

// formUnescape is url.QueryUnescape(s): '+' is a space and %XX the byte
// it names. A string with neither is s itself; one with them is written
// into dec, which grows once to room (the body's length, more than all
// its unescaped strings), so that the body's escaped keys and values
// (stripe-go escapes every bracket: metadata%5Border%5D) are one
// allocation, not one each. A string taken from dec stays as it is:
// dec only appends. A malformed escape is url.QueryUnescape's error.
func formUnescape(dec *strings.Builder, s string, room int) (string, error) {
	i := 0
	for i < len(s) && s[i] != '%' && s[i] != '+' {
		i++
	}
	if i == len(s) {
		return s, nil
	}
	if dec.Cap() == 0 {
		dec.Grow(room)
	}
	start := dec.Len()
	dec.WriteString(s[:i])
	for ; i < len(s); i++ {
		switch c := s[i]; c {
		case '+':
			dec.WriteByte(' ')
		case '%':
			if i+2 >= len(s) || !ishex(s[i+1]) || !ishex(s[i+2]) {
				return url.QueryUnescape(s) // for its error
			}
			dec.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
		default:
			dec.WriteByte(c)
		}
	}
	return dec.String()[start:], nil
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// shortKey is a form key as an error names it: a key nested thousands of
// levels deep is megabytes.
func shortKey(key string) string {
	if len(key) <= 40 {
		return key
	}
	return strings.ToValidUTF8(key[:40], "") + "…"
}

// setFormValue puts one form value into out under its bracket key:
// nested maps for a[b][c], a list for a[] and for a key seen again.
func setFormValue(out map[string]any, key, v string) {
	var buf [8]string
	parts := splitKey(buf[:0], key)
	cur := out
	for i, p := range parts {
		// The last part holds a value; a part before [] holds a list.
		if last := i == len(parts)-1; last || parts[i+1] == "" {
			if last && p == "" {
				return
			}
			switch e := cur[p].(type) {
			case []any:
				cur[p] = append(e, v)
			case string:
				cur[p] = []any{e, v}
			default:
				if last {
					cur[p] = v
				} else {
					cur[p] = []any{v}
				}
			}
			return
		}
		next, ok := cur[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[p] = next
		}
		cur = next
	}
}

// splitKey appends the parts of a[b][c] to parts: a, b, c (and of a[]:
// a, ""). A key whose brackets do not close, or that nests more than
// maxBodyDepth levels, is one part.
func splitKey(parts []string, k string) []string {
	i := strings.IndexByte(k, '[')
	if i < 0 {
		return append(parts, k)
	}
	parts = append(parts, k[:i])
	rest := k[i:]
	for len(rest) > 0 && rest[0] == '[' {
		j := strings.IndexByte(rest, ']')
		if j < 0 || len(parts) > maxBodyDepth {
			return append(parts[:0], k)
		}
		parts = append(parts, rest[1:j])
		rest = rest[j+1:]
	}
	return parts
}

// reflectValues copies request values into obj, an object of schema,
// where obj has the field and the value fits its type: amount=123 gives
// "amount": 123; a nested object merges; a free-form map (metadata)
// takes every key.
func reflectValues(obj map[string]any, in map[string]any, schema *base.Schema) {
	reflectIn(obj, in, false, schema)
}

// reflectForm is reflectValues for the values of a form body, where an
// empty value unsets, as Stripe documents: description= and address= are
// null, metadata= empties the metadata and metadata[k]= takes k out.
func reflectForm(obj map[string]any, in map[string]any, schema *base.Schema) {
	reflectIn(obj, in, true, schema)
}

func reflectIn(obj map[string]any, in map[string]any, form bool, schema *base.Schema) {
	for k, v := range in {
		cur, has := obj[k]
		if !has {
			continue
		}
		field := propertyOf(schema, k, 0)
		// A free-form map by its schema, or by Stripe's name when no
		// object schema says otherwise.
		free := (field != nil && freeForm(field)) || (k == "metadata" && (field == nil || !hasType(field, "object")))
		if s, ok := v.(string); form && ok && s == "" {
			obj[k] = nil
			if free {
				obj[k] = map[string]any{}
			}
			continue
		}
		if v == nil {
			obj[k] = nil // JSON null sets null, as a merge patch's does (RFC 7396)
			continue
		}
		if m, ok := v.(map[string]any); ok && free {
			// Free-form keys: each one sent is set (or, from a form,
			// taken out when empty); the others stay.
			md := decodedObject(cur)
			if len(md) == 0 && !unsets(m, form) {
				// Nothing kept and nothing taken out: the map sent is
				// the map, as the request's values are handed over
				// (Exchange.Values). A copy was two allocations a
				// Stripe create with metadata.
				obj[k] = m
				continue
			}
			out := make(map[string]any, len(md)+len(m))
			for mk, mv := range md {
				out[mk] = mv
			}
			for mk, mv := range m {
				if s, ok := mv.(string); mv == nil || form && ok && s == "" {
					delete(out, mk)
				} else {
					out[mk] = mv
				}
			}
			obj[k] = out
			continue
		}
		if nv, ok := fit(cur, v, form, field); ok {
			obj[k] = nv
		}
	}
}

// unsets says whether m, a free-form map's values sent, takes a key out:
// a null, or from a form an empty value.
func unsets(m map[string]any, form bool) bool {
	for _, v := range m {
		if s, ok := v.(string); v == nil || form && ok && s == "" {
			return true
		}
	}
	return false
}

// plainType is the one type s names besides "null" when that is a plain
// one (string, integer, number, boolean), else "".
func plainType(s *base.Schema) string {
	if s == nil {
		return ""
	}
	typ := ""
	for _, t := range s.Type {
		if t == "null" {
			continue
		}
		if typ != "" {
			return ""
		}
		typ = t
	}
	switch typ {
	case "string", "integer", "number", "boolean":
		return typ
	}
	return ""
}

// fitType converts a request value to typ, a plain type: a form's
// count=5 is 5 where the answer's schema says integer, whatever the
// example has there (null, or "5"), as the answer must fit its schema.
// A value that is not one of typ (2.5 for an integer, 9 for a string)
// is not.
func fitType(typ string, v any) (any, bool) {
	s, isStr := v.(string)
	switch typ {
	case "string":
		return s, isStr
	case "boolean":
		if isStr {
			b, err := strconv.ParseBool(s)
			return b, err == nil
		}
		b, ok := v.(bool)
		return b, ok
	case "integer":
		if isStr {
			n, err := strconv.ParseInt(s, 10, 64)
			return n, err == nil
		}
		switch n := v.(type) {
		case int64:
			return n, true
		case float64:
			return n, n == math.Trunc(n) && math.Abs(n) < 1<<53
		}
	case "number":
		if isStr {
			f, err := strconv.ParseFloat(s, 64)
			return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
		}
		switch n := v.(type) {
		case float64, int64:
			return n, true
		}
	}
	return nil, false
}

// formBody says whether r's body is read as a form: its Content-Type
// says so, or it has none and the operation takes a form.
func (o *Operation) formBody(r *http.Request) bool {
	return o.formSchema(r) != nil || o.untypedFormSchema(r) != nil
}

// fit converts a request value to the type of the value it replaces,
// whose schema is schema (nil when unknown): the schema's, when it names
// one plain type, else the value's.
func fit(cur, v any, form bool, schema *base.Schema) (any, bool) {
	cur = decoded(cur)
	s, isStr := v.(string)
	if typ := plainType(schema); typ != "" {
		return fitType(typ, v)
	}
	switch c := cur.(type) {
	case float64, int, int64:
		if isStr {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return n, true
			}
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				return f, true
			}
			return nil, false
		}
		switch n := v.(type) {
		case float64, int64:
			return n, true
		}
	case bool:
		if isStr {
			b, err := strconv.ParseBool(s)
			return b, err == nil
		}
		if b, ok := v.(bool); ok {
			return b, true
		}
	case string:
		if isStr {
			return s, true
		}
	case map[string]any:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if len(c) == 0 { // metadata: any keys
			return m, true
		}
		reflectIn(c, m, form, schema)
		return c, true
	case nil:
		return v, true
	case []any:
		if l, ok := v.([]any); ok {
			return l, true
		}
	}
	return nil, false
}
