package openapi_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/server"
)

// serveDir serves the scenario files in dir (with their openapi:
// blocks) over a real HTTP server.
func serveDir(t *testing.T, dir string, opts openapi.Options) (*server.Server, *httptest.Server) {
	t.Helper()
	if opts.Cache == nil {
		opts.Cache = openapi.NewCache()
	}
	load := func() (*scenarios.Set, error) {
		set, err := scenarios.Load(filepath.Join(dir, "pets.yaml"))
		if err != nil {
			return nil, err
		}
		return set, openapi.Expand(set, opts)
	}
	srv, err := server.New(server.Options{Load: load, Rand: server.SeededRand(1)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return srv, hs
}

// petstore copies the petstore spec (a 3.1 YAML document whose schemas
// are in a sibling file) and a scenario file naming it into a fresh dir.
func petstore(t *testing.T, scenario string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"openapi.yaml", "schemas.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", "petstore", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "pets.yaml"), []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

type answer struct {
	status int
	header http.Header
	body   string
	json   map[string]any
}

func call(t *testing.T, method, url, contentType, body string, header ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
	_ = json.Unmarshal(b, &a.json)
	return a
}

// listed is the field of each item of a list answer's data.
func listed(a answer, field string) []string {
	var out []string
	d, _ := a.json["data"].([]any)
	for _, it := range d {
		if obj, ok := it.(map[string]any); ok {
			out = append(out, fmt.Sprint(obj[field]))
		}
	}
	return out
}

func TestPetstoreStateful(t *testing.T) {
	t.Parallel()
	_, hs := serveDir(t, petstore(t, "openapi: {spec: openapi.yaml}\n"), openapi.Options{})
	created := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Tom","age":2,"tag":"cat"}`)
	if created.status != 201 || created.json["name"] != "Tom" || created.json["age"] != 2.0 {
		t.Fatalf("create: %d %s; want 201 with the request's name and age reflected", created.status, created.body)
	}
	id, _ := created.json["id"].(string)
	if !strings.HasPrefix(id, "pet_") || id == "pet_0001" {
		t.Fatalf("create: id %q; want a fresh id in the example's style (pet_…)", id)
	}
	if got := call(t, "GET", hs.URL+"/pets/"+id, "", ""); got.status != 200 || got.body != created.body {
		t.Fatalf("read: %d %s; want 200 and the created object %s", got.status, got.body, created.body)
	}
	second := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Ada","age":5,"tag":"dog"}`)
	list := call(t, "GET", hs.URL+"/pets", "", "")
	data, _ := list.json["data"].([]any)
	if list.status != 200 || len(data) != 2 || data[0].(map[string]any)["id"] != second.json["id"] {
		t.Fatalf("list: %d %s; want both pets, newest first", list.status, list.body)
	}
	// A declared query parameter that names a field of the items narrows
	// the list: equal to it, matching it as a pattern (a *), or within its
	// [gte]/[lt] range.
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"tag=dog", []string{"Ada"}},
		{"tag=cat", []string{"Tom"}},
		{"tag=fish", nil},
		{"age[gte]=3", []string{"Ada"}},
		{"age[lt]=3", []string{"Tom"}},
		{"age[gte]=1&tag=cat", []string{"Tom"}},
		{"tag=c*", []string{"Tom"}},
		{"tag=*o*", []string{"Ada"}},
	} {
		got := call(t, "GET", hs.URL+"/pets?"+tc.query, "", "")
		if names := listed(got, "name"); got.status != 200 || strings.Join(names, ",") != strings.Join(tc.want, ",") {
			t.Errorf("GET /pets?%s: %d %s; want %v", tc.query, got.status, got.body, tc.want)
		}
	}
	page := call(t, "GET", hs.URL+"/pets?limit=1", "", "")
	if d, _ := page.json["data"].([]any); len(d) != 1 || page.json["has_more"] != true {
		t.Fatalf("list limit=1: %s; want one pet and has_more", page.body)
	}
	if after := call(t, "GET", hs.URL+"/pets?starting_after=pet_nope", "", ""); after.status != 400 || !strings.Contains(after.body, "pet_nope") || !strings.Contains(after.body, "starting_after") {
		t.Fatalf("list after an id never created: %d %s; want 400 naming the id and the parameter", after.status, after.body)
	}
	if del := call(t, "DELETE", hs.URL+"/pets/"+id, "", ""); del.status != 204 {
		t.Fatalf("delete: %d %s; want 204", del.status, del.body)
	}
	gone := call(t, "GET", hs.URL+"/pets/"+id, "", "")
	if gone.status != 404 || !strings.Contains(gone.body, id) {
		t.Fatalf("read after delete: %d %s; want the spec's 404 naming the id", gone.status, gone.body)
	}
	// A pet made from the schema alone keeps what was sent and what the
	// schema requires (age: a placeholder 0), not a made-up optional tag.
	plain := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Plain"}`)
	if _, has := plain.json["tag"]; plain.status != 201 || has || plain.json["name"] != "Plain" || plain.json["age"] != 0.0 {
		t.Fatalf("create without a tag: %d %s; want name and the required age, no tag", plain.status, plain.body)
	}
	if got := call(t, "GET", hs.URL+"/pets/"+plain.json["id"].(string), "", ""); got.body != plain.body {
		t.Fatalf("read back: %s; want %s", got.body, plain.body)
	}
	// Prefer: code= of the answer a create gives anyway is a create.
	chosen := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Chosen"}`, "Prefer", "code=201")
	if got := call(t, "GET", hs.URL+"/pets/"+fmt.Sprint(chosen.json["id"]), "", ""); chosen.status != 201 || got.status != 200 || got.json["name"] != "Chosen" {
		t.Fatalf("create with Prefer: code=201: %d %s, read back %d %s; want it stored", chosen.status, chosen.body, got.status, got.body)
	}
}

func TestPetstoreUnknownIDs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		scenario string
		opts     openapi.Options
		status   int
	}{
		{"404 by default", "openapi: {spec: openapi.yaml}\n", openapi.Options{}, 404},
		{"generate in the block", "openapi: {spec: openapi.yaml, unknownIds: generate}\n", openapi.Options{}, 200},
		{"generate from the flag", "openapi: {spec: openapi.yaml}\n", openapi.Options{UnknownIDs: "generate"}, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, hs := serveDir(t, petstore(t, tc.scenario), tc.opts)
			got := call(t, "GET", hs.URL+"/pets/pet_never", "", "")
			if got.status != tc.status {
				t.Fatalf("GET an id never created: %d %s; want %d", got.status, got.body, tc.status)
			}
			if tc.status == 200 && got.json["id"] != "pet_never" {
				t.Fatalf("generated object %s; want the path's id in id", got.body)
			}
		})
	}
}

func TestPetstoreValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		validate string
		status   int
	}{
		{"enforce", "enforce", 400},
		{"report", "report", 201},
		{"off", "off", 201},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, hs := serveDir(t, petstore(t, "openapi: {spec: openapi.yaml, validate: "+tc.validate+"}\n"), openapi.Options{})
			got := call(t, "POST", hs.URL+"/pets", "application/json", `{"age":-1}`)
			if got.status != tc.status {
				t.Fatalf("invalid create: %d %s; want %d", got.status, got.body, tc.status)
			}
			if tc.validate == "report" {
				j := call(t, "GET", hs.URL+"/__admin/requests", "", "")
				if !strings.Contains(j.body, `"violations"`) || !strings.Contains(j.body, "body age #/age: minimum") || !strings.Contains(j.body, `"route": "createPet"`) {
					t.Fatalf("journal %s; want the entry of createPet with its violations", j.body)
				}
			}
			if tc.status != 400 {
				return
			}
			if ct := got.header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type %q; want application/problem+json", ct)
			}
			errs, _ := got.json["errors"].([]any)
			var pointers []string
			for _, e := range errs {
				pointers = append(pointers, e.(map[string]any)["pointer"].(string))
			}
			if strings.Join(pointers, " ") != "# #/age" || !strings.Contains(got.body, "name") {
				t.Fatalf("problem %s; want a violation for the missing name (#) and one at #/age", got.body)
			}
			q := call(t, "GET", hs.URL+"/pets?limit=0", "", "")
			if q.status != 400 || !strings.Contains(q.body, `"in":"query"`) || !strings.Contains(q.body, "limit") {
				t.Fatalf("GET /pets?limit=0: %d %s; want 400 naming query parameter limit", q.status, q.body)
			}
		})
	}
}

func TestPetstoreSelection(t *testing.T) {
	t.Parallel()
	_, hs := serveDir(t, petstore(t, "openapi: {spec: openapi.yaml}\n"), openapi.Options{})
	cases := []struct {
		name   string
		url    string
		header []string
		status int
		want   string
	}{
		{"example by query", "/pets/x?__example=rex", nil, 200, `"name":"Rex"`},
		{"example by Prefer", "/pets/x", []string{"Prefer", "example=rex"}, 200, `"tag":"dog"`},
		{"code by Prefer", "/pets/x", []string{"Prefer", "code=404"}, 404, `"message"`},
		{"code by query", "/pets/x?__code=404", nil, 404, `"code"`},
		// Not a status to answer with: an informational 101 would leave
		// the connection hanging, and net/http drops it for the rest.
		{"101 by query", "/pets/x?__code=101", nil, 400, `__code=101: the status to answer with must be a number from 200 to 599`},
		{"negative by query", "/pets?__code=-1", nil, 400, `"name":"__code"`},
		{"1000 by Prefer", "/pets", []string{"Prefer", "code=1000"}, 400, `Prefer: code=1000`},
		{"overflow by Prefer", "/pets", []string{"Prefer", "code=99999999999999999999"}, 400, `"name":"Prefer"`},
		// An example the answer lacks is refused, naming the ones it has,
		// as Prism refuses it; not another example served in silence.
		{"unknown example by query", "/pets/x?__example=cat", nil, 400, `example \"cat\": the 200 application/json answer has no example of that name (it has rex`},
		{"unknown example by Prefer", "/pets/x", []string{"Prefer", "example=cat"}, 400, `"name":"Prefer"`},
		{"example of another status", "/pets/x?__code=404&__example=rex", nil, 400, `the 404 application/json answer has no example of that name (it has no named examples)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, "GET", hs.URL+tc.url, "", "", tc.header...)
			if got.status != tc.status || !strings.Contains(got.body, tc.want) {
				t.Fatalf("%d %s; want %d with %s", got.status, got.body, tc.status, tc.want)
			}
		})
	}
	// Unchecked, the selection is not honoured: the success answer.
	_, off := serveDir(t, petstore(t, "openapi: {spec: openapi.yaml, validate: off}\n"), openapi.Options{})
	for _, url := range []string{"/pets?__code=101", "/pets?__code=-1"} {
		if got := call(t, "GET", off.URL+url, "", ""); got.status != 200 {
			t.Errorf("validate: off, GET %s: %d %s; want the operation's 200", url, got.status, got.body)
		}
	}
}

func TestYAMLRouteTakesPriority(t *testing.T) {
	t.Parallel()
	scenario := `openapi: {spec: openapi.yaml}
routes:
  - name: pet-rex-is-gone
    method: GET
    path: /pets/pet_rex
    respond: {status: 410, body: {gone: true}}
  - name: createPet
    method: POST
    path: /pets
    respond: {status: 402, body: {declined: true}}
`
	_, hs := serveDir(t, petstore(t, scenario), openapi.Options{})
	if got := call(t, "GET", hs.URL+"/pets/pet_rex", "", ""); got.status != 410 {
		t.Fatalf("GET /pets/pet_rex: %d %s; want the YAML route's 410", got.status, got.body)
	}
	if got := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"x"}`); got.status != 402 {
		t.Fatalf("POST /pets: %d %s; want the YAML route named createPet (402)", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/pets", "", ""); got.status != 200 {
		t.Fatalf("GET /pets: %d %s; want the generated listPets", got.status, got.body)
	}
}

func TestBrokenSpecKeepsLastGood(t *testing.T) {
	t.Parallel()
	dir := petstore(t, "openapi: {spec: openapi.yaml}\n")
	srv, hs := serveDir(t, dir, openapi.Options{})
	cases := []struct {
		name string
		file string
		edit func(string) string
		want string // in the error
	}{
		{"unresolvable $ref", "openapi.yaml", func(s string) string {
			return strings.Replace(s, "#/components/schemas/Error", "#/components/schemas/Nope", 1)
		}, "openapi.yaml:"},
		{"not YAML", "openapi.yaml", func(s string) string { return s + "\n  : [\n" }, "openapi.yaml:"},
		{"sibling file breaks", "schemas.yaml", func(s string) string { return s + "\n  : [\n" }, ""},
		// Two operations with one operationId: routes name an operation
		// by it, so one would hide the other (GET /pets/{petId} was
		// answered 404 after showPet was renamed listPets).
		{"duplicate operationId", "openapi.yaml", func(s string) string {
			return strings.Replace(s, "operationId: showPet", "operationId: listPets", 1)
		}, `operationId "listPets" of GET /pets/{petId} is also that of GET /pets (`},
	}
	for _, tc := range cases {
		path := filepath.Join(dir, tc.file)
		orig, _ := os.ReadFile(path)
		if err := os.WriteFile(path, []byte(tc.edit(string(orig))), 0o644); err != nil {
			t.Fatal(err)
		}
		err := srv.Reload()
		if err == nil {
			t.Errorf("%s: reload succeeded; want an error", tc.name)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: reload error %q; want it to name %q", tc.name, err, tc.want)
		}
		if got := call(t, "GET", hs.URL+"/pets", "", ""); got.status != 200 {
			t.Fatalf("%s: GET /pets after a broken edit: %d %s; want the last good set serving", tc.name, got.status, got.body)
		}
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := srv.Reload(); err != nil {
			t.Fatalf("%s: reload of the repaired spec: %v", tc.name, err)
		}
	}
}

func TestSiblingFileIsADep(t *testing.T) {
	t.Parallel()
	dir := petstore(t, "openapi: {spec: openapi.yaml}\n")
	srv, hs := serveDir(t, dir, openapi.Options{})
	deps := strings.Join(srv.Deps(), " ")
	if !strings.Contains(deps, "openapi.yaml") || !strings.Contains(deps, "schemas.yaml") {
		t.Fatalf("deps %q; want the spec and the sibling file its $refs read, for the watcher", deps)
	}
	path := filepath.Join(dir, "schemas.yaml")
	b, _ := os.ReadFile(path)
	edited := strings.Replace(string(b), "minLength: 1", "minLength: 5", 1)
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := srv.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Tom"}`); got.status != 400 {
		t.Fatalf("after minLength became 5 in the sibling file: %d %s; want 400", got.status, got.body)
	}
}

func TestDefaultsApplyToGeneratedRoutes(t *testing.T) {
	t.Parallel()
	scenario := `openapi: {spec: openapi.yaml}
defaults:
  headers: {Request-Id: req_1}
  idempotency:
    key: header.Idempotency-Key
    fingerprint: body
    replayHeader: Idempotent-Replayed
`
	_, hs := serveDir(t, petstore(t, scenario), openapi.Options{})
	first := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Tom"}`, "Idempotency-Key", "k1")
	if first.status != 201 || first.header.Get("Request-Id") != "req_1" {
		t.Fatalf("create: %d %v %s; want 201 with the defaults' Request-Id", first.status, first.header, first.body)
	}
	again := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Tom"}`, "Idempotency-Key", "k1")
	if again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry with the same key: %s (replayed %q); want the first answer %s replayed", again.body, again.header.Get("Idempotent-Replayed"), first.body)
	}
	other := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Ada"}`, "Idempotency-Key", "k1")
	if other.status != 422 {
		t.Fatalf("same key, other body: %d %s; want 422", other.status, other.body)
	}
	list := call(t, "GET", hs.URL+"/pets", "", "")
	if d, _ := list.json["data"].([]any); len(d) != 1 {
		t.Fatalf("list after a create and its replay: %s; want one pet", list.body)
	}
	// A request the spec refuses never reaches the idempotency store, so a
	// corrected retry with the same key goes through.
	if bad := call(t, "POST", hs.URL+"/pets", "application/json", `{}`, "Idempotency-Key", "k2"); bad.status != 400 {
		t.Fatalf("invalid create: %d %s; want 400", bad.status, bad.body)
	}
	if fixed := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Bo"}`, "Idempotency-Key", "k2"); fixed.status != 201 {
		t.Fatalf("corrected retry with the key of a refused request: %d %s; want 201", fixed.status, fixed.body)
	}
}

func TestGenerateKeepsDeletedObjectsGone(t *testing.T) {
	t.Parallel()
	_, hs := serveDir(t, petstore(t, "openapi: {spec: openapi.yaml, unknownIds: generate}\n"), openapi.Options{})
	// An id never created stays generated after a delete (stripe-go's
	// suite deletes and reads the same made-up ids)...
	if del := call(t, "DELETE", hs.URL+"/pets/pet_madeup", "", ""); del.status != 204 {
		t.Fatalf("delete an id never created: %d %s", del.status, del.body)
	}
	if got := call(t, "GET", hs.URL+"/pets/pet_madeup", "", ""); got.status != 200 {
		t.Fatalf("read a made-up id after its delete: %d %s; want a generated object", got.status, got.body)
	}
	// ...while an object that was created and deleted stays a 404.
	created := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Tom"}`)
	id, _ := created.json["id"].(string)
	if after := call(t, "GET", hs.URL+"/pets?starting_after=pet_nope", "", ""); after.status != 200 || !strings.Contains(after.body, id) {
		t.Fatalf("list after an id never created, under unknownIds: generate: %d %s; want 200 and the whole list, as stripe-mock answers", after.status, after.body)
	}
	if del := call(t, "DELETE", hs.URL+"/pets/"+id, "", ""); del.status != 204 {
		t.Fatalf("delete: %d %s", del.status, del.body)
	}
	if got := call(t, "GET", hs.URL+"/pets/"+id, "", ""); got.status != 404 {
		t.Fatalf("read a deleted object: %d %s; want 404", got.status, got.body)
	}
}

func TestGenerateListsWhenNothingIsStored(t *testing.T) {
	t.Parallel()
	_, hs := serveDir(t, petstore(t, "openapi: {spec: openapi.yaml, unknownIds: generate}\n"), openapi.Options{})
	empty := call(t, "GET", hs.URL+"/pets", "", "")
	if d, _ := empty.json["data"].([]any); len(d) != 1 {
		t.Fatalf("list with nothing stored: %s; want the spec's list of one, as stripe-mock answers", empty.body)
	}
	created := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Tom"}`)
	list := call(t, "GET", hs.URL+"/pets", "", "")
	d, _ := list.json["data"].([]any)
	if len(d) != 1 || d[0].(map[string]any)["id"] != created.json["id"] {
		t.Fatalf("list after a create: %s; want the stored pet alone", list.body)
	}
}

// TestUnchangedReloadIsAHash reloads through a Cache: with nothing
// changed the set holds the very operations compiled before (the files
// were hashed, not parsed again); an edit of the sibling file its $refs
// read compiles anew.
func TestUnchangedReloadIsAHash(t *testing.T) {
	t.Parallel()
	dir := petstore(t, "openapi: {spec: openapi.yaml}\n")
	cache := openapi.NewCache()
	load := func() map[string]any {
		t.Helper()
		set, err := scenarios.Load(filepath.Join(dir, "pets.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := openapi.Expand(set, openapi.Options{Cache: cache}); err != nil {
			t.Fatal(err)
		}
		ops := map[string]any{}
		for _, r := range set.Routes() {
			ops[r.Name] = r.Operation
		}
		if len(ops) == 0 {
			t.Fatal("no generated routes")
		}
		return ops
	}
	first, again := load(), load()
	for name, op := range first {
		if again[name] != op {
			t.Errorf("%s: compiled again on an unchanged reload; want the cached operation", name)
		}
	}
	path := filepath.Join(dir, "schemas.yaml")
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, op := range load() {
		if first[name] == op {
			t.Errorf("%s: the cached operation after its sibling file changed; want a new compile", name)
		}
	}
}

// TestParameterKinds checks a parameter of each place (path, query,
// header, cookie), as Check runs only the validators of the places an
// operation has parameters in: each broken one is refused, naming where.
func TestParameterKinds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := `openapi: 3.1.0
info: {title: kinds, version: "1"}
paths:
  /orders/{n}:
    get:
      operationId: getOrder
      parameters:
        - {name: n, in: path, required: true, schema: {type: integer}}
        - {name: fields, in: query, schema: {type: integer, maximum: 3}}
        - {name: X-Tenant, in: header, required: true, schema: {type: string, pattern: "^t[0-9]+$"}}
        - {name: session, in: cookie, schema: {type: string, minLength: 4}}
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object, properties: {n: {type: integer}}}}}}
  /plain:
    get:
      operationId: plain
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object}}}}
`
	for name, body := range map[string]string{"kinds.yaml": spec, "pets.yaml": "openapi: {spec: kinds.yaml, state: false}\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, hs := serveDir(t, dir, openapi.Options{})
	for _, tc := range []struct {
		name, path, in string
		header         []string
	}{
		{"valid", "/orders/7?fields=2", "", []string{"X-Tenant", "t1", "Cookie", "session=abcd"}},
		{"path", "/orders/seven", "path", []string{"X-Tenant", "t1"}},
		{"query", "/orders/7?fields=9", "query", []string{"X-Tenant", "t1"}},
		{"header missing", "/orders/7", "header", nil},
		{"header", "/orders/7", "header", []string{"X-Tenant", "nobody"}},
		{"cookie", "/orders/7", "cookie", []string{"X-Tenant", "t1", "Cookie", "session=ab"}},
		{"no parameters", "/plain", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, "GET", hs.URL+tc.path, "", "", tc.header...)
			if tc.in == "" {
				if got.status != 200 {
					t.Fatalf("%d %s; want 200", got.status, got.body)
				}
				return
			}
			if got.status != 400 || !strings.Contains(got.body, `"in":"`+tc.in+`"`) {
				t.Fatalf("%d %s; want 400 with a violation in %s", got.status, got.body, tc.in)
			}
		})
	}
}

// TestFlagReadsGzipSpec serves a gzip-compressed spec named as --openapi
// names one (an extra source), as the openapi: block reads
// examples/stripe/spec3.json.gz: decompressed, its sibling $ref files
// read as they are.
func TestFlagReadsGzipSpec(t *testing.T) {
	t.Parallel()
	dir := petstore(t, "routes: []\n")
	plain, err := os.ReadFile(filepath.Join(dir, "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(plain); err != nil || zw.Close() != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "openapi.yaml.gz")
	if err := os.WriteFile(spec, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, hs := serveDir(t, dir, openapi.Options{Extra: []*scenarios.OpenAPISource{openapi.FileSource(spec, "")}})
	created := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"Tom","age":2}`)
	if created.status != 201 || created.json["name"] != "Tom" {
		t.Fatalf("create through the gzip spec: %d %s; want 201 with the name reflected", created.status, created.body)
	}
	if bad := call(t, "POST", hs.URL+"/pets", "application/json", `{"age":"two"}`); bad.status != 400 {
		t.Fatalf("an invalid create: %d %s; want 400, validated against the decompressed spec", bad.status, bad.body)
	}
}

// TestDeepBodyIsBounded posts deep JSON to an operation whose schema
// refers to itself, where every level of the body is a violation with a
// path as long as its depth: a body nested deeper than maxBodyDepth is
// refused before it is validated, and a refusal lists at most 100
// violations. Before, a 38 KB body nested 2,000 deep took 18 s and was
// answered with 40 MB.
func TestDeepBodyIsBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := filepath.Join(dir, "tree.yaml")
	if err := os.WriteFile(spec, []byte(`openapi: 3.1.0
info: {title: tree, version: "1"}
paths:
  /nodes:
    post:
      operationId: createNode
      requestBody: {content: {application/json: {schema: {$ref: "#/components/schemas/Node"}}}}
      responses: {"201": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/Node"}}}}}
components:
  schemas:
    Node:
      type: object
      required: [id, child, kids]
      properties:
        id: {type: string}
        child: {$ref: "#/components/schemas/Node"}
        kids: {type: array, minItems: 1, items: {$ref: "#/components/schemas/Node"}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, hs := serveSpec(t, spec, nil)
	nested := func(n int) string {
		return strings.Repeat(`{"id":"x","child":`, n) + "{}" + strings.Repeat("}", n)
	}
	deep := call(t, "POST", hs.URL+"/nodes", "application/json", nested(2000))
	if deep.status != 400 || !strings.Contains(deep.body, "nests more than 128 levels deep") || len(deep.body) > 1000 {
		t.Fatalf("2,000 levels: %d, %d bytes: %.300s; want a short 400 saying it nests too deep", deep.status, len(deep.body), deep.body)
	}
	many := call(t, "POST", hs.URL+"/nodes", "application/json", nested(127)) // 128 levels: validated
	errs, _ := many.json["errors"].([]any)
	if many.status != 400 || len(errs) != 100 || !strings.Contains(many.body, "and 29 more violations") {
		t.Fatalf("128 levels: %d, %d violations listed: %.300s; want 400 with 99 and a last saying how many more", many.status, len(errs), many.body)
	}
	if ok := call(t, "POST", hs.URL+"/nodes", "application/json", `{"id":"a","child":{"id":"b","child":{},"kids":[{}]},"kids":[{}]}`); ok.status == 400 && strings.Contains(ok.body, "nests more than") {
		t.Fatalf("a shallow body refused for its depth: %s", ok.body)
	}
	quoted := `{"id":"` + strings.Repeat(`[{\"`, 200) + `","child":{},"kids":[{}]}` // brackets in a string do not nest
	if got := call(t, "POST", hs.URL+"/nodes", "application/json", quoted); strings.Contains(got.body, "nests more than") {
		t.Fatalf("brackets inside a string counted as nesting: %.300s", got.body)
	}
}

// TestPetstorePagingBack pages newest first with limit and both cursors:
// has_more looks in the direction of travel (towards newer items with
// ending_before), and the two cursors together are refused, as Stripe
// refuses them, rather than cutting a page backwards (which panicked).
func TestPetstorePagingBack(t *testing.T) {
	t.Parallel()
	_, hs := serveDir(t, petstore(t, "openapi: {spec: openapi.yaml}\n"), openapi.Options{})
	var ids []string // oldest first
	for _, name := range []string{"A", "B", "C"} {
		p := call(t, "POST", hs.URL+"/pets", "application/json", `{"name":"`+name+`"}`)
		ids = append(ids, fmt.Sprint(p.json["id"]))
	}
	for _, tc := range []struct {
		query string
		want  string
		more  bool
	}{
		{"limit=1&ending_before=" + ids[0], "B", true},
		{"limit=2&ending_before=" + ids[0], "C,B", false},
		{"limit=1&starting_after=" + ids[2], "B", true},
		{"limit=2&starting_after=" + ids[1], "A", false},
	} {
		got := call(t, "GET", hs.URL+"/pets?"+tc.query, "", "")
		if names := strings.Join(listed(got, "name"), ","); got.status != 200 || names != tc.want || got.json["has_more"] != tc.more {
			t.Errorf("GET /pets?%s: %d %s; want %s, has_more %v", tc.query, got.status, got.body, tc.want, tc.more)
		}
	}
	for _, q := range []string{"starting_after=" + ids[0] + "&ending_before=" + ids[2], "starting_after=" + ids[1] + "&ending_before=" + ids[1]} {
		if got := call(t, "GET", hs.URL+"/pets?"+q, "", ""); got.status != 400 || !strings.Contains(got.body, "only specify one of these parameters") {
			t.Errorf("GET /pets?%s: %d %s; want a 400 saying the cursors exclude each other", q, got.status, got.body)
		}
	}
}

// TestNestedListOfItemsMadeElsewhere: GET /users/{user}/orders, which
// nothing creates into, lists the orders POST /orders made whose user is
// that user; a user never created is the operation's 404. Orders made
// from the spec's example keep only the labels (a free-form map) the
// client sent.
func TestNestedListOfItemsMadeElsewhere(t *testing.T) {
	t.Parallel()
	doc := `openapi: 3.1.0
info: {title: Shop, version: "1"}
paths:
  /users:
    post:
      requestBody: {content: {application/json: {schema: {type: object, properties: {name: {type: string}}}}}}
      responses:
        "201": {description: made, content: {application/json: {schema: {$ref: '#/components/schemas/User'}}}}
  /users/{user}:
    get:
      parameters: [{name: user, in: path, required: true, schema: {type: string}}]
      responses:
        "200": {description: it, content: {application/json: {schema: {$ref: '#/components/schemas/User'}}}}
        "404": {description: none, content: {application/json: {schema: {$ref: '#/components/schemas/Error'}}}}
  /users/{user}/orders:
    get:
      parameters:
        - {name: user, in: path, required: true, schema: {type: string}}
        - {name: status, in: query, schema: {type: string, enum: [open, paid]}}
      responses:
        "200":
          description: the user's orders
          content: {application/json: {schema: {type: object, properties: {data: {type: array, items: {$ref: '#/components/schemas/Order'}}}}}}
        "404": {description: none, content: {application/json: {schema: {$ref: '#/components/schemas/Error'}}}}
  /users/{user}/orders/{order}:
    get:
      parameters:
        - {name: user, in: path, required: true, schema: {type: string}}
        - {name: order, in: path, required: true, schema: {type: string}}
      responses:
        "200": {description: one, content: {application/json: {schema: {$ref: '#/components/schemas/Order'}}}}
        "404": {description: none, content: {application/json: {schema: {$ref: '#/components/schemas/Error'}}}}
  /orders/{order}:
    patch:
      parameters: [{name: order, in: path, required: true, schema: {type: string}}]
      requestBody: {content: {application/json: {schema: {type: object, properties: {labels: {type: object, additionalProperties: {type: string}}}}}}}
      responses:
        "200": {description: it, content: {application/json: {schema: {$ref: '#/components/schemas/Order'}}}}
  /orders:
    post:
      requestBody: {content: {application/json: {schema: {type: object, properties: {user: {type: string}, status: {type: string}, labels: {type: object, additionalProperties: {type: string}}}}}}}
      responses:
        "201": {description: made, content: {application/json: {schema: {$ref: '#/components/schemas/Order'}}}}
components:
  schemas:
    User:
      type: object
      properties: {id: {type: string, example: usr_1}, name: {type: string}}
    Order:
      type: object
      properties:
        id: {type: string}
        user: {type: string}
        status: {type: string, enum: [open, paid]}
        labels: {type: object, additionalProperties: {type: string}}
      example: {id: ord_1, user: usr_1, status: open, labels: {channel: web}}
    Error:
      type: object
      properties: {message: {type: string}}
`
	hs := serveDoc(t, doc, nil)
	user := func() string {
		got := call(t, "POST", hs.URL+"/users", "application/json", `{"name":"ada"}`)
		id, _ := got.json["id"].(string)
		if got.status != 201 || id == "" {
			t.Fatalf("create user: %d %s", got.status, got.body)
		}
		return id
	}
	ada, bob := user(), user()
	order := func(body string) string {
		got := call(t, "POST", hs.URL+"/orders", "application/json", body)
		id, _ := got.json["id"].(string)
		if got.status != 201 || id == "" {
			t.Fatalf("create order %s: %d %s", body, got.status, got.body)
		}
		return id
	}
	first := order(`{"user":"` + ada + `","status":"paid"}`)
	order(`{"user":"` + bob + `"}`)
	second := order(`{"user":"` + ada + `","status":"open","labels":{"gift":"yes"}}`)

	got := call(t, "GET", hs.URL+"/users/"+ada+"/orders", "", "")
	if ids := listed(got, "id"); got.status != 200 || !slices.Equal(ids, []string{second, first}) {
		t.Errorf("ada's orders: %d %s; want [%s %s]", got.status, got.body, second, first)
	}
	if ids := listed(call(t, "GET", hs.URL+"/users/"+ada+"/orders?status=paid", "", ""), "id"); !slices.Equal(ids, []string{first}) {
		t.Errorf("ada's paid orders: %v, want [%s]", ids, first)
	}
	// Labels, a free-form map: what the create sent, not the example's
	// channel beside it; none when it sent none; an update sets a key.
	if labels := listed(got, "labels"); !slices.Equal(labels, []string{"map[gift:yes]", "<nil>"}) {
		t.Errorf("labels %v: want only what each create sent, not the example's channel", labels)
	}
	if got := call(t, "PATCH", hs.URL+"/orders/"+second, "application/json", `{"labels":{"wrap":"red"}}`); got.status != 200 || fmt.Sprint(got.json["labels"]) != "map[gift:yes wrap:red]" {
		t.Errorf("update of labels: %d %s; want gift and wrap", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/users/"+ada+"/orders/"+first, "", ""); got.status != 200 || got.json["id"] != first {
		t.Errorf("one of ada's orders: %d %s", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/users/"+bob+"/orders/"+first, "", ""); got.status != 404 {
		t.Errorf("ada's order read as bob's: %d %s; want 404", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/users/usr_nope/orders", "", ""); got.status != 404 {
		t.Errorf("orders of a user never created: %d %s; want 404", got.status, got.body)
	}

	// Written /users/{id}/orders, the variable is every item's own id
	// field: nothing says whose an order is, and the list stays the
	// spec's. metadata: {type: object} (additionalProperties left out) is
	// free-form: a create holds the keys it sent.
	byID := strings.NewReplacer("/users/{user}", "/users/{id}", "{name: user, in: path", "{name: id, in: path",
		"labels: {type: object, additionalProperties: {type: string}}", "labels: {type: object}").Replace(doc)
	hs = serveDoc(t, byID, nil)
	ada = user()
	order(`{"user":"` + ada + `"}`)
	if got := call(t, "GET", hs.URL+"/users/"+ada+"/orders", "", ""); got.status != 200 || !slices.Equal(listed(got, "id"), []string{"ord_1"}) {
		t.Errorf("/users/{id}/orders: %d %s; want the spec's example", got.status, got.body)
	}
	created := call(t, "POST", hs.URL+"/orders", "application/json", `{"labels":{"gift":"yes"}}`)
	if fmt.Sprint(created.json["labels"]) != "map[gift:yes]" {
		t.Errorf("labels: {type: object}: %s; want the keys sent alone", created.body)
	}
}

// TestDeleteAnsweringTheResourceKeepsIt: in a spec whose deletes answer
// an object that says deleted (deleted: {enum: [true]}, as Stripe's do), a
// DELETE whose answer is the resource its path reads (a job, canceled)
// acts on the stored object and keeps it; one whose answer says deleted
// deletes it. In a spec without that convention (a deleted: boolean is a
// soft delete's flag), a DELETE answering the resource deletes it.
func TestDeleteAnsweringTheResourceKeepsIt(t *testing.T) {
	t.Parallel()
	doc := `openapi: 3.1.0
info: {title: Jobs, version: "1"}
paths:
  /jobs:
    post:
      requestBody: {content: {application/json: {schema: {type: object, properties: {name: {type: string}}}}}}
      responses:
        "201": {description: made, content: {application/json: {schema: {$ref: '#/components/schemas/Job'}}}}
  /jobs/{job}:
    parameters: [{name: job, in: path, required: true, schema: {type: string}}]
    get:
      responses:
        "200": {description: it, content: {application/json: {schema: {$ref: '#/components/schemas/Job'}}}}
        "404": {description: none}
    delete:
      responses:
        "200": {description: canceled, content: {application/json: {schema: {$ref: '#/components/schemas/Job'}}}}
        "404": {description: none}
  /notes:
    post:
      requestBody: {content: {application/json: {schema: {type: object, properties: {text: {type: string}}}}}}
      responses:
        "201": {description: made, content: {application/json: {schema: {$ref: '#/components/schemas/Note'}}}}
  /notes/{note}:
    parameters: [{name: note, in: path, required: true, schema: {type: string}}]
    get:
      responses:
        "200": {description: it, content: {application/json: {schema: {$ref: '#/components/schemas/Note'}}}}
        "404": {description: none}
    delete:
      responses:
        "200": {description: gone, content: {application/json: {schema: {type: object, properties: {id: {type: string}, deleted: {type: boolean, enum: [true]}}}}}}
        "404": {description: none}
components:
  schemas:
    Job: {type: object, properties: {id: {type: string, example: job_1}, name: {type: string}}}
    Note: {type: object, properties: {id: {type: string, example: note_1}, text: {type: string}}}
`
	hs := serveDoc(t, doc, nil)
	job := call(t, "POST", hs.URL+"/jobs", "application/json", `{"name":"nightly"}`)
	id, _ := job.json["id"].(string)
	if got := call(t, "DELETE", hs.URL+"/jobs/"+id, "", ""); got.status != 200 || got.json["id"] != id || got.json["name"] != "nightly" {
		t.Fatalf("cancel of a job: %d %s", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/jobs/"+id, "", ""); got.status != 200 || got.json["name"] != "nightly" {
		t.Errorf("job after DELETE answered a job: %d %s; want it kept", got.status, got.body)
	}
	note := call(t, "POST", hs.URL+"/notes", "application/json", `{"text":"eggs"}`)
	nid, _ := note.json["id"].(string)
	if got := call(t, "DELETE", hs.URL+"/notes/"+nid, "", ""); got.status != 200 {
		t.Fatalf("delete of a note: %d %s", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/notes/"+nid, "", ""); got.status != 404 {
		t.Errorf("note after DELETE answered deleted: %d %s; want 404", got.status, got.body)
	}

	// A deleted field that may be false (a soft delete's flag) does not
	// say deleted: the spec has no such convention, and DELETE deletes.
	soft := strings.Replace(doc, "deleted: {type: boolean, enum: [true]}", "deleted: {type: boolean}", 1)
	hs = serveDoc(t, soft, nil)
	job = call(t, "POST", hs.URL+"/jobs", "application/json", `{"name":"nightly"}`)
	id, _ = job.json["id"].(string)
	if got := call(t, "DELETE", hs.URL+"/jobs/"+id, "", ""); got.status != 200 {
		t.Fatalf("delete of a job: %d %s", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/jobs/"+id, "", ""); got.status != 404 {
		t.Errorf("job after DELETE, in a spec whose deletes never say deleted: %d %s; want 404", got.status, got.body)
	}
}

// A create gives the new id to the strings below the object that held
// the example's, as to its own fields: an order's lines name their order
// (lines.data[0].order, lines.url), as a Stripe subscription's items do.
// An id too short to be told from other text is left alone there.
func TestCreateCarriesItsIDDeeper(t *testing.T) {
	t.Parallel()
	doc := `openapi: 3.1.0
info: {title: Orders, version: "1"}
paths:
  /orders:
    post:
      requestBody: {content: {application/json: {schema: {type: object, properties: {note: {type: string}}}}}}
      responses:
        "201":
          description: made
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Order'}
              example: {id: ord_0123456789, note: a, lines: {url: /orders/ord_0123456789/lines, data: [{id: line_1, order: ord_0123456789, tags: [ord_0123456789, other]}]}}
  /orders/{order}:
    parameters: [{name: order, in: path, required: true, schema: {type: string}}]
    get:
      responses:
        "200": {description: it, content: {application/json: {schema: {$ref: '#/components/schemas/Order'}}}}
        "404": {description: none}
  /tickets:
    post:
      responses:
        "201":
          description: made
          content:
            application/json:
              schema: {type: object, properties: {id: {type: string}, seat: {type: object, properties: {row: {type: string}}}}}
              example: {id: t1, seat: {row: t1}}
components:
  schemas:
    Order:
      type: object
      properties:
        id: {type: string}
        note: {type: string}
        lines: {type: object, properties: {url: {type: string}, data: {type: array, items: {type: object, properties: {id: {type: string}, order: {type: string}, tags: {type: array, items: {type: string}}}}}}}
`
	hs := serveDoc(t, doc, nil)
	for i := range 2 { // the example stays the example: the second create starts from it again
		made := call(t, "POST", hs.URL+"/orders", "application/json", `{"note":"b"}`)
		id, _ := made.json["id"].(string)
		if made.status != 201 || id == "ord_0123456789" || !strings.HasPrefix(id, "ord_") {
			t.Fatalf("create %d: %d %s; want a fresh ord_ id", i, made.status, made.body)
		}
		for _, a := range []answer{made, call(t, "GET", hs.URL+"/orders/"+id, "", "")} {
			want := `{"data":[{"id":"line_1","order":"` + id + `","tags":["` + id + `","other"]}],"url":"/orders/` + id + `/lines"}` // keys sorted, as json.Marshal writes a map
			if got, _ := json.Marshal(a.json["lines"]); string(got) != want {
				t.Errorf("create %d: lines %s; want %s", i, got, want)
			}
		}
	}
	ticket := call(t, "POST", hs.URL+"/tickets", "", "")
	if seat, _ := ticket.json["seat"].(map[string]any); ticket.status != 201 || ticket.json["id"] == "t1" || seat["row"] != "t1" {
		t.Errorf("ticket: %d %s; want a fresh id and the seat's row t1 as it was", ticket.status, ticket.body)
	}
}
