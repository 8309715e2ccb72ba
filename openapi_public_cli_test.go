package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeOpenAPISplitAcrossFiles runs `serve --openapi` on Redocly
// Cafe's description (openapi/testdata/redocly-cafe, 40 files in four
// directories) and edits its files as a user would, with the real
// watcher: an edit of a path file two directories down is served once the
// watcher sees it (a header parameter becomes required), a syntax error
// in a schema file logs that file's line and column and keeps the last
// good set, and repairing it reloads.
func TestServeOpenAPISplitAcrossFiles(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	src := filepath.Join("openapi", "testdata", "redocly-cafe", "openapi")
	dir := filepath.Join(t.TempDir(), "cafe")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	_, addr, logs := started(t, bin, "--openapi", filepath.Join(dir, "openapi.yaml"), "--debounce", "10ms")
	orders := func(branch string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+addr+"/orders", nil)
		if branch != "" {
			req.Header.Set("X-Cafe-Branch", branch)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET /orders: %v\n%s", err, logs)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := orders(""); code != 200 || !strings.Contains(body, `"items"`) {
		t.Fatalf("GET /orders: %d %s", code, body)
	}

	pathFile := filepath.Join(dir, "paths", "orders.yaml")
	orig, _ := os.ReadFile(pathFile)
	header := strings.Replace(string(orig), "  parameters:\n    - $ref: ../components/parameters/Filter.yaml\n",
		"  parameters:\n    - {name: X-Cafe-Branch, in: header, required: true, schema: {type: string, pattern: '^[a-z]+$'}}\n    - $ref: ../components/parameters/Filter.yaml\n", 1)
	if header == string(orig) {
		t.Fatal("paths/orders.yaml changed: the edit does not apply")
	}
	if err := os.WriteFile(pathFile, []byte(header), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { code, _ := orders(""); return code == 400 }, "the header parameter added in paths/orders.yaml to be enforced", logs)
	if code, body := orders(""); !strings.Contains(body, `"in":"header","name":"X-Cafe-Branch"`) {
		t.Fatalf("GET /orders without the header: %d %s; want a violation of header X-Cafe-Branch", code, body)
	}
	if code, body := orders("Soho"); code != 400 || !strings.Contains(body, "does not match pattern") {
		t.Fatalf("GET /orders with X-Cafe-Branch: Soho: %d %s; want the pattern refused", code, body)
	}
	if code, body := orders("soho"); code != 200 {
		t.Fatalf("GET /orders with a valid header: %d %s", code, body)
	}

	schemaFile := filepath.Join(dir, "components", "schemas", "Order.yaml")
	schema, _ := os.ReadFile(schemaFile)
	if err := os.WriteFile(schemaFile, []byte(strings.Replace(string(schema), "  customerName:\n", "  customerName: [\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(logs.String(), "reload failed") }, "the broken schema file's reload to fail", logs)
	if !strings.Contains(logs.String(), filepath.Join("components", "schemas", "Order.yaml")+":") || !strings.Contains(logs.String(), "does not parse as YAML") {
		t.Errorf("the reload error does not name components/schemas/Order.yaml:line:col:\n%s", logs)
	}
	if code, body := orders("soho"); code != 200 {
		t.Fatalf("GET /orders after a broken edit: %d %s; want the last good set", code, body)
	}
	if err := os.WriteFile(schemaFile, schema, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pathFile, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { code, _ := orders(""); return code == 200 }, "the repaired files to be served", logs)
}
