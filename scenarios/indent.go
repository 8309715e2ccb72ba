package scenarios

import (
	"bytes"
	"fmt"
	"regexp"
	"unicode/utf8"
)

// indentMessages are the yaml.v3 syntax errors that a misplaced indent
// causes. They describe the parser's state, not the mistake, and yaml.v3
// may report them on the line after it.
var indentMessages = map[string]bool{
	"mapping values are not allowed in this context":         true,
	"did not find expected key":                              true,
	"did not find expected '-' indicator":                    true,
	"block sequence entries are not allowed in this context": true,
}

// contentLine is one line of content as indentation sees it. Columns are
// 0-based here and 1-based in messages.
type contentLine struct {
	n      int  // 1-based line number
	indent int  // leading spaces
	item   bool // starts with "- "
	// col is where the line's mapping key starts (after "- " for an
	// item), or its first character when it holds no key.
	col    int
	key    string
	opens  bool // a key or dash with nothing after it: a block follows
	scalar bool // a block scalar (| or >) follows
	// colon is the column (in runes) of a ": " inside the key's plain
	// value, or -1.
	colon int
}

// keyRE finds a mapping key at the start of a line's content: a plain,
// single- or double-quoted key, then a colon followed by a space or the
// end of the line.
var keyRE = regexp.MustCompile(`^("[^"]*"|'[^']*'|[^\s#{\[\]},&*!|>'"%@` + "`" + `][^#]*?)\s*:(\s|$)`)

func readContentLine(n int, text []byte) (contentLine, bool) {
	text = bytes.TrimRight(text, "\r\n\u0085\u2028\u2029")
	l := contentLine{n: n, colon: -1}
	for l.indent < len(text) && text[l.indent] == ' ' {
		l.indent++
	}
	rest := text[l.indent:]
	if len(rest) == 0 || rest[0] == '#' || rest[0] == '\t' {
		return l, false
	}
	l.col = l.indent
	if rest[0] == '-' && (len(rest) == 1 || rest[1] == ' ') {
		l.item = true
		i := 1
		for i < len(rest) && rest[i] == ' ' {
			i++
		}
		l.col += i
		rest = rest[i:]
		if len(rest) == 0 || rest[0] == '#' {
			l.opens = true
			return l, true
		}
	}
	if m := keyRE.FindSubmatch(rest); m != nil {
		l.key = string(bytes.TrimSpace(m[1]))
		value := bytes.TrimSpace(rest[len(m[0]):])
		l.opens = len(value) == 0 || value[0] == '#'
		l.scalar = len(value) > 0 && (value[0] == '|' || value[0] == '>')
		if len(value) > 0 && !bytes.ContainsRune([]byte("\"'{[|>&*!#"), rune(value[0])) {
			if c := bytes.Index(value, []byte(" #")); c >= 0 {
				value = bytes.TrimSpace(value[:c]) // a comment may hold colons
			}
			i := bytes.Index(value, []byte(": "))
			if i < 0 && bytes.HasSuffix(value, []byte(":")) {
				i = len(value) - 1
			}
			if i >= 0 {
				off := len(text) - len(bytes.TrimLeft(rest[len(m[0]):], " \t")) + i
				l.colon = utf8.RuneCount(text[:off])
			}
		}
	}
	return l, true
}

// contentLines returns the lines 1..upto that hold YAML structure: not
// blank, not comments, not inside a block scalar.
func contentLines(lines [][]byte, upto int) []contentLine {
	var out []contentLine
	scalarAt := -1 // the indent of the key whose block scalar we are in
	flow := 0      // the depth of { and [ left open by earlier lines
	for i := 0; i < upto && i < len(lines); i++ {
		l, ok := readContentLine(i+1, lines[i])
		if !ok {
			continue
		}
		inFlow := flow > 0
		if scalarAt < 0 || l.indent <= scalarAt {
			flow = max(0, flow+flowDepth(lines[i]))
		}
		if inFlow {
			continue // a {…} or […] written over several lines ignores indentation
		}
		if scalarAt >= 0 {
			if l.indent > scalarAt {
				continue
			}
			scalarAt = -1
		}
		if l.scalar {
			scalarAt = l.indent
		}
		out = append(out, l)
	}
	return out
}

// diagnoseIndent explains a syntax error caused by indentation: which line
// is misplaced and how, in words a newcomer reads, instead of yaml.v3's
// parser state. line is where the error was located. ok is false when
// the lines do not show one of the common mistakes.
func diagnoseIndent(lines [][]byte, line int, msg string) (at, col int, plain string, ok bool) {
	if !indentMessages[msg] {
		return 0, 0, "", false
	}
	ls := contentLines(lines, line)
	if len(ls) < 2 || ls[len(ls)-1].n != line {
		return 0, 0, "", false
	}
	cur, prev := ls[len(ls)-1], ls[len(ls)-2]
	if msg == "mapping values are not allowed in this context" && cur.colon >= 0 {
		return cur.n, cur.colon + 1, fmt.Sprintf("the value of %s: holds a colon and a space, which YAML reads as the start of a mapping; put the value in quotes", cur.key), true
	}
	what := "this line"
	if cur.item {
		what = "this list item"
	}
	// A value written on the line after its key must be indented more than
	// the key; yaml.v3 stumbles only on the line after the value.
	if len(ls) >= 3 && prev.key == "" && !prev.item {
		if owner := ls[len(ls)-3]; owner.key != "" && owner.opens && prev.indent <= owner.col {
			return prev.n, prev.indent + 1, fmt.Sprintf("this value is not indented more than its key %s: (line %d); indent it further, or write it after the colon", owner.key, owner.n), true
		}
	}
	switch {
	case cur.indent > prev.col && !prev.opens:
		above := "the line above it"
		if prev.key != "" {
			above = fmt.Sprintf("the key above it (%s: on line %d, which already has its value)", prev.key, prev.n)
		}
		return cur.n, cur.indent + 1, fmt.Sprintf("%s is indented more than %s; keys of one mapping start in the same column (column %d)", what, above, prev.col+1), true
	case cur.item && cur.indent == prev.col && prev.key != "" && !prev.opens:
		for i := len(ls) - 2; i >= 0; i-- {
			if q := ls[i]; q.item && q.indent < cur.indent {
				return cur.n, cur.indent + 1, fmt.Sprintf("this list item is indented more than the item above it (line %d); items of one list start in the same column (column %d)", q.n, q.indent+1), true
			}
		}
		return cur.n, cur.indent + 1, fmt.Sprintf("a list item cannot start here: the key above it (%s: on line %d) already has its value", prev.key, prev.n), true
	case cur.indent < prev.col:
		// Find the columns cur could line up with: the enclosing lines'.
		type stop struct {
			col, n int
			key    string // the key in that column, if any
		}
		stops := []stop{{prev.col, prev.n, prev.key}}
		if prev.item {
			stops = append(stops, stop{prev.indent, prev.n, ""})
		}
		last := prev.indent
		for i := len(ls) - 3; i >= 0 && last > 0; i-- {
			if e := ls[i]; e.indent < last {
				stops = append(stops, stop{e.col, e.n, e.key})
				if e.item {
					stops = append(stops, stop{e.indent, e.n, ""})
				}
				last = e.indent
			}
		}
		var upper, lower *stop
		for i := range stops {
			s := &stops[i]
			if s.col == cur.indent {
				return 0, 0, "", false // lined up with something: not an indent mistake we know
			}
			if s.col > cur.indent && (upper == nil || s.col < upper.col) {
				upper = s
			}
			if s.col < cur.indent && (lower == nil || s.col > lower.col) {
				lower = s
			}
		}
		if upper == nil || lower == nil {
			return 0, 0, "", false
		}
		if cur.item {
			for _, e := range ls {
				if e.n == lower.n && e.item && e.indent == lower.col {
					return cur.n, cur.indent + 1, fmt.Sprintf("this list item is indented more than the item above it (line %d); items of one list start in the same column (column %d)", lower.n, lower.col+1), true
				}
			}
		}
		if upper.key != "" && !cur.item {
			return cur.n, cur.indent + 1, fmt.Sprintf("this line is indented less than the key above it (%s: on line %d) but more than line %d; keys of one mapping start in the same column (column %d)", upper.key, upper.n, lower.n, upper.col+1), true
		}
		return cur.n, cur.indent + 1, fmt.Sprintf("%s is indented less than the line above it (line %d) and more than line %d; line it up with column %d to continue the same mapping, or column %d", what, upper.n, lower.n, upper.col+1, lower.col+1), true
	}
	return 0, 0, "", false
}

// flowDepth returns how many { and [ a line opens minus how many it closes,
// outside quotes and comments.
func flowDepth(line []byte) int {
	depth := 0
	var quote byte
	for i, c := range line {
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' && (i == 0 || line[i-1] == ' '):
			return depth
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
	}
	return depth
}
