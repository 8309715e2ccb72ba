package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/record"
)

// trailerUpstream answers with a body of n bytes and a Grpc-Status
// trailer; withLength declares the length too, as an HTTP/2 upstream
// may (HTTP/1.1 can send trailers only on a chunked body).
func trailerUpstream(n int, withLength bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "Grpc-Status")
		w.Header().Set("Content-Type", "application/grpc")
		if withLength {
			w.Header().Set("Content-Length", fmt.Sprint(n))
		}
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, strings.Repeat("x", n))
		w.Header().Set("Grpc-Status", "7")
	}
}

// TestProxyTrailersHeldOrLengthed: trailers reach the client whatever the
// proxy does with the answer: streamed or held (a recording holds it),
// chunked from an HTTP/1.1 upstream or with a Content-Length from an
// HTTP/2 one, small or large.
func TestProxyTrailersHeldOrLengthed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		h2     bool // the upstream speaks HTTP/2 and declares the length
		size   int
		record bool
	}{
		{"chunked held by a recording", false, 10, true},
		{"h2 with length small", true, 10, false},
		{"h2 with length large", true, 100 << 10, false},
		{"h2 with length held by a recording", true, 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := httptest.NewUnstartedServer(trailerUpstream(tc.size, tc.h2))
			opts := Options{}
			if tc.h2 {
				up.EnableHTTP2 = true
				up.StartTLS()
				opts.ProxyInsecureTLS = true
			} else {
				up.Start()
			}
			t.Cleanup(up.Close)
			opts.ProxyUnmatched = up.URL
			if tc.record {
				opts.Recorder = record.New(record.Options{Upstream: up.URL})
				opts.RecordDir = t.TempDir()
			}
			_, mock, _ := serveYAMLRunning(t, opts, "routes: []\n")
			resp, err := http.Get(mock + "/svc/Method")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 200 || len(b) != tc.size {
				t.Fatalf("through the proxy: %d, %d bytes", resp.StatusCode, len(b))
			}
			if got := resp.Trailer.Get("Grpc-Status"); got != "7" {
				t.Errorf("Grpc-Status trailer %q, want 7 (trailers %v, header %v)", got, resp.Trailer, resp.Header)
			}
		})
	}
}
