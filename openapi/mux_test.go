package openapi_test

// Tests that serve an excerpt of Mux's API description (testdata/mux,
// see its SOURCE.md): OpenAPI 3.0.3 whose answers are envelopes, an
// asset's {"data": {…}} and a list's {"data": […]}.

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/scenariomock/scenariomock/openapi"
)

// muxAssets is the excerpt's path, served read-only by each test.
var muxAssets = filepath.Join("testdata", "mux", "assets.json")

// TestMuxEnvelopes: Mux answers an asset as {"data": asset}. State by
// convention looked for the id at the answer's top, found none, and kept
// nothing: a create answered the example's asset (its id
// SqQnqz6s…), a read of
// the id it answered was the example again, whatever the id, and the list
// never held what was created. The item inside the envelope is stored,
// read, listed and deleted, and each answer is wrapped as the spec's.
func TestMuxEnvelopes(t *testing.T) {
	t.Parallel()
	_, hs := serveSpec(t, muxAssets, nil)
	c := conformanceOf(t, muxAssets)
	auth := []string{"Authorization", "Basic dG9rZW46c2VjcmV0"}
	const assets = "/video/v1/assets"
	create := func(mp4 string) string {
		t.Helper()
		got := call(t, "POST", hs.URL+assets, "application/json", `{"input":[{"url":"https://example.com/a.mp4"}],"playback_policy":["public"],"mp4_support":"`+mp4+`"}`, auth...)
		c.check(t, "POST", hs.URL+assets, got)
		data, _ := got.json["data"].(map[string]any)
		id, _ := data["id"].(string)
		if got.status != 201 || id == "" || id == "SqQnqz6s5MBuXGvJaUWdXuXM93J9Q2yv" || data["mp4_support"] != mp4 {
			t.Fatalf("create: %d %s; want 201 with a fresh id and the mp4_support sent, in data", got.status, got.body)
		}
		return id
	}
	first, second := create("standard"), create("none")
	read := call(t, "GET", hs.URL+assets+"/"+first, "", "", auth...)
	c.check(t, "GET", hs.URL+assets+"/"+first, read)
	if data, _ := read.json["data"].(map[string]any); read.status != 200 || data["id"] != first || data["mp4_support"] != "standard" {
		t.Fatalf("read: %d %s; want the first asset in data", read.status, read.body)
	}
	list := call(t, "GET", hs.URL+assets, "", "", auth...)
	c.check(t, "GET", hs.URL+assets, list)
	if got := listed(list, "id"); list.status != 200 || len(got) != 2 || got[0] != second || got[1] != first {
		t.Fatalf("list: %d %s; want both assets, newest first", list.status, list.body)
	}
	if got := call(t, "DELETE", hs.URL+assets+"/"+first, "", "", auth...); got.status != 204 {
		t.Fatalf("delete: %d %s", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+assets+"/"+first, "", "", auth...); got.status != 404 {
		t.Fatalf("read after delete: %d %s; want 404", got.status, got.body)
	}
	// A playback id made below the second asset is read back there, in
	// its envelope too.
	pids := assets + "/" + second + "/playback-ids"
	made := call(t, "POST", hs.URL+pids, "application/json", `{"policy":"signed"}`, auth...)
	c.check(t, "POST", hs.URL+pids, made)
	data, _ := made.json["data"].(map[string]any)
	pid, _ := data["id"].(string)
	if made.status != 201 || pid == "" || pid == "id" || data["policy"] != "signed" {
		t.Fatalf("create a playback id: %d %s; want 201 with a fresh id and the policy sent, in data", made.status, made.body)
	}
	got := call(t, "GET", hs.URL+pids+"/"+pid, "", "", auth...)
	c.check(t, "GET", hs.URL+pids+"/"+pid, got)
	if data, _ := got.json["data"].(map[string]any); got.status != 200 || data["id"] != pid || data["policy"] != "signed" {
		t.Fatalf("read the playback id: %d %s; want it in data", got.status, got.body)
	}
}

// TestEnvelopeUpdate: an update sent in the answers' envelope ({"data":
// {"title": …}}, as JSON:API-like APIs take it) sets the item's fields.
// Its body's schema is the envelope, which lists data alone: every field
// of the item was taken as one the body does not list, and kept.
func TestEnvelopeUpdate(t *testing.T) {
	t.Parallel()
	spec := filepath.Join("testdata", "envelope", "openapi.yaml")
	_, hs := serveSpec(t, spec, nil)
	made := call(t, "POST", hs.URL+"/notes", "application/json", `{"data":{"title":"hi","body":"x"}}`)
	data, _ := made.json["data"].(map[string]any)
	id, _ := data["id"].(string)
	if made.status != 201 || id == "" || id == "note_abcdefgh" || data["title"] != "hi" {
		t.Fatalf("create: %d %s; want 201 with a fresh id and the title sent, in data", made.status, made.body)
	}
	for _, method := range []string{"PATCH", "GET"} {
		got := call(t, method, hs.URL+"/notes/"+id, "application/json", map[string]string{"PATCH": `{"data":{"title":"new","body":null}}`}[method])
		data, _ := got.json["data"].(map[string]any)
		if got.status != 200 || data["title"] != "new" || data["body"] != nil || data["id"] != id || got.json["meta"] == nil {
			t.Fatalf("%s: %d %s; want the new title and a null body, in data beside meta", method, got.status, got.body)
		}
	}
}

// TestMuxLimitDefault: Mux's list of assets declares limit with a
// default of 25, which sizes a page that does not ask; it was 10.
func TestMuxLimitDefault(t *testing.T) {
	t.Parallel()
	_, hs := serveSpec(t, muxAssets, nil)
	auth := []string{"Authorization", "Basic dG9rZW46c2VjcmV0"}
	for range 12 {
		if got := call(t, "POST", hs.URL+"/video/v1/assets", "application/json", `{"input":[{"url":"https://example.com/a.mp4"}]}`, auth...); got.status != 201 {
			t.Fatalf("create: %d %s", got.status, got.body)
		}
	}
	for query, want := range map[string]int{"": 12, "?limit=5": 5} {
		if got := listed(call(t, "GET", hs.URL+"/video/v1/assets"+query, "", "", auth...), "id"); len(got) != want {
			t.Errorf("GET /video/v1/assets%s: %d assets; want %d", query, len(got), want)
		}
	}
}

// TestMuxCreateEchoesWhatTheExampleLacks: the example Mux's create answers
// has no passthrough or normalize_audio, so an asset created with them
// was answered and stored without them, though an asset has both fields
// (the example of the whole Asset schema shows them).
func TestMuxCreateEchoesWhatTheExampleLacks(t *testing.T) {
	t.Parallel()
	_, hs := serveSpec(t, muxAssets, nil)
	c := conformanceOf(t, muxAssets)
	auth := []string{"Authorization", "Basic dG9rZW46c2VjcmV0"}
	const assets = "/video/v1/assets"
	made := call(t, "POST", hs.URL+assets, "application/json", `{"input":[{"url":"https://example.com/a.mp4"}],"passthrough":"order 42","normalize_audio":true}`, auth...)
	c.check(t, "POST", hs.URL+assets, made)
	data, _ := made.json["data"].(map[string]any)
	id, _ := data["id"].(string)
	read := call(t, "GET", hs.URL+assets+"/"+id, "", "", auth...)
	c.check(t, "GET", hs.URL+assets+"/"+id, read)
	for _, a := range []answer{made, read} {
		data, _ := a.json["data"].(map[string]any)
		if data["passthrough"] != "order 42" || data["normalize_audio"] != true {
			t.Errorf("%d %s; want the passthrough and normalize_audio sent, in data", a.status, a.body)
		}
	}
}

// envelopeDir copies testdata/envelope's spec and a scenario file naming
// it into a fresh dir, for serveDir.
func envelopeDir(t *testing.T, scenario string) string {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", "envelope", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "openapi.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pets.yaml"), []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestEnvelopeReadPatch: a route's body: on a read of an item answered in
// an envelope ({"data": note}) was laid on the envelope, beside data, where
// on a create or update it is laid on the item; it is laid on the item.
func TestEnvelopeReadPatch(t *testing.T) {
	t.Parallel()
	_, hs := serveDir(t, envelopeDir(t, `openapi: {spec: openapi.yaml}
routes:
  - name: getNote
    method: GET
    path: /notes/{id}
    operation: getNote
    respond: {body: {title: pinned}}
`), openapi.Options{})
	made := call(t, "POST", hs.URL+"/notes", "application/json", `{"data":{"title":"hi","body":"x"}}`)
	data, _ := made.json["data"].(map[string]any)
	id, _ := data["id"].(string)
	got := call(t, "GET", hs.URL+"/notes/"+id, "", "")
	data, _ = got.json["data"].(map[string]any)
	if _, outside := got.json["title"]; got.status != 200 || data["title"] != "pinned" || data["body"] != "x" || data["id"] != id || outside {
		t.Fatalf("read: %d %s; want the title laid on the note in data, not beside it", got.status, got.body)
	}
}

// envelopeAllOf answers a note in an envelope written as allOf a generic
// wrapper (data: any object, meta) and its own data, as generated
// JSON:API descriptions write it.
const envelopeAllOf = `openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /notes:
    post:
      operationId: createNote
      requestBody:
        content: {application/json: {schema: {$ref: '#/components/schemas/NoteDoc'}}}
      responses:
        '201': {description: made, content: {application/json: {schema: {$ref: '#/components/schemas/NoteDoc'}}}}
  /notes/{id}:
    parameters: [{name: id, in: path, required: true, schema: {type: string}}]
    get:
      operationId: getNote
      responses:
        '200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/NoteDoc'}}}}
components:
  schemas:
    Document:
      type: object
      properties:
        data: {type: object}
        meta: {type: object, properties: {version: {type: string, const: "1"}}}
    NoteDoc:
      allOf:
        - $ref: '#/components/schemas/Document'
        - properties:
            data: {$ref: '#/components/schemas/Note'}
    Note:
      type: object
      properties:
        id: {type: string, readOnly: true, examples: [note_abcdefgh]}
        title: {type: string}
`

// TestEnvelopeThroughAllOf: an envelope written as allOf a wrapper and its
// own data was not taken for one (its properties were read from the schema
// itself, which has none), so nothing was stored: a create answered the
// example's id and a read of it was the example again, whatever its title.
func TestEnvelopeThroughAllOf(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, envelopeAllOf, nil)
	made := call(t, "POST", hs.URL+"/notes", "application/json", `{"data":{"title":"hi"}}`)
	data, _ := made.json["data"].(map[string]any)
	id, _ := data["id"].(string)
	if made.status != 201 || id == "" || id == "note_abcdefgh" || data["title"] != "hi" {
		t.Fatalf("create: %d %s; want 201 with a fresh id and the title sent, in data", made.status, made.body)
	}
	got := call(t, "GET", hs.URL+"/notes/"+id, "", "")
	data, _ = got.json["data"].(map[string]any)
	if got.status != 200 || data["id"] != id || data["title"] != "hi" || got.json["meta"] == nil {
		t.Fatalf("read: %d %s; want the note made, in data beside meta", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/notes/note_never", "", ""); got.status != 404 {
		t.Fatalf("read of an id never created: %d %s; want 404", got.status, got.body)
	}
}

// jsonAPIArticles answers an article as JSON:API does: the resource in
// data, and links.self naming it, the example's id 1 in both.
const jsonAPIArticles = `openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /articles:
    post:
      operationId: createArticle
      requestBody:
        content: {application/vnd.api+json: {schema: {$ref: '#/components/schemas/ArticleDoc'}}}
      responses:
        '201':
          description: made
          content:
            application/vnd.api+json:
              schema: {$ref: '#/components/schemas/ArticleDoc'}
              example: {data: {type: articles, id: "1", attributes: {title: JSON:API paints my bikeshed!}}, links: {self: 'https://api.example.com/articles/1', author: 'https://api.example.com/articles/1/author'}}
  /articles/{id}:
    get:
      operationId: getArticle
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses:
        '200':
          description: ok
          content:
            application/vnd.api+json:
              schema: {$ref: '#/components/schemas/ArticleDoc'}
              example: {data: {type: articles, id: "1", attributes: {title: JSON:API paints my bikeshed!}}, links: {self: 'https://api.example.com/articles/1', author: 'https://api.example.com/articles/1/author'}}
components:
  schemas:
    ArticleDoc:
      type: object
      properties:
        data:
          type: object
          properties:
            type: {type: string}
            id: {type: string}
            attributes: {type: object, properties: {title: {type: string}}}
        links: {type: object, properties: {self: {type: string}, author: {type: string}}}
`

// TestJSONAPISelfLink: a JSON:API answer's links.self kept the example's
// id (…/articles/1) while its data was the article made or read.
func TestJSONAPISelfLink(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, jsonAPIArticles, nil)
	made := call(t, "POST", hs.URL+"/articles", "application/vnd.api+json", `{"data":{"type":"articles","attributes":{"title":"Rails is omakase"}}}`)
	data, _ := made.json["data"].(map[string]any)
	id, _ := data["id"].(string)
	if made.status != 201 || id == "" || id == "1" {
		t.Fatalf("create: %d %s; want 201 with a fresh id", made.status, made.body)
	}
	for _, a := range []answer{made, call(t, "GET", hs.URL+"/articles/"+id, "", "")} {
		links, _ := a.json["links"].(map[string]any)
		data, _ := a.json["data"].(map[string]any)
		if data["id"] != id || links["self"] != "https://api.example.com/articles/"+id || links["author"] != "https://api.example.com/articles/"+id+"/author" {
			t.Errorf("%d %s; want the links to name article %s", a.status, a.body, id)
		}
	}
}
