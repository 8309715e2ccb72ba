package matcher

import (
	"fmt"
	"regexp"
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
}

// Route is a scenario route compiled for matching.
type Route struct {
	*scenarios.Route
	// Index is the route's position in match order, which also indexes
	// per-route state kept outside the table.
	Index int
	re    *regexp.Regexp // nil when the path is literal
	// literal is the template up to its first variable, for ranking near
	// misses by how much of the path they share.
	literal string
}

// node is one level of the path index: routes whose template's leading
// literal segments end here.
type node struct {
	children map[string]*node
	exact    []int32 // fully literal templates ending here
	prefix   []int32 // templates whose literal part ends here and which continue with a variable
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
	sort.SliceStable(all, func(i, j int) bool { return all[i].Priority > all[j].Priority })
	t := &Table{set: set, routes: make([]*Route, len(all))}
	for i, r := range all {
		tpl := r.Template
		if tpl == nil {
			var err error
			if tpl, _, err = scenarios.CompilePath(r.Path); err != nil {
				return nil, fmt.Errorf("%s: route %q: path: %w", r.PathPos, r.Name, err)
			}
		}
		literal, _, _ := strings.Cut(r.Path, "{")
		t.routes[i] = &Route{Route: r, Index: i, re: tpl.Regexp, literal: literal}
		segs, exact := scenarios.LiteralPrefix(r.Path)
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
		if exact {
			n.exact = append(n.exact, int32(i))
		} else {
			n.prefix = append(n.prefix, int32(i))
		}
	}
	t.exact = map[string][]int32{}
	for _, r := range t.routes {
		if r.re == nil {
			if _, done := t.exact[r.Path]; !done {
				t.exact[r.Path] = slices.Clip(t.walk(r.Path, nil))
			}
		}
	}
	return t, nil
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
			if len(n.exact) > 0 {
				buf = append(buf, n.exact...)
				lists++
			}
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
		if !r.methodOK(in.HTTP.Method) {
			continue
		}
		vars, ok := r.matchPath(path)
		if !ok {
			continue
		}
		if _, _, ok := r.testConditions(in); ok {
			return Match{Route: r, Vars: vars}, true
		}
	}
	return Match{}, false
}

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
	if r.re == nil {
		return nil, path == r.Path
	}
	m := r.re.FindStringSubmatch(path)
	if m == nil {
		return nil, false
	}
	vars := make(map[string]string, len(r.Vars))
	for i, name := range r.Vars {
		vars[name] = m[i+1]
	}
	return vars, true
}

// testConditions checks the route's conditions in order: headers, query,
// body. It returns how many passed and, on failure, what failed.
func (r *Route) testConditions(in *Request) (passed int, f failure, ok bool) {
	for i := range r.When.Headers {
		h := &r.When.Headers[i]
		vals := in.Header(h.Name)
		if !testValues(&h.Cond, vals) {
			return passed, failure{kind: "header", name: h.Name, cond: &h.Cond, got: vals, found: len(vals) > 0}, false
		}
		passed++
	}
	if len(r.When.Query) > 0 {
		q := in.Query()
		for i := range r.When.Query {
			c := &r.When.Query[i]
			vals := q[c.Name]
			if !testValues(&c.Cond, vals) {
				return passed, failure{kind: "query", name: c.Name, cond: &c.Cond, got: vals, found: len(vals) > 0}, false
			}
			passed++
		}
	}
	if b := r.When.Body; b != nil {
		if f, ok := testBody(b, in); !ok {
			return passed, f, false
		}
		passed++
	}
	return passed, failure{}, true
}

// NearMiss is a route that did not match a request, and why.
type NearMiss struct {
	Route  string `json:"route"`
	Reason string `json:"reason"`
}

// maxNearMisses is how many routes a miss report names; keepRanked how
// many are ranked to find them.
const (
	maxNearMisses = 3
	keepRanked    = 4 * maxNearMisses
)

// Explain ranks the routes closest to matching a request that matched
// none, best first: a route whose path and method match but whose
// conditions fail beats one whose method differs, which beats one whose
// path differs (ranked by edit distance between the path and the route's
// template). It is slower than Match and meant for misses only; its cost
// is one pass over the routes plus the conditions of the few whose path
// matches.
func (t *Table) Explain(in *Request) []NearMiss {
	path, method := in.HTTP.URL.Path, in.HTTP.Method
	var buf [16]int32
	cands := t.candidates(path, buf[:0])
	var best rankedList
	for _, i := range cands {
		r := t.routes[i]
		c := ranked{r: r, methodOK: r.methodOK(method)}
		_, c.pathOK = r.matchPath(path)
		if c.pathOK && c.methodOK {
			var f failure
			c.passed, f, _ = r.testConditions(in)
			c.reason = f.String()
		}
		if !c.pathOK {
			c.distance = scenarios.EditDistance(path, r.Path)
		}
		best.keep(c, keepRanked)
	}
	// Routes the index ruled out: keep the few sharing most of the path,
	// then rank those by edit distance, which is dearer to compute.
	var near rankedList
	for i, r := range t.routes {
		if slices.Contains(cands, int32(i)) {
			continue
		}
		near.keep(ranked{r: r, shared: sharedPrefix(path, r.literal), methodOK: r.methodOK(method)}, keepRanked)
	}
	for _, c := range near {
		c.distance = scenarios.EditDistance(path, c.r.Path)
		best.keep(c, keepRanked)
	}
	// Where the path is what failed, one route per template says it all.
	out := make([]NearMiss, 0, maxNearMisses)
	shownPaths := map[string]bool{}
	for _, c := range best {
		if len(out) == maxNearMisses {
			break
		}
		if !c.pathOK {
			if shownPaths[c.r.Path] {
				continue
			}
			shownPaths[c.r.Path] = true
		}
		reason := c.reason
		switch {
		case !c.pathOK:
			reason = fmt.Sprintf("path %s does not match %s", clip(path), c.r.Path)
		case !c.methodOK:
			reason = fmt.Sprintf("method is %s, want %s", method, strings.Join(c.r.Methods, " or "))
		}
		out = append(out, NearMiss{Route: c.r.Name, Reason: reason})
	}
	return out
}

// ranked is a route that did not match, with how far it got.
type ranked struct {
	r                *Route
	pathOK, methodOK bool
	passed           int    // conditions that held, when path and method matched
	shared           int    // bytes of the path shared with the route's literal part
	distance         int    // edit distance from the path, when it did not match
	reason           string // the failed condition, when path and method matched
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

// rankedList holds the best few, best first.
type rankedList []ranked

func (l *rankedList) keep(c ranked, limit int) {
	i := sort.Search(len(*l), func(i int) bool { return c.better((*l)[i]) })
	if i >= limit {
		return
	}
	*l = slices.Insert(*l, i, c)
	if len(*l) > limit {
		*l = (*l)[:limit]
	}
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
