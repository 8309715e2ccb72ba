package openapi_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// idsDoc has a collection for each kind of id: a string with a pattern
// (its example's characters are only 0 and 1), an integer, a UUID, and a
// pattern that leaves four ids.
const idsDoc = `openapi: 3.1.0
info: {title: ids, version: "1"}
paths:
  /orders:
    post:
      operationId: createOrder
      requestBody: {content: {application/json: {schema: {$ref: "#/components/schemas/NewOrder"}}}}
      responses:
        "201": {description: made, content: {application/json: {schema: {$ref: "#/components/schemas/Order"}}}}
  /orders/{id}:
    parameters: [{name: id, in: path, required: true, schema: {type: string}}]
    get:
      operationId: getOrder
      responses:
        "200": {description: it, content: {application/json: {schema: {$ref: "#/components/schemas/Order"}}}}
        "404": {description: none}
    patch:
      operationId: updateOrder
      requestBody: {content: {application/json: {schema: {$ref: "#/components/schemas/OrderPatch"}}}}
      responses:
        "200": {description: it, content: {application/json: {schema: {$ref: "#/components/schemas/Order"}}}}
        "404": {description: none}
    put:
      operationId: replaceOrder
      requestBody: {content: {application/json: {schema: {$ref: "#/components/schemas/OrderPatch"}}}}
      responses:
        "200": {description: it, content: {application/json: {schema: {$ref: "#/components/schemas/Order"}}}}
        "404": {description: none}
  /todos:
    get:
      operationId: listTodos
      parameters:
        - {name: limit, in: query, schema: {type: integer}}
        - {name: cursor, in: query, schema: {type: string}}
      responses:
        "200":
          description: a page
          content:
            application/json:
              schema:
                type: object
                required: [items, nextCursor]
                properties:
                  items: {type: array, items: {$ref: "#/components/schemas/Todo"}}
                  nextCursor: {type: [string, "null"]}
    post:
      operationId: createTodo
      requestBody: {content: {application/json: {schema: {type: object, properties: {title: {type: string}}}}}}
      responses:
        "201":
          description: made
          headers:
            Location: {required: true, schema: {type: string, format: uri-reference}}
            X-Rate-Limit: {schema: {type: integer, minimum: 100}}
            x-trace: {example: "abc\r\nSet-Cookie: no"}
            Transfer-Encoding: {example: gzip}
            X-Arr: {example: [a, b]}
          content: {application/json: {schema: {$ref: "#/components/schemas/Todo"}}}
  /todos/{id}:
    parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
    get:
      operationId: getTodo
      responses:
        "200": {description: it, content: {application/json: {schema: {$ref: "#/components/schemas/Todo"}}}}
        "404": {description: none}
    delete:
      operationId: deleteTodo
      responses:
        "204": {description: gone}
        "404": {description: none}
  /widgets:
    post:
      operationId: createWidget
      requestBody: {content: {application/json: {schema: {type: object}}}}
      responses:
        "201": {description: made, content: {application/json: {schema: {type: object, required: [id], properties: {id: {type: string, format: uuid}}}}}}
  /widgets/{id}:
    parameters: [{name: id, in: path, required: true, schema: {type: string, format: uuid}}]
    get:
      operationId: getWidget
      responses:
        "200": {description: it, content: {application/json: {schema: {type: object, properties: {id: {type: string, format: uuid}}}}}}
        "404": {description: none}
  /tickets:
    post:
      operationId: createTicket
      responses:
        "201": {description: made, content: {application/json: {schema: {type: object, required: [id], properties: {id: {type: string, pattern: "^t_[ab]{2}$", example: t_ab}}}}}}
  /tickets/{id}:
    parameters: [{name: id, in: path, required: true, schema: {type: string}}]
    delete:
      operationId: deleteTicket
      responses:
        "204": {description: gone}
        "404": {description: none}
  /counted:
    post:
      operationId: createCounted
      responses:
        "201":
          description: made
          headers: {Location: {schema: {type: string}}}
          content: {application/json: {schema: {type: object, required: [id], properties: {id: {type: integer, minimum: 1234567}}}}}
  /counted/{id}:
    parameters: [{name: id, in: path, required: true, schema: {type: integer, minimum: 1234567}}]
    get:
      operationId: getCounted
      responses:
        "200": {description: it, content: {application/json: {schema: {type: object, properties: {id: {type: integer}}}}}}
        "404": {description: none}
  /nested:
    post:
      operationId: createNested
      responses:
        "201": {description: made, content: {application/json: {schema: {type: object, required: [id], properties: {id: {type: string, pattern: "^n_((((((((((((a?)*)*)*)*)*)*)*)*)*)*)*)*b$", example: n_ab}}}}}}
components:
  schemas:
    NewOrder:
      type: object
      properties: {note: {type: [string, "null"]}, meta: {type: object, additionalProperties: true}}
    OrderPatch:
      type: object
      properties: {note: {type: [string, "null"]}, meta: {type: [object, "null"], additionalProperties: true}}
    Order:
      type: object
      required: [id, createdAt]
      properties:
        id: {type: string, readOnly: true, pattern: "^ord_[0-9a-z]{4,}$", example: ord_0001}
        createdAt: {type: string, format: date-time}
        note: {type: [string, "null"]}
        meta: {type: [object, "null"], additionalProperties: true}
    Todo:
      type: object
      required: [id, title]
      properties: {id: {type: integer, readOnly: true}, title: {type: string}}
`

// TestCreatedIDs: a created object's id is of the kind the spec gives
// it, and never one already stored or deleted. A pattern whose example
// has few characters gets ids drawn from the pattern (before, 23 creates
// left 12 orders: ids from the example's 0 and 1 collided and replaced
// objects); an integer id counts 1, 2, 3 and reads back by its number; a
// format: uuid id is a UUID; a pattern that leaves four ids gives four,
// then a 507 problem, and a deleted one is not given again.
func TestCreatedIDs(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, idsDoc, nil)
	js := "application/json"
	pattern := regexp.MustCompile(`^ord_[0-9a-z]{4,}$`)
	seen := map[string]bool{}
	for i := range 40 {
		got := call(t, "POST", hs.URL+"/orders", js, fmt.Sprintf(`{"note":"n%d"}`, i))
		id, _ := got.json["id"].(string)
		if got.status != 201 || !pattern.MatchString(id) || seen[id] {
			t.Fatalf("order %d: %d %s; want a fresh id matching the pattern (seen %v)", i, got.status, got.body, seen)
		}
		seen[id] = true
	}
	for id := range seen {
		if got := call(t, "GET", hs.URL+"/orders/"+id, "", ""); got.status != 200 || got.json["id"] != id {
			t.Fatalf("read %s: %d %s", id, got.status, got.body)
		}
	}
	for want := 1; want <= 3; want++ {
		got := call(t, "POST", hs.URL+"/todos", js, `{"title":"t"}`)
		if got.status != 201 || got.json["id"] != float64(want) {
			t.Fatalf("todo %d: %d %s; want the integer id %d", want, got.status, got.body, want)
		}
	}
	if got := call(t, "GET", hs.URL+"/todos/2", "", ""); got.status != 200 || got.json["id"] != float64(2) || got.json["title"] != "t" {
		t.Errorf("read todo 2: %d %s", got.status, got.body)
	}
	if got := call(t, "DELETE", hs.URL+"/todos/3", "", ""); got.status != 204 {
		t.Fatalf("delete todo 3: %d %s", got.status, got.body)
	}
	if got := call(t, "POST", hs.URL+"/todos", js, `{"title":"t"}`); got.json["id"] != float64(4) {
		t.Errorf("the todo after deleting 3: %s; want id 4", got.body)
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	got := call(t, "POST", hs.URL+"/widgets", js, `{}`)
	id, _ := got.json["id"].(string)
	if got.status != 201 || !uuid.MatchString(id) {
		t.Fatalf("widget: %d %s; want a version 4 UUID id", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/widgets/"+id, "", ""); got.status != 200 {
		t.Errorf("read widget %s: %d %s", id, got.status, got.body)
	}
	tickets := map[string]bool{}
	for range 4 {
		got := call(t, "POST", hs.URL+"/tickets", "", "")
		id, _ := got.json["id"].(string)
		if got.status != 201 || tickets[id] {
			t.Fatalf("ticket: %d %s; want a fresh one of the four (have %v)", got.status, got.body, tickets)
		}
		tickets[id] = true
	}
	if got := call(t, "POST", hs.URL+"/tickets", "", ""); got.status != 507 || !strings.Contains(got.body, "no free id") {
		t.Errorf("a fifth ticket: %d %s; want a 507 problem saying no id is free", got.status, got.body)
	}
	for id := range tickets {
		if got := call(t, "DELETE", hs.URL+"/tickets/"+id, "", ""); got.status != 204 {
			t.Fatalf("delete %s: %d %s", id, got.status, got.body)
		}
		break
	}
	if got := call(t, "POST", hs.URL+"/tickets", "", ""); got.status != 507 {
		t.Errorf("a ticket after one was deleted: %d %s; want a 507 still: a deleted id is not given again", got.status, got.body)
	}
	// An integer id counts from its minimum, so that it reads back, and
	// its Location names it as written (not 1.234567e+06).
	got = call(t, "POST", hs.URL+"/counted", "", "")
	if got.status != 201 || got.json["id"] != float64(1234567) || got.header.Get("Location") != "/counted/1234567" {
		t.Errorf("an id with minimum 1234567: %d %v %s; want 1234567 and its Location", got.status, got.header, got.body)
	}
	if got := call(t, "GET", hs.URL+"/counted/1234567", "", ""); got.status != 200 {
		t.Errorf("read it: %d %s", got.status, got.body)
	}
	// A repeat of repeats that writes nothing is drawn within a bound
	// (it took 14^12 steps: the request never ended), and the part after
	// it is drawn too (a first fix ran out of steps before the b: a 507).
	if got := call(t, "POST", hs.URL+"/nested", "", ""); got.status != 201 {
		t.Errorf("a nested-star pattern: %d %s; want an id", got.status, got.body)
	}
}

// TestUpdateKeepsIDAndSetsNull: an update cannot rename the object (its
// id stays, and a read by the new name is a 404) nor set what its body's
// schema does not list (createdAt); a JSON null sets a field null, and a
// null inside a free-form map takes the key out, as a merge patch does.
func TestUpdateKeepsIDAndSetsNull(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, idsDoc, nil)
	js := "application/json"
	made := call(t, "POST", hs.URL+"/orders", js, `{"note":"hello","meta":{"a":"1","b":"2"}}`)
	id, _ := made.json["id"].(string)
	created := made.json["createdAt"]
	if made.status != 201 || id == "" {
		t.Fatalf("create: %d %s", made.status, made.body)
	}
	got := call(t, "PATCH", hs.URL+"/orders/"+id, js, `{"note":null,"meta":{"a":null},"id":"ord_hijack","createdAt":"x"}`)
	meta, _ := got.json["meta"].(map[string]any)
	if got.status != 200 || got.json["id"] != id || got.json["createdAt"] != created || got.json["note"] != nil || meta["a"] != nil || meta["b"] != "2" {
		t.Fatalf("update: %d %s; want id %s and createdAt %v kept, note null, meta without a", got.status, got.body, id, created)
	}
	if _, has := meta["a"]; has {
		t.Errorf("meta after {a: null}: %v; want a taken out", meta)
	}
	if got := call(t, "GET", hs.URL+"/orders/"+id, "", ""); got.body != call(t, "GET", hs.URL+"/orders/"+id, "", "").body || got.json["id"] != id || got.json["note"] != nil {
		t.Errorf("read after update: %d %s", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/orders/ord_hijack", "", ""); got.status != 404 {
		t.Errorf("read by the id the update sent: %d %s; want 404", got.status, got.body)
	}
}

// TestPutReplaces: a PUT sends the object's whole new state, so a property
// its body leaves out is gone (a PATCH of the same body merges), while the
// id and what the server sets (createdAt) stay. Before, a PUT merged as a
// PATCH does and the note survived its replacement.
func TestPutReplaces(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, idsDoc, nil)
	js := "application/json"
	made := call(t, "POST", hs.URL+"/orders", js, `{"note":"hello","meta":{"a":"1"}}`)
	id, _ := made.json["id"].(string)
	if made.status != 201 || id == "" {
		t.Fatalf("create: %d %s", made.status, made.body)
	}
	patched := call(t, "PATCH", hs.URL+"/orders/"+id, js, `{"meta":{"b":"2"}}`)
	if meta, _ := patched.json["meta"].(map[string]any); patched.status != 200 || patched.json["note"] != "hello" || meta["a"] != "1" || meta["b"] != "2" {
		t.Fatalf("PATCH: %d %s; want the note kept and meta merged", patched.status, patched.body)
	}
	put := call(t, "PUT", hs.URL+"/orders/"+id, js, `{"meta":{"c":"3"}}`)
	meta, _ := put.json["meta"].(map[string]any)
	if _, has := put.json["note"]; put.status != 200 || has || len(meta) != 1 || meta["c"] != "3" || put.json["id"] != id || put.json["createdAt"] != made.json["createdAt"] {
		t.Fatalf("PUT: %d %s; want only meta {c: 3} beside id and createdAt %v", put.status, put.body, made.json["createdAt"])
	}
	if got := call(t, "GET", hs.URL+"/orders/"+id, "", ""); got.body != put.body {
		t.Errorf("read after PUT: %s; want %s", got.body, put.body)
	}
	// What one PUT left out, the next one gives back.
	if again := call(t, "PUT", hs.URL+"/orders/"+id, js, `{"note":"back"}`); again.status != 200 || again.json["note"] != "back" || again.json["meta"] != nil {
		t.Errorf("second PUT: %d %s; want the note back and no meta", again.status, again.body)
	}
}

// TestNextCursor: a list whose page says nextCursor (and takes a cursor
// parameter) is paged by them: nextCursor names the page's last item,
// cursor starts after it, and the last page's is null, so a client that
// pages until it is null sees every item once (before, nextCursor was the
// placeholder "string" on every page, and the client looped forever).
func TestNextCursor(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, idsDoc, nil)
	for range 5 {
		if got := call(t, "POST", hs.URL+"/todos", "application/json", `{"title":"t"}`); got.status != 201 {
			t.Fatalf("create: %d %s", got.status, got.body)
		}
	}
	var ids []float64
	next := ""
	for page := 0; ; page++ {
		if page == 5 {
			t.Fatalf("still paging after 5 pages of 2 (ids %v); want nextCursor null on the third", ids)
		}
		url := hs.URL + "/todos?limit=2"
		if next != "" {
			url += "&cursor=" + next
		}
		got := call(t, "GET", url, "", "")
		items, _ := got.json["items"].([]any)
		if got.status != 200 || len(items) == 0 {
			t.Fatalf("page %d: %d %s", page, got.status, got.body)
		}
		for _, it := range items {
			ids = append(ids, it.(map[string]any)["id"].(float64))
		}
		c, has := got.json["nextCursor"]
		if !has {
			t.Fatalf("page %d: %s; want a nextCursor", page, got.body)
		}
		if c == nil {
			break
		}
		next = fmt.Sprint(c)
	}
	if fmt.Sprint(ids) != "[5 4 3 2 1]" {
		t.Errorf("ids paged %v; want [5 4 3 2 1], newest first, each once", ids)
	}
}

// TestGeneratedValuesKeepConstraints: a value made from a schema alone
// keeps the schema's constraints (before: "string" for a pattern, a
// maxLength 3, a minLength 20 and an ipv4; 10 for a multipleOf 7; 1 for
// an exclusiveMaximum 1; one item for a minItems 2), and a default wins
// over the enum's first value. The answer is checked by
// libopenapi-validator's own response validation.
func TestGeneratedValuesKeepConstraints(t *testing.T) {
	t.Parallel()
	doc := `openapi: 3.1.0
info: {title: constraints, version: "1"}
paths:
  /thing:
    get:
      operationId: getThing
      responses:
        "200":
          description: it
          content:
            application/json:
              schema:
                type: object
                required: [code, short, long, qty, below, ratio, tags, ip, level, name, unit, step, greek, huge, tiny, half]
                properties:
                  code: {type: string, pattern: "^[A-Z]{3}-[0-9]{2}$"}
                  short: {type: string, maxLength: 3}
                  long: {type: string, minLength: 20}
                  qty: {type: integer, minimum: 1, multipleOf: 7}
                  below: {type: integer, exclusiveMaximum: 0}
                  ratio: {type: number, minimum: 2, exclusiveMaximum: 2.5}
                  tags: {type: array, minItems: 2, items: {type: string}}
                  ip: {type: string, format: ipv4}
                  level: {type: integer, enum: [1, 2, 3], default: 2}
                  name: {type: string, maxLength: 10, pattern: "^[A-Za-z]+( [A-Za-z]+)*$"}
                  unit: {type: number, exclusiveMinimum: 0, exclusiveMaximum: 1}
                  step: {type: number, minimum: 0.3, multipleOf: 0.1}
                  greek: {type: string, pattern: "^[α-ω]{3}$", maxLength: 3}
                  huge: {type: number, exclusiveMinimum: 1.0e17}
                  tiny: {type: number, minimum: 1, multipleOf: 1.0e-320}
                  half: {type: integer, minimum: 2.5}
`
	spec := filepath.Join(t.TempDir(), "openapi.yaml")
	if err := os.WriteFile(spec, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, hs := serveSpec(t, spec, nil)
	got := call(t, "GET", hs.URL+"/thing", "", "")
	conformanceOf(t, spec).check(t, "GET", "/thing", got)
	tags, _ := got.json["tags"].([]any)
	if got.status != 200 || got.json["code"] != "AAA-00" || got.json["qty"] != float64(7) || got.json["below"] != float64(-1) || len(tags) != 2 || got.json["ip"] != "192.0.2.1" || got.json["level"] != float64(2) ||
		got.json["unit"] != 0.5 || got.json["step"] != 0.3 || got.json["greek"] != "ααα" || got.json["half"] != float64(3) {
		t.Errorf("GET /thing: %d %s", got.status, got.body)
	}
}

// TestDeclaredResponseHeaders: the headers a response declares are sent,
// each made as a body's value is (an example, else from its schema), and
// a create's Location names the object made; a value cannot split the
// header. Before, none was sent, although the spec required Location.
func TestDeclaredResponseHeaders(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, idsDoc, nil)
	for want := 1; want <= 2; want++ {
		got := call(t, "POST", hs.URL+"/todos", "application/json", `{"title":"t"}`)
		if got.status != 201 || got.header.Get("Location") != fmt.Sprintf("/todos/%d", want) || got.header.Get("X-Rate-Limit") != "100" {
			t.Fatalf("create %d: %d %v %s; want Location /todos/%d and X-Rate-Limit 100", want, got.status, got.header, got.body, want)
		}
		if v := got.header.Values("X-Trace"); len(v) != 1 || v[0] != "abc  Set-Cookie: no" || got.header.Get("Set-Cookie") != "" {
			t.Errorf("X-Trace %q, Set-Cookie %q; want the example on one line", v, got.header.Get("Set-Cookie"))
		}
		// A list in the simple style; the answer's framing is the
		// server's, not the spec's example (Transfer-Encoding: gzip).
		if got.header.Get("X-Arr") != "a,b" || len(got.header.Values("Transfer-Encoding")) > 0 && got.header.Get("Transfer-Encoding") != "chunked" {
			t.Errorf("X-Arr %q, Transfer-Encoding %q; want a,b and no gzip", got.header.Get("X-Arr"), got.header.Values("Transfer-Encoding"))
		}
	}
}

// TestPreferUndeclaredCode: Prefer: code= naming a status the operation
// declares no response for (and no default) answers that status with a
// problem naming what it declares (before: an empty body), and a 204 with
// nothing; nothing is created.
func TestPreferUndeclaredCode(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, idsDoc, nil)
	got := call(t, "POST", hs.URL+"/todos", "application/json", `{"title":"t"}`, "Prefer", "code=418")
	if got.status != 418 || got.header.Get("Content-Type") != "application/problem+json" || !strings.Contains(got.body, "declares no 418 response and no default (it declares 201)") {
		t.Errorf("Prefer: code=418: %d %v %s", got.status, got.header, got.body)
	}
	got = call(t, "POST", hs.URL+"/todos?__code=204", "application/json", `{"title":"t"}`)
	if got.status != 204 || got.body != "" || got.header.Get("Content-Type") != "" {
		t.Errorf("__code=204: %d %v %q; want an empty 204", got.status, got.header, got.body)
	}
	if got := call(t, "POST", hs.URL+"/todos", "application/json", `{"title":"t"}`); got.json["id"] != float64(1) {
		t.Errorf("the first create after them: %s; want id 1 (nothing made before)", got.body)
	}
}
