package server

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/certs"
)

const faultScenario = `
routes:
  - { path: /reset, respond: { fault: connection-reset } }
  - { path: /empty, respond: { fault: empty-response } }
  - { path: /chunk, respond: { body: '{"partial":"answer"}', fault: malformed-chunk } }
  - { path: /part, respond: { body: '{"partial":"answer"}', fault: { kind: partial-body, bytes: 9 } } }
  - { path: /slow, respond: { body: '{"slow":"answer"}', fault: { kind: slow-body, over: 10ms, chunks: 2 } } }
  - { path: /random, respond: { fault: random-data } }
  - { path: /late, respond: { status: 201, body: '{"id":1}', fault: { kind: partial-body, after: processing } } }
  - { path: /ok, respond: { status: 200, body: fine } }
  - { path: /limit-head, respond: { body: '{"limited":"answer"}', fault: { kind: limit, bytes: 20 } } }
  - { path: /limit-all, respond: { body: '{"limited":"answer"}', fault: { kind: limit, bytes: 100000 } } }
  - { path: /sliced, respond: { body: '{"sliced":"answer"}', fault: { kind: slice, size: 4, gap: 5ms } } }
`

// serveTLS runs Serve with a self-signed certificate, as --tls-self-signed
// does, and returns its URL and a client that trusts the certificate.
func serveTLS(t *testing.T, opts Options, content string) (string, *http.Client, *syncBuffer) {
	t.Helper()
	cert, err := certs.SelfSigned(nil, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	opts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	_, base, logs := serveYAMLRunning(t, opts, content)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return "https://localhost:" + u.Port(), &http.Client{Transport: tr}, logs
}

// TestFaultsHTTP2: on HTTP/2 a fault resets the request's stream (there
// is no connection of its own to break); malformed-chunk and partial-body
// first send their status, headers (the CORS ones too) and the start of
// the body, and slow-body needs no connection of its own. The connection
// goes on serving.
func TestFaultsHTTP2(t *testing.T) {
	t.Parallel()
	url, client, logs := serveTLS(t, Options{CORS: true}, faultScenario)
	get := func(path string) (*http.Response, error) {
		req, _ := http.NewRequest("GET", url+path, nil)
		req.Header.Set("Origin", appOrigin)
		return client.Do(req)
	}
	for _, path := range []string{"/reset", "/empty", "/random"} {
		resp, err := get(path)
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: %s, want the stream reset", path, resp.Status)
			continue
		}
		if !strings.Contains(err.Error(), "INTERNAL_ERROR") {
			t.Errorf("%s: %v, want a stream error (RST_STREAM INTERNAL_ERROR)", path, err)
		}
	}
	resp, err := get("/chunk")
	if err != nil {
		t.Fatalf("/chunk: %v, want the status and headers first", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 || err == nil || string(body) != `{"partial"` {
		t.Errorf("/chunk: %s %d %q %v, want 200, half the body, then a stream error", resp.Proto, resp.StatusCode, body, err)
	}
	if resp.Header.Get("Access-Control-Allow-Origin") != appOrigin {
		t.Errorf("/chunk: headers %v, want the CORS headers", resp.Header)
	}
	resp, err = get("/part")
	if err != nil {
		t.Fatalf("/part: %v, want the status and headers first", err)
	}
	body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 || resp.ContentLength != 20 || err == nil || string(body) != `{"partial` {
		t.Errorf("/part: %s %d length %d %q %v, want 200, length 20, 9 bytes, then a stream error", resp.Proto, resp.StatusCode, resp.ContentLength, body, err)
	}
	if resp.Header.Get("Access-Control-Allow-Origin") != appOrigin {
		t.Errorf("/part: headers %v, want the CORS headers", resp.Header)
	}
	resp, err = get("/slow")
	if err != nil {
		t.Fatalf("/slow: %v", err)
	}
	body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 || err != nil || string(body) != `{"slow":"answer"}` {
		t.Errorf("/slow: %s %d %q %v, want 200 and the whole body", resp.Proto, resp.StatusCode, body, err)
	}
	if resp.Header.Get("Access-Control-Allow-Origin") != appOrigin {
		t.Errorf("/slow: headers %v, want the CORS headers", resp.Header)
	}
	// limit: cut in the head, the stream is reset with nothing sent; past
	// the end, the whole answer, then the reset.
	if resp, err := get("/limit-head"); err == nil || !strings.Contains(err.Error(), "INTERNAL_ERROR") {
		if err == nil {
			resp.Body.Close()
		}
		t.Errorf("/limit-head: %v, want the stream reset before the head", err)
	}
	resp, err = get("/limit-all")
	if err != nil {
		t.Fatalf("/limit-all: %v, want the answer", err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != `{"limited":"answer"}` {
		t.Errorf("/limit-all: %d %q, want the whole answer", resp.StatusCode, body)
	}
	resp, err = get("/sliced")
	if err != nil {
		t.Fatalf("/sliced: %v", err)
	}
	body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 2 || string(body) != `{"sliced":"answer"}` || err != nil {
		t.Errorf("/sliced: %s %q %v, want the whole body", resp.Proto, body, err)
	}
	resp, err = get("/ok")
	if err != nil {
		t.Fatalf("/ok after the faults: %v", err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 {
		t.Errorf("/ok after the faults: %s %s", resp.Proto, resp.Status)
	}
	for _, f := range []string{"connection-reset", "empty-response", "malformed-chunk", "random-data", "partial-body", "slow-body"} {
		if !strings.Contains(logs.String(), `"fault":"`+f+`"`) {
			t.Errorf("no log line for the %s fault:\n%s", f, logs)
		}
	}
}

// TestMalformedChunkCORS: the status line a fault writes itself on
// HTTP/1.1 (malformed-chunk, partial-body, after arrival or processing)
// carries the CORS headers, so that a browser's fetch sees the broken
// body rather than a CORS error.
func TestMalformedChunkCORS(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{CORS: true}, faultScenario)
	for _, tc := range []struct{ path, status string }{
		{"/chunk", "200 OK"},
		{"/part", "200 OK"},
		{"/late", "201 Created"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(hs.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(patience))
			fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nOrigin: %s\r\n\r\n", tc.path, appOrigin)
			raw, _ := io.ReadAll(conn)
			head, _, _ := strings.Cut(string(raw), "\r\n\r\n")
			for _, want := range []string{"HTTP/1.1 " + tc.status + "\r\n", "\r\nAccess-Control-Allow-Origin: " + appOrigin + "\r\n", "\r\nVary: Origin"} {
				if !strings.Contains(head+"\r\n", want) {
					t.Errorf("head %q, want %q in it", head, want)
				}
			}
		})
	}
}

// TestFaultsHTTPS1: over TLS with HTTP/1.1 a fault still breaks the
// connection; connection-reset is a TCP RST, not a TLS close_notify. A
// refused body over HTTP/2 is a 413 problem like over HTTP/1.1.
func TestFaultsHTTPS1(t *testing.T) {
	t.Parallel()
	url, client, _ := serveTLS(t, Options{MaxBody: 16}, faultScenario)
	tr := client.Transport.(*http.Transport)
	conn, err := tls.Dial("tcp", strings.TrimPrefix(url, "https://"), &tls.Config{RootCAs: tr.TLSClientConfig.RootCAs, ServerName: "localhost", NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(patience))
	fmt.Fprintf(conn, "GET /reset HTTP/1.1\r\nHost: x\r\n\r\n")
	_, err = io.ReadAll(conn)
	if err == nil || !strings.Contains(err.Error(), "reset") {
		t.Errorf("raw read after connection-reset over TLS: %v, want connection reset by peer", err)
	}
	resp, err := client.Post(url+"/ok", "text/plain", strings.NewReader(strings.Repeat("x", 100)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body over HTTP/2: %s %s, want 413", resp.Proto, resp.Status)
	}
	resp, err = client.Get(url + "/ok")
	if err != nil {
		t.Fatalf("after the 413: %v", err)
	}
	resp.Body.Close()
}

// TestTLSAdminOwnListener: with TLS, the admin listener of ServeSplit
// speaks HTTPS with the same certificate (a plain one would carry the
// admin token in the clear), and the ready line says so.
func TestTLSAdminOwnListener(t *testing.T) {
	t.Parallel()
	cert, err := certs.SelfSigned(nil, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ss := serveSplit(t, Options{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}}, splitYAML)
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	get := func(url string) (*http.Response, string, error) {
		url = strings.Replace(url, "http://127.0.0.1", "https://localhost", 1)
		var resp *http.Response
		var body []byte
		var err error
		eventually(t, patience, func() string {
			if resp, err = client.Get(url); err != nil {
				return err.Error()
			}
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			return ""
		})
		return resp, string(body), err
	}
	if resp, body, err := get(ss.admin + "/__admin/health"); err != nil || resp.StatusCode != 200 || resp.ProtoMajor != 2 || !strings.Contains(body, `"ok"`) {
		t.Errorf("admin health over HTTPS: %v %v %q", err, resp, body)
	}
	if resp, body, err := get(ss.url + "/n"); err != nil || resp.StatusCode != 200 || body != "one" {
		t.Errorf("scenario over HTTPS: %v %v %q", err, resp, body)
	}
	resp, err := http.Get(ss.admin + "/__admin/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("plain HTTP to the admin listener: %s, want net/http's 400 for HTTP to an HTTPS server", resp.Status)
	}
	fp := certs.Fingerprint(cert.Certificate[0])
	if !strings.Contains(ss.logs.String(), `"scheme":"https","sha256":"`+fp+`"`) {
		t.Errorf("ready line lacks scheme and fingerprint:\n%s", ss.logs)
	}
}
