package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/scenariomock/scenariomock/matcher"
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

// faultAttrs name the fault on the request's log line, where the journal
// finds it too.
func faultAttrs(f *scenarios.Fault, extra ...slog.Attr) []slog.Attr {
	return append(extra, slog.String("fault", string(f.Kind)), slog.String("fault_after", string(f.After)))
}

// respondFaulted answers a request to a route without an idempotency
// block whose response faults. After processing, the route runs as it
// would to answer (collection operation, save) and its answer is then
// lost; at arrival nothing is written, and the answer is rendered only
// for a kind that sends part of it.
func (s *Server) respondFaulted(w http.ResponseWriter, r *http.Request, in *matcher.Request, m matcher.Match, p *prepared, call int64, f *scenarios.Fault, route string, delay time.Duration, start time.Time) {
	var rec *recorder
	if f.After == scenarios.AfterProcessing || f.SendsAnswer() {
		rec = &recorder{header: http.Header{}}
		ctx := r.Context()
		d := s.templateData(ctx, in, m, call)()
		processing := f.After == scenarios.AfterProcessing
		err := s.produce(ctx, rec, p, d, !processing)
		if err == nil && processing && p.src.Save != nil {
			// As in respondStored: the answer exists, whoever hangs up.
			err = s.save(context.WithoutCancel(ctx), p, d, rec)
		}
		if err != nil {
			err = fmt.Errorf("route %q: %w", route, err)
			writeProblem(w, newProblem(statusOf(err), err.Error()))
			s.logProblem(r, route, statusOf(err), delay, start, faultAttrs(f, slog.String("error", err.Error()))...)
			return
		}
		if processing {
			// Processed, then the answer is lost: its events go.
			s.commitEvents(ctx, in, m, call, rec.status, rec.header, rec.body.Bytes())
		}
	}
	s.deliverFault(w, r, route, f, rec, delay, start)
}

// deliverFault breaks the exchange as f says and writes the request's log
// line. rec is the answer, for the kinds that send (part of) it and for
// any kind after processing; nil otherwise. A hang and an interrupted
// slow body end the handler by aborting, which closes the connection (on
// HTTP/2, resets the stream).
//
// The headers already in w (CORS) go with whatever status line a fault
// sends, under the answer's own, as they would with the answer: a
// browser's fetch then sees the broken body rather than a CORS error.
func (s *Server) deliverFault(w http.ResponseWriter, r *http.Request, route string, f *scenarios.Fault, rec *recorder, delay time.Duration, start time.Time, extra ...slog.Attr) {
	status := 0 // no HTTP answer, or the status line of the one cut short
	var err error
	switch f.Kind {
	case scenarios.Hang:
		// Never answer; the client leaving or shutdown (always, whatever
		// WaitDelaysOnShutdown says: a hang is not work to finish) ends it.
		ctx, release := s.stopContext(r, false)
		<-ctx.Done()
		outcome := "client gone during hang"
		if errors.Is(context.Cause(ctx), errShutdown) {
			outcome = "hang ended by shutdown"
		}
		release()
		s.logRequest(r, route, 0, delay, start, faultAttrs(f, append(extra, slog.String("outcome", outcome))...)...)
		panic(http.ErrAbortHandler)
	case scenarios.SlowBody:
		s.slowBody(w, r, route, f, rec, delay, start, extra)
		return
	default:
		if r.ProtoMajor >= 2 {
			// HTTP/2 has no connection of a request's own to break: the
			// nearest is to reset the request's stream (RST_STREAM,
			// INTERNAL_ERROR), which aborting the handler does, once the
			// kind has sent what it sends and the request is logged. The
			// connection and its other streams go on.
			status = s.breakStream(w, f, rec)
			s.logRequest(r, route, status, delay, start, faultAttrs(f, extra...)...)
			panic(http.ErrAbortHandler)
		}
		status, err = s.breakConnection(w, f, rec)
	}
	if err != nil {
		writeProblem(w, newProblem(http.StatusInternalServerError, err.Error()))
		s.logProblem(r, route, http.StatusInternalServerError, delay, start, faultAttrs(f, append(extra, slog.String("error", err.Error()))...)...)
		return
	}
	s.logRequest(r, route, status, delay, start, faultAttrs(f, extra...)...)
}

// breakConnection takes the connection from net/http and ends it as f
// says, after writing what the kind sends. It returns the status line it
// wrote, 0 for none.
func (s *Server) breakConnection(w http.ResponseWriter, f *scenarios.Fault, rec *recorder) (int, error) {
	if rec != nil {
		// They cannot be read once the connection is taken.
		underHeaders(rec.header, w.Header())
	}
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return 0, fmt.Errorf("fault %s: %w", f.Kind, err)
	}
	defer conn.Close()
	status := 0
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
		return 0, nil
	case scenarios.RandomData:
		junk := make([]byte, 512)
		for i := range junk {
			junk[i] = byte(s.opts.Rand() * 256)
		}
		_, _ = buf.Write(junk)
	case scenarios.PartialBody:
		body := rec.body.Bytes()
		rec.header["Content-Length"] = []string{strconv.Itoa(len(body))}
		status = rec.status
		s.writeHead(buf, rec)
		_, _ = buf.Write(body[:partialCut(f, body)])
	case scenarios.MalformedChunk:
		body := rec.body.Bytes()
		delete(rec.header, "Content-Length")
		rec.header["Transfer-Encoding"] = []string{"chunked"}
		status = rec.status
		s.writeHead(buf, rec)
		// "zz" is no hexadecimal size: the chunked reader fails there.
		_, _ = buf.WriteString("zz\r\n")
		_, _ = buf.Write(body[:len(body)/2])
		_, _ = buf.WriteString("\r\n")
	}
	_ = buf.Flush()
	return status, nil
}

// breakStream sends on an HTTP/2 stream what f's kind sends before the
// stream is reset, through w (there is no connection to take), and
// returns the status it sent, 0 for none. partial-body declares the whole
// length and sends a part; malformed-chunk, HTTP/2 having no chunks to
// garble, sends the status, headers and half the body; the others send
// nothing: random bytes cannot be put on a stream, only in frames.
func (s *Server) breakStream(w http.ResponseWriter, f *scenarios.Fault, rec *recorder) int {
	var body []byte
	switch f.Kind {
	case scenarios.PartialBody:
		body = rec.body.Bytes()
		rec.header["Content-Length"] = []string{strconv.Itoa(len(body))}
		body = body[:partialCut(f, body)]
	case scenarios.MalformedChunk:
		body = rec.body.Bytes()
		delete(rec.header, "Content-Length")
		body = body[:len(body)/2]
	default:
		return 0
	}
	h := w.Header()
	for name, vs := range rec.header {
		h[name] = vs
	}
	w.WriteHeader(rec.status)
	_, _ = w.Write(body)
	_ = http.NewResponseController(w).Flush()
	return rec.status
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

// slowBody sends rec whole, its body in f.Chunks pieces spread over
// f.Over: the status line and headers at once, then a piece after each
// interval. The intervals are waits like a delay's: the client leaving
// ends them, and so does shutdown unless WaitDelaysOnShutdown; the
// connection is then closed mid-body.
func (s *Server) slowBody(w http.ResponseWriter, r *http.Request, route string, f *scenarios.Fault, rec *recorder, delay time.Duration, start time.Time, extra []slog.Attr) {
	body := rec.body.Bytes()
	h := w.Header()
	for name, vs := range rec.header {
		h[name] = vs
	}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(rec.status)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	n := max(1, min(f.Chunks, len(body)))
	ctx, release := s.stopContext(r, s.opts.WaitDelaysOnShutdown)
	defer release()
	for i := range n {
		if !s.opts.Clock.Wait(ctx, f.Over/time.Duration(n)) {
			outcome := "client gone during slow body"
			if errors.Is(context.Cause(ctx), errShutdown) {
				outcome = "slow body cut by shutdown"
			}
			s.logRequest(r, route, rec.status, delay, start, faultAttrs(f, append(extra, slog.String("outcome", outcome))...)...)
			panic(http.ErrAbortHandler)
		}
		_, _ = w.Write(body[i*len(body)/n : (i+1)*len(body)/n])
		_ = rc.Flush()
	}
	s.logRequest(r, route, rec.status, delay, start, faultAttrs(f, extra...)...)
}
