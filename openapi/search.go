package openapi

import (
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

	"github.com/scenariomock/scenariomock/scenarios"
)

// Search by convention: GET on a collection path plus /search, with a
// query parameter and an answer whose object is "search_result" (Stripe's
// /v1/customers/search, /v1/payment_intents/search, …), searches the
// stored objects of the collection with Stripe's query language
// (https://docs.stripe.com/search#search-query-language):
//
//	email:'jenny@example.com'            equal (strings ignore case)
//	name~'jen'                           contains (3 characters or more)
//	amount>1000  created<=1700000000     compared as numbers
//	metadata['order']:'6735'             a metadata key
//	-status:'canceled'  currency:null     negated; absent or null
//	a:'x' AND b:'y'   a:'x' OR b:'y'      up to 10 clauses, not mixed
//	a:'x' b:'y'                           a space is AND; and, or as well
//	active:'true'  active:true            booleans as written
//
// Nested fields are written with dots (address.city). The answer is the
// newest objects first, limit of them (1 to 100, default 10), from after
// the page token a previous answer's next_page gave.

// markSearches makes the searches of collections that a create fills
// opSearch, over that collection.
func markSearches(routes []*scenarios.Route, created map[string]bool) {
	for _, r := range routes {
		o := r.Operation.(*Operation)
		parent, ok := strings.CutSuffix(o.Path, "/search")
		if ok && o.Method == http.MethodGet && created[parent] && slices.Contains(o.queryParams(), "query") && o.answersSearchResult() {
			o.kind, o.collection = opSearch, parent
		}
	}
}

// answersSearchResult says whether the success answer's object is
// "search_result".
func (o *Operation) answersSearchResult() bool {
	resp, _ := o.response(o.status)
	_, schema := o.mediaOf(resp)
	p := propertyOf(schema, "object", 0)
	if p == nil {
		return false
	}
	for _, e := range p.Enum {
		if e.Value == "search_result" {
			return true
		}
	}
	return false
}

// search answers a search of the stored objects of coll.
func (o *Operation) search(ctx context.Context, x Exchange, in map[string]any, q url.Values, coll string) (int, []byte, error) {
	clauses, err := parseSearch(q.Get("query"))
	if err != nil {
		status, body := o.paramError(http.StatusBadRequest, "query", "parameter_invalid", err.Error())
		return status, body, nil
	}
	status, v, _, _ := o.generateValue(0, "", in, x)
	obj, ok := v.(map[string]any)
	if !ok {
		return 0, nil, errNoState
	}
	items, _, err := x.Store.List(ctx, coll, 0, 0)
	if err != nil {
		return 0, nil, err
	}
	slices.Reverse(items) // newest first
	var found []json.RawMessage
	var ids []string
	for _, it := range items {
		var v map[string]any
		if json.Unmarshal(it.Body, &v) == nil && clauses.match(v) {
			found, ids = append(found, it.Body), append(ids, it.ID)
		}
	}
	if len(found) == 0 && o.api.generate {
		return 0, nil, errNoState // the spec's answer, as stripe-mock's
	}
	limit := 10
	if l, err := strconv.Atoi(q.Get("limit")); err == nil && l > 0 && l <= 100 {
		limit = l
	}
	start := 0
	if p := q.Get("page"); p != "" {
		i := slices.Index(ids, p)
		if i < 0 && !o.api.generate {
			status, body := o.paramError(http.StatusBadRequest, "page", "parameter_invalid", fmt.Sprintf("Invalid page: '%s' is not a page of this search.", p))
			return status, body, nil
		}
		start = i + 1
	}
	end := min(start+limit, len(found))
	page := found[start:end]
	if page == nil {
		page = []json.RawMessage{}
	}
	obj["data"], obj["has_more"], obj["next_page"] = page, end < len(found), nil
	if end < len(found) {
		obj["next_page"] = ids[end-1]
	}
	if _, ok := obj["url"]; ok {
		obj["url"] = x.Request.URL.Path
	}
	if _, ok := obj["total_count"]; ok {
		obj["total_count"] = len(found)
	}
	b, _ := marshal(obj)
	return status, b, nil
}

// clause is one term of a search query.
type clause struct {
	field []string // the path to the value: address, city
	op    string   // ":", "~", ">", "<", ">=", "<="
	value any      // a string, a float64, or nil (null)
	not   bool
}

// searchQuery is a parsed query: its clauses, joined by AND (all) or OR.
type searchQuery struct {
	clauses []clause
	any     bool
}

const maxSearchClauses = 10

// parseSearch reads a query of Stripe's search language.
func parseSearch(s string) (searchQuery, error) {
	var q searchQuery
	p := &searchParser{s: s}
	if strings.TrimSpace(s) == "" {
		return q, errors.New("Search query is missing: query is required, e.g. query=email:'jenny@example.com'.")
	}
	joiner := ""
	for {
		c, err := p.clause()
		if err != nil {
			return q, err
		}
		q.clauses = append(q.clauses, c)
		if len(q.clauses) > maxSearchClauses {
			return q, fmt.Errorf("Search query is invalid: it has more than %d clauses.", maxSearchClauses)
		}
		p.space()
		if p.done() {
			break
		}
		// AND or OR (either case), or a space alone, which is AND.
		at := p.i
		word := strings.ToUpper(p.word())
		if next := p.peekSpace(); word != "AND" && word != "OR" || !next {
			p.i, word = at, "AND"
		}
		if joiner != "" && word != joiner {
			return q, errors.New("Search query is invalid: AND and OR cannot be used together in one query.")
		}
		joiner = word
	}
	q.any = joiner == "OR"
	return q, nil
}

type searchParser struct {
	s string
	i int
}

func (p *searchParser) done() bool { return p.i >= len(p.s) }

func (p *searchParser) space() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// peekSpace says whether white space follows (a keyword is a word of its
// own: ANDroid:'x' is a field).
func (p *searchParser) peekSpace() bool {
	return !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t')
}

func (p *searchParser) errorf(format string, args ...any) error {
	return fmt.Errorf("Search query is invalid at character %d: %s.", p.i+1, fmt.Sprintf(format, args...))
}

// word reads letters, digits, '_' and '.'.
func (p *searchParser) word() string {
	start := p.i
	for !p.done() {
		c := p.s[p.i]
		if !(c == '_' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			break
		}
		p.i++
	}
	return p.s[start:p.i]
}

func (p *searchParser) clause() (clause, error) {
	var c clause
	p.space()
	if !p.done() && p.s[p.i] == '-' {
		c.not = true
		p.i++
	}
	name := p.word()
	if name == "" {
		return c, p.errorf("want a field name")
	}
	c.field = strings.Split(name, ".")
	if !p.done() && p.s[p.i] == '[' { // metadata['key']
		p.i++
		key, err := p.quoted()
		if err != nil {
			return c, err
		}
		if p.done() || p.s[p.i] != ']' {
			return c, p.errorf("want ] after the key")
		}
		p.i++
		c.field = append(c.field, key)
	}
	for _, op := range [...]string{">=", "<=", ":", "~", ">", "<"} {
		if strings.HasPrefix(p.s[p.i:], op) {
			c.op = op
			p.i += len(op)
			break
		}
	}
	if c.op == "" {
		return c, p.errorf("want :, ~, >, <, >= or <= after %s", name)
	}
	switch {
	case !p.done() && (p.s[p.i] == '\'' || p.s[p.i] == '"'):
		s, err := p.quoted()
		if err != nil {
			return c, err
		}
		c.value = s
	default:
		neg := !p.done() && p.s[p.i] == '-'
		if neg {
			p.i++
		}
		switch w := p.word(); {
		case !neg && w == "null" && c.op == ":": // c.value nil
		case !neg && (w == "true" || w == "false") && c.op == ":":
			c.value = w
		default:
			if neg {
				w = "-" + w
			}
			n, err := strconv.ParseFloat(w, 64)
			if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
				return c, p.errorf("want a quoted value, a number, true, false or null, got %q", w)
			}
			c.value = n
		}
	}
	if s, ok := c.value.(string); c.op == "~" && (!ok || len([]rune(s)) < 3) {
		return c, p.errorf("~ takes a quoted value of 3 characters or more")
	}
	if _, ok := c.value.(float64); !ok && len(c.op) > 0 && c.op[0] != ':' && c.op != "~" {
		if s, isStr := c.value.(string); !isStr || !isNumber(s) {
			return c, p.errorf("%s compares numbers", c.op)
		}
	}
	return c, nil
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// quoted reads a value in single or double quotes; a backslash escapes
// the quote.
func (p *searchParser) quoted() (string, error) {
	if p.done() || p.s[p.i] != '\'' && p.s[p.i] != '"' {
		return "", p.errorf("want a quoted value")
	}
	quote := p.s[p.i]
	p.i++
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\' && !p.done():
			b.WriteByte(p.s[p.i])
			p.i++
		case c == quote:
			return b.String(), nil
		default:
			b.WriteByte(c)
		}
	}
	return "", p.errorf("the quoted value is not closed")
}

// match says whether an object meets the query.
func (q searchQuery) match(obj map[string]any) bool {
	for _, c := range q.clauses {
		if c.match(obj) == q.any {
			return q.any
		}
	}
	return !q.any
}

func (c clause) match(obj map[string]any) bool {
	var v any = obj
	for _, f := range c.field {
		m, ok := v.(map[string]any)
		if !ok {
			v = nil
			break
		}
		v = m[f]
	}
	if m, ok := v.(map[string]any); ok { // an expanded object: its id
		v = m["id"]
	}
	return c.meets(v) != c.not
}

func (c clause) meets(v any) bool {
	if c.value == nil {
		return v == nil
	}
	switch c.op {
	case ":":
		switch want := c.value.(type) {
		case string:
			if b, ok := v.(bool); ok {
				return strings.EqualFold(strconv.FormatBool(b), want)
			}
			return strings.EqualFold(stringOf(v), want) && v != nil
		case float64:
			n, ok := v.(float64)
			return ok && n == want
		}
	case "~":
		s, ok := v.(string)
		return ok && strings.Contains(strings.ToLower(s), strings.ToLower(c.value.(string)))
	default:
		n, ok := v.(float64)
		want, isNum := c.value.(float64)
		if s, isStr := c.value.(string); isStr {
			want, _ = strconv.ParseFloat(s, 64)
			isNum = true
		}
		if !ok || !isNum {
			return false
		}
		switch c.op {
		case ">":
			return n > want
		case "<":
			return n < want
		case ">=":
			return n >= want
		}
		return n <= want
	}
	return false
}
