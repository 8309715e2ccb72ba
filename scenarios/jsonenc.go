package scenarios

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"strconv"

	"gopkg.in/yaml.v3"
)

// encodeJSON writes a YAML node as JSON, keeping mapping keys in the order
// they were written (encoding/json on a map would sort them).
func (d *decoder) encodeJSON(buf *bytes.Buffer, n *yaml.Node, field string, depth int) bool {
	d.budget--
	if d.budget < 0 {
		if d.budget == -1 {
			d.fail(n, field, "too many nodes (aliases expand to more than %d)", nodeBudget)
		}
		return false
	}
	if depth > maxDepth {
		d.fail(n, field, "nested more than %d levels deep", maxDepth)
		return false
	}
	n = d.resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		ps := d.pairsDepth(n, field, 0)
		buf.WriteByte('{')
		for i, p := range ps {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJSONString(buf, p.key.Value)
			buf.WriteByte(':')
			if !d.encodeJSON(buf, p.val, join(field, p.key.Value), depth+1) {
				return false
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, e := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if !d.encodeJSON(buf, e, field+"["+strconv.Itoa(i)+"]", depth+1) {
				return false
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		return d.encodeScalar(buf, n, field)
	default:
		d.fail(n, field, "cannot be encoded as JSON")
		return false
	}
	return true
}

func (d *decoder) encodeScalar(buf *bytes.Buffer, n *yaml.Node, field string) bool {
	switch n.ShortTag() {
	case "!!null":
		buf.WriteString("null")
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			d.fail(n, field, "bad boolean %q", n.Value)
			return false
		}
		buf.WriteString(strconv.FormatBool(b))
	case "!!int":
		if canonicalInt(n.Value) {
			buf.WriteString(n.Value) // what decoding it and formatting it again gives
			return true
		}
		var i int64
		if err := n.Decode(&i); err == nil {
			buf.WriteString(strconv.FormatInt(i, 10))
			return true
		}
		var u uint64
		if err := n.Decode(&u); err == nil {
			buf.WriteString(strconv.FormatUint(u, 10))
			return true
		}
		// Larger than 64 bits: JSON allows it, keep the digits as written
		// when they are plain decimal.
		if json.Valid([]byte(n.Value)) {
			buf.WriteString(n.Value)
			return true
		}
		d.fail(n, field, "integer %s cannot be written as JSON", n.Value)
		return false
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			d.fail(n, field, "number %s cannot be written as JSON", n.Value)
			return false
		}
		if json.Valid([]byte(n.Value)) {
			buf.WriteString(n.Value) // keep 12.50 as written
		} else {
			buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
		}
	default:
		// A plain (unquoted) number too large for yaml.v3's int and float
		// resolves as a string; it was written as a number, so keep it one.
		if n.Style == 0 && maybeNumber(n.Value) && jsonNumber.MatchString(n.Value) {
			buf.WriteString(n.Value)
			return true
		}
		writeJSONString(buf, n.Value)
	}
	return true
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// writeJSONString writes s as a JSON string. Unlike json.Marshal it leaves
// <, > and & alone: the body is JSON, not HTML, and a value echoed from a
// request should read as it was sent.
func writeJSONString(buf *bytes.Buffer, s string) {
	if plainJSON(s) {
		// What the encoder writes for printable ASCII without a quote or
		// a backslash, without an encoder for every key and string of
		// every body (a 100,000-route load writes millions).
		buf.WriteByte('"')
		buf.WriteString(s)
		buf.WriteByte('"')
		return
	}
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // a string always encodes
	buf.Truncate(buf.Len() - 1) // Encode ends with a newline
}

// value converts a YAML node to the Go value a JSON decoder would produce
// for the same document (map[string]any, []any, string, json.Number, bool,
// nil), for partial JSON matching.
func (d *decoder) value(n *yaml.Node, field string, depth int) (any, bool) {
	var buf bytes.Buffer
	if !d.encodeJSON(&buf, n, field, depth) {
		return nil, false
	}
	dec := json.NewDecoder(&buf)
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		d.fail(n, field, "cannot be used as JSON: %v", err)
		return nil, false
	}
	return v, true
}

// plainJSON reports whether s is printable ASCII without '"' or '\\':
// text encoding/json writes between quotes as it is.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// canonicalInt reports whether s is an integer as strconv.FormatInt writes
// it (no sign but a minus, no leading zero, no underscore, no base prefix)
// that fits int64 for sure: yaml.v3 decodes it to the value that
// FormatInt writes as s again.
func canonicalInt(s string) bool {
	d := s
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 || d[0] == '0' && (len(d) > 1 || len(s) > 1) {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

// maybeNumber reports whether s could match jsonNumber, which begins with
// a minus or a digit; most strings do not, and skip the expression.
func maybeNumber(s string) bool {
	return len(s) > 0 && (s[0] == '-' || '0' <= s[0] && s[0] <= '9')
}
