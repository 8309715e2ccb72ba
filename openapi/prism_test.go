package openapi_test

import (
	"net/http"
	"testing"

	"github.com/scenariomock/scenariomock/scenarios"
)

// The tests in this file are what a Prism user brings: their own specs,
// and what Prism answers to them.

// reportsSpec answers a report as JSON, XML or CSV, and a ping with no
// content.
const reportsSpec = `openapi: 3.0.3
info: {title: Reports, version: "1"}
paths:
  /reports/{id}:
    get:
      operationId: getReport
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {type: object, properties: {id: {type: string}, total: {type: number}}}
              example: {id: r1, total: 3.5}
            application/xml:
              schema: {type: object}
              example: "<report><id>r1</id></report>"
            text/csv:
              schema: {type: string}
              example: "id,total"
        '404':
          description: missing
          content:
            text/plain:
              schema: {type: string}
              example: no such report
  /ping:
    get:
      operationId: ping
      responses:
        '204': {description: no content}
`

// TestAcceptNegotiation pins content negotiation as RFC 9110 and Prism
// have it: the highest q-value wins, q=0 refuses, the most specific range
// decides a media type's q-value, and an Accept that refuses every media
// type of the answer is a 406 problem (under validate: enforce; report
// serves the JSON one).
func TestAcceptNegotiation(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, reportsSpec, nil)
	report := serveDoc(t, reportsSpec, func(s *scenarios.OpenAPISource) { s.Validate = "report" })
	cases := []struct {
		name, path, accept string
		status             int
		contentType        string
	}{
		{"no Accept: JSON", "/reports/r1", "", 200, "application/json"},
		{"*/*: JSON", "/reports/r1", "*/*", 200, "application/json"},
		{"exact", "/reports/r1", "application/xml", 200, "application/xml"},
		{"type wildcard", "/reports/r1", "text/*", 200, "text/csv"},
		{"higher q wins over order", "/reports/r1", "text/csv;q=0.5, application/xml", 200, "application/xml"},
		{"q weighs JSON down", "/reports/r1", "application/json;q=0.1, text/csv", 200, "text/csv"},
		{"equal q: Accept's order", "/reports/r1", "text/csv, application/xml", 200, "text/csv"},
		{"a browser's Accept", "/reports/r1", "text/html,application/xhtml+xml,*/*;q=0.8", 200, "application/json"},
		{"more specific range's q=0 refuses under */*", "/reports/r1", "application/json;q=0, */*", 200, "application/xml"},
		{"Accept that does not parse is none", "/reports/r1", "garbage", 200, "application/json"},
		{"none acceptable: 406", "/reports/r1", "text/html", 406, "application/problem+json"},
		{"q=0 only: 406", "/reports/r1", "application/xml;q=0", 406, "application/problem+json"},
		{"Prefer: code= negotiates that answer", "/reports/r1?__code=404", "text/plain", 404, "text/plain"},
		{"Prefer: code= answer refusing: 406", "/reports/r1?__code=404", "application/json", 406, "application/problem+json"},
		{"no content is acceptable to any Accept", "/ping", "application/json", 204, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var header []string
			if tc.accept != "" {
				header = []string{"Accept", tc.accept}
			}
			got := call(t, "GET", hs.URL+tc.path, "", "", header...)
			if got.status != tc.status || got.header.Get("Content-Type") != tc.contentType {
				t.Fatalf("Accept %q: %d %s %s; want %d %s", tc.accept, got.status, got.header.Get("Content-Type"), got.body, tc.status, tc.contentType)
			}
			if got.status == http.StatusNotAcceptable {
				errs, _ := got.json["errors"].([]any)
				if got.json["status"] != 406.0 || len(errs) != 1 || errs[0].(map[string]any)["name"] != "Accept" {
					t.Fatalf("406 problem: %s; want status 406 and one error naming Accept", got.body)
				}
				if r := call(t, "GET", report.URL+tc.path, "", "", header...); r.status == http.StatusNotAcceptable || r.status >= 500 {
					t.Fatalf("validate: report, Accept %q: %d %s; want it served", tc.accept, r.status, r.body)
				}
			}
		})
	}
}
