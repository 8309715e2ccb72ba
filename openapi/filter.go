package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/scenariomock/scenariomock/state"
)

// A list narrows its stored items by the query parameters the operation
// declares that name a top-level field of its items, as Stripe's lists
// do (GET /v1/payment_intents?customer=cus_123, ?status=succeeded,
// ?created[gte]=1700000000): equal to the value, an expandable object
// whose id is the value, or a number in the range of the [gt], [gte],
// [lt] and [lte] keys. A value with a * matches strings as a pattern
// (path.Match: Stripe's type=customer.* for a group of events). A value
// outside the field's enum (Stripe's status=all) narrows nothing, and so does
// all where the parameter's enum has it and the field has none (GitHub's
// state=all); nor does a parameter that names a list field. Paging
// and expansion parameters are not filters. A list parameter named for
// a field in the plural narrows to items whose field is any of its values
// (Stripe's types[]=customer.created&types[]=invoice.paid, or
// types[0]=…, as stripe-go and stripe-node send them). A parameter that
// names no top-level field narrows by the one field of its name nested
// in the items' plain objects (not in lists, nor in objects that may be
// an id instead, as expandable ones), the shallowest: Stripe's
// GET /v1/invoices?subscription= reads parent.subscription_details.subscription,
// where API versions since 2025-03-31 put an invoice's subscription.

// filter is one query parameter that narrows a list: its name, the
// items' field (the name, or for a list parameter the name in the
// singular), and the field's enum (nil when it has none).
type filter struct {
	name, field string
	under       []string // the objects that hold field, outermost first; none for a top-level field
	enum        []string
	anyOf       bool // a list parameter: the field is any of its values
	// all says the parameter's own enum has "all" and the field has no
	// enum: GitHub's state=all, beside open and closed, lists every
	// issue, and narrows nothing.
	all bool
	// def is the parameter's default, which narrows a list that does
	// not send it, as the API does: GitHub's state=open lists open
	// issues alone unless state=closed or state=all is asked.
	def string
}

// notFilters are the list parameters that page or shape the answer.
var notFilters = []string{"limit", "starting_after", "ending_before", "after", "before", "expand", "page", "cursor", "per_page", "offset"}

// listFilters finds the query parameters of o that name a field of items.
func (o *Operation) listFilters(items *base.Schema) []filter {
	if items == nil {
		return nil
	}
	var out []filter
	for _, p := range o.queryParams() {
		if slices.Contains(notFilters, p) {
			continue
		}
		f := filter{name: p, field: p}
		field := propertyOf(items, p, 0)
		if one, ok := strings.CutSuffix(p, "s"); field == nil && ok && o.listParam(p) {
			f.field, f.anyOf = one, true
			field = propertyOf(items, one, 0)
		}
		if field == nil && !f.anyOf {
			f.under, field = nestedProperty(items, p)
		}
		if field == nil || hasType(field, "array") && !f.anyOf {
			// One value says nothing that compares with a list (GitHub's
			// labels=bug,ui against an issue's labels): no filter, rather
			// than a page that is always empty.
			continue
		}
		for _, e := range field.Enum {
			f.enum = append(f.enum, e.Value)
		}
		if f.enum == nil {
			f.all = o.paramEnumHas(p, "all")
		}
		if !f.anyOf && f.under == nil {
			f.def = o.paramDefault(p)
		}
		out = append(out, f)
	}
	return out
}

// maxFilterDepth is how deep nestedProperty looks for a filter's field:
// an invoice's parent.subscription_details.subscription is at 3.
const maxFilterDepth = 3

// nestedProperty finds the property name below the top level of items,
// the shallowest, through plain objects only: the objects that hold it,
// outermost first, and its schema; nil when none has it, or more than
// one at the shallowest depth (no filter rather than a guess).
func nestedProperty(items *base.Schema, name string) ([]string, *base.Schema) {
	type holder struct {
		path   []string
		schema *base.Schema
	}
	level, left := []holder{{nil, items}}, maxSchemaVisits
	for depth := 1; depth < maxFilterDepth && len(level) > 0; depth++ {
		var next []holder
		var found []holder
		for _, h := range level {
			for key, s := range objectProperties(h.schema, &left) {
				path := append(slices.Clip(h.path), key)
				if p := propertyIn(s, name, 0, &left); p != nil {
					found = append(found, holder{path, p})
				}
				next = append(next, holder{path, s})
			}
		}
		if len(found) == 1 {
			return found[0].path, found[0].schema
		}
		if len(found) > 1 {
			return nil, nil
		}
		level = next
	}
	return nil, nil
}

// objectProperties returns the properties of s (through allOf, oneOf and
// anyOf) whose values are plain objects: with properties of their own,
// and never a string in their place (an expandable object's id).
func objectProperties(s *base.Schema, left *int) map[string]*base.Schema {
	out := map[string]*base.Schema{}
	var walk func(s *base.Schema, depth int)
	walk = func(s *base.Schema, depth int) {
		if s == nil || depth > 4 || !hop(left) {
			return
		}
		if s.Properties != nil {
			for key, p := range s.Properties.FromOldest() {
				if o := plainObject(p.Schema(), left); o != nil {
					out[key] = o
				}
			}
		}
		for _, group := range [][]*base.SchemaProxy{s.AllOf, s.OneOf, s.AnyOf} {
			for _, sp := range group {
				walk(sp.Schema(), depth+1)
			}
		}
	}
	walk(s, 0)
	return out
}

// plainObject returns the object schema s is, or its one object
// alternative (a nullable object is anyOf the object and an empty enum):
// nil when s may be a string or a list instead, or has no properties.
func plainObject(s *base.Schema, left *int) *base.Schema {
	if s == nil || !hop(left) || hasType(s, "string") || hasType(s, "array") {
		return nil
	}
	if s.Properties != nil && s.Properties.Len() > 0 {
		return s
	}
	var obj *base.Schema
	for _, group := range [][]*base.SchemaProxy{s.AnyOf, s.OneOf} {
		for _, sp := range group {
			a := sp.Schema()
			switch {
			case a == nil:
			case hasType(a, "string") || hasType(a, "array"):
				return nil
			case a.Properties != nil && a.Properties.Len() > 0:
				if obj != nil {
					return nil
				}
				obj = a
			}
		}
	}
	return obj
}

// queryParameters is the query parameters of o and its path, each name
// once (the first).
func (o *Operation) queryParameters() []*v3.Parameter {
	var out []*v3.Parameter
	for _, ps := range [][]*v3.Parameter{o.item.Parameters, o.op.Parameters} {
		for _, p := range ps {
			if p != nil && p.In == "query" && !slices.ContainsFunc(out, func(q *v3.Parameter) bool { return q.Name == p.Name }) {
				out = append(out, p)
			}
		}
	}
	return out
}

// queryParams names the query parameters of o and its path.
func (o *Operation) queryParams() []string {
	var out []string
	for _, p := range o.queryParameters() {
		out = append(out, p.Name)
	}
	return out
}

// paramSchema is the schema of o's query parameter name; nil when o has
// no such parameter, or it has no schema.
func (o *Operation) paramSchema(name string) *base.Schema {
	for _, p := range o.queryParameters() {
		if p.Name == name && p.Schema != nil {
			return p.Schema.Schema()
		}
	}
	return nil
}

// listParam says whether the query parameter name of o takes a list.
func (o *Operation) listParam(name string) bool {
	s := o.paramSchema(name)
	return s != nil && slices.Contains(s.Type, "array")
}

// paramEnumHas says whether the query parameter name's schema has value
// in its enum.
func (o *Operation) paramEnumHas(name, value string) bool {
	if s := o.paramSchema(name); s != nil {
		for _, e := range s.Enum {
			if e != nil && e.Value == value {
				return true
			}
		}
	}
	return false
}

// paramDefault is the default of the query parameter name's schema, as
// written; "" when it has none.
func (o *Operation) paramDefault(name string) string {
	if s := o.paramSchema(name); name != "" && s != nil && s.Default != nil {
		return s.Default.Value
	}
	return ""
}

// condition is one filter as a request asks it.
type condition struct {
	field, op, value string   // op: "" (equal), gt, gte, lt, lte
	under            []string // the objects that hold field (filter.under)
	anyOf            []string // op "": the field equals one of these
}

// conditions reads the filters q sets; none when it sets none.
func conditions(filters []filter, q url.Values) []condition {
	var out []condition
	for _, f := range filters {
		if f.anyOf {
			if vs := listValues(q, f.name); len(vs) > 0 {
				out = append(out, condition{field: f.field, under: f.under, anyOf: vs})
			}
			continue
		}
		v := q.Get(f.name)
		if _, sent := q[f.name]; !sent {
			v = f.def
		}
		if v != "" {
			if f.enum == nil && !(f.all && v == "all") || slices.Contains(f.enum, v) {
				out = append(out, condition{field: f.field, under: f.under, value: v})
			}
		}
		for _, op := range [...]string{"gt", "gte", "lt", "lte"} {
			if v := q.Get(f.name + "[" + op + "]"); v != "" {
				out = append(out, condition{field: f.field, under: f.under, op: op, value: v})
			}
		}
	}
	return out
}

// listValues is the non-empty values of the list parameter name in q,
// however the client wrote it: name=a&name=b, name[]=a, or name[0]=a in
// the order of the indexes (gaps closed, as in a form body).
func listValues(q url.Values, name string) []string {
	var out []string
	add := func(vs []string) {
		for _, v := range vs {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	add(q[name])
	add(q[name+"[]"])
	type indexed struct {
		i  int
		vs []string
	}
	var at []indexed
	for k, vs := range q {
		if rest, ok := strings.CutPrefix(k, name+"["); ok && strings.HasSuffix(rest, "]") {
			if i, err := strconv.Atoi(rest[:len(rest)-1]); err == nil && i >= 0 {
				at = append(at, indexed{i, vs})
			}
		}
	}
	slices.SortFunc(at, func(a, b indexed) int { return a.i - b.i })
	for _, x := range at {
		add(x.vs)
	}
	return out
}

// kept says which items meet every condition, and how many do.
func kept(items []state.Item, cs []condition) ([]bool, int) {
	keep, n := make([]bool, len(items)), 0
	for i, it := range items {
		if !mayMeet(it.Body, cs) {
			continue
		}
		var fields map[string]json.RawMessage
		if json.Unmarshal(it.Body, &fields) != nil {
			continue
		}
		if meetsAll(fields, cs) {
			keep[i] = true
			n++
		}
	}
	return keep, n
}

// mayMeet is false when an equality condition's value appears nowhere in
// body, so that most items of a large collection are passed over without
// being decoded. It reads only values of characters JSON never escapes,
// which stand in the body as they are.
func mayMeet(body []byte, cs []condition) bool {
	for _, c := range cs {
		if c.op == "" && c.anyOf == nil && plain(c.value) && !bytes.Contains(body, []byte(c.value)) {
			return false
		}
		if c.anyOf != nil && !slices.ContainsFunc(c.anyOf, func(v string) bool { return !plain(v) || bytes.Contains(body, []byte(v)) }) {
			return false
		}
	}
	return true
}

// plain says whether s is made of letters, digits and @._+:- only, and
// is not a number written otherwise than JSON writes it (5.0 for 5).
func plain(s string) bool {
	if f, err := strconv.ParseFloat(s, 64); err == nil && strconv.FormatFloat(f, 'f', -1, 64) != s {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("@._+:-", c) >= 0) {
			return false
		}
	}
	return s != ""
}

func meetsAll(fields map[string]json.RawMessage, cs []condition) bool {
	for _, c := range cs {
		raw := valueAt(fields, c.under, c.field)
		if c.anyOf != nil {
			if !slices.ContainsFunc(c.anyOf, func(v string) bool { return meets(raw, condition{field: c.field, value: v}) }) {
				return false
			}
			continue
		}
		if !meets(raw, c) {
			return false
		}
	}
	return true
}

// valueAt is the JSON value of field in the objects under leads to from
// fields; nil when one of them is missing or no object.
func valueAt(fields map[string]json.RawMessage, under []string, field string) json.RawMessage {
	for _, key := range under {
		var inner map[string]json.RawMessage
		if json.Unmarshal(fields[key], &inner) != nil || inner == nil {
			return nil
		}
		fields = inner
	}
	return fields[field]
}

// meets says whether a field's JSON value meets c.
func meets(raw json.RawMessage, c condition) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return false
	}
	if c.op != "" {
		n, err1 := strconv.ParseFloat(string(raw), 64)
		want, err2 := strconv.ParseFloat(c.value, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		switch c.op {
		case "gt":
			return n > want
		case "gte":
			return n >= want
		case "lt":
			return n < want
		}
		return n <= want
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return false
		}
		if strings.Contains(c.value, "*") {
			// A group of values, as Stripe's event type=customer.*
			ok, err := path.Match(c.value, s)
			return ok && err == nil
		}
		return s == c.value
	case '{': // an expandable object: its id
		var obj struct {
			ID any `json:"id"`
		}
		return json.Unmarshal(raw, &obj) == nil && obj.ID != nil && strings.TrimSpace(stringOf(obj.ID)) == c.value
	case '[':
		return false
	}
	if n, err := strconv.ParseFloat(string(raw), 64); err == nil {
		want, err := strconv.ParseFloat(c.value, 64)
		return err == nil && n == want
	}
	return string(raw) == c.value // true, false
}

func stringOf(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	}
	return ""
}

// Narrow returns the items that meet the list filters q sets, in their
// order: items itself when it sets none. A route that lists a collection
// of its own under this operation (the Stripe example's GET /v1/events,
// over the events its routes record) narrows it as a generated list does.
func (o *Operation) Narrow(items []state.Item, q url.Values) []state.Item {
	cs := conditions(o.shapeOf().filters, q)
	if len(cs) == 0 || len(items) == 0 {
		return items
	}
	keep, n := kept(items, cs)
	out := make([]state.Item, 0, n)
	for i, it := range items {
		if keep[i] {
			out = append(out, it)
		}
	}
	return out
}

// CursorError is what a generated list of this operation answers to a
// cursor, param, naming no item (id; Stripe's 400 resource_missing, "No
// such event: 'evt_1'"), or, when other is set, to both cursors at once,
// in the spec's error shape for a 400.
func (o *Operation) CursorError(r *http.Request, param, id, other string) (status int, contentType string, body []byte) {
	if other != "" {
		status, body = o.paramError(http.StatusBadRequest, param, "parameter_invalid",
			fmt.Sprintf("You may only specify one of these parameters: %s, %s.", param, other))
	} else {
		status, body = o.unknownCursor(param, id)
	}
	return status, o.answerType(status, r, body), body
}
