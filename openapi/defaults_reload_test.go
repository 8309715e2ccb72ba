package openapi_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
)

// TestCachedDocumentTakesNewDefaults: a file's defaults: (idempotency:,
// lock:) edited in place, the spec unchanged, reach the generated routes
// at once, though the document comes from the cache: before, they kept
// the values of the first load until the spec changed.
func TestCachedDocumentTakesNewDefaults(t *testing.T) {
	dir := t.TempDir()
	spec := `openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /things:
    post:
      operationId: createThing
      responses: {"200": {description: ok, content: {application/json: {schema: {type: object, properties: {id: {type: string}}}}}}}
  /things/{id}:
    parameters: [{name: id, in: path, required: true, schema: {type: string}}]
    post:
      operationId: updateThing
      responses: {"200": {description: ok, content: {application/json: {schema: {type: object, properties: {id: {type: string}}}}}}}
`
	file := filepath.Join(dir, "s.yaml")
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("spec.yaml", spec)
	cache := openapi.NewCache()
	load := func(ttl, wait string) (*scenarios.Idempotency, *scenarios.Lock) {
		t.Helper()
		write("s.yaml", "openapi: {spec: spec.yaml}\ndefaults:\n  idempotency: { key: header.Idempotency-Key, ttl: "+ttl+" }\n  lock: { wait: "+wait+" }\n")
		set, err := scenarios.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := openapi.Expand(set, openapi.Options{Cache: cache}); err != nil {
			t.Fatal(err)
		}
		for _, r := range set.Routes() {
			if r.Name == "updateThing" {
				return r.Idempotency, r.Lock
			}
		}
		t.Fatal("no updateThing route")
		return nil, nil
	}
	id, l := load("1h", "2s")
	if id == nil || id.TTL != time.Hour || l == nil || l.Wait != 2*time.Second {
		t.Fatalf("first load: idempotency %+v, lock %+v", id, l)
	}
	id, l = load("5h", "7s") // the same lines, other values: the cache's document
	if id == nil || id.TTL != 5*time.Hour || l == nil || l.Wait != 7*time.Second {
		t.Fatalf("after an edit of the defaults: ttl %v, wait %v; want 5h, 7s", id.TTL, l.Wait)
	}
}
