package openapi_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
)

// cyclicSpec has schemas that are their own allOf or anyOf branch, and
// one whose many required properties all refer back to it.
func cyclicSpec(t *testing.T) string {
	t.Helper()
	var props, required []string
	for i := range 60 {
		props = append(props, "        p"+string(rune('a'+i/26))+string(rune('a'+i%26))+": {$ref: '#/components/schemas/Wide'}")
		required = append(required, "p"+string(rune('a'+i/26))+string(rune('a'+i%26)))
	}
	doc := `openapi: 3.0.3
info: {title: cycles, version: "1"}
paths:
  /any:
    get:
      operationId: getAny
      responses: {"200": {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Any'}}}}}
    post:
      operationId: postAny
      requestBody: {content: {application/x-www-form-urlencoded: {schema: {$ref: '#/components/schemas/Any'}}}}
      responses: {"200": {description: ok}}
  /all:
    get:
      operationId: getAll
      responses: {"200": {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/All'}}}}}
    post:
      operationId: postAll
      requestBody: {content: {application/x-www-form-urlencoded: {schema: {$ref: '#/components/schemas/All'}}}}
      responses: {"200": {description: ok}}
  /wide:
    get:
      operationId: getWide
      responses: {"200": {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Wide'}}}}}
components:
  schemas:
    Any:
      anyOf:
        - $ref: '#/components/schemas/Any'
        - {type: object, properties: {x: {type: integer}}}
    All:
      allOf:
        - $ref: '#/components/schemas/All'
        - {type: object, properties: {x: {type: string}}}
    Wide:
      type: object
      required: [` + strings.Join(required, ", ") + `]
      properties:
` + strings.Join(props, "\n") + "\n"
	spec := filepath.Join(t.TempDir(), "cycles.yaml")
	if err := os.WriteFile(spec, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestCyclicSchemasAreBounded serves schemas that refer to themselves
// through allOf, anyOf or many required properties. Generating an answer
// for the anyOf one, and typing a form body for either, recursed until
// the stack overflowed, which no recover catches: the server died. The
// wide one made 60⁴ objects (a minute, a gigabyte) for one GET. Each is
// now answered promptly, and the server keeps serving.
func TestCyclicSchemasAreBounded(t *testing.T) {
	t.Parallel()
	_, hs := serveSpec(t, cyclicSpec(t), nil)
	for _, tc := range []struct {
		name, method, path, body string
	}{
		{"anyOf answer", "GET", "/any", ""},
		{"allOf answer", "GET", "/all", ""},
		{"wide answer", "GET", "/wide", ""},
		{"anyOf form", "POST", "/any", "x=1"},
		{"allOf form", "POST", "/all", "x=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := ""
			if tc.body != "" {
				ct = "application/x-www-form-urlencoded"
			}
			start := time.Now()
			a := call(t, tc.method, hs.URL+tc.path, ct, tc.body)
			if took := time.Since(start); took > time.Minute || a.status != 200 && a.status != 400 || len(a.body) > 1<<20 {
				t.Fatalf("%s %s: %d, %d bytes in %v; want a 200 or 400 under 1 MB, promptly", tc.method, tc.path, a.status, len(a.body), took)
			}
		})
	}
	if a := call(t, "GET", hs.URL+"/all", "", ""); a.status != 200 || a.json["x"] != "string" {
		t.Fatalf("after the cycles: %d %s; want the allOf's generated x", a.status, a.body)
	}
}

// TestDeepFormKeyIsBounded sends a form key nested three million
// levels deep (9 MB, under --max-body): it built three million nested
// maps (10 s, 1.3 GB). It is refused as a JSON body nested past 128
// levels is, naming the key cut short; 128 levels are still read.
func TestDeepFormKeyIsBounded(t *testing.T) {
	t.Parallel()
	_, hs := serveSpec(t, cyclicSpec(t), nil)
	start := time.Now()
	deep := call(t, "POST", hs.URL+"/all", "application/x-www-form-urlencoded", "x"+strings.Repeat("[a]", 3_000_000)+"=1")
	if took := time.Since(start); deep.status != 400 || !strings.Contains(deep.body, `the key \"x[a][a]`) ||
		!strings.Contains(deep.body, "nests more than 128 levels deep") || len(deep.body) > 2000 || took > time.Minute {
		t.Fatalf("3,000,000 levels: %d, %d bytes in %v: %.400s; want a short 400 saying the key nests too deep", deep.status, len(deep.body), took, deep.body)
	}
	ok := call(t, "POST", hs.URL+"/all", "application/x-www-form-urlencoded", "x"+strings.Repeat("[a]", 128)+"=1")
	if strings.Contains(ok.body, "nests more than") {
		t.Fatalf("128 levels refused for their depth: %.300s", ok.body)
	}
}

// TestSchemaFanOutIsBounded serves a schema that lists itself 80 times
// among its anyOf branches, under an allOf whose second part has the
// property a request sends: looking for the property's schema, to type
// the value reflected into the answer, visited 80⁴ schemas (6 s a
// request, more under -race). The look is bounded and the answer prompt.
func TestSchemaFanOutIsBounded(t *testing.T) {
	t.Parallel()
	doc := `openapi: 3.0.3
info: {title: fan, version: "1"}
paths:
  /f:
    post:
      operationId: postF
      requestBody: {content: {application/json: {schema: {type: object}}}}
      responses: {"200": {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/G'}}}}}
components:
  schemas:
    G:
      allOf:
        - $ref: '#/components/schemas/F'
        - {type: object, properties: {y: {type: integer}}}
    F:
      type: object
      properties: {x: {type: string}}
      anyOf:
` + strings.Repeat("        - $ref: '#/components/schemas/F'\n", 80)
	spec := filepath.Join(t.TempDir(), "fan.yaml")
	if err := os.WriteFile(spec, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, hs := serveSpec(t, spec, nil)
	start := time.Now()
	a := call(t, "POST", hs.URL+"/f", "application/json", `{"y":1}`)
	if took := time.Since(start); a.status != 200 || a.json["y"] != 1.0 || took > time.Minute {
		t.Fatalf("POST /f: %d %.300s in %v; want 200 with y 1, promptly", a.status, a.body, took)
	}
}

// TestDeepSpecIsRefused edits a served spec so that a request body's
// schema nests 9,000 levels (items in items, in JSON). The YAML parser
// takes it; the load took 10 s and 600 MB, and the first request's
// validation grew past 4 GB. The reload is refused at the first node
// past 256 levels, and the last good spec keeps serving.
func TestDeepSpecIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := filepath.Join(dir, "deep.json")
	doc := func(depth int) string {
		return `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/d":{"post":{"requestBody":{"content":{"application/json":{"schema":` +
			strings.Repeat(`{"type":"array","items":`, depth) + "{}" + strings.Repeat("}", depth) +
			`}}},"responses":{"200":{"description":"ok","content":{"application/json":{"example":{"ok":true}}}}}}}}}`
	}
	if err := os.WriteFile(spec, []byte(doc(3)), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, hs := serveSpec(t, spec, nil)
	if err := os.WriteFile(spec, []byte(doc(9000)), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := srv.Reload()
	// Seven levels hold the first schema; the first node past 256 is
	// the "type" key of the 250th, 132 + 249×24 + 2 columns in.
	want := spec + ":1:6110: openapi: the document nests more than 256 levels deep here"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("reload of a spec nested 9,000 deep: %v after %v; want %q", err, time.Since(start), want)
	}
	if a := call(t, "POST", hs.URL+"/d", "application/json", "[[[1]]]"); a.status != 200 || a.json["ok"] != true {
		t.Fatalf("POST /d after the refused reload: %d %.300s; want the last good spec's 200", a.status, a.body)
	}
}

// TestDeepSiblingFileIsRefused is TestDeepSpecIsRefused for a file a
// $ref names: the depth is checked before the library reads it, at the
// file's own line and column.
func TestDeepSiblingFileIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.yaml")
	doc := `openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /d:
    get:
      responses: {"200": {description: ok, content: {application/json: {schema: {$ref: "./deep.json#/D"}}}}}
`
	deep := `{"D":` + strings.Repeat(`{"type":"array","items":`, 9000) + "{}" + strings.Repeat("}", 9000) + "}"
	for name, data := range map[string]string{"spec.yaml": doc, "deep.json": deep} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := scenarios.LoadBytes("x.yaml", []byte("routes: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = openapi.Expand(set, openapi.Options{Extra: []*scenarios.OpenAPISource{openapi.FileSource(spec, "")}})
	// The first node past 256 levels: the "type" key of the 256th schema.
	want := filepath.Join(dir, "deep.json") + ":1:6127: openapi: the document nests more than 256 levels deep here"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Expand: %v after %v; want %q", err, time.Since(start), want)
	}
}
