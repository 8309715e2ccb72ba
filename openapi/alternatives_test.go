package openapi_test

import (
	"strings"
	"testing"
)

// animalsOneOf is a 3.1 document whose body is one of three animals,
// each of which says its kind by a const or an enum.
const animalsOneOf = `openapi: 3.1.0
info: {title: Pets, version: "1"}
paths:
  /pets:
    post:
      operationId: createPet
      requestBody:
        required: true
        content:
          application/json:
            schema:
              oneOf:
                - $ref: '#/components/schemas/Cat'
                - $ref: '#/components/schemas/Dog'
                - $ref: '#/components/schemas/Fish'
      responses:
        '201': {description: made, content: {application/json: {schema: {type: object}}}}
components:
  schemas:
    Cat:
      type: object
      required: [kind, name, livesLeft]
      properties:
        kind: {type: string, const: cat}
        name: {type: string}
        livesLeft: {type: integer, maximum: 9}
    Dog:
      type: object
      required: [kind, name, goodBoy]
      properties:
        kind: {type: string, const: dog}
        name: {type: string}
        goodBoy: {type: boolean}
    Fish:
      type: object
      required: [kind, fins]
      properties:
        kind: {type: string, enum: [fish]}
        fins: {type: integer}
`

// petsDiscriminated is a 3.0 document whose oneOf says the branch by a
// discriminator with a mapping, and by nothing JSON Schema checks: a dog
// missing two fields is nearer a cat, missing one, by count.
const petsDiscriminated = `openapi: 3.0.3
info: {title: Pets, version: "1"}
paths:
  /pets:
    post:
      operationId: createPet
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/Pet'}
      responses:
        '201': {description: made, content: {application/json: {schema: {type: object}}}}
components:
  schemas:
    Pet:
      oneOf:
        - $ref: '#/components/schemas/Cat'
        - $ref: '#/components/schemas/Dog'
      discriminator:
        propertyName: petType
        mapping: {cat: '#/components/schemas/Cat', dog: '#/components/schemas/Dog'}
    Cat:
      type: object
      required: [petType, name, livesLeft]
      properties:
        petType: {type: string}
        name: {type: string}
        livesLeft: {type: integer}
    Dog:
      type: object
      required: [petType, name, bark, breed]
      properties:
        petType: {type: string}
        name: {type: string}
        bark: {type: boolean}
        breed: {type: string}
`

// TestOneOfNamesTheClosestAlternative: a body that fails a oneOf is told
// what is wrong with it as the alternative it is closest to (the one its
// kind's const or enum, or its discriminator, names; else the one with
// the fewest failures), not every alternative's failures: a cat with 12
// lives is not told it lacks a dog's goodBoy and a fish's fins.
func TestOneOfNamesTheClosestAlternative(t *testing.T) {
	t.Parallel()
	oneOf := serveDoc(t, animalsOneOf, nil)
	disc := serveDoc(t, petsDiscriminated, nil)
	cases := []struct {
		name, url, body string
		want            []string // each violation's "pointer detail", in order
	}{
		{"a cat with too many lives", oneOf.URL, `{"kind":"cat","name":"Tom","livesLeft":12}`,
			[]string{"#/livesLeft maximum: got 12, want 9 (as Cat, the closest of oneOf Cat, Dog, Fish)"}},
		{"a dog whose goodBoy is a string", oneOf.URL, `{"kind":"dog","name":"Rex","goodBoy":"yes"}`,
			[]string{"#/goodBoy got string, want boolean (as Dog, the closest of oneOf Cat, Dog, Fish)"}},
		{"no kind: the first of equals", oneOf.URL, `{"name":"x"}`,
			[]string{"# missing properties 'kind', 'livesLeft' (as Cat, the first of the equally close oneOf Cat, Dog, Fish)"}},
		{"the discriminator names the alternative", disc.URL, `{"petType":"dog","name":"Rex"}`,
			[]string{"# missing properties 'bark', 'breed' (as Dog, which petType names, of oneOf Cat, Dog)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := call(t, "POST", tc.url+"/pets", "application/json", tc.body)
			if got.status != 400 {
				t.Fatalf("%d %s; want 400", got.status, got.body)
			}
			errs, _ := got.json["errors"].([]any)
			var vs []string
			for _, e := range errs {
				m := e.(map[string]any)
				vs = append(vs, m["pointer"].(string)+" "+m["detail"].(string))
			}
			if strings.Join(vs, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(vs, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
