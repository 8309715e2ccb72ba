package server

import "testing"

func TestTemplateMissingValues(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - name: fields
    method: POST
    path: /f
    respond:
      template: true
      headers: { X-Field: "[{{ .Request.JSON.field }}]" }
      body: { field: "{{ .Request.JSON.field }}", nested: "{{ with .Request.JSON.a }}{{ .b }}{{ end }}", q: "{{ .Request.Query.Get \"x\" }}", var: "{{ .Request.Vars.nope }}" }
  - name: text
    method: POST
    path: /t
    respond:
      template: true
      body: "field=[{{ .Request.JSON.field }}] {{ $x := 1 }}x={{ $x }}{{ if .Request.JSON.field }} set{{ end }}"
`)
	cases := []struct{ name, path, body, want string }{
		// A leaf that is one action is typed: a missing value is null.
		{"missing field", "/f", `{}`, `{"field":null,"nested":"","q":"","var":""}`},
		{"null field", "/f", `{"field":null}`, `{"field":null,"nested":"","q":"","var":""}`},
		{"no body", "/f", ``, `{"field":null,"nested":"","q":"","var":""}`},
		{"not JSON", "/f", `amount=1`, `{"field":null,"nested":"","q":"","var":""}`},
		{"an array", "/f", `[1]`, `{"field":null,"nested":"","q":"","var":""}`},
		{"present", "/f", `{"field":"v","a":{"b":2}}`, `{"field":"v","nested":"2","q":"","var":""}`},
		{"text missing", "/t", `{}`, `field=[] x=1`},
		{"text present", "/t", `{"field":7}`, `field=[7] x=1 set`},
	}
	for _, c := range cases {
		r := do(t, "POST", hs.URL+c.path, c.body)
		if r.status != 200 || r.body != c.want {
			t.Errorf("%s: %d %s, want %s", c.name, r.status, r.body, c.want)
		}
		if c.path == "/f" && r.header.Get("X-Field") == "[<no value>]" {
			t.Errorf("%s: header rendered <no value>", c.name)
		}
	}
}
