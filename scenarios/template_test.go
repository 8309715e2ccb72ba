package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// requestData stands for the server's template data: a body and the
// document decoded from it, as encoding/json decodes it.
type requestData struct {
	body string
	JSON map[string]any
}

func (r *requestData) RequestJSON() (string, any) { return r.body, r.JSON }

func newRequestData(t *testing.T, body string) *requestData {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return &requestData{body: body, JSON: doc}
}

func TestJSONFunctionEchoesAsSent(t *testing.T) {
	t.Parallel()
	body := `{ "z": 1, "a": {"y": "<&>", "b": [2, 1.50, {"d": 1, "c": 2}]},
	  "dup": {"x": 1}, "dup": {"q": 1, "p": 2} }`
	cases := []struct{ name, tmpl, want string }{
		{"whole body, compacted", `{{ json .JSON }}`, `{"z":1,"a":{"y":"<&>","b":[2,1.50,{"d":1,"c":2}]},"dup":{"x":1},"dup":{"q":1,"p":2}}`},
		{"object", `{{ json .JSON.a }}`, `{"y":"<&>","b":[2,1.50,{"d":1,"c":2}]}`},
		{"array", `{{ json .JSON.a.b }}`, `[2,1.50,{"d":1,"c":2}]`},
		{"piped", `{{ .JSON.a | json }}`, `{"y":"<&>","b":[2,1.50,{"d":1,"c":2}]}`},
		{"inside parentheses", `{{ printf "<%s>" (json .JSON.a.b) }}`, `<[2,1.50,{"d":1,"c":2}]>`},
		{"with", `{{ with .JSON.a }}{{ json .b }}{{ end }}`, `[2,1.50,{"d":1,"c":2}]`},
		{"range element", `{{ range .JSON.a.b }}{{ json . }};{{ end }}`, `2;1.50;{"d":1,"c":2};`},
		{"string", `{{ json .JSON.a.y }}`, `"<&>"`},
		{"duplicate key: the value kept", `{{ json .JSON.dup }}`, `{"q":1,"p":2}`},
		{"missing", `{{ json .JSON.nope }}`, `null`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tmpl, err := parseTemplate(c.tmpl)
			if err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			if err := tmpl.Execute(&got, newRequestData(t, body)); err != nil {
				t.Fatal(err)
			}
			if got.String() != c.want {
				t.Errorf("%s\n got %s\nwant %s", c.tmpl, got.String(), c.want)
			}
		})
	}
}

func TestJSONFunctionArity(t *testing.T) {
	t.Parallel()
	tmpl, err := parseTemplate(`{{ json }}`)
	if err != nil {
		t.Fatal(err)
	}
	err = tmpl.Execute(&strings.Builder{}, newRequestData(t, `{}`))
	if err == nil || !strings.Contains(err.Error(), "json takes one value, got 0") {
		t.Errorf("error = %v, want json's own arity message", err)
	}
}

func TestReplaceAndHasPrefix(t *testing.T) {
	t.Parallel()
	data := newRequestData(t, `{"url": "https://shop.test/ok?s={CHECKOUT_SESSION_ID}", "id": "cs_1", "n": 3}`)
	cases := []struct{ name, tmpl, want string }{
		{"replace", `{{ .JSON.url | replace "{CHECKOUT_SESSION_ID}" .JSON.id }}`, `https://shop.test/ok?s=cs_1`},
		{"replace in a missing value", `{{ replace "a" "b" .JSON.nope }}`, ``},
		{"replace in a number", `{{ replace "3" "4" .JSON.n }}`, `4`},
		{"hasPrefix", `{{ hasPrefix "https://" .JSON.url }}`, `true`},
		{"hasPrefix of a scheme it has not", `{{ hasPrefix "javascript:" .JSON.url }}`, `false`},
		{"hasPrefix of a missing value", `{{ hasPrefix "https://" .JSON.nope }}`, `false`},
	}
	for _, c := range cases {
		tmpl, err := parseTemplate(c.tmpl)
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		if err := tmpl.Execute(&got, data); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.String() != c.want {
			t.Errorf("%s: %s\n got %s\nwant %s", c.name, c.tmpl, got.String(), c.want)
		}
	}
}

func TestOmit(t *testing.T) {
	t.Parallel()
	data := newRequestData(t, `{"obj": {"id": "we_1", "secret": "s", "url": "u"},
	  "list": [{"id": "we_1", "secret": "s"}, 7, {"id": "we_2"}], "n": 3}`)
	cases := []struct{ name, tmpl, want string }{
		{"object", `{{ json (omit .JSON.obj "secret" "url") }}`, `{"id":"we_1"}`},
		{"list of objects", `{{ json (omit .JSON.list "secret") }}`, `[{"id":"we_1"},7,{"id":"we_2"}]`},
		{"the value itself unchanged", `{{ $_ := omit .JSON.obj "secret" }}{{ .JSON.obj.secret }}`, `s`},
		{"missing", `{{ json (omit .JSON.nope "secret") }}`, `null`},
	}
	for _, c := range cases {
		tmpl, err := parseTemplate(c.tmpl)
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		if err := tmpl.Execute(&got, data); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.String() != c.want {
			t.Errorf("%s: %s\n got %s\nwant %s", c.name, c.tmpl, got.String(), c.want)
		}
	}
	tmpl, err := parseTemplate(`{{ omit .JSON.n "secret" }}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := tmpl.Execute(&strings.Builder{}, data); err == nil || !strings.Contains(err.Error(), "omit takes an object or a list of objects, got") {
		t.Errorf("omit of a number: %v, want an error naming what omit takes", err)
	}
}

// BenchmarkJSONTemplate renders a body of n leaves, each echoing a request
// value, as text leaves ('v{{ ... }}') and as typed leaves ('{{ ... }}').
func BenchmarkJSONTemplate(b *testing.B) {
	for _, n := range []int{1, 10} {
		for _, kind := range []struct{ name, before string }{{"text", "v"}, {"typed", ""}} {
			b.Run(fmt.Sprintf("leaves=%d/%s", n, kind.name), func(b *testing.B) {
				var src strings.Builder
				for i := range n {
					fmt.Fprintf(&src, "k%d: '%s{{ .JSON.amount }}'\n", i, kind.before)
				}
				var doc yaml.Node
				if err := yaml.Unmarshal([]byte(src.String()), &doc); err != nil {
					b.Fatal(err)
				}
				d := &decoder{file: "bench.yaml", budget: nodeBudget}
				tmpl, ok := d.jsonTemplate(doc.Content[0], "body")
				if !ok {
					b.Fatal(d.errs)
				}
				data := &requestData{body: `{"amount":2000}`, JSON: map[string]any{"amount": json.Number("2000")}}
				var buf bytes.Buffer
				b.ReportAllocs()
				for b.Loop() {
					buf.Reset()
					if err := tmpl.Execute(&buf, data, -1); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestTypedLeafAfterVariables keeps a leaf typed when all it prints is its
// last action, the actions before it only setting variables (a sum over a
// list, a list built item by item), and text when anything else prints.
func TestTypedLeafAfterVariables(t *testing.T) {
	t.Parallel()
	data := newRequestData(t, `{"items": [{"id": "a", "n": "2"}, {"id": "b", "n": "5"}]}`)
	cases := []struct{ name, leaf, want string }{
		{"one action", `{{ .JSON.items }}`, `[{"id":"a","n":"2"},{"id":"b","n":"5"}]`},
		{"sum in a loop", `{{ $t := 0 }}{{ range .JSON.items }}{{ $t = add $t .n }}{{ end }}{{ $t }}`, `7`},
		{"trimmed around", "{{- $t := 0 -}}\n{{- range .JSON.items }}{{ $t = add $t .n }}{{ end -}}\n{{ $t }}", `7`},
		{"in branches", `{{ $t := 1 }}{{ if .JSON.items }}{{ $t = 2 }}{{ else }}{{ $t = 3 }}{{ end }}{{ with .JSON.items }}{{ $t = add $t 1 }}{{ end }}{{ $t }}`, `3`},
		{"a list built", `{{ $d := list }}{{ range .JSON.items }}{{ $d = append $d (dict "id" .id "quantity" (int .n)) }}{{ end }}{{ $d }}`, `[{"id":"a","quantity":2},{"id":"b","quantity":5}]`},
		{"an empty list", `{{ list }}`, `[]`},
		{"text before: text", `n{{ $t := 0 }}{{ $t }}`, `"n0"`},
		{"a space between: text", `{{ $t := 0 }} {{ $t }}`, `" 0"`},
		{"printing in the loop: text", `{{ $t := 0 }}{{ range .JSON.items }}{{ .id }}{{ end }}{{ $t }}`, `"ab0"`},
		{"a variable last: text", `{{ $t := 0 }}`, `""`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var doc yaml.Node
			src, _ := yaml.Marshal(map[string]string{"v": c.leaf})
			if err := yaml.Unmarshal(src, &doc); err != nil {
				t.Fatal(err)
			}
			d := &decoder{file: "t.yaml", budget: nodeBudget}
			tmpl, ok := d.jsonTemplate(doc.Content[0], "body")
			if !ok {
				t.Fatal(d.errs)
			}
			var buf bytes.Buffer
			if err := tmpl.Execute(&buf, data, -1); err != nil {
				t.Fatal(err)
			}
			if want := `{"v":` + c.want + `}`; buf.String() != want {
				t.Errorf("%s\n got %s\nwant %s", c.leaf, buf.String(), want)
			}
		})
	}
	for _, bad := range []struct{ tmpl, want string }{
		{`{{ dict "a" }}`, "dict takes keys and values in pairs, got 1 values"},
		{`{{ dict 1 2 }}`, "dict: key 1 is 1 (int), not a string"},
		{`{{ append 3 4 }}`, "append takes a list (list's), got 3 (int)"},
	} {
		tmpl, err := parseTemplate(bad.tmpl)
		if err != nil {
			t.Fatal(err)
		}
		if err := tmpl.Execute(&strings.Builder{}, data); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %v, want %q", bad.tmpl, err, bad.want)
		}
	}
}
