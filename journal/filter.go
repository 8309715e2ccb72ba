package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scenariomock/scenariomock/state"
)

// Limits of the limit= parameter.
const (
	DefaultLimit = 1000
	MaxLimit     = 10000
)

// Filter selects journal entries; all its conditions must hold.
// state.<name>=<to> holds for an entry whose request moved the route
// state <name> to <to> (Entry.State), and stateKey=<key> for one whose
// move was of the per: key <key>. The zero
// Filter matches every entry. A Filter is immutable once parsed and safe
// for concurrent use.
type Filter struct {
	route       *string
	session     *string
	method      string
	path        string // exact path, when glob is nil
	glob        *glob  // path= with * or **
	status      int    // -1: any
	class       int    // status=4xx: 4; 0: any
	headers     []pair // canonical names
	query       []pair
	form        []pair // fields of a URL-encoded form body, by their keys as sent (metadata[order_id])
	body        []bodyCond
	states      []pair // state.<name>=<to>: the request moved that route state to <to>
	stateKey    *string
	idempotency string
	matched     *bool
	proxied     *bool
	violating   *bool
	sinceTime   time.Time
	sinceID     int64
	limit       int
}

type pair struct{ name, value string }

// bodyCond is one body.<path>=value: path is the dotted path split into
// its segments (an array index is a segment of digits).
type bodyCond struct {
	path  []string
	value string
}

// Error is a filter that cannot be read; Param names the query parameter.
type Error struct {
	Param  string
	Value  string
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s=%s: %s", e.Param, e.Value, e.Reason)
}

// unknownFilter says what a name that is no filter gets: the filters.
const unknownFilter = "unknown filter; the filters are route, session, method, path, status, header.<Name>, query.<name>, form.<key>, body.<json.path>, state.<name>, stateKey, idempotency, matched, proxied, violating, since and limit"

// plainFilters are the filters named without a dot.
var plainFilters = []string{"route", "session", "method", "path", "status", "stateKey", "idempotency", "matched", "proxied", "violating", "since", "limit"}

// idempotencyOutcomes are what Entry.Idempotency holds.
var idempotencyOutcomes = []string{"new", "replayed", "mismatch", "in-flight", "missing-key", "invalid-key"}

// ParseFilter reads the filter parameters of q. Every parameter must be a
// filter, given once: a typo such as stauts=201 is an error rather than a
// filter that silently matches everything.
func ParseFilter(q url.Values) (Filter, error) {
	f := Filter{status: -1, limit: DefaultLimit}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names) // the same error for the same query, whatever the map order
	for _, name := range names {
		vs := q[name]
		if len(vs) != 1 {
			return Filter{}, &Error{Param: name, Value: strings.Join(vs, ","), Reason: "give it once (filters are ANDed; one value each)"}
		}
		if err := f.set(name, vs[0]); err != nil {
			return Filter{}, err
		}
	}
	return f, nil
}

func (f *Filter) set(name, v string) error {
	bad := func(reason string) error { return &Error{Param: name, Value: v, Reason: reason} }
	prefix, rest, dotted := strings.Cut(name, ".")
	if dotted {
		if rest == "" {
			return bad("name the field after the dot, as in " + prefix + ".x")
		}
		switch prefix {
		case "header":
			f.headers = append(f.headers, pair{http.CanonicalHeaderKey(rest), v})
			return nil
		case "query":
			f.query = append(f.query, pair{rest, v})
			return nil
		case "form":
			f.form = append(f.form, pair{rest, v})
			return nil
		case "body":
			segs := strings.Split(rest, ".")
			if slices.Contains(segs, "") {
				return bad("a body path has no empty segment: write body.a.b or body.items.0.sku")
			}
			f.body = append(f.body, bodyCond{segs, v})
			return nil
		case "state":
			// The whole rest is the name: a state's name may hold dots.
			if v == "" {
				return bad("empty value: want the state the request moved it to")
			}
			f.states = append(f.states, pair{rest, v})
			return nil
		}
		return bad(unknownFilter)
	}
	if v == "" && slices.Contains(plainFilters, name) {
		return bad("empty value")
	}
	switch name {
	case "route":
		f.route = &v
	case "session":
		f.session = &v
	case "stateKey":
		f.stateKey = &v
	case "method":
		f.method = v
	case "path":
		if !strings.HasPrefix(v, "/") {
			return bad(`a path starts with "/"`)
		}
		if !strings.Contains(v, "*") {
			f.path = v
			return nil
		}
		if len(v) > maxGlob {
			return bad(fmt.Sprintf("a path pattern is at most %d bytes", maxGlob))
		}
		f.glob = compileGlob(v)
	case "status":
		if len(v) == 3 && (v[1:] == "xx" || v[1:] == "XX") && v[0] >= '1' && v[0] <= '5' {
			f.class = int(v[0] - '0')
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n != 0 && (n < 100 || n > 599) {
			return bad("want a status such as 201, a class such as 4xx, or 0 (no answer was sent)")
		}
		f.status = n
	case "idempotency":
		if !slices.Contains(idempotencyOutcomes, v) {
			return bad("want one of " + strings.Join(idempotencyOutcomes, ", "))
		}
		f.idempotency = v
	case "matched", "proxied", "violating":
		var b bool
		switch v {
		case "true":
			b = true
		case "false":
		default:
			return bad("want true or false")
		}
		switch name {
		case "matched":
			f.matched = &b
		case "proxied":
			f.proxied = &b
		default:
			f.violating = &b
		}
	case "since":
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			f.sinceID = n
			return nil
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return bad("want an RFC 3339 time such as 2026-01-02T15:04:05Z or an entry id")
		}
		f.sinceTime = t
	case "limit":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxLimit {
			return bad(fmt.Sprintf("want an integer from 1 to %d", MaxLimit))
		}
		f.limit = n
	default:
		return bad(unknownFilter)
	}
	return nil
}

// Limit is how many of the newest matching entries a listing returns.
func (f Filter) Limit() int {
	if f.limit == 0 {
		return DefaultLimit
	}
	return f.limit
}

// After is the entry ID since= names (0 when it names none): only entries
// with a larger ID match, so a caller may ask its store for those alone.
func (f Filter) After() int64 { return f.sinceID }

// Match reports whether e meets every condition of f.
func (f Filter) Match(e *state.Entry) bool {
	switch {
	case f.route != nil && e.Route != *f.route,
		f.session != nil && e.Session != *f.session,
		f.method != "" && !strings.EqualFold(e.Method, f.method),
		f.path != "" && e.Path != f.path,
		f.glob != nil && !f.glob.match(e.Path),
		f.status >= 0 && e.Status != f.status,
		f.class > 0 && e.Status/100 != f.class,
		f.idempotency != "" && e.Idempotency != f.idempotency,
		f.matched != nil && e.Matched != *f.matched,
		f.proxied != nil && e.Proxied != *f.proxied,
		f.violating != nil && (len(e.Violations) > 0) != *f.violating,
		e.ID <= f.sinceID,
		!f.sinceTime.IsZero() && e.Time.Before(f.sinceTime):
		return false
	}
	if f.stateKey != nil && (e.State == nil || e.State.Key != *f.stateKey) {
		return false
	}
	for _, c := range f.states {
		// An entry records the one move its request made.
		if e.State == nil || e.State.Name != c.name || e.State.To != c.value {
			return false
		}
	}
	for _, h := range f.headers {
		if !headerMatches(e.Headers[h.name], h.name, h.value) {
			return false
		}
	}
	if len(f.query) > 0 {
		q, err := url.ParseQuery(e.Query)
		if err != nil && len(q) == 0 {
			return false
		}
		for _, c := range f.query {
			if !slices.Contains(q[c.name], c.value) {
				return false
			}
		}
	}
	if len(f.form) > 0 {
		if !isForm(e.Headers["Content-Type"]) {
			return false
		}
		q, err := url.ParseQuery(string(e.Body))
		if err != nil && len(q) == 0 {
			return false
		}
		for _, c := range f.form {
			if !slices.Contains(q[c.name], c.value) {
				return false
			}
		}
	}
	if len(f.body) > 0 {
		doc, ok := parseJSON(e.Body)
		if !ok {
			return false
		}
		for _, c := range f.body {
			if !leafEquals(lookup(doc, c.path), c.value) {
				return false
			}
		}
	}
	return true
}

// isForm reports whether a request's Content-Type names a URL-encoded
// form, as the matcher reads it.
func isForm(contentType []string) bool {
	if len(contentType) == 0 {
		return false
	}
	mt, _, _ := strings.Cut(contentType[0], ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/x-www-form-urlencoded")
}

// parseJSON reads a JSON body, numbers as written.
func parseJSON(b []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil || dec.More() {
		return nil, false
	}
	return doc, true
}

// missing stands for a path that leads nowhere.
type missing struct{}

func lookup(doc any, path []string) any {
	for _, seg := range path {
		switch v := doc.(type) {
		case map[string]any:
			next, ok := v[seg]
			if !ok {
				return missing{}
			}
			doc = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(v) {
				return missing{}
			}
			doc = v[i]
		default:
			return missing{}
		}
	}
	return doc
}

// leafEquals compares a JSON value with a filter's text: a string by its
// text, a number by its value (9800 matches 9800.0), true, false and null
// by their names. Objects and arrays match nothing.
func leafEquals(v any, want string) bool {
	switch v := v.(type) {
	case string:
		return v == want
	case json.Number:
		if string(v) == want {
			return true
		}
		a, err1 := strconv.ParseFloat(string(v), 64)
		b, err2 := strconv.ParseFloat(want, 64)
		return err1 == nil && err2 == nil && a == b
	case bool:
		return strconv.FormatBool(v) == want
	case nil:
		return want == "null"
	}
	return false
}

// maxGlob bounds a path pattern's length: with it and the journal's
// bounds, one filtered read costs at most a few seconds of CPU even over
// ten thousand hostile 30 KB paths.
const maxGlob = 256

// glob is a path pattern: '*' matches within one segment, "**" anything,
// other bytes themselves. It is matched byte by byte (paths need not be
// UTF-8) as a set of positions kept as bits (position k: the first k
// tokens matched), so that a pattern of many stars costs len(path) ×
// len(pattern)/64 word steps, never a backtracking blow-up.
type glob struct {
	n    int                    // tokens; the positions are 0..n
	lit  [256][globWords]uint64 // lit[c]: the positions before a literal c
	star [globWords]uint64      // positions before a '*'
	any  [globWords]uint64      // positions before a "**"
}

// globWords holds maxGlob+1 positions.
const globWords = (maxGlob + 1 + 63) / 64

// compileGlob compiles p, of at most maxGlob bytes. Adjacent stars are one
// token ("**" if any of them is), so that one step of closure suffices.
func compileGlob(p string) *glob {
	g := &glob{}
	set := func(m *[globWords]uint64, k int) { m[k/64] |= 1 << (k % 64) }
	for i := 0; i < len(p); i++ {
		if p[i] != '*' {
			set(&g.lit[p[i]], g.n)
			g.n++
			continue
		}
		j := i
		for j < len(p) && p[j] == '*' {
			j++
		}
		if j-i >= 2 {
			set(&g.any, g.n)
		} else {
			set(&g.star, g.n)
		}
		g.n++
		i = j - 1
	}
	return g
}

func (g *glob) match(s string) bool {
	var cur [globWords]uint64
	cur[0] = 1
	g.closure(&cur)
	for i := 0; i < len(s); i++ {
		c := s[i]
		var next [globWords]uint64
		var carry uint64
		for w := range globWords {
			// Literals advance one position; stars stay.
			adv := cur[w] & g.lit[c][w]
			next[w] = adv<<1 | carry
			carry = adv >> 63
			stay := cur[w] & g.any[w]
			if c != '/' {
				stay |= cur[w] & g.star[w]
			}
			next[w] |= stay
		}
		g.closure(&next)
		cur = next
		if cur == ([globWords]uint64{}) {
			return false
		}
	}
	return cur[g.n/64]&(1<<(g.n%64)) != 0
}

// closure adds the positions reached by letting a star match nothing.
func (g *glob) closure(m *[globWords]uint64) {
	var carry uint64
	for w := range globWords {
		skip := m[w] & (g.star[w] | g.any[w])
		add := skip<<1 | carry
		carry = skip >> 63
		m[w] |= add
	}
}
