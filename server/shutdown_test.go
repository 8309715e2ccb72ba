package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/record"
	"github.com/scenariomock/scenariomock/scenarios"
)

// serveReal runs Serve on a real listener and returns the base URL and a
// function that stops it and returns Serve's result.
func serveReal(t *testing.T, opts Options, yaml string) (string, func() error) {
	t.Helper()
	_, url, stop := serveRealServer(t, opts, yaml)
	return url, stop
}

// serveRealServer is serveReal that also returns the server, whose
// journal a test reads once it has stopped.
func serveRealServer(t *testing.T, opts Options, yaml string) (*Server, string, func() error) {
	t.Helper()
	opts.Load = func() (*scenarios.Set, error) { return scenarios.LoadBytes("s.yaml", []byte(yaml)) }
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	return s, "http://" + ln.Addr().String(), func() error { cancel(); return <-done }
}

// settledGoroutines waits for the goroutine count to fall to at most n.
func settledGoroutines(t *testing.T, n int) {
	t.Helper()
	eventually(t, patience, func() string {
		if g := runtime.NumGoroutine(); g > n {
			buf := make([]byte, 1<<16)
			return fmt.Sprintf("%d goroutines, %d before:\n%s", g, n, buf[:runtime.Stack(buf, true)])
		}
		return ""
	})
}

// These tests count goroutines, so they do not run in parallel.

// TestShutdownWaitsForDelaysWhenAsked: with WaitDelaysOnShutdown, a
// request in its delay finishes it and gets its answer.
func TestShutdownWaitsForDelaysWhenAsked(t *testing.T) {
	before := runtime.NumGoroutine()
	clock := &testClock{scale: 1, began: make(chan struct{}, 1)}
	url, stop := serveReal(t, Options{ShutdownTimeout: patience, WaitDelaysOnShutdown: true, Clock: clock},
		"routes: [{ path: /slow, respond: { body: done, delay: 300ms } }]")
	waitListening(t, url)
	got := make(chan response, 1)
	go func() { got <- do(t, "GET", url+"/slow", "") }()
	inDelay(t, clock)
	if err := stop(); err != nil {
		t.Fatalf("Serve returned %v, want nil", err)
	}
	if r := <-got; r.status != 200 || r.body != "done" {
		t.Errorf("in-flight request: %d %q, want it to finish", r.status, r.body)
	}
	http.DefaultClient.CloseIdleConnections()
	settledGoroutines(t, before)
}

// TestShutdownDropsDelaysAtOnce: by default a delay is not work to finish.
// A client in a 10 minute delay used to hold SIGTERM for the whole
// shutdown timeout; now its connection is closed at once, without an
// answer, and the timeout (a minute here) bounds only real writes.
func TestShutdownDropsDelaysAtOnce(t *testing.T) {
	before := runtime.NumGoroutine()
	clock := &testClock{scale: 1, began: make(chan struct{}, 1)}
	logs := &syncBuffer{}
	url, stop := serveReal(t, Options{ShutdownTimeout: time.Minute, Clock: clock, Logger: slog.New(slog.NewJSONHandler(logs, nil))},
		"routes: [{ path: /slow, respond: { body: done, delay: 10m } }]")
	waitListening(t, url)
	errc := make(chan error, 1)
	go func() { _, err := doCtx(context.Background(), "GET", url+"/slow", ""); errc <- err }()
	<-clock.began
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("Serve returned %v", err)
	}
	if el := time.Since(start); el > 30*time.Second {
		t.Errorf("shutdown took %s: it waited for the delay", el)
	}
	if err := <-errc; err == nil {
		t.Error("the request in a 10m delay got an answer; its connection should have been closed")
	}
	if !strings.Contains(logs.String(), "delay cancelled by shutdown") {
		t.Errorf("no log line says the delay was cancelled by shutdown:\n%s", logs.String())
	}
	http.DefaultClient.CloseIdleConnections()
	settledGoroutines(t, before)
}

func TestShutdownCancelsLongDelays(t *testing.T) {
	before := runtime.NumGoroutine()
	clock := &testClock{scale: 1, began: make(chan struct{}, 1)}
	url, stop := serveReal(t, Options{Clock: clock, ShutdownTimeout: 100 * time.Millisecond}, "routes: [{ path: /hour, respond: { delay: 1h } }]")
	errc := make(chan error, 1)
	go func() { _, err := doCtx(context.Background(), "GET", url+"/hour", ""); errc <- err }()
	inDelay(t, clock)
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("Serve returned %v", err)
	}
	if el := time.Since(start); el > 10*time.Second { // generous for a loaded machine, and far from an hour
		t.Errorf("shutdown took %s with a 100ms timeout", el)
	}
	if err := <-errc; err == nil {
		t.Error("the request in a 1h delay got an answer; its connection should have been closed")
	}
	http.DefaultClient.CloseIdleConnections()
	settledGoroutines(t, before)
}

// inDelay waits until a request is in its delay.
func inDelay(t *testing.T, clock *testClock) {
	t.Helper()
	select {
	case <-clock.began:
	case <-time.After(patience):
		t.Fatal("no request reached its delay")
	}
}

// waitListening waits until the server at url answers its health check.
func waitListening(t *testing.T, url string) {
	t.Helper()
	eventually(t, patience, func() string {
		if _, err := doCtx(context.Background(), "GET", url+"/__admin/health", ""); err != nil {
			return err.Error()
		}
		return ""
	})
}

// TestShutdownEndsDetachedForwards: a proxied request on an idempotent
// route runs on when its client leaves (onClientAbort: complete), but not
// past the server: when shutdown gives up on it, its forward ends. An
// upstream that kept sending held the handler, and the connection to
// the upstream, for as long as it sent, after Serve had returned.
func TestShutdownEndsDetachedForwards(t *testing.T) {
	before := runtime.NumGoroutine()
	released := make(chan struct{})
	sending := make(chan struct{}, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		sending <- struct{}{}
		tick := time.NewTicker(100 * time.Millisecond) // within the route's timeout: never stalled
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				close(released)
				return
			case <-tick.C:
				_, _ = w.Write([]byte("x"))
				w.(http.Flusher).Flush()
			}
		}
	}))
	defer func() { up.CloseClientConnections(); up.Close() }() // on failure too: its handler ends with its connection
	url, stop := serveReal(t, Options{ShutdownTimeout: 100 * time.Millisecond},
		"routes: [{ name: p, method: POST, path: /p, idempotency: { key: header.Idempotency-Key }, respond: { proxy: '"+up.URL+"' } }]")
	waitListening(t, url)
	errc := make(chan error, 1)
	go func() {
		_, err := doCtx(context.Background(), "POST", url+"/p", "", "Idempotency-Key", "k")
		errc <- err
	}()
	<-sending
	if err := stop(); err != nil {
		t.Fatalf("Serve returned %v", err)
	}
	select {
	case <-released:
	case <-time.After(patience):
		t.Fatalf("the upstream was still read from %s after Serve returned", patience)
	}
	if err := <-errc; err == nil {
		t.Error("the request cut by shutdown got an answer")
	}
	up.Close()
	http.DefaultClient.CloseIdleConnections()
	settledGoroutines(t, before)
}

// TestShutdownEndsUpstreamWaits: a request waiting on an upstream that
// does not answer ends when shutdown begins, as one in a delay does: its
// connection closes without an answer, and the journal has no status for
// it (no 502 that nobody read). It used to hold the process for the whole
// shutdown timeout (ten minutes here), and be journaled a 502. Held (for
// a recording, here) the answer's body is waited for too.
func TestShutdownEndsUpstreamWaits(t *testing.T) {
	for _, tc := range []struct {
		name string
		head bool // the upstream sends its head, then nothing
		opts Options
	}{
		{name: "head"},
		{name: "held body", head: true, opts: Options{Recorder: record.New(record.Options{})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			waiting := make(chan struct{}, 1)
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.head {
					w.WriteHeader(http.StatusOK)
					w.(http.Flusher).Flush()
				}
				waiting <- struct{}{}
				<-r.Context().Done() // until the mock gives up on it
			}))
			defer up.Close()
			logs := &syncBuffer{}
			opts := tc.opts
			opts.ShutdownTimeout = 10 * time.Minute
			opts.Logger = slog.New(slog.NewJSONHandler(logs, nil))
			s, url, stop := serveRealServer(t, opts, "routes: [{ path: /p, respond: { proxy: '"+up.URL+"' } }]")
			waitListening(t, url)
			errc := make(chan error, 1)
			go func() { _, err := doCtx(context.Background(), "GET", url+"/p", ""); errc <- err }()
			<-waiting
			stopped := make(chan error, 1)
			go func() { stopped <- stop() }()
			select {
			case err := <-stopped:
				if err != nil {
					t.Fatalf("Serve returned %v", err)
				}
			case <-time.After(patience):
				t.Errorf("shutdown waited more than %s for the upstream", patience)
				up.CloseClientConnections() // the forward fails, and Serve can return
				<-stopped
			}
			if err := <-errc; err == nil {
				t.Error("the request waiting on its upstream got an answer; its connection should have been closed, as a delay's is")
			}
			es, err := s.state.Journal().Entries(context.Background(), 0)
			if err != nil || len(es) != 1 {
				t.Fatalf("journal: %d entries, %v; want the one request", len(es), err)
			}
			if e := es[0]; e.Status != 0 || !e.Proxied || e.Upstream == "" {
				t.Errorf("journaled status %d, proxied %v, upstream %q; want status 0 (no answer), proxied, the upstream named", e.Status, e.Proxied, e.Upstream)
			}
			lines := logLines(logs, "/p")
			if len(lines) != 1 || lines[0]["outcome"] != "upstream wait cancelled by shutdown" {
				t.Errorf("log lines %v, want one whose outcome is \"upstream wait cancelled by shutdown\"", lines)
			}
			up.Close()
			http.DefaultClient.CloseIdleConnections()
			settledGoroutines(t, before)
		})
	}
}

// TestShutdownWaitsForDetachedForwardsWhenAsked: with
// WaitDelaysOnShutdown, a proxied request on an idempotent route with a
// delay (onClientAbort: complete, whose delay and forward run under a
// context of their own) waits for its upstream's answer when shutdown
// begins, and the client gets it, as on a route without the claim. That
// context ended at shutdown whatever the flag said: the forward was cut
// and the client's connection closed without an answer.
func TestShutdownWaitsForDetachedForwardsWhenAsked(t *testing.T) {
	before := runtime.NumGoroutine()
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
			_, _ = w.Write([]byte("done"))
		case <-r.Context().Done():
		}
	}))
	defer up.Close()
	s, url, stop := serveRealServer(t, Options{ShutdownTimeout: patience, WaitDelaysOnShutdown: true},
		"routes: [{ name: p, method: POST, path: /p, idempotency: { key: header.Idempotency-Key }, respond: { proxy: '"+up.URL+"', delay: 1ms } }]")
	waitListening(t, url)
	got := make(chan response, 1)
	errc := make(chan error, 1)
	go func() {
		r, err := doCtx(context.Background(), "POST", url+"/p", "", "Idempotency-Key", "k")
		got <- r
		errc <- err
	}()
	select {
	case <-arrived:
	case <-time.After(patience):
		t.Fatal("the request never reached the upstream")
	}
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	<-s.stopping.Done() // shutdown has begun: the forward must go on
	close(release)
	if r, err := <-got, <-errc; err != nil || r.status != 200 || r.body != "done" {
		t.Errorf("in-flight forward: %d %q, %v; want the upstream's 200 \"done\"", r.status, r.body, err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Serve returned %v, want nil", err)
	}
	up.Close()
	http.DefaultClient.CloseIdleConnections()
	settledGoroutines(t, before)
}
