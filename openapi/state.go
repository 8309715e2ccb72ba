package openapi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pb33f/libopenapi/datamodel/high/base"

	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
)

// markActions finds, among a document's operations, the actions: a POST
// to a literal verb below a resource's path (/v1/payment_intents/{intent}/
// confirm) whose answer is the resource that path reads (a payment_intent,
// by x-resourceId or component name). classify took them for creates in a
// collection of their own; they act on the stored object instead, as an
// update does, so that a confirmed or canceled intent is read back so.
// A DELETE that answers the resource itself, in a spec whose deletes
// answer deleted objects, is an action too.
func markActions(ops []*Operation) {
	reads := map[string]string{} // a read's path → the resource it answers
	for _, o := range ops {
		if o.kind == opRead {
			reads[o.Path] = o.resource()
		}
	}
	for _, o := range ops {
		if o.kind != opCreate {
			continue
		}
		parent := o.Path[:strings.LastIndexByte(o.Path, '/')]
		res, ok := reads[parent]
		if !ok || res == "" || res != o.resource() {
			continue
		}
		i := strings.LastIndex(parent, "/{")
		o.kind, o.collection, o.idVar = opAction, parent[:i], parent[i+2:len(parent)-1]
	}
	// Where the spec's deletes answer an object that says so (Stripe's
	// deleted_customer, whose deleted can only be true: a soft-deleted
	// resource's deleted: boolean does not say so), a DELETE that answers
	// the very resource its path reads instead is no deletion: Stripe's
	// DELETE /v1/subscriptions/{id} cancels, and the subscription is still
	// there, canceled. It acts on the stored object as an action does. In
	// a spec without that convention, a DELETE that answers the resource
	// answers what it deleted, and deletes.
	says := func(o *Operation) bool {
		resp, _ := o.response(0)
		_, schema := mediaOf(resp)
		d := propertyOf(schema, "deleted", 0)
		if d == nil {
			return false
		}
		if d.Const != nil {
			return d.Const.Value == "true"
		}
		return len(d.Enum) == 1 && d.Enum[0].Value == "true"
	}
	if !slices.ContainsFunc(ops, func(o *Operation) bool { return o.kind == opDelete && says(o) }) {
		return
	}
	deletes := map[string]*Operation{} // a path → its DELETE that answers a deleted object
	for _, o := range ops {
		if o.kind != opDelete {
			continue
		}
		if says(o) {
			deletes[o.Path] = o
			continue
		}
		if res, ok := reads[o.Path]; ok && res != "" && res == o.resource() {
			o.kind = opAction
		}
	}
	// A read whose answer may be that deleted object (Stripe's GET
	// /v1/customers/{customer} answers anyOf customer, deleted_customer)
	// answers it for an id that was deleted, rather than the 404 of an id
	// never created.
	for _, o := range ops {
		d, ok := deletes[o.Path]
		if o.kind != opRead || !ok {
			continue
		}
		resp, _ := o.response(0)
		_, schema := mediaOf(resp)
		if schema == nil {
			continue
		}
		for _, alt := range slices.Concat(schema.AnyOf, schema.OneOf) {
			if r := resourceOf(alt); r != "" && r == d.resource() {
				o.deletedAs = d
			}
		}
	}
}

// markKeys gives each operation the path variable that names one item
// of its collection (keyVar): its own, or, on a create or a list, that of
// the collection's read, so that a create stores what it makes by the
// field the read finds it by (keyOf: GitHub's POST .../issues stores an
// issue by its number, which GET .../issues/{issue_number} reads). Only
// names are noted here: the field is read from the schemas on first use
// (shapeOf), as compiling every schema at load would cost.
func markKeys(ops []*Operation) {
	reads := map[string]string{} // a collection's path → the variable its read names an item by
	for _, o := range ops {
		if o.kind == opRead && o.idVar != "" {
			reads[o.collection] = o.idVar
		}
	}
	for _, o := range ops {
		o.keyVar = cmp.Or(o.idVar, reads[o.collection])
	}
}

// resource names what the operation's success answer is (resourceOf).
func (o *Operation) resource() string {
	resp, _ := o.response(0)
	mt, _ := o.mediaOf(resp)
	if mt == nil {
		return ""
	}
	return resourceOf(mt.Schema)
}

// resourceOf names the resource a schema is: its x-resourceId, else the
// component its $ref names; "" when neither.
func resourceOf(p *base.SchemaProxy) string {
	if p == nil {
		return ""
	}
	if id := resourceID(p.Schema()); id != "" {
		return id
	}
	if p.IsReference() {
		ref := p.GetReference()
		return ref[strings.LastIndexByte(ref, '/')+1:]
	}
	return ""
}

// parentRef is the stored resource a create nests below (markUnder):
// its collection (/v1/customers) and the path's variable that names it
// (customer).
type parentRef struct{ coll, variable string }

// markUnder finds the creates nested below one stored resource (POST
// /v1/customers/{customer}/tax_ids, Svix's POST /api/v1/app/{app_id}/endpoint),
// whose parent's collection is one a POST creates: such a create under an
// id never created answers the parent's 404, as the API does, rather than
// an item no parent has (underUnknown); and the item's field named as the
// variable (a tax id's customer), when it has one, is the parent's id.
func markUnder(routes []*scenarios.Route, created map[string]bool) {
	for _, r := range routes {
		o := r.Operation.(*Operation)
		if o.kind != opCreate {
			continue
		}
		if parent, ok := storedParent(o.collection, created); ok {
			o.under = &parent
		}
	}
}

// storedParent is the stored resource a collection path lies directly
// below (/v1/customers/{customer}/tax_ids: /v1/customers, customer), when
// its path has no other variable and a POST creates into it.
func storedParent(collection string, created map[string]bool) (parentRef, bool) {
	parent := collection[:max(0, strings.LastIndexByte(collection, '/'))]
	i := strings.LastIndex(parent, "/{")
	if i < 0 || !strings.HasSuffix(parent, "}") || strings.Contains(parent[:i], "{") || !created[parent[:i]] {
		return parentRef{}, false
	}
	return parentRef{coll: parent[:i], variable: parent[i+2 : len(parent)-1]}, true
}

// underUnknown answers, for a create below a stored resource whose id was
// never created (or was deleted), the parent's 404; ok is false when the
// parent is stored, or ids never created are generated (unknownIds:
// generate, where any id stands for one).
func (o *Operation) underUnknown(ctx context.Context, x Exchange) (status int, body []byte, ok bool, err error) {
	if o.under == nil || o.api.generate {
		return 0, nil, false, nil
	}
	id := x.Vars[o.under.variable]
	_, found, err := x.Store.Load(ctx, o.api.storeName(x.Request, o.under.coll), id)
	if found || err != nil {
		return 0, nil, false, err
	}
	status, body = o.noSuchIn(o.under.coll, http.StatusNotFound, o.under.variable, id)
	return status, body, true, nil
}

// markNested finds, among lists that nothing creates into, those nested
// below a stored resource whose items are made elsewhere: GET
// /v1/customers/{customer}/payment_methods lists payment methods, which
// POST /v1/payment_methods creates and attaching gives a customer. Such a
// list reads the collection that creates its items, narrowed to those
// whose field named as the path's variable (customer) is the parent's id;
// before, it could only answer the spec's example, whatever was attached.
// A read of one of its items reads the same collection (readNested).
// The items must have that field, one collection alone must create their
// resource, and the parent's collection must be one a POST creates.
func markNested(routes []*scenarios.Route, created map[string]bool) {
	makers := map[string]string{} // a resource → the one collection that creates it ("" when several do)
	for _, r := range routes {
		o := r.Operation.(*Operation)
		if o.kind != opCreate || strings.Contains(o.collection, "{") {
			continue
		}
		res := o.resource()
		if res == "" {
			continue
		}
		if prev, ok := makers[res]; ok && prev != o.collection {
			makers[res] = ""
			continue
		}
		makers[res] = o.collection
	}
	nested := map[string]*nestedList{} // a nested list's path → what it reads
	for _, r := range routes {
		o := r.Operation.(*Operation)
		if o.kind != opList || created[o.collection] {
			continue
		}
		parent, ok := storedParent(o.collection, created)
		if !ok {
			continue
		}
		resp, _ := o.response(o.status)
		_, schema := mediaOf(resp)
		items, _ := listItemsProxy(schema)
		from, variable := makers[resourceOf(items)], parent.variable
		if from == "" && items != nil {
			// Nothing creates the items (a Checkout Session's
			// line_items): the parent keeps them, if anything does.
			o.nested = &nestedList{parent: parent.coll, variable: variable, field: o.collection[strings.LastIndexByte(o.collection, '/')+1:]}
			continue
		}
		// {id} names the parent, but an item's id field is its own: the
		// items cannot say whose they are by it (/users/{id}/orders).
		if from == "" || items == nil || variable == "id" || propertyOf(items.Schema(), variable, 0) == nil {
			continue
		}
		o.nested = &nestedList{from: from, parent: parent.coll, variable: variable}
		nested[o.collection] = o.nested
	}
	// A read of one item of such a list (GET /v1/customers/{customer}/
	// payment_methods/{payment_method}) reads it where it was made.
	for _, r := range routes {
		if o := r.Operation.(*Operation); o.kind == opRead && nested[o.collection] != nil {
			o.nested = nested[o.collection]
		}
	}
}

// Stored returns what a read, update, action or delete acts on: the
// stored object of the request's id, as stored before the request, and
// whether there is one; for a read of a nested list's item, the item
// where it was made (readNested checks whose it is). A route naming the
// operation shows it to its templates as .Item, so that a confirm can
// answer the stored amount as amount_received.
func (o *Operation) Stored(ctx context.Context, x Exchange) ([]byte, bool, error) {
	x.Vars = o.canonicalVars(x.Vars)
	if !o.actsOnStored() {
		return nil, false, nil
	}
	id, ok := x.Vars[o.idVar]
	if !ok || x.Store == nil {
		return nil, false, nil
	}
	coll := o.collectionName(x.Request, x.Vars)
	if o.nested != nil {
		coll = o.api.storeName(x.Request, o.nested.from)
	}
	body, found, err := x.Store.Load(ctx, coll, id)
	if found || err != nil || !x.Create || (o.kind != opUpdate && o.kind != opAction) || o.nested != nil {
		return body, found, err
	}
	// unknownIds: create: what the operation will act on, made from the
	// spec, unless the id was deleted.
	if _, deleted, err := x.Store.Load(ctx, tombstones(coll), id); err != nil || deleted {
		return nil, false, err
	}
	if made := o.made(x, id); made != nil {
		return made, true, nil
	}
	return nil, false, nil
}

// made is an object of o's resource made from the spec with id, as a
// create would make it (created now), for an update or action on an id
// never created (Exchange.Create); nil when the answer is no JSON object.
func (o *Operation) made(x Exchange, id string) []byte {
	status, v, _, isRaw := o.generateValue(0, "", map[string]any{}, Exchange{Request: x.Request, Vars: x.Vars, Rand: x.Rand})
	obj, ok := v.(map[string]any)
	if isRaw || !ok {
		return nil
	}
	if inner, _ := o.itemIn(obj, status); inner != nil {
		obj = inner
	}
	key := o.keyField()
	obj[key] = idLike(obj[key], id)
	switch obj["created"].(type) {
	case float64, int, int64, json.Number: // Stripe's creation time, in unix seconds
		obj["created"] = time.Now().Unix()
	}
	b, _ := marshal(obj)
	return b
}

// idLike is the path's id as the answer carries its id: a number where
// the example's id is one (an integer id, /todos/5 is {"id": 5}). A path
// value that is no integer keeps the example's number: the variable names
// the object by something else (GitHub's /orgs/{org}, a login), and a
// string there would break the answer's schema.
func idLike(example any, id string) any {
	switch example.(type) {
	case float64, int, int64, json.Number:
		if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			return n
		}
		return example
	}
	return id
}

// badReference answers a body that names a stored resource by an id that
// is not there: Stripe's 400 resource_missing naming the parameter ("No
// such customer: 'cus_1'"), bad true. A body field is a reference when
// the answer's schema offers the field of that name expanded to a
// resource this document creates (expand.go: a payment intent's
// customer). An id deleted is refused whatever unknownIds says; one never
// created only under unknownIds: 404, since stripe-mock's mode takes
// made-up ids. Ids the source's existingIds matches are taken as there.
// schema is the schema of o's answer, which the caller has at hand.
func (o *Operation) badReference(ctx context.Context, x Exchange, in map[string]any, schema *base.Schema) (int, []byte, bool, error) {
	if !o.api.references || len(in) == 0 || len(o.api.collections) == 0 || schema == nil {
		return 0, nil, false, nil
	}
	// The keys that name a resource by an id, in order, so that the
	// first refused is the same from one request to the next; on the
	// stack for the usual few (slices.Sorted(maps.Keys) grew a slice on
	// the heap through an iterator, five allocations a create).
	type named struct{ key, id, path string }
	var room [8]named
	refs := room[:0]
	for k, v := range in {
		id, ok := v.(string)
		if !ok || id == "" || o.api.existing != nil && o.api.existing.MatchString(id) {
			continue
		}
		if path := o.api.expandable(propertyOf(schema, k, 0)); path != "" {
			refs = append(refs, named{k, id, path})
		}
	}
	slices.SortFunc(refs, func(a, b named) int { return strings.Compare(a.key, b.key) })
	for _, ref := range refs {
		k, id, path := ref.key, ref.id, ref.path
		coll := o.api.storeName(x.Request, path)
		_, found, err := x.Store.Load(ctx, coll, id)
		if err != nil {
			return 0, nil, false, err
		}
		if found {
			continue
		}
		if o.api.generate {
			_, deleted, err := x.Store.Load(ctx, tombstones(coll), id)
			if err != nil {
				return 0, nil, false, err
			}
			if !deleted {
				continue
			}
		}
		status, body := o.fieldError(http.StatusBadRequest, "body", k, "resource_missing", noSuchMessage(path, id))
		return status, body, true, nil
	}
	return 0, nil, false, nil
}

// ActsOnStored reports whether o reads, updates, deletes or acts on a
// stored object named by its path (its refuse: and cases: test it).
func (o *Operation) ActsOnStored() bool { return o.actsOnStored() }

// Changes returns the id of the stored object that o changes for a
// request with the path variables vars (an update, an action, a
// delete), or "" when it changes none (a create, a read, a list, a
// document without state). The server locks it, so that two requests
// that change one object run one after the other.
func (o *Operation) Changes(vars map[string]string) string {
	if !o.ChangesStored() {
		return ""
	}
	return o.canonicalVars(vars)[o.idVar]
}

// ChangesStored reports whether o changes a stored object that its path
// names (Changes).
func (o *Operation) ChangesStored() bool {
	switch o.kind {
	case opUpdate, opDelete, opAction:
		return o.api.state && o.idVar != ""
	}
	return false
}

// actsOnStored says whether o reads, updates, deletes or acts on one
// stored object (the one Stored reads).
func (o *Operation) actsOnStored() bool {
	switch o.kind {
	case opRead, opUpdate, opDelete, opAction:
		return true
	}
	return false
}

// StoredResource returns the stored object of a resource of o's document
// (a schema's x-resourceId, as expand[] knows them: payment_intent) with
// id, in the request's scope; found false when the
// document creates no such resource or none has that id.
func (o *Operation) StoredResource(ctx context.Context, x Exchange, resource, id string) ([]byte, bool, error) {
	path := o.api.collections[resource]
	if path == "" || x.Store == nil || id == "" {
		return nil, false, nil
	}
	return x.Store.Load(ctx, o.api.storeName(x.Request, path), id)
}

// ResourceCollection is the stored collection in which o's document
// keeps the objects of resource (as StoredResource finds them) for the
// request r, in the document's scope; "" when the document creates no
// such resource. A route's save: entry with resource: saves there.
func (o *Operation) ResourceCollection(r *http.Request, resource string) string {
	path := o.api.collections[resource]
	if path == "" {
		return ""
	}
	return o.api.storeName(r, path)
}

// ItemCollection is where a route's save: entry of resource puts item
// (its JSON) for the request r: ResourceCollection's, or, for a resource
// only created below another (Stripe's payment_source, made by POST
// /v1/customers/{customer}/sources), the collection of the parent the
// item names by the path's variable (its customer field), where that
// create would have kept it, as storedWhere reads it. Of several such
// creates (/bank_accounts, /cards, /sources) the one whose path ends in
// the resource's plural, or its last word's (sources of payment_source);
// else the first. "" when the document keeps no such resource or the
// item names no parent.
func (o *Operation) ItemCollection(r *http.Request, resource string, item []byte) string {
	if coll := o.ResourceCollection(r, resource); coll != "" {
		return coll
	}
	paths := o.api.nested[resource]
	if len(paths) == 0 {
		return ""
	}
	path := paths[0]
	plural := "_" + resource + "s"
	for _, p := range paths {
		if strings.HasSuffix(plural, "_"+p[strings.LastIndexByte(p, '/')+1:]) {
			path = p
			break
		}
	}
	var obj map[string]any
	_ = json.Unmarshal(item, &obj) // not an object: it names no parent
	for _, v := range pathVars(path) {
		parent, _ := obj[v].(string)
		if parent == "" || strings.Contains(parent, "/") {
			return ""
		}
		path = strings.Replace(path, "{"+v+"}", parent, 1)
	}
	return o.api.storeName(r, path)
}

// OwnsCollection reports whether name (a collection of the state store)
// is where the document keeps resource, in whatever scope: the admin API
// finds a stored object by its id without the request that stored it.
func (o *Operation) OwnsCollection(name, resource string) bool {
	_, ok := o.CollectionOwner(name, resource)
	return ok
}

// CollectionOwner returns whose name (a collection of the state store)
// is, as matcher.Owner says it for the document's scope ("" for
// everyone's), when name is where the document keeps resource in some
// scope; ok is false for any other collection.
func (o *Operation) CollectionOwner(name, resource string) (owner string, ok bool) {
	path := o.api.collections[resource]
	switch {
	case path == "":
		return "", false
	case o.api.scope.IsZero():
		return "", name == "openapi "+path
	}
	rest, ok := strings.CutPrefix(name, "openapi ")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, " "+path) // "" for a request that carried nothing the scope reads
}

// Scope returns the scope of o's document (its openapi: block's scope:).
func (o *Operation) Scope() scenarios.Scope { return o.api.scope }

// ResourceBase returns the object a route's save: entry of resource
// starts from, as a create of it starts from its fixture: the document's
// fixture of resource, with id in place of the fixture's own wherever it
// is written (carryIDs, as a create carries its new id); nil when the
// fixtures have none.
func (o *Operation) ResourceBase(resource, id string) []byte {
	obj, ok := o.api.fixtureNamed(resource).(map[string]any)
	if !ok {
		return nil
	}
	defer release(obj)
	if old, _ := obj["id"].(string); old != "" && old != id {
		carryIDs(obj, old, id)
	}
	obj["id"] = id
	b, err := marshal(obj)
	if err != nil {
		return nil
	}
	return b
}

// EventFixture returns the fixture of the object an event of type typ is
// about, as Stripe names its events (<object>.<action>): the fixture of
// its object's name (invoice of invoice.payment_failed, checkout.session
// of checkout.session.completed), else of that name without its leading
// parts (subscription of customer.subscription.updated, dispute of
// charge.dispute.created); nil when the fixtures have none.
func (o *Operation) EventFixture(typ string) []byte {
	i := strings.LastIndexByte(typ, '.')
	if i <= 0 {
		return nil
	}
	for name := typ[:i]; name != ""; {
		if raw, ok := o.api.fixtures[name]; ok {
			return raw
		}
		_, rest, ok := strings.Cut(name, ".")
		if !ok {
			break
		}
		name = rest
	}
	return nil
}

// plainID says whether id is made of letters, digits, '_', '-' and '.'
// only, which JSON writes as they are: a string that holds such an id
// holds it in its encoding too.
func plainID(id string) bool {
	for i := range len(id) {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-', c == '.':
		default:
			return false
		}
	}
	return true
}

// containsID reports whether body contains id, as bytes.Contains does,
// in fewer instructions for a prefixed id (Stripe's cus_NffrFeUfNV2Hib):
// it looks for the part after the last '_' first, then for the prefix
// before it. The prefix's first byte is common in JSON ("c" of
// "created", "currency"), so searching for the whole id stopped at each
// one; the random part's bytes stop it far less often.
func containsID(body []byte, id string) bool {
	i := strings.LastIndexByte(id, '_') + 1
	if i == 0 || i == len(id) {
		return bytes.Contains(body, []byte(id))
	}
	head, tail := id[:i], id[i:]
	for from := i; from <= len(body); {
		j := bytes.Index(body[from:], []byte(tail))
		if j < 0 {
			return false
		}
		j += from
		if string(body[j-i:j]) == head {
			return true
		}
		from = j + 1
	}
	return false
}

// carryIDs gives obj, an object made from an example or fixture whose id
// was old, the new id in the strings that carry old: a payment intent's
// client_secret is its id, "_secret_", a secret. An id long enough to be
// told from other text anywhere in a value, nested ones too: a Checkout
// Session's url ends in its id, a Stripe subscription's items name it
// (items.data[0].subscription, items.url). One too short (1, ab) only as
// a string's start. obj's own id is the caller's to set.
func carryIDs(obj map[string]any, old, id string) {
	for k, v := range obj {
		s, isString := v.(string)
		switch {
		case k == "id":
		case isString && strings.HasPrefix(s, old+"_"):
			obj[k] = id + s[len(old):]
		case len(old) >= 8:
			if c, changed := carryID(v, old, id); changed {
				obj[k] = c
			}
		}
	}
}

// Expand expands body, o's answer, again as the request's expand[]
// asks: what was stored since the answer was made (a route's save:
// entries) is expanded too, and what was expanded stays.
func (o *Operation) Expand(ctx context.Context, x Exchange, body []byte) ([]byte, error) {
	q := x.Request.URL.Query()
	in := x.Values
	if in == nil {
		in = o.requestValues(x.Request, x.Body)
	}
	return o.expand(ctx, x, expandFields(x.Request, q, in), body)
}

// StoredResources returns the stored objects of a resource of o's
// document in the request's scope, oldest first, for those whose field
// is value; none when the document creates no such resource. All of them
// where the document keeps the resource in one collection (the caller
// narrows them). A resource only created below another, in collections
// of each parent (a customer's sources), is read in the parent's that
// value names when field is the paths' variable (customer), each such
// collection's oldest first, in the document's order; else none.
func (o *Operation) StoredResources(ctx context.Context, x Exchange, resource, field, value string) ([][]byte, error) {
	if x.Store == nil {
		return nil, nil
	}
	var paths []string
	if path := o.api.collections[resource]; path != "" {
		paths = []string{path}
	} else if value != "" {
		for _, p := range o.api.nested[resource] {
			if strings.Contains(p, "/{"+field+"}/") {
				paths = append(paths, strings.Replace(p, "{"+field+"}", value, 1))
			}
		}
	}
	var out [][]byte
	for _, path := range paths {
		items, _, err := x.Store.List(ctx, o.api.storeName(x.Request, path), 0, 0)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			out = append(out, it.Body)
		}
	}
	return out, nil
}

// stateful answers a create, read, update, delete or list through the
// collections, or errNoState when the operation's answer has no id to
// keep it by.
func (o *Operation) stateful(ctx context.Context, x Exchange, in map[string]any, q url.Values) (int, []byte, error) {
	coll := o.collectionName(x.Request, x.Vars)
	tomb := o.tombstonesOf(coll)
	switch o.kind {
	case opCreate:
		if status, body, unknown, err := o.underUnknown(ctx, x); unknown || err != nil {
			return status, body, err
		}
		status, v, _, isRaw := o.generateValue(0, "", in, x)
		obj, ok := v.(map[string]any)
		resp, _ := o.response(o.status)
		_, schema := o.mediaOf(resp)
		outer := obj
		if inner, env := o.itemIn(obj, status); inner != nil {
			obj, schema = inner, o.itemSchema(schema, env) // the item is stored, not its envelope
		}
		key := o.keyField()
		if isRaw || !ok || obj[key] == nil {
			return 0, nil, errNoState
		}
		if status, body, bad, err := o.badReference(ctx, x, in, schema); bad || err != nil {
			release(obj)
			return status, body, err
		}
		old, isString := obj[key].(string)
		if !isString {
			old = fmt.Sprint(obj[key])
		}
		var id string
		var value any
		var err error
		if sent, isString := in[key].(string); isString && sent != "" && key != "id" {
			// A string key the request sends (GitHub's label name) is
			// the client's to choose; one stored already is refused, as
			// GitHub's 422 already_exists, rather than replaced.
			_, taken, err := x.Store.Load(ctx, coll, sent)
			if err != nil || taken {
				release(obj)
				if err != nil {
					return 0, nil, err
				}
				status, body := o.keyTaken(key, sent)
				return status, body, nil
			}
			id, value = sent, sent
		} else if id, value, err = o.newID(ctx, x, coll, tomb, old); err != nil {
			release(obj)
			return 0, nil, err
		}
		obj[key] = value
		if u := o.under; u != nil && u.variable != key {
			// The item names its parent as the path does (a tax id's
			// customer), not as the example did.
			if _, isString := obj[u.variable].(string); isString {
				obj[u.variable] = x.Vars[u.variable]
			}
		}
		if n, isInt := value.(int64); isInt && key != "id" {
			// An item read by its number (GitHub's issue) has an id
			// too: the same number, rather than every item the
			// example's id.
			switch obj["id"].(type) {
			case float64, int, int64, json.Number:
				obj["id"] = n
			}
		}
		switch obj["created"].(type) {
		case float64, int, int64, json.Number: // Stripe's creation time, in unix seconds
			obj["created"] = time.Now().Unix()
		}
		body, _ := marshal(obj)
		if !plainID(old) || containsID(body, old) {
			// Only then can a string carry the old id; the usual
			// object carries it nowhere, and walking it cost a create
			// as much as encoding it.
			carryIDs(obj, old, id)
			body, _ = appendJSON(body[:0], obj)
		}
		if _, err := x.Store.Save(ctx, coll, id, body); err != nil {
			release(obj)
			return 0, nil, err
		}
		if env := o.shapeOf().envelope; env != "" && outer != nil {
			carryEnvelope(outer, env, old, id)
			outer[env] = json.RawMessage(body)
			body, _ = marshal(outer)
		}
		release(obj)
		return status, body, nil
	case opRead, opUpdate, opDelete, opAction:
		if o.nested != nil {
			return o.readNested(ctx, x)
		}
		id := x.Vars[o.idVar]
		stored, found, err := x.Store.Load(ctx, coll, id)
		if err != nil {
			return 0, nil, err
		}
		if !found {
			_, deleted, err := x.Store.Load(ctx, tomb, id)
			if err != nil {
				return 0, nil, err
			}
			switch {
			case !deleted && x.Create && (o.kind == opUpdate || o.kind == opAction):
				// Made from the spec with the path's id, as if created,
				// and then acted on below.
				if stored = o.made(x, id); stored == nil {
					return 0, nil, errNoState
				}
			case deleted && o.deletedAs != nil:
				status, body := o.deletedAs.generate(0, "", nil, x) // {id, object, deleted: true}
				return status, body, nil
			case deleted || !o.api.generate:
				status, body := o.missing(id)
				return status, body, nil
			case o.kind != opDelete:
				return 0, nil, errNoState // generated, as stripe-mock answers
			}
		}
		switch o.kind {
		case opRead:
			return o.status, o.wrapped(o.status, stored, x), nil
		case opUpdate, opAction:
			resp, _ := o.response(o.status)
			_, schema := o.mediaOf(resp)
			if env := o.shapeOf().envelope; env != "" {
				schema = o.itemSchema(schema, env)
			}
			if status, body, bad, err := o.badReference(ctx, x, in, schema); bad || err != nil {
				return status, body, err
			}
			obj, ok := decodeObject(stored)
			if !ok {
				return o.status, stored, nil
			}
			sent := o.sentSchema(x.Request)
			if x.Request.Method == http.MethodPut && !o.formBody(x.Request) {
				replaced(obj, in, sent, schema, o.keyField())
			}
			mergePatch(obj, patchOf(x.Patch))
			// The id is the object's name, not the request's to change,
			// and a body whose schema lists its properties sets those
			// only (an order's createdAt stays the server's).
			var kept map[string]any
			for k := range in {
				if _, has := obj[k]; has && (k == "id" || k == o.keyField() || sent != nil && sent.Properties != nil && sent.Properties.Len() > 0 && propertyOf(sent, k, 0) == nil) {
					if kept == nil {
						kept = map[string]any{}
					}
					kept[k] = obj[k]
				}
			}
			absent := o.absentFields(obj, in, sent, schema, false)
			if o.formBody(x.Request) {
				reflectForm(obj, in, schema)
			} else {
				reflectValues(obj, in, schema)
			}
			settle(obj, in, absent, schema)
			maps.Copy(obj, kept)
			mergePatch(obj, patchOf(x.Override))
			body, _ := marshal(obj)
			if _, err := x.Store.Save(ctx, coll, id, body); err != nil {
				return 0, nil, err
			}
			return o.status, o.wrapped(o.status, body, x), nil
		case opDelete:
			// Only a stored object leaves a tombstone: an id never created
			// that unknownIds: generate answered stays generated, as
			// stripe-go's suite deletes and then reads the same made-up ids.
			if found {
				if _, err := x.Store.Delete(ctx, coll, id); err != nil {
					return 0, nil, err
				}
				if _, err := x.Store.Save(ctx, tomb, id, []byte("{}")); err != nil {
					return 0, nil, err
				}
			}
			status, body := o.generate(0, "", in, x)
			return status, body, nil
		}
	case opList:
		if o.nested != nil {
			return o.listNested(ctx, x, in, q)
		}
		return o.list(ctx, x, in, q, coll, nil)
	case opSearch:
		return o.search(ctx, x, in, q, coll)
	}
	return 0, nil, errNoState
}

// list answers a list: the stored items newest first, in the spec's list
// shape (an array, or an object whose data or items is the array), with
// limit and cursors (Stripe's starting_after and ending_before, or after
// and before) naming ids, and the page's facts (has_more, or
// hasNextPage, endCursor, total... where the shape has them; fillPage).
//
// parent, when set, is a nested list's condition on its parent
// (listNested): it narrows as a filter does, and an empty page of it is
// the answer even under unknownIds: generate.
func (o *Operation) list(ctx context.Context, x Exchange, in map[string]any, q url.Values, coll string, parent *condition) (int, []byte, error) {
	// A list of resources: its items have an id. A list of anything else
	// (strings, a report's rows) is answered from the spec.
	if !o.shapeOf().resources {
		return 0, nil, errNoState
	}
	items, _, err := x.Store.List(ctx, coll, 0, 0)
	if err != nil {
		return 0, nil, err
	}
	slices.Reverse(items) // newest first
	var cs []condition
	if parent != nil {
		cs = append(cs, *parent)
	}
	return o.page(x, in, q, items, cs, parent != nil)
}

// page answers a list of items, in list order: filtered by q's filters
// and the conditions cs, and paged. nested says that an empty page is the
// answer even under unknownIds: generate (a nested list's).
func (o *Operation) page(x Exchange, in map[string]any, q url.Values, items []state.Item, cs []condition, nested bool) (int, []byte, error) {
	status, body := o.generate(0, "", in, x)
	var shape any
	_ = json.Unmarshal(body, &shape)
	obj, isObj := shape.(map[string]any)
	if isObj != (o.shapeOf().listField != "") {
		return 0, nil, errNoState
	}
	// keep says which items the filters keep (filter.go); the cursors are
	// placed among all items, so that a page can start after an object
	// the filters leave out, as Stripe's can.
	total, keep := len(items), []bool(nil)
	cs = append(conditions(o.shapeOf().filters, q), cs...)
	if len(cs) > 0 && len(items) > 0 {
		keep, total = kept(items, cs)
	}
	if total == 0 && o.api.generate && !nested {
		// Nothing stored (or nothing the filters keep): with unknownIds:
		// generate the spec's list of one answers, as stripe-mock's does
		// (stripe-go's suite iterates it).
		return 0, nil, errNoState
	}
	sh := o.shapeOf()
	limit := o.pageSize(q)
	afterName, after := cursor(q, sh.after)
	beforeName, before := cursor(q, sh.before)
	if after != "" && before != "" {
		status, body := o.paramError(http.StatusBadRequest, beforeName, "parameter_invalid",
			fmt.Sprintf("You may only specify one of these parameters: %s, %s.", beforeName, afterName))
		return status, body, nil
	}
	// The window is the items the cursor leaves, in list order; the page
	// is limit of them, from its start (after) or its end (before).
	lo, hi := 0, len(items)
	for _, c := range [...]struct {
		name, id string
		after    bool
	}{{afterName, after, true}, {beforeName, before, false}} {
		if c.id == "" {
			continue
		}
		i := indexOf(items, c.id)
		switch {
		case i < 0 && o.api.generate:
			continue // stripe-mock ignores a cursor it cannot place
		case i < 0:
			status, body := o.unknownCursor(c.name, c.id)
			return status, body, nil
		case c.after:
			lo = i + 1
		default:
			hi = i
		}
	}
	var window []int // indexes into items
	for i := lo; i < hi; i++ {
		if keep == nil || keep[i] {
			window = append(window, i)
		}
	}
	if n, err := strconv.Atoi(q.Get("page")); sh.pages && after == "" && before == "" && err == nil && n > 1 {
		// Page n of a list paged by number (GitHub's page=2), counted
		// from 1: the items past the n-1 pages before it.
		skip := len(window)
		if n-1 < len(window) {
			skip = min(len(window), (n-1)*limit)
		}
		window = window[skip:]
	}
	if len(window) > limit {
		if before != "" {
			window = window[len(window)-limit:] // the limit just before the cursor
		} else {
			window = window[:limit]
		}
	}
	page := make([]state.Item, len(window))
	for k, i := range window {
		page[k] = items[i]
	}
	facts := pageFacts{total: total, limit: limit}
	if len(window) > 0 {
		first, last := window[0], window[len(window)-1]
		facts.prev, facts.next = anyKept(keep, 0, first), anyKept(keep, last+1, len(items))
	} else {
		facts.prev, facts.next = anyKept(keep, 0, lo), anyKept(keep, hi, len(items))
	}
	// Stripe's has_more looks in the direction of travel: towards the
	// newer items when paging back with ending_before.
	facts.more = facts.next
	if before != "" {
		facts.more = facts.prev
	}
	data := make([]json.RawMessage, len(page))
	for i, it := range page {
		data[i] = it.Body
	}
	if !isObj {
		b, _ := json.Marshal(data)
		return status, b, nil
	}
	obj[o.shapeOf().listField] = data
	if len(page) > 0 {
		facts.first, facts.last = page[0].ID, page[len(page)-1].ID
	}
	fillPage(obj, facts)
	if _, ok := obj["total_count"]; ok { // a search: every match, not the page
		obj["total_count"] = total
	}
	b, _ := marshal(obj)
	return status, b, nil
}

// pageSize is the size of a list's page that q asks for: limit, or the
// list's per_page (GitHub's), 1 to 100 or the parameter's maximum, else per_page's default (GitHub's
// 30), or limit's (Mux's 25), else 10.
func (o *Operation) pageSize(q url.Values) int {
	sh := o.shapeOf()
	limit := 10
	if d, err := strconv.Atoi(o.paramDefault(cmp.Or(sh.perPage, "limit"))); err == nil && d > 0 && d <= 100 {
		limit = d // GitHub's per_page of 30, Mux's limit of 25
	}
	for _, name := range [...]string{"limit", sh.perPage} {
		if l, err := strconv.Atoi(q.Get(name)); name != "" && err == nil && l > 0 && l <= o.maxPage(name) {
			limit = l
		}
	}
	return limit
}

// maxPage is the largest page the list's parameter name asks for that is
// taken: its schema's maximum past 100 (Svix's limit takes 250), up to
// 1,000, else 100.
func (o *Operation) maxPage(name string) int {
	if s := o.paramSchema(name); s != nil && s.Maximum != nil && *s.Maximum > 100 {
		return int(min(*s.Maximum, 1000))
	}
	return 100
}

// pageLinks is the Link header (RFC 8288) of a page of a list paged by
// number, as GitHub's are: the next page's URL when the page is full,
// and the previous and first pages' past the first, each the request's
// URL with its page changed; "" when there is none. A client that
// follows rel="next" (octokit's paginate) pages through what is stored
// and stops, where the spec's example Link sent it to the example's
// host, page 2, for ever. The last page is not named: a full last page
// links to an empty one.
func (o *Operation) pageLinks(r *http.Request, body []byte) string {
	var items []json.RawMessage
	if o.shapeOf().listField == "" {
		_ = json.Unmarshal(body, &items)
	} else {
		var obj map[string]json.RawMessage
		if json.Unmarshal(body, &obj) == nil {
			_ = json.Unmarshal(obj[o.shapeOf().listField], &items)
		}
	}
	q := r.URL.Query()
	page := 1
	if n, err := strconv.Atoi(q.Get("page")); err == nil && n > 1 {
		page = n
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	link := func(n int, rel string) string {
		q.Set("page", strconv.Itoa(n))
		u := url.URL{Scheme: scheme, Host: r.Host, Path: r.URL.Path, RawQuery: q.Encode()}
		return "<" + u.String() + `>; rel="` + rel + `"`
	}
	var links []string
	if len(items) >= o.pageSize(q) && page < math.MaxInt32 {
		links = append(links, link(page+1, "next"))
	}
	if page > 1 {
		links = append(links, link(page-1, "prev"), link(1, "first"))
	}
	return strings.Join(links, ", ")
}

// tombstones is the stored collection that keeps the ids deleted from
// coll, so that a deleted id stays a 404 under unknownIds: generate.
func tombstones(coll string) string { return coll + " (deleted)" }

// tombstonesOf is tombstones, without building the name again for the
// operation's own collection when it is always the same (storeKey).
func (o *Operation) tombstonesOf(coll string) string {
	if o.storeKey != "" && coll == o.storeKey {
		return o.tombKey
	}
	return tombstones(coll)
}

// nameStores sets the names of the operation's stored collection and of
// its tombstones when they do not depend on the request: no path
// variable in the collection, no scope. Called once the document's
// operations are classified (markSearches may still change a collection
// before), so that a create or read does not concatenate them afresh
// (two allocations a request).
func (o *Operation) nameStores() {
	if o.collection == "" || strings.Contains(o.collection, "{") || !o.api.scope.IsZero() {
		return
	}
	o.storeKey = o.api.storeName(nil, o.collection)
	o.tombKey = tombstones(o.storeKey)
}

// nestedList is what a nested list reads (markNested): from, the
// collection that creates its items (/v1/payment_methods); parent, the
// collection of the resource it is below (/v1/customers); variable, the
// path variable naming that resource (customer), which is also the
// items' field that points at it.
//
// A nested list whose items nothing creates (a Checkout Session's
// line_items, an invoice's lines) has no from: it lists the parent's own
// field of its name (field), a list object as the parent stores it.
type nestedList struct{ from, parent, variable, field string }

// listNested answers a nested list: the parent's 404 when it was never
// created (answered from the spec under unknownIds: generate, as other
// ids are) or was deleted; else the items of n.from whose field points
// at the parent, paged and filtered as any list.
func (o *Operation) listNested(ctx context.Context, x Exchange, in map[string]any, q url.Values) (int, []byte, error) {
	n := o.nested
	id := x.Vars[n.variable]
	parent := o.api.storeName(x.Request, n.parent)
	stored, found, err := x.Store.Load(ctx, parent, id)
	if err != nil {
		return 0, nil, err
	}
	if !found {
		_, deleted, err := x.Store.Load(ctx, tombstones(parent), id)
		if err != nil {
			return 0, nil, err
		}
		if !deleted && o.api.generate {
			return 0, nil, errNoState
		}
		status, body := o.noSuchIn(n.parent, http.StatusNotFound, n.variable, id)
		return status, body, nil
	}
	if n.from == "" {
		return o.fieldList(x, in, q, stored, n.field)
	}
	return o.list(ctx, x, in, q, o.api.storeName(x.Request, n.from), &condition{field: n.variable, value: id})
}

// fieldList answers a nested list whose items nothing creates from the
// parent's field of that name, as the parent stored it: its items in
// their order there (a Checkout Session's line items in the order sent),
// paged and filtered as any list; none when the parent has no such list.
func (o *Operation) fieldList(x Exchange, in map[string]any, q url.Values, parent []byte, field string) (int, []byte, error) {
	if !o.shapeOf().resources {
		return 0, nil, errNoState
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(parent, &fields)
	var list struct {
		Data []json.RawMessage `json:"data"`
	}
	raw := fields[field]
	if err := json.Unmarshal(raw, &list); err != nil || list.Data == nil {
		_ = json.Unmarshal(raw, &list.Data) // a bare array
	}
	items := make([]state.Item, 0, len(list.Data))
	for _, b := range list.Data {
		var it struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(b, &it) == nil && it.ID != "" {
			items = append(items, state.Item{ID: it.ID, Body: b})
		}
	}
	return o.page(x, in, q, items, nil, true)
}

// readNested answers a read of one item of a nested list: the item made
// elsewhere (n.from) when its field points at the parent, else the 404
// (answered from the spec under unknownIds: generate).
func (o *Operation) readNested(ctx context.Context, x Exchange) (int, []byte, error) {
	n, id := o.nested, x.Vars[o.idVar]
	stored, found, err := o.Stored(ctx, x)
	if err != nil {
		return 0, nil, err
	}
	if found {
		var fields map[string]json.RawMessage
		if json.Unmarshal(stored, &fields) == nil && meets(fields[n.variable], condition{field: n.variable, value: x.Vars[n.variable]}) {
			return o.status, stored, nil
		}
	}
	if !found && o.api.generate {
		return 0, nil, errNoState
	}
	status, body := o.missing(id)
	return status, body, nil
}

// cursor is the first of the named query parameters that is set, and
// its name.
func cursor(q url.Values, names []string) (name, value string) {
	for _, n := range names {
		if v := q.Get(n); v != "" {
			return n, v
		}
	}
	return "", ""
}

// anyKept says whether an item in [from, to) is kept (all are, when keep
// is nil).
func anyKept(keep []bool, from, to int) bool {
	if keep == nil {
		return from < to
	}
	return slices.Contains(keep[from:to], true)
}

func indexOf(items []state.Item, id string) int {
	for i, it := range items {
		if it.ID == id {
			return i
		}
	}
	return -1
}

// missing is the answer for an id never created (or deleted): the spec's
// 404, with Stripe's resource_missing filled in when the error object
// has those fields.
func (o *Operation) missing(id string) (int, []byte) {
	return o.noSuch(http.StatusNotFound, o.idVar, id)
}

// keyTaken is the answer to a create whose request names the item by a
// key (keyField) that a stored item has: the operation's 422 when it
// declares one (GitHub's "Validation Failed", already_exists), else a
// 409.
func (o *Operation) keyTaken(key, value string) (int, []byte) {
	status := http.StatusConflict
	if o.op.Responses != nil && o.op.Responses.Codes != nil {
		if _, ok := o.op.Responses.Codes.Get("422"); ok {
			status = http.StatusUnprocessableEntity
		}
	}
	return o.fieldError(status, "body", key, "already_exists", fmt.Sprintf("%s %s: '%s' already exists", strings.TrimSuffix(o.collection[strings.LastIndex(o.collection, "/")+1:], "s"), key, value))
}

// unknownCursor is the answer to a list whose cursor (the query parameter
// param) names no stored item: a 400, as Stripe answers, rather than a
// page that silently starts over from the newest.
func (o *Operation) unknownCursor(param, id string) (int, []byte) {
	return o.noSuch(http.StatusBadRequest, param, id)
}

// noSuch answers status for an id the collection does not hold, named by
// param, with Stripe's resource_missing.
func (o *Operation) noSuch(status int, param, id string) (int, []byte) {
	return o.noSuchIn(o.collection, status, param, id)
}

// noSuchIn is noSuch for an id of the collection coll.
func (o *Operation) noSuchIn(coll string, status int, param, id string) (int, []byte) {
	return o.paramError(status, param, "resource_missing", noSuchMessage(coll, id))
}

// noSuchMessage is Stripe's words for an id the collection coll does not
// hold: "No such customer: 'cus_1'".
func noSuchMessage(coll, id string) string {
	return fmt.Sprintf("No such %s: '%s'", strings.TrimSuffix(coll[strings.LastIndex(coll, "/")+1:], "s"), id)
}

// paramError answers status about the query parameter param in the spec's
// error shape for status: Stripe's error object (type, code, message,
// param and the code's doc_url, nothing made up for its other fields),
// an error object's message, else a problem.
func (o *Operation) paramError(status int, param, code, msg string) (int, []byte) {
	return o.fieldError(status, "query", param, code, msg)
}

// fieldError is paramError for a parameter in in ("query", or "body" for
// a body's field); a problem's 400 lists it in errors, as a refused
// request's violations are.
func (o *Operation) fieldError(status int, in, param, code, msg string) (int, []byte) {
	resp, _ := o.response(status)
	mt, schema := mediaOf(resp)
	var v any
	if mt != nil || schema != nil {
		v = o.api.instance(mt, schema, "")
	}
	obj, _ := v.(map[string]any)
	if _, ok := decoded(obj["error"]).(map[string]any); ok {
		e := map[string]any{"type": "invalid_request_error", "code": code, "message": msg, "param": param,
			"doc_url": "https://stripe.com/docs/error-codes/" + strings.ReplaceAll(code, "_", "-")}
		b, _ := json.Marshal(map[string]any{"error": e})
		return status, b
	}
	if _, ok := obj["message"].(string); ok && resp != nil {
		obj["message"] = msg
		b, _ := marshal(obj)
		return status, b
	}
	problem := map[string]any{"type": "about:blank", "title": http.StatusText(status), "status": status, "detail": strings.TrimSuffix(msg, ".") + "."}
	if status == http.StatusBadRequest {
		where := "query parameter"
		v := Violation{In: in, Name: param, Detail: msg}
		if in == "body" {
			where, v.Pointer = "body field", pointer([]string{param})
		}
		problem["detail"] = fmt.Sprintf("%s (%s %s).", strings.TrimSuffix(msg, "."), where, param)
		problem["errors"] = []Violation{v}
	}
	b, _ := json.Marshal(problem)
	return status, b
}

// patchOf decodes a merge patch; nil when there is none.
func patchOf(b []byte) map[string]any {
	if len(b) == 0 {
		return nil
	}
	m, _ := decodeObject(b)
	return m
}

func decodeObject(b []byte) (map[string]any, bool) {
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

// freshID makes a new id in the style of like: its prefix up to the last
// underscore (cus_), then 14 letters and digits.
func freshID(like string, rnd func() float64) string {
	prefix := ""
	if i := strings.LastIndexByte(like, '_'); i >= 0 && i < 12 {
		prefix = like[:i+1]
	}
	b := make([]byte, 14)
	for i := range b {
		b[i] = freshAlphabet[int(rnd()*float64(len(freshAlphabet)))%len(freshAlphabet)]
	}
	return prefix + string(b)
}

// freshAlphabet is what a fresh id's letters are drawn from.
const freshAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// carryID returns v, a value below a created object, with the strings
// that hold old (an example's id of 8 characters or more) holding id
// instead, and whether it changed anything. Raw JSON (canonical,
// json.RawMessage), in which an id's characters are written as they are,
// is rewritten as bytes. A map or list is copied, not changed in place:
// a generated value may be shared.
func carryID(v any, old, id string) (any, bool) {
	switch t := v.(type) {
	case string:
		if strings.Contains(t, old) {
			return strings.ReplaceAll(t, old, id), true
		}
	case canonical:
		if bytes.Contains(t, []byte(old)) {
			return canonical(bytes.ReplaceAll(t, []byte(old), []byte(id))), true
		}
	case json.RawMessage:
		if bytes.Contains(t, []byte(old)) {
			return json.RawMessage(bytes.ReplaceAll(t, []byte(old), []byte(id))), true
		}
	case map[string]any:
		var out map[string]any
		for k, e := range t {
			if c, changed := carryID(e, old, id); changed {
				if out == nil {
					out = maps.Clone(t)
				}
				out[k] = c
			}
		}
		if out != nil {
			return out, true
		}
	case []any:
		var out []any
		for i, e := range t {
			if c, changed := carryID(e, old, id); changed {
				if out == nil {
					out = slices.Clone(t)
				}
				out[i] = c
			}
		}
		if out != nil {
			return out, true
		}
	}
	return v, false
}

// replaced clears in obj, for a PUT, what the body replaces: a PUT sends
// the whole new state (RFC 9110, 9.3.4), where a PATCH or a POST merges.
// Of the properties the body's schema (sent) lists, one the body gives is
// emptied, for the body's value to be set whole rather than merged, and
// one it leaves out is taken out, unless the server sets it (readOnly)
// or the answer's schema requires it. What the schema does not list (an
// id, a creation time) stays the server's.
func replaced(obj, in map[string]any, sent, answer *base.Schema, key string) {
	if sent == nil || sent.Properties == nil {
		return
	}
	for name, sp := range sent.Properties.FromOldest() {
		switch _, given := in[name]; {
		case name == "id" || name == key:
		case given:
			obj[name] = nil
		case sp.Schema() != nil && sp.Schema().ReadOnly != nil && *sp.Schema().ReadOnly:
		case answer != nil && slices.Contains(answer.Required, name):
		default:
			delete(obj, name)
		}
	}
}

// settle takes out of obj, after the request's values went in, what
// absentFields placed there: a placeholder the value sent did not
// replace, as it did not fit the field's type, and, of an object sent,
// the placeholder's fields beside those sent that its schema does not
// require (an owner sent with a name alone has no made-up email). An
// object was taken out whole before, as the placeholder it had merged
// into no longer equalled what was sent.
func settle(obj, in, absent map[string]any, schema *base.Schema) {
	for k, placeholder := range absent {
		sent, isObject := in[k].(map[string]any)
		if got, ok := obj[k].(map[string]any); ok && isObject {
			required := requiredOf(propertyOf(schema, k, 0), 0)
			for f := range got {
				if _, given := sent[f]; !given && !slices.Contains(required, f) {
					delete(got, f)
				}
			}
			continue
		}
		if reflect.DeepEqual(obj[k], placeholder) && !reflect.DeepEqual(in[k], placeholder) {
			delete(obj, k) // the value sent did not fit its schema's type
		}
	}
}

// absentFields gives obj, before an update's values go in, a placeholder
// for each field the request sends that the answer's schema declares and
// obj lacks (an optional field the create did not send is not stored),
// so that the update sets it: a note added to an order by a PATCH. The
// id, readOnly fields and fields the body's schema (sent) does not list
// get none, nor writeOnly ones, which no answer has. It returns the placeholders, by field.
func (o *Operation) absentFields(obj, in map[string]any, sent, schema *base.Schema, scalars bool) map[string]any {
	var out map[string]any
	for k, v := range in {
		if _, has := obj[k]; has || k == "id" || k == o.keyField() {
			continue
		}
		if _, isString := v.(string); scalars && !isString {
			continue
		}
		p := propertyOf(schema, k, 0)
		if p == nil || p.ReadOnly != nil && *p.ReadOnly || p.WriteOnly != nil && *p.WriteOnly {
			continue
		}
		if sent != nil && sent.Properties != nil && sent.Properties.Len() > 0 && propertyOf(sent, k, 0) == nil {
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		out[k] = generator{api: o.api}.value(p, 1)
		obj[k] = out[k]
	}
	return out
}
