package server

import (
	"bytes"
	"context"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"
)

// memConn is a client connection held in memory: each Read hands
// net/http the next request that next makes (the bytes of request i), and
// every Write is dropped but for the status line of each answer, which
// is checked. Served through http.Server, it measures what a request
// costs the server (net/http's reading, the handler, net/http's writing)
// without the system calls and scheduling of a socket, whose cost the
// two servers of a comparison share: the difference is what scenariomock
// adds, repeatable enough to count instructions (valgrind --tool=callgrind).
type memConn struct {
	next    func(i int, buf []byte) []byte
	n, max  int
	buf     []byte
	pending []byte
	// status is the status line every answer must start with; wrong
	// counts those that did not.
	status []byte
	wrong  int
	closed chan struct{}
	once   sync.Once
}

func (c *memConn) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		if c.n == c.max {
			return 0, io.EOF
		}
		c.buf = c.next(c.n, c.buf)
		c.pending = c.buf
		c.n++
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

func (c *memConn) Write(p []byte) (int, error) {
	// net/http writes each answer in one Write once its buffer is
	// flushed at the end of the request: an answer starts a Write.
	if bytes.HasPrefix(p, []byte("HTTP/1.1 ")) && !bytes.HasPrefix(p, c.status) {
		c.wrong++
	}
	return len(p), nil
}

func (c *memConn) Close() error                     { c.once.Do(func() { close(c.closed) }); return nil }
func (c *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }
func (c *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5555} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// oneConnListener accepts one connection, then waits until it is closed.
type oneConnListener struct {
	c        *memConn
	accepted bool
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	if !l.accepted {
		l.accepted = true
		return l.c, nil
	}
	<-l.c.closed
	return nil, net.ErrClosed
}
func (l *oneConnListener) Close() error   { return nil }
func (l *oneConnListener) Addr() net.Addr { return l.c.LocalAddr() }

// serveMem serves n requests made by next on one keep-alive connection
// through hs, and returns how many answers did not start with status.
func serveMem(hs *http.Server, n int, next func(i int, buf []byte) []byte, status int) int {
	c := &memConn{next: next, max: n, closed: make(chan struct{}),
		status: []byte("HTTP/1.1 " + strconv.Itoa(status) + " ")}
	l := &oneConnListener{c: c}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(l)
	}()
	<-c.closed
	_ = hs.Close()
	<-done
	return c.wrong
}

// workloadRequests are the requests of the load harness's workloads
// (bench/load): their bytes as its clients send them.
func getRequest(_ int, buf []byte) []byte {
	return append(buf[:0], "GET /payments/pay_demo_0001 HTTP/1.1\r\nHost: bench\r\nUser-Agent: scenariomock-load\r\n\r\n"...)
}

// postRequest is POST /payments with an Idempotency-Key no request of the
// process has used (keys count on from one run to the next).
func postRequest(prefix string) func(i int, buf []byte) []byte {
	const body = `{"amount":9800,"currency":"JPY"}`
	var seq int
	return func(_ int, buf []byte) []byte {
		seq++
		buf = append(buf[:0], "POST /payments HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nIdempotency-Key: "...)
		buf = append(buf, prefix...)
		buf = strconv.AppendInt(buf, int64(seq), 10)
		buf = append(buf, "\r\nContent-Length: "...)
		buf = strconv.AppendInt(buf, int64(len(body)), 10)
		return append(buf, "\r\n\r\n"+body...)
	}
}

// workloadKeys is the idempotency store's bound in BenchmarkWorkloads,
// which fills it before the idem and replay workloads, so that each
// fresh key evicts one: by default the bound of serve, as in a long run;
// a smaller one makes a run under callgrind shorter.
var workloadKeys = flag.Int("workload-keys", 100_000, "the idempotency store's bound in BenchmarkWorkloads, filled before the idem and replay workloads")

// BenchmarkWorkloads serves the load harness's workloads (get, post,
// idem, replay; see bench/load) over one in-memory keep-alive connection
// through net/http, by scenariomock with the defaults of serve (the log
// line at info, into a LogWriter; the journal on) and by a bare net/http
// handler that reads the body and writes the same answer, as the
// harness's baseline does. The difference between the two is what
// scenariomock adds to a request, without the socket's costs.
//
// For instruction counts (repeatable on a loaded machine), run one
// sub-benchmark under callgrind at two -test.benchtime counts and divide
// the difference:
//
//	GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind server.test -test.run XXX -test.bench 'Workloads/idem/scenariomock' -test.benchtime 20000x
//
// (asyncpreemptoff: callgrind fails on the preemption signal). Filling
// 100,000 keys first takes long under callgrind: -workload-keys 5000
// makes the store's bound (and the fill) smaller.
func BenchmarkWorkloads(b *testing.B) {
	dir := b.TempDir()
	idemPath := dir + "/idem.yaml"
	// As bench/load's idempotentScenario.
	if err := os.WriteFile(idemPath, []byte(`routes:
  - name: create payment
    method: POST
    path: /payments
    idempotency: { key: header.Idempotency-Key, required: true }
    respond:
      status: 201
      headers: { Location: /payments/pay_demo_0001 }
      body: { id: pay_demo_0001, amount: 9800, currency: JPY, status: succeeded }
`), 0o644); err != nil {
		b.Fatal(err)
	}
	lw := NewLogWriter(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	logDone := make(chan struct{})
	go func() { lw.Run(ctx, 100*time.Millisecond); close(logDone) }()
	defer func() { cancel(); <-logDone }()
	newServer := func(path string) *Server {
		s, err := New(Options{
			Load:   func() (*scenarios.Set, error) { return scenarios.Load(path) },
			Logger: slog.New(NewLogHandler(lw, false, slog.LevelInfo)), // as serve sets it up
			// The bound the store is filled to (0: the default, 100,000).
			MaxIdempotencyKeys: *workloadKeys,
		})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	demo, idem := newServer(demoFile), newServer(idemPath)
	// The bare server's answers, the very bytes scenariomock answers.
	answer := func(status int, location string, body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			h := w.Header()
			h["Cache-Control"] = []string{"no-store"}
			if location != "" {
				h["Location"] = []string{location}
			}
			h["Content-Type"] = []string{"application/json"}
			h["Content-Length"] = []string{strconv.Itoa(len(body))}
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		})
	}
	const payment = `{"id":"pay_demo_0001","amount":9800,"currency":"JPY","status":"succeeded"}`
	// Fill the idempotency store to its bound (100,000 keys), as a long
	// run of the idem workload does, so that each fresh key evicts one;
	// then store the key the replay workload sends.
	replayed := postRequest("replayed")(0, nil)
	fill := sync.OnceFunc(func() {
		serveMem(idem.httpServer(idem, context.Background()), *workloadKeys, postRequest("fill-"), 201)
		serveMem(idem.httpServer(idem, context.Background()), 1, func(int, []byte) []byte { return replayed }, 201)
	})
	for _, w := range []struct {
		name   string
		s      *Server
		next   func(i int, buf []byte) []byte
		bare   http.Handler
		status int
	}{
		{"get", demo, getRequest, answer(200, "", payment), 200},
		{"post", demo, postRequest("post-"), answer(201, "/payments/pay_demo_0001", payment), 201},
		{"idem", idem, postRequest("idem-"), answer(201, "/payments/pay_demo_0001", payment), 201},
		{"replay", idem, func(int, []byte) []byte { return replayed }, answer(201, "/payments/pay_demo_0001", payment), 201},
	} {
		for _, server := range []string{"bare", "scenariomock"} {
			b.Run(w.name+"/"+server, func(b *testing.B) {
				if w.s == idem && server == "scenariomock" {
					fill()
				}
				var hs *http.Server
				if server == "bare" {
					hs = &http.Server{Handler: w.bare, ReadHeaderTimeout: 10 * time.Second}
				} else {
					hs = w.s.httpServer(w.s, context.Background())
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu := startCPU()
				if wrong := serveMem(hs, b.N, w.next, w.status); wrong > 0 {
					b.Fatalf("%d answers of %d without status %d", wrong, b.N, w.status)
				}
				cpu.report(b, b.N)
			})
		}
	}
}
