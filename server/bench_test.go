package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
)

// discardWriter is a ResponseWriter that keeps nothing, so the benchmark
// measures the handler and not a recorder.
type discardWriter struct {
	h      http.Header
	status int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(s int)           { d.status = s }

// bareHandler writes what the demo answers to GET /payments/pay_demo_0001,
// as the load harness's baseline does, for comparison.
func bareHandler() http.Handler {
	body := []byte(`{"id":"pay_demo_0001","amount":9800,"currency":"JPY","status":"succeeded"}`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Cache-Control"] = []string{"no-store"}
		h["Content-Type"] = []string{"application/json"}
		h["Content-Length"] = []string{"74"}
		w.WriteHeader(200)
		_, _ = w.Write(body)
	})
}

// BenchmarkServeHTTP compares the scenario handler with a bare handler
// writing the same bytes; the difference is what scenariomock adds per
// request on top of net/http.
func BenchmarkServeHTTP(b *testing.B) {
	demoWith := func(level slog.Level, cors bool) *Server {
		s, err := New(Options{
			Load:   func() (*scenarios.Set, error) { return scenarios.Load(demoFile) },
			Logger: slog.New(NewLogHandler(io.Discard, false, level)), // as the command line sets it up
			CORS:   cors,
		})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	demo := func(level slog.Level) *Server { return demoWith(level, false) }
	// Under Serve each connection carries its exchange (connExchange).
	conn := connExchange(context.Background(), nil)
	get := httptest.NewRequestWithContext(conn, "GET", "/payments/pay_demo_0001", nil)
	// A browser's GET: with --cors it gets its CORS headers.
	getOrigin := httptest.NewRequestWithContext(conn, "GET", "/payments/pay_demo_0001", nil)
	getOrigin.Header.Set("Origin", "http://localhost:5173")
	postBody := []byte(`{"amount":9800,"currency":"JPY"}`)
	post := httptest.NewRequestWithContext(conn, "POST", "/payments", bytes.NewReader(postBody))
	post.Header.Set("Idempotency-Key", "k")
	rd := bytes.NewReader(nil)
	bare := bareHandler()
	cases := []struct {
		name string
		h    http.Handler
		req  *http.Request
		want int
	}{
		{"bare", bare, get, 200},
		{"get/log=info", demo(slog.LevelInfo), get, 200},
		{"get/log=warn", demo(slog.LevelWarn), get, 200},
		{"post-key/log=info", demo(slog.LevelInfo), post, 201},
		{"post-key/log=warn", demo(slog.LevelWarn), post, 201},
		{"get/log=warn/cors=on", demoWith(slog.LevelWarn, true), get, 200},
		{"get/log=warn/cors=on/origin", demoWith(slog.LevelWarn, true), getOrigin, 200},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			w := &discardWriter{h: http.Header{}}
			cpu := startCPU()
			for b.Loop() {
				clear(w.h)
				if c.req == post {
					rd.Reset(postBody) // a fresh body each time
					post.Body = io.NopCloser(rd)
				}
				c.h.ServeHTTP(w, c.req)
			}
			cpu.report(b, b.N)
			if w.status != c.want {
				b.Fatalf("status %d, want %d", w.status, c.want)
			}
		})
	}
}

// BenchmarkRequestLog measures the request log line alone, from all
// cores at once as a loaded server writes it, through the LogWriter.
func BenchmarkRequestLog(b *testing.B) {
	for _, format := range []string{"slog-text", "slog-json", "text", "json"} {
		b.Run(format, func(b *testing.B) {
			lw := NewLogWriter(io.Discard)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { lw.Run(ctx, 100*time.Millisecond); close(done) }()
			defer func() { cancel(); <-done }()
			var h slog.Handler
			switch format {
			case "slog-text":
				h = slog.NewTextHandler(lw, nil)
			case "slog-json":
				h = slog.NewJSONHandler(lw, nil)
			default:
				h = NewLogHandler(lw, format == "json", nil)
			}
			s := &Server{log: slog.New(h), opts: Options{Clock: realClock{}}}
			r := httptest.NewRequest("GET", "/payments/pay_demo_0001", nil)
			start := time.Now()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				x := &exchange{s: s, r: r, start: start, out: result{route: "payment found", status: 200}}
				for pb.Next() {
					s.logLine(x)
				}
			})
		})
	}
}

// BenchmarkFullStack sends keep-alive requests over loopback to a real
// net/http server running the scenario handler, and to the same server
// running a bare handler that writes the same bytes. Allocations are
// counted for the whole process, the identical client included, so the
// difference between the two is what scenariomock adds.
func BenchmarkFullStack(b *testing.B) {
	s, err := New(Options{Load: func() (*scenarios.Set, error) { return scenarios.Load(demoFile) }})
	if err != nil {
		b.Fatal(err)
	}
	bare := bareHandler()
	req := []byte("GET /payments/pay_demo_0001 HTTP/1.1\r\nHost: bench\r\n\r\n")
	for _, c := range []struct {
		name string
		h    http.Handler
		// served: the http.Server Serve runs (its timeouts, whose
		// deadlines net/http sets on every request, and the connection's
		// exchange), not one with ReadHeaderTimeout alone.
		served bool
	}{{"bare", bare, false}, {"scenariomock", s, false}, {"scenariomock/served", s, true}} {
		b.Run(c.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			hs := &http.Server{Handler: c.h, ReadHeaderTimeout: 10 * time.Second}
			if c.served {
				hs = s.httpServer(s, context.Background())
			}
			go hs.Serve(ln)
			defer hs.Close()
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			br := bufio.NewReader(conn)
			b.ReportAllocs()
			cpu := startCPU() // the client's included, the same for all
			for b.Loop() {
				if _, err := conn.Write(req); err != nil {
					b.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			cpu.report(b, b.N)
		})
	}
}

// BenchmarkAdvanceKey measures the per-key sequence store at its steady
// state: full, every call a new key (an Idempotency-Key per request).
func BenchmarkAdvanceKey(b *testing.B) {
	s := state.NewMemory(state.Options{MaxSequenceKeys: 100_000}).Sequences()
	ctx := context.Background()
	keys := make([]string, 1<<20)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench-%d", i)
	}
	for i := 0; i < 300_000; i++ { // fill past the limit first
		_, _ = s.HitKey(ctx, "route", keys[i%len(keys)])
	}
	b.ReportAllocs()
	i := 300_000
	for b.Loop() {
		_, _ = s.HitKey(ctx, "route", keys[i%len(keys)])
		i++
	}
}

// BenchmarkIdempotent measures a POST to a route with an idempotency
// block: a fresh key each time (claim, run, store; the store full at its
// bound, so each claim also evicts) and one key replayed.
func BenchmarkIdempotent(b *testing.B) {
	dir := b.TempDir()
	path := dir + "/idem.yaml"
	if err := os.WriteFile(path, []byte(`routes:
  - name: create payment
    method: POST
    path: /payments
    idempotency: { key: header.Idempotency-Key, required: true }
    respond:
      status: 201
      headers: { Location: /payments/pay_demo_0001 }
      body: { id: pay_demo_0001, amount: 9800, currency: JPY, status: succeeded }
`), 0o644); err != nil {
		b.Fatal(err)
	}
	s, err := New(Options{
		Load:   func() (*scenarios.Set, error) { return scenarios.Load(path) },
		Logger: slog.New(NewLogHandler(io.Discard, false, slog.LevelInfo)),
	})
	if err != nil {
		b.Fatal(err)
	}
	postBody := []byte(`{"amount":9800,"currency":"JPY"}`)
	post := httptest.NewRequest("POST", "/payments", nil)
	post.Header.Set("Content-Type", "application/json")
	rd := bytes.NewReader(nil)
	// Keys are made per request, as a server receives them: a slice of a
	// million prepared keys would be a heap for the collector to scan that
	// a real server does not have.
	key := func(i int) string { return "bench-" + strconv.Itoa(i) }
	w := &discardWriter{h: http.Header{}}
	send := func(key string) {
		clear(w.h)
		rd.Reset(postBody)
		post.Body = io.NopCloser(rd)
		post.Header["Idempotency-Key"] = []string{key}
		s.ServeHTTP(w, post)
	}
	for i := 0; i < 150_000; i++ { // fill the store past its bound first
		send(key(i))
	}
	b.Run("fresh-key", func(b *testing.B) {
		b.ReportAllocs()
		i := 150_000
		cpu := startCPU()
		for b.Loop() {
			send(key(i))
			i++
		}
		cpu.report(b, b.N)
		if w.status != 201 {
			b.Fatalf("status %d", w.status)
		}
	})
	b.Run("replay", func(b *testing.B) {
		send("replayed") // the first use stores the answer
		b.ReportAllocs()
		cpu := startCPU()
		for b.Loop() {
			send("replayed")
		}
		cpu.report(b, b.N)
		if w.status != 201 || w.h.Get("Idempotent-Replayed") != "true" {
			b.Fatalf("status %d %v", w.status, w.h)
		}
	})
}

// BenchmarkJournal measures what journaling adds per request: the same
// requests with the journal off, on as under Serve (the connection's
// record, see connExchange) and on with a record per request (the handler
// served by another http.Server); a GET without a body and a POST with a
// 1 KiB body, each with the five headers a usual client sends.
func BenchmarkJournal(b *testing.B) {
	const yaml = `
routes:
  - name: get payment
    method: GET
    path: /payments/{id}
    respond: { status: 200, body: { id: pay_1 } }
  - name: create payment
    method: POST
    path: /payments
    respond: { status: 201, body: { id: pay_1 } }
`
	body := bytes.Repeat([]byte("a"), 1<<10)
	for _, tc := range []struct {
		name   string
		method string
		path   string
		body   []byte
		want   int
	}{
		{"get", "GET", "/payments/pay_1", nil, 200},
		{"post-1KiB", "POST", "/payments", body, 201},
	} {
		for _, mode := range []string{"off", "on", "on-per-request"} {
			size := 0
			if mode == "off" {
				size = -1
			}
			b.Run(tc.name+"/journal="+mode, func(b *testing.B) {
				s, err := New(Options{
					Load:        func() (*scenarios.Set, error) { return scenarios.LoadBytes("s.yaml", []byte(yaml)) },
					Logger:      slog.New(NewLogHandler(io.Discard, false, slog.LevelInfo)),
					JournalSize: size,
				})
				if err != nil {
					b.Fatal(err)
				}
				req := httptest.NewRequest(tc.method, tc.path, nil)
				for name, v := range map[string]string{"User-Agent": "bench/1.0", "Accept": "application/json", "Content-Type": "application/json", "Authorization": "Bearer sk_test_1", "Accept-Encoding": "gzip"} {
					req.Header.Set(name, v)
				}
				if mode == "on" {
					req = req.WithContext(connExchange(req.Context(), nil))
				}
				rd := bytes.NewReader(nil)
				w := &discardWriter{h: http.Header{}}
				b.ReportAllocs()
				cpu := startCPU()
				for b.Loop() {
					clear(w.h)
					if tc.body != nil {
						rd.Reset(tc.body)
						req.Body = io.NopCloser(rd)
						req.ContentLength = int64(len(tc.body))
					}
					s.ServeHTTP(w, req)
				}
				cpu.report(b, b.N)
				if w.status != tc.want {
					b.Fatalf("status %d, want %d", w.status, tc.want)
				}
			})
		}
	}
}
