package openapi_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
)

// refsDoc is a Stripe-shaped document (testdata/refs): an order's
// customer is an id, or the customer expanded (anyOf the two, the customer
// a resource by its x-resourceId), so a body's customer names a stored
// customer.
func refsDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "refs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReferences: a create whose body names a stored resource by an id
// not stored is refused, 400 resource_missing naming the field, and makes
// nothing; references: off takes it; unknownIds: generate takes an id
// never created but not one deleted; existingIds are taken as there.
func TestReferences(t *testing.T) {
	t.Parallel()
	js := "application/json"
	for _, tc := range []struct {
		name                string
		tweak               func(*scenarios.OpenAPISource)
		nope, deleted, test int // the statuses of an order for cus_nope, a deleted customer, cus_test_1
	}{
		{"check", nil, 400, 400, 400},
		{"off", func(s *scenarios.OpenAPISource) { s.References = "off" }, 200, 200, 200},
		{"generate", func(s *scenarios.OpenAPISource) { s.UnknownIDs = "generate" }, 200, 400, 200},
		{"existing", func(s *scenarios.OpenAPISource) { s.ExistingIDs = regexp.MustCompile(`^cus_test_`) }, 400, 400, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := serveDoc(t, refsDoc(t), tc.tweak)
			made := call(t, "POST", hs.URL+"/customers", "", "")
			kept, _ := made.json["id"].(string)
			gone, _ := call(t, "POST", hs.URL+"/customers", "", "").json["id"].(string)
			if del := call(t, "DELETE", hs.URL+"/customers/"+gone, "", ""); made.status != 200 || del.status != 200 {
				t.Fatalf("customers: %d %s, delete %d %s", made.status, made.body, del.status, del.body)
			}
			if got := call(t, "POST", hs.URL+"/orders", js, `{"customer":"`+kept+`","note":"n"}`); got.status != 200 || got.json["customer"] != kept {
				t.Errorf("order for a stored customer: %d %s", got.status, got.body)
			}
			for _, c := range []struct {
				id   string
				want int
			}{{"cus_nope", tc.nope}, {gone, tc.deleted}, {"cus_test_1", tc.test}} {
				got := call(t, "POST", hs.URL+"/orders", js, `{"customer":"`+c.id+`"}`)
				if got.status != c.want {
					t.Errorf("order for %s: %d %s; want %d", c.id, got.status, got.body, c.want)
					continue
				}
				if errs, _ := got.json["errors"].([]any); c.want == 400 && (len(errs) != 1 || errs[0].(map[string]any)["pointer"] != "#/customer" ||
					got.json["detail"] != "No such customer: '"+c.id+"' (body field customer).") {
					t.Errorf("order for %s: %s; want No such customer, at #/customer", c.id, got.body)
				}
			}
		})
	}
}

// TestReferencesBlock: the openapi: block's references: and existingIds:
// are read from a scenario file, and a bad value is refused at its
// file:line:col.
func TestReferencesBlock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "spec.yaml"), []byte(refsDoc(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	load := func(block string) (*scenarios.Set, error) {
		file := filepath.Join(dir, "s.yaml")
		if err := os.WriteFile(file, []byte("openapi:\n  spec: spec.yaml\n"+block), 0o644); err != nil {
			t.Fatal(err)
		}
		return scenarios.Load(file)
	}
	set, err := load("  references: off\n  existingIds: '^cus_test_'\n")
	if err != nil {
		t.Fatal(err)
	}
	if src := set.OpenAPISources()[0]; src.References != "off" || src.ExistingIDs == nil || src.ExistingIDs.String() != "^cus_test_" {
		t.Errorf("read %q and %v", src.References, src.ExistingIDs)
	}
	for block, want := range map[string]string{
		"  references: sometimes\n": "s.yaml:3:15: openapi.references",
		"  existingIds: '(cus'\n":   "s.yaml:3:16: openapi.existingIds: bad regex",
	} {
		if _, err := load(block); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", block, err, want)
		}
	}
}

// TestScopeOfErrors: a scopeOf: whose resource no document of the set
// stores, or that the set serves no document for, and a path of its own
// whose variables are not its operation's, are refused at their
// file:line:col; a path of its own with the operation's variables loads.
func TestScopeOfErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "spec.yaml"), []byte(refsDoc(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	load := func(head, route string) error {
		file := filepath.Join(dir, "s.yaml")
		if err := os.WriteFile(file, []byte(head+"routes:\n  - "+route+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		set, err := scenarios.Load(file)
		if err != nil {
			return err
		}
		return openapi.Expand(set, openapi.Options{})
	}
	doc := "openapi: {spec: spec.yaml, scope: credential}\n"
	for _, tc := range []struct{ name, head, route, want string }{
		{"a resource not stored", doc, "{name: x, method: GET, path: '/page/{id}', scopeOf: {resource: invoice, id: '{{ .Request.Vars.id }}'}, respond: {body: ok}}",
			`s.yaml:3:68: route "x": scopeOf: resource "invoice": the document stores no such resource; name one a create of the document makes (customer, order)`},
		{"no document", "", "{name: x, method: GET, path: '/page/{id}', scopeOf: {resource: customer, id: '{{ .Request.Vars.id }}'}, respond: {body: ok}}",
			`s.yaml:2:68: route "x": scopeOf: resource "customer": the set serves no OpenAPI document`},
		{"a path of its own with other variables", doc, "{name: x, method: DELETE, path: '/page/{cus}', operation: deleteCustomer, scopeOf: {resource: customer, id: '{{ .Request.Vars.cus }}'}}",
			`s.yaml:3:37: route "x": path: a path of its own (scopeOf:) has the variables of operation "deleteCustomer"'s, /customers/{id}`},
		{"a path of its own without scopeOf:", doc, "{name: x, method: DELETE, path: '/page/{id}', operation: deleteCustomer}",
			`operation "deleteCustomer" is DELETE /customers/{id}`},
		{"a path of its own", doc, "{name: x, method: DELETE, path: '/page/{id}/delete', operation: deleteCustomer, scopeOf: {resource: customer, id: '{{ .Request.Vars.id }}'}}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := load(tc.head, tc.route)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%v; want it loaded", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%v; want %s", err, tc.want)
			}
		})
	}
}
