package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// recordAndReplay records calls through a recorder in front of up, writes
// the recording, and returns a mock serving it and its text.
func recordAndReplay(t *testing.T, up string, opts record.Options, calls func(mock string)) (string, string) {
	t.Helper()
	dir := t.TempDir()
	opts.Upstream = up
	rec := record.New(opts)
	_, mock, _ := serveYAMLRunning(t, Options{ProxyUnmatched: up, Recorder: rec, RecordDir: dir}, "routes: []\n")
	calls(mock)
	if r := do(t, http.MethodPost, mock+"/__admin/recording", ""); r.status != 200 {
		t.Fatalf("POST /__admin/recording: %d %s", r.status, r.body)
	}
	text, err := os.ReadFile(filepath.Join(dir, "recorded.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, replay, _ := serveYAMLRunning(t, Options{Load: nil}, string(text))
	return replay, string(text)
}

// TestRecordHeadKeepsItsLength: a HEAD recorded alone is served back with
// the Content-Length the upstream declared, as the upstream answered it.
func TestRecordHeadKeepsItsLength(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", "5000")
		w.Header().Set("ETag", `"v1"`)
		if r.Method != http.MethodHead {
			_, _ = w.Write(make([]byte, 5000))
		}
	}))
	t.Cleanup(up.Close)
	replay, text := recordAndReplay(t, up.URL, record.Options{}, func(mock string) {
		if r := do(t, http.MethodHead, mock+"/file.bin", ""); r.status != 200 || r.header.Get("Content-Length") != "5000" {
			t.Fatalf("HEAD through the recorder: %d, Content-Length %q", r.status, r.header.Get("Content-Length"))
		}
	})
	r := do(t, http.MethodHead, replay+"/file.bin", "")
	if r.status != 200 || r.header.Get("Content-Length") != "5000" || r.header.Get("ETag") != `"v1"` {
		t.Errorf("HEAD served back: %d, Content-Length %q, ETag %q; want 200, 5000, \"v1\"\n%s", r.status, r.header.Get("Content-Length"), r.header.Get("ETag"), text)
	}
}

// TestRecordIfRange: a 206 answered to Range with If-Range (the
// validator matched) is served back to that If-Range only: a client whose
// copy is stale (another If-Range) must get the whole answer, a 200, as
// the upstream answered it, never a part to splice into the wrong copy.
func TestRecordIfRange(t *testing.T) {
	t.Parallel()
	const content = "0123456789abcdefghij"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("ETag", `"v2"`)
		http.ServeContent(w, r, "file.txt", time.Time{}, strings.NewReader(content))
	}))
	t.Cleanup(up.Close)
	get := func(base, rng, ifRange string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, base+"/file.txt", nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		if ifRange != "" {
			req.Header.Set("If-Range", ifRange)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	calls := []struct {
		rng, ifRange string
		status       int
		body         string
	}{
		{"bytes=0-4", `"v2"`, http.StatusPartialContent, "01234"},
		{"bytes=0-4", `"v1"`, http.StatusOK, content},
		{"", "", http.StatusOK, content},
	}
	replay, text := recordAndReplay(t, up.URL, record.Options{}, func(mock string) {
		for _, c := range calls {
			if st, b := get(mock, c.rng, c.ifRange); st != c.status || b != c.body {
				t.Fatalf("GET Range %q If-Range %s through the recorder: %d %q, want %d %q", c.rng, c.ifRange, st, b, c.status, c.body)
			}
		}
	})
	for range 2 {
		for _, c := range []int{1, 0, 2} {
			c := calls[c]
			if st, b := get(replay, c.rng, c.ifRange); st != c.status || b != c.body {
				t.Errorf("GET Range %q If-Range %s served back: %d %q, want %d %q\n%s", c.rng, c.ifRange, st, b, c.status, c.body, text)
			}
		}
	}
}

// TestProxyUpgrade: a protocol upgrade (a WebSocket handshake) sent to a
// proxied route is answered at once with a 501 problem that says the proxy
// does not tunnel it, and the upstream is not called; an upstream that
// switches protocols unasked is a 502. Both hung before: Upgrade, hop-by-hop,
// was dropped, the upstream switched anyway, and the 101 was held until the
// route's timeout waiting for a body. An h2c offer (curl --http2) is no
// upgrade to refuse: it is forwarded, as the upstream may ignore it.
func TestProxyUpgrade(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/ws" {
			_, _ = io.WriteString(w, "plain")
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		_ = brw.Flush()
		_, _ = io.Copy(io.Discard, conn)
	}))
	t.Cleanup(up.Close)
	_, mock, _ := serveYAMLRunning(t, Options{ProxyUnmatched: up.URL}, "routes: []\n")
	send := func(request string) (*http.Response, string) {
		t.Helper()
		conn, err := net.Dial("tcp", strings.TrimPrefix(mock, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// Well short of the route's 30s timeout, which the hang lasted.
		_ = conn.SetDeadline(time.Now().Add(patience / 2))
		_, _ = io.WriteString(conn, request)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := send("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nContent-Length: 0\r\n\r\n")
	if resp.StatusCode != http.StatusNotImplemented || !strings.Contains(body, "websocket") || !strings.Contains(body, "does not tunnel") {
		t.Errorf("WebSocket handshake: %d %s, want a 501 problem naming websocket", resp.StatusCode, body)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the upstream was called %d times for the handshake, want 0", n)
	}
	resp, body = send("GET /ws HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "101") {
		t.Errorf("an upstream switching unasked: %d %s, want a 502 problem naming the 101", resp.StatusCode, body)
	}
	resp, body = send("GET /plain HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\nContent-Length: 0\r\n\r\n")
	if resp.StatusCode != http.StatusOK || body != "plain" {
		t.Errorf("an h2c offer: %d %q, want the upstream's 200 plain", resp.StatusCode, body)
	}
}

// TestRecordSequencePerPath: a recording with --record-sequence-per
// path.id writes sequence: { per: path.id } only on the routes whose path
// has that variable, so that it loads and serves back: on a literal path
// (/status) the loader refuses it ("the path has no variable"), and the
// whole recording with it. The templated route's list is one id's series,
// as for a header key, which every id walks from its start.
func TestRecordSequencePerPath(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s call %d", r.URL.Path, calls.Add(1))
	}))
	t.Cleanup(up.Close)
	got := map[string][]string{}
	replay, text := recordAndReplay(t, up.URL, record.Options{SequencePer: "path.id"}, func(mock string) {
		for _, p := range []string{"/items/7", "/items/8", "/status", "/items/7", "/status"} {
			r := do(t, http.MethodGet, mock+p, "")
			got[p] = append(got[p], r.body)
		}
	})
	for _, c := range []struct{ path, want string }{
		{"/items/7", got["/items/7"][0]},
		{"/status", got["/status"][0]},
		{"/items/7", got["/items/7"][1]},
		{"/status", got["/status"][1]},
		{"/items/8", got["/items/7"][0]}, // id 8 walks id 7's series from its start
	} {
		if r := do(t, http.MethodGet, replay+c.path, ""); r.status != 200 || r.body != c.want {
			t.Errorf("GET %s served back: %d %q, want %q\n%s", c.path, r.status, r.body, c.want, text)
		}
	}
}

// TestProxyPassesRedirectsAndDropsHopByHop: an upstream's 3xx reaches the
// client as sent, Location untouched, and is not followed by the proxy;
// the fields the upstream's Connection names are not passed on.
func TestProxyPassesRedirectsAndDropsHopByHop(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			elsewhere.Add(1)
			return
		}
		w.Header().Set("Connection", "X-Hop")
		w.Header().Set("X-Hop", "secret")
		w.Header().Set("Location", "/elsewhere")
		w.WriteHeader(http.StatusFound)
	}))
	t.Cleanup(up.Close)
	_, mock, _ := serveYAMLRunning(t, Options{ProxyUnmatched: up.URL}, "routes: []\n")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(mock + "/go")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/elsewhere" || resp.Header.Get("X-Hop") != "" {
		t.Errorf("through the proxy: %d, Location %q, X-Hop %q; want 302, /elsewhere, none", resp.StatusCode, resp.Header.Get("Location"), resp.Header.Get("X-Hop"))
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the proxy followed the redirect (%d calls)", n)
	}
}
