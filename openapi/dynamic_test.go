package openapi_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi/datamodel"

	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/server"
)

// The tests in this file are Prism's dynamic mode (prism mock -d), over
// testdata/dynamic: a document that asks for formats, bounds, enums,
// arrays, nested objects, oneOf, anyOf, allOf, nullable and readOnly.

const dynamicSpec = "testdata/dynamic/openapi.yaml"

// serveDynamic serves testdata/dynamic as serve --openapi does, seeded
// with seed, changed by tweak.
func serveDynamic(t *testing.T, seed uint64, tweak func(*scenarios.OpenAPISource)) *httptest.Server {
	t.Helper()
	src := openapi.FileSource(dynamicSpec, "")
	if tweak != nil {
		tweak(src)
	}
	opts := openapi.Options{Extra: []*scenarios.OpenAPISource{src}, Cache: openapi.NewCache()}
	load := func() (*scenarios.Set, error) {
		set, err := scenarios.LoadBytes("dynamic.yaml", []byte("routes: []\n"))
		if err != nil {
			return nil, err
		}
		return set, openapi.Expand(set, opts)
	}
	srv, err := server.New(server.Options{Load: load, Rand: server.SeededRand(seed)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs
}

// strictConformance is conformance with formats asserted, as proxy mode
// checks a real upstream's answers (an email without @ is refused).
func strictConformance(t *testing.T, spec string) conformance {
	t.Helper()
	data, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocumentWithConfiguration(data, &datamodel.DocumentConfiguration{
		BasePath: filepath.Dir(spec), SpecFilePath: filepath.Base(spec), AllowFileReferences: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return conformance{v}
}

// TestDynamicAnswersFitAndVary: with dynamic: on, every answer (a
// sample of every kind of value, a create, a read, a list, a 404) is
// drawn afresh and fits its schema, checked by libopenapi-validator with
// formats asserted; none is the example; the values vary as Prism's do
// (enums, oneOf and anyOf branches, optional properties, nulls, array
// lengths); and a create stores what it answered, which reads give back.
func TestDynamicAnswersFitAndVary(t *testing.T) {
	t.Parallel()
	hs := serveDynamic(t, 7, func(s *scenarios.OpenAPISource) { s.Dynamic = true })
	c := strictConformance(t, dynamicSpec)
	n := 120
	if testing.Short() {
		n = 30
	}
	seen := map[string]map[string]bool{}
	note := func(what string, v any) {
		if seen[what] == nil {
			seen[what] = map[string]bool{}
		}
		seen[what][fmt.Sprint(v)] = true
	}
	var created []answer
	for i := range n {
		a := call(t, "GET", hs.URL+"/samples", "", "")
		c.check(t, "GET", "/samples", a)
		if a.status != 200 || a.json["email"] == "fixed@example.com" || a.json["email"] == "static@example.com" {
			t.Fatalf("GET /samples: %d %s; want a drawn sample, not an example", a.status, a.body)
		}
		if _, has := a.json["secret"]; has {
			t.Errorf("GET /samples: %s; a writeOnly property is never answered", a.body)
		}
		note("email", a.json["email"])
		note("color", a.json["color"])
		note("nickname null", a.json["nickname"] == nil)
		note("parent null", a.json["parent"] == nil)
		note("shape", a.json["shape"].(map[string]any)["kind"])
		_, cat := a.json["pet"].(map[string]any)["meows"]
		note("pet is a cat", cat)
		note("items", len(a.json["items"].([]any)))
		note("count", a.json["count"])

		body := fmt.Sprintf(`{"name": "gadget%d", "amount": %d}`, i, 100+i)
		made := call(t, "POST", hs.URL+"/gadgets", "application/json", body)
		c.check(t, "POST", "/gadgets", made)
		if made.status != 201 || made.json["name"] != fmt.Sprintf("gadget%d", i) || made.json["amount"] != float64(100+i) {
			t.Fatalf("POST /gadgets %s: %d %s; want 201 with the name and amount sent", body, made.status, made.body)
		}
		_, owned := made.json["owner"]
		note("owner", owned)
		note("kind", made.json["kind"])
		created = append(created, made)
	}
	for what, values := range seen {
		if len(values) < 2 {
			t.Errorf("%s: always %v over %d answers; want it drawn", what, values, n)
		}
	}
	for _, made := range created[:10] {
		url := "/gadgets/" + made.json["id"].(string)
		read := call(t, "GET", hs.URL+url, "", "")
		c.check(t, "GET", url, read)
		if read.status != 200 || read.body != made.body {
			t.Errorf("GET %s: %d %s; want what the create answered, %s", url, read.status, read.body, made.body)
		}
	}
	list := call(t, "GET", hs.URL+"/gadgets", "", "")
	c.check(t, "GET", "/gadgets", list)
	if data, _ := list.json["data"].([]any); len(data) != 10 { // a page's default
		t.Errorf("GET /gadgets: %s; want the gadgets created", list.body)
	}
	// The 404 a client asks for is drawn too (the 404 of an id never
	// created is the state's own, naming the id).
	for range 20 {
		url := "/gadgets/" + created[0].json["id"].(string)
		miss := call(t, "GET", hs.URL+url, "", "", "Prefer", "code=404")
		c.check(t, "GET", url, miss)
		if miss.status != 404 {
			t.Fatalf("GET %s: %d %s; want the 404", url, miss.status, miss.body)
		}
		note("404 code", miss.json["code"])
	}
	if len(seen["404 code"]) < 2 {
		t.Errorf("404 code: always %v; want it drawn", seen["404 code"])
	}
}

// TestDynamicPerRequest: Prefer: dynamic=true (or __dynamic=true) draws
// the answer of a server that answers statically, dynamic=false answers a
// dynamic server's example, and Prefer: example= names the example
// whatever the mode, as Prism has it.
func TestDynamicPerRequest(t *testing.T) {
	t.Parallel()
	static := serveDynamic(t, 7, nil)
	dynamic := serveDynamic(t, 7, func(s *scenarios.OpenAPISource) { s.Dynamic = true })
	const fixed = `{"email":"fixed@example.com"}`
	cases := []struct {
		name   string
		base   *httptest.Server
		query  string
		header []string
		drawn  bool // else the example, fixed
	}{
		{"static", static, "", nil, false},
		{"static, Prefer: dynamic=true", static, "", []string{"Prefer", "dynamic=true"}, true},
		{"static, __dynamic=true", static, "?__dynamic=true", nil, true},
		{"static, Prefer: dynamic=false", static, "", []string{"Prefer", "dynamic=false"}, false},
		{"dynamic", dynamic, "", nil, true},
		{"dynamic, Prefer: dynamic=false", dynamic, "", []string{"Prefer", "dynamic=false"}, false},
		{"dynamic, __dynamic=false", dynamic, "?__dynamic=false", nil, false},
		{"dynamic, Prefer: dynamic=true", dynamic, "", []string{"Prefer", "dynamic=true"}, true},
		{"dynamic, Prefer: example=fixed", dynamic, "", []string{"Prefer", "example=fixed"}, false},
		{"dynamic, Prefer: dynamic=false, code=200", dynamic, "", []string{"Prefer", "code=200, dynamic=false"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := call(t, "GET", tc.base.URL+"/samples"+tc.query, "", "", tc.header...)
			b := call(t, "GET", tc.base.URL+"/samples"+tc.query, "", "", tc.header...)
			if a.status != 200 {
				t.Fatalf("%d %s", a.status, a.body)
			}
			if !tc.drawn {
				if a.body != fixed || b.body != fixed {
					t.Errorf("answered %s and %s; want the example, %s", a.body, b.body, fixed)
				}
				return
			}
			if a.body == fixed || a.body == b.body {
				t.Errorf("answered %s, then %s; want two fresh draws", a.body, b.body)
			}
		})
	}
}

// TestDynamicRepeatsUnderSeed: the same requests to servers seeded alike
// get the same drawn answers, and to one seeded otherwise other ones.
func TestDynamicRepeatsUnderSeed(t *testing.T) {
	t.Parallel()
	dynamic := func(s *scenarios.OpenAPISource) { s.Dynamic = true }
	run := func(hs *httptest.Server) []string {
		var out []string
		for i := range 5 {
			out = append(out, call(t, "GET", hs.URL+"/samples", "", "").body)
			made := call(t, "POST", hs.URL+"/gadgets", "application/json", fmt.Sprintf(`{"name": "g%d-x", "amount": 3}`, i))
			out = append(out, made.body)
		}
		return out
	}
	first, again, other := run(serveDynamic(t, 42, dynamic)), run(serveDynamic(t, 42, dynamic)), run(serveDynamic(t, 43, dynamic))
	if strings.Join(first, "\n") != strings.Join(again, "\n") {
		t.Errorf("seed 42 answered\n%s\nthen\n%s\nwant the same", strings.Join(first, "\n"), strings.Join(again, "\n"))
	}
	if first[0] == other[0] {
		t.Errorf("seeds 42 and 43 both answered %s; want other draws", first[0])
	}
}

// TestDynamicPatternFallsBack: a pattern that Go's regexp does not read
// (an ECMA lookahead) is answered with the schema's example; the rest of
// the answer is still drawn.
func TestDynamicPatternFallsBack(t *testing.T) {
	t.Parallel()
	hs := serveDynamic(t, 7, func(s *scenarios.OpenAPISource) { s.Dynamic = true })
	batches := map[any]bool{}
	for range 20 {
		a := call(t, "GET", hs.URL+"/skus/next", "", "")
		if a.status != 200 || a.json["sku"] != "AB12CD" {
			t.Fatalf("GET /skus/next: %d %s; want the example's sku", a.status, a.body)
		}
		batches[a.json["batch"]] = true
	}
	if len(batches) < 2 {
		t.Errorf("batch: always %v; want it drawn", batches)
	}
}
