package openapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// framing are the headers of the answer's own framing and connection,
// which the server sets: a spec's example of one (Transfer-Encoding:
// gzip) would garble the answer for the client.
var framing = map[string]bool{
	"Content-Type": true, "Content-Length": true, "Content-Encoding": true, "Transfer-Encoding": true,
	"Connection": true, "Keep-Alive": true, "Trailer": true, "Te": true, "Upgrade": true,
}

// Headers returns the headers the spec declares for the answer with
// status, each with a value made as a body's is (its example, else one
// from its schema), for the caller to set where the route sets none. A
// Location of a create's answer names the object made: the request's path
// and the answer's id (POST /todos answering {"id": 3} gives /todos/3), or
// the field its items are read by (keyField: GitHub's issue number).
// Content-Type is the answer's own (OpenAPI ignores it here).
func (o *Operation) Headers(status int, body []byte, r *http.Request) [][2]string {
	resp, _ := o.response(status)
	if resp == nil || resp.Headers == nil || resp.Headers.Len() == 0 {
		return nil
	}
	g := generator{api: o.api}
	var out [][2]string
	for h := resp.Headers.First(); h != nil; h = h.Next() {
		name, decl := http.CanonicalHeaderKey(h.Key()), h.Value()
		if decl == nil || framing[name] {
			continue
		}
		var v any
		switch {
		case name == "Location" && o.kind == opCreate && status >= 200 && status < 300:
			var made map[string]json.RawMessage
			if json.Unmarshal(body, &made) == nil && len(made[o.keyField()]) > 0 && string(made[o.keyField()]) != "null" {
				id := string(made[o.keyField()]) // a number as written: 1234567, not 1.234567e+06
				var s string
				if json.Unmarshal(made[o.keyField()], &s) == nil {
					id = s
				}
				v = strings.TrimSuffix(r.URL.Path, "/") + "/" + url.PathEscape(id)
			}
		case name == "Link" && o.kind == opList && o.shapeOf().pages && status >= 200 && status < 300:
			if v = o.pageLinks(r, body); v == "" {
				continue // one page: no Link, as GitHub answers
			}
		case decl.Example != nil:
			v = nodeValue(decl.Example)
		case decl.Examples != nil && decl.Examples.Len() > 0:
			if ex := decl.Examples.First().Value(); ex != nil && ex.Value != nil {
				v = nodeValue(ex.Value)
			}
		}
		if v == nil && decl.Schema != nil {
			v = g.value(decl.Schema.Schema(), 0)
		}
		if v == nil {
			continue
		}
		s, ok := simpleStyle(v)
		if !ok {
			continue
		}
		s = strings.Map(func(r rune) rune {
			if r < ' ' || r == 0x7f {
				return ' ' // a value must not split the header
			}
			return r
		}, s)
		out = append(out, [2]string{name, s})
	}
	return out
}

// simpleStyle writes a header value as OpenAPI's default style for
// headers (simple) serializes it: a list as a,b, an object as k,v,k,v
// (keys sorted), a scalar as its JSON text without quotes.
func simpleStyle(v any) (string, bool) {
	scalar := func(v any) (string, bool) {
		if s, ok := v.(string); ok {
			return s, true
		}
		b, err := json.Marshal(v)
		return string(b), err == nil
	}
	switch t := v.(type) {
	case []any:
		parts := make([]string, 0, len(t))
		for _, e := range t {
			s, ok := scalar(e)
			if !ok {
				return "", false
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, ","), true
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, 0, 2*len(keys))
		for _, k := range keys {
			s, ok := scalar(t[k])
			if !ok {
				return "", false
			}
			parts = append(parts, k, s)
		}
		return strings.Join(parts, ","), true
	}
	return scalar(v)
}

// header returns r's first value of key, as r.Header.Get does, for a key
// already in canonical form (the constants here): Get canonicalizes its
// key on every call, a few hundred instructions, and a create read
// Content-Type, Prefer and Authorization that way seven times.
func header(r *http.Request, key string) string {
	if v := r.Header[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
