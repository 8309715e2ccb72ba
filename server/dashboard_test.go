package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/dashboard"
	"github.com/scenariomock/scenariomock/scenarios"
)

// The dashboard is mounted at /__admin/ui with its assets, each with the
// CSP that allows only the page's own origin; other /ui paths get the
// admin API's problems.
func TestDashboardMounted(t *testing.T) {
	t.Parallel()
	if dashboard.Path != adminPrefix+"/ui" {
		t.Fatalf("dashboard.Path = %q, want %q", dashboard.Path, adminPrefix+"/ui")
	}
	_, hs, _ := serveYAML(t, Options{}, dashboardYAML)
	for _, tc := range []struct {
		path, ctype, contains string
	}{
		{"/__admin/ui", "text/html; charset=utf-8", `<script src="/__admin/ui/app.js" defer></script>`},
		{"/__admin/ui/app.js", "text/javascript; charset=utf-8", "/__admin/requests/stream"},
		{"/__admin/ui/app.css", "text/css; charset=utf-8", ".routes-viewport"},
		{"/__admin/ui/icon.svg", "image/svg+xml", "<svg"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			res := do(t, http.MethodGet, hs.URL+tc.path, "")
			if res.status != http.StatusOK {
				t.Fatalf("status %d: %s", res.status, res.body)
			}
			if got := res.header.Get("Content-Security-Policy"); got != dashboard.CSP || !strings.HasPrefix(got, "default-src 'self';") {
				t.Errorf("Content-Security-Policy %q", got)
			}
			if got := res.header.Get("Content-Type"); got != tc.ctype {
				t.Errorf("Content-Type %q, want %q", got, tc.ctype)
			}
			if got := res.header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q", got)
			}
			if !strings.Contains(res.body, tc.contains) {
				t.Errorf("body lacks %q", tc.contains)
			}
			// Revalidated by ETag, so a new binary's page is never mixed
			// with an old cached script.
			again := do(t, http.MethodGet, hs.URL+tc.path, "", "If-None-Match", res.header.Get("ETag"))
			if again.status != http.StatusNotModified {
				t.Errorf("If-None-Match its ETag: %d, want 304", again.status)
			}
		})
	}
	for _, tc := range []struct {
		name, method, path string
		status             int
	}{
		{"unknown asset", http.MethodGet, "/__admin/ui/nope.js", http.StatusNotFound},
		{"directory form with a dot segment", http.MethodGet, "/__admin/ui/./", http.StatusBadRequest}, // not the canonical spelling
		{"POST", http.MethodPost, "/__admin/ui", http.StatusMethodNotAllowed},
		{"POST an asset", http.MethodPost, "/__admin/ui/app.js", http.StatusMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := do(t, tc.method, hs.URL+tc.path, "")
			if res.status != tc.status || res.header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("%s %s: %d %s %s, want a %d problem", tc.method, tc.path, res.status, res.header.Get("Content-Type"), res.body, tc.status)
			}
			if tc.status == http.StatusMethodNotAllowed && res.header.Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow %q", res.header.Get("Allow"))
			}
		})
	}
}

// noRedirects is a client that shows a redirect rather than follow it.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// TestDashboardDirectoryForm: /__admin/ui/, as people type it, sends the
// browser to the dashboard (a 400 before), on the scenario port and on
// the admin listener, with or without an admin token; other methods and
// other spellings are refused as before.
func TestDashboardDirectoryForm(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{AdminToken: "tok"}, dashboardYAML)
	ss := serveSplit(t, Options{}, dashboardYAML)
	for _, base := range []string{hs.URL, ss.admin} {
		for _, tc := range []struct{ method, path, location string }{
			{http.MethodGet, "/__admin/ui/", "/__admin/ui"},
			{http.MethodHead, "/__admin/ui/", "/__admin/ui"},
			{http.MethodGet, "/__admin/ui/?tab=requests", "/__admin/ui?tab=requests"},
		} {
			req, err := http.NewRequest(tc.method, base+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := noRedirects.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != tc.location {
				t.Errorf("%s %s%s: %d Location %q, want 301 to %s", tc.method, base, tc.path, res.StatusCode, res.Header.Get("Location"), tc.location)
			}
		}
		// A browser follows it to the page.
		resp, err := http.Get(base + "/__admin/ui/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/__admin/ui" || resp.Header.Get("Content-Security-Policy") != dashboard.CSP {
			t.Errorf("GET %s/__admin/ui/, redirects followed: %d at %s, want the dashboard", base, resp.StatusCode, resp.Request.URL)
		}
		for _, tc := range []struct{ method, path string }{
			{http.MethodPost, "/__admin/ui/"},
			{http.MethodGet, "/__admin/ui//"},
			{http.MethodGet, "/__admin/./ui/"},
		} {
			if res := do(t, tc.method, base+tc.path, ""); res.status != http.StatusBadRequest || res.header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("%s %s: %d %s, want the 400 problem of a spelling not canonical", tc.method, tc.path, res.status, res.body)
			}
		}
	}
}

// With --admin-token, the page and its assets load without it (a browser
// navigating cannot send it; they hold nothing secret), and everything the
// page then asks for needs it.
func TestDashboardOpenWithAdminToken(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{AdminToken: "tok"}, dashboardYAML)
	for _, p := range dashboard.Assets() {
		if res := do(t, http.MethodGet, hs.URL+p, ""); res.status != http.StatusOK {
			t.Errorf("GET %s without the token: %d, want 200", p, res.status)
		}
	}
	for _, p := range []string{"/__admin/ui/nope.js", "/__admin/scenarios", "/__admin/requests"} {
		if res := do(t, http.MethodGet, hs.URL+p, ""); res.status != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d, want 401", p, res.status)
		}
	}
	if res := do(t, http.MethodGet, hs.URL+"/__admin/scenarios", "", "Authorization", "Bearer tok"); res.status != http.StatusOK {
		t.Errorf("GET /__admin/scenarios with the token: %d", res.status)
	}
}

const dashboardYAML = `
routes:
  - { name: hello, path: /hello, respond: { body: hi } }
`

// With --admin-addr the dashboard is on the admin listener (its calls go
// to its own origin) and the scenario port has none.
func TestDashboardOnAdminListener(t *testing.T) {
	t.Parallel()
	ss := serveSplit(t, Options{}, dashboardYAML)
	if res := do(t, http.MethodGet, ss.admin+"/__admin/ui", ""); res.status != http.StatusOK || res.header.Get("Content-Security-Policy") != dashboard.CSP {
		t.Errorf("admin listener: GET /__admin/ui: %d, CSP %q", res.status, res.header.Get("Content-Security-Policy"))
	}
	if res := do(t, http.MethodGet, ss.url+"/__admin/ui", ""); res.status != http.StatusNotFound || res.header.Get("Content-Security-Policy") != "" {
		t.Errorf("scenario listener: GET /__admin/ui: %d, want the scenarios' 404", res.status)
	}
}

// BenchmarkDashboardPoll is what the dashboard asks every second: the
// page of routes in view (a window of 15 routes and a margin of 100 on
// each side, 215 routes) with the reload status. Its cost grows with the
// page, not with the number of routes: compare 1,000 and 10,000.
func BenchmarkDashboardPoll(b *testing.B) {
	for _, n := range []int{10, 1000, 10_000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			var y strings.Builder
			y.WriteString("routes:\n")
			for i := range n {
				fmt.Fprintf(&y, "  - { name: r%d, method: GET, path: /items/%d, respond: { status: 200 } }\n", i, i)
			}
			s, err := New(Options{Load: func() (*scenarios.Set, error) { return scenarios.LoadBytes("many.yaml", []byte(y.String())) }})
			if err != nil {
				b.Fatal(err)
			}
			// Scrolled to the middle, as far from both ends as it gets.
			target := fmt.Sprintf("/__admin/scenarios?offset=%d&limit=215", max(0, n/2-100))
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				r := httptest.NewRequest(http.MethodGet, target, nil)
				r.Host = "127.0.0.1" // an admin call's Host, as the page sends it
				s.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", target, w.Code, w.Body)
				}
			}
		})
	}
}
