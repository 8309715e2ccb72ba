package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"
)

// These tests speak raw bytes to Serve on a real socket, as a hostile or
// broken client would, and check that every request gets a clear answer or
// a closed connection: never a hang, a panic, a desynchronised connection
// or memory that grows with what the client claims.

// hostileYAML is what the hostile tests serve: a payment read, a payment
// create, and an echo whose JSON body repeats a path variable (so that a
// request's bytes reach a rendered body).
const hostileYAML = `
routes:
  - name: payment found
    method: GET
    path: /payments/{id}
    respond: { status: 200, body: { id: pay_1, status: succeeded } }
  - name: payment created
    method: POST
    path: /payments
    respond: { status: 201, body: { id: pay_1, status: succeeded } }
  - name: echo
    method: GET
    path: /echo/{id}
    respond: { template: true, body: { id: "{{ .Request.Vars.id }}" } }
`

// rawDeadline bounds every raw connection: a server that neither answers
// nor closes within it has hung. It is generous: on a loaded machine under
// -race an answer may take seconds.
const rawDeadline = 20 * time.Second

// closedConn in a list of expected answers means the server closes the
// connection there without answering.
const closedConn = 0

// startRaw serves hostileYAML with Serve on a real listener and returns its
// address. The server stops when the test ends, after the test's
// connections are closed (cleanups run last-registered first).
func startRaw(t *testing.T, opts Options) string {
	t.Helper()
	if opts.ShutdownTimeout == 0 {
		opts.ShutdownTimeout = 200 * time.Millisecond
	}
	url, stop := serveReal(t, opts, hostileYAML)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Serve returned %v", err)
		}
	})
	return strings.TrimPrefix(url, "http://")
}

// dialRaw opens a TCP connection to addr that cannot outlive within.
func dialRaw(t *testing.T, addr string, within time.Duration) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(within)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// closedErr reports whether err means the peer closed or reset the
// connection, as opposed to a timeout or a garbled answer.
func closedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// answer is one thing the server did on a raw connection: a response, or
// (status closedConn) closing the connection without one.
type answer struct {
	status int
	header http.Header
	body   []byte
	close  bool // the response said Connection: close, or the server closed while sending it
}

func (a answer) String() string {
	if a.status == closedConn {
		return "closed"
	}
	return fmt.Sprintf("%d %s %.120q", a.status, a.header.Get("Content-Type"), a.body)
}

// readAnswer reads one response from br. A timeout is fatal: the server
// neither answered nor closed.
func readAnswer(t *testing.T, br *bufio.Reader) answer {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Fatalf("no answer within %s and the connection still open: the server hung", rawDeadline)
	case closedErr(err):
		return answer{status: closedConn}
	default:
		t.Fatalf("garbled answer: %v", err)
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header, close: resp.Close}
	a.body, err = io.ReadAll(resp.Body)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Fatalf("%d: the body did not end within %s: the server hung", resp.StatusCode, rawDeadline)
	case closedErr(err):
		a.close = true
	default:
		t.Fatalf("%d: garbled body: %v", resp.StatusCode, err)
	}
	return a
}

// expectClosed checks that the server has closed the connection (it said
// it would): the next read ends, it does not time out.
func expectClosed(t *testing.T, br *bufio.Reader) {
	t.Helper()
	b, err := br.ReadByte()
	switch {
	case err == nil:
		rest, _ := br.Peek(br.Buffered())
		t.Errorf("the server said Connection: close but then sent %q", append([]byte{b}, rest...))
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Errorf("the server said Connection: close but kept the connection open for %s", rawDeadline)
	case !closedErr(err):
		t.Errorf("reading after Connection: close: %v", err)
	}
}

const followUp = "GET /payments/p1 HTTP/1.1\r\nHost: x\r\n\r\n"

// rawExchange writes raw on a fresh connection in one go and reads up to n
// answers. The write runs beside the reads, so a server that answers
// before reading everything cannot deadlock the test. Afterwards the
// connection must be closed if the server said so, and otherwise still in
// step: a follow-up GET gets its 200, which shows that no stray bytes of a
// body were taken for a request (or a request for a body).
func rawExchange(t *testing.T, addr, raw string, n int) []answer {
	t.Helper()
	conn := dialRaw(t, addr, rawDeadline)
	written := make(chan error, 1)
	go func() { _, err := io.WriteString(conn, raw); written <- err }()
	br := bufio.NewReader(conn)
	var got []answer
	for len(got) < n {
		a := readAnswer(t, br)
		got = append(got, a)
		if a.status == closedConn {
			return got
		}
	}
	if got[len(got)-1].close {
		expectClosed(t, br)
		return got
	}
	if err := <-written; err != nil {
		t.Fatalf("the server answered and kept the connection, but did not read the whole request: %v", err)
	}
	if _, err := io.WriteString(conn, followUp); err != nil {
		t.Fatalf("follow-up request: %v", err)
	}
	if a := readAnswer(t, br); a.status != http.StatusOK {
		t.Errorf("follow-up GET on the kept connection: %s, want 200 (the connection is out of step)", a)
	}
	return got
}

// rawCase is a request written as raw bytes and the answers it must get.
type rawCase struct {
	name string
	raw  string
	// want lists the statuses of the answers in order; closedConn means
	// the server closes the connection there without answering.
	want []int
	// problem: the first answer must be an application/problem+json.
	problem bool
}

// runRaw runs the cases in parallel against addr. Every JSON answer must
// be valid JSON, every problem's status the response's, and no answer may
// carry a file's content.
func runRaw(t *testing.T, addr string, cases []rawCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			got := rawExchange(t, addr, c.raw, len(c.want))
			t.Logf("%d bytes sent; answered in %s: %v", len(c.raw), time.Since(start).Round(time.Millisecond), got)
			var statuses []int
			for _, a := range got {
				statuses = append(statuses, a.status)
			}
			if fmt.Sprint(statuses) != fmt.Sprint(c.want) {
				t.Errorf("answers %v (0 = closed without an answer), want %v", got, c.want)
			}
			if c.problem && (len(got) == 0 || got[0].header.Get("Content-Type") != "application/problem+json") {
				t.Errorf("first answer %v, want an application/problem+json", got)
			}
			for _, a := range got {
				if bytes.Contains(a.body, []byte("root:")) {
					t.Errorf("an answer carries a file's content: %q", a.body)
				}
				switch a.header.Get("Content-Type") {
				case "application/json":
					if !json.Valid(a.body) {
						t.Errorf("JSON body is not valid JSON: %q", a.body)
					}
				case "application/problem+json":
					var p struct{ Status int }
					if !json.Valid(a.body) || json.Unmarshal(a.body, &p) != nil || p.Status != a.status {
						t.Errorf("problem body is not valid JSON with status %d: %q", a.status, a.body)
					}
				}
			}
		})
	}
}

// get is a GET request line and Host header followed by extra header
// lines, each ending in CRLF.
func get(path string, extra ...string) string {
	return "GET " + path + " HTTP/1.1\r\nHost: x\r\n" + strings.Join(extra, "") + "\r\n"
}

func TestHostileHeaders(t *testing.T) {
	t.Parallel()
	addr := startRaw(t, Options{}) // MaxHeaderBytes is the default 64 KiB
	var many strings.Builder
	for i := 0; many.Len() < 100<<10; i++ {
		fmt.Fprintf(&many, "X-Header-%04d: %s\r\n", i, strings.Repeat("v", 40))
	}
	// The whole header block, request line included, 1 KiB under 64 KiB.
	under := "X-Big: " + strings.Repeat("a", 63<<10-len(get("/payments/p1"))-len("X-Big: \r\n")) + "\r\n"
	runRaw(t, addr, []rawCase{
		{name: "one 100 KB header", raw: get("/payments/p1", "X-Big: "+strings.Repeat("a", 100<<10)+"\r\n"), want: []int{431}},
		{name: "many small headers past 64 KiB", raw: get("/payments/p1", many.String()), want: []int{431}},
		{name: "a 100 KB request line", raw: get("/payments/" + strings.Repeat("a", 100<<10)), want: []int{431}},
		{name: "header block just under 64 KiB", raw: get("/payments/p1", under), want: []int{200}},
		{name: "header line without a colon", raw: get("/payments/p1", "no colon here\r\n"), want: []int{400}},
		{name: "header name with a space", raw: get("/payments/p1", "X Bad: 1\r\n"), want: []int{400}},
		{name: "NUL in a header value", raw: get("/payments/p1", "X-Nul: a\x00b\r\n"), want: []int{400}},
		// RFC 9112 §5.2 lets a server replace obs-fold with spaces, as net/http does.
		{name: "obsolete line folding", raw: get("/payments/p1", "X-Fold: a\r\n  b\r\n"), want: []int{200}},
		{name: "raw 0xff in a header value", raw: get("/payments/p1", "X-Byte: \xff\xfe\r\n"), want: []int{200}},
	})
}

func TestHostileBodies(t *testing.T) {
	t.Parallel()
	addr := startRaw(t, Options{MaxBody: 1024})
	const post = "POST /payments HTTP/1.1\r\nHost: x\r\n"
	chunked := post + "Transfer-Encoding: chunked\r\n\r\n"
	var big strings.Builder // four 1000-byte chunks: past MaxBody while reading
	big.WriteString(chunked)
	for range 4 {
		fmt.Fprintf(&big, "%x\r\n%s\r\n", 1000, strings.Repeat("x", 1000))
	}
	big.WriteString("0\r\n\r\n")
	runRaw(t, addr, []rawCase{
		// The declared length is refused before a byte is read: no body is
		// sent, so an answer at all shows it came at once.
		{name: "1 GB declared, none sent", raw: post + "Content-Length: 1000000000\r\n\r\n", want: []int{413}, problem: true},
		{name: "1 GB declared with Expect: 100-continue", raw: post + "Content-Length: 1000000000\r\nExpect: 100-continue\r\n\r\n", want: []int{413}, problem: true},
		{name: "300 KB declared, none sent", raw: post + "Content-Length: 300000\r\n\r\n", want: []int{413}, problem: true},
		// Under 256 KiB net/http reads the unread body before it writes the
		// handler's answer, unless the answer says Connection: close.
		{name: "just over MaxBody declared, none sent", raw: post + "Content-Length: 1025\r\n\r\n", want: []int{413}, problem: true},
		{name: "200 KB declared, none sent", raw: post + "Content-Length: 200000\r\n\r\n", want: []int{413}, problem: true},
		{name: "Content-Length past int64", raw: post + "Content-Length: 99999999999999999999\r\n\r\n", want: []int{400}},
		{name: "negative Content-Length", raw: post + "Content-Length: -1\r\n\r\n", want: []int{400}},
		{name: "two different Content-Lengths", raw: post + "Content-Length: 2\r\nContent-Length: 3\r\n\r\nabc", want: []int{400}},
		{name: "chunked, bad chunk size", raw: chunked + "zz\r\nhello\r\n0\r\n\r\n", want: []int{400}, problem: true},
		{name: "chunked, chunk size past 64 bits", raw: chunked + "fffffffffffffffffffff\r\nhello\r\n0\r\n\r\n", want: []int{400}, problem: true},
		{name: "chunked, larger than MaxBody", raw: big.String(), want: []int{413}, problem: true},
		{name: "chunked, well formed", raw: chunked + "5\r\nhello\r\n0\r\n\r\n", want: []int{201}},
		{name: "unknown transfer coding", raw: post + "Transfer-Encoding: gzip\r\n\r\nabc", want: []int{501}},
		// RFC 9112 §6.1: Transfer-Encoding overrides Content-Length.
		{name: "both Content-Length and Transfer-Encoding", raw: post + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", want: []int{201}},
	})
}

// TestHostileTruncatedBody declares more body than it sends and then
// half-closes: the server must answer 400, not wait.
func TestHostileTruncatedBody(t *testing.T) {
	t.Parallel()
	addr := startRaw(t, Options{})
	conn := dialRaw(t, addr, rawDeadline)
	if _, err := io.WriteString(conn, "POST /payments HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly ten b"); err != nil {
		t.Fatal(err)
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if a := readAnswer(t, bufio.NewReader(conn)); a.status != http.StatusBadRequest || a.header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("truncated body: %s, want a 400 problem", a)
	}
}

func TestHostilePaths(t *testing.T) {
	t.Parallel()
	addr := startRaw(t, Options{})
	runRaw(t, addr, []rawCase{
		// Percent-encoded: net/http decodes them into URL.Path.
		{name: "encoded invalid UTF-8", raw: get("/%ff%fe"), want: []int{404}, problem: true},
		{name: "encoded NUL", raw: get("/a%00b"), want: []int{404}, problem: true},
		{name: "encoded CR LF", raw: get("/a%0d%0aSet-Cookie:%20x=1"), want: []int{404}, problem: true},
		{name: "encoded invalid UTF-8 in an echoed variable", raw: get("/echo/%ff%fe"), want: []int{200}},
		{name: "encoded NUL in an echoed variable", raw: get("/echo/a%00b"), want: []int{200}},
		{name: "encoded invalid UTF-8 in a long miss", raw: get("/payments/" + strings.Repeat("%e2%82", 200) + "/x"), want: []int{404}, problem: true},
		{name: "bad percent encoding", raw: get("/payments/%zz"), want: []int{400}},
		// Raw bytes in the request line.
		{name: "literal NUL", raw: get("/a\x00b"), want: []int{400}},
		{name: "literal 0xff", raw: get("/\xff\xfe"), want: []int{404}, problem: true},
		{name: "literal 0xff in an echoed variable", raw: get("/echo/\xff\xfe"), want: []int{200}},
		{name: "request line split by a space", raw: "GET /pay ments HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{400}},
		{name: "literal tab", raw: get("/a\tb"), want: []int{400}},
		{name: "bare CR in the request line", raw: "GET /a\rb HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{400}},
		// Dot segments and odd forms: no file is ever read, nor the path cleaned.
		{name: "dot-dot to /etc/passwd", raw: get("/../../etc/passwd"), want: []int{404}, problem: true},
		{name: "encoded dot-dot", raw: get("/%2e%2e/%2e%2e/etc/passwd"), want: []int{404}, problem: true},
		{name: "encoded slashes after a route", raw: get("/payments/..%2f..%2f"), want: []int{404}, problem: true},
		{name: "double slash", raw: get("//payments"), want: []int{404}, problem: true},
		{name: "no leading slash", raw: get("payments"), want: []int{400}},
		{name: "absolute form", raw: get("http://x/payments/p1"), want: []int{200}},
		{name: "absolute form with dot-dot", raw: get("http://x/../../etc/passwd"), want: []int{404}, problem: true},
		{name: "OPTIONS *", raw: "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{200}},
		{name: "GET *", raw: get("*"), want: []int{404}, problem: true},
		// Admin paths not spelled canonically are refused (see TestHostileAdminSpellings).
		{name: "dot-dot out of the admin API", raw: get("/__admin/../etc/passwd"), want: []int{400}, problem: true},
		{name: "admin path with a NUL", raw: get("/__admin/%00"), want: []int{400}, problem: true},
	})
}

func TestHostileProtocol(t *testing.T) {
	t.Parallel()
	addr := startRaw(t, Options{})
	const get10 = "GET /payments/p1 HTTP/1.0\r\n"
	runRaw(t, addr, []rawCase{
		{name: "HTTP/1.0 without Host", raw: get10 + "\r\n", want: []int{200}},
		{name: "HTTP/1.0 with Host", raw: get10 + "Host: x\r\n\r\n", want: []int{200}},
		{name: "HTTP/1.0 keep-alive, twice", raw: get10 + "Connection: keep-alive\r\n\r\n" + get10 + "Connection: keep-alive\r\n\r\n", want: []int{200, 200}},
		{name: "HTTP/1.1 without Host", raw: "GET /payments/p1 HTTP/1.1\r\n\r\n", want: []int{400}},
		{name: "two Host headers", raw: get("/payments/p1", "Host: y\r\n"), want: []int{400}},
		{name: "HTTP/0.9 request line", raw: "GET /\r\n", want: []int{400}},
		{name: "HTTP/2.0 version in HTTP/1 framing", raw: "GET /payments/p1 HTTP/2.0\r\nHost: x\r\n\r\n", want: []int{505}},
		{name: "HTTP/1.9", raw: "GET /payments/p1 HTTP/1.9\r\nHost: x\r\n\r\n", want: []int{200}},
		// net/http hands the preface to the handler (for h2c) with Connection: close.
		{name: "HTTP/2 preface", raw: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", want: []int{404}, problem: true},
		{name: "version garbage", raw: "GET /payments/p1 HTTX/1.1\r\nHost: x\r\n\r\n", want: []int{400}},
		{name: "unknown method with a body", raw: "BREW /payments HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", want: []int{404}, problem: true},
		{name: "method with a bad character", raw: "GE(T /payments/p1 HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{400}},
		{name: "lower-case method", raw: "get /payments/p1 HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{404}, problem: true},
		{name: "bare LF line ends", raw: "GET /payments/p1 HTTP/1.1\nHost: x\n\n", want: []int{200}},
		{name: "binary junk", raw: "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03junk\r\n\r\n", want: []int{400}},
		// RFC 9112 §2.2 says a server SHOULD ignore a CRLF before the request
		// line; net/http does not, and answers 400.
		{name: "an empty line before the request", raw: "\r\n" + get("/payments/p1"), want: []int{400}},
	})
}

// TestHostilePipelining writes 1,000 requests in one go on one connection:
// the answers come back complete and in order.
func TestHostilePipelining(t *testing.T) {
	t.Parallel()
	addr := startRaw(t, Options{})
	conn := dialRaw(t, addr, 60*time.Second)
	const n = 1000
	var reqs bytes.Buffer
	for i := range n {
		reqs.WriteString(get(fmt.Sprintf("/echo/%d", i)))
	}
	written := make(chan error, 1)
	go func() { _, err := conn.Write(reqs.Bytes()); written <- err }()
	br := bufio.NewReader(conn)
	start := time.Now()
	for i := range n {
		a := readAnswer(t, br)
		if want := fmt.Sprintf(`{"id":"%d"}`, i); a.status != http.StatusOK || string(a.body) != want {
			t.Fatalf("answer %d: %s, want 200 %s", i, a, want)
		}
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d pipelined requests (%d bytes) answered in order in %s", n, reqs.Len(), time.Since(start).Round(time.Millisecond))
}

// TestHostileIdleConnections holds 500 keep-alive connections idle after a
// request each: a new connection is still answered at once, and an old one
// still works.
func TestHostileIdleConnections(t *testing.T) {
	t.Parallel()
	addr := startRaw(t, Options{})
	const n = 500
	idle := make([]*bufio.Reader, n)
	conns := make([]net.Conn, n)
	for i := range n {
		conns[i] = dialRaw(t, addr, 60*time.Second)
		idle[i] = bufio.NewReader(conns[i])
		if _, err := io.WriteString(conns[i], followUp); err != nil {
			t.Fatal(err)
		}
		if a := readAnswer(t, idle[i]); a.status != http.StatusOK || a.close {
			t.Fatalf("connection %d: %s, want 200 and keep-alive", i, a)
		}
	}
	start := time.Now()
	if a := rawExchange(t, addr, followUp, 1); a[0].status != http.StatusOK {
		t.Errorf("new connection beside %d idle ones: %s", n, a[0])
	}
	// A server that held idle connections against new ones would not answer
	// at all; the bound leaves room for a loaded machine.
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("new connection beside %d idle ones answered after %s, want at once", n, el)
	} else {
		t.Logf("new connection beside %d idle ones answered in %s", n, el.Round(time.Microsecond))
	}
	if _, err := io.WriteString(conns[0], followUp); err != nil {
		t.Fatal(err)
	}
	if a := readAnswer(t, idle[0]); a.status != http.StatusOK {
		t.Errorf("the first idle connection, used again: %s", a)
	}
}

// trickle writes s one byte at a time, every interval, until stop is
// closed or a write fails (the server closed the connection).
func trickle(conn net.Conn, s string, interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for i := 0; ; i++ {
		if _, err := conn.Write([]byte{s[i%len(s)]}); err != nil {
			return
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// readUntilClosed reads and discards until the server closes conn, and
// returns what it sent. A timeout is fatal.
func readUntilClosed(t *testing.T, conn net.Conn) []byte {
	t.Helper()
	b, err := io.ReadAll(conn)
	if err != nil && !closedErr(err) {
		t.Fatalf("after %d bytes: %v (the server did not close the connection)", len(b), err)
	}
	return b
}

// TestHostileSlowloris sends requests a byte at a time, never finishing
// the headers: ReadHeaderTimeout ends each connection, and while 200 of
// them are open other clients are served at once. Not parallel: it
// measures times.
func TestHostileSlowloris(t *testing.T) {
	t.Run("each partial request is closed", func(t *testing.T) {
		const timeout = 300 * time.Millisecond
		addr := startRaw(t, Options{ReadHeaderTimeout: timeout})
		cases := []struct {
			name    string
			trickle string // sent a byte every 20ms; "" sends nothing
		}{
			{"nothing sent", ""},
			{"request line", "GET /payments/p1 HTTP/1.1"},
			{"headers without their end", "GET /payments/p1 HTTP/1.1\r\nHost: x\r\nX-A: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
			{"endless header value", "a"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				conn := dialRaw(t, addr, rawDeadline)
				stop := make(chan struct{})
				defer close(stop)
				if c.trickle != "" {
					go trickle(conn, c.trickle, 20*time.Millisecond, stop)
				}
				start := time.Now()
				got := readUntilClosed(t, conn)
				el := time.Since(start)
				t.Logf("closed after %s, having sent %q", el.Round(time.Millisecond), got)
				if el > timeout+10*time.Second {
					t.Errorf("closed after %s with ReadHeaderTimeout %s", el, timeout)
				}
			})
		}
	})

	t.Run("200 open, a new client is served", func(t *testing.T) {
		// Long enough that all 200 are surely still open while the new
		// client is served, even on a loaded machine; the check below makes
		// sure of it.
		const timeout, n = 5 * time.Second, 200
		addr := startRaw(t, Options{ReadHeaderTimeout: timeout})
		first := time.Now()
		conns := make([]net.Conn, n)
		for i := range conns {
			conns[i] = dialRaw(t, addr, timeout+rawDeadline)
		}
		stop := make(chan struct{})
		defer close(stop)
		go func() { // one goroutine trickles a byte to each in turn
			const s = "GET /payments/p1 HTTP/1.1\r\nHost: x\r\nX-Slow: "
			t := time.NewTicker(50 * time.Millisecond)
			defer t.Stop()
			for i := 0; ; i++ {
				for _, c := range conns {
					_, _ = c.Write([]byte{s[min(i, len(s)-1)]})
				}
				select {
				case <-stop:
					return
				case <-t.C:
				}
			}
		}()
		start := time.Now()
		a := rawExchange(t, addr, followUp, 1)[0]
		served := time.Since(start)
		if since := time.Since(first); since >= timeout {
			t.Fatalf("inconclusive: opening %d connections took %s, past the %s timeout", n, since, timeout)
		}
		// A server that served clients one at a time would answer only once
		// the slowloris connections time out, past the check above.
		if a.status != http.StatusOK {
			t.Errorf("new client beside %d slowloris connections: %s after %s, want 200", n, a, served)
		}
		t.Logf("new client beside %d slowloris connections: %d in %s", n, a.status, served.Round(time.Microsecond))
		var last time.Duration
		for _, c := range conns {
			readUntilClosed(t, c)
			last = time.Since(first)
		}
		t.Logf("all %d closed by %s after the first was opened (ReadHeaderTimeout %s)", n, last.Round(time.Millisecond), timeout)
		if last > timeout+10*time.Second {
			t.Errorf("the last slowloris connection closed %s after the first opened, with ReadHeaderTimeout %s", last, timeout)
		}
	})
}

// memFigures is what TestHostileMemory measures at one moment.
type memFigures struct {
	goroutines int
	heapInuse  uint64
	stackInuse uint64
	sys        uint64
}

func measure() memFigures {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memFigures{runtime.NumGoroutine(), m.HeapInuse, m.StackInuse, m.Sys}
}

func (m memFigures) String() string {
	return fmt.Sprintf("goroutines=%d HeapInuse=%.1fMiB StackInuse=%.1fMiB Sys=%.1fMiB",
		m.goroutines, float64(m.heapInuse)/(1<<20), float64(m.stackInuse)/(1<<20), float64(m.sys)/(1<<20))
}

// growth is b-a in bytes, negative when memory was returned.
func growth(a, b uint64) int64 { return int64(b) - int64(a) }

// TestHostileMemory holds 500 slowloris connections open while repeatedly
// sending 60 KB headers, and checks that the server's memory is bounded
// per connection and that its goroutines end with the connections. Not
// parallel: it counts goroutines and memory of the whole process.
//
// A connection waiting for its headers costs the server one goroutine (an
// 8 KiB stack to start), a 4 KiB bufio.Reader, a 4 KiB bufio.Writer and a
// few hundred bytes of state, about 10 KiB of heap. The limit, 64 KiB of
// heap per connection, is six times that: generous enough for allocator
// rounding and the race detector, tight enough that pinning a 60 KB header
// per connection, or anything that grows with the client's claims, fails.
func TestHostileMemory(t *testing.T) {
	const conns = 500
	const perConn = 64 << 10
	// The journal keeps each request's headers, 60 KB here, by design
	// (bounded by --journal-size); this test measures what connections
	// cost, so it runs without one.
	addr := startRaw(t, Options{JournalSize: -1})
	bigHeader := get("/payments/p1", "X-Big: "+strings.Repeat("a", 60<<10)+"\r\n")
	ka := dialRaw(t, addr, 30*time.Second)
	kaBR := bufio.NewReader(ka)
	sendBig := func() {
		t.Helper()
		if _, err := io.WriteString(ka, bigHeader); err != nil {
			t.Fatal(err)
		}
		if a := readAnswer(t, kaBR); a.status != http.StatusOK {
			t.Fatalf("60 KB header: %s", a)
		}
	}
	sendBig() // warm up pools and the keep-alive connection before the baseline

	before := measure()
	t.Logf("before: %s", before)

	slow := make([]net.Conn, conns)
	for i := range slow {
		slow[i] = dialRaw(t, addr, 30*time.Second)
		if _, err := io.WriteString(slow[i], "GET /payments/p1 HTTP/1.1\r\nHost: x\r\nX-Slow: 1"); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, patience, func() string { // the server has accepted each
		if g := runtime.NumGoroutine(); g < before.goroutines+conns {
			return fmt.Sprintf("%d goroutines, want at least %d", g, before.goroutines+conns)
		}
		return ""
	})
	const bigRequests = 100
	for range bigRequests {
		sendBig()
	}
	during := measure()
	t.Logf("during (%d slowloris connections, after %d requests with a 60 KB header): %s", conns, bigRequests, during)
	heap, sys := growth(before.heapInuse, during.heapInuse), growth(before.sys, during.sys)
	t.Logf("growth: HeapInuse %+.1f KiB per connection, Sys %+.1f KiB per connection, goroutines %+d",
		float64(heap)/conns/1024, float64(sys)/conns/1024, during.goroutines-before.goroutines)
	if heap > conns*perConn {
		t.Errorf("HeapInuse grew by %d bytes with %d connections open, more than %d KiB each", heap, conns, perConn>>10)
	}
	// Sys adds each goroutine's stack and the runtime's own overheads; twice
	// the heap allowance covers both.
	if sys > 2*conns*perConn {
		t.Errorf("Sys grew by %d bytes with %d connections open, more than %d KiB each", sys, conns, 2*perConn>>10)
	}
	if g := during.goroutines - before.goroutines; g > conns+10 {
		t.Errorf("%d more goroutines for %d connections, want one each", g, conns)
	}

	closeAndSettle(t, slow, before)
}

// TestHostileMemoryPartialHeaders holds 200 connections that each stop
// 60 KB into a header, just under MaxHeaderBytes: the most a connection
// can make the server hold while it waits. net/http keeps the partial line
// in a slice grown by append, so its capacity may reach twice its length;
// the limit, 2×(MaxHeaderBytes + net/http's 4 KiB slack) + 16 KiB per
// connection, is that plus the ~10 KiB of an idle connection. Not
// parallel: it measures the heap.
func TestHostileMemoryPartialHeaders(t *testing.T) {
	const conns, maxHeader = 200, 64 << 10
	addr := startRaw(t, Options{MaxHeaderBytes: maxHeader})
	partial := "GET /payments/p1 HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 60<<10)
	before := measure()
	open := make([]net.Conn, conns)
	for i := range open {
		open[i] = dialRaw(t, addr, 30*time.Second)
		if _, err := io.WriteString(open[i], partial); err != nil {
			t.Fatal(err)
		}
	}
	// The server reads what arrived; watch the heap a while for it.
	worst := worstHeap(time.Second)
	heap := growth(before.heapInuse, worst.heapInuse)
	t.Logf("before: %s; with %d connections each stalled %d bytes into its headers: %s (%+.1f KiB per connection)",
		before, conns, len(partial), worst, float64(heap)/conns/1024)
	if limit := int64(conns * (2*(maxHeader+4<<10) + 16<<10)); heap > limit {
		t.Errorf("HeapInuse grew by %d bytes for %d connections, more than %d KiB each", heap, conns, limit/conns>>10)
	}
	closeAndSettle(t, open, before)
}

// TestHostileStalledBody sends whole headers, then only part of the
// declared body, and stalls. ReadHeaderTimeout covers the headers only;
// ReadTimeout bounds the whole request, and the answer is a 408 problem.
func TestHostileStalledBody(t *testing.T) {
	t.Parallel()
	// Long enough that a client a loaded machine schedules late still sends
	// its headers in time: the 408 is for the body only.
	const timeout = 2 * time.Second
	addr := startRaw(t, Options{ReadHeaderTimeout: timeout, ReadTimeout: timeout})
	cases := []struct{ name, raw string }{
		{"Content-Length", "POST /payments HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab"},
		{"chunked", "POST /payments HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\na\r\nab"},
		{"chunk shorter than its size", "POST /payments HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nhello\r\n0\r\n\r\n"},
		// The admin handlers never read a body, but net/http drains it
		// before writing their answer.
		{"declared body on GET /__admin/health", "GET /__admin/health HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			conn := dialRaw(t, addr, rawDeadline)
			if _, err := io.WriteString(conn, c.raw); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			a := readAnswer(t, bufio.NewReader(conn)) // fatal on a hang
			t.Logf("%s after %s", a, time.Since(start).Round(time.Millisecond))
			if !strings.Contains(a.String(), "408") {
				t.Errorf("answer %s, want a 408 problem once the body stalls for the body timeout", a)
			}
		})
	}
}

// TestHostileDeclaredBodyMemory declares bodies of exactly MaxBody and
// sends none. readBody allocates the declared length before reading a
// byte, so each such connection pins MaxBody of heap for as long as it
// stays open, which (see TestHostileStalledBody) is forever. Not parallel:
// it measures the heap.
func TestHostileDeclaredBodyMemory(t *testing.T) {
	const conns, maxBody = 16, 4 << 20
	addr := startRaw(t, Options{MaxBody: maxBody})
	before := measure()
	for range conns {
		c := dialRaw(t, addr, rawDeadline)
		if _, err := fmt.Fprintf(c, "POST /payments HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", maxBody); err != nil {
			t.Fatal(err)
		}
	}
	// The handlers run as soon as the headers arrive; watch the heap a
	// while for whatever they allocate.
	worst := worstHeap(time.Second)
	heap := growth(before.heapInuse, worst.heapInuse)
	t.Logf("before: %s; with %d connections each declaring %d bytes and sending none: %s (%+.1f KiB per connection)",
		before, conns, maxBody, worst, float64(heap)/conns/1024)
	if limit := int64(conns * 64 << 10); heap > limit {
		t.Errorf("HeapInuse grew by %d bytes for %d connections that sent about 100 bytes each, more than 64 KiB each", heap, conns)
	}
}

// worstHeap samples the heap for d and returns the sample with the most in
// use: the server reads what arrived in its own time.
func worstHeap(d time.Duration) memFigures {
	var worst memFigures
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m := measure(); m.heapInuse > worst.heapInuse {
			worst = m
		}
	}
	return worst
}

// closeAndSettle closes conns and checks that goroutines and heap return
// to what they were before.
func closeAndSettle(t *testing.T, conns []net.Conn, before memFigures) {
	t.Helper()
	for _, c := range conns {
		c.Close()
	}
	settledGoroutines(t, before.goroutines)
	after := measure()
	t.Logf("after closing them: %s", after)
	if heap := growth(before.heapInuse, after.heapInuse); heap > 4<<20 {
		t.Errorf("HeapInuse is %d bytes above the baseline once the connections closed", heap)
	}
}

// TestHostileMissCost serves 10,000 routes on one path, each wanting its
// own X-Tenant, and sends a request none of them wants. Every route is a
// candidate and fails a condition; the near-miss report once tested and
// described all 10,000 of them (and looked each up among the candidates),
// 21–25 ms of CPU per miss. The report must still name the first three,
// and a miss must cost about what it costs with ten routes: the figure
// compared is allocations, which are exact where CPU time is not (the time
// is in BenchmarkMiss in the matcher). Not parallel: AllocsPerRun counts
// every allocation in the process.
func TestHostileMissCost(t *testing.T) {
	missAllocs := func(n int) float64 {
		var b strings.Builder
		b.WriteString("routes:\n")
		for i := range n {
			fmt.Fprintf(&b, "  - { name: t%d, method: GET, path: /tenants, when: { headers: { X-Tenant: t%d } }, respond: {} }\n", i, i)
		}
		s, hs, _ := serveYAML(t, Options{}, b.String())
		a := do(t, "GET", hs.URL+"/tenants", "", "X-Tenant", "nobody")
		if a.status != http.StatusNotFound {
			t.Fatalf("%d routes: %d %s, want 404", n, a.status, a.body)
		}
		want := `route \"t0\": header X-Tenant is \"nobody\", want = \"t0\"; route \"t1\": header X-Tenant is \"nobody\", want = \"t1\"; route \"t2\": header X-Tenant is \"nobody\", want = \"t2\"`
		if !strings.Contains(a.body, want) {
			t.Errorf("%d routes: the 404 says %s, want it to name %s", n, a.body, want)
		}
		r := httptest.NewRequest("GET", "/tenants", nil)
		r.Header.Set("X-Tenant", "nobody")
		return testing.AllocsPerRun(20, func() { s.ServeHTTP(httptest.NewRecorder(), r) })
	}
	small, large := missAllocs(10), missAllocs(10_000)
	t.Logf("allocations per miss: %.0f with 10 routes, %.0f with 10,000", small, large)
	if large > small+50 {
		t.Errorf("a miss allocates %.0f times with 10,000 routes on its path, %.0f with 10: its report still grows with the routes", large, small)
	}
}

// TestHostileLargeBodyScan sends a 9 MiB body to routes that test the raw
// body with a regex and with contains. Those tests read only the first
// matcher.MaxBodyScan bytes (a 9 MiB regex once cost 2.5 s of CPU, twice
// on a miss), so a needle beyond them does not match, and one within them
// does. equals stays exact: it compares lengths first.
func TestHostileLargeBodyScan(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - { name: regex, method: POST, path: /upload, when: { body: { regex: "needle-r" } }, respond: { status: 201 } }
  - { name: contains, method: POST, path: /upload, when: { body: { contains: "needle-c" } }, respond: { status: 202 } }
`)
	pad := strings.Repeat("x", 9<<20)
	cases := []struct {
		name, body string
		status     int
	}{
		{"regex needle first", "needle-r" + pad, http.StatusCreated},
		{"contains needle first", "needle-c" + pad, http.StatusAccepted},
		{"regex needle past the scan limit", pad + "needle-r", http.StatusNotFound},
		{"contains needle past the scan limit", pad + "needle-c", http.StatusNotFound},
	}
	for _, c := range cases {
		if a := do(t, "POST", hs.URL+"/upload", c.body); a.status != c.status {
			t.Errorf("%s: %d %.200s, want %d", c.name, a.status, a.body, c.status)
		}
	}
}

// TestHostileSecretInNearMiss guesses a bearer token. The 404 once
// answered with the token the route wants; by default it must name the
// route and what was sent, never the wanted value. The log keeps the whole
// report, for whoever runs the mock.
func TestHostileSecretInNearMiss(t *testing.T) {
	t.Parallel()
	const secret = "sk_live_SECRET123"
	yaml := `
routes:
  - name: account
    path: /account
    when: { headers: { Authorization: "Bearer ` + secret + `" } }
    respond: {}
  - name: search
    path: /search
    when: { query: { api_token: "` + secret + `", page: "2" } }
    respond: {}
  - name: mode
    path: /mode
    when: { headers: { X-Mode: live } }
    respond: {}
`
	_, hs, logs := serveYAML(t, Options{}, yaml)
	cases := []struct {
		name, target string
		headers      []string
		shows        string // what the 404 still says
	}{
		{"authorization", "/account", []string{"Authorization", "Bearer guess"}, `header Authorization is \"Bearer guess\", want [redacted]`},
		{"secret-looking query", "/search?api_token=guess&page=2", nil, `query api_token is \"guess\", want [redacted]`},
		{"ordinary header", "/mode", []string{"X-Mode", "test"}, `header X-Mode is \"test\", want = \"live\"`},
	}
	for _, c := range cases {
		a := do(t, "GET", hs.URL+c.target, "", c.headers...)
		if a.status != http.StatusNotFound {
			t.Fatalf("%s: %d %s, want 404", c.name, a.status, a.body)
		}
		if strings.Contains(a.body, secret) {
			t.Errorf("%s: the 404 reveals the wanted value: %s", c.name, a.body)
		}
		if !strings.Contains(a.body, c.shows) {
			t.Errorf("%s: the 404 says %s, want it to say %s", c.name, a.body, c.shows)
		}
	}
	if n := strings.Count(logs.String(), secret); n < 2 {
		t.Errorf("the log names the wanted value %d times, want the full report in each 404 line:\n%s", n, logs)
	}
}

// templateBombYAML holds templates that pass validation but would run for
// minutes or build a huge body if nothing bounded a render. slow does a
// megabyte of formatting per iteration and prints nothing, so that
// neither the step budget (reached after minutes) nor a size cap stops
// it: only the request's context can.
const templateBombYAML = `
routes:
  - name: slow
    path: /slow
    respond:
      template: true
      body: '{{ $n := 1000000 }}{{ range $n }}{{ if eq (len (printf "%0999999d" 1)) 0 }}{{ end }}{{ end }}done'
  - name: huge
    path: /huge
    respond:
      template: true
      body: '{{ $n := 1000000 }}{{ range $n }}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx{{ end }}'
  - name: huge json
    path: /huge.json
    respond:
      template: true
      body: { a: '{{ $n := 1000000 }}{{ range $n }}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx{{ end }}' }
  - name: spin
    path: /spin
    respond:
      template: true
      body: '{{ $n := 1000000000 }}{{ range $n }}{{ end }}done'
`

// TestHostileTemplateClientGone: a render outlives its client no longer.
// The client gives up at once; the render must end with the request
// (its log line says so) rather than run on for minutes.
func TestHostileTemplateClientGone(t *testing.T) {
	logs := &syncBuffer{}
	url, stop := serveReal(t, Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))}, templateBombYAML)
	t.Cleanup(func() { _ = stop() })
	waitListening(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := doCtx(ctx, "GET", url+"/slow", ""); err == nil {
		t.Fatal("the slow template answered within 300ms; the test needs one that does not")
	}
	eventually(t, 20*time.Second, func() string {
		if l := logs.String(); !strings.Contains(l, `"route":"slow"`) || !strings.Contains(l, "render cancelled") {
			return "the render of /slow has not ended after its client left; logs:\n" + l
		}
		return ""
	})
}

// TestHostileTemplateBudget: a range over a variable (which validation
// cannot see) is cut off at the step budget with a 500 problem.
func TestHostileTemplateBudget(t *testing.T) {
	url, stop := serveReal(t, Options{maxTemplateSteps: 10_000}, templateBombYAML)
	t.Cleanup(func() { _ = stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := doCtx(ctx, "GET", url+"/spin", "")
	if err != nil {
		t.Fatalf("GET /spin: %v", err)
	}
	if r.status != http.StatusInternalServerError || !strings.Contains(r.body, "more than 10000 range iterations") {
		t.Errorf("GET /spin: %d %s, want a 500 problem naming the step budget", r.status, r.body)
	}
}

// TestHostileTemplateHugeBody: a template that would render 100 MB gets a
// 500 problem naming the cap, and the server allocates about the cap, not
// the body. Not parallel: it measures the process's allocations.
func TestHostileTemplateHugeBody(t *testing.T) {
	url, stop := serveReal(t, Options{}, templateBombYAML)
	t.Cleanup(func() { _ = stop() })
	waitListening(t, url)
	for _, path := range []string{"/huge", "/huge.json"} {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		before := m.TotalAlloc
		r := do(t, "GET", url+path, "")
		runtime.ReadMemStats(&m)
		alloc := m.TotalAlloc - before
		t.Logf("GET %s: %d, %d bytes allocated", path, r.status, alloc)
		if r.status != http.StatusInternalServerError || r.header.Get("Content-Type") != "application/problem+json" ||
			!strings.Contains(r.body, "--max-template-output") || !strings.Contains(r.body, fmt.Sprint(4<<20)) {
			t.Errorf("GET %s: %d %.300s, want a 500 problem naming the cap", path, r.status, r.body)
		}
		if alloc > 64<<20 {
			t.Errorf("GET %s allocated %d MiB; a render capped at 4 MiB should take a few times that", path, alloc>>20)
		}
	}
}

// TestHostileTemplateRefused: what no render could finish, or what would
// escape the budget, is refused when the file loads, with its position.
func TestHostileTemplateRefused(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{{range 9000000000000000000}}{{end}}done`, "range over 9000000000000000000 can never finish"},
		{`{{range 20000000}}xxxxxxxxxx{{end}}`, "range over 20000000 can never finish"},
		{`{{define "x"}}{{template "x" 1}}{{template "x" 1}}{{end}}`, "cannot define templates"},
		{`{{ $ = 1 }}{{ range 5 }}{{ end }}`, "$ cannot be declared"},
	} {
		yaml := "routes:\n  - path: /a\n    respond:\n      template: true\n      body: '" + c.body + "'\n"
		_, err := scenarios.LoadBytes("s.yaml", []byte(yaml))
		if err == nil || !strings.Contains(err.Error(), "s.yaml:5:13: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: load error %v, want s.yaml:5:13: ... %s", c.body, err, c.want)
		}
	}
}

// TestHostileAdminSpellings: the admin API answers only its canonical
// spelling, so that a proxy rule keeping /__admin from the outside cannot
// be walked round, and only to a Host no DNS-rebinding page could send.
func TestHostileAdminSpellings(t *testing.T) {
	t.Parallel()
	addr := startRaw(t, Options{AdminHosts: []string{"mock.internal"}})
	host := func(path, host string) string { return "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n" }
	runRaw(t, addr, []rawCase{
		{name: "canonical", raw: host("/__admin/health", "127.0.0.1"), want: []int{200}},
		{name: "canonical with a query", raw: host("/__admin/reset?route=nope", "localhost"), want: []int{405}, problem: true},
		{name: "encoded underscore", raw: host("/%5f_admin/health", "127.0.0.1"), want: []int{400}, problem: true},
		{name: "encoded slash", raw: host("%2f__admin/health", "127.0.0.1"), want: []int{400}},
		{name: "encoded letter", raw: host("/__adm%69n/health", "127.0.0.1"), want: []int{400}, problem: true},
		{name: "double slash", raw: host("//__admin/health", "127.0.0.1"), want: []int{400}, problem: true},
		{name: "dot segment", raw: host("/./__admin/health", "127.0.0.1"), want: []int{400}, problem: true},
		{name: "dot-dot into the admin API", raw: host("/payments/../__admin/health", "127.0.0.1"), want: []int{400}, problem: true},
		{name: "trailing slash", raw: host("/__admin/health/", "127.0.0.1"), want: []int{400}, problem: true},
		{name: "absolute form, foreign host", raw: host("http://other.example/__admin/health", "other.example"), want: []int{400}, problem: true},
		{name: "absolute form, own address", raw: host("http://"+addr+"/__admin/health", addr), want: []int{400}, problem: true},
		{name: "rebinding name", raw: host("/__admin/health", "attacker.example"), want: []int{403}, problem: true},
		{name: "rebinding name with a port", raw: host("/__admin/health", "attacker.example:8080"), want: []int{403}, problem: true},
		{name: "localhost with a port", raw: host("/__admin/health", "localhost:8080"), want: []int{200}},
		{name: "a localhost subdomain", raw: host("/__admin/health", "app.localhost"), want: []int{200}},
		{name: "IPv6 loopback", raw: host("/__admin/health", "[::1]:8080"), want: []int{200}},
		{name: "an allowed name", raw: host("/__admin/health", "MOCK.internal:8080"), want: []int{200}},
		// Scenario paths that merely contain the word are not admin paths.
		{name: "scenario path containing __admin", raw: host("/echo/__admin", "attacker.example"), want: []int{200}},
	})
}

// TestHostileSwappedBodyFile reloads and requests while a goroutine swaps
// a body file with a symbolic link to a file outside the scenario root
// (renameat2 RENAME_EXCHANGE, so that both names always exist). Reloads
// that meet the link fail and keep the last good snapshot; no answer may
// ever carry the outside file.
func TestHostileSwappedBodyFile(t *testing.T) {
	// Not parallel: the swapping goroutine keeps a core busy, which would
	// slow the timing-sensitive tests around it on a 2-core machine.
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret.txt"), "SECRET")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "s.yaml"), "routes: [{ path: /x, respond: { bodyFile: f.txt } }]\n")
	writeFile(t, filepath.Join(dir, "f.txt"), "inside")
	body, swap := filepath.Join(dir, "f.txt"), filepath.Join(dir, ".swap")
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), swap); err != nil {
		t.Skipf("cannot make symbolic links here: %v", err)
	}
	if err := exchangeNames(t, swap, body); err != nil {
		t.Skipf("cannot exchange names here: %v", err)
	}
	if err := exchangeNames(t, swap, body); err != nil {
		t.Fatal(err)
	}
	_, hs, _ := newTestServer(t, Options{}, dir)

	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := exchangeNames(t, swap, body); err != nil {
				done <- err
				return
			}
		}
	}()
	defer func() {
		close(stop)
		if err := <-done; err != nil {
			t.Errorf("exchange: %v", err)
		}
	}()

	var ok, failed int
	// The reproduction leaked in 31 of 307 answers.
	for i := 0; i < 1000; i++ {
		switch r := do(t, "POST", hs.URL+"/__admin/reload", ""); r.status {
		case http.StatusOK:
			ok++
		default:
			failed++
		}
		if r := do(t, "GET", hs.URL+"/x", ""); r.status != http.StatusOK || r.body != "inside" {
			t.Fatalf("answer %d: GET /x = %d %q, want 200 \"inside\" (%d good reloads and %d refused before)", i, r.status, r.body, ok, failed)
		}
	}
	t.Logf("%d reloads succeeded, %d refused the link", ok, failed)
}
