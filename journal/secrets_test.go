package journal

import (
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func TestRedactHeaders(t *testing.T) {
	h := http.Header{
		"Authorization": {"Bearer sk_test_4eC39HqLyjWDarjtT1zdp7dc"},
		"Cookie":        {"session=abc; theme=dark"},
		"X-Api-Key":     {"k1", "k2"},
		"Content-Type":  {"application/json"},
	}
	before := h.Clone()
	got := RedactHeaders(h)
	if !reflect.DeepEqual(h, before) {
		t.Errorf("the request's header changed: %v", h)
	}
	for name, vs := range got {
		for _, v := range vs {
			if strings.Contains(v, "sk_test") || strings.Contains(v, "session=") || v == "k1" || v == "k2" {
				t.Errorf("%s: %q kept", name, v)
			}
		}
	}
	if a := got["Authorization"][0]; !strings.HasPrefix(a, "Bearer redacted:") || len(a) != len("Bearer redacted:")+8 {
		t.Errorf("Authorization = %q, want the scheme and 8 hex digits", a)
	}
	if c := got["Cookie"][0]; !strings.HasPrefix(c, "redacted:") {
		t.Errorf("Cookie = %q", c)
	}
	if k := got["X-Api-Key"]; len(k) != 2 || k[0] == k[1] {
		t.Errorf("X-Api-Key = %q: two keys, told apart", k)
	}
	if got["Content-Type"][0] != "application/json" {
		t.Errorf("Content-Type = %q", got["Content-Type"])
	}
	// Other credentials, other digests; the same, the same.
	if Redact("Bearer sk_test_a") == Redact("Bearer sk_test_b") || Redact("Bearer sk_test_a") != Redact("Bearer sk_test_a") {
		t.Error("digests do not tell keys apart")
	}
	// No secret header: the very same map.
	plain := http.Header{"Accept": {"*/*"}}
	if p := RedactHeaders(plain); reflect.ValueOf(p).Pointer() != reflect.ValueOf(plain).Pointer() {
		t.Error("a header without secrets was copied")
	}
	if n := testing.AllocsPerRun(100, func() { RedactHeaders(plain) }); n != 0 {
		t.Errorf("RedactHeaders of a header without secrets: %v allocations, want 0", n)
	}
}

// TestMatchRedactedHeader: a filter names a redacted credential by its
// value as sent, or as the journal shows it.
// TestSecretHeadersListed: isSecret and SecretHeaders name the same
// headers.
func TestSecretHeadersListed(t *testing.T) {
	t.Parallel()
	for _, name := range SecretHeaders {
		if !isSecret(name) || http.CanonicalHeaderKey(name) != name {
			t.Errorf("%s: isSecret false, or not canonical", name)
		}
	}
	for _, name := range []string{"Accept", "Content-Type", "Idempotency-Key", "authorization"} {
		if isSecret(name) {
			t.Errorf("%s: isSecret true", name)
		}
	}
}

func TestMatchRedactedHeader(t *testing.T) {
	t.Parallel()
	e := entry()
	e.Headers = RedactHeaders(http.Header{"Authorization": {"Bearer sk_test_1"}})
	for _, tc := range []struct {
		value string
		want  bool
	}{
		{"Bearer sk_test_1", true},
		{e.Headers["Authorization"][0], true},
		{"Bearer sk_test_2", false},
		{"sk_test_1", false},
	} {
		f, err := ParseFilter(url.Values{"header.Authorization": {tc.value}})
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Match(e); got != tc.want {
			t.Errorf("header.Authorization=%s: %v, want %v", tc.value, got, tc.want)
		}
	}
}

// BenchmarkRedactHeaders: the cost on every journaled request; none=a
// request without credentials (no copy), bearer=one with a key.
func BenchmarkRedactHeaders(b *testing.B) {
	for _, tc := range []struct {
		name string
		h    http.Header
	}{
		{"none", http.Header{"Accept": {"*/*"}, "User-Agent": {"curl/8"}, "Content-Type": {"application/json"}, "Idempotency-Key": {"k1"}}},
		{"bearer", http.Header{"Accept": {"*/*"}, "User-Agent": {"curl/8"}, "Content-Type": {"application/json"}, "Authorization": {"Bearer sk_test_4eC39HqLyjWDarjtT1zdp7dc"}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				RedactHeaders(tc.h)
			}
		})
	}
}

// Redact remembers the last value it redacted; goroutines redacting other
// values at once each get their own value's redaction.
func TestRedactConcurrent(t *testing.T) {
	values := []string{"Bearer sk_test_a", "Bearer sk_test_b", "Basic c2tfdGVzdF9jOg==", "plain-token"}
	want := make([]string, len(values))
	for i, v := range values {
		want[i] = Redact(v)
	}
	if want[0] == want[1] {
		t.Fatalf("two keys redact alike: %q", want[0])
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for n := range 2000 {
				i := (g + n) % len(values)
				if got := Redact(values[i]); got != want[i] {
					t.Errorf("Redact(%q) = %q; want %q", values[i], got, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
}
