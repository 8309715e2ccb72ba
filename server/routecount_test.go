package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRouteRequestCounts: GET /__admin/scenarios gives each route its
// hits (the times it ran) beside the requests it took, replays and
// refusals broken out, so that both agree with the journal. A reload
// that keeps the route keeps its counts; a reset zeroes them.
func TestRouteRequestCounts(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(idemScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	_, hs, _ := newTestServer(t, Options{}, path)
	key := []string{"Content-Type", jsonCT, "Idempotency-Key", "k-1"}
	for _, c := range []struct {
		body   string
		header []string
		status int
	}{
		{`{"amount":1}`, key, 201},                              // runs
		{`{"amount":1}`, key, 201},                              // replayed
		{`{"amount":2}`, key, 422},                              // refused: another body for the key
		{`{"amount":1}`, []string{"Content-Type", jsonCT}, 400}, // refused: the key is required
	} {
		if r := do(t, "POST", hs.URL+"/payments", c.body, c.header...); r.status != c.status {
			t.Fatalf("POST /payments %s: %d %s, want %d", c.body, r.status, r.body, c.status)
		}
	}
	counts := func() string {
		t.Helper()
		var st struct {
			Routes []struct {
				Name     string
				Hits     int64
				Requests struct{ Total, Replayed, Refused int64 }
			}
		}
		if err := json.Unmarshal([]byte(do(t, "GET", hs.URL+"/__admin/scenarios?limit=1", "").body), &st); err != nil || len(st.Routes) != 1 {
			t.Fatalf("GET /__admin/scenarios: %v %+v", err, st)
		}
		r := st.Routes[0]
		return strings.Join([]string{r.Name, strconv.FormatInt(r.Hits, 10), strconv.FormatInt(r.Requests.Total, 10), strconv.FormatInt(r.Requests.Replayed, 10), strconv.FormatInt(r.Requests.Refused, 10)}, " ")
	}
	const want = "create payment 1 4 1 2" // name, hits, requests, replayed, refused
	if got := counts(); got != want {
		t.Errorf("counts %q, want %q", got, want)
	}
	if n := countRequests(t, hs.URL, "route=create+payment"); n != 4 {
		t.Errorf("journal: %d requests of the route, want 4", n)
	}
	// A reload that keeps the route keeps its counts, as its hits.
	if err := os.WriteFile(path, []byte(idemScenario+"  - { name: added, path: /added, respond: { status: 204 } }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := do(t, "POST", hs.URL+"/__admin/reload", ""); r.status != 200 {
		t.Fatalf("reload: %d %s", r.status, r.body)
	}
	if got := counts(); got != want {
		t.Errorf("after a reload, counts %q, want %q", got, want)
	}
	do(t, "POST", hs.URL+"/__admin/reset", "")
	if got := counts(); got != "create payment 0 0 0 0" {
		t.Errorf("after a reset, counts %q", got)
	}
}

// TestPlainRouteHits: a route whose answer does not depend on its
// position counts its hits in this process (routeRuntime.shared), and
// they behave as a shared route's: kept by a reload that keeps the
// route, started over when its definition changes, zeroed by a reset of
// the route or of everything.
func TestPlainRouteHits(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.yaml")
	write := func(status int) {
		t.Helper()
		yaml := "routes:\n  - { name: plain, path: /plain, respond: { status: " + strconv.Itoa(status) + " } }\n" +
			"  - { name: other, path: /other, respond: { status: 204 } }\n"
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(204)
	_, hs, _ := newTestServer(t, Options{}, path)
	get := func(route string, n int) {
		t.Helper()
		for range n {
			if r := do(t, "GET", hs.URL+"/"+route, ""); r.status != 204 && r.status != 202 {
				t.Fatalf("GET /%s: %d %s", route, r.status, r.body)
			}
		}
	}
	hits := func() string {
		t.Helper()
		var st struct {
			Routes []struct {
				Name string
				Hits int64
			}
		}
		if err := json.Unmarshal([]byte(do(t, "GET", hs.URL+"/__admin/scenarios", "").body), &st); err != nil {
			t.Fatalf("GET /__admin/scenarios: %v", err)
		}
		var out []string
		for _, r := range st.Routes {
			out = append(out, r.Name+"="+strconv.FormatInt(r.Hits, 10))
		}
		return strings.Join(out, " ")
	}
	reload := func() {
		t.Helper()
		if r := do(t, "POST", hs.URL+"/__admin/reload", ""); r.status != 200 {
			t.Fatalf("reload: %d %s", r.status, r.body)
		}
	}
	check := func(when, want string) {
		t.Helper()
		if got := hits(); got != want {
			t.Errorf("%s: hits %q, want %q", when, got, want)
		}
	}
	get("plain", 3)
	get("other", 2)
	check("served", "plain=3 other=2")
	reload()
	check("after a reload that keeps the routes", "plain=3 other=2")
	write(202) // plain changes: a new route, whose hits start over
	reload()
	check("after plain changed", "plain=0 other=2")
	get("plain", 1)
	check("served again", "plain=1 other=2")
	do(t, "POST", hs.URL+"/__admin/reset?route=other", "")
	check("after a reset of other", "plain=1 other=0")
	get("other", 1)
	do(t, "POST", hs.URL+"/__admin/reset", "")
	check("after a reset", "plain=0 other=0")
}
