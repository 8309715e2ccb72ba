package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"
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

// BenchmarkServeHTTP compares the scenario handler with a bare handler
// writing the same bytes; the difference is what scenariomock adds per
// request on top of net/http.
func BenchmarkServeHTTP(b *testing.B) {
	demo := func(level slog.Level) *Server {
		s, err := New(Options{
			Load:   func() (*scenarios.Set, error) { return scenarios.Load(demoFile) },
			Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: level})),
		})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	get := httptest.NewRequest("GET", "/payments/pay_demo_0001", nil)
	postBody := []byte(`{"amount":9800,"currency":"JPY"}`)
	post := httptest.NewRequest("POST", "/payments", bytes.NewReader(postBody))
	post.Header.Set("Idempotency-Key", "k")
	rd := bytes.NewReader(nil)
	body := []byte(`{"id":"pay_demo_0001","amount":9800,"currency":"JPY","status":"succeeded"}`)
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Cache-Control"] = []string{"no-store"}
		h["Content-Type"] = []string{"application/json"}
		h["Content-Length"] = []string{"74"}
		w.WriteHeader(200)
		_, _ = w.Write(body)
	})
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
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			w := &discardWriter{h: http.Header{}}
			for b.Loop() {
				clear(w.h)
				if c.req == post {
					rd.Reset(postBody) // a fresh body each time
					post.Body = io.NopCloser(rd)
				}
				c.h.ServeHTTP(w, c.req)
			}
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
				for pb.Next() {
					s.logRequest(r, "payment found", 200, 0, start)
				}
			})
		})
	}
}
