package openapi_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
)

// petsAt is a document whose answer's schema is a $ref to ref, with a
// top-level extension holding a schema and a plain value.
func petsAt(ref string) string {
	return `openapi: 3.1.0
info: {title: Pets, version: "1"}
x-shared:
  Pet: {type: object, required: [name], properties: {name: {type: string}}}
x-name: hello
paths:
  /pets:
    post:
      operationId: createPet
      requestBody:
        content:
          application/json:
            schema: {$ref: '` + ref + `'}
      responses:
        '201': {description: made, content: {application/json: {schema: {type: object}}}}
`
}

// TestLocalRefsOutsideComponents: a $ref to a schema kept outside
// components (#/x-shared/Pet) validates and answers as any; one to a plain
// value (#/x-name), which the library builds as an empty schema that takes
// anything, or to the whole document (#), is refused at the $ref's
// file:line:col with a sentence that says what is wrong.
func TestLocalRefsOutsideComponents(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, petsAt("#/x-shared/Pet"), nil)
	if got := call(t, "POST", hs.URL+"/pets", "application/json", `{}`); got.status != 400 || !strings.Contains(got.body, "missing property 'name'") {
		t.Errorf("#/x-shared/Pet, no name: %d %s; want a 400 naming the missing name", got.status, got.body)
	}
	if got := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Rex"}`); got.status != 201 {
		t.Errorf("#/x-shared/Pet, a name: %d %s; want 201", got.status, got.body)
	}
	cases := []struct{ ref, want string }{
		{"#/x-name", `openapi.yaml:13:21: openapi: $ref "#/x-name" names the plain value "hello" (line 5), not a schema or other object`},
		{"#", `openapi.yaml:13:22: openapi: $ref "#" names the whole document, not a schema or other object`},
	}
	for _, tc := range cases {
		t.Run(tc.ref, func(t *testing.T) {
			t.Parallel()
			spec := filepath.Join(t.TempDir(), "openapi.yaml")
			if err := os.WriteFile(spec, []byte(petsAt(tc.ref)), 0o644); err != nil {
				t.Fatal(err)
			}
			set, err := scenarios.LoadBytes("routes.yaml", []byte("routes: []\n"))
			if err != nil {
				t.Fatal(err)
			}
			err = openapi.Expand(set, openapi.Options{Extra: []*scenarios.OpenAPISource{openapi.FileSource(spec, "")}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want %s", err, tc.want)
			}
		})
	}
}
