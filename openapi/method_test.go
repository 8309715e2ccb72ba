package openapi_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/server"
)

// animalsSpec has a collection and its items, each path with some
// methods and not others.
const animalsSpec = `openapi: 3.0.3
info: {title: Animals, version: "1"}
paths:
  /animals:
    get:
      operationId: listAnimals
      responses:
        '200': {description: ok, content: {application/json: {schema: {type: array, items: {type: object}}}}}
    post:
      operationId: createAnimal
      requestBody: {content: {application/json: {schema: {type: object}}}}
      responses:
        '201': {description: made, content: {application/json: {schema: {type: object, properties: {id: {type: string}}}}}}
  /animals/{id}:
    delete:
      operationId: deleteAnimal
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses:
        '204': {description: gone}
`

// TestMethodNotAllowed: a request whose path is an operation's but whose
// method the path has not is a 405 with an Allow header (RFC 9110
// §15.5.6), as Prism answers it, journaled as unmatched like a 404; a
// path nothing serves stays a 404, and so does a wrong method under
// errors: stripe, as Stripe answers it, and on a path that only YAML
// routes serve, as WireMock answers it.
func TestMethodNotAllowed(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, animalsSpec, nil)
	stripe := serveDoc(t, animalsSpec, func(s *scenarios.OpenAPISource) { s.Errors = "stripe" })
	yamlOnly := serveYAML(t, `routes:
  - {name: list, method: GET, path: /animals, respond: {body: []}}
`)
	// A YAML route beside the spec adds its method to the path's.
	mixed := serveYAMLWithSpec(t, `routes:
  - {name: replace, method: PUT, path: '/animals/{id}', respond: {status: 200}}
`)
	cases := []struct {
		name, method, url string
		status            int
		allow             string // the Allow header wanted ("" none)
	}{
		{"wrong method on a collection", "DELETE", hs.URL + "/animals", 405, "GET, HEAD, POST"},
		{"wrong method on an item", "GET", hs.URL + "/animals/a1", 405, "DELETE"},
		{"HEAD where no GET", "HEAD", hs.URL + "/animals/a1", 405, "DELETE"},
		{"right method: the operation answers (no such animal)", "DELETE", hs.URL + "/animals/a1", 404, ""},
		{"unknown path", "GET", hs.URL + "/plants", 404, ""},
		{"errors: stripe keeps Stripe's 404", "DELETE", stripe.URL + "/animals", 404, ""},
		{"YAML routes only: 404", "DELETE", yamlOnly.URL + "/animals", 404, ""},
		{"a YAML route's method counts", "PATCH", mixed.URL + "/animals/a1", 405, "DELETE, PUT"},
		{"the YAML route answers", "PUT", mixed.URL + "/animals/a1", 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := call(t, tc.method, tc.url, "", "")
			if got.status != tc.status || got.header.Get("Allow") != tc.allow {
				t.Fatalf("%s %s: %d Allow %q %s; want %d Allow %q", tc.method, tc.url, got.status, got.header.Get("Allow"), got.body, tc.status, tc.allow)
			}
			if tc.status != 405 || tc.method == "HEAD" {
				return
			}
			if ct := got.header.Get("Content-Type"); ct != "application/problem+json" || got.json["status"] != 405.0 || got.json["title"] != "Method Not Allowed" {
				t.Errorf("405 answer %s %s; want an RFC 9457 problem with status 405", ct, got.body)
			}
		})
	}
	// The journal keeps a 405 as it keeps a 404: a request no route
	// matched, which verify --no-unmatched counts.
	if got := call(t, "POST", hs.URL+"/animals/a9", "", ""); got.status != 405 {
		t.Fatalf("POST /animals/a9: %d; want 405", got.status)
	}
	var journal struct {
		Requests []struct {
			Path    string `json:"path"`
			Matched bool   `json:"matched"`
			Status  int    `json:"status"`
		} `json:"requests"`
	}
	if err := json.Unmarshal([]byte(call(t, "GET", hs.URL+"/__admin/requests", "", "").body), &journal); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range journal.Requests {
		if e.Path == "/animals/a9" {
			found = true
			if e.Matched || e.Status != 405 {
				t.Errorf("journal entry %+v; want unmatched with status 405", e)
			}
		}
	}
	if !found {
		t.Errorf("journal has no POST /animals/a9: %+v", journal.Requests)
	}
}

// serveYAML serves a scenario file alone, with no OpenAPI document.
func serveYAML(t *testing.T, scenario string) *httptest.Server {
	t.Helper()
	load := func() (*scenarios.Set, error) { return scenarios.LoadBytes("routes.yaml", []byte(scenario)) }
	srv, err := server.New(server.Options{Load: load})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs
}

// serveYAMLWithSpec serves a scenario file beside animalsSpec, as
// `serve --openapi spec routes.yaml` does.
func serveYAMLWithSpec(t *testing.T, scenario string) *httptest.Server {
	t.Helper()
	spec := filepath.Join(t.TempDir(), "animals.yaml")
	if err := os.WriteFile(spec, []byte(animalsSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := openapi.Options{Extra: []*scenarios.OpenAPISource{openapi.FileSource(spec, "")}, Cache: openapi.NewCache()}
	load := func() (*scenarios.Set, error) {
		set, err := scenarios.LoadBytes("routes.yaml", []byte(scenario))
		if err != nil {
			return nil, err
		}
		return set, openapi.Expand(set, opts)
	}
	srv, err := server.New(server.Options{Load: load})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs
}
