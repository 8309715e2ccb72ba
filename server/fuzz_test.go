package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/scenariomock/scenariomock/scenarios"
)

// templateEcho echoes request values through templates: a path variable, a
// query parameter, a header (in the body and in a response header), a JSON
// body field and the raw body. The mapping body renders leaf by leaf, so
// whatever the request holds, the answer must stay valid JSON.
const templateEcho = `
routes:
  - name: echo
    method: POST
    path: "/echo/{id:(?s:.*)}" # (?s): a path variable may hold a newline (%0A)
    respond:
      template: true
      headers: { X-Echo: "{{ .Request.Headers.Get \"X-Echo\" }}" }
      body:
        id: "{{ .Request.Vars.id }}"
        q: "{{ .Request.Query.Get \"q\" }}"
        header: "{{ .Request.Headers.Get \"X-Echo\" }}"
        field: "{{ .Request.JSON.field }}"
        raw: "{{ .Request.Body }}"
        nested: { list: ["{{ .Request.Vars.id }}", 1, true, null] }
  - name: raw
    method: POST
    path: /raw
    respond:
      template: true
      body: { raw: "{{ .Request.Body }}", upper: "{{ upper .Request.Body }}" }
`

// FuzzTemplate sends arbitrary request values through response templates
// over real HTTP. Every answer must be a 200 whose body is valid JSON, and
// each value that was valid UTF-8 must come back unchanged.
//
//	go test -run '^$' -fuzz '^FuzzTemplate$' -fuzztime 3m ./server
func FuzzTemplate(f *testing.F) {
	// serveYAML wants a *testing.T, and a server per input would make the
	// fuzzer crawl, so one server is set up here the same way.
	path := filepath.Join(f.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(templateEcho), 0o644); err != nil {
		f.Fatal(err)
	}
	s, err := New(Options{Load: func() (*scenarios.Set, error) { return scenarios.Load(path) }})
	if err != nil {
		f.Fatal(err)
	}
	hs := httptest.NewServer(s)
	f.Cleanup(hs.Close)

	for _, s := range []struct{ id, q, header, field, raw string }{
		{"pay_1", "1", "probe", "note", `{"a":1}`},
		{"", "", "", "", ""},
		{"a/b/../c", "a&b=c;d", "  padded\t", "say \"hi\"\nbye", "line1\nline2\r\n"},
		{"%2F%00", "%zz+", "<script>&amp;", "{{ .Request.Body }}", "{{ template \"x\" }}"},
		{"日本語", "ü", "é", "\u2028\u2029", "\x00\x01\x7f"},
		{"\xff\xfe", "\xc3", "\xe9t\xe9", "\xed\xa0\x80", "\xf4\x90\x80\x80"},
		{strings.Repeat("x", 300), "?#", "a,b; c", `\u0000`, `null`},
		{"\n", "\r\n", "\t", "\x00", "\n"},
	} {
		f.Add(s.id, s.q, s.header, s.field, []byte(s.raw))
	}
	f.Fuzz(func(t *testing.T, id, q, header, field string, raw []byte) {
		if len(id)+len(q)+len(header) > 16<<10 {
			t.Skip("too large for a request line and headers (431)")
		}
		if !validHeaderValue(header) {
			t.Skip("not a header value net/http would send")
		}
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()

		body, err := json.Marshal(map[string]string{"field": field})
		if err != nil {
			t.Skip(err)
		}
		target := hs.URL + "/echo/" + url.PathEscape(id) + "?q=" + url.QueryEscape(q)
		if _, err := http.NewRequest("POST", target, nil); err != nil {
			t.Skip(err)
		}
		r, err := doCtx(ctx, "POST", target, string(body), "X-Echo", header, "Content-Type", "application/json")
		if err != nil {
			t.Fatalf("POST %s: %v", target, err)
		}
		got := checkJSON(t, r)
		wantHeader := strings.Trim(header, " \t") // net/http trims what surrounds a header value
		for _, c := range []struct{ key, sent, want string }{
			{"id", id, id},
			{"q", q, q},
			{"header", header, wantHeader},
			{"field", field, field},
			{"raw", string(body), string(body)},
		} {
			if utf8.ValidString(c.sent) && got[c.key] != c.want {
				t.Errorf("%s: sent %q, echoed %q, want %q", c.key, c.sent, got[c.key], c.want)
			}
		}
		if utf8.ValidString(header) && r.header.Get("X-Echo") != wantHeader {
			t.Errorf("X-Echo response header: sent %q, got %q, want %q", header, r.header.Get("X-Echo"), wantHeader)
		}

		r, err = doCtx(ctx, "POST", hs.URL+"/raw", string(raw))
		if err != nil {
			t.Fatalf("POST /raw: %v", err)
		}
		got = checkJSON(t, r)
		if utf8.Valid(raw) && (got["raw"] != string(raw) || got["upper"] != strings.ToUpper(string(raw))) {
			t.Errorf("raw body %q echoed as %q, upper %q", raw, got["raw"], got["upper"])
		}
	})
}

// checkJSON checks for a 200 with a valid JSON object body and returns its
// string members.
func checkJSON(t *testing.T, r response) map[string]string {
	t.Helper()
	if r.status != http.StatusOK || !json.Valid([]byte(r.body)) {
		t.Fatalf("got %d %q, want 200 with valid JSON", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.body), &doc); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", r.body, err)
	}
	out := map[string]string{}
	for k, v := range doc {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// validHeaderValue is net/http's rule for a header value it will send: no
// control characters but tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < ' ' && b != '\t' || b == 0x7f {
			return false
		}
	}
	return true
}
