package openapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/pb33f/libopenapi/datamodel/high/base"
)

// expand[] (Stripe's expandable fields): a field that holds an id, whose
// schema is anyOf the id and a resource (x-resourceId: customer), answers
// the stored resource instead when the request asks expand[]=customer and
// the resource was created here. An id nothing stored answers stays an
// id (a body naming one is refused first unless references: off; see
// badReference).

// noteCollection records where a create operation stores its resource.
func (a *api) noteCollection(o *Operation) {
	if o.kind != opCreate || strings.Count(o.collection, "{") > 1 {
		return
	}
	resp, _ := o.response(o.status)
	_, schema := mediaOf(resp)
	id := resourceID(schema)
	if id == "" {
		return
	}
	if strings.Contains(o.collection, "{") {
		if a.nested == nil {
			a.nested = map[string][]string{}
		}
		if !slices.Contains(a.nested[id], o.collection) {
			a.nested[id] = append(a.nested[id], o.collection)
		}
		return
	}
	if a.collections == nil {
		a.collections = map[string]string{}
	}
	if _, seen := a.collections[id]; !seen {
		a.collections[id] = o.collection
	}
}

// expandFields lists the fields a request asks to expand: expand[]=a
// (or expand[0]=a) in the query or the form body.
func expandFields(r *http.Request, q url.Values, in map[string]any) []string {
	var out []string
	for k, vs := range q {
		if k == "expand[]" || strings.HasPrefix(k, "expand[") {
			out = append(out, vs...)
		}
	}
	if l, ok := listOf(in["expand"]); ok {
		for _, v := range l {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// expandViolations refuses an expand[] whose first field the answer's
// schema does not list as expandable (Stripe's x-expandableFields), as
// Stripe does: "This property cannot be expanded (foo)."; on a list,
// naming the item's field, with Stripe's hint to expand data.field.
// Deeper levels are not checked. A schema without the list checks
// nothing, and neither does unknownIds: generate, which answers as
// stripe-mock does: it takes any expand[] (stripe-go's suite expands a
// credit note preview's lines by invoice).
func (o *Operation) expandViolations(r *http.Request, in map[string]any) []Violation {
	if o.api.generate || in["expand"] == nil && !strings.Contains(r.URL.RawQuery, "expand") {
		return nil
	}
	fields := expandFields(r, r.URL.Query(), in)
	if len(fields) == 0 {
		return nil
	}
	resp, _ := o.response(o.status)
	_, schema := o.mediaOf(resp)
	can, ok := expandableFields(schema)
	if !ok {
		return nil
	}
	var out []Violation
	for _, f := range fields {
		first, _, _ := strings.Cut(f, ".")
		if slices.Contains(can, first) || f == "total_count" && propertyOf(schema, f, 0) != nil {
			continue // a search's total_count is given when expanded
		}
		msg := "This property cannot be expanded (" + f + ")."
		if data := propertyOf(schema, "data", 0); data != nil && hasType(data, "array") && data.Items != nil && data.Items.A != nil {
			if item, ok := expandableFields(data.Items.A.Schema()); ok && slices.Contains(item, first) {
				msg += " You may want to try expanding 'data." + f + "' instead."
			}
		}
		out = append(out, Violation{In: "query", Name: "expand", Detail: "cannot be expanded: " + f, message: msg})
	}
	return out
}

// expandableFields is a schema's x-expandableFields, and whether it has
// one.
func expandableFields(s *base.Schema) ([]string, bool) {
	if s == nil || s.Extensions == nil {
		return nil, false
	}
	n, ok := s.Extensions.Get("x-expandableFields")
	if !ok || n == nil {
		return nil, false
	}
	var out []string
	if err := n.Decode(&out); err != nil {
		return nil, false
	}
	return out, true
}

// maxExpandDepth is how many levels one expand[] path may name, Stripe's
// limit (a.b.c.d).
const maxExpandDepth = 4

// expand answers the expandable fields of body that fields names:
//   - a field holding the id of a resource stored here answers the stored
//     object;
//   - with unknownIds: generate, an id nothing stored answers the
//     resource generated from the spec (its fixture, with that id), as
//     stripe-mock expands any id; without it the id stays, as it would
//     against an account that has no such object;
//   - a field the answer leaves out (Stripe's includable fields, a
//     checkout session's line_items) is generated in its expanded form: a
//     list with one item, or the resource.
//
// A path goes deeper with dots, as Stripe's does: latest_charge.customer
// expands latest_charge, then its customer; on a list, data.customer
// expands each item's. A null field stays null (there is nothing to
// expand). It returns body unchanged when there is nothing to expand.
func (o *Operation) expand(ctx context.Context, x Exchange, fields []string, body []byte) ([]byte, error) {
	if len(fields) == 0 {
		return body, nil
	}
	resp, _ := o.response(o.status)
	_, schema := o.mediaOf(resp)
	if schema == nil { // the fields are looked up through anyOf too (a customer, or a deleted one)
		return body, nil
	}
	obj, ok := decodeObject(body)
	if !ok {
		return body, nil
	}
	changed := false
	for _, f := range fields {
		path := strings.Split(f, ".")
		if len(path) > maxExpandDepth {
			continue
		}
		c, err := o.expandPath(ctx, x, obj, schema, path)
		if err != nil {
			return nil, err
		}
		changed = changed || c
	}
	if !changed {
		return body, nil
	}
	return marshal(obj)
}

// expandPath expands the field path[0] of obj, whose schema is schema,
// then the rest of the path inside it: in each item, when the field is a
// list. It reports whether it changed obj.
func (o *Operation) expandPath(ctx context.Context, x Exchange, obj map[string]any, schema *base.Schema, path []string) (bool, error) {
	f, rest := path[0], path[1:]
	ps := propertyOf(schema, f, 0)
	if ps == nil {
		return false, nil
	}
	if hasType(ps, "array") {
		// A list's items (data.customer): each item, whatever it is.
		if len(rest) == 0 || ps.Items == nil || ps.Items.A == nil {
			return false, nil
		}
		items, _ := decoded(obj[f]).([]any)
		changed := false
		for i, it := range items {
			item, ok := decoded(it).(map[string]any)
			if !ok {
				continue
			}
			c, err := o.expandPath(ctx, x, item, ps.Items.A.Schema(), rest)
			if err != nil {
				return false, err
			}
			if c {
				items[i], obj[f], changed = item, items, true
			}
		}
		return changed, nil
	}
	changed, err := o.expandField(ctx, x, obj, f, ps)
	if err != nil || len(rest) == 0 {
		return changed, err
	}
	// Deeper: into the object the field now holds (stored bytes or a
	// fixture's raw part are decoded to be changed).
	child, ok := decoded(obj[f]).(map[string]any)
	if !ok {
		return changed, nil
	}
	c, err := o.expandPath(ctx, x, child, expandedSchema(ps), rest)
	if c {
		obj[f], changed = child, true
	}
	return changed, err
}

// expandField expands the field f of obj, whose schema is ps, as expand
// says, and reports whether it changed obj.
func (o *Operation) expandField(ctx context.Context, x Exchange, obj map[string]any, f string, ps *base.Schema) (bool, error) {
	cur, has := obj[f]
	switch {
	case !has:
		if v := o.api.expanded(ps); v != nil {
			if l, ok := v.(map[string]any); ok && !o.api.generate {
				emptyList(l)
			}
			obj[f] = v
			return true, nil
		}
	case cur != nil:
		id, ok := cur.(string)
		if !ok || id == "" {
			return false, nil
		}
		if path := o.api.expandable(ps); path != "" && x.Store != nil {
			stored, found, err := x.Store.Load(ctx, o.api.storeName(x.Request, path), id)
			if err != nil {
				return false, err
			}
			if found {
				obj[f] = json.RawMessage(stored)
				return true, nil
			}
		}
		if o.api.generate {
			if v, ok := o.api.expanded(ps).(map[string]any); ok {
				if _, has := v["id"]; has {
					v["id"] = id
				}
				obj[f] = v
				return true, nil
			}
		}
	}
	return false, nil
}

// emptyList empties a generated list (a customer's subscriptions): what
// state by convention keeps does not say which objects belong in it, and
// the spec's made-up item (another customer's subscription) would
// contradict what is stored. Under unknownIds: generate it stays, as
// stripe-mock answers it.
func emptyList(l map[string]any) {
	if _, ok := l["data"].([]any); !ok {
		return
	}
	l["data"], l["has_more"] = []any{}, false
	if _, ok := l["total_count"]; ok {
		l["total_count"] = 0
	}
}

// expandedSchema is the schema of an expandable field's expanded form:
// the branch of its anyOf that is not the id, else its own.
func expandedSchema(s *base.Schema) *base.Schema {
	for _, p := range s.AnyOf {
		if b := p.Schema(); b != nil && !slices.Contains(b.Type, "string") {
			return b
		}
	}
	return s
}

// expanded generates the expanded form of an expandable field: the
// branch of its anyOf that is not the id (a string), or its own schema
// when it is an object (a list). It returns nil when there is none.
func (a *api) expanded(s *base.Schema) any {
	if s == nil {
		return nil
	}
	g := generator{api: a}
	if b := expandedSchema(s); b != s || slices.Contains(s.Type, "object") || s.Properties != nil {
		return g.value(b, 0)
	}
	return nil
}

// expandable returns the collection path of the resource an expandable
// field's schema offers (one of its anyOf branches), or "".
func (a *api) expandable(s *base.Schema) string {
	if s == nil {
		return ""
	}
	for _, p := range s.AnyOf {
		if b := p.Schema(); b != nil {
			if path := a.collections[resourceID(b)]; path != "" {
				return path
			}
		}
	}
	return ""
}
