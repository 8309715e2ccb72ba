package openapi_test

// Tests of what a create stores beside the values the request sent: the
// fields the client left out, and the fields the example or fixture does
// not have.

import (
	"testing"
)

// createdDoc is a 3.0 document whose create answers an example that
// has a description, a due date and no tag, as a vendor's example shows
// one object: the client's create need not have sent any of them.
const createdDoc = `openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /tasks:
    post:
      operationId: createTask
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [title]
              properties:
                title: {type: string}
                description: {type: string, nullable: true}
                due: {type: string, nullable: true}
                priority: {type: integer, nullable: true, default: 3}
                tag: {type: string}
                size: {type: integer}
                secret: {type: string}
                colour: {type: string}
                owner:
                  type: object
                  properties: {name: {type: string}, email: {type: string}}
      responses:
        '201':
          description: made
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Task'}
              example: {id: tsk_abcdefgh, title: Write, description: Something to do, due: '2024-01-01', priority: 1, closed_at: '2024-02-01', size: '2'}
  /tasks/{id}:
    parameters: [{name: id, in: path, required: true, schema: {type: string}}]
    patch:
      operationId: updateTask
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                owner:
                  type: object
                  properties: {name: {type: string}, email: {type: string}}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Task'}
    get:
      operationId: getTask
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Task'}
components:
  schemas:
    Task:
      type: object
      required: [id, title, description, due, priority, closed_at]
      properties:
        id: {type: string, readOnly: true}
        title: {type: string}
        description: {type: string, nullable: true}
        due: {type: string, nullable: true}
        priority: {type: integer, nullable: true}
        closed_at: {type: string, nullable: true, readOnly: true}
        tag: {type: string}
        size: {type: string}
        secret: {type: string, writeOnly: true}
        owner:
          type: object
          required: [name]
          properties: {name: {type: string}, email: {type: string}, team: {type: string}}
`

// TestCreateNullsUnsentNullable: a create answered, and stored, the
// example's values for the nullable fields the client did not send (this
// task's description "Something to do", read back as if the client had
// written it; GitHub's issue assignee and milestone, below). A provider
// stores what it was sent: a nullable field the request's body could
// have sent and did not is null, or the body's default for it; a field
// the body cannot send (readOnly, or one the body does not list) stays
// the server's, as the example has it.
func TestCreateNullsUnsentNullable(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, createdDoc, nil)
	made := call(t, "POST", hs.URL+"/tasks", "application/json", `{"title":"Plan"}`)
	id, _ := made.json["id"].(string)
	if made.status != 201 || id == "" || id == "tsk_abcdefgh" {
		t.Fatalf("create: %d %s; want 201 with a fresh id", made.status, made.body)
	}
	for _, a := range []answer{made, call(t, "GET", hs.URL+"/tasks/"+id, "", "")} {
		for field, want := range map[string]any{
			"title":       "Plan",
			"description": nil,          // not sent, nullable: null, not the example's
			"due":         nil,          // the same
			"priority":    3.0,          // not sent: the body's default
			"closed_at":   "2024-02-01", // the server's (readOnly): as the example has it
		} {
			if got, has := a.json[field]; !has || got != want {
				t.Errorf("%s = %#v (present %v); want %#v in %s", field, got, has, want, a.body)
			}
		}
	}
	// What was sent is still what is answered.
	sent := call(t, "POST", hs.URL+"/tasks", "application/json", `{"title":"Plan","description":"d","due":null,"priority":null}`)
	if sent.json["description"] != "d" || sent.json["due"] != nil || sent.json["priority"] != nil {
		t.Errorf("create with values: %s; want description d, due and priority null", sent.body)
	}
}

// TestCreateEchoesWhatTheExampleLacks: a value sent that the example (or
// fixture) has no field for was left out of the created object, though
// the answer's schema has the field (this task's tag; Mux's passthrough,
// below): reflection only replaced the example's values. A value sent is
// answered and stored where the answer's schema has a field of its name
// and type; not one the schema lacks, a writeOnly one, or one of another
// type; an object sent is the fields sent, no placeholders beside them.
func TestCreateEchoesWhatTheExampleLacks(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, createdDoc, nil)
	made := call(t, "POST", hs.URL+"/tasks", "application/json", `{"title":"Plan","tag":"home","size":5,"secret":"s3","colour":"red","owner":{"name":"Ann"}}`)
	id, _ := made.json["id"].(string)
	if made.status != 201 || id == "" || id == "tsk_abcdefgh" {
		t.Fatalf("create: %d %s; want 201 with a fresh id", made.status, made.body)
	}
	for _, a := range []answer{made, call(t, "GET", hs.URL+"/tasks/"+id, "", "")} {
		for field, want := range map[string]any{
			"title": "Plan",
			"tag":   "home", // sent, the example lacks it
			"size":  "2",    // sent as an integer, a string in the answer: the example's
		} {
			if got, has := a.json[field]; !has || got != want {
				t.Errorf("%s = %#v (present %v); want %#v in %s", field, got, has, want, a.body)
			}
		}
		for _, field := range []string{"secret", "colour"} { // writeOnly; not in the answer's schema
			if _, has := a.json[field]; has {
				t.Errorf("%s is in %s; want it left out", field, a.body)
			}
		}
		owner, _ := a.json["owner"].(map[string]any)
		if len(owner) != 1 || owner["name"] != "Ann" {
			t.Errorf("owner = %v; want the name sent alone, no placeholder email or team", a.json["owner"])
		}
	}
}

// TestUpdateSetsAnObjectTheItemLacks: an update that sends an object for
// a field the stored item lacks (an owner, where the create sent none)
// stored nothing: the placeholder the object went into no longer equalled
// what was sent, and was taken out as a value that did not fit. It stores
// the fields sent, without the placeholder's others.
func TestUpdateSetsAnObjectTheItemLacks(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, createdDoc, nil)
	made := call(t, "POST", hs.URL+"/tasks", "application/json", `{"title":"Plan"}`)
	id, _ := made.json["id"].(string)
	if _, has := made.json["owner"]; made.status != 201 || has {
		t.Fatalf("create: %d %s; want 201 without an owner", made.status, made.body)
	}
	for _, method := range []string{"PATCH", "GET"} {
		got := call(t, method, hs.URL+"/tasks/"+id, "application/json", map[string]string{"PATCH": `{"owner":{"name":"Bo"}}`}[method])
		owner, _ := got.json["owner"].(map[string]any)
		if got.status != 200 || len(owner) != 1 || owner["name"] != "Bo" {
			t.Errorf("%s: %d %s; want the owner's name sent alone", method, got.status, got.body)
		}
	}
}
