package openapi

import (
	"math"
	"net/http"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"

	"github.com/pb33f/libopenapi/datamodel/high/base"
)

// State by convention reads two things from the spec's schemas rather
// than from Stripe's habits: where a list answer keeps its items (Stripe's
// data, or items, or the answer itself as an array) and what an id looks
// like (Stripe's cus_ and 14 letters, or a pattern such as
// ^ord_[0-9a-hjkmnp-tv-z]{26}$, which a fresh id must match or the next
// read of it is refused by path validation).

// shape is what compiling an operation learnt from its success schema.
type shape struct {
	// listField is where a list answer's items are: "" for an answer that
	// is the array itself; resources says the items have an id, so that
	// stored objects can stand in for them.
	listField string
	resources bool
	// idPattern is the pattern of the answer's id, when it has one (a
	// create), and idSyntax the same parsed to draw ids from (ids.go);
	// idKind says whether the id is an integer, a UUID or a string.
	idPattern *regexp.Regexp
	idSyntax  *syntax.Regexp
	idKind    idKind
	// idMin and idMax bound an integer id (its schema's minimum, 1 by
	// default, and maximum).
	idMin int64
	idMax *int64
	// key is the field of an item that its path variable names and that
	// it is stored by (keyOf): "id", or GitHub's number for
	// /issues/{issue_number}; "" when the answer is no JSON.
	key string
	// filters are a list's query parameters that narrow its items
	// (filter.go); after and before the cursor parameters it declares,
	// Stripe's starting_after and ending_before or after and before.
	filters       []filter
	after, before []string
	// envelope is the field of an answer that holds the item itself
	// ({"data": {"id": …}}: Mux's, JSON:API's), when the answer is such
	// an envelope (envelopeOf); key and the id's kind are the item's.
	envelope string
	// item is the schema of the envelope's item (the envelope's, when it
	// is written as allOf a generic wrapper's data and its own).
	item *base.Schema
	// perPage is the parameter that sizes a page when it is not limit
	// (GitHub's per_page), and pages says the list takes a page number
	// (page, counted from 1), as GitHub's lists page.
	perPage string
	pages   bool
}

// shapeOf returns what o's success schema says, learning it the first
// time. It is safe for concurrent use.
func (o *Operation) shapeOf() *shape {
	o.shapeOnce.Do(o.learnShape)
	return &o.shape
}

// learnShape fills o.shape from its success response.
func (o *Operation) learnShape() {
	resp, _ := o.response(o.status)
	name, mt := pickMedia(resp, nil)
	if mt == nil || mt.Schema == nil || !isJSONMedia(name) {
		return
	}
	s := mt.Schema.Schema()
	if o.kind != opList && o.kind != opSearch {
		if env, inner := envelopeOf(o.keyVar, s); env != "" {
			o.shape.envelope, o.shape.item, s = env, inner, inner
		}
	}
	o.shape.key = keyOf(o.keyVar, s)
	switch {
	case o.kind == opCreate:
		id := propertyOf(s, o.shape.key, 0)
		switch {
		case id == nil:
		case hasType(id, "integer") && !hasType(id, "string"):
			// The least integer its bounds allow (number reads minimum and
			// both forms of exclusiveMinimum), and 1 at least.
			o.shape.idKind, o.shape.idMin = idInteger, max(1, int64(number(id, true)))
			if id.Maximum != nil && *id.Maximum < 1<<53 {
				m := int64(math.Floor(*id.Maximum))
				o.shape.idMax = &m
			}
		case id.Format == "uuid":
			o.shape.idKind = idUUID
		case id.Pattern != "":
			o.shape.idPattern, _ = regexp.Compile(id.Pattern) // an ECMA pattern RE2 cannot read is not checked
			if re, err := syntax.Parse(id.Pattern, syntax.Perl); err == nil {
				o.shape.idSyntax = re.Simplify()
			}
		}
	case o.Method == http.MethodGet && o.collection == o.Path:
		// A list, whether or not state by convention keeps its
		// collection (opList): a route may list a collection of its own
		// under it (Narrow).
		items, field := listItems(s)
		o.shape.listField = field
		o.shape.resources = items != nil && propertyOf(items, "id", 0) != nil
		o.shape.filters = o.listFilters(items)
		for _, p := range o.queryParams() {
			switch p {
			case "starting_after", "after", "cursor", "page_token", "pageToken", "iterator":
				o.shape.after = append(o.shape.after, p)
			case "ending_before", "before":
				o.shape.before = append(o.shape.before, p)
			case "per_page", "page_size", "pageSize":
				o.shape.perPage = p
			case "page":
				o.shape.pages = true
			}
		}
	}
}

// keyField is the field of an item that the path names it by, and that
// state by convention stores it by: "id" unless keyOf says otherwise.
func (o *Operation) keyField() string {
	if k := o.shapeOf().key; k != "" {
		return k
	}
	return "id"
}

// keyOf is the field of an item, whose schema is s, that the path
// variable v names: a property named v that is a string or an integer
// (GitHub's labels are read by their name, /labels/{name}), else an
// integer property named as v's last word (GitHub reads an issue by its
// number, /issues/{issue_number}, not by its id; issueNumber alike),
// else "id". A string property is not taken by its last word: Stripe's
// /v1/promotion_codes/{promotion_code} names a promotion code's id, not
// its code.
func keyOf(v string, s *base.Schema) string {
	if v == "" || v == "id" || s == nil {
		return "id"
	}
	if p := propertyOf(s, v, 0); p != nil && (hasType(p, "string") || hasType(p, "integer")) {
		return v
	}
	last := v[strings.LastIndexAny(v, "_-.")+1:]
	if last == v {
		if i := strings.LastIndexFunc(v, unicode.IsUpper); i > 0 {
			last = strings.ToLower(v[i:i+1]) + v[i+1:]
		}
	}
	if p := propertyOf(s, last, 0); last != v && p != nil && hasType(p, "integer") && !hasType(p, "string") {
		return last
	}
	return "id"
}

// envelopeOf says whether an item's answer, whose schema is s, wraps the
// item (Mux's {"data": asset}, JSON:API's {"data": {"id": …}}): the
// answer has no field the path variable v names of its own, and exactly
// one of its properties, or else the one named data, is an object that
// has one. It returns that property and its schema, or "" when the answer
// is no envelope or not plainly one.
func envelopeOf(v string, s *base.Schema) (string, *base.Schema) {
	if s == nil || propertyOf(s, keyOf(v, s), 0) != nil {
		return "", nil
	}
	var found string
	var inner *base.Schema
	n := 0
	for _, p := range ownProperties(s) {
		ps := p.schema
		if ps == nil || hasType(ps, "array") || propertyOf(ps, keyOf(v, ps), 0) == nil {
			continue
		}
		if p.name == "data" {
			return "data", ps
		}
		if p.name != found {
			n++
		}
		found, inner = p.name, ps
	}
	if n != 1 {
		return "", nil
	}
	return found, inner
}

// namedSchema is a property's name and schema.
type namedSchema struct {
	name   string
	schema *base.Schema
}

// ownProperties are s's properties, its own and its allOf parts', in the
// order written: an envelope written as allOf a generic wrapper (data:
// any object) and its own data (a note) has data twice.
func ownProperties(s *base.Schema) []namedSchema {
	var out []namedSchema
	eachProperty(s, false, func(name string, sp *base.SchemaProxy) {
		out = append(out, namedSchema{name, sp.Schema()})
	})
	return out
}

// eachProperty calls fn with each property of s, its own and its allOf
// parts' (and its oneOf and anyOf parts' with alternatives, as propertyOf
// finds them), in the order written: at most maxSchemaVisits schemas, 4
// levels deep.
func eachProperty(s *base.Schema, alternatives bool, fn func(name string, sp *base.SchemaProxy)) {
	left := maxSchemaVisits
	var walk func(s *base.Schema, depth int)
	walk = func(s *base.Schema, depth int) {
		if s == nil || depth > 4 || !hop(&left) {
			return
		}
		if s.Properties != nil {
			for name, sp := range s.Properties.FromOldest() {
				fn(name, sp)
			}
		}
		groups := [...][]*base.SchemaProxy{s.AllOf, s.OneOf, s.AnyOf}
		n := 1
		if alternatives {
			n = len(groups)
		}
		for _, group := range groups[:n] {
			for _, sp := range group {
				walk(sp.Schema(), depth+1)
			}
		}
	}
	walk(s, 0)
}

// listItems finds the items of a list answer: the array itself, or the
// object's data (Stripe), or its one array property (items).
func listItems(s *base.Schema) (*base.Schema, string) {
	p, field := listItemsProxy(s)
	if p == nil {
		return nil, ""
	}
	return p.Schema(), field
}

// listItemsProxy is listItems' item schema as the spec writes it, a $ref
// or in place.
func listItemsProxy(s *base.Schema) (*base.SchemaProxy, string) {
	return listItemsAt(s, 0)
}

// listItemsAt is listItemsProxy for a schema depth allOf levels down.
// A list written as allOf a generic wrapper and its own items (Train
// Travel's: allOf Wrapper-Collection, whose data is an array of any
// object, and {data: {items: Booking}}) has its items where its branches
// put one array field: the branch whose items have an id, else the first.
func listItemsAt(s *base.Schema, depth int) (*base.SchemaProxy, string) {
	if s == nil || depth > 4 {
		return nil, ""
	}
	if s.Properties == nil && len(s.AllOf) > 0 {
		var found *base.SchemaProxy
		field := ""
		for _, b := range s.AllOf {
			p, f := listItemsAt(b.Schema(), depth+1)
			switch {
			case p == nil:
			case found == nil:
				found, field = p, f
			case f != field:
				return nil, "" // two array fields: no plain list
			case propertyOf(found.Schema(), "id", 0) == nil:
				found = p
			}
		}
		return found, field
	}
	if hasType(s, "array") && s.Items != nil && s.Items.A != nil {
		return s.Items.A, ""
	}
	if s.Properties == nil {
		return nil, ""
	}
	var found *base.SchemaProxy
	field, arrays := "", 0
	for p := s.Properties.First(); p != nil; p = p.Next() {
		ps := p.Value().Schema()
		if ps == nil || !hasType(ps, "array") || ps.Items == nil || ps.Items.A == nil {
			continue
		}
		if p.Key() == "data" {
			return ps.Items.A, "data"
		}
		found, field = ps.Items.A, p.Key()
		arrays++
	}
	if arrays != 1 {
		return nil, ""
	}
	return found, field
}

// maxSchemaVisits bounds the schemas one look through allOf, oneOf and
// anyOf visits (propertyOf, requiredOf, freeFormProperties), as depth
// bounds how deep it goes: a schema that lists itself 80 times among its
// anyOf branches made one property's look 80⁴ visits, 6 s of a request.
// Stripe's looks visit a few dozen.
const maxSchemaVisits = 1024

// propertyOf returns the schema of a property of s, looking through
// allOf, oneOf and anyOf (an item that is oneOf two kinds of menu item).
func propertyOf(s *base.Schema, name string, depth int) *base.Schema {
	left := maxSchemaVisits
	return propertyIn(s, name, depth, &left)
}

// propertyIn is propertyOf, each schema it visits spending one of left.
func propertyIn(s *base.Schema, name string, depth int, left *int) *base.Schema {
	if s == nil || depth > 4 || !hop(left) {
		return nil
	}
	if s.Properties != nil {
		if p, ok := s.Properties.Get(name); ok && p != nil {
			return p.Schema()
		}
	}
	for _, group := range [][]*base.SchemaProxy{s.AllOf, s.OneOf, s.AnyOf} {
		for _, sp := range group {
			if p := propertyIn(sp.Schema(), name, depth+1, left); p != nil {
				return p
			}
		}
	}
	return nil
}

func hasType(s *base.Schema, t string) bool {
	for _, st := range s.Type {
		if st == t {
			return true
		}
	}
	return false
}

// pageFacts are what a list page says about itself.
type pageFacts struct {
	// more is Stripe's has_more: items beyond the page in the direction
	// of travel (older ones, or with ending_before newer ones); next and
	// prev are items after and before the page in the list's order.
	more, next, prev bool
	first, last      any // ids, or nil for an empty page
	total            int
	limit            int
}

// fillPage writes facts into the members a list answer (or its page
// object, one level down) already has, by their usual names: Stripe's
// has_more, and hasNextPage, hasPrevPage, startCursor, endCursor,
// nextCursor (or next_page_token, or Svix's iterator beside its done),
// total and limit as Relay-style, Redocly's, Google's and Svix's lists
// have them.
func fillPage(obj map[string]any, f pageFacts) {
	set := func(m map[string]any) {
		for k := range m {
			switch k {
			case "has_more", "hasMore":
				m[k] = f.more
			case "hasNextPage", "has_next_page":
				m[k] = f.next
			case "hasPrevPage", "hasPreviousPage", "has_prev_page":
				m[k] = f.prev
			case "startCursor", "start_cursor":
				m[k] = f.first
			case "endCursor", "end_cursor":
				m[k] = f.last
			case "done": // Svix's: no page after this one
				m[k] = !f.next
			case "nextCursor", "next_cursor", "nextPageToken", "next_page_token", "iterator":
				// The cursor of the next page (the page's last id, which the
				// list's cursor parameter takes), null on the last page: a
				// client pages until it is null.
				m[k] = nil
				if f.next {
					m[k] = f.last
				}
			case "total":
				m[k] = f.total
			case "limit":
				m[k] = f.limit
			}
		}
	}
	set(obj)
	for _, v := range obj {
		if m, ok := v.(map[string]any); ok {
			set(m)
		}
	}
}
