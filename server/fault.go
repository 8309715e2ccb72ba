package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"
)

// faultFor returns the fault the request gets from p, drawing its chance,
// or nil when it gets the answer. The draw comes from Options.Rand, so a
// seeded server repeats the pattern for the same order of requests; a
// fault that always or never strikes draws nothing.
func (s *Server) faultFor(p *prepared) *scenarios.Fault {
	f := p.src.Fault
	if f == nil || f.Chance <= 0 {
		return nil
	}
	if f.Always() || s.opts.Rand() < f.Chance {
		return f
	}
	return nil
}

// deliverFault breaks the exchange as the request's fault says. x.rec
// is the answer, for the kinds that send (part of) it and for any kind
// after processing; otherwise nothing was produced. The request is
// journaled (record) before any byte of the broken answer, or the reset,
// reaches the client. A hang and an interrupted slow body end the handler
// by aborting, which closes the connection (on HTTP/2, resets the
// stream).
//
// The headers already in w (CORS) go with whatever status line a fault
// sends, under the answer's own, as they would with the answer: a
// browser's fetch then sees the broken body rather than a CORS error.
func (s *Server) deliverFault(x *exchange) {
	f, r := x.fault, x.r
	var rec *recorder
	if x.produced {
		rec = &x.rec
	}
	switch f.Kind {
	case scenarios.Hang:
		// Never answer; the client leaving or shutdown (always, whatever
		// WaitDelaysOnShutdown says: a hang is not work to finish) ends it.
		s.record(x)
		holdWrites(x.w) // on HTTP/2, the stream's deadline would end the hang
		ctx, release := s.stopContext(r, false)
		<-ctx.Done()
		x.out.ended = "client gone during hang"
		if errors.Is(context.Cause(ctx), errShutdown) {
			x.out.ended = "hang ended by shutdown"
		}
		release()
		panic(http.ErrAbortHandler)
	case scenarios.SlowBody:
		s.slowBody(x)
		return
	case scenarios.Bandwidth, scenarios.Latency, scenarios.Slice:
		s.shaped(x)
		return
	case scenarios.Limit:
		if r.ProtoMajor >= 2 {
			s.breakStream(x, rec)
			panic(http.ErrAbortHandler)
		}
	}
	if r.ProtoMajor >= 2 {
		// HTTP/2 has no connection of a request's own to break: the
		// nearest is to reset the request's stream (RST_STREAM,
		// INTERNAL_ERROR), which aborting the handler does, once the kind
		// has sent what it sends. The connection and its other streams
		// go on.
		s.breakStream(x, rec)
		panic(http.ErrAbortHandler)
	}
	if err := s.breakConnection(x, rec); err != nil {
		x.out.err = err
		x.answerProblem(newProblem(http.StatusInternalServerError, err.Error()))
		x.out.status = http.StatusInternalServerError
		s.record(x)
		writeProblem(x.w, x.problem)
	}
}

// faultStatus is the status line f's kind sends of rec, 0 for none.
func faultStatus(f *scenarios.Fault, rec *recorder) int {
	switch f.Kind {
	case scenarios.PartialBody, scenarios.MalformedChunk, scenarios.SlowBody, scenarios.Bandwidth, scenarios.Latency, scenarios.Slice:
		return rec.status
	case scenarios.Limit:
		if f.Bytes >= len("HTTP/1.1 200") {
			return rec.status // the status line got through
		}
	}
	return 0
}

// breakConnection takes the connection from net/http, journals the
// request, and ends the connection as f says, after writing what the
// kind sends. It fails only when the connection cannot be taken.
func (s *Server) breakConnection(x *exchange, rec *recorder) error {
	f, w := x.fault, x.w
	if rec != nil && !rec.inW {
		// They cannot be read once the connection is taken.
		underHeaders(rec.header, w.Header())
	}
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return fmt.Errorf("fault %s: %w", f.Kind, err)
	}
	defer conn.Close()
	x.out.status = faultStatus(f, rec)
	s.record(x)
	switch f.Kind {
	case scenarios.ConnectionReset:
		raw := conn
		if tc, ok := conn.(*tls.Conn); ok {
			// Over TLS, close the TCP connection itself: closing the TLS
			// one would send a close_notify before the RST.
			raw = tc.NetConn()
		}
		if tc, ok := raw.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close sends RST instead of FIN
		}
		_ = raw.Close()
		return nil
	case scenarios.RandomData:
		junk := make([]byte, 512)
		for i := range junk {
			junk[i] = byte(s.opts.Rand() * 256)
		}
		_, _ = buf.Write(junk)
	case scenarios.PartialBody:
		body := rec.body
		rec.header["Content-Length"] = []string{strconv.Itoa(len(body))}
		s.writeHead(buf, rec)
		_, _ = buf.Write(body[:partialCut(f, body)])
	case scenarios.MalformedChunk:
		body := rec.body
		delete(rec.header, "Content-Length")
		rec.header["Transfer-Encoding"] = []string{"chunked"}
		s.writeHead(buf, rec)
		// "zz" is no hexadecimal size: the chunked reader fails there.
		_, _ = buf.WriteString("zz\r\n")
		_, _ = buf.Write(body[:len(body)/2])
		_, _ = buf.WriteString("\r\n")
	case scenarios.Limit:
		// The answer as net/http would have written it, cut after
		// f.Bytes bytes; then an ordinary close (FIN), as an upstream or
		// a proxy that gives up mid-answer.
		rec.header["Content-Length"] = []string{strconv.Itoa(len(rec.body))}
		var whole bytes.Buffer
		s.writeHead(&whole, rec)
		whole.Write(rec.body)
		_, _ = buf.Write(whole.Bytes()[:min(f.Bytes, whole.Len())])
	}
	_ = buf.Flush()
	return nil
}

// breakStream journals the request and sends on an HTTP/2 stream what
// its fault's kind sends before the stream is reset, through w (there is
// no connection to take). partial-body declares the whole
// length and sends a part; malformed-chunk, HTTP/2 having no chunks to
// garble, sends the status, headers and half the body; the others send
// nothing: random bytes cannot be put on a stream, only in frames.
func (s *Server) breakStream(x *exchange, rec *recorder) {
	f, w := x.fault, x.w
	x.out.status = faultStatus(f, rec)
	s.record(x)
	var body []byte
	switch f.Kind {
	case scenarios.PartialBody:
		body = rec.body
		rec.header["Content-Length"] = []string{strconv.Itoa(len(body))}
		body = body[:partialCut(f, body)]
	case scenarios.MalformedChunk:
		body = rec.body
		delete(rec.header, "Content-Length")
		body = body[:len(body)/2]
	case scenarios.Limit:
		// No wire to count on: the head counts as it would on HTTP/1,
		// and what is left of the limit is sent of the body.
		var head bytes.Buffer
		s.writeHead(&head, rec)
		if f.Bytes < head.Len() {
			return // cut in the head: nothing is sent, the stream is reset
		}
		body = rec.body
		rec.header["Content-Length"] = []string{strconv.Itoa(len(body))}
		body = body[:min(len(body), f.Bytes-head.Len())]
	default:
		return
	}
	h := w.Header()
	if !rec.inW {
		for name, vs := range rec.header {
			h[name] = vs
		}
	}
	w.WriteHeader(rec.status)
	_, _ = w.Write(body)
	_ = http.NewResponseController(w).Flush()
}

// partialCut is how much of body partial-body sends: f.Bytes, by default
// half, and at least one byte short, so that the client sees a short
// body; a body that rendered empty has nothing to cut.
func partialCut(f *scenarios.Fault, body []byte) int {
	n := f.Bytes
	if n < 0 {
		n = len(body) / 2
	}
	return max(0, min(n, len(body)-1))
}

// underHeaders adds to h the fields of under that h does not set: the
// answer's own headers win over those already in the writer, as when
// net/http writes the answer.
func underHeaders(h, under http.Header) {
	for name, vs := range under {
		if _, ok := h[name]; !ok {
			h[name] = vs
		}
	}
}

// writeHead writes the status line and header of rec on a hijacked
// connection, as net/http would have (sorted names, a Date).
func (s *Server) writeHead(buf io.Writer, rec *recorder) {
	text := http.StatusText(rec.status)
	if text == "" {
		text = "status code " + strconv.Itoa(rec.status)
	}
	fmt.Fprintf(buf, "HTTP/1.1 %03d %s\r\n", rec.status, text)
	if _, ok := rec.header["Date"]; !ok {
		rec.header["Date"] = []string{s.opts.Clock.Now().UTC().Format(http.TimeFormat)}
	}
	_ = rec.header.Write(buf)
	_, _ = io.WriteString(buf, "\r\n")
}

// slowBody sends the answer whole, its body in f.Chunks pieces spread
// over f.Over: the status line and headers at once, then a piece after
// each interval.
func (s *Server) slowBody(x *exchange) {
	f, body := x.fault, x.rec.body
	n := max(1, min(f.Chunks, len(body)))
	step := f.Over / time.Duration(n)
	i := 0
	s.paced(x, 0, func(off int) (int, time.Duration) {
		i++
		return (i*len(body))/n - off, step
	}, "slow body")
}

// shaped sends the answer whole as a shaping fault says (bandwidth,
// latency, slice): what changes is only when its bytes arrive.
func (s *Server) shaped(x *exchange) {
	f := x.fault
	switch f.Kind {
	case scenarios.Bandwidth:
		// Pieces of a tenth of a second's worth: the body takes
		// len/rate, paced evenly, whatever its size.
		size := max(1, f.Rate/10)
		step := time.Duration(size) * time.Second / time.Duration(f.Rate)
		s.paced(x, 0, func(int) (int, time.Duration) { return size, step }, "bandwidth-limited body")
	case scenarios.Latency:
		wait := latencyOf(f, s.opts.Rand)
		if f.On == scenarios.Whole {
			s.paced(x, 0, func(off int) (int, time.Duration) { return len(x.rec.body) - off, wait }, "latency")
			return
		}
		s.paced(x, wait, nil, "latency")
	case scenarios.Slice:
		first := true
		s.paced(x, 0, func(int) (int, time.Duration) {
			if first {
				first = false
				return f.Size, 0
			}
			return f.Size, f.Gap
		}, "sliced body")
	}
}

// latencyOf draws a latency fault's wait: f.Latency, give or take
// f.Jitter, evenly; a jitter of 0 draws nothing.
func latencyOf(f *scenarios.Fault, random func() float64) time.Duration {
	if f.Jitter <= 0 {
		return f.Latency
	}
	return f.Latency - f.Jitter + time.Duration(random()*float64(2*f.Jitter))
}

// uploadTime is how long a bandwidth fault takes to take a request body
// of n bytes; a wait before the route runs, as if the body arrived that
// slowly.
func uploadTime(f *scenarios.Fault, n int) time.Duration {
	if f == nil || f.Kind != scenarios.Bandwidth || n == 0 {
		return 0
	}
	return time.Duration(n) * time.Second / time.Duration(f.Rate)
}

// paced sends the answer whole through w, in time: nothing for head,
// then the status line and headers (journaled just before), then the
// body, piece(off) giving how many bytes from off come next and how long
// before them (nil: the body at once). The waits are a delay's: the
// client leaving ends them, and so does shutdown unless
// WaitDelaysOnShutdown; the connection is then closed mid-answer.
func (s *Server) paced(x *exchange, head time.Duration, piece func(off int) (int, time.Duration), what string) {
	w, rec := x.w, &x.rec
	body := rec.body
	ctx, release := s.stopContext(x.r, s.opts.WaitDelaysOnShutdown)
	defer release()
	pause := func(d time.Duration) {
		// Each write has its own WriteTimeout, after its wait.
		s.writeWindow(w, d)
		if d <= 0 || s.opts.Clock.Wait(ctx, d) {
			return
		}
		x.out.ended = "client gone during " + what
		if errors.Is(context.Cause(ctx), errShutdown) {
			x.out.ended = what + " cut by shutdown"
		}
		s.record(x) // once: before the head, nothing was sent yet
		panic(http.ErrAbortHandler)
	}
	pause(head)
	h := w.Header()
	if !rec.inW {
		for name, vs := range rec.header {
			h[name] = vs
		}
	}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	x.out.status = rec.status
	s.record(x)
	w.WriteHeader(rec.status)
	rc := http.NewResponseController(w)
	if piece == nil {
		_, _ = w.Write(body)
		return
	}
	_ = rc.Flush()
	for off := 0; off < len(body); {
		n, d := piece(off)
		pause(d)
		n = max(1, min(n, len(body)-off))
		_, _ = w.Write(body[off : off+n])
		_ = rc.Flush()
		off += n
	}
}
