package openapi_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/scenariomock/scenariomock/openapi"
)

// TestCreateMakesTheAlternativeTheBodyNames: a create whose answer is
// anyOf a cat and a dog, on a route whose body says kind: dog, makes a
// dog (the dog's required fields, none of the cat's), stores it and
// reads it back so. It made the first alternative, a cat, with the
// body's fields laid on it: a dog with a cat's whiskers.
func TestCreateMakesTheAlternativeTheBodyNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := `openapi: 3.0.3
info: {title: pets, version: "1"}
paths:
  /pets:
    post:
      operationId: createPet
      requestBody:
        content:
          application/json:
            schema: {type: object, properties: {name: {type: string}}}
      responses:
        "200":
          description: a pet
          content:
            application/json:
              schema: {$ref: '#/components/schemas/pet'}
  /pets/{pet}:
    get:
      operationId: getPet
      parameters: [{name: pet, in: path, required: true, schema: {type: string}}]
      responses:
        "200":
          description: a pet
          content:
            application/json:
              schema: {$ref: '#/components/schemas/pet'}
components:
  schemas:
    pet:
      anyOf: [{$ref: '#/components/schemas/cat'}, {$ref: '#/components/schemas/dog'}]
    cat:
      type: object
      required: [id, kind, name, whiskers]
      properties:
        id: {type: string, pattern: '^pet_[a-z0-9]+$'}
        kind: {type: string, enum: [cat]}
        name: {type: string}
        whiskers: {type: integer}
    dog:
      type: object
      required: [id, kind, name, bark]
      properties:
        id: {type: string, pattern: '^pet_[a-z0-9]+$'}
        kind: {type: string, enum: [dog]}
        name: {type: string}
        bark: {type: string}
`
	scenario := `openapi: {spec: openapi.yaml}
routes:
  - name: createPet, a dog
    method: POST
    path: /pets
    operation: createPet
    when: {headers: {X-Dog: {present: true}}}
    respond:
      body: {kind: dog}
`
	for name, text := range map[string]string{"openapi.yaml": spec, "pets.yaml": scenario} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, hs := serveDir(t, dir, openapi.Options{})
	for _, tc := range []struct {
		name   string
		header []string
		kind   string // what the create makes
		own    string // a field of that kind only
		other  string // a field of the other kind only
	}{
		{"the body names the dog", []string{"X-Dog", "1"}, "dog", "bark", "whiskers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			made := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Rex"}`, tc.header...)
			var pet map[string]any
			if made.status != 200 || json.Unmarshal([]byte(made.body), &pet) != nil {
				t.Fatalf("create: %d %s", made.status, made.body)
			}
			id, _ := pet["id"].(string)
			back := call(t, "GET", hs.URL+"/pets/"+id, "", "")
			var read map[string]any
			if back.status != 200 || json.Unmarshal([]byte(back.body), &read) != nil {
				t.Fatalf("read back %s: %d %s", id, back.status, back.body)
			}
			for what, v := range map[string]map[string]any{"made": pet, "read back": read} {
				_, own := v[tc.own]
				_, other := v[tc.other]
				if v["kind"] != tc.kind || v["name"] != "Rex" || !own || other {
					t.Errorf("%s: %v; want a %s named Rex, with %s and no %s", what, v, tc.kind, tc.own, tc.other)
				}
			}
		})
	}
}
