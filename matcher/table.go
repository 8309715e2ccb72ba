package matcher

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/scenariomock/scenariomock/scenarios"
)

// Table is a compiled, indexed set of routes. It is immutable and safe for
// concurrent use.
type Table struct {
	set    *scenarios.Set
	routes []*Route // match order
	root   node
	// exact maps each fully literal path to every route that can match it
	// (the literal routes and the templated ones the trie would add), in
	// match order: one map lookup for the common case, where walking the
	// trie costs a lookup per segment and a merge.
	exact map[string][]int32
	// templates are the distinct path templates, and byLiteral their ids
	// sorted by literal part: a miss ranks paths by edit distance among the
	// few that share most of the request's path, found by binary search.
	templates []template
	byLiteral []int32
	// cached counts the distinct conditions a Request remembers results of.
	cached int
	// sessions: some route has a session (see Request.Session).
	sessions bool
	// states: some route has a state: is: condition (see Request.States).
	states bool
}

// template is one distinct path template and the routes that use it.
type template struct {
	path, literal string
	first         int32 // its first route in match order
	anyMethod     int32 // its first route that takes any method, or -1
	// byMethod is its first route taking each method, in the order of
	// those routes: a few at most, where a map cost some 200 bytes a
	// template (20 MB at 100,000 routes).
	byMethod []methodRoute
}

// methodRoute is a template's first route taking a method.
type methodRoute struct {
	method string
	route  int32
}

// representative returns the route that stands for the template in a
// near-miss report: the first that takes the method, else the first.
func (tp *template) representative(method string) (int32, bool) {
	best := tp.anyMethod
	for _, m := range tp.byMethod {
		if m.method == method {
			if best < 0 || m.route < best {
				best = m.route
			}
			break
		}
	}
	if best < 0 {
		return tp.first, false
	}
	return best, true
}

// Route is a scenario route compiled for matching.
type Route struct {
	*scenarios.Route
	// Index is the route's position in match order, which also indexes
	// per-route state kept outside the table.
	Index int
	path  *scenarios.PathTemplate
	// literal is the template up to its first variable, for ranking near
	// misses by how much of the path they share.
	literal string
	table   *Table
	tpl     int32 // index in table.templates
	// cache holds, for each condition in testing order (headers, query,
	// body), the id its result is remembered by in a Request, or -1 for
	// a condition cheaper to test again than to look up.
	cache []int32
	// conditions counts the route's conditions.
	conditions int
}

// concreteFirst moves each route that serves an OpenAPI operation
// (generated, or written with operation:) ahead of a written route that
// stands in for another operation (operation: GetCustomersCustomer) at
// the same priority, when its path is the written one's with a variable
// made concrete and they share a method: GET /v1/customers/search before
// a written GET /v1/customers/{customer}. OpenAPI matches concrete paths
// before templated ones, and the generated routes are in that order among
// themselves; a written route comes before all of them, and would
// otherwise take the concrete path's requests as an id. The moved routes
// keep their order (a written override of the concrete operation before
// its generated route).
func concreteFirst(all []*scenarios.Route) []*scenarios.Route {
	var out []*scenarios.Route
	moved := map[*scenarios.Route]bool{}
	for i, r := range all {
		if moved[r] {
			continue
		}
		if r.OperationName != "" && strings.Contains(r.Path, "{") {
			shape := r.PathShape() // a narrowed variable ({customer:[a-z]+}) is still the operation's {customer}
			for _, g := range all[i+1:] {
				if g.Priority == r.Priority && g.Operation != nil && !moved[g] &&
					concreteOf(g.Path, shape) && methodsMeet(g.Methods, r.Methods) {
					if out == nil {
						out = append(make([]*scenarios.Route, 0, len(all)), all[:i]...)
					}
					out, moved[g] = append(out, g), true
				}
			}
		}
		if out != nil {
			out = append(out, r)
		}
	}
	if out == nil {
		return all
	}
	return out
}

// concreteOf says whether the path template c is t with one variable
// segment or more made literal, and no other difference.
func concreteOf(c, t string) bool {
	cs, ts := strings.Split(c, "/"), strings.Split(t, "/")
	if len(cs) != len(ts) {
		return false
	}
	more := false
	for i, seg := range ts {
		switch {
		case seg == cs[i]:
		case strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") && !strings.Contains(seg, ":") && !strings.Contains(cs[i], "{"):
			more = true
		default:
			return false
		}
	}
	return more
}

// methodsMeet says whether two routes' methods (none: any) share one.
func methodsMeet(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	for _, m := range a {
		if slices.Contains(b, m) {
			return true
		}
	}
	return false
}

// node is one level of the path index: routes whose template's leading
// literal segments end here and which continue with a variable. Fully
// literal templates are not in it: their paths are keys of Table.exact.
type node struct {
	children map[string]*node
	prefix   []int32
}

// Match is the route chosen for a request and the path variables it bound.
type Match struct {
	Route *Route
	Vars  map[string]string
}

// Compile indexes the routes of a validated set. Routes are ordered by
// priority, higher first; equal priorities keep file order.
func Compile(set *scenarios.Set) (*Table, error) {
	all := set.Routes()
	slices.SortStableFunc(all, func(a, b *scenarios.Route) int { return cmp.Compare(b.Priority, a.Priority) })
	all = concreteFirst(all)
	t := &Table{set: set, routes: make([]*Route, len(all))}
	templateIDs, condIDs := map[string]int32{}, map[string]int32{}
	t.exact = map[string][]int32{}
	for i, r := range all {
		tpl := r.Template
		if tpl == nil {
			var err error
			if tpl, _, err = scenarios.CompilePath(r.Path); err != nil {
				return nil, fmt.Errorf("%s: route %q: path: %w", r.PathPos, r.Name, err)
			}
		}
		literal, _, _ := strings.Cut(r.Path, "{")
		t.routes[i] = &Route{Route: r, Index: i, path: tpl, literal: literal, table: t}
		t.sessions = t.sessions || r.Session != ""
		t.states = t.states || wantsState(r)
		t.addTemplate(t.routes[i], templateIDs)
		t.addConditions(t.routes[i], condIDs)
		segs, exact := scenarios.LiteralPrefix(r.Path)
		if exact {
			t.exact[r.Path] = append(t.exact[r.Path], int32(i))
			continue
		}
		n := &t.root
		for _, s := range segs {
			if n.children == nil {
				n.children = map[string]*node{}
			}
			child := n.children[s]
			if child == nil {
				child = &node{}
				n.children[s] = child
			}
			n = child
		}
		n.prefix = append(n.prefix, int32(i))
	}
	t.byLiteral = make([]int32, len(t.templates))
	for i := range t.byLiteral {
		t.byLiteral[i] = int32(i)
	}
	slices.SortStableFunc(t.byLiteral, func(a, b int32) int { return strings.Compare(t.templates[a].literal, t.templates[b].literal) })
	// A literal path's candidates are its routes and the templated ones
	// whose literal part leads it.
	for path, routes := range t.exact {
		c := t.walk(path, nil)
		if len(c) == 0 {
			t.exact[path] = slices.Clip(routes)
			continue
		}
		c = append(c, routes...)
		slices.Sort(c)
		t.exact[path] = slices.Clip(c)
	}
	return t, nil
}

// Sessions reports whether some route answers only one session's
// requests, so that a server looks for a request's session only then.
func (t *Table) Sessions() bool { return t.sessions }

// States reports whether some route's state: has an is: condition, so
// that a server gives a request a StateReader only then.
func (t *Table) States() bool { return t.states }

// wantsState reports whether r matches only while its state has a value.
func wantsState(r *scenarios.Route) bool { return r.State != nil && r.State.Is != "" }

// addTemplate files r under its path template.
func (t *Table) addTemplate(r *Route, ids map[string]int32) {
	id, ok := ids[r.Path]
	if !ok {
		id = int32(len(t.templates))
		ids[r.Path] = id
		t.templates = append(t.templates, template{path: r.Path, literal: r.literal, first: int32(r.Index), anyMethod: -1})
	}
	r.tpl = id
	tp := &t.templates[id]
	if len(r.Methods) == 0 && tp.anyMethod < 0 {
		tp.anyMethod = int32(r.Index)
	}
	for _, m := range r.Methods {
		if !slices.ContainsFunc(tp.byMethod, func(b methodRoute) bool { return b.method == m }) {
			tp.byMethod = append(tp.byMethod, methodRoute{m, int32(r.Index)})
		}
	}
}

// addConditions gives each of r's conditions whose result is worth
// remembering an id, the same for the same test of the same field: body
// conditions, and regex and contains on headers and query parameters,
// whose cost grows with what the client sends. Equality, oneOf and
// presence cost less than a lookup.
func (t *Table) addConditions(r *Route, ids map[string]int32) {
	id := func(key string) int32 {
		i, ok := ids[key]
		if !ok {
			i = int32(t.cached)
			ids[key] = i
			t.cached++
		}
		return i
	}
	field := func(kind string, f *scenarios.Field) int32 {
		if f.Cond.Regex == nil && f.Cond.NotRegex == nil && f.Cond.Contains == nil {
			return -1
		}
		return id(kind + "\x00" + f.Name + "\x00" + f.Cond.String())
	}
	for i := range r.When.Headers {
		r.cache = append(r.cache, field("header", &r.When.Headers[i]))
	}
	for i := range r.When.Query {
		r.cache = append(r.cache, field("query", &r.When.Query[i]))
	}
	if b := r.When.Body; b != nil {
		key := "body\x00"
		if b.Raw != nil {
			key += b.Raw.String()
		}
		if b.HasJSON {
			doc, _ := json.Marshal(b.JSON) // sorted keys: the same document, the same key
			key += "\x00json\x00" + string(doc)
		}
		for _, f := range b.Form {
			key += "\x00form\x00" + f.Name + "\x00" + f.Cond.String()
		}
		r.cache = append(r.cache, id(key))
	}
	r.conditions = len(r.cache)
	if wantsState(r.Route) {
		r.conditions++ // tested last, by the request's StateReader
	}
}

// Set returns the set the table was compiled from.
func (t *Table) Set() *scenarios.Set { return t.set }

// Routes returns the routes in match order. The slice must not be changed.
func (t *Table) Routes() []*Route { return t.routes }

// Fallback returns the response for unmatched requests, or nil.
func (t *Table) Fallback() *scenarios.Response { return t.set.Fallback }

// candidates returns, in match order, the routes whose path can match:
// those whose literal segments lead the request path. buf may be used for
// the result; the result must not be changed.
func (t *Table) candidates(path string, buf []int32) []int32 {
	if c, ok := t.exact[path]; ok {
		return c
	}
	return t.walk(path, buf)
}

// walk collects the candidates for path from the trie.
func (t *Table) walk(path string, buf []int32) []int32 {
	n := &t.root
	buf = append(buf, n.prefix...)
	if !strings.HasPrefix(path, "/") {
		return buf
	}
	rest := path[1:]
	lists := 1
	for {
		seg, tail, more := strings.Cut(rest, "/")
		child := n.children[seg]
		if child == nil {
			break
		}
		n = child
		if len(n.prefix) > 0 {
			buf = append(buf, n.prefix...)
			lists++
		}
		if !more {
			break
		}
		rest = tail
	}
	if lists > 1 {
		slices.Sort(buf)
	}
	return buf
}

// Match returns the first route in match order that serves the request.
func (t *Table) Match(in *Request) (Match, bool) {
	var buf [16]int32
	path := in.HTTP.URL.Path
	for _, i := range t.candidates(path, buf[:0]) {
		r := t.routes[i]
		if !r.methodOK(in.HTTP.Method) || r.Session != in.Session && r.Session != "" {
			continue
		}
		vars, ok := r.matchPath(path)
		if !ok {
			continue
		}
		if _, _, ok := r.testConditions(in, vars); ok {
			return Match{Route: r, Vars: vars}, true
		}
	}
	return Match{}, false
}

// OnPath returns, in match order, the routes whose path matches the
// request's, whatever their method and conditions, among those of the
// request's session or of none. The server calls it on a miss only, to
// tell a method the path does not take (a 405) from a path nothing
// serves.
func (t *Table) OnPath(in *Request) []*Route {
	var buf [16]int32
	path := in.HTTP.URL.Path
	var out []*Route
	for _, i := range t.candidates(path, buf[:0]) {
		r := t.routes[i]
		if r.Session != in.Session && r.Session != "" || !r.pathMatches(path) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// TakesMethod reports whether the route serves requests of method m (a
// route that names no method serves any).
func (r *Route) TakesMethod(m string) bool { return r.methodOK(m) }

func (r *Route) methodOK(m string) bool {
	if len(r.Methods) == 0 {
		return true
	}
	for _, want := range r.Methods {
		if want == m {
			return true
		}
	}
	return false
}

func (r *Route) matchPath(path string) (map[string]string, bool) {
	if r.path.Literal() {
		return nil, path == r.Path
	}
	var buf [4]string
	vals, ok := r.path.Match(path, buf[:0])
	if !ok {
		return nil, false
	}
	vars := make(map[string]string, len(vals))
	for i, name := range r.path.Vars {
		vars[name] = vals[i]
	}
	return vars, true
}

// pathMatches is matchPath without binding the variables.
func (r *Route) pathMatches(path string) bool { return r.path.Matches(path) }

// testConditions checks the route's conditions in order: headers, query,
// body, state. It returns how many passed and, on failure, what failed. A
// condition already tested for this request is not tested again. The
// state is last: it is the one read from the store (a round trip on a
// shared one), and read only for a route that passed every other test.
func (r *Route) testConditions(in *Request, vars map[string]string) (passed int, f failure, ok bool) {
	for i := range r.When.Headers {
		h := &r.When.Headers[i]
		vals := in.Header(h.Name)
		if !r.testField(in, i, &h.Cond, vals) {
			return passed, failure{kind: "header", name: h.Name, cond: &h.Cond, got: vals, found: len(vals) > 0}, false
		}
		passed++
	}
	if len(r.When.Query) > 0 {
		q := in.Query()
		for i := range r.When.Query {
			c := &r.When.Query[i]
			vals := q[c.Name]
			if !r.testField(in, len(r.When.Headers)+i, &c.Cond, vals) {
				return passed, failure{kind: "query", name: c.Name, cond: &c.Cond, got: vals, found: len(vals) > 0}, false
			}
			passed++
		}
	}
	if b := r.When.Body; b != nil {
		id := r.cache[len(r.cache)-1]
		outcome, known := in.cached(r.table, id)
		if !known {
			outcome = testBody(b, in)
			in.remember(r.table, id, outcome)
		}
		if outcome != bodyOK {
			return passed, bodyFailure(b, in, outcome), false
		}
		passed++
	}
	if wantsState(r.Route) {
		st := r.State
		var key, value string
		read := false
		if in.States != nil {
			key, value, read = in.States.ReadState(r.Route, vars)
		}
		if !read || value != st.Is {
			f := failure{kind: "state", name: st.Name, stateKey: key, found: read, stateWant: st.Is}
			if read {
				f.got = []string{value}
			}
			return passed, f, false
		}
		passed++
	}
	return passed, failure{}, true
}

// testField tests condition number i of the route, a header or query
// condition, against vals.
func (r *Route) testField(in *Request, i int, c *scenarios.Condition, vals []string) bool {
	id := r.cache[i]
	if id < 0 {
		return testValues(c, vals)
	}
	if outcome, known := in.cached(r.table, id); known {
		return outcome == 0
	}
	ok := testValues(c, vals)
	outcome := 1
	if ok {
		outcome = 0
	}
	in.remember(r.table, id, outcome)
	return ok
}

// NearMiss is a route that did not match a request, and why.
type NearMiss struct {
	Route  string `json:"route"`
	Reason string `json:"reason"`
	// redacted is Reason without the values wanted of fields that look
	// like secrets.
	redacted string
}

// Redacted returns the near miss with the value its failed condition
// wants replaced by [redacted] when the header, query parameter or JSON
// key it tests looks like a secret (see SecretName), for an answer to the
// client, who may be guessing a token. Reason keeps the whole story, for
// the log.
func (n NearMiss) Redacted() NearMiss {
	if n.redacted != "" {
		n.Reason = n.redacted
	}
	n.redacted = ""
	return n
}

// maxNearMisses is how many routes a miss report names; keepRanked how
// many are ranked to find them; maxDistances how many distinct path
// templates a report computes the edit distance to.
const (
	maxNearMisses = 3
	keepRanked    = 4 * maxNearMisses
	maxDistances  = 32
)

// Explain ranks the routes closest to matching a request that matched
// none, best first: a route whose path and method match but whose
// conditions fail beats one whose method differs, which beats one whose
// path differs (ranked by edit distance between the path and the route's
// template). It is meant for misses only, and costs about what Match
// costs: it tests conditions only of routes whose path and method match
// and that could still rank (on a miss, a route with n conditions passes
// at most n-1), and computes the edit distance to at most maxDistances
// templates: those the index offers, then those whose literal part shares
// the most with the path, found by binary search.
func (t *Table) Explain(in *Request) []NearMiss {
	path, method := in.HTTP.URL.Path, in.HTTP.Method
	var buf [16]int32
	cands := t.candidates(path, buf[:0])
	var best rankedList
	var dist distances
	for _, i := range cands {
		r := t.routes[i]
		if r.Session != "" && r.Session != in.Session {
			continue // another session's routes are not this request's to see
		}
		c := ranked{r: r, methodOK: r.methodOK(method), pathOK: r.pathMatches(path)}
		switch {
		case !c.pathOK:
			var ok bool
			if c.distance, ok = dist.of(t, r.tpl, path, &best); !ok {
				continue
			}
			c.shared = sharedPrefix(path, r.literal)
		case c.methodOK:
			if best.full() && !(ranked{r: r, pathOK: true, methodOK: true, passed: r.conditions - 1}).better(*best.last()) {
				continue
			}
			var vars map[string]string
			if wantsState(r.Route) {
				vars, _ = r.matchPath(path) // what the state's per: sees
			}
			c.passed, c.fail, _ = r.testConditions(in, vars)
		}
		best.keep(c)
	}
	// Templates the index ruled out: those whose literal part shares the
	// most with the path are its neighbours in literal order. Once the
	// list is full of routes whose path matched, none of them can rank.
	if !best.full() || !best.last().pathOK {
		var seeds [1 + 2*maxTypoBytes]int32
		for _, id := range t.typoSeeds(path, seeds[:0]) {
			tp := &t.templates[id]
			if _, isCand := slices.BinarySearch(cands, tp.first); isCand {
				continue
			}
			ri, methodOK := tp.representative(method)
			if rs := t.routes[ri].Session; rs != "" && rs != in.Session {
				continue
			}
			c := ranked{r: t.routes[ri], methodOK: methodOK, shared: sharedPrefix(path, tp.literal)}
			var ok bool
			if c.distance, ok = dist.of(t, id, path, &best); ok {
				best.keep(c)
			}
		}
		pos := t.literalAt(path)
		lo, hi := pos-1, pos
		// As many templates as are ranked, like the candidates; skipping
		// candidates is bounded too, as there may be thousands.
		for kept, steps := 0, 0; kept < keepRanked && steps < 4*keepRanked && (lo >= 0 || hi < len(t.byLiteral)); steps++ {
			// The side sharing more of the path; on a tie, the template
			// first in match order, as a full ranking would break it.
			var id int32
			if hi >= len(t.byLiteral) || lo >= 0 && t.closerLiteral(path, t.byLiteral[lo], t.byLiteral[hi]) {
				id, lo = t.byLiteral[lo], lo-1
			} else {
				id, hi = t.byLiteral[hi], hi+1
			}
			tp := &t.templates[id]
			if _, isCand := slices.BinarySearch(cands, tp.first); isCand {
				continue // ranked above
			}
			kept++
			ri, methodOK := tp.representative(method)
			if rs := t.routes[ri].Session; rs != "" && rs != in.Session {
				continue
			}
			c := ranked{r: t.routes[ri], methodOK: methodOK, shared: sharedPrefix(path, tp.literal)}
			var ok bool
			if c.distance, ok = dist.of(t, id, path, &best); !ok {
				continue
			}
			best.keep(c)
		}
	}
	// Where the path is what failed, one route per template says it all.
	out := make([]NearMiss, 0, maxNearMisses)
	var shownPaths [maxNearMisses]int32
	shown := 0
	for k := range best.n {
		c := best.at(k)
		if len(out) == maxNearMisses {
			break
		}
		if !c.pathOK {
			if slices.Contains(shownPaths[:shown], c.r.tpl) {
				continue
			}
			shownPaths[shown] = c.r.tpl
			shown++
		}
		n := NearMiss{Route: c.r.Name}
		switch {
		case !c.pathOK:
			n.Reason = fmt.Sprintf("path %s does not match %s", clip(path), c.r.Path)
		case !c.methodOK:
			n.Reason = fmt.Sprintf("method is %s, want %s", method, strings.Join(c.r.Methods, " or "))
		default:
			n.Reason = c.fail.String()
			if c.fail.body != nil || SecretName(c.fail.name) {
				if r := c.fail.text(true); r != n.Reason {
					n.redacted = r
				}
			}
		}
		out = append(out, n)
	}
	return out
}

// literalAt returns where path would sort among the templates' literals.
func (t *Table) literalAt(path string) int {
	pos, _ := slices.BinarySearchFunc(t.byLiteral, path, func(id int32, p string) int { return strings.Compare(t.templates[id].literal, p) })
	return pos
}

// maxTypoBytes bounds the bytes typoSeeds tries in place of the first one
// that differs.
const maxTypoBytes = 16

// typoSeeds finds the templates a one-byte typo would explain: where the
// path first parts from every literal, it drops that byte, or replaces it
// or inserts before it each byte some literal has there, and looks the
// result up. Among thousands of templates sharing a prefix with the path
// (/items/0 … /items/9999 for /itemz/5), the neighbours in literal order
// are arbitrary; these are the ones a user most likely meant.
func (t *Table) typoSeeds(path string, seeds []int32) []int32 {
	n := len(t.byLiteral)
	lit := func(i int) string { return t.templates[t.byLiteral[i]].literal }
	pos := t.literalAt(path)
	at := 0 // where path parts from its neighbours
	if pos > 0 {
		at = sharedPrefix(path, lit(pos-1))
	}
	if pos < n {
		at = max(at, sharedPrefix(path, lit(pos)))
	}
	if at >= len(path) {
		return seeds
	}
	nearest := func(q string) {
		i := t.literalAt(q)
		switch {
		case i < n && (i == 0 || sharedPrefix(q, lit(i)) >= sharedPrefix(q, lit(i-1))):
			seeds = append(seeds, t.byLiteral[i])
		case i > 0:
			seeds = append(seeds, t.byLiteral[i-1])
		}
	}
	prefix := path[:at]
	nearest(prefix + path[at+1:])
	// The literals that share prefix are one block in literal order; walk
	// it a byte value at a time.
	for i, tried := t.literalAt(prefix), 0; i < n && tried < maxTypoBytes && strings.HasPrefix(lit(i), prefix); tried++ {
		l := lit(i)
		if len(l) == at {
			i++
			continue
		}
		c := l[at]
		nearest(prefix + string([]byte{c}) + path[at+1:])
		nearest(prefix + string([]byte{c}) + path[at:])
		if c == 0xff {
			break
		}
		i = t.literalAt(prefix + string([]byte{c + 1}))
	}
	return seeds
}

// closerLiteral reports whether template a's literal part shares more of
// path than b's, or as much and a comes first in match order.
func (t *Table) closerLiteral(path string, a, b int32) bool {
	sa, sb := sharedPrefix(path, t.templates[a].literal), sharedPrefix(path, t.templates[b].literal)
	return sa > sb || sa == sb && t.templates[a].first < t.templates[b].first
}

// distances remembers the edit distances a report has computed, by
// template, up to maxDistances of them.
type distances struct {
	n    int
	tpls [maxDistances]int32
	d    [maxDistances]int
}

// of returns the edit distance from path to template id, and false when
// the template cannot rank (the list is full and the distance exceeds its
// last's) or maxDistances templates have been measured already.
func (ds *distances) of(t *Table, id int32, path string, best *rankedList) (int, bool) {
	for i := range ds.n {
		if ds.tpls[i] == id {
			return ds.d[i], true
		}
	}
	tpl := t.templates[id].path
	limit := 64 // no limit: EditDistance compares the first 64 bytes of each
	if best.full() {
		last := best.last()
		if last.pathOK {
			return 0, false
		}
		limit = last.distance
	}
	if ds.n == maxDistances {
		return 0, false
	}
	// A distance over the limit is kept as limit+1: the limit only falls
	// as the list improves, so that template can never rank.
	d := editDistance(path, tpl, limit)
	ds.tpls[ds.n], ds.d[ds.n] = id, d
	ds.n++
	return d, d <= limit
}

// ranked is a route that did not match, with how far it got.
type ranked struct {
	r                *Route
	pathOK, methodOK bool
	passed           int     // conditions that held, when path and method matched
	shared           int     // bytes of the path shared with the route's literal part
	distance         int     // edit distance from the path, when it did not match
	fail             failure // the failed condition, when path and method matched
}

func (a ranked) better(b ranked) bool {
	if a.pathOK != b.pathOK {
		return a.pathOK
	}
	if a.pathOK {
		if a.methodOK != b.methodOK {
			return a.methodOK
		}
		if a.passed != b.passed {
			return a.passed > b.passed
		}
	} else {
		if a.distance != b.distance {
			return a.distance < b.distance
		}
		if a.shared != b.shared {
			return a.shared > b.shared
		}
		if a.methodOK != b.methodOK {
			return a.methodOK
		}
	}
	return a.r.Index < b.r.Index
}

// rankedList holds the best keepRanked, in place: entries stay in their
// slots and only their order moves, as a ranked is large and full of
// pointers (moving them cost half of a miss).
type rankedList struct {
	slots [keepRanked]ranked
	order [keepRanked]uint8 // slots, best first
	n     int
}

func (l *rankedList) full() bool       { return l.n == keepRanked }
func (l *rankedList) at(i int) *ranked { return &l.slots[l.order[i]] }
func (l *rankedList) last() *ranked    { return l.at(l.n - 1) }

func (l *rankedList) keep(c ranked) {
	i := sort.Search(l.n, func(i int) bool { return c.better(*l.at(i)) })
	if i >= keepRanked {
		return
	}
	var slot uint8
	if l.n < keepRanked {
		slot = uint8(l.n)
		l.n++
	} else {
		slot = l.order[keepRanked-1] // the worst drops out
	}
	copy(l.order[i+1:l.n], l.order[i:l.n-1])
	l.order[i] = slot
	l.slots[slot] = c
}

func sharedPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func clip(s string) string {
	if len(s) > 2*maxShown {
		return s[:2*maxShown] + "…"
	}
	return s
}

// editDistance is scenarios.EditDistance (bytes, the first 64 of each)
// with its rows on the stack, and limit+1 as soon as the distance is
// known to exceed limit (the difference in length, or a row's minimum):
// a miss measures a few dozen templates, most of which cannot rank.
func editDistance(a, b string, limit int) int {
	a, b = a[:min(len(a), 64)], b[:min(len(b), 64)]
	if max(len(a)-len(b), len(b)-len(a)) > limit {
		return limit + 1
	}
	// A common prefix and suffix never change the distance, and paths
	// share long ones ("/v1/customers/{customer}/…"): the table shrinks to
	// the part that differs.
	n := sharedPrefix(a, b)
	a, b = a[n:], b[n:]
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	var rows [2][65]int
	prev, cur := &rows[0], &rows[1]
	for j := range len(b) + 1 {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit+1)
}
