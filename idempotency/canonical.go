package idempotency

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"
)

// maxJSONDepth bounds the nesting canonicalJSON follows; a deeper body is
// fingerprinted as its bytes.
const maxJSONDepth = 200

// canonicalJSON appends a canonical form of the JSON text src to dst and
// reports whether src is one valid JSON value. Equal values give equal
// bytes whatever the key order, the white space, the escapes of strings
// and the spelling of numbers. It parses src itself, without building
// maps, because it runs on every request to an idempotent route. The
// output is for hashing only: strings and keys are length-prefixed rather
// than quoted.
func canonicalJSON(dst, src []byte) ([]byte, bool) {
	p := canonParser{src: src}
	out, ok := p.value(dst, 0)
	if !ok {
		return dst, false
	}
	p.space()
	return out, p.i == len(src)
}

type canonParser struct {
	src []byte
	i   int
}

func (p *canonParser) space() {
	for p.i < len(p.src) {
		switch p.src[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *canonParser) value(dst []byte, depth int) ([]byte, bool) {
	p.space()
	if p.i >= len(p.src) || depth > maxJSONDepth {
		return dst, false
	}
	switch c := p.src[p.i]; {
	case c == '{':
		return p.object(dst, depth)
	case c == '[':
		return p.array(dst, depth)
	case c == '"':
		s, ok := p.str()
		return appendField(append(dst, 's'), s), ok
	case c == '-' || c >= '0' && c <= '9':
		return p.number(dst)
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(p.src[p.i:], []byte(lit)) {
			p.i += len(lit)
			return append(dst, lit[0]), true
		}
	}
	return dst, false
}

// member is one object member: its decoded key and its value's canonical
// bytes, as a range of the scratch buffer.
type member struct {
	key        []byte
	start, end int
}

func (p *canonParser) object(dst []byte, depth int) ([]byte, bool) {
	p.i++ // {
	// Room for the common small object without growing: the members on
	// the stack, the values' bytes in one buffer the size of the rest.
	var room [16]member
	members := room[:0]
	bp := buffers.Get().(*[]byte)
	scratch := slices.Grow((*bp)[:0], len(p.src)-p.i)
	defer putBuffer(bp, &scratch)
	p.space()
	if p.i < len(p.src) && p.src[p.i] == '}' {
		p.i++
		return append(dst, '{', '}'), true
	}
	for {
		p.space()
		if p.i >= len(p.src) || p.src[p.i] != '"' {
			return dst, false
		}
		key, ok := p.str()
		if !ok {
			return dst, false
		}
		p.space()
		if p.i >= len(p.src) || p.src[p.i] != ':' {
			return dst, false
		}
		p.i++
		start := len(scratch)
		if scratch, ok = p.value(scratch, depth+1); !ok {
			return dst, false
		}
		members = append(members, member{key, start, len(scratch)})
		p.space()
		if p.i >= len(p.src) {
			return dst, false
		}
		if p.src[p.i] == ',' {
			p.i++
			continue
		}
		if p.src[p.i] != '}' {
			return dst, false
		}
		p.i++
		break
	}
	// A stable sort: with duplicate keys, their order still counts.
	slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	dst = append(dst, '{')
	for _, m := range members {
		dst = appendField(dst, m.key)
		dst = append(dst, scratch[m.start:m.end]...)
	}
	return append(dst, '}'), true
}

func (p *canonParser) array(dst []byte, depth int) ([]byte, bool) {
	p.i++ // [
	dst = append(dst, '[')
	p.space()
	if p.i < len(p.src) && p.src[p.i] == ']' {
		p.i++
		return append(dst, ']'), true
	}
	for {
		var ok bool
		if dst, ok = p.value(dst, depth+1); !ok {
			return dst, false
		}
		dst = append(dst, ',')
		p.space()
		if p.i >= len(p.src) {
			return dst, false
		}
		if p.src[p.i] == ',' {
			p.i++
			continue
		}
		if p.src[p.i] != ']' {
			return dst, false
		}
		p.i++
		return append(dst, ']'), true
	}
}

// str reads a string and returns its decoded bytes: the source bytes
// themselves when it has no escapes, the common case.
func (p *canonParser) str() ([]byte, bool) {
	start := p.i
	p.i++ // "
	escaped := false
	for p.i < len(p.src) {
		switch c := p.src[p.i]; {
		case c == '"':
			p.i++
			raw := p.src[start:p.i]
			if !escaped {
				return raw[1 : len(raw)-1], true
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, false
			}
			return []byte(s), true
		case c == '\\':
			escaped = true
			p.i += 2
		case c < ' ':
			return nil, false
		default:
			p.i++
		}
	}
	return nil, false
}

func (p *canonParser) number(dst []byte) ([]byte, bool) {
	start := p.i
	for p.i < len(p.src) {
		c := p.src[p.i]
		if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			p.i++
			continue
		}
		break
	}
	raw := p.src[start:p.i]
	if plainInt(raw) {
		// Already in its one spelling: no parse, no allocation.
		return append(append(dst, 'n'), raw...), true
	}
	n := json.Number(raw)
	if !validNumber(string(n)) {
		return dst, false
	}
	return appendNumber(append(dst, 'n'), n), true
}

// plainInt reports whether b is an integer as appendNumber would write it:
// digits without a leading zero, an optional minus, short enough for int64
// and not negative zero.
func plainInt(b []byte) bool {
	digits := b
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 || digits[0] == '0' && (len(digits) > 1 || len(b) > 1) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// validNumber reports whether s is a JSON number (RFC 8259 section 6).
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}

// appendField appends b with its length before it.
func appendField(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}
