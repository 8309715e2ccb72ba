package scenarios

import (
	"bytes"
	"fmt"
	"strconv"
	"text/template"

	"gopkg.in/yaml.v3"
)

// CollectionOp is what a response does with a stored collection, besides
// (or instead of) rendering its body.
type CollectionOp string

// The collection operations of a response.
const (
	// OpLoad answers the saved body of one item.
	OpLoad CollectionOp = "load"
	// OpList answers a collection's items, in the order they were created
	// (newest first with ItemRef.Newest).
	OpList CollectionOp = "list"
	// OpDelete removes one item.
	OpDelete CollectionOp = "delete"
)

// ItemRef names a collection and, except for list, one item of it.
type ItemRef struct {
	Pos        Pos
	Collection string
	// ID renders the item's id; it is always a template, whether or not
	// the response is one.
	ID *template.Template
	// Paged, on list:, pages as Stripe does: ?limit= (1 to 100, default
	// 10), ?starting_after= and ?ending_before= an item's id.
	Paged bool
	// Newest, on list:, answers the newest item first, as Stripe's lists
	// do; paging then runs from the newest too.
	Newest bool
	// Resource, on a save: entry of a route that names an operation,
	// names a resource of the route's OpenAPI document (its x-resourceId
	// or component name: invoice) in place of Collection: the item goes
	// where the document keeps that resource's objects, in the
	// document's scope, as if its create had made it.
	Resource string
	// Body, on a save: entry, is the item to save in place of the
	// answer: a JSON template that sees what the id template sees
	// (.Response the answer, .Request, .Item).
	Body *JSONTemplate
	// Merge, with Body, lays the body on the item as stored (its fields
	// replace the stored ones, mappings merge) instead of replacing it,
	// and makes no item where none is stored: an update of another
	// object (paying a subscription's first invoice activates it).
	Merge bool
	// Events, on a save: entry with a body, are sent when the entry
	// saves, about the item it saved (its data.object, what their data:
	// sees as .Response and their when: tests); with merge: a *.updated
	// one has the fields the merge changed, with their values before, as
	// data.previous_attributes (paying a subscription's first invoice:
	// customer.subscription.updated, previous_attributes {status:
	// incomplete}). An entry that saves nothing sends none.
	Events []*Event
	// Scope says whose the collection is: with Credential each API key
	// (the Authorization header's Bearer token or Basic user, as
	// matcher.Credential reads it) has a collection of this name of its
	// own, as each Stripe account has its objects, and with Headers each
	// of their values within it; the zero Scope when all requests share
	// it.
	Scope Scope
}

// Seed is a collection a file fills at load and POST /__admin/reset
// fills again.
type Seed struct {
	Pos   Pos
	Name  string
	Items []SeedItem
}

// SeedItem is one seeded item: its id and its JSON body.
type SeedItem struct {
	ID   string
	Body []byte
}

// listFields are list:'s fields.
var listFields = []string{"collection", "paged", "newest", "scope"}

// itemRef decodes save:, load: or delete: (withID) or list: (without).
func (d *fileDecoder) itemRef(n *yaml.Node, field string, withID bool) *ItemRef {
	known := []string{"collection", "id", "scope"}
	if !withID {
		known = listFields
	}
	fs, ok := d.fields(n, field, known...)
	if !ok {
		return nil
	}
	return d.itemRefFields(n, fs, field, withID)
}

// itemRefFields decodes the fields fs of an item reference n: collection:,
// scope:, and id: (withID) or list:'s own.
func (d *fileDecoder) itemRefFields(n *yaml.Node, fs map[string]pair, field string, withID bool) *ItemRef {
	ref := &ItemRef{Pos: d.pos(d.resolve(n))}
	p, ok := fs["collection"]
	if !ok {
		d.fail(d.resolve(n), field, "collection: is required (the name of the collection)")
		return nil
	}
	name, ok := d.str(p.val, join(field, "collection"))
	if !ok {
		return nil
	}
	if !validCollectionName(name) {
		d.fail(d.resolve(p.val), join(field, "collection"), "%s is not a collection name: use letters, digits, '-', '_' and '.'", strconv.Quote(name))
		return nil
	}
	ref.Collection = name
	if p, ok := fs["scope"]; ok {
		ref.Scope = d.scope(p.val, join(field, "scope"))
	}
	if !withID {
		if p, ok := fs["paged"]; ok {
			ref.Paged, _ = d.boolean(p.val, join(field, "paged"))
		}
		if p, ok := fs["newest"]; ok {
			ref.Newest, _ = d.boolean(p.val, join(field, "newest"))
		}
		return ref
	}
	if ref.ID = d.itemID(n, fs, field); ref.ID == nil {
		return nil
	}
	return ref
}

// itemID decodes the id: of an item reference n, always a template; nil
// when it is missing or does not parse.
func (d *fileDecoder) itemID(n *yaml.Node, fs map[string]pair, field string) *template.Template {
	p, ok := fs["id"]
	if !ok {
		d.fail(d.resolve(n), field, "id: is required (a template such as '{{ .Request.Vars.id }}')")
		return nil
	}
	text, ok := d.str(p.val, join(field, "id"))
	if !ok {
		return nil
	}
	t, err := parseTemplate(text)
	if err != nil {
		d.templateError(d.resolve(p.val), join(field, "id"), err)
		return nil
	}
	return t
}

// saves decodes save:, one entry or a list of them, into r: an entry
// without body: saves the answer (r.Save; at most one, and none on a
// route that names an operation, which stores its answer itself), one
// with body: saves that beside it (r.Also). hasBody says whether r
// renders a body.
func (d *fileDecoder) saves(p pair, field string, r *Response, hasBody bool) {
	f := join(field, "save")
	n := d.resolve(p.val)
	entries, list := []*yaml.Node{n}, n.Kind == yaml.SequenceNode
	if list {
		entries = n.Content
		if len(entries) == 0 {
			d.fail(n, f, "want an entry ({ collection, id }) or a list of them, got an empty list")
		}
	}
	for i, e := range entries {
		ef := f
		if list {
			ef = fmt.Sprintf("%s[%d]", f, i)
		}
		ref := d.saveEntry(e, ef)
		switch {
		case ref == nil:
		case ref.Body != nil:
			r.Also = append(r.Also, ref)
		case d.operation:
			d.fail(d.resolve(e), ef, "the operation stores its answer itself: an entry here needs a body: of its own (an object saved beside the answer)")
		case r.Save != nil:
			d.fail(d.resolve(e), ef, "a second entry without body: (the answer is saved once; give this one a body: of its own)")
		case !hasBody:
			d.fail(p.key, f, "needs a body: (or bodyFile:) to save")
		default:
			r.Save = ref
		}
	}
}

// saveEntry decodes one entry of save:: collection: or, on a route that
// names an operation, resource: (checked against its document when the
// operation is linked), id:, scope: (with collection:), body:, and
// merge: and events: (with body:).
func (d *fileDecoder) saveEntry(n *yaml.Node, field string) *ItemRef {
	fs, ok := d.fields(n, field, "collection", "resource", "id", "scope", "body", "merge", "events")
	if !ok {
		return nil
	}
	merge := false
	if p, ok := fs["merge"]; ok {
		if merge, _ = d.boolean(p.val, join(field, "merge")); merge {
			if _, ok := fs["body"]; !ok {
				d.fail(p.key, join(field, "merge"), "goes with body: (what is laid on the stored item)")
				return nil
			}
		}
	}
	var ref *ItemRef
	if res, ok := fs["resource"]; ok {
		f := join(field, "resource")
		for _, k := range []string{"collection", "scope"} {
			if p, ok := fs[k]; ok {
				d.fail(p.key, join(field, k), "does not go with resource: (the item goes where the OpenAPI document keeps that resource, in the document's scope)")
				return nil
			}
		}
		if !d.operation {
			d.fail(res.key, f, "names a resource of the route's OpenAPI document: it goes with operation: (else name a collection:)")
			return nil
		}
		name, ok := d.str(res.val, f)
		if !ok {
			return nil
		}
		if name == "" {
			d.fail(d.resolve(res.val), f, "want a resource's name (its x-resourceId: invoice), got an empty string")
			return nil
		}
		if _, ok := fs["body"]; !ok {
			d.fail(d.resolve(n), field, "resource: needs a body: (the object to save)")
			return nil
		}
		ref = &ItemRef{Pos: d.pos(d.resolve(res.val)), Resource: name}
		if ref.ID = d.itemID(n, fs, field); ref.ID == nil {
			return nil
		}
	} else if ref = d.itemRefFields(n, fs, field, true); ref == nil {
		return nil
	}
	if p, ok := fs["body"]; ok {
		f := join(field, "body")
		b := d.resolve(p.val)
		if b.Kind != yaml.MappingNode {
			d.fail(b, f, "is the item to save, a JSON template that sees the answer as .Response: want a mapping, got %s", describe(b))
			return nil
		}
		if ref.Body, ok = d.jsonTemplate(b, f); !ok {
			return nil
		}
	}
	ref.Merge = merge
	if p, ok := fs["events"]; ok {
		if _, ok := fs["body"]; !ok {
			d.fail(p.key, join(field, "events"), "goes with body: (the events are about the item the entry saves; the answer's own go in the route's events:)")
			return nil
		}
		ref.Events = d.events(p.val, join(field, "events"))
	}
	return ref
}

// validCollectionName keeps names usable as one admin path segment.
func validCollectionName(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// seeds decodes the file-level collections: mapping, name → list of
// items, each a mapping whose id: field (a string or an integer) is its id.
func (d *fileDecoder) seeds(n *yaml.Node) []*Seed {
	ps, ok := d.pairs(n, "collections")
	if !ok {
		return nil
	}
	var out []*Seed
	for _, p := range ps {
		f := join("collections", p.key.Value)
		if !validCollectionName(p.key.Value) {
			d.fail(p.key, f, "%s is not a collection name: use letters, digits, '-', '_' and '.'", strconv.Quote(p.key.Value))
			continue
		}
		list := d.resolve(p.val)
		if list.Kind == yaml.ScalarNode && list.ShortTag() == "!!null" {
			out = append(out, &Seed{Pos: d.pos(p.key), Name: p.key.Value})
			continue
		}
		if list.Kind != yaml.SequenceNode {
			d.fail(list, f, "want a list of items, got %s", describe(list))
			continue
		}
		s := &Seed{Pos: d.pos(p.key), Name: p.key.Value}
		seen := map[string]int{}
		for i, in := range list.Content {
			itf := fmt.Sprintf("%s[%d]", f, i)
			item := d.resolve(in)
			if item.Kind != yaml.MappingNode {
				d.fail(item, itf, "want a mapping with an id: field, got %s", describe(item))
				continue
			}
			var idNode *yaml.Node
			for j := 0; j+1 < len(item.Content); j += 2 {
				if item.Content[j].Value == "id" {
					idNode = d.resolve(item.Content[j+1])
				}
			}
			if idNode == nil {
				d.fail(item, itf, "id: is required (the item's id, used by load: and delete:)")
				continue
			}
			if idNode.Kind != yaml.ScalarNode || (idNode.ShortTag() != "!!str" && idNode.ShortTag() != "!!int") || idNode.Value == "" {
				d.fail(idNode, join(itf, "id"), "want a non-empty string or integer, got %s", describe(idNode))
				continue
			}
			if first, dup := seen[idNode.Value]; dup {
				d.fail(idNode, join(itf, "id"), "duplicate id %s (first at %s[%d])", strconv.Quote(idNode.Value), f, first)
				continue
			}
			seen[idNode.Value] = i
			var buf bytes.Buffer
			if !d.encodeJSON(&buf, item, itf, 0) {
				continue
			}
			s.Items = append(s.Items, SeedItem{ID: idNode.Value, Body: buf.Bytes()})
		}
		out = append(out, s)
	}
	return out
}

// collectionOps decodes save:, load:, list:, delete: and missing: of a
// response and checks that they go together.
func (d *fileDecoder) collectionOps(fs map[string]pair, field string, r *Response, hasBody bool, vars []string) {
	var ops []pair
	for _, op := range []string{string(OpLoad), string(OpList), string(OpDelete)} {
		p, ok := fs[op]
		if !ok {
			continue
		}
		ops = append(ops, p)
		if len(ops) > 1 {
			d.fail(p.key, join(field, op), "load:, list: and delete: exclude each other (a response does one of them)")
			continue
		}
		r.Op = CollectionOp(op)
		r.Ref = d.itemRef(p.val, join(field, op), r.Op != OpList)
	}
	if p, ok := fs["save"]; ok {
		if r.Op != "" {
			d.fail(p.key, join(field, "save"), "does not go with %s: (save: stores the body this response renders)", r.Op)
		} else {
			d.saves(p, field, r, hasBody)
		}
	}
	if r.Op == OpLoad && hasBody {
		for _, b := range []string{"body", "bodyFile"} {
			if p, ok := fs[b]; ok {
				d.fail(p.key, join(field, b), "does not go with load: (load: answers the saved body; to wrap items, use list: with a template)")
			}
		}
	}
	if p, ok := fs["missing"]; ok {
		f := join(field, "missing")
		if r.Op != OpLoad && r.Op != OpDelete && !d.operation {
			d.fail(p.key, f, "is the answer when load: or delete: finds no item; this response has neither")
			return
		}
		m := d.missingResponse(p.val, f, vars)
		if m != nil && (m.Op != "" || m.Save != nil || len(m.Also) > 0) {
			d.fail(p.key, f, "cannot itself save, load, list or delete")
			return
		}
		r.Missing = m
	}
}

// missingResponse decodes a missing: answer, which is an answer of its
// own also on a route that names an operation.
func (d *fileDecoder) missingResponse(n *yaml.Node, field string, vars []string) *Response {
	// The delay and fault are the route's response's, drawn before the
	// item is looked for (merge keys count: <<: *base).
	if kv, ok := d.firstOf(n, field, "delay", "fault"); ok {
		d.fail(kv.key, join(field, kv.key.Value), "is the route's: the %s of the response that has this missing: applies to it too", kv.key.Value)
		return nil
	}
	op := d.operation
	d.operation = false
	defer func() { d.operation = op }()
	return d.response(n, field, vars)
}

// routeMissing decodes a route's missing:, the answer of each of its
// load: and delete: responses that has none of its own.
func (d *fileDecoder) routeMissing(p pair, r *Route) {
	m := d.missingResponse(p.val, "missing", r.Vars)
	if m == nil {
		return
	}
	if m.Op != "" || m.Save != nil || len(m.Also) > 0 {
		d.fail(p.key, "missing", "cannot itself save, load, list or delete")
		return
	}
	used := false
	for _, resp := range r.Responses {
		if resp.Op == OpLoad || resp.Op == OpDelete || r.OperationName != "" || r.ScopeOf != nil {
			used = true
			if resp.Missing == nil {
				resp.Missing = m
			}
		}
	}
	if !used && len(r.Responses) > 0 {
		d.fail(p.key, "missing", "is the answer when load: or delete: finds no item, or scopeOf: no object; this route has none of them")
	}
}
