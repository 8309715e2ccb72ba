package server

import (
	"reflect"
	"testing"
)

// TestHeaderListSentPerValue checks that a header given a list of values
// arrives as one header line per value, in order, static or templated.
func TestHeaderListSentPerValue(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
defaults:
  headers: { Set-Cookie: default=1, X-Default: kept }
routes:
  - name: static
    path: /static
    respond:
      headers: { Set-Cookie: [a=1, b=2], Link: ["</a>; rel=next"] }
  - name: templated
    path: /t/{id}
    respond:
      template: true
      headers:
        Set-Cookie: ["first=1", "id={{ .Request.Vars.id }}", "last=3"]
        X-Id: "{{ .Request.Vars.id }}"
`)
	cases := []struct {
		path string
		want map[string][]string
	}{
		{"/static", map[string][]string{"Set-Cookie": {"a=1", "b=2"}, "Link": {"</a>; rel=next"}, "X-Default": {"kept"}}},
		{"/t/7", map[string][]string{"Set-Cookie": {"first=1", "id=7", "last=3"}, "X-Id": {"7"}, "X-Default": {"kept"}}},
	}
	for _, c := range cases {
		r := do(t, "GET", hs.URL+c.path, "")
		if r.status != 200 {
			t.Fatalf("GET %s: status %d, body %s", c.path, r.status, r.body)
		}
		for name, want := range c.want {
			if got := r.header[name]; !reflect.DeepEqual(got, want) {
				t.Errorf("GET %s: %s lines = %q, want %q", c.path, name, got, want)
			}
		}
	}
}
