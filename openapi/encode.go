package openapi

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
)

// canonical is JSON exactly as encoding/json writes it (compact, with
// <, > and & escaped): a fixture's nested objects and arrays, encoded once
// when the fixture is first decoded (shallow), so that every answer built
// on the fixture appends them as they are.
type canonical []byte

// MarshalJSON returns c: encoding/json compacts it again, which leaves it
// as it is.
func (c canonical) MarshalJSON() ([]byte, error) { return c, nil }

// toCanonical encodes raw as encoding/json would write it.
func toCanonical(raw json.RawMessage) (canonical, bool) {
	b, err := json.Marshal(raw)
	return canonical(b), err == nil
}

// marshal is json.Marshal for the values answers are built of (maps,
// lists, strings, numbers, booleans, canonical), byte for byte, without
// reflection: a Stripe create spent a sixth of its CPU in encoding/json
// writing one generated object (sorting map keys by reflection and
// compacting the fixture's raw parts again). Anything else, and any
// string or number that needs escaping or an exponent, is handed to
// json.Marshal; TestMarshalIsJSONMarshal compares the two.
func marshal(v any) ([]byte, error) {
	return appendJSON(make([]byte, 0, 1024), v)
}

func appendJSON(b []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, t), nil
	case string:
		return appendJSONString(b, t)
	case float64:
		if a := math.Abs(t); a == 0 || a >= 1e-6 && a < 1e21 { // encoding/json's 'f' range; NaN and Inf fail there
			return strconv.AppendFloat(b, t, 'f', -1, 64), nil
		}
	case int:
		return strconv.AppendInt(b, int64(t), 10), nil
	case int64:
		return strconv.AppendInt(b, t, 10), nil
	case canonical:
		return append(b, t...), nil
	case map[string]any:
		if t == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '{')
		var err error
		// The keys, sorted in a slice on the stack for the sizes
		// Stripe's objects have (slices.Sorted(maps.Keys) grows one on
		// the heap through an iterator: 4.7% of a create).
		var room [64]string
		keys := room[:0]
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSONString(b, k); err != nil {
				return nil, err
			}
			b = append(b, ':')
			if b, err = appendJSON(b, t[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case []any:
		if t == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		var err error
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSON(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	return appendMarshaled(b, v)
}

// appendJSONString quotes s; one that needs escaping goes to json.Marshal.
func appendJSONString(b []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return appendMarshaled(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}

func appendMarshaled(b []byte, v any) ([]byte, error) {
	m, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, m...), nil
}
