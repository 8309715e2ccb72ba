package openapi_test

// Tests that serve an excerpt of GitHub's REST API description
// (testdata/github, see its SOURCE.md): OpenAPI 3.0.3 in JSON, whose
// conventions are not Stripe's: integer ids, items read by a number that
// is not their id (/issues/{issue_number}), collections nested under an
// owner and a repository, and nullable: true beside a oneOf.

import (
	"net/http/httptest"
	"path/filepath"
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
