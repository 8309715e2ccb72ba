package matcher

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
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

// BenchmarkMatch measures a match against tables of 10, 1,000 and 10,000
// routes, on the first and the last of the /items routes. With the index,
// cost must stay flat as routes grow (compare ns/op across sizes).
func BenchmarkMatch(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		tab := compile(b, routesYAML(n))
		for _, which := range []struct {
			name   string
			target string
		}{{"first", "/items/0"}, {"last", fmt.Sprintf("/items/%d", n-1)}, {"templated", "/payments/pay_1"}} {
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
