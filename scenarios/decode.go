package scenarios

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// decoder turns yaml.Node trees into the model and collects every problem
// with its position. It walks nodes by hand instead of using yaml.v3's
// struct decoding so that every error carries a column, unknown fields get
// a suggestion, and one bad field does not hide the next.
type decoder struct {
	file string
	// src is the file's content; split is its lines once fileLines was
	// called, to find a column where only a line is known. Only an error
	// needs them: at 100,000 routes in one file, the lines were 30 MB
	// kept for the whole load.
	src    []byte
	split  [][]byte
	prefix string // names the route being decoded, e.g. `route "pay": `
	errs   []*Error
	// budget bounds the nodes visited through aliases, so that a small file
	// of nested anchors cannot expand into gigabytes (billion laughs).
	budget int
}

const nodeBudget = 1_000_000

// maxDepth bounds the nesting of bodies and conditions we recurse into.
const maxDepth = 200

func (d *decoder) pos(n *yaml.Node) Pos { return Pos{File: d.file, Line: n.Line, Col: n.Column} }

// fileLines returns the file's lines, split at their first use.
func (d *decoder) fileLines() [][]byte {
	if d.split == nil && d.src != nil {
		d.split = splitLines(d.src)
	}
	return d.split
}

// lineStart returns the column of the first non-blank character of a line.
func (d *decoder) lineStart(line int) int {
	lines := d.fileLines()
	if line < 1 || line > len(lines) {
		return 1
	}
	return firstNonBlank(lines[line-1])
}

func firstNonBlank(line []byte) int {
	col := 1
	for col <= len(line) && (line[col-1] == ' ' || line[col-1] == '\t') {
		col++
	}
	return col
}

// fail records a problem at n. field is the dotted path to the field within
// the current route or file, e.g. "when.headers.Idempotency-Key".
func (d *decoder) fail(n *yaml.Node, field, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	d.errs = append(d.errs, &Error{Pos: d.pos(n), Msg: d.prefix + msg})
}

// resolve follows aliases to the node they name.
func (d *decoder) resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!str":
			return strconv.Quote(n.Value)
		}
		return n.Value
	}
	return "an unknown node"
}

type pair struct{ key, val *yaml.Node }

// pairs returns a mapping's entries in order, with merge keys (<<) expanded
// below the explicit keys, and reports duplicate and non-string keys.
func (d *decoder) pairs(n *yaml.Node, field string) ([]pair, bool) {
	n = d.resolve(n)
	if n.Kind != yaml.MappingNode {
		d.fail(n, field, "want a mapping, got %s", describe(n))
		return nil, false
	}
	return d.pairsDepth(n, field, 0), true
}

func (d *decoder) pairsDepth(n *yaml.Node, field string, depth int) []pair {
	var merged []pair
	out := make([]pair, 0, len(n.Content)/2)
	// The keys so far, for a mapping of many; those of a small one, as
	// most are, are looked for in n instead (a map each cost a tenth of
	// a large load's allocations).
	var seen map[string]*yaml.Node
	if len(n.Content) > 2*smallMapping {
		seen = make(map[string]*yaml.Node, len(n.Content)/2)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if isMergeKey(k) {
			merged = append(merged, d.merge(v, field, depth)...)
			continue
		}
		kr := d.resolve(k)
		if kr.Kind != yaml.ScalarNode {
			d.fail(k, field, "a key must be a plain string, got %s", describe(kr))
			continue
		}
		prev, dup := seen[kr.Value]
		if seen == nil {
			prev, dup = d.firstKey(n, i, kr.Value)
		}
		if dup {
			d.fail(k, join(field, kr.Value), "duplicate key (first at line %d)", prev.Line)
			continue
		}
		if seen != nil {
			seen[kr.Value] = k
		}
		out = append(out, pair{kr, v})
	}
	for _, p := range merged {
		_, dup := seen[p.key.Value]
		if seen == nil {
			dup = slices.ContainsFunc(out, func(q pair) bool { return q.key.Value == p.key.Value })
		}
		if !dup {
			if seen != nil {
				seen[p.key.Value] = p.key
			}
			out = append(out, p)
		}
	}
	return out
}

// smallMapping is how many keys a mapping may have for pairsDepth to look
// for duplicates without a map.
const smallMapping = 16

func isMergeKey(k *yaml.Node) bool { return k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" }

// firstKey returns the first of the keys of mapping n before index i
// whose value is key, as written (an alias stays one), if any.
func (d *decoder) firstKey(n *yaml.Node, i int, key string) (*yaml.Node, bool) {
	for j := 0; j < i; j += 2 {
		k := n.Content[j]
		if kr := d.resolve(k); kr.Kind == yaml.ScalarNode && kr.Value == key && !isMergeKey(k) {
			return k, true
		}
	}
	return nil, false
}

// merge returns the pairs that a merge key's value brings: one mapping, or
// a list of them where earlier ones win.
func (d *decoder) merge(v *yaml.Node, field string, depth int) []pair {
	if depth > 20 {
		d.fail(v, field, "merge keys nest too deeply")
		return nil
	}
	v = d.resolve(v)
	switch v.Kind {
	case yaml.MappingNode:
		return d.pairsDepth(v, field, depth+1)
	case yaml.SequenceNode:
		var out []pair
		seen := map[string]bool{}
		for _, m := range v.Content {
			m = d.resolve(m)
			if m.Kind != yaml.MappingNode {
				d.fail(m, field, "a merge (<<) takes mappings, got %s", describe(m))
				continue
			}
			for _, p := range d.pairsDepth(m, field, depth+1) {
				if !seen[p.key.Value] {
					seen[p.key.Value] = true
					out = append(out, p)
				}
			}
		}
		return out
	}
	d.fail(v, field, "a merge (<<) takes a mapping, got %s", describe(v))
	return nil
}

// fields decodes a mapping whose keys must be among known, reporting any
// other key with the nearest known name.
func (d *decoder) fields(n *yaml.Node, field string, known ...string) (map[string]pair, bool) {
	ps, ok := d.pairs(n, field)
	if !ok {
		return nil, false
	}
	out := make(map[string]pair, len(ps))
	for i, p := range ps {
		if field == "" && d.prefix == "" && strings.HasPrefix(p.key.Value, "x-") {
			continue // a top-level extension field: a home for YAML anchors, as in Docker Compose
		}
		if !contains(known, p.key.Value) {
			if i > 0 && emptyAbove(ps[i-1], p) {
				// "respond:" then "status: 200" in the same column: the
				// user meant status inside respond and indented too little.
				d.fail(p.key, field, "unknown field %q; to put it inside %s: (line %d), indent it more than %s:", p.key.Value, ps[i-1].key.Value, ps[i-1].key.Line, ps[i-1].key.Value)
				continue
			}
			d.unknown(p.key, field, "field", p.key.Value, known)
			continue
		}
		out[p.key.Value] = p
	}
	return out, true
}

// emptyAbove reports whether p directly follows, in the same column, a
// key written with nothing after it.
func emptyAbove(above, p pair) bool {
	v := above.val
	return v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" && v.Value == "" && // "key:", not "key: null"
		above.key.Column == p.key.Column && above.key.Line < p.key.Line
}

func (d *decoder) unknown(at *yaml.Node, field, what, name string, known []string) {
	if s := Suggest(name, known); s != "" {
		d.fail(at, field, "unknown %s %q (did you mean %q?)", what, name, s)
		return
	}
	d.fail(at, field, "unknown %s %q (want one of %s)", what, name, strings.Join(known, ", "))
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// str reads any scalar as its text: header values like `true` or `3` are
// meant as strings.
func (d *decoder) str(n *yaml.Node, field string) (string, bool) {
	n = d.resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		d.fail(n, field, "want a string, got %s", describe(n))
		return "", false
	}
	return n.Value, true
}

// strList reads a string or a list of strings.
func (d *decoder) strList(n *yaml.Node, field string) ([]string, bool) {
	n = d.resolve(n)
	if n.Kind != yaml.SequenceNode {
		s, ok := d.str(n, field)
		return []string{s}, ok
	}
	out := make([]string, 0, len(n.Content))
	ok := true
	for i, e := range n.Content {
		s, eok := d.str(e, fmt.Sprintf("%s[%d]", field, i))
		ok = ok && eok
		out = append(out, s)
	}
	return out, ok
}

func (d *decoder) integer(n *yaml.Node, field string) (int, bool) {
	n = d.resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" {
		var v int64
		if err := n.Decode(&v); err == nil && v >= math.MinInt32 && v <= math.MaxInt32 {
			return int(v), true
		}
		d.fail(n, field, "integer %s is out of range", n.Value)
		return 0, false
	}
	d.fail(n, field, "want an integer, got %s", describe(n))
	return 0, false
}

func (d *decoder) float(n *yaml.Node, field string) (float64, bool) {
	n = d.resolve(n)
	if n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!int" || n.ShortTag() == "!!float") {
		var v float64
		if err := n.Decode(&v); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
			return v, true
		}
	}
	d.fail(n, field, "want a number, got %s", describe(n))
	return 0, false
}

func (d *decoder) boolean(n *yaml.Node, field string) (bool, bool) {
	n = d.resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
		var v bool
		if err := n.Decode(&v); err == nil {
			return v, true
		}
	}
	d.fail(n, field, "want true or false, got %s", describe(n))
	return false, false
}

// durationShape is a well-formed duration; one that still fails to parse
// is too large for time.Duration.
var durationShape = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$`)

// maxDelay bounds delays: anything longer is a typo, and it keeps
// arithmetic on durations far from overflow.
const maxDelay = 24 * time.Hour

func (d *decoder) duration(n *yaml.Node, field string) (time.Duration, bool) {
	n = d.resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		d.fail(n, field, "want a duration like 250ms or 10s, got %s", describe(n))
		return 0, false
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		if _, numErr := strconv.ParseFloat(n.Value, 64); numErr == nil && n.Value != "0" {
			d.fail(n, field, "bad duration %q: missing unit (write %sms or %ss)", n.Value, n.Value, n.Value)
			return 0, false
		}
		if n.Value == "0" {
			return 0, true
		}
		if durationShape.MatchString(n.Value) {
			d.fail(n, field, "bad duration %q: more than %s", n.Value, maxDelay) // overflows time.Duration
			return 0, false
		}
		d.fail(n, field, "bad duration %q: want a Go duration like 250ms, 1.5s or 2m", n.Value)
		return 0, false
	}
	if v < 0 {
		d.fail(n, field, "bad duration %q: must not be negative", n.Value)
		return 0, false
	}
	if v > maxDelay {
		d.fail(n, field, "bad duration %q: more than %s", n.Value, maxDelay)
		return 0, false
	}
	return v, true
}
