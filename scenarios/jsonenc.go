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
		if n.Style == 0 && jsonNumber.MatchString(n.Value) {
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
