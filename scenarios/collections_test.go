package scenarios

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSeeds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"a.yaml": "collections:\n  customers:\n    - { id: cus_1, name: Ada, tags: [a, b] }\n    - { id: 7, name: Grace }\n  empty:\nroutes: []\n",
		"b.yaml": "collections:\n  other: []\nroutes: []\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sd := range set.Seeds {
		got = append(got, sd.Name+":")
		for _, it := range sd.Items {
			got = append(got, it.ID+"="+string(it.Body))
		}
	}
	want := `customers: cus_1={"id":"cus_1","name":"Ada","tags":["a","b"]} 7={"id":7,"name":"Grace"} empty: other:`
	if strings.Join(got, " ") != want {
		t.Errorf("seeds:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	// A collection is seeded by one file: two would race for its items.
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte("collections:\n  customers: []\nroutes: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(dir)
	if err == nil || !strings.Contains(err.Error(), `c.yaml:2:3: collections: "customers" is seeded twice (first at `) {
		t.Errorf("seeded twice: %v", err)
	}
}

// TestScopeList reads a scope as a word or as a list of credential and
// header.<Name>, and names the place of a part it does not know.
func TestScopeList(t *testing.T) {
	set, err := LoadBytes("s.yaml", []byte(`routes:
  - path: /a
    respond: { list: { collection: c, scope: credential } }
  - path: /b
    respond: { list: { collection: c, scope: [credential, header.stripe-account] } }
  - path: /c
    respond: { list: { collection: c, scope: none } }
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range set.Routes() {
		got = append(got, r.Responses[0].Ref.Scope.String())
	}
	if want := []string{"credential", "credential header.Stripe-Account", "none"}; !slices.Equal(got, want) {
		t.Errorf("scopes %q, want %q", got, want)
	}
	_, err = LoadBytes("s.yaml", []byte("routes:\n  - path: /a\n    respond: { list: { collection: c, scope: [credential, query.x] } }\n"))
	if err == nil || !strings.Contains(err.Error(), "s.yaml:3:") || !strings.Contains(err.Error(), "query.x") {
		t.Errorf("an unknown scope part: %v; want its line and the part", err)
	}
}
