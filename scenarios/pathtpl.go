package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
)

// PathTemplate is a compiled gorilla/mux path template: a path matches
// here exactly when it would match a mux route with the same template, and
// binds the same values. A template whose variables all take the default
// pattern, each alone in its segment (with literal text around it if need
// be, as in /files/{name}.json), is matched a segment at a time without a
// regexp: at 100,000 routes, their regexps were a third of a load's time
// and half of the memory a set kept. Any other template is matched by a
// regexp built exactly as mux builds it (literal parts quoted, {name} as
// [^/]+, {name:pattern} as pattern, anchored at both ends). A PathTemplate
// is immutable and safe for concurrent use.
type PathTemplate struct {
	// Regexp is nil when the template has no variables or is matched a
	// segment at a time; group i+1 is Vars[i].
	Regexp *regexp.Regexp
	Vars   []string // variable names in order
	path   string   // the template as written
	// segs are the segments after the leading "/" of a template matched a
	// segment at a time.
	segs []pathSegment
	// patts are the variables' patterns, in the order of Vars.
	patts []string
}

// pathSegment is one segment of a template matched a segment at a time:
// literal text, or a variable with the literal text before and after it.
// A variable takes the default pattern, [^/]+: at least one byte, no "/".
type pathSegment struct {
	prefix, suffix string // the whole segment when !variable
	variable       bool
}

// Shape is the template with each variable's pattern left out
// ("/v1/payment_methods/{payment_method:pm_card_.+}/attach" is
// "/v1/payment_methods/{payment_method}/attach"): the path an OpenAPI
// operation names, whose route may narrow what a variable takes.
func (t *PathTemplate) Shape() string {
	if len(t.Vars) == 0 || !strings.Contains(t.path, ":") {
		return t.path
	}
	var b strings.Builder
	level := 0
	for i := 0; i < len(t.path); i++ {
		c := t.path[i]
		switch {
		case c == '{':
			if level++; level == 1 {
				j := i + 1
				for j < len(t.path) && t.path[j] != ':' && t.path[j] != '}' {
					j++
				}
				b.WriteString(t.path[i:j])
				b.WriteByte('}')
			}
		case c == '}':
			level--
		case level == 0:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// BeyondSegment returns the first variable whose pattern may take what
// the default pattern ([^/]+) never does, an empty value or a "/", with
// what it may take; "" when none does. A route that narrows an OpenAPI
// operation's variable must stay within it, or it would answer paths of
// other operations.
func (t *PathTemplate) BeyondSegment() (name, takes string) {
	for i, patt := range t.patts {
		if patt == defaultVarPattern {
			continue
		}
		if re, err := regexp.Compile("^(?:" + patt + ")$"); err == nil && re.MatchString("") {
			return t.Vars[i], "an empty value"
		}
		re, err := syntax.Parse(patt, syntax.Perl)
		if err != nil || takesSlash(re.Simplify()) {
			return t.Vars[i], `a "/"`
		}
	}
	return "", ""
}

// takesSlash says whether re may match a "/" anywhere.
func takesSlash(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return true
	case syntax.OpLiteral:
		return slices.Contains(re.Rune, '/')
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i] <= '/' && '/' <= re.Rune[i+1] {
				return true
			}
		}
		return false
	}
	return slices.ContainsFunc(re.Sub, takesSlash)
}

// Literal reports whether the template has no variables: a path matches
// it exactly when it is the template.
func (t *PathTemplate) Literal() bool { return len(t.Vars) == 0 }

// Match reports whether path matches the template, and appends the values
// its variables bind, in the order of Vars, to vals.
func (t *PathTemplate) Match(path string, vals []string) ([]string, bool) {
	switch {
	case t.segs != nil:
		return t.matchSegments(path, vals, true)
	case t.Regexp != nil:
		m := t.Regexp.FindStringSubmatch(path)
		if m == nil {
			return vals, false
		}
		return append(vals, m[1:]...), true
	}
	return vals, path == t.path
}

// Matches reports whether path matches the template, binding nothing.
func (t *PathTemplate) Matches(path string) bool {
	switch {
	case t.segs != nil:
		_, ok := t.matchSegments(path, nil, false)
		return ok
	case t.Regexp != nil:
		return t.Regexp.MatchString(path)
	}
	return path == t.path
}

// matchSegments matches path a segment at a time, appending to vals what
// each variable binds when bind is set. Each variable has its segment to
// itself, so what [^/]+ takes, anchored between fixed literal parts, is
// the one way the regexp could match: the rest of its segment.
func (t *PathTemplate) matchSegments(path string, vals []string, bind bool) ([]string, bool) {
	if path == "" || path[0] != '/' {
		return vals, false
	}
	n, rest := len(vals), path[1:]
	for i := range t.segs {
		sg := &t.segs[i]
		seg, tail, more := strings.Cut(rest, "/")
		if more != (i < len(t.segs)-1) {
			return vals[:n], false
		}
		rest = tail
		switch {
		case !sg.variable:
			if seg != sg.prefix {
				return vals[:n], false
			}
		case len(seg) <= len(sg.prefix)+len(sg.suffix) || !strings.HasPrefix(seg, sg.prefix) || !strings.HasSuffix(seg, sg.suffix):
			return vals[:n], false
		case bind:
			vals = append(vals, seg[len(sg.prefix):len(seg)-len(sg.suffix)])
		}
	}
	return vals, true
}

// pathError is a template problem at a byte offset into the template.
type pathError struct {
	off int
	msg string
}

func (e *pathError) Error() string { return e.msg }

// CompilePath parses a mux path template. The error, when not nil, says
// what is wrong; offset is the byte offset into tpl where it starts.
func CompilePath(tpl string) (t *PathTemplate, offset int, err error) {
	t, perr := compilePath(tpl)
	if perr != nil {
		return nil, perr.off, perr
	}
	return t, 0, nil
}

func compilePath(tpl string) (*PathTemplate, *pathError) {
	if !strings.HasPrefix(tpl, "/") {
		return nil, &pathError{0, "must start with /"}
	}
	if i := invalidUTF8(tpl); i >= 0 {
		return nil, &pathError{i, "is not valid UTF-8"} // mux cannot compile it
	}
	// braceIndices, as in mux: pairs of [start, end) of each top-level {…}.
	var idxs []int
	level, start := 0, 0
	for i := 0; i < len(tpl); i++ {
		switch tpl[i] {
		case '{':
			if level++; level == 1 {
				start = i
			}
		case '}':
			if level--; level == 0 {
				idxs = append(idxs, start, i+1)
			} else if level < 0 {
				return nil, &pathError{i, `unbalanced "}"`}
			}
		}
	}
	if level != 0 {
		return nil, &pathError{start, `unbalanced "{"`}
	}
	if len(idxs) == 0 {
		return &PathTemplate{path: tpl}, nil
	}
	t := &PathTemplate{path: tpl}
	patts := make([]string, 0, len(idxs)/2)
	for i := 0; i < len(idxs); i += 2 {
		inner := tpl[idxs[i]+1 : idxs[i+1]-1]
		name, patt, hasPatt := strings.Cut(inner, ":")
		if !hasPatt {
			patt = defaultVarPattern
		}
		if name == "" || patt == "" {
			return nil, &pathError{idxs[i], fmt.Sprintf("missing name or pattern in %q", tpl[idxs[i]:idxs[i+1]])}
		}
		if slices.Contains(t.Vars, name) {
			return nil, &pathError{idxs[i], fmt.Sprintf("variable %q appears twice", name)}
		}
		if patt != defaultVarPattern {
			if perr := checkVarPattern(name, patt, idxs[i]+len(name)+2); perr != nil {
				return nil, perr
			}
		}
		t.Vars = append(t.Vars, name)
		patts = append(patts, patt)
	}
	t.patts = patts
	if t.segs = splitSegments(tpl, idxs); t.segs != nil {
		return t, nil
	}
	var pattern bytes.Buffer
	pattern.WriteByte('^')
	end := 0
	for i := 0; i < len(idxs); i += 2 {
		pattern.WriteString(regexp.QuoteMeta(tpl[end:idxs[i]]))
		pattern.WriteString("(" + patts[i/2] + ")")
		end = idxs[i+1]
	}
	pattern.WriteString(regexp.QuoteMeta(tpl[end:]))
	pattern.WriteByte('$')
	re, err := regexp.Compile(pattern.String())
	if err != nil {
		return nil, &pathError{0, "bad regex: " + regexpMessage(err)}
	}
	if re.NumSubexp() != len(t.Vars) {
		// What mux panics on; the per-variable checks should make it
		// unreachable, and this keeps the matcher safe if they do not.
		return nil, &pathError{0, "the variable patterns change the groups around them"}
	}
	t.Regexp = re
	return t, nil
}

// splitSegments returns the segments of tpl, a valid template whose
// variables' braces are at idxs (pairs of [start, end)), when it can be
// matched a segment at a time: each variable is {name}, with no pattern,
// alone in its segment; and no literal part holds U+FFFD,
// which the regexp also matches to a byte of invalid UTF-8 in the path
// where comparing bytes would not. Otherwise it returns nil.
func splitSegments(tpl string, idxs []int) []pathSegment {
	if strings.ContainsRune(tpl, utf8.RuneError) {
		return nil
	}
	for i := 0; i < len(idxs); i += 2 {
		if strings.ContainsAny(tpl[idxs[i]+1:idxs[i+1]-1], ":/{}") {
			return nil // a pattern; or a "/" in braces, which is not a segment's end
		}
	}
	segs := make([]pathSegment, 0, strings.Count(tpl, "/"))
	for seg := range strings.SplitSeq(tpl[1:], "/") {
		open := strings.IndexByte(seg, '{')
		if open < 0 {
			segs = append(segs, pathSegment{prefix: seg})
			continue
		}
		end := strings.IndexByte(seg, '}') + 1
		if strings.ContainsAny(seg[end:], "{}") {
			return nil // two variables in a segment: [^/]+ can split it many ways
		}
		segs = append(segs, pathSegment{prefix: seg[:open], suffix: seg[end:], variable: true})
	}
	return segs
}

// defaultVarPattern is what {name} matches, as in mux. It is known to be
// good, so most templates need no check of their variables' patterns.
const defaultVarPattern = "[^/]+"

// checkVarPattern checks the pattern of a variable written {name:patt}
// whose pattern starts at offset off.
func checkVarPattern(name, patt string, off int) *pathError {
	// The pattern must compile as mux compiles it (^patt$), and stand
	// alone too: "?:x" passes mux's form, ")0\Q" passes the wrapped
	// one, and each would change the pattern around it. Parsing is
	// enough: compiling to a program would find no other error.
	var re *syntax.Regexp
	for _, wrap := range [][2]string{{"^", "$"}, {"^(?:", ")$"}} {
		form := wrap[0] + patt + wrap[1]
		var err error
		if re, err = syntax.Parse(form, syntax.Perl); err != nil {
			msg := patternMessage(err, form, len(wrap[0]), len(wrap[0])+len(patt)) // show what the user wrote
			return &pathError{off, fmt.Sprintf("variable %q: bad regex: %s", name, msg)}
		}
	}
	if re.MaxCap() > 0 {
		// mux panics on these; say how to write it instead.
		return &pathError{off, fmt.Sprintf("variable %q: the pattern has a capturing group; write (?:…) instead of (…)", name)}
	}
	return nil
}

// LiteralPrefix returns the leading segments of a path template that hold
// no variable: "/payments/{id}" gives ["payments"], and exact reports that
// the whole template is literal. Segments split at "/" outside braces.
func LiteralPrefix(tpl string) (segs []string, exact bool) {
	if !strings.HasPrefix(tpl, "/") {
		return nil, false
	}
	level, from := 0, 1
	for i := 1; i <= len(tpl); i++ {
		if i < len(tpl) {
			switch tpl[i] {
			case '{':
				level++
				continue
			case '}':
				level--
				continue
			case '/':
				if level != 0 {
					continue
				}
			default:
				continue
			}
		}
		seg := tpl[from:i]
		if strings.ContainsAny(seg, "{}") {
			return segs, false
		}
		segs = append(segs, seg)
		from = i + 1
	}
	return segs, true
}

// patternMessage reports a regexp error in form, a pattern the user wrote
// (form[from:to]) wrapped in anchors and perhaps a group, quoting only what
// the user wrote: the part of the offending expression inside the pattern,
// or the whole pattern. Quoting form would show a "$" or "^(?:" the user
// never typed.
func patternMessage(err error, form string, from, to int) string {
	var se *syntax.Error
	if !errors.As(err, &se) {
		return regexpMessage(err)
	}
	expr := form[from:to]
	i := strings.Index(form[from:], se.Expr) // the wrapper may hold the same text, as "(?:" holds "?"
	if i >= 0 {
		i += from
	} else {
		i = strings.Index(form, se.Expr) // the expression starts in the wrapper
	}
	if se.Expr != "" && i >= 0 {
		if lo, hi := max(i, from), min(i+len(se.Expr), to); lo < hi {
			expr = form[lo:hi]
		}
	}
	return fmt.Sprintf("%s: `%s`", se.Code, expr)
}

func regexpMessage(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "error parsing regexp: ")
	return s
}

// invalidUTF8 returns the offset of the first invalid UTF-8 byte, or -1.
func invalidUTF8(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return i
			}
		}
	}
	return -1
}
