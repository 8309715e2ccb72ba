package server

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/scenarios"
)

// TestDebugLogsRequestDetails: at debug, a request's line adds its query,
// headers and body (the body cut at debugBodyMax); at info it does not.
func TestDebugLogsRequestDetails(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.yaml")
	writeFile(t, path, "routes: [{ name: ok, method: POST, path: /p, respond: { status: 201 } }]\n")
	big := strings.Repeat("b", debugBodyMax+100)
	for _, tc := range []struct {
		level slog.Level
		body  string
		want  map[string]any // fields of the request line; nil: must be absent
	}{
		{slog.LevelDebug, `{"amount":9800}`, map[string]any{
			"query": "expand=customer&x=1", "body": `{"amount":9800}`,
			"headers": map[string]any{"Idempotency-Key": "k-1"},
		}},
		{slog.LevelDebug, big, map[string]any{"body": big[:debugBodyMax] + "…", "bodyBytes": float64(len(big))}},
		{slog.LevelInfo, `{"amount":9800}`, map[string]any{"query": nil, "headers": nil, "body": nil}},
	} {
		logs := &syncBuffer{}
		s, err := New(Options{
			Load:   func() (*scenarios.Set, error) { return scenarios.Load(path) },
			Logger: slog.New(NewLogHandler(logs, true, tc.level)),
		})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s)
		r := do(t, "POST", hs.URL+"/p?expand=customer&x=1", tc.body, "Idempotency-Key", "k-1")
		hs.Close()
		if r.status != 201 {
			t.Fatalf("status %d", r.status)
		}
		var line map[string]any
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			if strings.Contains(l, `"msg":"request"`) {
				if err := json.Unmarshal([]byte(l), &line); err != nil {
					t.Fatal(err)
				}
			}
		}
		if line == nil {
			t.Fatalf("%s: no request line in %s", tc.level, logs.String())
		}
		for k, want := range tc.want {
			got, ok := line[k]
			if want == nil {
				if ok {
					t.Errorf("%s: %s = %v, want none", tc.level, k, got)
				}
				continue
			}
			if h, isMap := want.(map[string]any); isMap {
				gh, _ := got.(map[string]any)
				for name, v := range h {
					if gh[name] != v {
						t.Errorf("%s: headers[%s] = %v, want %v (line %v)", tc.level, name, gh[name], v, line)
					}
				}
				continue
			}
			if got != want {
				t.Errorf("%s: %s = %.80q, want %.80q", tc.level, k, got, want)
			}
		}
	}
}
