package openapi_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
)

// realPets is an upstream of the petstore's: /pets/good keeps the
// contract, the others break it each in one way. It counts the requests
// that reach it.
func realPets(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		answer := func(status int, contentType, body string) {
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("X-Upstream", "real")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}
		switch r.URL.Path {
		case "/pets/good":
			answer(200, "application/json; charset=utf-8", `{"id":"good","name":"Rex","age":3}`)
		case "/pets/bad":
			answer(200, "application/json", `{"id":7,"name":"Rex"}`) // id a number, no age
		case "/pets/xml":
			answer(200, "application/xml", `<pet/>`)
		case "/pets/teapot":
			answer(418, "text/plain", "short and stout")
		case "/pets/gone":
			answer(404, "application/json", `{"code":404,"message":"no such pet"}`)
		case "/pets":
			answer(201, "application/json", `{"id":"new","name":"Tom","age":2}`)
		default:
			answer(500, "text/plain", "unexpected "+r.URL.Path)
		}
	}))
	t.Cleanup(up.Close)
	return up, &calls
}

// TestProxyChecksAnswers: Prism's proxy mode. With proxy: in the openapi:
// block every operation forwards to a real upstream; the operation checks
// the request before it goes (a refused one never reaches the upstream)
// and the upstream's answer after: its status, Content-Type and JSON body
// against the operation's responses. Under enforce an answer that breaks
// the contract is a 502 problem listing how; under report it is passed
// through with Prism's sl-violations header, and the journal has the
// violations either way.
func TestProxyChecksAnswers(t *testing.T) {
	t.Parallel()
	up, calls := realPets(t)
	for _, mode := range []string{"enforce", "report"} {
		t.Run(mode, func(t *testing.T) {
			_, hs := serveDir(t, petstore(t, "openapi: {spec: openapi.yaml, validate: "+mode+", proxy: '"+up.URL+"'}\n"), openapi.Options{})

			good := call(t, "GET", hs.URL+"/pets/good", "", "")
			if good.status != 200 || good.json["name"] != "Rex" || good.header.Get("X-Upstream") != "real" || good.header.Get("Sl-Violations") != "" {
				t.Fatalf("a good answer: %d %v %s; want the upstream's, as it was", good.status, good.header, good.body)
			}
			if gone := call(t, "GET", hs.URL+"/pets/gone", "", ""); gone.status != 404 || gone.json["message"] != "no such pet" {
				t.Errorf("a declared 404: %d %s; want the upstream's", gone.status, gone.body)
			}

			for path, want := range map[string][]string{
				"/pets/bad":    {`"location":["response","body","id"]`, "response body #/id: got number, want string", "response body #: missing property 'age'"},
				"/pets/xml":    {`"location":["response","header","Content-Type"]`, `response header Content-Type: Content-Type \"application/xml\" is not among the media types of the 200 response (application/json)`},
				"/pets/teapot": {`"location":["response","status"]`, "response status: 418 is not among the responses of operation showPet (it declares 200, 404)"},
			} {
				got := call(t, "GET", hs.URL+path, "", "")
				header := got.header.Get("Sl-Violations")
				if !strings.Contains(header, want[0]) {
					t.Errorf("%s: sl-violations %q; want %s", path, header, want[0])
				}
				if mode == "enforce" {
					if got.status != 502 || got.header.Get("Content-Type") != "application/problem+json" || !strings.Contains(got.body, "showPet") {
						t.Errorf("%s: %d %s; want a 502 problem naming the operation", path, got.status, got.body)
					}
					for _, w := range want[1:] {
						if !strings.Contains(got.body, w) {
							t.Errorf("%s: %s; want it to list %s", path, got.body, w)
						}
					}
				} else if got.header.Get("X-Upstream") != "real" || got.status == 502 {
					t.Errorf("%s: %d %v; want the upstream's answer passed through", path, got.status, got.header)
				}
			}
			journal := call(t, "GET", hs.URL+"/__admin/requests?route=showPet", "", "").body
			if !strings.Contains(journal, "response body #/id: got number, want string") {
				t.Errorf("journal %s; want the answer's violations", journal)
			}

			// A request that breaks the contract is refused under enforce
			// before it is forwarded; under report it goes, and its
			// violations come first in the header.
			before := calls.Load()
			bad := call(t, "POST", hs.URL+"/pets", "application/json", `{"age":-1}`)
			switch {
			case mode == "enforce" && (bad.status != 400 || calls.Load() != before):
				t.Errorf("an invalid create: %d %s, %d upstream calls; want the 400, and no call", bad.status, bad.body, calls.Load()-before)
			case mode == "report" && (bad.status != 201 || calls.Load() != before+1 || !strings.HasPrefix(bad.header.Get("Sl-Violations"), `[{"location":["request","body"`)):
				t.Errorf("an invalid create: %d %v %s; want the upstream's 201 with the request's violations", bad.status, bad.header, bad.body)
			}
		})
	}
}

// TestProxyOnAnOperationRoute: a route written in YAML that names an
// operation may proxy it (the rest stay generated), alone: the upstream
// makes the answer, so nothing else that makes or shapes one goes with it.
func TestProxyOnAnOperationRoute(t *testing.T) {
	t.Parallel()
	up, _ := realPets(t)
	scenario := `openapi: {spec: openapi.yaml}
routes:
  - name: showPet
    method: GET
    path: /pets/{petId}
    operation: showPet
    respond: { proxy: '` + up.URL + `', delay: 1ms }
`
	_, hs := serveDir(t, petstore(t, scenario), openapi.Options{})
	if got := call(t, "GET", hs.URL+"/pets/bad", "", ""); got.status != 502 || !strings.Contains(got.body, "response body #/id") {
		t.Errorf("the proxied operation: %d %s; want its answer checked", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/pets", "", ""); got.status != 200 || got.json["object"] != "list" {
		t.Errorf("another operation: %d %s; want it generated", got.status, got.body)
	}

	for name, tc := range map[string]struct{ route, want string }{
		"body": {"    respond: { proxy: 'http://127.0.0.1:9', body: { name: x } }\n",
			`pets.yaml:7:45: route "showPet": respond.body: does not go with proxy: (the upstream's answer is passed through)`},
		"override": {"    respond: { proxy: 'http://127.0.0.1:9', override: { name: x } }\n",
			`pets.yaml:7:45: route "showPet": respond.override: does not go with proxy:`},
		"cases": {"    respond: { proxy: 'http://127.0.0.1:9' }\n    cases: [{ when: { item: { name: x } }, respond: { body: { name: y } } }]\n",
			`pets.yaml:8:5: route "showPet": cases: does not go with a proxy: answer`},
	} {
		dir := petstore(t, "openapi: {spec: openapi.yaml}\nroutes:\n  - name: showPet\n    method: GET\n    path: /pets/{petId}\n    operation: showPet\n"+tc.route)
		_, err := scenarios.Load(filepath.Join(dir, "pets.yaml"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %s", name, err, tc.want)
		}
	}
}

// TestProxyNullableAnyOf: OpenAPI 3.0's nullable: true on an anyOf (how
// Stripe's spec writes "an id, an expanded object, or null") takes a null
// there, in an upstream's answer: also inside an alternative of another
// anyOf, which then holds (a customer read is anyOf a customer and a
// deleted one). A null where nothing allows one is still a violation.
func TestProxyNullableAnyOf(t *testing.T) {
	t.Parallel()
	spec := `openapi: 3.0.0
info: {title: t, version: "1"}
paths:
  /customers/{id}:
    get:
      operationId: GetCustomer
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                anyOf: [{$ref: "#/components/schemas/customer"}, {$ref: "#/components/schemas/deleted_customer"}]
components:
  schemas:
    customer:
      type: object
      required: [id, default_source, name]
      properties:
        id: {type: string}
        name: {type: string}
        default_source:
          anyOf: [{type: string, maxLength: 5000}, {$ref: "#/components/schemas/card"}]
          nullable: true
        cards: {type: array, items: {$ref: "#/components/schemas/card"}}
    deleted_customer:
      type: object
      required: [id, deleted]
      properties:
        id: {type: string}
        deleted: {type: boolean, enum: [true]}
    card:
      type: object
      required: [id, customer]
      properties:
        id: {type: string}
        customer:
          anyOf: [{type: string}, {$ref: "#/components/schemas/customer"}]
          nullable: true
`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/customers/null":
			_, _ = w.Write([]byte(`{"id":"cus_1","name":"Ada","default_source":null,"cards":[{"id":"card_1","customer":null}]}`))
		case "/customers/deleted":
			_, _ = w.Write([]byte(`{"id":"cus_2","deleted":true}`))
		default: // name is not nullable
			_, _ = w.Write([]byte(`{"id":"cus_3","name":null,"default_source":null}`))
		}
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "spec.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pets.yaml"), []byte("openapi: {spec: spec.yaml, proxy: '"+up.URL+"'}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, hs := serveDir(t, dir, openapi.Options{})
	for _, path := range []string{"/customers/null", "/customers/deleted"} {
		if got := call(t, "GET", hs.URL+path, "", ""); got.status != 200 {
			t.Errorf("%s: %d %s; want the upstream's answer, which keeps the contract", path, got.status, got.body)
		}
	}
	got := call(t, "GET", hs.URL+"/customers/bad", "", "")
	if got.status != 502 || !strings.Contains(got.body, "response body #/name: got null, want string") || strings.Contains(got.body, "default_source") {
		t.Errorf("a null name: %d %s; want a 502 naming #/name alone", got.status, got.body)
	}
}

// TestProxyChecksAnswerHeaders: the headers a response declares are part
// of its contract, as Prism's proxy mode checks them: a required one must
// be in the upstream's answer, and each one there must fit its schema (an
// integer, within its minimum; a format: uuid; a list of integers). Each
// violation is located at ["response","header",name], the name as the
// spec writes it; under enforce the answer is a 502 problem listing
// them, under report it is passed through, and the journal has them
// either way. A HEAD's answer is checked for its headers alone.
func TestProxyChecksAnswerHeaders(t *testing.T) {
	t.Parallel()
	spec := `openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /quotas/{id}:
    get:
      operationId: GetQuota
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses:
        "200":
          description: ok
          headers:
            X-Rate-Limit: {required: true, schema: {type: integer, minimum: 1}}
            X-Request-Id: {schema: {type: string, format: uuid}}
            X-Shards: {schema: {type: array, items: {type: integer}}}
          content:
            application/json:
              schema: {type: object, properties: {id: {type: string}}}
        "404":
          description: none such
`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("X-Upstream", "real")
		switch r.URL.Path {
		case "/quotas/good":
			h.Set("X-Rate-Limit", "100")
			h.Set("X-Request-Id", "0b9a3a8e-8a4b-4f1e-9c55-1d1b1c1e1f10")
			h.Set("X-Shards", "1,2")
		case "/quotas/missing":
			h.Set("X-Request-Id", "0b9a3a8e-8a4b-4f1e-9c55-1d1b1c1e1f10")
		case "/quotas/wrong":
			h.Set("X-Rate-Limit", "many")
			h.Set("X-Request-Id", "req-7")
			h.Set("X-Shards", "1,x")
		case "/quotas/zero":
			h.Set("x-rate-limit", "0")
		default: // a 404 declares no headers
			w.WriteHeader(404)
		}
		_, _ = w.Write([]byte(`{"id":"q"}`))
	}))
	t.Cleanup(up.Close)
	for _, mode := range []string{"enforce", "report"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "spec.yaml"), []byte(spec), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "pets.yaml"), []byte("openapi: {spec: spec.yaml, validate: "+mode+", proxy: '"+up.URL+"'}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, hs := serveDir(t, dir, openapi.Options{})
			for _, path := range []string{"/quotas/good", "/quotas/none"} {
				if got := call(t, "GET", hs.URL+path, "", ""); got.status == 502 || got.header.Get("Sl-Violations") != "" {
					t.Errorf("%s: %d %v %s; want the upstream's answer, which keeps the contract", path, got.status, got.header, got.body)
				}
			}
			for path, want := range map[string][]string{
				"/quotas/missing": {
					`[{"location":["response","header","X-Rate-Limit"],"severity":"Error","message":"missing; the 200 response requires it"}]`,
					"response header X-Rate-Limit: missing; the 200 response requires it",
				},
				"/quotas/wrong": {
					`[{"location":["response","header","X-Rate-Limit"],"severity":"Error","message":"\"many\": got string, want integer"},` +
						`{"location":["response","header","X-Request-Id"],"severity":"Error","message":"'req-7' is not valid uuid: must have 5 elements"},` +
						`{"location":["response","header","X-Shards"],"severity":"Error","message":"\"1,x\": item 1: got string, want integer"}]`,
					`response header X-Request-Id: 'req-7' is not valid uuid`,
				},
				"/quotas/zero": {
					`[{"location":["response","header","X-Rate-Limit"],"severity":"Error","message":"\"0\": minimum: got 0, want 1"}]`,
					`response header X-Rate-Limit: \"0\": minimum: got 0, want 1`,
				},
			} {
				got := call(t, "GET", hs.URL+path, "", "")
				if h := got.header.Get("Sl-Violations"); h != want[0] {
					t.Errorf("%s: sl-violations %s; want %s", path, h, want[0])
				}
				switch {
				case mode == "enforce" && (got.status != 502 || !strings.Contains(got.body, want[1])):
					t.Errorf("%s: %d %s; want a 502 problem listing %s", path, got.status, got.body, want[1])
				case mode == "report" && (got.status != 200 || got.header.Get("X-Upstream") != "real"):
					t.Errorf("%s: %d %v; want the upstream's answer passed through", path, got.status, got.header)
				}
			}
			// The answer to a HEAD has no body and may leave out its
			// Content-Type (RFC 9110 §9.3.2): its headers are checked,
			// its content is not.
			if got := call(t, "HEAD", hs.URL+"/quotas/good", "", ""); got.status != 200 || got.header.Get("Sl-Violations") != "" {
				t.Errorf("HEAD /quotas/good: %d %v; want the upstream's answer, which keeps the contract", got.status, got.header)
			}
			if got := call(t, "HEAD", hs.URL+"/quotas/missing", "", ""); !strings.Contains(got.header.Get("Sl-Violations"), `"location":["response","header","X-Rate-Limit"]`) || strings.Contains(got.header.Get("Sl-Violations"), "body") {
				t.Errorf("HEAD /quotas/missing: %d %v; want the missing header alone", got.status, got.header)
			}
			journal := call(t, "GET", hs.URL+"/__admin/requests?route=GetQuota", "", "").body
			if !strings.Contains(journal, "response header X-Rate-Limit: missing; the 200 response requires it") {
				t.Errorf("journal %s; want the answers' header violations", journal)
			}
		})
	}
}

// TestProxyAnswerNamesTheClosestAlternative: an upstream's answer that
// fails a oneOf is told what is wrong with it as the alternative it is
// closest to, as a refused request is (TestOneOfNamesTheClosestAlternative):
// a cat with 12 lives is not told it lacks a dog's goodBoy and a fish's
// fins; a discriminator names the alternative; a nested anyOf is narrowed
// too.
func TestProxyAnswerNamesTheClosestAlternative(t *testing.T) {
	t.Parallel()
	spec := `openapi: 3.0.3
info: {title: Pets, version: "1"}
paths:
  /animals/{id}:
    get:
      operationId: GetAnimal
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                oneOf: [{$ref: "#/components/schemas/Cat"}, {$ref: "#/components/schemas/Dog"}, {$ref: "#/components/schemas/Fish"}]
  /pets/{id}:
    get:
      operationId: GetPet
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Pet"}
components:
  schemas:
    Cat:
      type: object
      required: [kind, name, livesLeft]
      properties:
        kind: {type: string, enum: [cat]}
        name: {type: string}
        livesLeft: {type: integer, maximum: 9}
        owner:
          anyOf: [{type: string}, {$ref: "#/components/schemas/Owner"}]
    Dog:
      type: object
      required: [kind, name, goodBoy]
      properties:
        kind: {type: string, enum: [dog]}
        name: {type: string}
        goodBoy: {type: boolean}
    Fish:
      type: object
      required: [kind, fins]
      properties:
        kind: {type: string, enum: [fish]}
        fins: {type: integer}
    Owner:
      type: object
      required: [id, email]
      properties:
        id: {type: string}
        email: {type: string}
    Pet:
      oneOf: [{$ref: "#/components/schemas/Tabby"}, {$ref: "#/components/schemas/Hound"}]
      discriminator:
        propertyName: petType
        mapping: {tabby: "#/components/schemas/Tabby", hound: "#/components/schemas/Hound"}
    Tabby:
      type: object
      required: [petType, name, livesLeft]
      properties:
        petType: {type: string}
        name: {type: string}
        livesLeft: {type: integer}
    Hound:
      type: object
      required: [petType, name, bark, breed]
      properties:
        petType: {type: string}
        name: {type: string}
        bark: {type: boolean}
        breed: {type: string}
`
	answers := map[string]string{
		"/animals/cat":   `{"kind":"cat","name":"Tom","livesLeft":12}`,
		"/animals/owned": `{"kind":"cat","name":"Tom","livesLeft":3,"owner":{"id":"o_1"}}`,
		"/pets/hound":    `{"petType":"hound","name":"Rex"}`,
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(answers[r.URL.Path]))
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "spec.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pets.yaml"), []byte("openapi: {spec: spec.yaml, proxy: '"+up.URL+"'}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, hs := serveDir(t, dir, openapi.Options{})
	for path, want := range map[string][]string{
		"/animals/cat":   {"response body #/livesLeft: maximum: got 12, want 9 (as Cat, the closest of oneOf Cat, Dog, Fish)"},
		"/animals/owned": {"response body #/owner: missing property 'email' (as Cat, the closest of oneOf Cat, Dog, Fish; as Owner, the closest of anyOf alternative 1, Owner)"},
		"/pets/hound":    {"response body #: missing properties 'bark', 'breed' (as Hound, which petType names, of oneOf Tabby, Hound)"},
	} {
		got := call(t, "GET", hs.URL+path, "", "")
		errs, _ := got.json["errors"].([]any)
		var vs []string
		for _, e := range errs {
			s, _ := e.(string)
			vs = append(vs, s)
		}
		if got.status != 502 || strings.Join(vs, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: %d, violations:\n%s\nwant:\n%s", path, got.status, strings.Join(vs, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestProxyChecksAnswersAsAnswers: an upstream's body is checked as an
// answer, as Prism's proxy mode checks it (its "output" context): a
// required writeOnly property (a password) is required of requests only,
// so an answer without it keeps the contract, while a required readOnly
// one must be there; and formats are asserted, as for its headers (an id
// of format uuid that is no UUID, a created of format date-time that is
// no time). A format the validator does not know (Stripe's unix-time)
// is an annotation.
func TestProxyChecksAnswersAsAnswers(t *testing.T) {
	t.Parallel()
	spec := `openapi: 3.1.0
info: {title: Users, version: "1"}
paths:
  /users/{id}:
    get:
      operationId: GetUser
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: "#/components/schemas/User"}
components:
  schemas:
    User:
      type: object
      required: [id, name, password, created]
      properties:
        id: {type: string, format: uuid, readOnly: true}
        name: {type: string}
        password: {type: string, writeOnly: true}
        created: {type: string, format: date-time, readOnly: true}
        seen: {type: integer, format: unix-time}
`
	answers := map[string]string{
		"/users/good":    `{"id":"0b9a3a8e-8a4b-4f1e-9c55-1d1b1c1e1f10","name":"Ada","created":"2026-12-07T06:00:00Z","seen":1765000000}`,
		"/users/noid":    `{"name":"Ada","created":"2026-12-07T06:00:00Z"}`,
		"/users/formats": `{"id":"usr_1","name":"Ada","created":"yesterday"}`,
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(answers[r.URL.Path]))
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "spec.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pets.yaml"), []byte("openapi: {spec: spec.yaml, proxy: '"+up.URL+"'}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, hs := serveDir(t, dir, openapi.Options{})
	for path, want := range map[string][]string{
		"/users/good": nil,
		"/users/noid": {"response body #: missing property 'id'"},
		"/users/formats": {
			"response body #/created: 'yesterday' is not valid date-time: ",
			"response body #/id: 'usr_1' is not valid uuid: ",
		},
	} {
		got := call(t, "GET", hs.URL+path, "", "")
		errs, _ := got.json["errors"].([]any)
		var vs []string
		for _, e := range errs {
			s, _ := e.(string)
			vs = append(vs, s)
		}
		slices.Sort(vs) // the validator's order of properties is its own
		ok := len(vs) == len(want)
		for i := 0; ok && i < len(vs); i++ {
			ok = strings.HasPrefix(vs[i], want[i])
		}
		switch {
		case want == nil && got.status != 200:
			t.Errorf("%s: %d %s; want the upstream's answer, which keeps the contract", path, got.status, got.body)
		case want != nil && (got.status != 502 || !ok):
			t.Errorf("%s: %d, violations:\n%s\nwant:\n%s", path, got.status, strings.Join(vs, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestProxyChecksEncodedAnswers: a client that sends Accept-Encoding:
// gzip (browsers, curl --compressed, Python's requests, axios) gets the
// upstream's gzip answer passed through as it came, and the answer is
// checked as it decodes: a good one keeps the contract, a bad one is
// told what is wrong in its JSON, and one that does not decode says so.
func TestProxyChecksEncodedAnswers(t *testing.T) {
	t.Parallel()
	gz := func(s string) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		_, _ = w.Write([]byte(s))
		_ = w.Close()
		return b.Bytes()
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		switch r.URL.Path {
		case "/pets/good":
			_, _ = w.Write(gz(`{"id":"good","name":"Rex","age":3}`))
		case "/pets/bad":
			_, _ = w.Write(gz(`{"id":7,"name":"Rex","age":3}`))
		case "/pets/bomb": // 11 MB of valid JSON in 11 KB
			_, _ = w.Write(gz(`{"id":"good","name":"Rex","age":3` + strings.Repeat(" ", 11<<20) + `}`))
		default:
			_, _ = w.Write([]byte(`{"id":"plain","name":"Rex","age":3}`)) // says gzip, is not
		}
	}))
	t.Cleanup(up.Close)
	_, hs := serveDir(t, petstore(t, "openapi: {spec: openapi.yaml, proxy: '"+up.URL+"'}\n"), openapi.Options{})

	good := call(t, "GET", hs.URL+"/pets/good", "", "", "Accept-Encoding", "gzip")
	if good.status != 200 || good.header.Get("Content-Encoding") != "gzip" || good.header.Get("Sl-Violations") != "" || !bytes.Equal([]byte(good.body), gz(`{"id":"good","name":"Rex","age":3}`)) {
		t.Errorf("a good gzip answer: %d %v; want it passed through as it came", good.status, good.header)
	}
	for path, want := range map[string]string{
		"/pets/bad":  "response body #/id: got number, want string",
		"/pets/lies": "response header Content-Encoding: the body does not decode: gzip: ",
		"/pets/bomb": "response header Content-Encoding: the body does not decode: gzip: decodes to more than 10485760 bytes",
	} {
		got := call(t, "GET", hs.URL+path, "", "", "Accept-Encoding", "gzip")
		if got.status != 502 || !strings.Contains(got.body, want) || strings.Contains(got.body, "not JSON") {
			t.Errorf("%s: %d %s; want a 502 listing %s", path, got.status, got.body, want)
		}
	}
}

// TestProxyBoundsAnswerViolations: an upstream whose list breaks the
// contract in every item (an id turned number) is told so in at most 100
// violations, the last saying how many more, as a refused request is:
// not a 502 and an sl-violations header of a line per item, which
// proxies and clients in between refuse past a few kilobytes.
func TestProxyBoundsAnswerViolations(t *testing.T) {
	t.Parallel()
	items := make([]string, 500)
	for i := range items {
		items[i] = fmt.Sprintf(`{"id":%d,"name":"Rex","age":3}`, i)
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"list","has_more":false,"data":[` + strings.Join(items, ",") + `]}`))
	}))
	t.Cleanup(up.Close)
	_, hs := serveDir(t, petstore(t, "openapi: {spec: openapi.yaml, validate: report, proxy: '"+up.URL+"'}\n"), openapi.Options{})
	got := call(t, "GET", hs.URL+"/pets", "", "")
	var vs []map[string]any
	if err := json.Unmarshal([]byte(got.header.Get("Sl-Violations")), &vs); err != nil {
		t.Fatalf("sl-violations: %v", err)
	}
	if got.status != 200 || len(vs) != 100 || vs[99]["message"] != "and 401 more violations" {
		last := any(nil)
		if len(vs) > 0 {
			last = vs[len(vs)-1]
		}
		t.Errorf("%d, %d violations, the last %v; want the answer with 100, the last saying 401 more", got.status, len(vs), last)
	}
}
