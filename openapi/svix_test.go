package openapi_test

// Tests that serve an excerpt of Svix's API description (testdata/svix,
// see its SOURCE.md): OpenAPI 3.1.0 in JSON that still writes 3.0's
// nullable: true, with lists paged by an iterator.

import (
	"fmt"
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

// TestSvixIteratorPages: Svix pages a list with the iterator its answer
// gives (the last item's id) and says done on the last page. The answer's
// iterator was the spec's example ("iterator") and done false, so a
// client paging until done looped for ever, and an iterator was not read.
func TestSvixIteratorPages(t *testing.T) {
	t.Parallel()
	_, hs := serveSpec(t, svixApps, nil)
	auth := []string{"Authorization", "Bearer sk_test"}
	var made []string
	for i := range 5 {
		got := call(t, "POST", hs.URL+"/api/v1/app", "application/json", fmt.Sprintf(`{"name":"app %d"}`, i), auth...)
		if got.status != 200 {
			t.Fatalf("create: %d %s", got.status, got.body)
		}
		made = append([]string{got.json["id"].(string)}, made...) // newest first, as listed
	}
	var seen []string
	url := hs.URL + "/api/v1/app?limit=2"
	for pages := 1; ; pages++ {
		got := call(t, "GET", url, "", "", auth...)
		if got.status != 200 || pages > 3 {
			t.Fatalf("page %d: %d %s; want 3 pages of 200", pages, got.status, got.body)
		}
		seen = append(seen, listed(got, "id")...)
		if got.json["done"] == true {
			if got.json["iterator"] != nil || pages != 3 {
				t.Fatalf("page %d: %s; want done on page 3, with a null iterator", pages, got.body)
			}
			break
		}
		it, _ := got.json["iterator"].(string)
		if !strings.HasPrefix(it, "app_") {
			t.Fatalf("page %d: iterator %q; want the page's last id", pages, it)
		}
		url = hs.URL + "/api/v1/app?limit=2&iterator=" + it
	}
	if fmt.Sprint(seen) != fmt.Sprint(made) {
		t.Fatalf("paged through %v; want every app once, newest first: %v", seen, made)
	}
	// An iterator naming no stored app is the list's 400, as any cursor's.
	if got := call(t, "GET", hs.URL+"/api/v1/app?iterator=app_1srOrx2ZWZBpBUvZwXKQmoEYga2", "", "", auth...); got.status != 400 || !strings.Contains(got.body, "iterator") {
		t.Fatalf("an unknown iterator: %d %s; want a 400 naming it", got.status, got.body)
	}
}

// TestSvixLimitMaximum: Svix's list takes a limit of up to 250, its
// parameter's maximum; one past 100 was taken as the default, 10.
func TestSvixLimitMaximum(t *testing.T) {
	t.Parallel()
	_, hs := serveSpec(t, svixApps, nil)
	auth := []string{"Authorization", "Bearer sk_test"}
	for i := range 105 {
		if got := call(t, "POST", hs.URL+"/api/v1/app", "application/json", fmt.Sprintf(`{"name":"app %d"}`, i), auth...); got.status != 200 {
			t.Fatalf("create: %d %s", got.status, got.body)
		}
	}
	for query, want := range map[string]int{"?limit=250": 105, "?limit=101": 101, "?limit=100": 100, "": 10} {
		if got := listed(call(t, "GET", hs.URL+"/api/v1/app"+query, "", "", auth...), "id"); len(got) != want {
			t.Errorf("GET /api/v1/app%s: %d apps; want %d", query, len(got), want)
		}
	}
	if got := call(t, "GET", hs.URL+"/api/v1/app?limit=251", "", "", auth...); got.status != 400 {
		t.Errorf("GET /api/v1/app?limit=251: %d; want the 400 of a limit past its maximum", got.status)
	}
}
