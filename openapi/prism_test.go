package openapi_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/scenarios"
)

// The tests in this file are what a Prism user brings: their own specs,
// and what Prism answers to them.

// reportsSpec answers a report as JSON, XML or CSV, and a ping with no
// content.
const reportsSpec = `openapi: 3.0.3
info: {title: Reports, version: "1"}
paths:
  /reports/{id}:
    get:
      operationId: getReport
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {type: object, properties: {id: {type: string}, total: {type: number}}}
              example: {id: r1, total: 3.5}
            application/xml:
              schema: {type: object}
              example: "<report><id>r1</id></report>"
            text/csv:
              schema: {type: string}
              example: "id,total"
        '404':
          description: missing
          content:
            text/plain:
              schema: {type: string}
              example: no such report
        '422':
          description: invalid
          content:
            application/problem+json:
              schema: {type: object, properties: {title: {type: string}, status: {type: integer}}}
  /ping:
    get:
      operationId: ping
      responses:
        '204': {description: no content}
`

// TestAcceptNegotiation pins content negotiation as RFC 9110 and Prism
// have it: the highest q-value wins, q=0 refuses, the most specific range
// decides a media type's q-value, and an Accept that refuses every media
// type of the answer is a 406 problem (under validate: enforce; report
// serves the JSON one).
func TestAcceptNegotiation(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, reportsSpec, nil)
	report := serveDoc(t, reportsSpec, func(s *scenarios.OpenAPISource) { s.Validate = "report" })
	stripe := serveDoc(t, reportsSpec, func(s *scenarios.OpenAPISource) { s.Errors = "stripe" })
	if got := call(t, "GET", stripe.URL+"/reports/r1", "", "", "Accept", "text/html"); got.status != 200 || got.header.Get("Content-Type") != "application/json" {
		t.Errorf("errors: stripe, Accept: text/html: %d %s %s; want the JSON answer, as Stripe gives it", got.status, got.header.Get("Content-Type"), got.body)
	}
	cases := []struct {
		name, path, accept string
		status             int
		contentType        string
	}{
		{"no Accept: JSON", "/reports/r1", "", 200, "application/json"},
		{"*/*: JSON", "/reports/r1", "*/*", 200, "application/json"},
		{"exact", "/reports/r1", "application/xml", 200, "application/xml"},
		{"type wildcard", "/reports/r1", "text/*", 200, "text/csv"},
		{"higher q wins over order", "/reports/r1", "text/csv;q=0.5, application/xml", 200, "application/xml"},
		{"q weighs JSON down", "/reports/r1", "application/json;q=0.1, text/csv", 200, "text/csv"},
		{"equal q: Accept's order", "/reports/r1", "text/csv, application/xml", 200, "text/csv"},
		{"a browser's Accept", "/reports/r1", "text/html,application/xhtml+xml,*/*;q=0.8", 200, "application/json"},
		{"more specific range's q=0 refuses under */*", "/reports/r1", "application/json;q=0, */*", 200, "application/xml"},
		{"Accept that does not parse is none", "/reports/r1", "garbage", 200, "application/json"},
		{"none acceptable: 406", "/reports/r1", "text/html", 406, "application/problem+json"},
		{"q=0 only: 406", "/reports/r1", "application/xml;q=0", 406, "application/problem+json"},
		{"Prefer: code= negotiates that answer", "/reports/r1?__code=404", "text/plain", 404, "text/plain"},
		{"Prefer: code= answer refusing: 406", "/reports/r1?__code=404", "application/json", 406, "application/problem+json"},
		{"application/json takes a problem+json error", "/reports/r1?__code=422", "application/json", 422, "application/problem+json"},
		{"a problem+json error refusing: 406", "/reports/r1?__code=422", "text/html", 406, "application/problem+json"},
		{"no content is acceptable to any Accept", "/ping", "application/json", 204, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var header []string
			if tc.accept != "" {
				header = []string{"Accept", tc.accept}
			}
			got := call(t, "GET", hs.URL+tc.path, "", "", header...)
			if got.status != tc.status || got.header.Get("Content-Type") != tc.contentType {
				t.Fatalf("Accept %q: %d %s %s; want %d %s", tc.accept, got.status, got.header.Get("Content-Type"), got.body, tc.status, tc.contentType)
			}
			if got.status == http.StatusNotAcceptable {
				errs, _ := got.json["errors"].([]any)
				if got.json["status"] != 406.0 || len(errs) != 1 || errs[0].(map[string]any)["name"] != "Accept" {
					t.Fatalf("406 problem: %s; want status 406 and one error naming Accept", got.body)
				}
				if r := call(t, "GET", report.URL+tc.path, "", "", header...); r.status == http.StatusNotAcceptable || r.status >= 500 {
					t.Fatalf("validate: report, Accept %q: %d %s; want it served", tc.accept, r.status, r.body)
				}
			}
		})
	}
}

// petsSpec is a pet store whose pets are dogs or cats by petType, and
// whose cats are house cats or big cats by catKind: a discriminator in a
// oneOf branch of another.
const petsSpec = `openapi: 3.0.3
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
        '201':
          description: created
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Pet'}
  /pets/{petId}:
    get:
      operationId: getPet
      parameters:
        - {name: petId, in: path, required: true, schema: {type: integer}}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Pet'}
components:
  schemas:
    Pet:
      oneOf:
        - $ref: '#/components/schemas/Dog'
        - $ref: '#/components/schemas/Cat'
      discriminator:
        propertyName: petType
        mapping: {dog: '#/components/schemas/Dog', cat: '#/components/schemas/Cat'}
    Base:
      type: object
      required: [petType, name]
      properties:
        id: {type: integer, readOnly: true}
        name: {type: string}
        petType: {type: string}
    Dog:
      allOf:
        - $ref: '#/components/schemas/Base'
        - {type: object, required: [bark], properties: {bark: {type: boolean}}}
    Cat:
      oneOf:
        - $ref: '#/components/schemas/HouseCat'
        - $ref: '#/components/schemas/BigCat'
      discriminator:
        propertyName: catKind
        mapping: {house: '#/components/schemas/HouseCat', big: '#/components/schemas/BigCat'}
    HouseCat:
      allOf:
        - $ref: '#/components/schemas/Base'
        - {type: object, required: [catKind, indoor], properties: {catKind: {type: string, enum: [house]}, indoor: {type: boolean}}}
    BigCat:
      allOf:
        - $ref: '#/components/schemas/Base'
        - {type: object, required: [catKind, roars], properties: {catKind: {type: string, enum: [big]}, roars: {type: boolean}}}
`

// TestNestedDiscriminator creates pets of each branch, the big cat two
// discriminators down: each is validated, answered and stored as its own
// branch, not as the first cat.
func TestNestedDiscriminator(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, petsSpec, nil)
	cases := []struct {
		name, body string
		status     int
		field      string // a field of the branch, answered and stored
	}{
		{"dog", `{"petType":"dog","name":"rex","bark":true}`, 201, "bark"},
		{"house cat", `{"petType":"cat","catKind":"house","name":"tom","indoor":true}`, 201, "indoor"},
		{"big cat", `{"petType":"cat","catKind":"big","name":"leo","roars":true}`, 201, "roars"},
		{"big cat without roars", `{"petType":"cat","catKind":"big","name":"leo","indoor":true}`, 400, ""},
		{"cat of no kind", `{"petType":"cat","catKind":"tiny","name":"leo"}`, 400, ""},
	}
	for _, tc := range cases {
		got := call(t, "POST", hs.URL+"/pets", "application/json", tc.body)
		if got.status != tc.status {
			t.Fatalf("%s: %d %s; want %d", tc.name, got.status, got.body, tc.status)
		}
		if tc.field == "" {
			continue
		}
		if got.json[tc.field] != true {
			t.Errorf("%s: answered %s; want its %s", tc.name, got.body, tc.field)
		}
		id, _ := got.json["id"].(float64)
		if read := call(t, "GET", hs.URL+"/pets/"+strconv.Itoa(int(id)), "", ""); read.status != 200 || read.json[tc.field] != true {
			t.Errorf("%s read back: %d %s; want its %s", tc.name, read.status, read.body, tc.field)
		}
	}
}

// ordersSpec is an orders API with integer ids.
const ordersSpec = `openapi: 3.1.0
info: {title: Orders, version: "1"}
paths:
  /orders:
    post:
      operationId: createOrder
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/Order'}
      responses:
        '201':
          description: created
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Order'}
  /orders/{orderId}:
    parameters:
      - {name: orderId, in: path, required: true, schema: {type: integer, minimum: 1}}
    get:
      operationId: getOrder
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Order'}
    patch:
      operationId: patchOrder
      requestBody:
        content:
          application/json:
            schema: {type: object, properties: {note: {type: [string, "null"]}}}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Order'}
    delete:
      operationId: deleteOrder
      responses:
        '204': {description: gone}
components:
  schemas:
    Order:
      type: object
      required: [item, quantity]
      properties:
        id: {type: integer, readOnly: true}
        item: {type: string}
        quantity: {type: integer, minimum: 1}
        note: {type: [string, "null"]}
`

// TestIntegerIDSpellings reads, updates and deletes order 7 by the other
// spellings an integer path parameter takes (007, +7, 7.0): each is order
// 7, not a 404 for an order that is there.
func TestIntegerIDSpellings(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, ordersSpec, nil)
	for range 7 {
		if got := call(t, "POST", hs.URL+"/orders", "application/json", `{"item":"tea","quantity":1,"note":"none"}`); got.status != 201 {
			t.Fatalf("create: %d %s", got.status, got.body)
		}
	}
	for _, id := range []string{"7", "007", "+7", "7.0"} {
		if got := call(t, "GET", hs.URL+"/orders/"+id, "", ""); got.status != 200 || got.json["id"] != 7.0 {
			t.Errorf("GET /orders/%s: %d %s; want order 7", id, got.status, got.body)
		}
	}
	if got := call(t, "PATCH", hs.URL+"/orders/007", "application/json", `{"note":"gift"}`); got.status != 200 || got.json["id"] != 7.0 || got.json["note"] != "gift" {
		t.Fatalf("PATCH /orders/007: %d %s; want order 7 with its note", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/orders/7", "", ""); got.json["note"] != "gift" {
		t.Fatalf("GET /orders/7 after the PATCH of 007: %s; want its note", got.body)
	}
	if got := call(t, "DELETE", hs.URL+"/orders/0007", "", ""); got.status != 204 {
		t.Fatalf("DELETE /orders/0007: %d %s; want 204", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/orders/7", "", ""); got.status != 404 {
		t.Fatalf("GET /orders/7 after the DELETE of 0007: %d %s; want 404", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/orders/0x7", "", ""); got.status != 400 {
		t.Fatalf("GET /orders/0x7: %d %s; want 400", got.status, got.body)
	}
}

// TestUpdateSetsAFieldTheCreateDidNotSend adds a note to an order made
// without one: the stored order has no note (a create stores what was
// sent), and the PATCH that sends one must set it, as it sets a field
// the order has; a readOnly id and a field that does not fit stay out.
func TestUpdateSetsAFieldTheCreateDidNotSend(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, ordersSpec, nil)
	report := serveDoc(t, ordersSpec, func(s *scenarios.OpenAPISource) { s.Validate = "report" })
	for _, srv := range []string{hs.URL, report.URL} {
		if got := call(t, "POST", srv+"/orders", "application/json", `{"item":"tea","quantity":1}`); got.status != 201 || got.json["note"] != nil {
			t.Fatalf("create without a note: %d %s", got.status, got.body)
		}
	}
	if got := call(t, "PATCH", hs.URL+"/orders/1", "application/json", `{"note":"gift"}`); got.status != 200 || got.json["note"] != "gift" {
		t.Fatalf("PATCH a note: %d %s; want the note set", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/orders/1", "", ""); got.json["note"] != "gift" {
		t.Fatalf("read after the PATCH: %s; want the note", got.body)
	}
	if got := call(t, "PATCH", hs.URL+"/orders/1", "application/json", `{"note":null}`); got.status != 200 || got.json["note"] != nil || !strings.Contains(got.body, `"note":null`) {
		t.Fatalf("PATCH the note null: %d %s; want it null", got.status, got.body)
	}
	// validate: report serves a note that is no string: not stored as a
	// placeholder.
	if got := call(t, "PATCH", report.URL+"/orders/1", "application/json", `{"note":{"a":1}}`); got.status != 200 || strings.Contains(got.body, "note") {
		t.Fatalf("PATCH a note that is no string (report): %d %s; want no note", got.status, got.body)
	}
}

// TestSlViolationsHeader reads the sl-violations header as tooling written
// against Prism does (JSON.parse of the header): under validate: report
// the served answer lists each violation with its location, and so does
// a refusal under enforce; a valid request has none.
func TestSlViolationsHeader(t *testing.T) {
	t.Parallel()
	type diagnostic struct {
		Location []string `json:"location"`
		Severity string   `json:"severity"`
		Code     int      `json:"code"`
		Message  string   `json:"message"`
	}
	enforce := serveDoc(t, petsSpec, nil)
	report := serveDoc(t, petsSpec, func(s *scenarios.OpenAPISource) { s.Validate = "report" })
	cases := []struct {
		name, url, body, accept string
		status                  int
		location                string // of the first diagnostic, joined by /
		code                    int
	}{
		{"report: body", report.URL, `{"petType":"dog","name":"r\u00e9x","bark":"oui"}`, "", 201, "request/body/bark", 0},
		{"report: Accept", report.URL, `{"petType":"dog","name":"rex","bark":true}`, "text/html", 201, "request/header/Accept", 406},
		{"enforce: body", enforce.URL, `{"petType":"dog","name":"rex","bark":"oui"}`, "", 400, "request/body/bark", 0},
		{"valid", report.URL, `{"petType":"dog","name":"rex","bark":true}`, "", 201, "", 0},
	}
	for _, tc := range cases {
		var header []string
		if tc.accept != "" {
			header = []string{"Accept", tc.accept}
		}
		got := call(t, "POST", tc.url+"/pets", "application/json", tc.body, header...)
		raw := got.header.Get("Sl-Violations")
		if got.status != tc.status {
			t.Fatalf("%s: %d %s; want %d", tc.name, got.status, got.body, tc.status)
		}
		if tc.location == "" {
			if raw != "" {
				t.Fatalf("%s: sl-violations %s; want none", tc.name, raw)
			}
			continue
		}
		for _, r := range raw {
			if r > 0x7e {
				t.Fatalf("%s: sl-violations %q is not ASCII", tc.name, raw)
			}
		}
		var ds []diagnostic
		if err := json.Unmarshal([]byte(raw), &ds); err != nil || len(ds) == 0 {
			t.Fatalf("%s: sl-violations %q: %v; want a JSON array of diagnostics", tc.name, raw, err)
		}
		if d := ds[0]; strings.Join(d.Location, "/") != tc.location || d.Severity != "Error" || d.Code != tc.code || d.Message == "" {
			t.Fatalf("%s: first diagnostic %+v; want location %s, severity Error, code %d and a message", tc.name, d, tc.location, tc.code)
		}
	}
}

// petsInheritance is OpenAPI 3.0's inheritance: a base schema with a
// discriminator and a mapping, and subtypes that extend it through allOf.
const petsInheritance = `openapi: 3.0.3
info: {title: Pets, version: "1"}
paths:
  /pets:
    get:
      operationId: listPets
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {type: array, items: {$ref: '#/components/schemas/Pet'}}
    post:
      operationId: createPet
      requestBody:
        content:
          application/json:
            schema: {$ref: '#/components/schemas/Pet'}
      responses:
        '201':
          description: made
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Pet'}
components:
  schemas:
    Pet:
      type: object
      required: [petType, name]
      properties:
        petType: {type: string}
        name: {type: string}
      discriminator:
        propertyName: petType
        mapping: {cat: '#/components/schemas/Cat', dog: Dog}
    Cat:
      allOf:
        - $ref: '#/components/schemas/Pet'
        - type: object
          required: [livesLeft]
          properties:
            livesLeft: {type: integer, minimum: 1}
    Dog:
      allOf:
        - $ref: '#/components/schemas/Pet'
        - type: object
          required: [bark]
          properties:
            bark: {type: boolean}
`

// TestAllOfDiscriminatorAnswers: a base schema whose subtypes extend it
// through allOf is answered as its first mapped subtype, every time, with
// the subtype's fields and the discriminator's value for it; a request
// that names another subtype is answered as that one.
func TestAllOfDiscriminatorAnswers(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, petsInheritance, nil)
	for range 2 {
		got := call(t, "GET", hs.URL+"/pets", "", "")
		if got.status != 200 || got.body != `[{"livesLeft":1,"name":"string","petType":"cat"}]` {
			t.Fatalf("GET /pets: %d %s; want a list of one cat, with its livesLeft and petType cat", got.status, got.body)
		}
	}
	got := call(t, "POST", hs.URL+"/pets", "application/json", `{"petType":"dog","name":"Rex","bark":true}`)
	var pet map[string]any
	if err := json.Unmarshal([]byte(got.body), &pet); err != nil || got.status != 201 {
		t.Fatalf("POST /pets: %d %s; want 201", got.status, got.body)
	}
	if _, cat := pet["livesLeft"]; cat || pet["petType"] != "dog" || pet["bark"] != true || pet["name"] != "Rex" {
		t.Errorf("POST /pets a dog: %s; want the dog as sent, without a cat's livesLeft", got.body)
	}
}
