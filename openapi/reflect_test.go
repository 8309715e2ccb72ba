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
