package openapi_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/scenarios"
)

// TestFeatureTable pins the lines of the README's OpenAPI feature table
// that the Redocly Cafe tests do not show, on testdata/notes (an OpenAPI
// 3.0 JSON document): parameters by location and style, security
// schemes, nullable, readOnly and writeOnly, the default response, and
// what is not honoured (servers' base paths, OAuth2 tokens).
func TestFeatureTable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", "notes", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "openapi.json")
	if err := os.WriteFile(spec, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, hs := serveSpec(t, spec, nil)
	bearer := []string{"Authorization", "Bearer tok"}
	basic := []string{"Authorization", "Basic dTpw"}
	cases := []struct {
		name, method, path, body string
		header                   []string
		status                   int
		want                     string // in the body
	}{
		{"servers' base path is not applied", "GET", "/api/v1/notes", "", bearer, 404, "No route matches"},
		{"bearer: missing", "GET", "/notes", "", nil, 401, `"in":"security"`},
		{"bearer: sent", "GET", "/notes", "", bearer, 200, ""},
		{"deepObject query: valid", "GET", "/notes?filter[tag]=work", "", bearer, 200, ""},
		{"deepObject query: invalid", "GET", "/notes?filter[tag]=play", "", bearer, 400, `"in":"query","name":"filter[tag]"`},
		{"cookie: invalid", "GET", "/notes", "", append([]string{"Cookie", "session=ab"}, bearer...), 400, `"in":"cookie","name":"session"`},
		{"cookie: valid", "GET", "/notes", "", append([]string{"Cookie", "session=abc"}, bearer...), 200, ""},
		{"basic: missing", "POST", "/notes", `{"text":"milk"}`, nil, 401, `"in":"security"`},
		{"basic: a bearer token is not basic", "POST", "/notes", `{"text":"milk"}`, bearer, 401, "scheme"},
		{"nullable (3.0) takes null", "POST", "/notes", `{"text":"milk","due":null}`, basic, 201, `"text":"milk"`},
		{"nullable still checks the type", "POST", "/notes", `{"text":"milk","due":5}`, basic, 400, `"pointer":"#/due"`},
		{"apiKey in query: missing", "GET", "/notes/note_0001", "", nil, 401, "api_key"},
		{"oauth2 is not checked", "DELETE", "/notes/note_0001", "", nil, 404, ""},
		{"the default response answers a code the operation does not list", "POST", "/notes?__code=503", `{"text":"milk"}`, basic, 503, `"message":"string"`},
	}
	for _, tc := range cases {
		got := call(t, tc.method, hs.URL+tc.path, "application/json", tc.body, tc.header...)
		if got.status != tc.status || !strings.Contains(got.body, tc.want) {
			t.Errorf("%s: %s %s: %d %s; want %d with %s", tc.name, tc.method, tc.path, got.status, got.body, tc.status, tc.want)
		}
	}

	// readOnly is not taken from a request, writeOnly is never answered.
	created := call(t, "POST", hs.URL+"/notes", "application/json", `{"id":"note_mine","created":"1999-12-31T23:59:59Z","text":"eggs","secret":"s3cret"}`, basic...)
	id, _ := created.json["id"].(string)
	if created.status != 201 || id == "note_mine" || !strings.HasPrefix(id, "note_") || strings.Contains(created.body, "1999") || strings.Contains(created.body, "secret") {
		t.Fatalf("create with readOnly id and created, and a writeOnly secret: %d %s; want a fresh id, the generated created, no secret", created.status, created.body)
	}
	if got := call(t, "GET", hs.URL+"/notes/"+id+"?api_key=k", "", ""); got.status != 200 || got.json["text"] != "eggs" || strings.Contains(got.body, "secret") {
		t.Fatalf("read of the created note: %d %s; want it, without its secret", got.status, got.body)
	}
}

// TestOpenAPI32 serves an OpenAPI 3.2 document: libopenapi reads it, and
// it is validated with 3.1's JSON Schema dialect.
func TestOpenAPI32(t *testing.T) {
	t.Parallel()
	doc := `openapi: 3.2.0
info: {title: Tiny, version: "1"}
paths:
  /things:
    post:
      operationId: createThing
      requestBody:
        required: true
        content:
          application/json:
            schema: {type: object, required: [n], properties: {n: {type: [integer, "null"]}}}
      responses:
        "201": {description: made, content: {application/json: {schema: {type: object, properties: {n: {type: integer}}}}}}
`
	hs := serveDoc(t, doc, func(s *scenarios.OpenAPISource) { s.State = false })
	if got := call(t, "POST", hs.URL+"/things", "application/json", `{"n":null}`); got.status != 201 {
		t.Fatalf("3.2, type [integer, null] with null: %d %s; want 201", got.status, got.body)
	}
	if got := call(t, "POST", hs.URL+"/things", "application/json", `{"n":"x"}`); got.status != 400 {
		t.Fatalf("3.2, a string for an integer: %d %s; want 400", got.status, got.body)
	}
}
