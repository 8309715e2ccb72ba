package openapi_test

// Tests that serve an excerpt of Svix's API description (testdata/svix,
// see its SOURCE.md): OpenAPI 3.1.0 in JSON that still writes 3.0's
// nullable: true, with lists paged by an iterator.

import (
	"path/filepath"
	"strings"
	"testing"
)

// svixApps is the excerpt's path, served read-only by each test.
var svixApps = filepath.Join("testdata", "svix", "app.json")

// TestSvixNullableIn31: Svix's 3.1 document marks optional fields
// nullable: true, as 3.0 did. libopenapi-validator refuses the keyword in
// 3.1 as a schema it cannot compile, so every create was a 400 ("The
// `nullable` keyword is not supported in OpenAPI 3.1+"), and every list
// with its iterator query parameter too. The document is read as its
// authors meant: null is taken where nullable: true is written, and
// refused elsewhere.
func TestSvixNullableIn31(t *testing.T) {
	t.Parallel()
	_, hs := serveSpec(t, svixApps, nil)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		detail                   string // in the answer's body
	}{
		{"create", "POST", "/api/v1/app", `{"name":"Shop"}`, 200, `"name":"Shop"`},
		{"create with nulls where nullable", "POST", "/api/v1/app", `{"name":"Shop","uid":null,"throttleRate":null}`, 200, `"uid":null`},
		{"a null name, not nullable", "POST", "/api/v1/app", `{"name":null}`, 400, "#/name"},
		{"an empty name", "POST", "/api/v1/app", `{"name":""}`, 400, "#/name"},
		{"an iterator of the wrong pattern", "GET", "/api/v1/app?iterator=nope", "", 400, "iterator"},
	} {
		got := call(t, tc.method, hs.URL+tc.path, "application/json", tc.body, "Authorization", "Bearer sk_test")
		if got.status != tc.status || !strings.Contains(got.body, tc.detail) || strings.Contains(got.body, "nullable") {
			t.Errorf("%s: %s %s %s: %d %s; want %d with %q", tc.name, tc.method, tc.path, tc.body, got.status, got.body, tc.status, tc.detail)
		}
	}
}
