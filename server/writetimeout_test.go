package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestWriteTimeoutDropsStalledReader: a client that asks for a large
// templated answer and never reads it must not keep the handler, and the
// answer it holds, forever (issue 19 item 5). The connection's receive
// buffer is made small so that the answer cannot all sit in the kernel;
// once WriteTimeout passes the handler returns (finish logs the request)
// and what the client then reads is cut short.
func TestWriteTimeoutDropsStalledReader(t *testing.T) {
	t.Parallel()
	const size = 12 << 20 // more than the kernel buffers of a loopback connection take
	opts := Options{WriteTimeout: 300 * time.Millisecond, MaxBody: 2 * size, MaxTemplateOutput: 2 * size}
	_, base, logs := serveYAMLRunning(t, opts, `
routes:
  - { method: POST, path: /echo, respond: { template: true, body: "{{ .Request.Body }}" } }
`)
	conn := dialSmallWindow(t, base)
	defer conn.Close()
	body := strings.Repeat("x", size)
	if _, err := fmt.Fprintf(conn, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", size, body); err != nil {
		t.Fatal(err)
	}
	eventually(t, patience, func() string {
		if !strings.Contains(logs.String(), `"path":"/echo"`) {
			return "the handler of a client that never reads has not returned"
		}
		return ""
	})
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return // dropped before the status line reached the client: cut too
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	if n >= size {
		t.Errorf("the client read all %d bytes after WriteTimeout; want the answer cut", n)
	}
}

// TestWriteTimeoutCountsAfterDelay: a delay longer than WriteTimeout does
// not cut the answer, which a client reading at once gets whole.
func TestWriteTimeoutCountsAfterDelay(t *testing.T) {
	t.Parallel()
	_, base, _ := serveYAMLRunning(t, Options{WriteTimeout: time.Second}, `
routes:
  - { method: GET, path: /slow, respond: { status: 200, body: done, delay: 3s } }
`)
	r, err := doCtx(context.Background(), "GET", base+"/slow", "")
	if err != nil || r.status != 200 || r.body != "done" {
		t.Fatalf("a 3s delay with a 1s write timeout: %v %d %q", err, r.status, r.body)
	}
}

// dialSmallWindow connects to base with a receive buffer of a few KiB.
func dialSmallWindow(t *testing.T, base string) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	tc := c.(*net.TCPConn)
	_ = tc.SetReadBuffer(4 << 10)
	return tc
}

// TestWriteTimeoutSparesStreams: the request stream is never done, so
// WriteTimeout counts per write, not from its start: a stream read for
// many times WriteTimeout (keep-alives counted, not time slept) still
// delivers, on HTTP/1 and on HTTP/2, whose stream deadline fires while
// nothing is written.
func TestWriteTimeoutSparesStreams(t *testing.T) {
	t.Parallel()
	opts := Options{WriteTimeout: time.Second, streamKeepAlive: 300 * time.Millisecond}
	_, plain, _ := serveYAMLRunning(t, opts, journalScenario)
	tlsURL, h2, _ := serveTLS(t, opts, journalScenario)
	for _, tc := range []struct {
		name   string
		base   string
		client *http.Client
	}{
		{"http1", plain, http.DefaultClient},
		{"http2", tlsURL, h2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", tc.base+"/__admin/requests/stream", nil)
			resp, err := tc.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if want := tc.name == "http2"; (resp.ProtoMajor == 2) != want {
				t.Fatalf("stream over %s", resp.Proto)
			}
			br := bufio.NewReader(resp.Body)
			line := func() string {
				l, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("the stream ended: %v", err)
				}
				return strings.TrimSuffix(l, "\n")
			}
			// 10 keep-alives 300ms apart: three times WriteTimeout at least.
			for n := 0; n < 10; {
				if line() == ": keep-alive" {
					n++
				}
			}
			r, err := doWith(tc.client, tc.base+"/teapot")
			if err != nil || r != http.StatusTeapot {
				t.Fatalf("GET /teapot: %v %d", err, r)
			}
			for {
				if l := line(); strings.HasPrefix(l, "data: ") && strings.Contains(l, `"/teapot"`) {
					return
				}
			}
		})
	}
}

// doWith sends a GET with client and returns the status.
func doWith(client *http.Client, url string) (int, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}
