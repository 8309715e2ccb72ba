package scenarios

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestEndpointSource: endpointsFrom: is read with its defaults (url and
// secret fields, stripe signing), and its events may go nowhere else.
func TestEndpointSource(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.yaml")
	content := `
webhooks:
  scope: credential
  endpointsFrom:
    collection: hooks
    events: types
    when: { item: { active: true } }
    retry: { schedule: [1s], timeout: 2s }
routes:
  - name: create
    method: POST
    path: /things
    respond: { status: 201, body: { id: th_1 } }
    events: [{ type: thing.created }]
`
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	srcs := set.EndpointSources()
	if len(srcs) != 1 {
		t.Fatalf("EndpointSources = %v, want one", srcs)
	}
	src := srcs[0]
	if src.Name() != "hooks" || src.Collection != "hooks" || src.URL != "url" || src.Secret != "secret" || src.Events != "types" ||
		!src.HasWhen || !reflect.DeepEqual(src.When, map[string]any{"active": true}) || src.Settings.Signing != "stripe" ||
		!reflect.DeepEqual(src.Settings.Schedule, []time.Duration{time.Second}) || src.Settings.Timeout != 2*time.Second {
		t.Errorf("source = %+v", src)
	}
}

// TestEndpointSourceReadTwice: a runtime document may not read the
// endpoints that a file reads already.
func TestEndpointSourceReadTwice(t *testing.T) {
	t.Parallel()
	const content = "webhooks:\n  endpointsFrom: { collection: hooks }\n"
	base, err := LoadBytes("base.yaml", []byte(content))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := LoadDocument("doc.yaml", []byte(content))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Overlay(base, []*Set{doc}); err == nil || !strings.Contains(err.Error(), `webhooks.endpointsFrom: "hooks" is read twice (first at base.yaml:2:`) {
		t.Errorf("Overlay = %v, want the second endpointsFrom refused", err)
	}
}
