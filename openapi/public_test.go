package openapi_test

// Tests that serve a second, non-Stripe description: Redocly Cafe
// (testdata/redocly-cafe, see its SOURCE.md), an OpenAPI 3.1 YAML document
// split across 40 files in four directories. Each test copies it into a
// fresh directory and serves it as `serve --openapi` does, over a real
// HTTP server.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi/datamodel"

	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/server"
)

// cafe copies the Redocly Cafe description into a fresh directory and
// returns the path of its root document.
func cafe(t *testing.T) string {
	t.Helper()
	src := filepath.Join("testdata", "redocly-cafe", "openapi")
	dst := filepath.Join(t.TempDir(), "cafe")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dst, "openapi.yaml")
}

// serveDoc writes doc, an OpenAPI document, into a file of its own and
// serves it (serveSpec).
func serveDoc(t *testing.T, doc string, tweak func(*scenarios.OpenAPISource)) *httptest.Server {
	t.Helper()
	spec := filepath.Join(t.TempDir(), "openapi.yaml")
	if err := os.WriteFile(spec, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, hs := serveSpec(t, spec, tweak)
	return hs
}

// serveSpec serves spec as `serve --openapi spec` does: no scenario
// files, the document's defaults (validate enforce, state on, unknown ids
// 404), changed by tweak.
func serveSpec(t *testing.T, spec string, tweak func(*scenarios.OpenAPISource)) (*server.Server, *httptest.Server) {
	t.Helper()
	src := openapi.FileSource(spec, "")
	if tweak != nil {
		tweak(src)
	}
	opts := openapi.Options{Extra: []*scenarios.OpenAPISource{src}, Cache: openapi.NewCache()}
	load := func() (*scenarios.Set, error) {
		set, err := scenarios.LoadBytes("cafe.yaml", []byte("routes: []\n"))
		if err != nil {
			return nil, err
		}
		return set, openapi.Expand(set, opts)
	}
	srv, err := server.New(server.Options{Load: load, Rand: server.SeededRand(7)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return srv, hs
}

// conformance validates answers against the served description with
// libopenapi-validator's own response validation, independent of the
// code under test.
type conformance struct{ v validator.Validator }

func conformanceOf(t *testing.T, spec string) conformance {
	t.Helper()
	data, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocumentWithConfiguration(data, &datamodel.DocumentConfiguration{
		BasePath: filepath.Dir(spec), SpecFilePath: filepath.Base(spec), AllowFileReferences: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return conformance{v}
}

// check fails the test when the answer to method url does not conform to
// the operation's responses.
func (c conformance) check(t *testing.T, method, url string, a answer) {
	t.Helper()
	req := httptest.NewRequest(method, url, nil)
	resp := &http.Response{StatusCode: a.status, Header: a.header, Body: io.NopCloser(strings.NewReader(a.body)), Request: req}
	if ok, errs := c.v.ValidateHttpResponse(req, resp); !ok {
		var msgs []string
		for _, e := range errs {
			msgs = append(msgs, e.Error())
			for _, s := range e.SchemaValidationErrors {
				msgs = append(msgs, "  "+s.FieldPath+": "+s.Reason)
			}
		}
		t.Errorf("%s %s answered %d %s %s, which breaks the spec:\n%s", method, url, a.status, a.header.Get("Content-Type"), a.body, strings.Join(msgs, "\n"))
	}
}

// multipartBody encodes fields as multipart/form-data.
func multipartBody(t *testing.T, fields ...string) (contentType, body string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for i := 0; i+1 < len(fields); i += 2 {
		if err := w.WriteField(fields[i], fields[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.FormDataContentType(), b.String()
}

// Ids as the Cafe's path parameters and schemas constrain them.
var (
	orderID    = regexp.MustCompile(`^ord_[0-9abcdefghjkmnpqrstvwxyz]{26}$`)
	menuItemID = regexp.MustCompile(`^prd_[0-9abcdefghjkmnpqrstvwxyz]{26}$`)
)

const (
	someOrder = "ord_01h1s5z6vf2mm1mz3hevnn9va7"
	someItem  = "prd_01h1s5z6vf2mm1mz3hevnn9va7"
)

// TestCafeRoutes: every operation of the document (12, in 8 path files)
// is a route named by its operationId whose source is the file and line
// where the operation is written, not the root document; the webhook is
// not a route.
func TestCafeRoutes(t *testing.T) {
	t.Parallel()
	spec := cafe(t)
	dir := filepath.Dir(spec)
	_, hs := serveSpec(t, spec, nil)
	var listing struct {
		Routes []struct {
			Name    string   `json:"name"`
			Methods []string `json:"methods"`
			Path    string   `json:"path"`
			Source  string   `json:"source"`
		} `json:"routes"`
	}
	if err := json.Unmarshal([]byte(call(t, "GET", hs.URL+"/__admin/scenarios", "", "").body), &listing); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range listing.Routes {
		got[r.Name] = strings.Join(r.Methods, ",") + " " + r.Path + " " + r.Source
	}
	want := map[string]string{
		"listMenuItems":        "GET /menu paths/menu.yaml:1:1",
		"createMenuItem":       "POST /menu paths/menu.yaml:35:1",
		"deleteMenuItem":       "DELETE /menu/{menuItemId} paths/menu_{menuItemId}.yaml:3:1",
		"getMenuItemPhoto":     "GET /menu-item-images/{menuItemId} paths/menu-item-images_{menuItemId}.yaml:3:1",
		"listOrders":           "GET /orders paths/orders.yaml:1:1",
		"createOrder":          "POST /orders paths/orders.yaml:32:1",
		"getOrderById":         "GET /orders/{orderId} paths/orders_{orderId}.yaml:1:1",
		"updateOrder":          "PATCH /orders/{orderId} paths/orders_{orderId}.yaml:44:1",
		"deleteOrder":          "DELETE /orders/{orderId} paths/orders_{orderId}.yaml:101:1",
		"listOrderItems":       "GET /order-items paths/order-items.yaml:1:1",
		"getRevenue":           "GET /revenue paths/revenue.yaml:1:1",
		"registerOAuth2Client": "POST /oauth2/register paths/oauth2_register.yaml:1:1",
	}
	for name, w := range want {
		method, rest, _ := strings.Cut(w, " ")
		path, source, _ := strings.Cut(rest, " ")
		if g := got[name]; g != method+" "+path+" "+filepath.Join(dir, source) {
			t.Errorf("route %s: %q; want %s %s at %s", name, g, method, path, filepath.Join(dir, source))
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d routes %v; want the %d operations (a webhook is not a route)", len(got), got, len(want))
	}
}

// TestCafeEveryOperation sends a valid request to each operation: each
// is answered by its own route (the journal names the operationId) with
// the operation's success status, and every answer conforms to the
// description's responses (checked by libopenapi-validator).
func TestCafeEveryOperation(t *testing.T) {
	t.Parallel()
	spec := cafe(t)
	_, hs := serveSpec(t, spec, func(s *scenarios.OpenAPISource) { s.UnknownIDs = "generate" })
	c := conformanceOf(t, spec)
	mpType, mpBody := multipartBody(t, "name", "Cappuccino", "price", "4500", "category", "beverage", "volume", "250", "containsCaffeine", "true")
	cases := []struct {
		op, method, path, contentType, body string
		status                              int
	}{
		{"listMenuItems", "GET", "/menu?limit=5&sort=-id", "", "", 200},
		{"createMenuItem", "POST", "/menu", mpType, mpBody, 201},
		{"deleteMenuItem", "DELETE", "/menu/" + someItem, "", "", 204},
		{"getMenuItemPhoto", "GET", "/menu-item-images/" + someItem + "?photoSize=thumbnail", "", "", 200},
		{"listOrders", "GET", "/orders?filter=status:placed", "", "", 200},
		{"createOrder", "POST", "/orders", "application/json", `{"customerName":"Mary Ann","orderItems":[{"menuItemId":"` + someItem + `","quantity":2}]}`, 201},
		{"getOrderById", "GET", "/orders/" + someOrder, "", "", 200},
		{"updateOrder", "PATCH", "/orders/" + someOrder, "application/json", `{"status":"preparing"}`, 200},
		{"deleteOrder", "DELETE", "/orders/" + someOrder, "", "", 204},
		{"listOrderItems", "GET", "/order-items?filter=orderId:" + someOrder, "", "", 200},
		{"getRevenue", "GET", "/revenue?startDate=2026-01-01T00:00:00Z", "", "", 200},
		{"registerOAuth2Client", "POST", "/oauth2/register", "application/json", `{"name":"till","scopes":["orders:read"]}`, 201},
	}
	var routes []string
	for _, tc := range cases {
		got := call(t, tc.method, hs.URL+tc.path, tc.contentType, tc.body)
		if got.status != tc.status {
			t.Errorf("%s %s: %d %s; want %d", tc.method, tc.path, got.status, got.body, tc.status)
			continue
		}
		c.check(t, tc.method, tc.path, got)
		routes = append(routes, tc.op)
	}
	var journal struct {
		Requests []struct {
			Route string `json:"route"`
		} `json:"requests"`
	}
	_ = json.Unmarshal([]byte(call(t, "GET", hs.URL+"/__admin/requests", "", "").body), &journal)
	var journaled []string
	for _, e := range journal.Requests {
		journaled = append(journaled, e.Route)
	}
	if strings.Join(journaled, " ") != strings.Join(routes, " ") {
		t.Errorf("journal routes %v; want %v", journaled, routes)
	}
}

// TestCafeValidation: with validate: enforce (the default) each invalid
// request is refused with an RFC 9457 problem whose errors say where (in,
// name, a JSON Pointer into the body) and what was expected.
func TestCafeValidation(t *testing.T) {
	t.Parallel()
	_, hs := serveSpec(t, cafe(t), nil)
	mpType, mpBody := multipartBody(t, "name", "Cappuccino", "price", "free", "category", "beverage", "volume", "250", "containsCaffeine", "true")
	cases := []struct {
		name, method, path, contentType, body string
		// in, param and pointer are where the first error must be; detail
		// is what it must say.
		in, param, pointer, detail string
	}{
		{"path parameter pattern", "GET", "/orders/ord_nope", "", "", "path", "orderId", "", "does not match pattern '^ord_[0-9abcdefghjkmnpqrstvwxyz]{26}$'"},
		{"query parameter type", "GET", "/menu?limit=many", "", "", "query", "limit", "", "is not a valid integer"},
		{"query parameter maximum", "GET", "/orders?limit=101", "", "", "query", "limit", "", "maximum"},
		{"query parameter enum", "GET", "/menu-item-images/" + someItem + "?photoSize=huge", "", "", "query", "photoSize", "", "thumbnail"},
		{"body required property", "POST", "/orders", "application/json", `{"orderItems":[{"menuItemId":"m","quantity":1}]}`, "body", "", "#", "missing property 'customerName'"},
		{"body nested minimum", "POST", "/orders", "application/json", `{"customerName":"Ann","orderItems":[{"menuItemId":"m","quantity":0}]}`, "body", "orderItems[0][quantity]", "#/orderItems/0/quantity", "minimum: got 0, want 1"},
		{"body pattern", "POST", "/orders", "application/json", `{"customerName":"R2-D2","orderItems":[{"menuItemId":"m","quantity":1}]}`, "body", "customerName", "#/customerName", "does not match pattern"},
		{"body enum in a sibling file", "PATCH", "/orders/" + someOrder, "application/json", `{"status":"eaten"}`, "body", "status", "#/status", "'placed', 'preparing', 'completed', 'canceled'"},
		{"body not JSON", "POST", "/orders", "application/json", `{"customerName":`, "body", "", "", "could not be decoded"},
		// A media type the operation does not take is Prism's 415, naming
		// the ones it takes; a missing or empty body says so.
		{"body media type not declared", "POST", "/orders", "text/plain", `Mary Ann`, "header", "Content-Type", "", "text/plain is not a media type the operation takes (application/json)"},
		{"no body", "POST", "/orders", "", "", "body", "", "", "the operation requires a body (application/json); the request has none"},
		{"empty body", "POST", "/orders", "application/json", "", "body", "", "", "the operation requires a body; the request's is empty"},
		{"white space body", "POST", "/orders", "application/json", " \r\n\t", "body", "", "", "the operation requires a body; the request's is empty"},
		{"body without a Content-Type", "POST", "/orders", "", `{"customerName":"Ann"}`, "header", "Content-Type", "", "the request's body has no Content-Type; the operation takes application/json"},
		{"multipart body type", "POST", "/menu", mpType, mpBody, "body", "price", "#/price", "want integer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, tc.method, hs.URL+tc.path, tc.contentType, tc.body)
			status := 400
			if tc.param == "Content-Type" {
				status = 415
			}
			if got.status != status || got.header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("%d %s %s; want a %d problem", got.status, got.header.Get("Content-Type"), got.body, status)
			}
			var p struct {
				Status int    `json:"status"`
				Detail string `json:"detail"`
				Errors []struct {
					In, Name, Pointer, Detail string
				} `json:"errors"`
			}
			if err := json.Unmarshal([]byte(got.body), &p); err != nil || p.Status != status || len(p.Errors) == 0 {
				t.Fatalf("problem %s (%v); want status %d and errors", got.body, err, status)
			}
			for _, e := range p.Errors {
				if e.In == tc.in && e.Name == tc.param && e.Pointer == tc.pointer && strings.Contains(e.Detail, tc.detail) {
					return
				}
			}
			t.Fatalf("errors %+v; want one in %s, name %q, pointer %q, saying %q", p.Errors, tc.in, tc.param, tc.pointer, tc.detail)
		})
	}
}

// TestCafeValidationModes: report serves an invalid request and journals
// its violations; off serves it and checks nothing.
func TestCafeValidationModes(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"report", "off"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			_, hs := serveSpec(t, cafe(t), func(s *scenarios.OpenAPISource) { s.Validate = mode })
			got := call(t, "POST", hs.URL+"/orders", "application/json", `{"customerName":"Ann","orderItems":[]}`)
			if got.status != 201 {
				t.Fatalf("invalid create with validate: %s: %d %s; want it served (201)", mode, got.status, got.body)
			}
			j := call(t, "GET", hs.URL+"/__admin/requests", "", "")
			has := strings.Contains(j.body, "body orderItems #/orderItems: minItems: got 0, want 1")
			if has != (mode == "report") {
				t.Fatalf("journal %s; want the violation recorded only with report", j.body)
			}
		})
	}
}

// TestCafeAnswers: answers come from the operation's examples (Prefer:
// example=), its other responses (Prefer: code=, __code), the schema
// when there is no example (with the request's values reflected), and in
// the media type the response declares, JSON or not.
func TestCafeAnswers(t *testing.T) {
	t.Parallel()
	spec := cafe(t)
	_, hs := serveSpec(t, spec, nil)
	c := conformanceOf(t, spec)
	cases := []struct {
		name, method, path, contentType, body string
		header                                []string
		status                                int
		mediaType                             string
		want                                  []string // in the body
	}{
		{"named example", "GET", "/orders/" + someOrder, "", "", []string{"Prefer", "example=OrderResponse"}, 200, "application/json", []string{`"customerName":"Mary Ann"`, `"id":"` + someOrder + `"`}},
		{"other response by Prefer", "GET", "/orders/" + someOrder, "", "", []string{"Prefer", "code=403"}, 403, "application/problem+json", []string{`"status":`, `"title":`}},
		// RFC 7240: parameters after ';', and the first of a preference given twice.
		{"named example, with a parameter", "GET", "/orders/" + someOrder, "", "", []string{"Prefer", "example=OrderResponse; x=y"}, 200, "application/json", []string{`"customerName":"Mary Ann"`}},
		{"first code of two", "GET", "/orders/" + someOrder, "", "", []string{"Prefer", "code=403;strict, Code=500"}, 403, "application/problem+json", []string{`"status":`}},
		{"other response by __code", "GET", "/revenue?__code=500", "", "", nil, 500, "application/problem+json", []string{`"type":`}},
		{"schema, no example", "GET", "/revenue", "", "", nil, 200, "application/json", []string{`"revenue":0`, `"canceledOrders":0`, `"startDate":"`}},
		{"request values reflected", "POST", "/oauth2/register", "application/json", `{"name":"till","scopes":["orders:read"],"grantTypes":["client_credentials"]}`, nil, 201, "application/json", []string{`"name":"till"`, `"scopes":["orders:read"]`, `"grantTypes":["client_credentials"]`}},
		{"text answer by Accept", "GET", "/menu-item-images/" + someItem, "", "", []string{"Accept", "text/plain"}, 200, "text/plain", []string{"string"}},
		{"binary answer", "GET", "/menu-item-images/" + someItem, "", "", []string{"Accept", "image/png"}, 200, "image/png", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, tc.method, hs.URL+tc.path, tc.contentType, tc.body, tc.header...)
			if got.status != tc.status || got.header.Get("Content-Type") != tc.mediaType {
				t.Fatalf("%d %s %s; want %d %s", got.status, got.header.Get("Content-Type"), got.body, tc.status, tc.mediaType)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.body, w) {
					t.Errorf("body %s; want %s in it", got.body, w)
				}
			}
			c.check(t, tc.method, tc.path, got)
		})
	}
}

// TestCafeState: state by convention on a description that is not
// Stripe's: a create keeps the order under a fresh id in the spec's own
// id pattern, read, update (PATCH) and list see it, a list is the spec's
// shape (items and a page object, not Stripe's data and has_more) with
// its cursors, and a delete makes it a 404 in the spec's problem shape.
func TestCafeState(t *testing.T) {
	t.Parallel()
	spec := cafe(t)
	_, hs := serveSpec(t, spec, nil)
	c := conformanceOf(t, spec)
	items := func(a answer) []string {
		var ids []string
		l, _ := a.json["items"].([]any)
		for _, it := range l {
			ids = append(ids, fmt.Sprint(it.(map[string]any)["id"]))
		}
		return ids
	}
	page := func(a answer) map[string]any { p, _ := a.json["page"].(map[string]any); return p }

	empty := call(t, "GET", hs.URL+"/orders", "", "")
	if empty.status != 200 || len(items(empty)) != 0 || page(empty)["total"] != 0.0 {
		t.Fatalf("list before any create: %d %s; want no items", empty.status, empty.body)
	}
	c.check(t, "GET", "/orders", empty)

	var ids []string
	for _, name := range []string{"Ann", "Bob", "Cy"} {
		got := call(t, "POST", hs.URL+"/orders", "application/json", `{"customerName":"`+name+`","orderItems":[{"menuItemId":"`+someItem+`","quantity":1}]}`)
		id, _ := got.json["id"].(string)
		if got.status != 201 || got.json["customerName"] != name || !orderID.MatchString(id) || slices.Contains(ids, id) {
			t.Fatalf("create %s: %d %s; want 201 with a fresh id matching %s", name, got.status, got.body, orderID)
		}
		c.check(t, "POST", "/orders", got)
		ids = append(ids, id)
	}
	read := call(t, "GET", hs.URL+"/orders/"+ids[0], "", "")
	if read.status != 200 || read.json["customerName"] != "Ann" || read.json["id"] != ids[0] {
		t.Fatalf("read: %d %s; want Ann's order", read.status, read.body)
	}

	list := call(t, "GET", hs.URL+"/orders", "", "")
	if got := items(list); !slices.Equal(got, []string{ids[2], ids[1], ids[0]}) || page(list)["total"] != 3.0 || page(list)["hasNextPage"] != false {
		t.Fatalf("list: %s; want the three orders newest first, total 3, no next page", list.body)
	}
	c.check(t, "GET", "/orders", list)
	first := call(t, "GET", hs.URL+"/orders?limit=2", "", "")
	p := page(first)
	if got := items(first); !slices.Equal(got, []string{ids[2], ids[1]}) || p["hasNextPage"] != true || p["endCursor"] != ids[1] || p["limit"] != 2.0 {
		t.Fatalf("list limit=2: %s; want Cy and Bob, a next page, endCursor Bob's id", first.body)
	}
	next := call(t, "GET", hs.URL+"/orders?limit=2&after="+ids[1], "", "")
	if got := items(next); !slices.Equal(got, []string{ids[0]}) || page(next)["hasNextPage"] != false || page(next)["hasPrevPage"] != true {
		t.Fatalf("list after Bob: %s; want Ann alone, a previous page and no next", next.body)
	}
	c.check(t, "GET", "/orders?limit=2&after="+ids[1], next)
	// Paging back: the items just newer than the cursor, and a next page
	// (older ones follow in the list's order).
	back := call(t, "GET", hs.URL+"/orders?limit=1&before="+ids[1], "", "")
	if got := items(back); !slices.Equal(got, []string{ids[2]}) || page(back)["hasNextPage"] != true || page(back)["hasPrevPage"] != false {
		t.Fatalf("list before Bob: %s; want Cy alone, a next page and no previous", back.body)
	}
	// A cursor parameter the operation does not declare is not one.
	if undeclared := call(t, "GET", hs.URL+"/orders?starting_after=ord_nope", "", ""); undeclared.status != 200 || len(items(undeclared)) != 3 {
		t.Fatalf("list with an undeclared starting_after: %d %s; want every order", undeclared.status, undeclared.body)
	}

	upd := call(t, "PATCH", hs.URL+"/orders/"+ids[0], "application/json", `{"status":"completed"}`)
	if upd.status != 200 || upd.json["status"] != "completed" || upd.json["customerName"] != "Ann" {
		t.Fatalf("update: %d %s; want Ann's order completed", upd.status, upd.body)
	}
	if again := call(t, "GET", hs.URL+"/orders/"+ids[0], "", ""); again.json["status"] != "completed" {
		t.Fatalf("read after update: %s; want status completed kept", again.body)
	}

	if del := call(t, "DELETE", hs.URL+"/orders/"+ids[0], "", ""); del.status != 204 || del.body != "" {
		t.Fatalf("delete: %d %q; want 204 and no body", del.status, del.body)
	}
	gone := call(t, "GET", hs.URL+"/orders/"+ids[0], "", "")
	if gone.status != 404 || gone.header.Get("Content-Type") != "application/problem+json" || !strings.Contains(gone.body, ids[0]) {
		t.Fatalf("read after delete: %d %s %s; want the spec's 404 problem naming the id", gone.status, gone.header.Get("Content-Type"), gone.body)
	}
	c.check(t, "GET", "/orders/"+ids[0], gone)
	never := "ord_" + strings.Repeat("0", 26)
	if got := call(t, "GET", hs.URL+"/orders/"+never, "", ""); got.status != 404 {
		t.Fatalf("read of an id never created: %d %s; want 404", got.status, got.body)
	}
	if got := items(call(t, "GET", hs.URL+"/orders", "", "")); !slices.Equal(got, []string{ids[2], ids[1]}) {
		t.Fatalf("list after delete: %v; want Cy and Bob", got)
	}
}

// TestCafeMultipartState: a menu item is created from a multipart/form-data
// body (a oneOf with a discriminator, across sibling files), its values
// typed by the schema; list and delete see it. A path with no create
// (menu item photos) is not a collection: it answers from the spec.
func TestCafeMultipartState(t *testing.T) {
	t.Parallel()
	spec := cafe(t)
	_, hs := serveSpec(t, spec, nil)
	c := conformanceOf(t, spec)
	ct, body := multipartBody(t, "name", "Brownie", "price", "350", "category", "dessert", "calories", "420")
	created := call(t, "POST", hs.URL+"/menu", ct, body)
	id, _ := created.json["id"].(string)
	if created.status != 201 || created.json["name"] != "Brownie" || created.json["price"] != 350.0 || !menuItemID.MatchString(id) {
		t.Fatalf("create: %d %s; want 201, the name and price sent, and an id matching %s", created.status, created.body, menuItemID)
	}
	c.check(t, "POST", "/menu", created)
	list := call(t, "GET", hs.URL+"/menu", "", "")
	if l, _ := list.json["items"].([]any); len(l) != 1 || l[0].(map[string]any)["id"] != id {
		t.Fatalf("list: %s; want the brownie", list.body)
	}
	if photo := call(t, "GET", hs.URL+"/menu-item-images/"+someItem, "", ""); photo.status != 200 {
		t.Fatalf("photo of an item: %d %s; want the spec's answer (there is no photo collection to miss it from)", photo.status, photo.body)
	}
	if del := call(t, "DELETE", hs.URL+"/menu/"+id, "", ""); del.status != 204 {
		t.Fatalf("delete: %d %s; want 204", del.status, del.body)
	}
	if del := call(t, "DELETE", hs.URL+"/menu/"+id, "", ""); del.status != 404 {
		t.Fatalf("second delete: %d %s; want 404", del.status, del.body)
	}
}

// TestCafeBrokenEdits: an edit that breaks the description, in the root
// document or in a file its $refs read, is refused on reload with the
// file:line:col where the problem is written and a sentence saying what
// it is, and the last good set keeps serving.
func TestCafeBrokenEdits(t *testing.T) {
	t.Parallel()
	spec := cafe(t)
	dir := filepath.Dir(spec)
	srv, hs := serveSpec(t, spec, nil)
	if err := os.WriteFile(filepath.Join(filepath.Dir(dir), "outside.yaml"), []byte("type: object\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, file, old, new string
		want                 string // the error, with <dir> for the spec's directory and <parent> for its parent
	}{
		{"root does not parse", "openapi.yaml", "paths:\n", "paths:\n  /broken: [\n",
			"<dir>/openapi.yaml:28:12: openapi: the file does not parse as YAML: did not find expected ',' or ']'"},
		{"sibling does not parse", "paths/orders.yaml", "post:\n", "post: [\n",
			"<dir>/paths/orders.yaml:34:5: openapi: the file does not parse as YAML: did not find expected node content"},
		{"local $ref in a sibling", "paths/orders.yaml", "$ref: ../components/schemas/OrderList.yaml", "$ref: '#/components/schemas/Nope'",
			`<dir>/paths/orders.yaml:23:13: openapi: $ref "#/components/schemas/Nope": orders.yaml has nothing at #/components/schemas/Nope`},
		{"$ref to a missing sibling", "paths/orders.yaml", "$ref: ../components/schemas/OrderList.yaml", "$ref: ../components/schemas/Nope.yaml",
			`<dir>/paths/orders.yaml:23:13: openapi: $ref "../components/schemas/Nope.yaml": there is no file <dir>/components/schemas/Nope.yaml`},
		{"$ref to a component a sibling lacks", "paths/orders.yaml", "$ref: ../components/schemas/OrderList.yaml", "$ref: ../components/schemas/OrderList.yaml#/Nope",
			`<dir>/paths/orders.yaml:23:13: openapi: $ref "../components/schemas/OrderList.yaml#/Nope": ../components/schemas/OrderList.yaml has nothing at #/Nope`},
		{"root's $ref to a component a sibling lacks", "openapi.yaml", "$ref: paths/orders.yaml\n", "$ref: paths/orders.yaml#/nope\n",
			`<dir>/openapi.yaml:35:5: openapi: $ref "paths/orders.yaml#/nope": paths/orders.yaml has nothing at #/nope`},
		{"$ref two files deep", "components/schemas/Order.yaml", "$ref: ./OrderStatus.yaml", "$ref: ./Nope.yaml",
			`<dir>/components/schemas/Order.yaml:26:9: openapi: $ref "./Nope.yaml": there is no file <dir>/components/schemas/Nope.yaml`},
		{"remote $ref", "paths/orders.yaml", "$ref: ../components/schemas/OrderList.yaml", "$ref: https://example.com/OrderList.yaml",
			`<dir>/paths/orders.yaml:23:13: openapi: $ref "https://example.com/OrderList.yaml" is remote: remote references are not fetched; save the file beside the spec and refer to it by a relative path`},
		{"$ref outside the spec's directory", "paths/orders.yaml", "$ref: ../components/schemas/OrderList.yaml", "$ref: ../../outside.yaml",
			`<dir>/paths/orders.yaml:23:13: openapi: a $ref reads <parent>/outside.yaml, outside the spec's directory <dir>`},
		{"Swagger 2.0", "openapi.yaml", "openapi: 3.1.0", "swagger: '2.0'",
			`<dir>/openapi.yaml:1:1: openapi: version "2.0" is not supported; want an OpenAPI 3.0 or 3.1 document`},
	}
	for _, tc := range cases {
		path := filepath.Join(dir, tc.file)
		orig, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(orig), tc.old) {
			t.Fatalf("%s: %s has no %q (%v)", tc.name, tc.file, tc.old, err)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(string(orig), tc.old, tc.new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		want := strings.ReplaceAll(strings.ReplaceAll(tc.want, "<dir>", dir), "<parent>", filepath.Dir(dir))
		if err := srv.Reload(); err == nil || err.Error() != want {
			t.Errorf("%s: reload error\n%v\nwant\n%s", tc.name, err, want)
		}
		if got := call(t, "GET", hs.URL+"/orders", "", ""); got.status != 200 {
			t.Fatalf("%s: GET /orders after the broken edit: %d %s; want the last good set serving", tc.name, got.status, got.body)
		}
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := srv.Reload(); err != nil {
			t.Fatalf("%s: reload of the repaired description: %v", tc.name, err)
		}
	}
}

// TestBrokenSiblingOfAFragmentRef: a $ref into a named component of a
// sibling file that does not parse fails the build; the error is the
// sibling's own line and column, not "component does not exist" at the
// root's first line.
func TestBrokenSiblingOfAFragmentRef(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := filepath.Join(dir, "openapi.yaml")
	doc := "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get:\n      responses:\n        '200':\n          description: ok\n          content:\n            application/json:\n              schema: {$ref: \"./schemas.yaml#/Pet\"}\n"
	if err := os.WriteFile(spec, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "schemas.yaml"), []byte("Pet:\n  type: object\n  properties:\n    name: {type: strin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := scenarios.LoadBytes("x.yaml", []byte("routes: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = openapi.Expand(set, openapi.Options{Extra: []*scenarios.OpenAPISource{openapi.FileSource(spec, "")}})
	want := filepath.Join(dir, "schemas.yaml") + ":4:11: openapi: the file does not parse as YAML: did not find expected ',' or '}'"
	if err == nil || err.Error() != want {
		t.Fatalf("error\n%v\nwant\n%s", err, want)
	}
}

// TestOwnProblemIsProblemJSON: the 404 of an id never created, and the
// 400 of a cursor naming none, where the spec declares them as
// application/json with no error shape to fill (no error object, no
// message), are problems: application/problem+json, not the declared
// application/json (before, a problem body under application/json).
func TestOwnProblemIsProblemJSON(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, `openapi: 3.1.0
info: { title: things, version: "1" }
paths:
  /things:
    post:
      operationId: createThing
      requestBody: { content: { application/json: { schema: { $ref: '#/components/schemas/Thing' } } } }
      responses:
        "201": { description: made, content: { application/json: { schema: { $ref: '#/components/schemas/Thing' } } } }
    get:
      operationId: listThings
      parameters:
        - { name: starting_after, in: query, schema: { type: string } }
      responses:
        "200":
          description: the things
          content: { application/json: { schema: { type: object, properties: { data: { type: array, items: { $ref: '#/components/schemas/Thing' } }, has_more: { type: boolean } } } } }
        "400": { description: bad, content: { application/json: { schema: { $ref: '#/components/schemas/Failure' } } } }
  /things/{id}:
    get:
      operationId: getThing
      parameters: [{ name: id, in: path, required: true, schema: { type: string } }]
      responses:
        "200": { description: the thing, content: { application/json: { schema: { $ref: '#/components/schemas/Thing' } } } }
        "404": { description: none, content: { application/json: { schema: { $ref: '#/components/schemas/Failure' } } } }
components:
  schemas:
    Thing: { type: object, properties: { id: { type: string }, name: { type: string } } }
    Failure: { type: object, properties: { code: { type: integer } } }
`, nil)
	for _, tc := range []struct {
		name, path string
		status     int
	}{
		{"an id never created", "/things/thing_never", 404},
		{"a cursor naming none", "/things?starting_after=thing_never", 400},
	} {
		got := call(t, "GET", hs.URL+tc.path, "", "")
		if got.status != tc.status || got.header.Get("Content-Type") != "application/problem+json" || got.json["status"] != float64(tc.status) || got.json["type"] != "about:blank" {
			t.Errorf("%s: %d %s %s; want %d application/problem+json, a problem", tc.name, got.status, got.header.Get("Content-Type"), got.body, tc.status)
		}
	}
	// An answer the spec's own schema makes keeps the declared media.
	made := call(t, "POST", hs.URL+"/things", "application/json", `{"name":"a"}`)
	if made.status != 201 || made.header.Get("Content-Type") != "application/json" {
		t.Errorf("create: %d %s; want 201 application/json", made.status, made.header.Get("Content-Type"))
	}
}
