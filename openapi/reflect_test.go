package openapi_test

import (
	"os"
	"path/filepath"
	"testing"
)

// reflectDoc creates an item from a form whose body's schema types less
// than the answer's: count is untyped and dims a free-form object in the
// request, integers in the answer, whose example has them null; the
// example's code is a number where the schema says string.
const reflectDoc = `openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /items:
    post:
      operationId: createItem
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded:
            schema:
              type: object
              properties:
                count: {}
                code: {type: string}
                dims: {type: object}
      responses:
        '201':
          description: made
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Item'}
              example: {id: itm_abcdefgh, count: null, code: 7, dims: {w: null}}
components:
  schemas:
    Item:
      type: object
      properties:
        id: {type: string}
        count: {type: integer, nullable: true}
        code: {type: string}
        dims:
          type: object
          properties: {w: {type: integer, nullable: true}}
`

// TestReflectedValuesTakeTheAnswersTypes: a value reflected from the
// request into the answer was typed by the example's value it replaced,
// not by the answer's schema: a form's count=5 in place of the example's
// null answered "count": "5" where the schema says integer (and
// dims[w]=4 "w": "4"), and code=9 in place of the example's 7 answered
// a number where the schema says string. Each breaks the answer's own
// schema; typed by the schema, each fits it.
func TestReflectedValuesTakeTheAnswersTypes(t *testing.T) {
	t.Parallel()
	spec := filepath.Join(t.TempDir(), "openapi.yaml")
	if err := os.WriteFile(spec, []byte(reflectDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, hs := serveSpec(t, spec, nil)
	c := conformanceOf(t, spec)
	made := call(t, "POST", hs.URL+"/items", "application/x-www-form-urlencoded", "count=5&code=9&dims[w]=4")
	if made.status != 201 {
		t.Fatalf("create: %d %s; want 201", made.status, made.body)
	}
	c.check(t, "POST", "/items", made)
	dims, _ := made.json["dims"].(map[string]any)
	if made.json["count"] != 5.0 || made.json["code"] != "9" || dims["w"] != 4.0 {
		t.Errorf("create: %s; want count 5, code \"9\", dims.w 4", made.body)
	}
}

// anyOfDoc creates a pet whose body and answer are anyOf a Cat or a Dog,
// with no example or fixture: the answer is made from the schema.
const anyOfDoc = `openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /pets:
    post:
      operationId: createPet
      requestBody:
        required: true
        content:
          application/json:
            schema:
              anyOf:
                - {$ref: '#/components/schemas/Cat'}
                - {$ref: '#/components/schemas/Dog'}
      responses:
        '201':
          description: made
          content:
            application/json:
              schema:
                anyOf:
                  - {$ref: '#/components/schemas/Cat'}
                  - {$ref: '#/components/schemas/Dog'}
  /pets/{id}:
    parameters: [{name: id, in: path, required: true, schema: {type: string}}]
    get:
      operationId: getPet
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema:
                anyOf:
                  - {$ref: '#/components/schemas/Cat'}
                  - {$ref: '#/components/schemas/Dog'}
components:
  schemas:
    Cat:
      type: object
      required: [id, name, hunts]
      properties:
        id: {type: string, readOnly: true}
        name: {type: string}
        hunts: {type: boolean}
        age: {type: integer}
    Dog:
      type: object
      required: [id, name, bark, born]
      properties:
        id: {type: string, readOnly: true}
        name: {type: string}
        bark: {type: string}
        breed: {type: string}
        born: {type: string, format: date-time, readOnly: true}
`

// TestAnyOfCreateAnswersTheBranchSent: a create whose body is anyOf a Cat
// or a Dog, sent a dog, answered the first alternative's values with the
// dog's laid on them and the cat's left out: {"bark", "id", "name"}
// without the born that a Dog requires, which fits neither alternative.
// The answer is made from the alternative that has the most of the
// fields sent.
func TestAnyOfCreateAnswersTheBranchSent(t *testing.T) {
	t.Parallel()
	spec := filepath.Join(t.TempDir(), "openapi.yaml")
	if err := os.WriteFile(spec, []byte(anyOfDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, hs := serveSpec(t, spec, nil)
	c := conformanceOf(t, spec)
	for _, body := range []string{`{"name":"Rex","bark":"woof"}`, `{"name":"Tom","hunts":true}`} {
		made := call(t, "POST", hs.URL+"/pets", "application/json", body)
		if made.status != 201 {
			t.Fatalf("create %s: %d %s; want 201", body, made.status, made.body)
		}
		c.check(t, "POST", "/pets", made)
	}
}
