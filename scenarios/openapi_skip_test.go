package scenarios_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/scenarios"
)

// TestLoadSkipsOpenAPIDocuments puts OpenAPI documents (YAML and JSON,
// named .yaml) beside a scenario that names one in its openapi: block: the
// directory loads with the scenario's routes, the documents are not read
// as scenario files; a document named by itself is refused with the way
// to serve it.
func TestLoadSkipsOpenAPIDocuments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"api.yaml":  "openapi: 3.1.0\ninfo: {title: pets, version: '1'}\npaths: {}\n",
		"old.yaml":  "swagger: '2.0'\ninfo: {title: old, version: '1'}\npaths: {}\n",
		"json.yaml": "{\"components\": {}, \"openapi\": \"3.0.0\", \"info\": {\"title\": \"j\", \"version\": \"1\"}, \"paths\": {}}\n",
		"mock.yaml": "name: mock\nroutes:\n  - name: ping\n    method: GET\n    path: /ping\n    respond: {status: 200, body: pong}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := scenarios.Load(dir)
	if err != nil {
		t.Fatalf("Load: %v; want the OpenAPI documents skipped", err)
	}
	if n := len(set.Routes()); n != 1 {
		t.Errorf("%d routes; want mock.yaml's one", n)
	}
	_, err = scenarios.Load(filepath.Join(dir, "api.yaml"))
	if err == nil || !strings.Contains(err.Error(), "api.yaml:1:1: is an OpenAPI document, not a scenario file: serve it with --openapi") {
		t.Errorf("Load(api.yaml): %v; want it refused with the way to serve it", err)
	}
}
