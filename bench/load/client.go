package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// conn is a minimal HTTP/1.1 keep-alive client: it writes prepared request
// bytes and reads one Content-Length response, so that the load generator
// spends as little of the machine's two cores as possible and the same
// amount against either server.
type conn struct {
	addr string
	c    net.Conn
	r    *bufio.Reader
	body []byte
}

// reply is one parsed response; its slices are valid until the next call.
type reply struct {
	status  int
	version []byte // the X-Version header, for the reload workload
	body    []byte
}

func dial(addr string) (*conn, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	return &conn{addr: addr, c: c, r: bufio.NewReaderSize(c, 16<<10)}, nil
}

func (c *conn) close() {
	if c.c != nil {
		c.c.Close()
	}
}

var (
	errShort    = errors.New("malformed response")
	hdrLength   = []byte("content-length:")
	hdrVersion  = []byte("x-version:")
	hdrEncoding = []byte("transfer-encoding:")
)

// do sends req and reads the answer.
func (c *conn) do(req []byte, timeout time.Duration) (reply, error) {
	if timeout > 0 {
		_ = c.c.SetDeadline(time.Now().Add(timeout))
	}
	if _, err := c.c.Write(req); err != nil {
		return reply{}, err
	}
	return c.read()
}

func (c *conn) read() (reply, error) {
	var rp reply
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return rp, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return rp, fmt.Errorf("%w: status line %q", errShort, line)
	}
	rp.status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return rp, errShort
	}
	length := -1
	chunked := false
	for {
		line, err = c.r.ReadSlice('\n')
		if err != nil {
			return rp, err
		}
		if len(line) <= 2 {
			break
		}
		if hasPrefixFold(line, hdrLength) {
			length, err = strconv.Atoi(string(bytes.TrimSpace(line[len(hdrLength):])))
			if err != nil {
				return rp, errShort
			}
		} else if hasPrefixFold(line, hdrVersion) {
			rp.version = append(rp.version[:0], bytes.TrimSpace(line[len(hdrVersion):])...)
		} else if hasPrefixFold(line, hdrEncoding) && bytes.Contains(bytes.ToLower(line), []byte("chunked")) {
			chunked = true
		}
	}
	if chunked {
		return rp, c.readChunked(&rp)
	}
	if length < 0 {
		return rp, fmt.Errorf("%w: no Content-Length", errShort)
	}
	if cap(c.body) < length {
		c.body = make([]byte, length)
	}
	rp.body = c.body[:length]
	_, err = io.ReadFull(c.r, rp.body)
	return rp, err
}

// readChunked reads a chunked body (stripe-mock's answers larger than
// net/http's buffer) into rp.body.
func (c *conn) readChunked(rp *reply) error {
	c.body = c.body[:0]
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		size := bytes.TrimSpace(line)
		if i := bytes.IndexByte(size, ';'); i >= 0 {
			size = size[:i]
		}
		n, err := strconv.ParseInt(string(size), 16, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("%w: chunk size %q", errShort, line)
		}
		if n == 0 { // the trailer, up to its empty line
			for {
				line, err := c.r.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(line) <= 2 {
					rp.body = c.body
					return nil
				}
			}
		}
		start := len(c.body)
		c.body = append(c.body, make([]byte, n)...)
		if _, err := io.ReadFull(c.r, c.body[start:]); err != nil {
			return err
		}
		if _, err := c.r.Discard(2); err != nil { // CRLF
			return err
		}
	}
}

func hasPrefixFold(s, prefix []byte) bool {
	return len(s) >= len(prefix) && bytes.EqualFold(s[:len(prefix)], prefix)
}

// samples collects latencies; each worker has its own, merged at the end.
type samples []time.Duration

type summary struct {
	n                  int
	rps                float64
	p50, p99, p999, mx time.Duration
}

func summarize(all []samples, elapsed time.Duration) summary {
	var merged samples
	for _, s := range all {
		merged = append(merged, s...)
	}
	slices.Sort(merged)
	s := summary{n: len(merged), rps: float64(len(merged)) / elapsed.Seconds()}
	if len(merged) > 0 {
		at := func(q float64) time.Duration { return merged[min(len(merged)-1, int(q*float64(len(merged))))] }
		s.p50, s.p99, s.p999, s.mx = at(0.50), at(0.99), at(0.999), merged[len(merged)-1]
	}
	return s
}

// background keeps h.conns closed-loop connections sending req to addr
// until the function it returns is called, which waits for them and
// returns what they measured. ok judges each answer, given the time it
// arrived; false counts it wrong. The reload and runtime workloads load
// the server this way while they change what it serves.
func (h *harness) background(addr string, req []byte, ok func(rp reply, at time.Time) bool) func() result {
	var stop atomic.Bool
	var errs, wrong atomic.Int64
	lat := make([]samples, h.conns)
	var wg sync.WaitGroup
	begin := time.Now()
	for w := range h.conns {
		wg.Go(func() {
			var c *conn
			for !stop.Load() {
				if c == nil {
					var err error
					if c, err = dial(addr); err != nil {
						errs.Add(1)
						continue
					}
				}
				t0 := time.Now()
				rp, err := c.do(req, 10*time.Second)
				if err != nil {
					errs.Add(1)
					c.close()
					c = nil
					continue
				}
				now := time.Now()
				lat[w] = append(lat[w], now.Sub(t0))
				if !ok(rp, now) {
					wrong.Add(1)
				}
			}
			if c != nil {
				c.close()
			}
		})
	}
	return func() result {
		stop.Store(true)
		wg.Wait()
		return result{summary: summarize(lat, time.Since(begin)), errors: errs.Load(), wrong: wrong.Load()}
	}
}
