package server

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/state"
)

// TestHeaderListSentPerValue checks that a header given a list of values
// arrives as one header line per value, in order, static or templated,
// and that a templated value that renders empty is not sent (a default
// it overrides included).
func TestHeaderListSentPerValue(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
defaults:
  headers: { Set-Cookie: default=1, X-Default: kept, X-Echo: default }
routes:
  - name: static
    path: /static
    respond:
      headers: { Set-Cookie: [a=1, b=2], Link: ["</a>; rel=next"] }
  - name: templated
    path: /t/{id}
    respond:
      template: true
      headers:
        Set-Cookie: ["first=1", "id={{ .Request.Vars.id }}", '{{ .Request.Query.Get "c" }}', "last=3"]
        X-Id: "{{ .Request.Vars.id }}"
        X-Echo: '{{ .Request.Headers.Get "X-Echo" }}'
`)
	cases := []struct {
		path string
		want map[string][]string
	}{
		{"/static", map[string][]string{"Set-Cookie": {"a=1", "b=2"}, "Link": {"</a>; rel=next"}, "X-Default": {"kept"}}},
		{"/t/7", map[string][]string{"Set-Cookie": {"first=1", "id=7", "last=3"}, "X-Id": {"7"}, "X-Default": {"kept"}, "X-Echo": nil}},
		{"/t/8?c=q=1", map[string][]string{"Set-Cookie": {"first=1", "id=8", "q=1", "last=3"}}},
	}
	for _, c := range cases {
		r := do(t, "GET", hs.URL+c.path, "")
		if r.status != 200 {
			t.Fatalf("GET %s: status %d, body %s", c.path, r.status, r.body)
		}
		for name, want := range c.want {
			if got := r.header[name]; !reflect.DeepEqual(got, want) {
				t.Errorf("GET %s: %s lines = %q, want %q", c.path, name, got, want)
			}
		}
	}
}

// TestTemplateJSONEchoesAsSent checks that the json template function
// echoes request JSON as it came: keys in the client's order, and <, >, &
// not rewritten as \u003c escapes.
func TestTemplateJSONEchoesAsSent(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - name: echo
    method: POST
    path: /echo
    respond:
      template: true
      headers: { X-Customer: "{{ json .Request.JSON.customer }}" }
      body: '{"all": {{ json .Request.JSON }}, "customer": {{ json .Request.JSON.customer }}, "items": {{ json .Request.JSON.items }}, "piped": {{ .Request.JSON.customer | json }}, "with": {{ with .Request.JSON.customer }}{{ json . }}{{ end }}, "ranged": [{{ range $i, $e := .Request.JSON.items }}{{ if $i }},{{ end }}{{ json $e }}{{ end }}], "name": {{ json .Request.JSON.customer.name }}, "path": {{ json .Request.Path }}}'
  - name: fields
    method: POST
    path: /fields
    respond:
      template: true
      body: { customer: "{{ json .Request.JSON.customer }}" }
  - name: broken
    path: /broken
    respond:
      template: true
      body: "{{ .Request.JSON.customer.id }}"
`)
	customer := `{"name":"Tom & Jerry <tj>","id":"c_1","a":{"z":1,"b":[3,1.50]}}`
	items := `[{"sku":"B","qty":2},{"sku":"A","qty":1}]`
	all := `{"z":true,"customer":` + customer + `,"items":` + items + `,"note":"a<b"}`
	sent := "{\n  \"z\": true,\n  \"customer\": " + customer + ", \"items\": " + items + ",\"note\":\"a<b\"}"

	r := do(t, "POST", hs.URL+"/echo", sent)
	want := `{"all": ` + all + `, "customer": ` + customer + `, "items": ` + items + `, "piped": ` + customer +
		`, "with": ` + customer + `, "ranged": [{"sku":"B","qty":2},{"sku":"A","qty":1}], "name": "Tom & Jerry <tj>", "path": "/echo"}`
	if r.status != 200 || r.body != want {
		t.Errorf("echo: %d\n got %s\nwant %s", r.status, r.body, want)
	}
	if got := r.header.Get("X-Customer"); got != customer {
		t.Errorf("X-Customer = %s, want %s", got, customer)
	}

	r = do(t, "POST", hs.URL+"/fields", sent)
	var leaf bytes.Buffer
	enc := json.NewEncoder(&leaf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]string{"customer": customer})
	if want := strings.TrimSuffix(leaf.String(), "\n"); r.status != 200 || r.body != want {
		t.Errorf("fields: %d\n got %s\nwant %s", r.status, r.body, want)
	}

	r = do(t, "GET", hs.URL+"/broken", "")
	if r.status != 500 || !strings.Contains(r.body, "<.Request.JSON.customer.id>") || strings.Contains(r.body, `\u003c`) {
		t.Errorf("problem detail escaped or missing: %d %s", r.status, r.body)
	}
}

// TestStaticAnswerStored checks that a static answer's prepared header
// (prepared.stored, which the idempotency store keeps without reading
// the header map) is the header render writes, as response reads it from
// the map; and that over HTTP a replay of a static answer repeats the
// first one's header, with and without CORS (whose headers render
// beside, and which are not stored).
func TestStaticAnswerStored(t *testing.T) {
	t.Parallel()
	const yaml = `
defaults:
  headers: { Set-Cookie: default=1, X-Default: kept, Cache-Control: no-store }
routes:
  - name: lists
    method: POST
    path: /lists
    idempotency: { key: header.Idempotency-Key }
    respond:
      status: 201
      headers: { Set-Cookie: [a=1, b=2], Link: ["</a>; rel=next"], Content-Type: text/plain }
      body: created
  - name: json
    method: POST
    path: /json
    idempotency: { key: header.Idempotency-Key }
    respond:
      headers: { X-Empty: "", Location: /json/1 }
      body: { id: 1 }
  - name: empty
    method: POST
    path: /empty
    idempotency: { key: header.Idempotency-Key }
    respond: { status: 204 }
`
	for _, cors := range []bool{false, true} {
		s, hs, _ := serveYAML(t, Options{CORS: cors}, yaml)
		static := 0
		for _, rt := range s.snap.Load().routes {
			for _, p := range rt.responses {
				if p.stored == nil {
					continue
				}
				static++
				var rec recorder
				rec.apart(&exchange{})
				if err := p.render(&rec, 1<<20, nil); err != nil {
					t.Fatal(err)
				}
				stored := rec.response()
				got := stored.Header
				rec.stored = nil // as response reads the map
				if want := rec.response().Header; !reflect.DeepEqual(got, want) {
					t.Errorf("%s: stored header %q, rendered %q", rt.route.Name, got, want)
				}
				if want := state.PackHeader(got); !bytes.Equal(stored.Packed, want) {
					t.Errorf("%s: stored header packed as %q, want %q", rt.route.Name, stored.Packed, want)
				}
			}
		}
		if static != 3 {
			t.Fatalf("%d static answers, want 3", static)
		}
		for _, path := range []string{"/lists", "/json", "/empty"} {
			first := do(t, "POST", hs.URL+path, "{}", "Idempotency-Key", "k-"+path, "Origin", "http://localhost:5173")
			again := do(t, "POST", hs.URL+path, "{}", "Idempotency-Key", "k-"+path, "Origin", "http://localhost:5173")
			if first.status != again.status || first.body != again.body {
				t.Errorf("cors=%v %s: replay %d %q, first %d %q", cors, path, again.status, again.body, first.status, first.body)
			}
			if again.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("cors=%v %s: not replayed: %v", cors, path, again.header)
			}
			again.header.Del("Idempotent-Replayed")
			first.header.Del("Date")
			again.header.Del("Date")
			if !reflect.DeepEqual(first.header, again.header) {
				t.Errorf("cors=%v %s: replay header\n%v\nfirst\n%v", cors, path, again.header, first.header)
			}
			if cors && first.header.Get("Access-Control-Allow-Origin") == "" {
				t.Errorf("%s: no CORS header with --cors: %v", path, first.header)
			}
		}
	}
}
