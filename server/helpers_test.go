package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"
)

const demoFile = "../examples/payments-idempotency.yaml"

// testClock waits scale times the requested delay on a real timer and
// records every wait, so tests can check which delay was asked for
// without waiting for it.
type testClock struct {
	scale    float64
	mu       sync.Mutex // guards waits, ended and returned
	waits    []time.Duration
	ended    []bool        // whether each wait ran its full length
	returned []bool        // whether each wait has returned at all
	began    chan struct{} // receives once per wait that begins, if not nil
}

func (c *testClock) Now() time.Time { return time.Now() }

func (c *testClock) Wait(ctx context.Context, d time.Duration) bool {
	c.mu.Lock()
	i := len(c.waits)
	c.waits = append(c.waits, d)
	c.ended = append(c.ended, false)
	c.returned = append(c.returned, false)
	c.mu.Unlock()
	if c.began != nil {
		c.began <- struct{}{}
	}
	ok := realClock{}.Wait(ctx, time.Duration(float64(d)*c.scale))
	c.mu.Lock()
	c.ended[i], c.returned[i] = ok, true
	c.mu.Unlock()
	return ok
}

// cutShort reports whether wait i has returned before its full length.
func (c *testClock) cutShort(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return i < len(c.returned) && c.returned[i] && !c.ended[i]
}

func (c *testClock) recorded() ([]time.Duration, []bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...), append([]bool(nil), c.ended...)
}

// syncBuffer is a log destination tests can read while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newTestServer serves the scenario files at paths over httptest.
func newTestServer(t *testing.T, opts Options, paths ...string) (*Server, *httptest.Server, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	if opts.Load == nil {
		opts.Load = func() (*scenarios.Set, error) { return scenarios.Load(paths...) }
	}
	opts.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs, logs
}

// serveYAML writes content to a temporary scenario file and serves it.
func serveYAML(t *testing.T, opts Options, content string) (*Server, *httptest.Server, *syncBuffer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return newTestServer(t, opts, path)
}

type response struct {
	status int
	header http.Header
	body   string
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(r.body), &v); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", r.body, err)
	}
	return v
}

func do(t *testing.T, method, url, body string, headers ...string) response {
	t.Helper()
	r, err := doCtx(context.Background(), method, url, body, headers...)
	if err != nil && method == http.MethodGet && strings.Contains(err.Error(), "CloseIdleConnections called") {
		// Another parallel test's httptest.Server.Close closed the idle
		// connections of http.DefaultTransport, which this request had
		// just picked, before the request went out: a race of the test
		// harness, not of the server. A GET is safe to send again.
		r, err = doCtx(context.Background(), method, url, body, headers...)
	}
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

func doCtx(ctx context.Context, method, url, body string, headers ...string) (response, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return response{}, err
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}, err
}

// patience is how long a test waits for something that takes
// milliseconds: generous, because the CI machine is a loaded 2-core box
// running these tests under -race, and waiting costs nothing when the
// condition holds early.
const patience = 30 * time.Second

// eventually retries check until it returns "" or the deadline passes.
func eventually(t *testing.T, within time.Duration, check func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", within, msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
