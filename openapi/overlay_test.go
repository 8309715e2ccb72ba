package openapi_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/server"
)

// TestCatchAllBelowOperations: a YAML catch-all of negative priority (the
// Stripe example's "Unrecognized request URL") answers only what no
// operation does; one of priority 0 still wins over the operation it
// matches. With the generated routes at the lowest priority, the catch-all
// answered every request.
func TestCatchAllBelowOperations(t *testing.T) {
	t.Parallel()
	scenario := `openapi: {spec: openapi.yaml}
routes:
  - name: anything else
    path: '/{path:.*}'
    priority: -1
    unmatched: true
    respond: {status: 404, body: {error: unrecognized}}
  - name: old pets
    method: GET
    path: /pets/{id}
    when: {headers: {X-Old: 'yes'}}
    respond: {status: 410}
`
	_, hs := serveDir(t, petstore(t, scenario), openapi.Options{UnknownIDs: "generate"})
	for _, tc := range []struct {
		name, method, path string
		header             []string
		status             int
		want               string
	}{
		{"an operation", "GET", "/pets", nil, 200, `"object":"list"`},
		{"another operation", "GET", "/pets/pet_1", nil, 200, `"id":"pet_1"`},
		{"a YAML route of priority 0", "GET", "/pets/pet_1", []string{"X-Old", "yes"}, 410, ""},
		{"no operation", "GET", "/nothing", nil, 404, "unrecognized"},
		{"no operation for the method", "PUT", "/pets", nil, 404, "unrecognized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, tc.method, hs.URL+tc.path, "", "", tc.header...)
			if got.status != tc.status || !strings.Contains(got.body, tc.want) {
				t.Fatalf("%s %s: %d %s; want %d with %s", tc.method, tc.path, got.status, got.body, tc.status, tc.want)
			}
		})
	}
}

// TestOperationRoute: a YAML route that names an operation answers as the
// operation does (validation, generated answer, state) plus what it adds:
// its condition, a body laid on the answer and stored with it, the
// file's templated default headers, a missing: answer for an id never
// created, and load: from a collection of its own before the operation.
func TestOperationRoute(t *testing.T) {
	t.Parallel()
	scenario := `openapi: {spec: openapi.yaml}
defaults:
  template: true
  headers: {X-Echo: '{{ .Request.Headers.Get "X-In" }}'}
collections:
  legacy: [{id: pet_old, name: Old, age: 12}]
routes:
  - name: createPet, adopted
    method: POST
    path: /pets
    operation: createPet
    when: {headers: {X-Adopt: {present: true}}}
    respond:
      template: true
      body: {tag: '{{ .Request.Headers.Get "X-Adopt" }}', age: 1}
  - name: showPet
    method: GET
    path: /pets/{petId}
    operation: showPet
    respond:
      load: {collection: legacy, id: '{{ .Request.Vars.petId }}'}
      missing: {status: 404, template: true, body: {gone: '{{ .Request.Vars.petId }}'}}
`
	_, hs := serveDir(t, petstore(t, scenario), openapi.Options{})
	js := "application/json"
	adopted := call(t, "POST", hs.URL+"/pets", js, `{"name":"Rex","age":3}`, "X-Adopt", "shelter", "X-In", "hello")
	id, _ := adopted.json["id"].(string)
	if adopted.status != 201 || adopted.json["tag"] != "shelter" || adopted.json["name"] != "Rex" || adopted.json["age"] != float64(3) || id == "" {
		t.Fatalf("adopted: %d %s; want 201, the tag laid on, the request's name and age over it", adopted.status, adopted.body)
	}
	if v := adopted.header.Get("X-Echo"); v != "hello" {
		t.Errorf("X-Echo %q; want the templated default header rendered", v)
	}
	if got := call(t, "GET", hs.URL+"/pets/"+id, "", "", "X-In", "again"); got.status != 200 || got.json["tag"] != "shelter" || got.header.Get("X-Echo") != "again" {
		t.Errorf("read back: %d %s %v; want the stored pet with its tag, and the header on the generated answer", got.status, got.body, got.header)
	}
	if got := call(t, "POST", hs.URL+"/pets", js, `{"name":""}`, "X-Adopt", "shelter"); got.status != 400 {
		t.Errorf("an invalid body: %d %s; want the operation's validation (400)", got.status, got.body)
	}
	if got := call(t, "POST", hs.URL+"/pets", js, `{"name":"Plain"}`); got.status != 201 || got.json["tag"] == "shelter" {
		t.Errorf("without the condition: %d %s; want the generated route", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/pets/pet_old", "", ""); got.status != 200 || got.json["name"] != "Old" {
		t.Errorf("an item of the route's collection: %d %s", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/pets/pet_never", "", ""); got.status != 404 || got.json["gone"] != "pet_never" {
		t.Errorf("an id never created: %d %s; want the route's missing: answer", got.status, got.body)
	}
}

// TestOperationRouteEnvelope: a route naming an operation whose envelope:
// wraps the operation's answer answers the envelope, with its status:,
// while the operation stores what it made (laid with the route's body:)
// and the route's events see the operation's answer. A replay of the key
// answers the envelope again; an answer of the operation that is no 2xx
// (an id never created) is not wrapped.
func TestOperationRouteEnvelope(t *testing.T) {
	t.Parallel()
	scenario := `openapi: {spec: openapi.yaml}
webhooks: {collection: events}
routes:
  - name: createPet, refused
    method: POST
    path: /pets
    operation: createPet
    idempotency: {key: header.Idempotency-Key}
    respond:
      template: true
      body: {tag: refused}
      status: 409
      envelope: {error: {reason: 'no room for {{ .Answer.name }}', pet: '{{ .Answer }}'}}
    events: [{type: pet.refused}]
  - name: showPet
    method: GET
    path: /pets/{petId}
    operation: showPet
    respond:
      template: true
      envelope: {data: '{{ .Answer }}'}
  - name: deletePet
    method: DELETE
    path: /pets/{petId}
    operation: deletePet
    respond:
      status: 410
      envelope: {gone: true, was: '{{ .Answer }}'}
    events: [{type: pet.deleted}]
`
	_, hs := serveDir(t, petstore(t, scenario), openapi.Options{})
	js := "application/json"
	for attempt := range 2 {
		got := call(t, "POST", hs.URL+"/pets", js, `{"name":"Rex"}`, "Idempotency-Key", "k1")
		e, _ := got.json["error"].(map[string]any)
		pet, _ := e["pet"].(map[string]any)
		if got.status != 409 || e["reason"] != "no room for Rex" || pet["name"] != "Rex" || pet["tag"] != "refused" || got.header.Get("Content-Type") != js {
			t.Fatalf("attempt %d: %d %s (%s); want 409, the envelope with the pet made", attempt+1, got.status, got.body, got.header.Get("Content-Type"))
		}
		id, _ := pet["id"].(string)
		read := call(t, "GET", hs.URL+"/pets/"+id, "", "")
		if data, _ := read.json["data"].(map[string]any); read.status != 200 || data["id"] != id || data["tag"] != "refused" {
			t.Errorf("attempt %d: the pet read back: %d %s; want 200, the stored pet in the read's envelope", attempt+1, read.status, read.body)
		}
	}
	made := call(t, "POST", hs.URL+"/pets", js, `{"name":"Gone"}`, "Idempotency-Key", "k2")
	gone, _ := made.json["error"].(map[string]any)["pet"].(map[string]any)["id"].(string)
	// A delete answers 204 and no body: the envelope wraps nothing, and
	// the event is still the operation's 2xx.
	if got := call(t, "DELETE", hs.URL+"/pets/"+gone, "", ""); got.status != 410 || got.json["gone"] != true {
		t.Errorf("delete: %d %s; want 410 and the envelope", got.status, got.body)
	}
	events := call(t, "GET", hs.URL+"/__admin/collections/events", "", "")
	var kept struct {
		Items []struct {
			Body struct {
				Type string
				Data struct{ Object map[string]any }
			}
		}
	}
	_ = json.Unmarshal([]byte(events.body), &kept)
	var types []string
	for _, it := range kept.Items {
		types = append(types, it.Body.Type)
	}
	if len(kept.Items) != 3 || kept.Items[0].Body.Type != "pet.refused" || kept.Items[0].Body.Data.Object["tag"] != "refused" || kept.Items[2].Body.Type != "pet.deleted" {
		t.Errorf("events %v: %s; want pet.refused for each pet (its object the pet, not the envelope; none for the replay), then pet.deleted", types, events.body)
	}
	if got := call(t, "GET", hs.URL+"/pets/pet_never", "", ""); got.status != 404 || strings.Contains(got.body, `"data"`) {
		t.Errorf("an id never created: %d %s; want the operation's 404, not wrapped", got.status, got.body)
	}
}

// TestOperationRouteRefuse: a route naming an operation refuses it when
// the object it acts on, as stored, is in a state its refuse: lists: the
// first refusal that holds answers (seeing the stored object as .Item),
// the operation does not run (the pet is still there), no event is sent,
// and a replay of the key answers the refusal again, with the route's
// headers. An object in another state, and an id never created, go to
// the operation (its missing: answers the latter).
func TestOperationRouteRefuse(t *testing.T) {
	t.Parallel()
	scenario := `openapi: {spec: openapi.yaml}
webhooks: {collection: events}
x-busy: &busy {status: 409, template: true, body: {error: 'pet {{ .Item.name }} is {{ .Item.tag }}', pet: '{{ .Item }}'}}
routes:
  - name: deletePet
    method: DELETE
    path: /pets/{petId}
    operation: deletePet
    idempotency: {key: header.Idempotency-Key}
    respond: {headers: {X-Route: 'yes'}}
    missing: {status: 404, body: {gone: true}}
    refuse:
      - when: {item: {tag: sold}}
        respond: *busy
      - when: {item: {tag: reserved, age: 2}}
        respond: {status: 423, body: {error: locked}}
      - when: {item: {tag: reserved}}
        respond: *busy
      - when: {item: {tag: gone}}
        respond: {status: 200, body: {already: gone}}
    events: [{type: pet.deleted}]
`
	_, hs := serveDir(t, petstore(t, scenario), openapi.Options{})
	make := func(body string) string { return createPet(t, hs.URL, body) }
	sold, reserved, young, free := make(`{"name":"Rex","tag":"sold"}`), make(`{"name":"Max","tag":"reserved","age":5}`), make(`{"name":"Bo","tag":"reserved","age":2}`), make(`{"name":"Ida","tag":"free"}`)
	if got := call(t, "DELETE", hs.URL+"/pets/"+make(`{"name":"Al","tag":"gone"}`), "", ""); got.status != 200 || got.json["already"] != "gone" {
		t.Errorf("a refusal that answers 200: %d %s", got.status, got.body)
	}
	for attempt := range 2 {
		got := call(t, "DELETE", hs.URL+"/pets/"+sold, "", "", "Idempotency-Key", "k-sold")
		pet, _ := got.json["pet"].(map[string]any)
		if got.status != 409 || got.json["error"] != "pet Rex is sold" || pet["id"] != sold {
			t.Fatalf("attempt %d: deleting a sold pet: %d %s; want 409 and the stored pet in the refusal", attempt+1, got.status, got.body)
		}
	}
	if got := call(t, "DELETE", hs.URL+"/pets/"+reserved, "", ""); got.status != 409 || got.json["error"] != "pet Max is reserved" {
		t.Errorf("a reserved pet: %d %s; want the third refusal (the second's age does not hold)", got.status, got.body)
	}
	// A refusal and a missing: answer of fixed text, replayed, keep the
	// route's headers (the answer stored is the one sent).
	for attempt := range 2 {
		if got := call(t, "DELETE", hs.URL+"/pets/"+young, "", "", "Idempotency-Key", "k-young"); got.status != 423 || got.json["error"] != "locked" || got.header.Get("X-Route") != "yes" {
			t.Errorf("attempt %d: a reserved pet aged 2: %d %s %v; want the second refusal, the first that holds, with the route's header", attempt+1, got.status, got.body, got.header)
		}
		if got := call(t, "DELETE", hs.URL+"/pets/pet_never", "", "", "Idempotency-Key", "k-never"); got.status != 404 || got.json["gone"] != true || got.header.Get("X-Route") != "yes" {
			t.Errorf("attempt %d: an id never created: %d %s %v; want the route's missing: answer, with the route's header", attempt+1, got.status, got.body, got.header)
		}
	}
	for _, id := range []string{sold, reserved, young} {
		if got := call(t, "GET", hs.URL+"/pets/"+id, "", ""); got.status != 200 {
			t.Errorf("pet %s after its refused delete: %d %s; want it still stored", id, got.status, got.body)
		}
	}
	if got := call(t, "DELETE", hs.URL+"/pets/"+free, "", ""); got.status != 204 {
		t.Errorf("a pet in no refused state: %d %s; want the operation's 204", got.status, got.body)
	}
	events := call(t, "GET", hs.URL+"/__admin/collections/events", "", "")
	var kept struct {
		Items []struct{ Body struct{ Type string } }
	}
	_ = json.Unmarshal([]byte(events.body), &kept)
	if len(kept.Items) != 1 || kept.Items[0].Body.Type != "pet.deleted" {
		t.Errorf("events: %s; want one pet.deleted, for the pet deleted, and none for the refusals (the one answering 200 included)", events.body)
	}
}

// TestOperationRouteRefuseHolds: a refusal's when: holds: is a template
// that must render true. On a create (which acts on no stored object) it
// tests the request: the refusal answers, nothing is stored, no event is
// sent, and a key replays the refusal. On a delete it is tested with
// item:, both must hold, and it sees the stored object as .Item. A holds:
// that renders neither true nor false is a failing template: a 500
// problem naming it, and the operation does not run.
func TestOperationRouteRefuseHolds(t *testing.T) {
	t.Parallel()
	scenario := `openapi: {spec: openapi.yaml}
webhooks: {collection: events}
routes:
  - name: createPet
    method: POST
    path: /pets
    operation: createPet
    idempotency: {key: header.Idempotency-Key}
    refuse:
      - when: {holds: '{{ with .Request.JSON.age }}{{ gt (int .) 30 }}{{ end }}'}
        respond: {status: 422, template: true, body: {error: 'too old: {{ .Request.JSON.age }}'}}
      - when: {holds: '{{ if eq .Request.JSON.name "Tag" }}{{ .Request.JSON.tag }}{{ end }}'}
        respond: {status: 400, body: {error: never}}
    events: [{type: pet.created}]
  - name: deletePet
    method: DELETE
    path: /pets/{petId}
    operation: deletePet
    refuse:
      - when: {item: {tag: senior}, holds: '{{ gt (int .Item.age) 10 }}'}
        respond: {status: 409, template: true, body: {error: '{{ .Item.name }} stays'}}
    events: [{type: pet.deleted}]
`
	_, hs := serveDir(t, petstore(t, scenario), openapi.Options{})
	js := "application/json"
	for attempt := range 2 {
		got := call(t, "POST", hs.URL+"/pets", js, `{"name":"Old","age":31}`, "Idempotency-Key", "k-old")
		if got.status != 422 || got.json["error"] != "too old: 31" {
			t.Fatalf("attempt %d: a create the first refusal holds for: %d %s; want its 422", attempt+1, got.status, got.body)
		}
	}
	make := func(body string) string { return createPet(t, hs.URL, body) }
	old, young, other := make(`{"name":"Rex","tag":"senior","age":12}`), make(`{"name":"Bo","tag":"senior","age":3}`), make(`{"name":"Ida","age":30}`)
	if got := call(t, "GET", hs.URL+"/pets", "", ""); !strings.Contains(got.body, other) || strings.Contains(got.body, "Old") {
		t.Errorf("pets after a refused create: %s; want the three made, not the refused one", got.body)
	}
	if got := call(t, "DELETE", hs.URL+"/pets/"+old, "", ""); got.status != 409 || got.json["error"] != "Rex stays" {
		t.Errorf("deleting a senior aged 12: %d %s; want the refusal (item: and holds: both hold)", got.status, got.body)
	}
	if got := call(t, "DELETE", hs.URL+"/pets/"+young, "", ""); got.status != 204 {
		t.Errorf("deleting a senior aged 3: %d %s; want the operation's 204 (holds: does not)", got.status, got.body)
	}
	// The second refusal renders Tag's tag, neither true nor false.
	got := call(t, "POST", hs.URL+"/pets", js, `{"name":"Tag","tag":"cat"}`)
	if got.status != 500 || !strings.Contains(got.body, "when.holds") || !strings.Contains(got.body, `\"cat\"`) {
		t.Errorf("a holds: rendering \"cat\": %d %s; want a 500 problem naming when.holds and what it rendered", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/pets", "", ""); strings.Contains(got.body, "Tag") {
		t.Errorf("pets after a failing holds: %s; want nothing stored", got.body)
	}
	events := call(t, "GET", hs.URL+"/__admin/collections/events", "", "")
	var kept struct {
		Items []struct{ Body struct{ Type string } }
	}
	_ = json.Unmarshal([]byte(events.body), &kept)
	var types []string
	for _, it := range kept.Items {
		types = append(types, it.Body.Type)
	}
	if want := []string{"pet.created", "pet.created", "pet.created", "pet.deleted"}; !slices.Equal(types, want) {
		t.Errorf("events %v; want %v: none for the refusals or the failed template", types, want)
	}
}

// TestOperationRouteOverride: a route naming an operation lays its
// override: on the answer after the request's values, so that what the
// request sent does not show through, on what a create stores too; its
// body: is laid before them and does not hide them. On a read, the
// override is on the answer only.
func TestOperationRouteOverride(t *testing.T) {
	t.Parallel()
	scenario := `openapi: {spec: openapi.yaml}
routes:
  - name: createPet
    method: POST
    path: /pets
    operation: createPet
    respond:
      body: {tag: laid, age: 1}
      override: {tag: forced, name: null}
  - name: showPet, hidden
    method: GET
    path: /pets/{petId}
    operation: showPet
    when: {headers: {X-Hide: {present: true}}}
    respond:
      override: {age: 0}
`
	_, hs := serveDir(t, petstore(t, scenario), openapi.Options{})
	made := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Rex","tag":"mine","age":3}`)
	id, _ := made.json["id"].(string)
	if name, set := made.json["name"]; made.status != 201 || id == "" || made.json["tag"] != "forced" || !set || name != nil || made.json["age"] != float64(3) {
		t.Fatalf("create: %d %s; want the override over the request's tag and name, the request's age over the laid body", made.status, made.body)
	}
	read := call(t, "GET", hs.URL+"/pets/"+id, "", "")
	if read.status != 200 || read.json["tag"] != "forced" || read.json["name"] != nil || read.json["age"] != float64(3) {
		t.Errorf("read back: %d %s; want what the create answered, stored", read.status, read.body)
	}
	if got := call(t, "GET", hs.URL+"/pets/"+id, "", "", "X-Hide", "1"); got.status != 200 || got.json["age"] != float64(0) {
		t.Errorf("a read with an override: %d %s; want age 0", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/pets/"+id, "", ""); got.json["age"] != float64(3) {
		t.Errorf("read again: %s; want the stored age, 3: a read's override is on its answer only", got.body)
	}
}

// TestOperationRouteOverrideTemplate: with template: true, override: is
// a template that sees the request and the stored object (.Item), as
// body: does: what it renders replaces what the request sent, stored too
// by a create.
func TestOperationRouteOverrideTemplate(t *testing.T) {
	t.Parallel()
	scenario := `openapi: {spec: openapi.yaml}
routes:
  - name: createPet
    method: POST
    path: /pets
    operation: createPet
    respond:
      template: true
      override: {tag: '{{ lower .Request.JSON.tag }}', age: '{{ .Request.JSON.age }}'}
  - name: showPet, loud
    method: GET
    path: /pets/{petId}
    operation: showPet
    when: {headers: {X-Loud: {present: true}}}
    respond:
      template: true
      override: {name: '{{ upper .Item.name }}'}
`
	_, hs := serveDir(t, petstore(t, scenario), openapi.Options{})
	made := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Rex","tag":"MINE","age":3}`)
	id, _ := made.json["id"].(string)
	if made.status != 201 || id == "" || made.json["tag"] != "mine" || made.json["age"] != float64(3) {
		t.Fatalf("create: %d %s; want the rendered override (tag mine, age the number 3)", made.status, made.body)
	}
	if read := call(t, "GET", hs.URL+"/pets/"+id, "", ""); read.json["tag"] != "mine" {
		t.Errorf("read back: %d %s; want tag mine, stored", read.status, read.body)
	}
	if got := call(t, "GET", hs.URL+"/pets/"+id, "", "", "X-Loud", "1"); got.status != 200 || got.json["name"] != "REX" {
		t.Errorf("a read with an override of .Item: %d %s; want name REX", got.status, got.body)
	}
}

// TestOperationRouteCases: cases: choose the operation's response by the
// object it acts on, as stored, once no refusal answered; the operation
// runs, the route's headers go on its answer, and the route's events see
// it.
func TestOperationRouteCases(t *testing.T) {
	t.Parallel()
	scenario := `openapi: {spec: openapi.yaml}
webhooks: {collection: events}
routes:
  - name: showPet
    method: GET
    path: /pets/{petId}
    operation: showPet
    respond: {headers: {X-Route: 'yes'}}
    refuse:
      - when: {item: {tag: sold}}
        respond: {status: 410, body: {error: sold}}
    cases:
      - when: {item: {tag: secret}}
        respond: {override: {name: null}}
      - when: {item: {tag: wrapped}}
        respond: {template: true, status: 203, envelope: {pet: '{{ .Answer }}', was: '{{ .Item.tag }}'}}
      - when: {item: {tag: secret}}
        respond: {override: {name: second}}
    events: [{type: pet.read, when: {json: {tag: secret}}}]
  - name: showPet, in steps
    method: GET
    path: /pets/{petId}
    operation: showPet
    priority: 1
    when: {headers: {X-Steps: {present: true}}}
    responses:
      - {headers: {X-Step: '1'}, missing: {status: 404, body: {which: A}}}
      - {headers: {X-Step: '2'}, missing: {status: 404, body: {which: B}}}
    cases:
      - when: {item: {tag: secret}}
        respond: {override: {name: null}}
`
	_, hs := serveDir(t, petstore(t, scenario), openapi.Options{})
	make := func(body string) string { return createPet(t, hs.URL, body) }
	secret, wrapped, plain, sold := make(`{"name":"Rex","tag":"secret"}`), make(`{"name":"Max","tag":"wrapped"}`), make(`{"name":"Bo","tag":"plain"}`), make(`{"name":"Al","tag":"sold"}`)
	got := call(t, "GET", hs.URL+"/pets/"+secret, "", "")
	if name, set := got.json["name"]; got.status != 200 || !set || name != nil || got.json["id"] != secret || got.header.Get("X-Route") != "yes" {
		t.Errorf("a secret pet: %d %s %v; want the first case that holds: its name overridden, with the route's header", got.status, got.body, got.header)
	}
	got = call(t, "GET", hs.URL+"/pets/"+wrapped, "", "")
	pet, _ := got.json["pet"].(map[string]any)
	if got.status != 203 || got.json["was"] != "wrapped" || pet["id"] != wrapped || pet["name"] != "Max" || got.header.Get("X-Route") != "yes" {
		t.Errorf("a wrapped pet: %d %s; want the second case's envelope and status, with the route's header", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/pets/"+plain, "", ""); got.status != 200 || got.json["name"] != "Bo" {
		t.Errorf("a pet no case holds for: %d %s; want the route's own answer", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/pets/"+sold, "", ""); got.status != 410 {
		t.Errorf("a sold pet: %d %s; want the refusal, tried before the cases", got.status, got.body)
	}
	// A case without a missing: of its own answers the 404 with the
	// missing: of the step it answers in.
	for i, want := range []string{"A", "B"} {
		if got := call(t, "GET", hs.URL+"/pets/"+secret, "", "", "X-Steps", "1", "Prefer", "code=404"); got.status != 404 || got.json["which"] != want {
			t.Errorf("step %d, a 404 in a case: %d %s; want the step's missing:, %s", i+1, got.status, got.body, want)
		}
	}
	list := call(t, "GET", hs.URL+"/pets?tag=secret", "", "")
	if data, _ := list.json["data"].([]any); len(data) != 1 || data[0].(map[string]any)["name"] != "Rex" {
		t.Errorf("the secret pet listed: %s; want its stored name, Rex: a read's case is on its answer only", list.body)
	}
	events := call(t, "GET", hs.URL+"/__admin/collections/events", "", "")
	var kept struct {
		Items []struct{ Body struct{ Type string } }
	}
	_ = json.Unmarshal([]byte(events.body), &kept)
	if len(kept.Items) != 1 || kept.Items[0].Body.Type != "pet.read" {
		t.Errorf("events: %s; want one pet.read, for the secret pet's answer", events.body)
	}
}

// TestOperationRouteNarrowedPath: a route written for an operation may
// narrow what a path variable takes ({petId:pet_vip_.+}); it answers
// those ids, the operation's other route the rest.
func TestOperationRouteNarrowedPath(t *testing.T) {
	t.Parallel()
	_, hs := serveDir(t, petstore(t, `openapi: {spec: openapi.yaml}
routes:
  - name: showPet, a VIP
    method: GET
    path: '/pets/{petId:pet_vip_[a-z]+}'
    operation: showPet
    respond: {headers: {X-VIP: 'yes'}, body: {tag: vip}}
`), openapi.Options{UnknownIDs: "generate"})
	if got := call(t, "GET", hs.URL+"/pets/pet_vip_rex", "", ""); got.status != 200 || got.json["id"] != "pet_vip_rex" || got.json["tag"] != "vip" || got.header.Get("X-VIP") != "yes" {
		t.Errorf("a VIP id: %d %s %v; want the narrowed route's answer, with the id", got.status, got.body, got.header)
	}
	if got := call(t, "GET", hs.URL+"/pets/pet_rex", "", ""); got.status != 200 || got.json["tag"] == "vip" || got.header.Get("X-VIP") != "" {
		t.Errorf("another id: %d %s %v; want the generated route's answer", got.status, got.body, got.header)
	}
}

// withPetOps adds to the petstore in dir GET /pets/mine (a literal path
// beside /pets/{petId}) and POST /pets/{petId}/adopt (an action).
func withPetOps(t *testing.T, dir string) {
	t.Helper()
	spec := filepath.Join(dir, "openapi.yaml")
	b, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	more := `  /pets/mine:
    get:
      operationId: listMine
      responses:
        "200":
          description: mine
          content:
            application/json:
              schema: {type: object, properties: {mine: {const: true}}}
  /pets/{petId}/adopt:
    post:
      operationId: adoptPet
      parameters:
        - {name: petId, in: path, required: true, schema: {type: string}}
      responses:
        "200":
          description: adopted
          content:
            application/json:
              schema: {$ref: "./schemas.yaml#/Pet"}
components:
`
	out := strings.Replace(string(b), "components:\n", more, 1)
	if out == string(b) {
		t.Fatal("no components: in the petstore")
	}
	if err := os.WriteFile(spec, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOperationRouteCreateUnknown: unknownIds: create makes an action on
// an id never created act on an object made from the spec, stored with
// that id, which .Item, refuse: and cases: see from the first request;
// a deleted id stays a 404. A route narrowing a variable answers those
// ids and leaves the spec's literal paths to their operations.
func TestOperationRouteCreateUnknown(t *testing.T) {
	t.Parallel()
	dir := petstore(t, `openapi: {spec: openapi.yaml}
routes:
  - name: adoptPet, a shelter pet
    method: POST
    path: '/pets/{petId:shelter_[a-z]+}/adopt'
    operation: adoptPet
    unknownIds: create
    respond:
      template: true
      body: {tag: 'adopted-{{ .Item.id }}'}
    refuse:
      - when: {item: {id: shelter_closed}}
        respond: {status: 409, body: {error: closed}}
    cases:
      - when: {item: {id: shelter_vip}}
        respond: {override: {tag: vip}}
  - name: showPet, narrowed
    method: GET
    path: '/pets/{petId:[a-z_]+}'
    operation: showPet
`)
	withPetOps(t, dir)
	_, hs := serveDir(t, dir, openapi.Options{})
	got := call(t, "POST", hs.URL+"/pets/shelter_rex/adopt", "", "")
	if got.status != 200 || got.json["id"] != "shelter_rex" || got.json["tag"] != "adopted-shelter_rex" {
		t.Fatalf("adopt a pet never created: %d %s; want one made with the id, .Item seeing it", got.status, got.body)
	}
	if read := call(t, "GET", hs.URL+"/pets/shelter_rex", "", ""); read.status != 200 || read.json["tag"] != "adopted-shelter_rex" {
		t.Errorf("read back: %d %s; want it stored", read.status, read.body)
	}
	if got := call(t, "POST", hs.URL+"/pets/shelter_closed/adopt", "", ""); got.status != 409 {
		t.Errorf("a refused id, first request: %d %s; want the refusal, tested on the object as made", got.status, got.body)
	}
	if got := call(t, "POST", hs.URL+"/pets/shelter_vip/adopt", "", ""); got.status != 200 || got.json["tag"] != "vip" {
		t.Errorf("a case's id, first request: %d %s; want the case", got.status, got.body)
	}
	if got := call(t, "POST", hs.URL+"/pets/other_rex/adopt", "", ""); got.status != 404 {
		t.Errorf("an id the route does not take: %d %s; want the operation's 404", got.status, got.body)
	}
	if got := call(t, "DELETE", hs.URL+"/pets/shelter_rex", "", ""); got.status != 204 {
		t.Fatalf("delete: %d %s", got.status, got.body)
	}
	if got := call(t, "POST", hs.URL+"/pets/shelter_rex/adopt", "", ""); got.status != 404 {
		t.Errorf("adopt a deleted pet: %d %s; want the 404", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/pets/mine", "", ""); got.status != 200 || got.json["mine"] != true {
		t.Errorf("GET /pets/mine: %d %s; want listMine, the literal path, before the narrowed {petId}", got.status, got.body)
	}
}

// TestOperationRouteOverrideUndeclared: Prefer: code= naming a 2xx the
// operation does not declare answers its default response, an error: the
// route's body: and override: are laid on its success only.
func TestOperationRouteOverrideUndeclared(t *testing.T) {
	t.Parallel()
	dir := petstore(t, `openapi: {spec: openapi.yaml}
webhooks: {collection: events}
routes:
  - name: createPet, wrapped
    method: POST
    path: /pets
    operation: createPet
    when: {headers: {X-Wrap: {present: true}}}
    respond:
      template: true
      envelope: {wrapped: '{{ .Answer }}'}
    events: [{type: pet.created}]
  - name: createPet
    method: POST
    path: /pets
    operation: createPet
    respond:
      body: {tag: laid}
      override: {name: forced}
    events: [{type: pet.created}]
`)
	spec := filepath.Join(dir, "openapi.yaml")
	b, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	declared := `          description: created
          content:
            application/json:
              schema: {$ref: "./schemas.yaml#/Pet"}
`
	withDefault := strings.Replace(string(b), declared, declared+`        default:
          description: an error
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Error"}
`, 1)
	if withDefault == string(b) {
		t.Fatal("createPet's 201 not found in the spec")
	}
	if err := os.WriteFile(spec, []byte(withDefault), 0o644); err != nil {
		t.Fatal(err)
	}
	_, hs := serveDir(t, dir, openapi.Options{})
	if got := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Rex"}`); got.status != 201 || got.json["tag"] != "laid" || got.json["name"] != "forced" {
		t.Fatalf("create: %d %s; want the body and the override laid on the 201", got.status, got.body)
	}
	got := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Rex"}`, "Prefer", "code=202")
	_, tagged := got.json["tag"]
	_, named := got.json["name"]
	if got.status != 202 || tagged || named || got.json["message"] == nil {
		t.Errorf("Prefer: code=202: %d %s; want the default error, without the route's body or override", got.status, got.body)
	}
	got = call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Rex"}`, "Prefer", "code=202", "X-Wrap", "1")
	if _, wrapped := got.json["wrapped"]; got.status != 202 || wrapped || got.json["message"] == nil {
		t.Errorf("Prefer: code=202 on a route with an envelope: %d %s; want the default error, not wrapped", got.status, got.body)
	}
	events := call(t, "GET", hs.URL+"/__admin/collections/events", "", "")
	var kept struct{ Items []any }
	_ = json.Unmarshal([]byte(events.body), &kept)
	if len(kept.Items) != 1 {
		t.Errorf("events: %s; want one, for the create: none for the default errors", events.body)
	}
}

// TestOperationRouteEnvelopeSaves: a route whose envelope: wraps the
// operation's 2xx answer saves its save: entries, which see the
// operation's answer as .Response (as its events do), not the envelope:
// a Stripe decline's 402 saves the failed charge. remember gives the
// body, the envelope and the entries one value per answer, another for
// the next one; a replay saves nothing again.
func TestOperationRouteEnvelopeSaves(t *testing.T) {
	t.Parallel()
	scenario := `openapi: {spec: openapi.yaml}
routes:
  - name: createPet, refused
    method: POST
    path: /pets
    operation: createPet
    idempotency: {key: header.Idempotency-Key}
    respond:
      template: true
      body: {tag: &tag '{{ remember "tag" (print "t_" (randomHex 8)) }}'}
      status: 409
      envelope: {error: {tag: *tag, pet: '{{ .Answer }}'}}
      save:
        - {collection: notes, id: 'note_{{ .Response.JSON.id }}', body: {pet: '{{ .Response.JSON.id }}', status: '{{ .Response.Status }}', tag: *tag}}
`
	_, hs := serveDir(t, petstore(t, scenario), openapi.Options{})
	js := "application/json"
	var pets, tags []string
	for i, key := range []string{"k1", "k1", "k2"} {
		got := call(t, "POST", hs.URL+"/pets", js, `{"name":"Rex"}`, "Idempotency-Key", key)
		e, _ := got.json["error"].(map[string]any)
		pet, _ := e["pet"].(map[string]any)
		tag, _ := e["tag"].(string)
		if got.status != 409 || !strings.HasPrefix(tag, "t_") || pet["tag"] != tag {
			t.Fatalf("request %d: %d %s; want 409, the envelope's tag the pet's", i+1, got.status, got.body)
		}
		pets, tags = append(pets, pet["id"].(string)), append(tags, tag)
	}
	if pets[0] != pets[1] || tags[0] != tags[1] || pets[2] == pets[0] || tags[2] == tags[0] {
		t.Errorf("pets %v, tags %v; want the replay's the first's, the next answer's its own", pets, tags)
	}
	var notes struct {
		Items []struct {
			ID   string
			Body map[string]any
		}
	}
	got := call(t, "GET", hs.URL+"/__admin/collections/notes", "", "")
	_ = json.Unmarshal([]byte(got.body), &notes)
	if len(notes.Items) != 2 {
		t.Fatalf("notes: %s; want 2, none saved again by the replay", got.body)
	}
	for i, n := range notes.Items {
		pet, tag := pets[2*i], tags[2*i]
		if n.ID != "note_"+pet || n.Body["pet"] != pet || n.Body["status"] != float64(201) || n.Body["tag"] != tag {
			t.Errorf("note %d: %s %v; want one of pet %s, status 201 (the operation's, not the envelope's 409), tag %s", i, n.ID, n.Body, pet, tag)
		}
	}
}

// TestOperationRouteEnvelopeLimit: an envelope whose output passes
// --max-template-output (a typed leaf writes a whole answer at once) is a
// 500 naming the limit, as a body that passes it is.
func TestOperationRouteEnvelopeLimit(t *testing.T) {
	t.Parallel()
	dir := petstore(t, `openapi: {spec: openapi.yaml}
routes:
  - name: showPet
    method: GET
    path: /pets/{petId}
    operation: showPet
    respond:
      envelope: {a: '{{ .Answer }}', b: '{{ .Answer }}', c: '{{ .Answer }}', d: '{{ .Answer }}', e: '{{ .Answer }}', f: '{{ .Answer }}', g: '{{ .Answer }}'}
`)
	load := func() (*scenarios.Set, error) {
		set, err := scenarios.Load(filepath.Join(dir, "pets.yaml"))
		if err != nil {
			return nil, err
		}
		return set, openapi.Expand(set, openapi.Options{Cache: openapi.NewCache(), Extra: nil})
	}
	srv, err := server.New(server.Options{Load: load, MaxTemplateOutput: 200})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	made := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Rex"}`)
	id, _ := made.json["id"].(string)
	if got := call(t, "GET", hs.URL+"/pets/"+id, "", ""); got.status != 500 || !strings.Contains(got.body, "200 bytes") {
		t.Errorf("an envelope past the limit: %d %s; want a 500 naming the limit", got.status, got.body)
	}
}

// TestOperationRouteErrors: an operation: that names no operation, or a
// route whose method or path is not the operation's, or a response that
// makes an answer of its own, is refused at its position.
func TestOperationRouteErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, route, want string }{
		{"no such operation", "{name: x, method: POST, path: /pets, operation: createpet}", `pets.yaml:3:53: route "x": operation "createpet": no operation has this operationId (did you mean "createPet"?)`},
		{"another path", "{name: x, method: POST, path: /animals, operation: createPet}", `operation "createPet" is POST /pets`},
		{"another method", "{name: x, method: PUT, path: /pets, operation: createPet}", `operation "createPet" is POST /pets`},
		{"another variable", "{name: x, method: GET, path: '/pets/{id:pet_.+}', operation: showPet}", `operation "showPet" is GET /pets/{petId}`},
		{"a narrowed variable taking /", "{name: x, method: GET, path: '/pets/{petId:vip_.+}', operation: showPet}", `path: variable {petId} may take a "/", which the operation's {petId} never does`},
		{"a narrowed variable taking nothing", "{name: x, method: GET, path: '/pets/{petId:(?:vip)?}', operation: showPet}", `path: variable {petId} may take an empty value`},
		{"a narrowed class taking /", "{name: x, method: GET, path: '/pets/{petId:[-./a-z]+}', operation: showPet}", `may take a "/"`},
		{"unknownIds: create on a read", "{name: x, method: GET, path: '/pets/{petId}', operation: showPet, unknownIds: create}", `unknownIds: create goes with an operation that updates or acts on a stored object; "showPet" does not`},
		{"unknownIds: generate on a route", "{name: x, method: POST, path: '/pets', operation: createPet, unknownIds: generate}", `unknownIds: want create`},
		{"unknownIds: without operation:", "{name: x, method: POST, path: '/pets', respond: {status: 201}, unknownIds: create}", `unknownIds: goes with operation:`},
		{"a status", "{name: x, method: POST, path: /pets, operation: createPet, respond: {status: 402}}", `respond.status: does not go with operation:`},
		{"an envelope that is neither a mapping nor a text", "{name: x, method: POST, path: /pets, operation: createPet, respond: {envelope: [declined]}}", `respond.envelope: wraps the operation's answer: want a mapping (a JSON template that sees the answer as .Answer: { error: { payment_intent: '{{ .Answer }}' } }) or a string (a text template), got a list`},
		{"an envelope with list:", "{name: x, method: GET, path: /pets, operation: listPets, respond: {list: {collection: c}, body: [], envelope: {a: 1}}}", `respond.envelope: does not go with list:`},
		{"an envelope with load:", "{name: x, method: GET, path: '/pets/{petId}', operation: showPet, respond: {load: {collection: c, id: x}, envelope: {a: 1}}}", `respond.envelope: does not go with load:`},
		{"an envelope without operation:", "{name: x, method: POST, path: /pets, respond: {envelope: {error: '{{ .Answer }}'}}}", `respond.envelope: goes with operation:`},
		{"a text body", "{name: x, method: POST, path: /pets, operation: createPet, respond: {body: declined}}", `respond.body: with operation:, body: is laid on the generated answer`},
		{"override without operation:", "{name: x, method: POST, path: /pets, respond: {status: 201, override: {tag: a}}}", `respond.override: goes with operation:`},
		{"override no mapping", "{name: x, method: POST, path: /pets, operation: createPet, respond: {override: forced}}", `respond.override: is laid on the operation's answer after the request's values`},
		{"override with list:", "{name: x, method: GET, path: /pets, operation: listPets, respond: {list: {collection: c}, body: [], override: {a: 1}}}", `respond.override: does not go with list:`},
		{"override with load:", "{name: x, method: GET, path: '/pets/{petId}', operation: showPet, respond: {load: {collection: c, id: x}, override: {a: 1}}}", `respond.override: does not go with load:`},
		{"cases without operation:", "{name: x, method: GET, path: '/pets/{petId}', respond: {status: 200}, cases: [{when: {item: {tag: a}}, respond: {status: 201}}]}", `cases: goes with operation:`},
		{"cases on a create", "{name: x, method: POST, path: /pets, operation: createPet, cases: [{when: {item: {tag: a}}, respond: {body: {tag: b}}}]}", `cases: operation "createPet" acts on no stored object`},
		{"a case with a delay", "{name: x, method: GET, path: '/pets/{petId}', operation: showPet, cases: [{when: {item: {tag: a}}, respond: {delay: 1s}}]}", `cases[0].respond.delay: is the route's`},
		{"a case with headers", "{name: x, method: GET, path: '/pets/{petId}', operation: showPet, cases: [{when: {item: {tag: a}}, respond: {headers: {X-A: b}}}]}", `cases[0].respond.headers: is the route's`},
		{"a case with load:", "{name: x, method: GET, path: '/pets/{petId}', operation: showPet, cases: [{when: {item: {tag: a}}, respond: {load: {collection: c, id: x}}}]}", `cases[0].respond.load: does not go with a case`},
		{"a case without item:", "{name: x, method: GET, path: '/pets/{petId}', operation: showPet, cases: [{when: {}, respond: {body: {tag: b}}}]}", `cases[0].when: item: or holds: is required`},
		{"a case with a text body", "{name: x, method: GET, path: '/pets/{petId}', operation: showPet, cases: [{when: {item: {tag: a}}, respond: {body: text}}]}", `cases[0].respond.body: with operation:, body: is laid on the generated answer`},
		{"refuse without operation:", "{name: x, method: DELETE, path: '/pets/{petId}', respond: {status: 204}, refuse: [{when: {item: {tag: sold}}, respond: {status: 409}}]}", `refuse: goes with operation:`},
		{"refuse not a list", "{name: x, method: DELETE, path: '/pets/{petId}', operation: deletePet, refuse: {when: {item: {tag: sold}}}}", `refuse: want a list of refusals`},
		{"a refusal without when:", "{name: x, method: DELETE, path: '/pets/{petId}', operation: deletePet, refuse: [{respond: {status: 409}}]}", `refuse[0]: when: is required`},
		{"a refusal's when: without item: or holds:", "{name: x, method: DELETE, path: '/pets/{petId}', operation: deletePet, refuse: [{when: {}, respond: {status: 409}}]}", `refuse[0].when: item: or holds: is required`},
		{"a refusal's holds: no template", "{name: x, method: DELETE, path: '/pets/{petId}', operation: deletePet, refuse: [{when: {holds: 'true'}, respond: {status: 409}}]}", `refuse[0].when.holds: want a template that renders true or false`},
		{"a refusal's holds: not a string", "{name: x, method: DELETE, path: '/pets/{petId}', operation: deletePet, refuse: [{when: {holds: {a: 1}}, respond: {status: 409}}]}", `refuse[0].when.holds:`},
		{"a refusal's holds: broken", "{name: x, method: DELETE, path: '/pets/{petId}', operation: deletePet, refuse: [{when: {holds: '{{ gt .Item.age }'}, respond: {status: 409}}]}", `refuse[0].when.holds:`},
		{"a case's holds: unknown function", "{name: x, method: DELETE, path: '/pets/{petId}', operation: deletePet, cases: [{when: {holds: '{{ nope .Item.age }}'}, respond: {status: 200}}]}", `cases[0].when.holds:`},
		{"a refusal's item no mapping", "{name: x, method: DELETE, path: '/pets/{petId}', operation: deletePet, refuse: [{when: {item: sold}, respond: {status: 409}}]}", `refuse[0].when.item: want a mapping`},
		{"a refusal without respond:", "{name: x, method: DELETE, path: '/pets/{petId}', operation: deletePet, refuse: [{when: {item: {tag: sold}}}]}", `refuse[0]: respond: is required`},
		{"a refusal with a delay", "{name: x, method: DELETE, path: '/pets/{petId}', operation: deletePet, refuse: [{when: {item: {tag: sold}}, respond: {status: 409, delay: 1s}}]}", `refuse[0].respond.delay: is the route's`},
		{"a refusal's delay by a merge key", "{name: x, method: DELETE, path: '/pets/{petId}', operation: deletePet, refuse: [{when: {item: {tag: sold}}, respond: {<<: {delay: 1s}, status: 409}}]}", `refuse[0].respond.delay: is the route's`},
		{"a refusal's fault by a merge key", "{name: x, method: DELETE, path: '/pets/{petId}', operation: deletePet, refuse: [{when: {item: {tag: sold}}, respond: {<<: {fault: {kind: connection-reset}}, status: 409}}]}", `refuse[0].respond.fault: is the route's`},
		{"a refusal with an envelope", "{name: x, method: DELETE, path: '/pets/{petId}', operation: deletePet, refuse: [{when: {item: {tag: sold}}, respond: {status: 409, envelope: {a: 1}}}]}", `refuse[0].respond.envelope: does not go with a refusal`},
		{"an empty refuse:", "{name: x, method: DELETE, path: '/pets/{petId}', operation: deletePet, refuse: []}", `refuse: the list is empty`},
		{"refuse: item: on a create", "{name: x, method: POST, path: /pets, operation: createPet, refuse: [{when: {holds: '{{ true }}'}, respond: {status: 400}}, {when: {item: {tag: sold}}, respond: {status: 409}}]}", `refuse[1]: when: item: tests the stored object the operation acts on, and "createPet" creates one`},
		{"refuse: on a list", "{name: x, method: GET, path: /pets, operation: listPets, refuse: [{when: {holds: '{{ true }}'}, respond: {status: 409}}]}", `refuse: operation "listPets" lists`},
		{"idempotency: on the operation's answer", "{name: x, method: POST, path: /pets, operation: createPet, respond: {idempotency: release}}", `respond.idempotency: does not go with an answer of operation:`},
		{"idempotency: on a case", "{name: x, method: GET, path: '/pets/{petId}', operation: showPet, cases: [{when: {item: {tag: a}}, respond: {idempotency: release}}]}", `cases[0].respond.idempotency: does not go with an answer of operation:`},
		{"idempotency: unknown on a refusal", "{name: x, method: DELETE, path: '/pets/{petId}', operation: deletePet, refuse: [{when: {item: {tag: sold}}, respond: {status: 409, idempotency: forget}}]}", `refuse[0].respond: unknown idempotency "forget" (want one of store, release)`},
		{"a save of the operation's answer", "{name: x, method: POST, path: /pets, operation: createPet, respond: {save: {collection: c, id: x}}}", `respond.save: the operation stores its answer itself: an entry here needs a body: of its own`},
		{"a save of a resource the document does not store", "{name: x, method: POST, path: /pets, operation: createPet, respond: {save: [{resource: Owner, id: x, body: {a: 1}}]}}", `pets.yaml:3:92: route "x": save: resource "Owner": no create of the document makes a resource its schema names (x-resourceId)`},
		{"a save of a resource without operation:", "{name: x, method: POST, path: /pets, respond: {status: 201, body: {a: 1}, save: [{resource: Pet, id: x, body: {a: 1}}]}}", `respond.save[0].resource: names a resource of the route's OpenAPI document: it goes with operation:`},
		{"a save of a resource without a body", "{name: x, method: POST, path: /pets, operation: createPet, respond: {save: [{resource: Pet, id: x}]}}", `respond.save[0]: resource: needs a body:`},
		{"a save of a resource with a scope", "{name: x, method: POST, path: /pets, operation: createPet, respond: {save: [{resource: Pet, scope: credential, id: x, body: {a: 1}}]}}", `respond.save[0].scope: does not go with resource:`},
		{"a save entry whose body is text", "{name: x, method: POST, path: /pets, operation: createPet, respond: {save: [{collection: c, id: x, body: text}]}}", `respond.save[0].body: is the item to save, a JSON template that sees the answer as .Response: want a mapping`},
		{"two saves of the answer", "{name: x, method: POST, path: /pets, respond: {status: 201, body: {a: 1}, save: [{collection: c, id: x}, {collection: d, id: x}]}}", `respond.save[1]: a second entry without body:`},
		{"save events without a body", "{name: x, method: POST, path: /pets, respond: {status: 201, body: {a: 1}, save: [{collection: c, id: x, events: [{type: a.b}]}]}}", `respond.save[0].events: goes with body:`},
		{"a merge without a body", "{name: x, method: POST, path: /pets, respond: {status: 201, body: {a: 1}, save: [{collection: c, id: x, merge: true}]}}", `respond.save[0].merge: goes with body:`},
		{"an empty save list", "{name: x, method: POST, path: /pets, respond: {status: 201, body: {a: 1}, save: []}}", `respond.save: want an entry ({ collection, id }) or a list of them, got an empty list`},
		{"a case that saves", "{name: x, method: GET, path: '/pets/{petId}', operation: showPet, cases: [{when: {item: {tag: a}}, respond: {save: [{collection: c, id: x, body: {a: 1}}]}}]}", `cases[0].respond.save: is the route's`},
		{"a refusal that saves", "{name: x, method: DELETE, path: '/pets/{petId}', operation: deletePet, refuse: [{when: {item: {tag: sold}}, respond: {status: 409, body: {a: 1}, save: {collection: c, id: x}}}]}", `refuse[0].respond.save: does not go with a refusal`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := petstore(t, "openapi: {spec: openapi.yaml}\nroutes:\n  - "+tc.route+"\n")
			set, err := scenarios.Load(filepath.Join(dir, "pets.yaml"))
			if err == nil {
				err = openapi.Expand(set, openapi.Options{})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want one with %s", err, tc.want)
			}
		})
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.yaml"), []byte("routes:\n  - {method: GET, path: /x, operation: getX}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := scenarios.Load(filepath.Join(dir, "x.yaml"))
	if err == nil {
		err = openapi.Expand(set, openapi.Options{})
	}
	if err == nil || !strings.Contains(err.Error(), "the set serves no OpenAPI document") {
		t.Fatalf("without a spec: %v", err)
	}
}

// TestGzippedSpec serves a spec kept gzip-compressed (as the Stripe
// example keeps Stripe's), with its $ref to a sibling file.
func TestGzippedSpec(t *testing.T) {
	t.Parallel()
	dir := petstore(t, "openapi: {spec: openapi.yaml.gz}\n")
	plain, err := os.ReadFile(filepath.Join(dir, "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(plain)
	zw.Close()
	if err := os.WriteFile(filepath.Join(dir, "openapi.yaml.gz"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "openapi.yaml")); err != nil {
		t.Fatal(err)
	}
	_, hs := serveDir(t, dir, openapi.Options{})
	if got := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Rex"}`); got.status != 201 || got.json["name"] != "Rex" {
		t.Fatalf("%d %s; want the gzipped spec's createPet", got.status, got.body)
	}
}

// TestStripeActions: Stripe's action operations (a POST to a verb below a
// payment intent) act on the stored intent and keep its id; under
// unknownIds: generate an intent never created is generated with the id
// asked, as stripe-mock answers. (Without it, the 404: the Stripe
// example's TestStripePaymentIntentLifecycle.)
func TestStripeActions(t *testing.T) {
	t.Parallel()
	spec, fixtures := stripeFiles(t)
	for _, unknown := range []string{"generate"} {
		t.Run("unknownIds "+unknown, func(t *testing.T) {
			set, err := scenarios.LoadBytes("stripe", []byte("routes: []\n"))
			if err != nil {
				t.Fatal(err)
			}
			if err := openapi.Expand(set, openapi.Options{Extra: []*scenarios.OpenAPISource{openapi.FileSource(spec, fixtures)}, UnknownIDs: unknown}); err != nil {
				t.Fatal(err)
			}
			srv, err := server.New(server.Options{Load: func() (*scenarios.Set, error) { return set, nil }})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(srv)
			t.Cleanup(ts.Close)
			hs := ts.URL
			auth := []string{"Authorization", "Bearer sk_test_1"}
			form := "application/x-www-form-urlencoded"
			pi := call(t, "POST", hs+"/v1/payment_intents", form, url.Values{"amount": {"2000"}, "currency": {"usd"}}.Encode(), auth...)
			id, _ := pi.json["id"].(string)
			if pi.status != 200 || !strings.HasPrefix(id, "pi_") || !strings.HasPrefix(pi.json["client_secret"].(string), id+"_secret_") {
				t.Fatalf("create: %d %s; want a fresh id, and the client_secret made of it", pi.status, pi.body)
			}
			confirmed := call(t, "POST", hs+"/v1/payment_intents/"+id+"/confirm", form, "payment_method=pm_card_visa", auth...)
			if confirmed.status != 200 || confirmed.json["id"] != id || confirmed.json["payment_method"] != "pm_card_visa" || confirmed.json["amount"] != float64(2000) {
				t.Fatalf("confirm: %d %s; want the stored intent with the payment method", confirmed.status, confirmed.body)
			}
			if got := call(t, "GET", hs+"/v1/payment_intents/"+id, "", "", auth...); got.json["payment_method"] != "pm_card_visa" {
				t.Errorf("read back: %s; want the confirmation stored", got.body)
			}
			never := call(t, "POST", hs+"/v1/payment_intents/pi_never/cancel", form, "", auth...)
			if never.status != 200 || never.json["id"] != "pi_never" {
				t.Errorf("cancel an intent never created: %d %s; want one generated with its id", never.status, never.body)
			}
			n := call(t, "GET", hs+"/__admin/collections", "", "")
			if strings.Contains(n.body, "/confirm") || strings.Contains(n.body, "/cancel") {
				t.Errorf("collections %s; an action stored something of its own", n.body)
			}
		})
	}
}

// TestOperationsKeySpaces: the defaults' idempotency block gives each
// generated operation its own key space (as a YAML route's is its method
// and path): a key a create used, sent with the same body to a delete,
// is a new request there, not a replay of the create.
func TestOperationsKeySpaces(t *testing.T) {
	t.Parallel()
	scenario := `openapi: {spec: openapi.yaml}
defaults:
  idempotency: {key: header.Idempotency-Key, fingerprint: body}
`
	_, hs := serveDir(t, petstore(t, scenario), openapi.Options{})
	js := "application/json"
	created := call(t, "POST", hs.URL+"/pets", js, `{"name":"Rex"}`, "Idempotency-Key", "k1")
	if created.status != 201 {
		t.Fatalf("create: %d %s", created.status, created.body)
	}
	if again := call(t, "POST", hs.URL+"/pets", js, `{"name":"Rex"}`, "Idempotency-Key", "k1"); again.body != created.body {
		t.Fatalf("the retry: %d %s; want the create replayed", again.status, again.body)
	}
	id, _ := created.json["id"].(string)
	deleted := call(t, "DELETE", hs.URL+"/pets/"+id, js, `{"name":"Rex"}`, "Idempotency-Key", "k1")
	if deleted.status != 204 {
		t.Fatalf("delete with the create's key: %d %s; want the delete's own 204, not the create replayed", deleted.status, deleted.body)
	}
}

// createPet creates a pet from the JSON body and returns its id, failing
// the test unless the create answers 201 with one.
func createPet(t *testing.T, url, body string) string {
	t.Helper()
	got := call(t, "POST", url+"/pets", "application/json", body)
	id, _ := got.json["id"].(string)
	if got.status != 201 || id == "" {
		t.Fatalf("create %s: %d %s; want 201 with an id", body, got.status, got.body)
	}
	return id
}
