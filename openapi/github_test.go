package openapi_test

// Tests that serve an excerpt of GitHub's REST API description
// (testdata/github, see its SOURCE.md): OpenAPI 3.0.3 in JSON, whose
// conventions are not Stripe's: integer ids, items read by a number that
// is not their id (/issues/{issue_number}), collections nested under an
// owner and a repository, and nullable: true beside a oneOf.

import (
	"encoding/json"
	"fmt"
	"github.com/scenariomock/scenariomock/scenarios"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// githubIssues is the excerpt's path, served read-only by each test.
var githubIssues = filepath.Join("testdata", "github", "issues.json")

// TestGitHubNullableOneOf: GitHub's issue bodies declare milestone as
// "oneOf: [string, integer], nullable: true", and null is how a client
// takes an issue's milestone away (octokit's issues.update({milestone:
// null})). libopenapi-validator turns nullable into JSON Schema only
// beside a type, so each alternative refused the null: a valid request
// was a 400. A null where the schema is nullable is taken; a wrong value
// there, and a null where the schema is not nullable, are still refused.
func TestGitHubNullableOneOf(t *testing.T) {
	t.Parallel()
	hs := serveGitHub(t)
	const issues = "/repos/octocat/hello/issues"
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		detail                   string // in the refusal's body
	}{
		{"create with a null milestone", "POST", issues, `{"title":"Bug","milestone":null}`, 201, ""},
		{"update a null milestone", "PATCH", issues + "/1", `{"milestone":null,"title":"Bug"}`, 200, ""},
		{"a milestone of the wrong type", "POST", issues, `{"title":"Bug","milestone":true}`, 400, "#/milestone"},
		{"a null title, not nullable", "POST", issues, `{"title":null}`, 400, "#/title"},
		{"a null milestone and no title", "POST", issues, `{"milestone":null}`, 400, "missing property 'title'"},
	} {
		got := call(t, tc.method, hs.URL+tc.path, "application/json", tc.body)
		if got.status != tc.status || !strings.Contains(got.body, tc.detail) {
			t.Errorf("%s: %s %s %s: %d %s; want %d with %q", tc.name, tc.method, tc.path, tc.body, got.status, got.body, tc.status, tc.detail)
		}
		if tc.status == 400 && tc.name == "a null milestone and no title" && strings.Contains(got.body, "milestone") {
			t.Errorf("%s: the refusal names the null milestone, which is allowed: %s", tc.name, got.body)
		}
	}
}

// serveGitHub serves the GitHub excerpt as `serve --openapi` does.
func serveGitHub(t *testing.T) *httptest.Server {
	t.Helper()
	_, hs := serveSpec(t, githubIssues, nil)
	return hs
}

// TestGitHubItemsByNumberAndName: GitHub reads an issue by its number
// (/issues/{issue_number}), not by its id, and a label by its name
// (/labels/{name}). A create stores the item by the field the read's
// path variable names, so that what octokit does (create, then read,
// update and list by the number the create answered) finds it; before,
// the create answered the example's number for every issue and stored it
// by its id, and a read by that number was a 404. Each answer is checked
// against the excerpt with libopenapi-validator.
func TestGitHubItemsByNumberAndName(t *testing.T) {
	t.Parallel()
	hs := serveGitHub(t)
	c := conformanceOf(t, githubIssues)
	const issues = "/repos/octocat/hello/issues"
	steps := []struct {
		name, method, path, body string
		status                   int
		want                     map[string]any // fields of the answer (of each item, for a list: their numbers)
	}{
		{"create", "POST", issues, `{"title":"First"}`, 201, map[string]any{"number": 1.0, "id": 1.0, "title": "First"}},
		{"create another", "POST", issues, `{"title":"Second","labels":["bug"]}`, 201, map[string]any{"number": 2.0, "title": "Second"}},
		{"read by number", "GET", issues + "/2", "", 200, map[string]any{"number": 2.0, "title": "Second"}},
		{"read by number, spelt otherwise", "GET", issues + "/01", "", 200, map[string]any{"number": 1.0, "title": "First"}},
		{"update by number", "PATCH", issues + "/1", `{"state":"closed","number":7}`, 200, map[string]any{"number": 1.0, "state": "closed", "title": "First"}},
		{"read the update", "GET", issues + "/1", "", 200, map[string]any{"number": 1.0, "state": "closed"}},
		{"list", "GET", issues + "?state=all", "", 200, map[string]any{"numbers": "2 1"}},
		{"list the open ones (state's default)", "GET", issues, "", 200, map[string]any{"numbers": "2"}},
		{"another repository's", "GET", "/repos/octocat/other/issues/1", "", 404, nil},
		{"never created", "GET", issues + "/3", "", 404, nil},
		{"create a label", "POST", "/repos/octocat/hello/labels", `{"name":"bug","color":"f29513"}`, 201, map[string]any{"name": "bug", "color": "f29513"}},
		{"read it by name", "GET", "/repos/octocat/hello/labels/bug", "", 200, map[string]any{"name": "bug", "color": "f29513"}},
		{"a name taken", "POST", "/repos/octocat/hello/labels", `{"name":"bug"}`, 422, nil},
		{"delete it by name", "DELETE", "/repos/octocat/hello/labels/bug", "", 204, nil},
		{"gone", "GET", "/repos/octocat/hello/labels/bug", "", 404, nil},
		{"the name free again", "POST", "/repos/octocat/hello/labels", `{"name":"bug"}`, 201, map[string]any{"name": "bug"}},
	}
	for _, st := range steps {
		ct := ""
		if st.body != "" {
			ct = "application/json"
		}
		got := call(t, st.method, hs.URL+st.path, ct, st.body)
		if got.status != st.status {
			t.Fatalf("%s: %s %s: %d %s; want %d", st.name, st.method, st.path, got.status, got.body, st.status)
		}
		c.check(t, st.method, st.path, got)
		for k, v := range st.want {
			if k == "numbers" {
				var items []map[string]any
				_ = json.Unmarshal([]byte(got.body), &items)
				var ns []string
				for _, it := range items {
					ns = append(ns, fmt.Sprint(it["number"]))
				}
				if strings.Join(ns, " ") != v {
					t.Errorf("%s: numbers %v; want %v", st.name, ns, v)
				}
				continue
			}
			if got.json[k] != v {
				t.Errorf("%s: %s = %v; want %v (%.300s)", st.name, k, got.json[k], v, got.body)
			}
		}
		if st.name == "create another" {
			if loc := got.header.Get("Location"); loc != issues+"/2" {
				t.Errorf("create: Location %q; want %s/2", loc, issues)
			}
		}
	}
}

// TestItemsByCamelCaseNumber: a variable in camelCase names the integer
// property of its last word too (/boards/{boardNumber}: a board's
// number), in a 3.1 document whose types are lists; a string property is
// not taken by its last word (/codes/{promotionCode} reads a code by its
// id, not by its code), as Stripe's /v1/promotion_codes/{promotion_code}.
func TestItemsByCamelCaseNumber(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, `openapi: 3.1.0
info: { title: boards, version: "1" }
paths:
  /boards:
    post:
      operationId: createBoard
      requestBody: { content: { application/json: { schema: { type: object, properties: { title: { type: string } } } } } }
      responses: { "201": { description: made, content: { application/json: { schema: { $ref: "#/components/schemas/Board" } } } } }
  /boards/{boardNumber}:
    get:
      operationId: getBoard
      parameters: [{ name: boardNumber, in: path, required: true, schema: { type: integer } }]
      responses:
        "200": { description: it, content: { application/json: { schema: { $ref: "#/components/schemas/Board" } } } }
        "404": { description: none }
  /codes:
    post:
      operationId: createCode
      requestBody: { content: { application/json: { schema: { type: object, properties: { code: { type: string } } } } } }
      responses: { "201": { description: made, content: { application/json: { schema: { $ref: "#/components/schemas/Code" } } } } }
  /codes/{promotionCode}:
    get:
      operationId: getCode
      parameters: [{ name: promotionCode, in: path, required: true, schema: { type: string } }]
      responses:
        "200": { description: it, content: { application/json: { schema: { $ref: "#/components/schemas/Code" } } } }
        "404": { description: none }
components:
  schemas:
    Board:
      type: object
      required: [id, number]
      properties: { id: { type: [string] , format: uuid }, number: { type: [integer, "null"] }, title: { type: string } }
    Code:
      type: object
      required: [id, code]
      properties: { id: { type: string, example: promo_1A2b3C }, code: { type: string } }
`, nil)
	made := call(t, "POST", hs.URL+"/boards", "application/json", `{"title":"Roadmap"}`)
	if made.status != 201 || made.json["number"] != 1.0 {
		t.Fatalf("create: %d %s; want 201 with number 1", made.status, made.body)
	}
	if got := call(t, "GET", hs.URL+"/boards/1", "", ""); got.status != 200 || got.json["title"] != "Roadmap" {
		t.Errorf("read by number: %d %s; want the board made", got.status, got.body)
	}
	code := call(t, "POST", hs.URL+"/codes", "application/json", `{"code":"SPRING"}`)
	id, _ := code.json["id"].(string)
	if code.status != 201 || !strings.HasPrefix(id, "promo_") {
		t.Fatalf("create a code: %d %s; want 201 with a promo_ id", code.status, code.body)
	}
	if got := call(t, "GET", hs.URL+"/codes/"+id, "", ""); got.status != 200 || got.json["code"] != "SPRING" {
		t.Errorf("read a code by its id: %d %s; want the code made", got.status, got.body)
	}
	if got := call(t, "GET", hs.URL+"/codes/SPRING", "", ""); got.status != 404 {
		t.Errorf("read a code by its code: %d %s; want 404", got.status, got.body)
	}
}

// TestPathValueKeepsTheIDsType: GitHub reads an organization by its login
// (/orgs/{org}), which names no property of it, so the path's value is
// taken for its id; an integer id then stays the answer's integer rather
// than the login written into it ("id": "octo-org"), which broke the
// spec's own schema, whether the id was never created (unknownIds:
// generate) or nothing creates organizations (answered from the spec).
func TestPathValueKeepsTheIDsType(t *testing.T) {
	t.Parallel()
	const doc = `openapi: 3.0.3
info: { title: orgs, version: "1" }
paths:
  /orgs/{org}:
    get:
      operationId: getOrg
      parameters: [{ name: org, in: path, required: true, schema: { type: string } }]
      responses:
        "200":
          description: it
          content: { application/json: { schema: { $ref: "#/components/schemas/Org" }, example: { id: 1, login: github } } }
  /teams/{team_id}:
    get:
      operationId: getTeam
      parameters: [{ name: team_id, in: path, required: true, schema: { type: integer } }]
      responses:
        "200":
          description: it
          content: { application/json: { schema: { type: object, properties: { id: { type: integer } } }, example: { id: 1 } } }
components:
  schemas:
    Org:
      type: object
      required: [id, login]
      properties: { id: { type: integer }, login: { type: string } }
`
	for _, unknown := range []string{"", "generate"} {
		hs := serveDoc(t, doc, func(s *scenarios.OpenAPISource) { s.UnknownIDs = unknown })
		if got := call(t, "GET", hs.URL+"/orgs/octo-org", "", ""); got.status != 200 || got.json["id"] != 1.0 {
			t.Errorf("unknownIds %q: GET /orgs/octo-org: %d %s; want the integer id of the example", unknown, got.status, got.body)
		}
		if got := call(t, "GET", hs.URL+"/teams/42", "", ""); got.status != 200 || got.json["id"] != 42.0 {
			t.Errorf("unknownIds %q: GET /teams/42: %d %s; want id 42, the path's", unknown, got.status, got.body)
		}
	}
}

// TestGitHubListFilters: GitHub lists a repository's issues with
// ?state=open, closed or all, and ?labels=bug,ui. state=all, a value of
// the parameter's enum where the issue's state has none, listed nothing,
// as a filter equal to "all"; labels=bug, one string against a list of
// labels, listed nothing too. Both now narrow nothing, and state=closed
// still narrows. A list without state lists open issues alone, as
// GitHub's does: the parameter's default, open, narrows it (a closed
// issue was listed).
func TestGitHubListFilters(t *testing.T) {
	t.Parallel()
	hs := serveGitHub(t)
	const issues = "/repos/octocat/hello/issues"
	for _, body := range []string{`{"title":"Open","labels":["bug"]}`, `{"title":"Closed"}`} {
		if got := call(t, "POST", hs.URL+issues, "application/json", body); got.status != 201 {
			t.Fatalf("create %s: %d %s", body, got.status, got.body)
		}
	}
	if got := call(t, "PATCH", hs.URL+issues+"/2", "application/json", `{"state":"closed"}`); got.status != 200 {
		t.Fatalf("close: %d %s", got.status, got.body)
	}
	for _, tc := range []struct{ query, want string }{
		{"", "1"},
		{"?state=all", "2 1"}, {"?state=all&labels=x", "2 1"},
		{"?state=closed", "2"},
		{"?state=open", "1"},
		{"?labels=bug", "1"},
		{"?state=all&labels=bug", "2 1"},
	} {
		got := call(t, "GET", hs.URL+issues+tc.query, "", "")
		var items []map[string]any
		_ = json.Unmarshal([]byte(got.body), &items)
		var ns []string
		for _, it := range items {
			ns = append(ns, fmt.Sprint(it["number"]))
		}
		if got.status != 200 || strings.Join(ns, " ") != tc.want {
			t.Errorf("GET %s%s: %d, numbers %v; want %s", issues, tc.query, got.status, ns, tc.want)
		}
	}
}

// TestGitHubPages: GitHub's lists page by number, ?per_page=2&page=2,
// with per_page's default of 30; both were ignored, and every stored
// issue came back on every page.
func TestGitHubPages(t *testing.T) {
	t.Parallel()
	hs := serveGitHub(t)
	const issues = "/repos/octocat/hello/issues"
	for i := range 12 {
		if got := call(t, "POST", hs.URL+issues, "application/json", fmt.Sprintf(`{"title":"Issue %d"}`, i+1)); got.status != 201 {
			t.Fatalf("create: %d %s", got.status, got.body)
		}
	}
	for _, tc := range []struct{ query, want string }{
		{"", "12 11 10 9 8 7 6 5 4 3 2 1"}, // per_page's default, 30: all (not 10)
		{"?per_page=5", "12 11 10 9 8"},
		{"?per_page=5&page=1", "12 11 10 9 8"},
		{"?per_page=5&page=3", "2 1"},
		{"?per_page=5&page=4", ""},
		{"?per_page=5&page=9223372036854775807", ""},
		{"?page=2", ""},
	} {
		got := call(t, "GET", hs.URL+issues+tc.query, "", "")
		var items []map[string]any
		_ = json.Unmarshal([]byte(got.body), &items)
		var ns []string
		for _, it := range items {
			ns = append(ns, fmt.Sprint(it["number"]))
		}
		if got.status != 200 || strings.Join(ns, " ") != tc.want {
			t.Errorf("GET %s%s: %d, numbers %v; want %q", issues, tc.query, got.status, ns, tc.want)
		}
	}
}

// TestExampleValueRef: GitHub's description gives an issue's example a
// summary of its own and its value by $ref (examples: {default:
// {summary: Issue, value: {$ref: '#/components/examples/issue'}}}), as
// tools that resolve every $ref read it. Prefer: example=default, and an
// answer from the first example, answered the reference itself,
// {"$ref": "#/components/examples/issue"}; now they answer the example it
// names. A $ref to nothing stays the value as written.
func TestExampleValueRef(t *testing.T) {
	t.Parallel()
	hs := serveDoc(t, `openapi: 3.0.3
info: { title: refs, version: "1" }
paths:
  /things/{n}:
    get:
      operationId: getThing
      parameters: [{ name: n, in: path, required: true, schema: { type: integer } }]
      responses:
        "200":
          description: it
          content:
            application/json:
              schema: { type: object, properties: { n: { type: integer }, name: { type: string } } }
              examples:
                default: { summary: A thing, value: { $ref: "#/components/examples/thing" } }
                other: { summary: Another, value: { $ref: "#/components/examples/other" } }
                nowhere: { summary: Broken, value: { $ref: "#/components/examples/none" } }
components:
  examples:
    thing: { summary: a thing, value: { n: 1, name: first } }
    other: { value: { n: 2, name: second } }
`, nil)
	for _, tc := range []struct{ name, prefer, want string }{
		{"the first example", "", `"name":"first"`},
		{"Prefer: example=default", "example=default", `"name":"first"`},
		{"Prefer: example=other", "example=other", `"name":"second"`},
		{"a $ref to nothing", "example=nowhere", `"$ref":"#/components/examples/none"`},
	} {
		var h []string
		if tc.prefer != "" {
			h = []string{"Prefer", tc.prefer}
		}
		got := call(t, "GET", hs.URL+"/things/1", "", "", h...)
		if got.status != 200 || !strings.Contains(got.body, tc.want) {
			t.Errorf("%s: %d %s; want %s", tc.name, got.status, got.body, tc.want)
		}
	}
}

// TestGitHubPageLinks: octokit's paginate follows a list's Link header,
// rel="next", until there is none. The spec's example Link
// (<https://api.github.com/resource?page=2>; rel="next", ...) was sent
// on every page, so a client paged to GitHub's own host, or for ever.
// Now the Link names this server's pages, and the last has no next.
func TestGitHubPageLinks(t *testing.T) {
	t.Parallel()
	hs := serveGitHub(t)
	const issues = "/repos/octocat/hello/issues"
	for i := range 5 {
		if got := call(t, "POST", hs.URL+issues, "application/json", fmt.Sprintf(`{"title":"Issue %d"}`, i+1)); got.status != 201 {
			t.Fatalf("create: %d %s", got.status, got.body)
		}
	}
	if got := call(t, "GET", hs.URL+issues, "", ""); got.header.Get("Link") != "" {
		t.Errorf("one page of 5 (per_page 30): Link %q; want none", got.header.Get("Link"))
	}
	next := regexp.MustCompile(`<([^>]+)>; rel="next"`)
	var numbers []string
	u := hs.URL + issues + "?per_page=2&state=all"
	for pages := 0; u != ""; pages++ {
		if pages > 5 {
			t.Fatalf("still paging after 5 pages: %v", numbers)
		}
		got := call(t, "GET", u, "", "")
		var items []map[string]any
		_ = json.Unmarshal([]byte(got.body), &items)
		for _, it := range items {
			numbers = append(numbers, fmt.Sprint(it["number"]))
		}
		link := got.header.Get("Link")
		if pages > 0 && !strings.Contains(link, `rel="prev"`) {
			t.Errorf("page %d: Link %q; want a prev", pages+1, link)
		}
		u = ""
		if m := next.FindStringSubmatch(link); m != nil {
			if !strings.HasPrefix(m[1], hs.URL+issues+"?") || !strings.Contains(m[1], "state=all") {
				t.Fatalf("page %d: next %q; want this server's list with the query kept", pages+1, m[1])
			}
			u = m[1]
		}
	}
	if strings.Join(numbers, " ") != "5 4 3 2 1" {
		t.Errorf("paged through %v; want 5 4 3 2 1", numbers)
	}
}

// TestGitHubCreateWithoutAssignee: an issue created without an assignee
// or a milestone has neither, as GitHub's has: both are required and
// nullable in the issue's schema, and the create answered and stored the
// schema's placeholders (an assignee octocat, a milestone object), which
// a read gave back as if the client had set them.
func TestGitHubCreateWithoutAssignee(t *testing.T) {
	t.Parallel()
	hs := serveGitHub(t)
	c := conformanceOf(t, githubIssues)
	const issues = "/repos/octocat/hello/issues"
	made := call(t, "POST", hs.URL+issues, "application/json", `{"title":"Bug"}`)
	c.check(t, "POST", issues, made)
	read := call(t, "GET", hs.URL+issues+"/1", "", "")
	c.check(t, "GET", issues+"/1", read)
	for _, a := range []answer{made, read} {
		for _, field := range []string{"assignee", "milestone"} {
			if v, has := a.json[field]; !has || v != nil {
				t.Errorf("%s = %v (present %v); want null: %.300s", field, v, has, a.body)
			}
		}
		if a.json["title"] != "Bug" || a.json["number"] != 1.0 {
			t.Errorf("issue %.300s; want number 1, titled Bug", a.body)
		}
	}
}

// TestGitHubCreateLeavesServerNullsNull: a freshly created issue is not
// closed. Its closed_at is required and nullable, not in the create's
// body and with no example in the excerpt; the create answered and
// stored a placeholder date (2026-01-01T00:00:00Z) beside "state": "open",
// where GitHub answers null. A required (or readOnly) field of an object
// made from the schema alone that is nullable, a plain value and has no
// value of its own in the schema (example, default, enum) is null; one
// that is not nullable (created_at), or is an object (user), keeps its
// generated value.
func TestGitHubCreateLeavesServerNullsNull(t *testing.T) {
	t.Parallel()
	hs := serveGitHub(t)
	c := conformanceOf(t, githubIssues)
	const issues = "/repos/octocat/hello/issues"
	made := call(t, "POST", hs.URL+issues, "application/json", `{"title":"Bug"}`)
	c.check(t, "POST", issues, made)
	read := call(t, "GET", hs.URL+issues+"/1", "", "")
	c.check(t, "GET", issues+"/1", read)
	for _, a := range []answer{made, read} {
		if v, has := a.json["closed_at"]; !has || v != nil {
			t.Errorf("closed_at = %v (present %v); want null: %.300s", v, has, a.body)
		}
		if _, ok := a.json["created_at"].(string); !ok {
			t.Errorf("created_at = %v; want a date: %.300s", a.json["created_at"], a.body)
		}
		if _, ok := a.json["user"].(map[string]any); !ok {
			t.Errorf("user = %v; want the generated user: %.300s", a.json["user"], a.body)
		}
	}
}
