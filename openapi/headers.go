package openapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Headers returns the headers the spec declares for the answer with
// status, each with a value made as a body's is (its example, else one
// from its schema), for the caller to set where the route sets none. A
// Location of a create's answer names the object made: the request's path
// and the answer's id (POST /todos answering {"id": 3} gives /todos/3).
// Content-Type is the answer's own (OpenAPI ignores it here).
func (o *Operation) Headers(status int, body []byte, r *http.Request) [][2]string {
	resp, _ := o.response(status)
	if resp == nil || resp.Headers == nil || resp.Headers.Len() == 0 {
		return nil
	}
	g := generator{o.api}
	var out [][2]string
	for h := resp.Headers.First(); h != nil; h = h.Next() {
		name, decl := http.CanonicalHeaderKey(h.Key()), h.Value()
		if name == "Content-Type" || decl == nil {
			continue
		}
		var v any
		switch {
		case name == "Location" && o.kind == opCreate && status >= 200 && status < 300:
			var made struct{ ID any }
			if json.Unmarshal(body, &made) == nil && made.ID != nil {
				v = strings.TrimSuffix(r.URL.Path, "/") + "/" + fmt.Sprint(made.ID)
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
		s, ok := v.(string)
		if !ok {
			b, err := json.Marshal(v)
			if err != nil {
				continue
			}
			s = strings.Trim(string(b), `"`)
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
