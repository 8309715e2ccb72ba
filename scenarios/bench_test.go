package scenarios

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// BenchRoutesYAML returns n routes in the shapes people write: one-line
// flow mappings with a name, a method and a literal path and JSON body;
// every third with a path variable and a header condition; every tenth
// in block style with a sequence. It is shared with matcher's benchmarks
// through testdata (see writeBenchFile).
func benchRoutesYAML(n int) string {
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

// reportLive reports the heap that v keeps alive, as live-MB: what a
// loaded set costs the server for as long as it serves it.
func reportLive(b *testing.B, v any) {
	b.Helper()
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(m.HeapAlloc)/(1<<20), "live-MB")
	runtime.KeepAlive(v)
}

func writeBenchFile(b *testing.B, n int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "routes.yaml")
	if err := os.WriteFile(path, []byte(benchRoutesYAML(n)), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkLoad measures a full load (read, parse, validate) of one file
// of n routes: the cost of startup and of every reload that changed.
func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{10, 10000, 100000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			path := writeBenchFile(b, n)
			b.ReportAllocs()
			var set *Set
			for b.Loop() {
				var err error
				if set, err = Load(path); err != nil {
					b.Fatal(err)
				}
				if len(set.Files[0].Routes) != n {
					b.Fatalf("%d routes", len(set.Files[0].Routes))
				}
			}
			reportLive(b, set)
		})
	}
}

// BenchmarkHash measures what a reload that changed nothing costs: reading
// and hashing the files, parsing nothing.
func BenchmarkHash(b *testing.B) {
	for _, n := range []int{10, 10000, 100000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			path := writeBenchFile(b, n)
			set, err := Load(path)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				h, err := set.Rehash()
				if err != nil || h != set.Hash {
					b.Fatalf("hash %s, %v; want %s", h, err, set.Hash)
				}
			}
		})
	}
}
