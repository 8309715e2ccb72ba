package server

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/scenarios"
)

// BenchmarkServeMiss measures the whole server-side cost of a 404 (match,
// near-miss report, problem, warn log line) on the two shapes of
// matcher.BenchmarkMiss: n routes on one path each wanting its own
// X-Tenant, and n literal paths.
func BenchmarkServeMiss(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		var headers, literal strings.Builder
		headers.WriteString("routes:\n")
		literal.WriteString("routes:\n")
		for i := range n {
			fmt.Fprintf(&headers, "  - { method: GET, path: /tenants, when: { headers: { X-Tenant: t%d } }, respond: {} }\n", i)
			fmt.Fprintf(&literal, "  - { method: GET, path: /items/%d, respond: {} }\n", i)
		}
		for _, shape := range []struct{ name, yaml, target string }{
			{"headers", headers.String(), "/tenants"},
			{"literal", literal.String(), "/itemz/5"},
		} {
			s, err := New(Options{
				Load:   func() (*scenarios.Set, error) { return scenarios.LoadBytes("s.yaml", []byte(shape.yaml)) },
				Logger: slog.New(NewLogHandler(io.Discard, false, slog.LevelInfo)),
			})
			if err != nil {
				b.Fatal(err)
			}
			r := httptest.NewRequest("GET", shape.target, nil)
			r.Header.Set("X-Tenant", "nobody")
			b.Run(fmt.Sprintf("%s/routes=%d", shape.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					w := &discardWriter{h: make(map[string][]string)}
					s.ServeHTTP(w, r)
					if w.status != 404 {
						b.Fatalf("status %d", w.status)
					}
				}
			})
		}
	}
}
