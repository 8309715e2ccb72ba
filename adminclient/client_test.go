package adminclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/adminclient"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/server"
	"github.com/scenariomock/scenariomock/state"
)

// patience bounds waits for things that take milliseconds, generously:
// the CI machine is a loaded 2-core box running -race.
const patience = 30 * time.Second

func load(yaml string) func() (*scenarios.Set, error) {
	return func() (*scenarios.Set, error) { return scenarios.LoadBytes("t.yaml", []byte(yaml)) }
}

// serve runs the real server on yaml, on a real listener, until the test
// ends; stop shuts it down earlier (a second call does nothing).
func serve(t *testing.T, yaml string) (url string, c *adminclient.Client, stop func()) {
	t.Helper()
	srv, err := server.New(server.Options{Load: load(yaml)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	url = "http://" + ln.Addr().String()
	if c, err = adminclient.New(url); err != nil {
		t.Fatal(err)
	}
	return url, c, stop
}

func ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	t.Cleanup(cancel)
	return ctx
}

func TestParseAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want, err string }{
		{in: "127.0.0.1:8080", want: "http://127.0.0.1:8080"},
		{in: "http://127.0.0.1:8080/", want: "http://127.0.0.1:8080"},
		{in: "https://mock.example:8443/prefix/", want: "https://mock.example:8443/prefix"},
		{in: "0.0.0.0:9000", want: "http://127.0.0.1:9000"}, // listening everywhere: ask on loopback
		{in: "[::]:9000", want: "http://127.0.0.1:9000"},
		{in: ":9000", want: "http://127.0.0.1:9000"},
		{in: "localhost", want: "http://localhost"},
		{in: "http://127.0.0.1:8080/__admin", want: "http://127.0.0.1:8080"},
		{in: "127.0.0.1:8080/__admin/ui/", want: "http://127.0.0.1:8080"},
		{in: "https://mock.example/prefix/__admin/", want: "https://mock.example/prefix"},
		{in: "ftp://x:1", err: "want http:// or https://"},
		{in: "127.0.0.1:99999", err: "bad port"},
		{in: "127.0.0.1:", err: "empty port"},
		{in: "http://u:p@h:1", err: "only a scheme"},
		{in: "http://h:1/?q=1", err: "only a scheme"},
	} {
		u, err := adminclient.ParseAddr(tc.in)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseAddr(%q) = %v, %v; want an error with %q", tc.in, u, err, tc.err)
			}
		case err != nil || u.String() != tc.want:
			t.Errorf("ParseAddr(%q) = %v, %v; want %s", tc.in, u, err, tc.want)
		}
	}
}

func TestRoutesPages(t *testing.T) {
	t.Parallel()
	var yaml strings.Builder
	yaml.WriteString("routes:\n")
	for i := range 7 {
		fmt.Fprintf(&yaml, "  - { name: r%d, method: GET, path: /r%d, respond: {} }\n", i, i)
	}
	url, c, _ := serve(t, yaml.String())
	resp, err := http.Get(url + "/r3")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	adminclient.SetPageSize(c, 3) // pages of 3, 3 and 1
	routes, err := c.Routes(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) != 7 {
		t.Fatalf("%d routes, want 7: %+v", len(routes), routes)
	}
	for i, r := range routes {
		if r.Name != fmt.Sprintf("r%d", i) || r.Order != i+1 || r.Path != fmt.Sprintf("/r%d", i) || r.Methods[0] != "GET" || !strings.HasPrefix(r.Source, "t.yaml:") {
			t.Errorf("route %d = %+v", i, r)
		}
		if want := int64(map[bool]int{true: 1}[i == 3]); r.Hits != want {
			t.Errorf("route %s: %d hits, want %d", r.Name, r.Hits, want)
		}
	}
}

func TestToken(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	srv, err := server.New(server.Options{Load: load("routes: []\n")})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	c, err := adminclient.New(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Routes(ctx(t)); err != nil {
		t.Fatal(err)
	}
	withToken, err := adminclient.New(c.URL(), adminclient.WithToken("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	if err := withToken.Reset(ctx(t)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != "" || seen[1] != "Bearer s3cret" {
		t.Errorf("Authorization headers %q, want none, then Bearer s3cret", seen)
	}
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c, err := adminclient.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"Count":  func() error { _, err := c.Count(ctx(t), adminclient.Filter{}); return err },
		"Routes": func() error { _, err := c.Routes(ctx(t)); return err },
		"Stream": func() error {
			return c.Stream(ctx(t), adminclient.Filter{}, -1, func(state.Entry) error { return nil })
		},
	} {
		if err := call(); !errors.Is(err, adminclient.ErrUnreachable) || !strings.Contains(err.Error(), addr) {
			t.Errorf("%s: %v, want ErrUnreachable naming %s", name, err, addr)
		}
	}
}

// TestStatusError: an answer that is not a success is a StatusError with
// the problem's detail, or a hint when it is not a problem at all.
func TestStatusError(t *testing.T) {
	t.Parallel()
	_, c, _ := serve(t, "routes: [{ name: x, path: /x, respond: {} }]\n")
	err := c.Reset(ctx(t)) // fine
	if err != nil {
		t.Fatal(err)
	}
	notMock := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notMock.Close)
	other, _ := adminclient.New(notMock.URL)
	_, err = other.Count(ctx(t), adminclient.Filter{})
	var se *adminclient.StatusError
	if !errors.As(err, &se) || se.StatusCode != 404 || !strings.Contains(err.Error(), "is a scenariomock server listening there?") {
		t.Errorf("Count of a server that is not scenariomock: %v", err)
	}
	// A problem whose reasons are its errors list (a title, no detail):
	// the message says the title, then the reasons after a colon.
	_, err = c.SendEvent(ctx(t), adminclient.Event{Type: "payment.created", Object: []byte(`{"id":"pay_1"}`)})
	if !errors.As(err, &se) || se.StatusCode != 400 || !strings.Contains(err.Error(), "The event was not sent: no webhook endpoint") {
		t.Errorf("SendEvent with no endpoints: %v", err)
	}
}

// TestStreamGivesUpOnSilence: a server that stops sending, not even its
// keep-alives, ends Stream with ErrUnreachable rather than a wait forever.
func TestStreamGivesUpOnSilence(t *testing.T) {
	adminclient.SetStreamIdle(t, 200*time.Millisecond)
	frozen := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, ": keep-alive\n\n")
		http.NewResponseController(w).Flush()
		select {
		case <-frozen:
		case <-r.Context().Done():
		}
	}))
	defer hs.Close()
	defer close(frozen)
	c, err := adminclient.New(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- c.Stream(context.Background(), adminclient.Filter{}, 0, func(state.Entry) error { return nil })
	}()
	select {
	case err := <-done:
		if !errors.Is(err, adminclient.ErrUnreachable) || !strings.Contains(err.Error(), "keep-alive") {
			t.Errorf("Stream = %v, want ErrUnreachable saying it heard nothing", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Stream still waiting on a silent server after a minute")
	}
}
