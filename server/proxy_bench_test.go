//go:build unix

package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"
)

// processCPU returns the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkProxyFullStack sends keep-alive GETs over loopback to a real
// server (Serve, journal on, a log line per request in the product's
// format) whose route proxies to a bare net/http upstream answering the
// demo's bytes, and to that upstream directly. Allocations are counted for
// the whole process (client, upstream and proxy): the difference between
// the two is what forwarding adds.
func BenchmarkProxyFullStack(b *testing.B) {
	up := httptest.NewServer(bareHandler())
	defer up.Close()
	path := filepath.Join(b.TempDir(), "proxy.yaml")
	route := fmt.Sprintf("routes:\n  - { name: proxied, method: GET, path: \"/payments/{id}\", respond: { proxy: %q } }\n", up.URL)
	if err := os.WriteFile(path, []byte(route), 0o644); err != nil {
		b.Fatal(err)
	}
	s, err := New(Options{
		Load:   func() (*scenarios.Set, error) { return scenarios.Load(path) },
		Logger: slog.New(NewLogHandler(NewLogWriter(io.Discard), false, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	req := []byte("GET /payments/pay_demo_0001 HTTP/1.1\r\nHost: bench\r\nUser-Agent: bench\r\n\r\n")
	for _, c := range []struct{ name, addr string }{
		{"direct", up.Listener.Addr().String()},
		{"proxied", ln.Addr().String()},
	} {
		b.Run(c.name, func(b *testing.B) {
			conn, err := net.Dial("tcp", c.addr)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			br := bufio.NewReader(conn)
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := conn.Write(req); err != nil {
					b.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			// The CPU of the whole process (client, upstream and proxy):
			// steadier than the time per request on a shared machine.
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
