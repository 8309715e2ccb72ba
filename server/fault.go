package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
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
	case scenarios.PartialBody, scenarios.MalformedChunk, scenarios.SlowBody:
		return rec.status
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
func (s *Server) writeHead(buf *bufio.ReadWriter, rec *recorder) {
	text := http.StatusText(rec.status)
	if text == "" {
		text = "status code " + strconv.Itoa(rec.status)
	}
	fmt.Fprintf(buf, "HTTP/1.1 %03d %s\r\n", rec.status, text)
	if _, ok := rec.header["Date"]; !ok {
		rec.header["Date"] = []string{s.opts.Clock.Now().UTC().Format(http.TimeFormat)}
	}
	_ = rec.header.Write(buf)
	_, _ = buf.WriteString("\r\n")
}

// slowBody sends the answer whole, its body in f.Chunks pieces spread
// over f.Over: the status line and headers at once (journaled just
// before), then a piece after each interval. The intervals are waits like
// a delay's: the client leaving ends them, and so does shutdown unless
// WaitDelaysOnShutdown; the connection is then closed mid-body.
func (s *Server) slowBody(x *exchange) {
	f, w, rec := x.fault, x.w, &x.rec
	body := rec.body
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
	_ = rc.Flush()
	n := max(1, min(f.Chunks, len(body)))
	ctx, release := s.stopContext(x.r, s.opts.WaitDelaysOnShutdown)
	defer release()
	for i := range n {
		// Each piece has its own WriteTimeout, after its interval.
		s.writeWindow(w, f.Over/time.Duration(n))
		if !s.opts.Clock.Wait(ctx, f.Over/time.Duration(n)) {
			x.out.ended = "client gone during slow body"
			if errors.Is(context.Cause(ctx), errShutdown) {
				x.out.ended = "slow body cut by shutdown"
			}
			panic(http.ErrAbortHandler)
		}
		_, _ = w.Write(body[i*len(body)/n : (i+1)*len(body)/n])
		_ = rc.Flush()
	}
}
