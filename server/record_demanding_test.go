package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/record"
)

// TestRecordWhatAWireMockUserChecks: the answers a WireMock recording
// user checks first come back from the recording as they came through the
// proxy: two Set-Cookie fields (both kept, every cookie's value redacted,
// as README says of cookies), a repeated header
// (Link), a redirect whose absolute Location named the upstream (now the
// mock), a chunked answer, and a query with a repeated parameter.
func TestRecordWhatAWireMockUserChecks(t *testing.T) {
	t.Parallel()
	var up *httptest.Server
	up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/login":
			w.Header().Add("Set-Cookie", "session=s3cr3tvalue1; Path=/; HttpOnly")
			w.Header().Add("Set-Cookie", "theme=dark; Path=/")
			w.Header().Add("Link", `</a>; rel="next"`)
			w.Header().Add("Link", `</z>; rel="last"`)
			io.WriteString(w, "logged in")
		case "/old":
			http.Redirect(w, r, up.URL+"/new", http.StatusFound)
		case "/stream":
			for i := range 3 {
				io.WriteString(w, strings.Repeat(string(rune('a'+i)), 10))
				w.(http.Flusher).Flush()
			}
		case "/search":
			io.WriteString(w, "tags "+strings.Join(r.URL.Query()["tag"], "+"))
		}
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	rec := record.New(record.Options{Upstream: up.URL})
	_, mock, _ := serveYAMLRunning(t, Options{ProxyUnmatched: up.URL, Recorder: rec, RecordDir: dir}, "routes: []\n")
	rec.SetMockURL(mock)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(base, path string) (*http.Response, string) {
		t.Helper()
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	paths := []string{"/login", "/old", "/stream", "/search?tag=a&tag=b"}
	live := map[string]string{}
	for _, p := range paths {
		_, live[p] = get(mock, p)
	}
	if r := do(t, http.MethodPost, mock+"/__admin/recording", ""); r.status != 200 {
		t.Fatalf("POST /__admin/recording: %d %s", r.status, r.body)
	}
	text, err := os.ReadFile(filepath.Join(dir, "recorded.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(text), "s3cr3tvalue1") {
		t.Errorf("the recording holds the session cookie's value:\n%s", text)
	}
	_, replay, _ := serveYAMLRunning(t, Options{}, strings.ReplaceAll(string(text), mock, "http://mock.test"))
	for _, p := range paths {
		resp, body := get(replay, p)
		if want := strings.ReplaceAll(live[p], up.URL, "http://mock.test"); body != want {
			t.Errorf("GET %s served back: %q, want %q", p, body, want)
		}
		switch p {
		case "/login":
			if sc := resp.Header.Values("Set-Cookie"); !slices.Equal(sc, []string{"session=REDACTED; Path=/; HttpOnly", "theme=REDACTED; Path=/"}) {
				t.Errorf("Set-Cookie served back: %q", sc)
			}
			if l := resp.Header.Values("Link"); len(l) != 2 {
				t.Errorf("Link served back: %q, want both", l)
			}
		case "/old":
			if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "http://mock.test/new" {
				t.Errorf("redirect served back: %d Location %q, want 302 to the mock's /new", resp.StatusCode, resp.Header.Get("Location"))
			}
		}
	}
	if t.Failed() {
		t.Logf("recording:\n%s", text)
	}
}
