package idempotency

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCanonicalJSON(t *testing.T) {
	t.Parallel()
	same := [][2]string{
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`},
		{`{"a":"x"}`, `{"\u0061":"\u0078"}`},
		{`{"a":"\/"}`, `{"a":"/"}`},
		{`[1, 2 ,3]`, "[1,2,3]"},
		{`{"n":1}`, `{"n":1.0}`},
		{`{"n":100}`, `{"n":1e2}`},
		{`{"n":-0.5}`, `{"n":-5e-1}`},
		{`{"m":{"y":[{"q":1,"p":2}],"x":null}}`, `{"m":{"x":null,"y":[{"p":2,"q":1}]}}`},
		{`  true `, `true`},
		{`{"big":123456789012345678901234567890}`, `{"big":123456789012345678901234567890}`},
	}
	for _, tc := range same {
		a, aok := canonicalJSON(nil, []byte(tc[0]))
		b, bok := canonicalJSON(nil, []byte(tc[1]))
		if !aok || !bok || !bytes.Equal(a, b) {
			t.Errorf("%s and %s: canonical %q (%v) and %q (%v), want equal", tc[0], tc[1], a, aok, b, bok)
		}
	}
	differ := [][2]string{
		{`{"a":1}`, `{"a":"1"}`},
		{`[1,2]`, `[2,1]`},
		{`{"a":[1]}`, `{"a":1}`},
		{`{"a":{}}`, `{"a":[]}`},
		{`{"ab":"c"}`, `{"a":"bc"}`},
		{`["a","b"]`, `["ab"]`},
		{`{"a":true}`, `{"a":"t"}`},
		{`{"a":null}`, `{}`},
	}
	for _, tc := range differ {
		a, _ := canonicalJSON(nil, []byte(tc[0]))
		b, _ := canonicalJSON(nil, []byte(tc[1]))
		if bytes.Equal(a, b) {
			t.Errorf("%s and %s: same canonical form %q", tc[0], tc[1], a)
		}
	}
	for _, bad := range []string{``, `{`, `{"a"}`, `{"a":1,}`, `[1,]`, `01`, `1.`, `-`, `1e`, `"a`, "\"a\x01\"", `tru`, `{"a":1}x`, `{"a":1} {"b":2}`, `nul`, `+1`, strings.Repeat("[", 300) + strings.Repeat("]", 300)} {
		if _, ok := canonicalJSON(nil, []byte(bad)); ok {
			t.Errorf("%q: accepted, want invalid", bad)
		}
	}
}

// FuzzCanonicalJSON checks canonicalJSON against encoding/json: it accepts
// exactly the valid texts (within its depth bound), and a value re-encoded
// by encoding/json (other key order, escapes and spacing) has the same
// canonical form when it has no duplicate keys.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[true,false,null],"c":{"d":"e"}}`, `[1.5e3,-0,"\u00e9\n"]`, `"x"`, `{"a":1,"a":2}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		out, ok := canonicalJSON(nil, src)
		valid := json.Valid(src)
		if ok != valid && !(valid && bytes.Count(src, []byte("["))+bytes.Count(src, []byte("{")) > maxJSONDepth) {
			t.Fatalf("%q: canonical ok=%v, json.Valid=%v", src, ok, valid)
		}
		if !ok || !utf8.Valid(src) {
			return // encoding/json replaces invalid UTF-8; the canonical form keeps the bytes
		}
		dec := json.NewDecoder(bytes.NewReader(src))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		re, err := json.Marshal(v)
		if err != nil {
			return
		}
		again, ok := canonicalJSON(nil, re)
		if !ok {
			t.Fatalf("re-encoded %q not accepted", re)
		}
		if !bytes.Equal(out, again) && !hasDuplicateKeys(src) {
			t.Fatalf("%q and its re-encoding %q: canonical %q and %q", src, re, out, again)
		}
	})
}

// hasDuplicateKeys reports whether some object of the valid JSON text src
// repeats a key (encoding/json keeps the last, so a re-encoding differs).
func hasDuplicateKeys(src []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(src))
	type frame struct {
		object bool
		keys   map[string]bool
		expect bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if top != nil && top.object {
					top.expect = true
				}
				stack = append(stack, &frame{object: v == '{', keys: map[string]bool{}, expect: v == '{'})
				continue
			default:
				stack = stack[:len(stack)-1]
				continue
			}
		case string:
			if top != nil && top.object && top.expect {
				if top.keys[v] {
					return true
				}
				top.keys[v] = true
				top.expect = false
				continue
			}
		}
		if top != nil && top.object {
			top.expect = true
		}
	}
}
