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

// TestTemplateContentType: a text template whose type its text does not
// say (an echo of the request, an answer that may render empty) is
// labelled by what it renders, as a static body is by what it holds:
// never application/json for text or for nothing (issue 19).
func TestTemplateContentType(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - name: echo
    method: POST
    path: /echo
    respond:
      template: true
      body: "{{ .Request.Body }}"
  - name: maybe
    method: POST
    path: /maybe
    respond:
      template: true
      body: "{{ if .Request.JSON.on }}{\"on\": true}{{ end }}"
  - name: json
    method: POST
    path: /json
    respond:
      template: true
      body: "{\"got\": \"{{ .Request.JSON.x }}\"}"
  - name: typed
    method: POST
    path: /typed
    respond:
      template: true
      headers: { Content-Type: text/csv }
      body: "{{ .Request.Body }}"
`)
	cases := []struct{ name, path, body, want string }{
		{"echo of text", "/echo", `hello`, "text/plain; charset=utf-8"},
		{"echo of JSON", "/echo", `{"a":1}`, "application/json"},
		{"echo of HTML", "/echo", `<html><body>x</body></html>`, "text/html; charset=utf-8"},
		{"echo of nothing", "/echo", ``, ""},
		{"renders empty", "/maybe", `{}`, ""},
		{"renders JSON", "/maybe", `{"on":1}`, "application/json"},
		{"JSON by its text", "/json", `{"x":"y"}`, "application/json"},
		{"its own type", "/typed", `{"a":1}`, "text/csv"},
	}
	for _, c := range cases {
		r := do(t, "POST", hs.URL+c.path, c.body)
		if r.status != 200 || r.body != c.body && c.path == "/echo" {
			t.Errorf("%s: %d %q", c.name, r.status, r.body)
		}
		if got := r.header.Get("Content-Type"); got != c.want {
			t.Errorf("%s: Content-Type %q, want %q (body %q)", c.name, got, c.want, r.body)
		}
	}
}
