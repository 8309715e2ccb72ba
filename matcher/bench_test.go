package matcher

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/scenarios"
)

// routesYAML returns n routes GET /items/0 … /items/n-1, plus the demo's
// templated and header-matched routes, as a realistic large file.
func routesYAML(n int) string {
	var b strings.Builder
	b.WriteString("routes:\n")
	b.WriteString("  - { name: created, method: POST, path: /payments, when: { headers: { Idempotency-Key: { present: true } } }, respond: { status: 201 } }\n")
	b.WriteString("  - { name: by id, method: GET, path: \"/payments/{id}\", respond: {} }\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - { method: GET, path: /items/%d, respond: { body: { n: %d } } }\n", i, i)
	}
	return b.String()
}

// BenchmarkMatch measures a match against tables of 10 to 100,000
// routes, on the first and the last of the /items routes, and on the
// first and the last route, both templated. With the index, cost must
// stay flat as routes grow (compare ns/op across sizes).
func BenchmarkMatch(b *testing.B) {
	for _, n := range []int{10, 1000, 10000, 100000} {
		tab := compile(b, routesYAML(n)+"  - { name: last, method: GET, path: \"/orders/{id}/lines/{line}\", respond: {} }\n")
		for _, which := range []struct {
			name   string
			target string
		}{{"first", "/items/0"}, {"last", fmt.Sprintf("/items/%d", n-1)}, {"templated", "/payments/pay_1"}, {"templated-last", "/orders/o_1/lines/2"}} {
			r := httptest.NewRequest("GET", which.target, nil)
			b.Run(fmt.Sprintf("routes=%d/%s", n, which.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					in := Request{HTTP: r}
					if _, ok := tab.Match(&in); !ok {
						b.Fatal("no match")
					}
				}
			})
		}
		post := httptest.NewRequest("POST", "/payments", nil)
		post.Header.Set("Idempotency-Key", "k")
		b.Run(fmt.Sprintf("routes=%d/header", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				in := Request{HTTP: post}
				if _, ok := tab.Match(&in); !ok {
					b.Fatal("no match")
				}
			}
		})
	}
}

// BenchmarkExplain measures the miss path, which ranks every route.
func BenchmarkExplain(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		tab := compile(b, routesYAML(n))
		r := httptest.NewRequest("GET", "/itemz/5", nil)
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tab.Explain(&Request{HTTP: r})
			}
		})
	}
}

// missShapes are the two tables a miss is benchmarked against: n routes on
// one path, each wanting its own value of a header (every route is a
// candidate, and each fails a condition); and n literal paths (no route is
// a candidate, and the report ranks paths by edit distance).
func missShapes(n int) []struct{ name, yaml string } {
	var headers, literal strings.Builder
	headers.WriteString("routes:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&headers, "  - { method: GET, path: /tenants, when: { headers: { X-Tenant: t%d } }, respond: {} }\n", i)
	}
	literal.WriteString(routesYAML(n))
	return []struct{ name, yaml string }{{"headers", headers.String()}, {"literal", literal.String()}}
}

// BenchmarkMiss measures the whole miss path, Match then Explain, beside a
// hit on the same table (the last route for the header shape, the worst
// hit there is), for both miss shapes at 10 and 10,000 routes.
func BenchmarkMiss(b *testing.B) {
	for _, n := range []int{10, 10000} {
		for _, shape := range missShapes(n) {
			tab := compile(b, shape.yaml)
			hit := httptest.NewRequest("GET", fmt.Sprintf("/items/%d", n-1), nil)
			miss := httptest.NewRequest("GET", "/itemz/5", nil)
			if shape.name == "headers" {
				hit = httptest.NewRequest("GET", "/tenants", nil)
				hit.Header.Set("X-Tenant", fmt.Sprintf("t%d", n-1))
				miss = httptest.NewRequest("GET", "/tenants", nil)
				miss.Header.Set("X-Tenant", "nobody")
			}
			b.Run(fmt.Sprintf("%s/routes=%d/hit", shape.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					in := Request{HTTP: hit}
					if _, ok := tab.Match(&in); !ok {
						b.Fatal("no match")
					}
				}
			})
			b.Run(fmt.Sprintf("%s/routes=%d/miss", shape.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					in := Request{HTTP: miss}
					if _, ok := tab.Match(&in); ok {
						b.Fatal("matched")
					}
					if len(tab.Explain(&in)) == 0 {
						b.Fatal("no near misses")
					}
				}
			})
		}
	}
}

// BenchmarkBodyRegex measures a miss whose routes test a large body with a
// regex that never matches: matching and its explanation must read a
// bounded part of the body, however large it is.
func BenchmarkBodyRegex(b *testing.B) {
	tab := compile(b, `
routes:
  - { name: xml, method: POST, path: /upload, when: { body: { regex: "<xml[^>]*>zzz" } }, respond: {} }
  - { name: needle, method: POST, path: /upload, when: { body: { contains: "needle" } }, respond: {} }
`)
	for _, size := range []int{1 << 10, 64 << 10, 9 << 20} {
		body := []byte(strings.Repeat("<xml a=1>", size/9+1)[:size])
		r := httptest.NewRequest("POST", "/upload", nil)
		b.Run(fmt.Sprintf("body=%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				in := NewRequest(r, body)
				if _, ok := tab.Match(in); ok {
					b.Fatal("matched")
				}
				tab.Explain(in)
			}
		})
	}
}

// loadRoutesYAML returns n routes in the shapes of scenarios'
// BenchmarkLoad: literal paths with JSON bodies; every third with a path
// variable and a header condition; every tenth in block style with a
// sequence.
func loadRoutesYAML(n int) string {
	var b strings.Builder
	b.WriteString("routes:\n")
	for i := 0; i < n; i++ {
		switch {
		case i%10 == 9:
			fmt.Fprintf(&b, "  - name: seq %d\n    method: POST\n    path: /orders/%d/pay\n    responses:\n      - { status: 202, body: { state: pending } }\n      - { status: 200, body: { state: paid, n: %d } }\n", i, i, i)
		case i%3 == 2:
			fmt.Fprintf(&b, "  - { name: user %d, method: GET, path: \"/users/{id}/orders/%d\", when: { headers: { X-Tenant: t%d } }, respond: { status: 200, headers: { X-N: \"%d\" }, body: { id: u, n: %d } } }\n", i, i, i, i, i)
		default:
			fmt.Fprintf(&b, "  - { name: item %d, method: GET, path: /items/%d, respond: { body: { n: %d, tags: [a, b] } } }\n", i, i, i)
		}
	}
	return b.String()
}

// BenchmarkLoadCompile measures what startup and a changed reload cost:
// scenarios.Load of one file of n routes, then Compile. live-MB is the
// heap the set and the table keep.
func BenchmarkLoadCompile(b *testing.B) {
	for _, n := range []int{10, 10000, 100000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "routes.yaml")
			if err := os.WriteFile(path, []byte(loadRoutesYAML(n)), 0o644); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var tab *Table
			for b.Loop() {
				set, err := scenarios.Load(path)
				if err != nil {
					b.Fatal(err)
				}
				if tab, err = Compile(set); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(liveMB(), "live-MB")
			runtime.KeepAlive(tab)
		})
	}
}

// BenchmarkCompile measures Compile alone, of a set of n routes loaded
// once. table-MB is the heap the table keeps beyond the set's.
func BenchmarkCompile(b *testing.B) {
	for _, n := range []int{10, 10000, 100000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "routes.yaml")
			if err := os.WriteFile(path, []byte(loadRoutesYAML(n)), 0o644); err != nil {
				b.Fatal(err)
			}
			set, err := scenarios.Load(path)
			if err != nil {
				b.Fatal(err)
			}
			setOnly := liveMB()
			b.ReportAllocs()
			var tab *Table
			for b.Loop() {
				if tab, err = Compile(set); err != nil {
					b.Fatal(err)
				}
				if len(tab.Routes()) != n {
					b.Fatalf("%d routes", len(tab.Routes()))
				}
			}
			b.StopTimer()
			b.ReportMetric(liveMB()-setOnly, "table-MB")
			runtime.KeepAlive(tab)
			runtime.KeepAlive(set)
		})
	}
}

// liveMB collects garbage and returns the heap in use, in MiB.
func liveMB() float64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}
