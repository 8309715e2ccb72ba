package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"
)

// serveReal runs Serve on a real listener and returns the base URL and a
// function that stops it and returns Serve's result.
func serveReal(t *testing.T, opts Options, yaml string) (string, func() error) {
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
	return "http://" + ln.Addr().String(), func() error { cancel(); return <-done }
}

// settledGoroutines waits for the goroutine count to fall to at most n.
func settledGoroutines(t *testing.T, n int) {
	t.Helper()
	eventually(t, 5*time.Second, func() string {
		if g := runtime.NumGoroutine(); g > n {
			buf := make([]byte, 1<<16)
			return fmt.Sprintf("%d goroutines, %d before:\n%s", g, n, buf[:runtime.Stack(buf, true)])
		}
		return ""
	})
}

// These tests count goroutines, so they do not run in parallel.

func TestShutdownLetsRequestsFinish(t *testing.T) {
	before := runtime.NumGoroutine()
	url, stop := serveReal(t, Options{ShutdownTimeout: 5 * time.Second}, "routes: [{ path: /slow, respond: { body: done, delay: 300ms } }]")
	got := make(chan response, 1)
	go func() { got <- do(t, "GET", url+"/slow", "") }()
	waitListening(t, url)
	time.Sleep(50 * time.Millisecond) // the request is in its delay
	if err := stop(); err != nil {
		t.Fatalf("Serve returned %v, want nil", err)
	}
	if r := <-got; r.status != 200 || r.body != "done" {
		t.Errorf("in-flight request: %d %q, want it to finish", r.status, r.body)
	}
	http.DefaultClient.CloseIdleConnections()
	settledGoroutines(t, before)
}

func TestShutdownCancelsLongDelays(t *testing.T) {
	before := runtime.NumGoroutine()
	url, stop := serveReal(t, Options{ShutdownTimeout: 100 * time.Millisecond}, "routes: [{ path: /hour, respond: { delay: 1h } }]")
	errc := make(chan error, 1)
	go func() { _, err := doCtx(context.Background(), "GET", url+"/hour", ""); errc <- err }()
	waitListening(t, url)
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("Serve returned %v", err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("shutdown took %s with a 100ms timeout", el)
	}
	if err := <-errc; err == nil {
		t.Error("the request in a 1h delay got an answer; its connection should have been closed")
	}
	http.DefaultClient.CloseIdleConnections()
	settledGoroutines(t, before)
}

func waitListening(t *testing.T, url string) {
	t.Helper()
	eventually(t, 5*time.Second, func() string {
		if _, err := doCtx(context.Background(), "GET", url+"/__admin/health", ""); err != nil {
			return err.Error()
		}
		return ""
	})
}
