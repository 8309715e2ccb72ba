package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/scenariomock/scenariomock/record"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/upstream"
)

// proxyUnmatchedRoute names the upstream of --proxy-unmatched in the log
// and the journal.
const proxyUnmatchedRoute = "(proxy)"

// prepareProxy builds the upstream target of a proxied response. The
// scenario decoder has checked the URL and the headers with their
// positions; an error here is one it let through, answered per request.
func prepareProxy(p *prepared, px *scenarios.Proxy) {
	set := make(map[string]string, len(px.Set))
	for _, h := range px.Set {
		set[h.Name] = h.Value
	}
	// The session header is the mock's own, as the /__session/ prefix is
	// (taken off before routing): it is not sent on to a real upstream,
	// unless the route sets it.
	remove := append([]string{SessionHeader}, px.Remove...)
	p.target, p.targetErr = upstream.NewTarget(upstream.Config{URL: px.URL, Timeout: px.Timeout, Set: set, Remove: remove})
	if p.targetErr != nil {
		p.targetErr = fmt.Errorf("proxy %s (%s): %w", px.URL, px.Pos, p.targetErr)
	}
}

// unmatchedProxy returns the response that forwards what no route
// matched to rawURL (--proxy-unmatched), nil for none.
func unmatchedProxy(rawURL string) (*prepared, error) {
	if rawURL == "" {
		return nil, nil
	}
	if _, err := upstream.ParseURL(rawURL); err != nil {
		return nil, fmt.Errorf("proxy-unmatched: %w", err)
	}
	p := prepare(&scenarios.Response{Status: http.StatusOK, Proxy: &scenarios.Proxy{URL: rawURL}})
	if p.targetErr != nil {
		return nil, fmt.Errorf("proxy-unmatched: %w", p.targetErr)
	}
	return p, nil
}

// checkLoops refuses a set whose routes proxy to this server's own
// listener (set when Serve starts; nothing to check before): the request
// would come back and be forwarded again. Each such route is a problem at
// its proxy: field. Upstreams named by a host name that would need
// resolving are caught per request instead (a 508, upstream.Looped).
func (s *Server) checkLoops(routes []*scenarios.Route) error {
	addrs := s.listening.Load()
	if addrs == nil {
		return nil
	}
	var errs []error
	for _, r := range routes {
		for _, resp := range r.Responses {
			if resp.Proxy == nil {
				continue
			}
			for _, a := range *addrs {
				if upstream.PointsAt(resp.Proxy.URL, a) {
					errs = append(errs, &scenarios.Error{Pos: resp.Proxy.Pos, Msg: fmt.Sprintf(
						"route %q: respond.proxy: %s is this mock's own address (it listens on %s): every request would be forwarded back to it", r.Name, resp.Proxy.URL, a)})
					break
				}
			}
		}
	}
	if s.unmatchedProxy != nil {
		for _, a := range *addrs {
			if u := s.opts.ProxyUnmatched; upstream.PointsAt(u, a) {
				errs = append(errs, fmt.Errorf("proxy-unmatched (record's --target): %s is this mock's own address (it listens on %s): every request no route matches would be forwarded back to it", u, a))
				break
			}
		}
	}
	return errors.Join(errs...)
}

// listen records the addresses the server listens on, for checkLoops, and
// checks the scenarios being served against them.
func (s *Server) listen(lns ...net.Listener) error {
	var addrs []net.Addr
	for _, ln := range lns {
		if ln != nil {
			addrs = append(addrs, ln.Addr())
		}
	}
	s.listening.Store(&addrs)
	var routes []*scenarios.Route
	for _, rt := range s.snap.Load().routes {
		routes = append(routes, rt.route.Route)
	}
	return s.checkLoops(routes)
}

// forward is produce's arm for a proxied response: it sends the request
// to the upstream and keeps its answer. An answer that is sent as it
// comes (no fault, no idempotency claim, no recording, no events) and is
// not small stays on the upstream's connection and deliver streams it
// (answerProxied); any other is read whole into x.rec (bounded by
// Options.MaxBody), so that a fault can cut or throw it away, the claim
// can store it, the recorder keep it and the events carry it, exactly as
// a canned answer. Past MaxBody, one held only for the recorder or the
// events is streamed after all.
//
// A small answer (a declared length up to smallProxied) is read whole
// too, straight into w's header and the connection's buffer: the upstream's
// connection goes back to the pool before the client is written to, and
// the answer is then written at once rather than piece by piece, under one
// write deadline.
//
// A fault after processing thus reads the upstream's whole answer first:
// the upstream did the work, and the client never hears of it.
func (s *Server) forward(x *exchange) {
	p := x.p
	if p.targetErr != nil {
		x.fail(p.targetErr)
		return
	}
	x.out.proxied = true
	// The upstream's answer has its own timeout; the client's write
	// deadline counts from that answer (and, streamed, from each piece).
	holdWrites(x.w)
	defer s.writeWindow(x.w, 0)
	// The body was read before matching; the upstream gets it again.
	ctx := x.ctx
	if ctx.Done() == nil {
		// Detached (onClientAbort: complete), a context that never ends:
		// the forward outlives the client, not the server. It ends when
		// shutdown gives up on the requests still running, as their
		// delays do; an upstream that kept sending held the handler, and
		// the upstream's connection, after Serve had returned.
		if base := s.abort.Load(); base != nil {
			ctx = *base
		}
	}
	// Waiting for the upstream's answer is waiting, as a delay is: when
	// shutdown begins it ends (unless WaitDelaysOnShutdown), and the
	// request with it. Once the answer is in hand, sending it is writing,
	// which ShutdownTimeout bounds.
	ctx, waited := s.upstreamWait(x, ctx)
	resp, err := s.proxy.DoBody(ctx, x.r, x.body, p.target)
	if err != nil {
		x.out.upstream = p.target.URL()
		s.forwardFailed(x, ctx, err)
		return
	}
	x.out.upstream, x.out.upstreamStatus, x.out.upstreamLatency = resp.Upstream, resp.Status, resp.Latency
	if x.snap.cors != nil {
		corsOverUpstream(x, resp.Header)
	}
	// An answer its operation checks (checkAnswer) is held too.
	checks := x.rt != nil && x.rt.op != nil && x.rt.op.Mode() != "off"
	// So is the answer of a route with events, whose data.object it is:
	// streamed, it sent none.
	events := x.rt != nil && len(x.m.Route.Events) > 0
	hold := x.claimed || x.fault != nil || s.opts.Recorder != nil || checks || events
	// Held only to be seen (by the recording, or the events), an answer
	// larger than MaxBody is not refused: the client gets it streamed,
	// the recording counts it as skipped (as the recorder does a body
	// over its own bound), and the route sends no events.
	seenOnly := hold && !x.claimed && x.fault == nil && !checks
	// A HEAD's declared length is the GET's: it has no body to hold.
	tooLarge := seenOnly && resp.ContentLength > s.opts.MaxBody && x.r.Method != http.MethodHead
	if !hold && (resp.ContentLength < 0 || resp.ContentLength > smallProxied) || tooLarge {
		if !waited() {
			resp.Discard()
			x.abort("upstream wait cancelled by shutdown")
			return
		}
		if tooLarge && s.opts.Recorder != nil {
			s.opts.Recorder.Skip()
		}
		x.upstream = resp
		x.kind, x.produced = answerProxied, true
		return
	}
	rec := &x.rec
	if hold {
		rec.apart(x)
	} else {
		rec.direct(x.w.Header())
	}
	body, err := readAtMost(resp.Body, rec.buf[:0], int(s.opts.MaxBody))
	rec.buf = body
	if !waited() && err != nil {
		resp.Discard()
		s.forwardFailed(x, ctx, err)
		return
	}
	if seenOnly && errors.Is(err, errUpstreamTooLarge) {
		// Of unknown length: what was read goes first, then the rest.
		if s.opts.Recorder != nil {
			s.opts.Recorder.Skip()
		}
		resp.Body = readBody{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
		x.upstream = resp
		x.kind, x.produced = answerProxied, true
		return
	}
	resp.Discard()
	if err != nil {
		// A read the upstream broke off or stalled is already an
		// *upstream.Error (a 502, or a 504 past the route's timeout);
		// wrapped again, it named the upstream twice and a stall was a 502.
		var ue *upstream.Error
		if !errors.As(err, &ue) {
			err = &upstream.Error{Upstream: resp.Upstream, Status: http.StatusBadGateway, Cause: err.Error(), Err: err}
		}
		s.forwardFailed(x, ctx, err)
		return
	}
	for name, vs := range resp.Header { // once the body is in: a 502 would not carry them
		rec.header[name] = vs
	}
	rec.status, rec.body, rec.key = resp.Status, body, x.p.src.Idempotency
	rec.trailer = resp.Trailers() // the body is in: the transport has filled them
	if checks && !s.checkAnswer(x, resp.Upstream) {
		return
	}
	x.kind, x.produced = answerRecorded, true
}

// upstreamWait returns ctx, ended also when shutdown begins unless
// WaitDelaysOnShutdown, for the wait for the upstream's answer. waited
// unhooks it from shutdown once the answer is in hand (it is then
// written as any answer, within ShutdownTimeout) and reports whether
// shutdown came first: the answer is then cut, and thrown away. The
// context itself ends with the exchange (x.release), for the body
// streamed under it.
func (s *Server) upstreamWait(x *exchange, ctx context.Context) (_ context.Context, waited func() bool) {
	if s.opts.WaitDelaysOnShutdown {
		return ctx, func() bool { return true }
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(s.stopping, func() { cancel(errShutdown) })
	release := x.release
	x.release = func() {
		cancel(nil)
		if release != nil {
			release()
		}
	}
	return ctx, stop
}

// forwardFailed ends a forward that err broke off. A client that left,
// or shutdown, ends it as it ends a delay: without an answer, which no
// one would read (net/http's client sees its connection close), and
// journaled with no status rather than as the upstream's 502. Any other
// failure is the upstream's: a 502 or 504 problem naming it.
func (s *Server) forwardFailed(x *exchange, ctx context.Context, err error) {
	var ue *upstream.Error
	switch {
	case errors.Is(context.Cause(ctx), errShutdown):
		x.abort("upstream wait cancelled by shutdown")
	case errors.As(err, &ue) && ue.ClientGone:
		x.abort("client gone during upstream wait")
	default:
		x.fail(err)
	}
}

// corsOverUpstream makes the mock's CORS answer the browser on a proxied
// route whose policy applies (match set its headers in w): the upstream's
// own Access-Control-* fields are dropped from h, the upstream's answer,
// which is copied over w's header, and its Vary keeps Origin. The browser
// talks to the mock's origin; what the upstream allows for its own is
// beside the point. Where the mock does no CORS (no policy for the
// route), the upstream's fields pass through as any other.
func corsOverUpstream(x *exchange, h http.Header) {
	if len(x.r.Header["Origin"]) == 0 || x.rt != nil && x.rt.cors == nil {
		return
	}
	for name := range h {
		if strings.HasPrefix(name, "Access-Control-") {
			delete(h, name)
		}
	}
	if vary, ok := h["Vary"]; ok && !slices.Contains(vary, "Origin") {
		h["Vary"] = append(slices.Clip(vary), "Origin")
	}
}

// readBody is an upstream's body of which a part was read already.
type readBody struct {
	io.Reader
	io.Closer
}

// smallProxied is the largest declared length of an upstream's answer
// that forward reads whole even when it could stream it.
const smallProxied = 32 << 10

// errUpstreamTooLarge: an answer to hold (fault, idempotency, recording)
// is larger than Options.MaxBody.
var errUpstreamTooLarge = errors.New("answer too large to hold")

// readAtMost appends r's bytes to buf, failing past limit.
func readAtMost(r io.Reader, buf []byte, limit int) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return buf, fmt.Errorf("%w: more than %d bytes (--max-body); it can only be streamed, without fault or idempotency", errUpstreamTooLarge, limit)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// deliverProxied streams an upstream's answer to the client, journaled
// first like any answer. An upstream that breaks off mid-body breaks the
// client's answer too (the handler aborts): a chunked answer must not end
// cleanly and look whole.
func (s *Server) deliverProxied(x *exchange) {
	resp := x.upstream
	x.out.status = resp.Status
	s.record(x) // journals the upstream's head from x.upstream
	x.upstream = nil
	if _, err := resp.StreamTo(x.w, s.opts.WriteTimeout); err != nil {
		x.out.ended = "proxied answer cut: " + err.Error()
		panic(http.ErrAbortHandler)
	}
}

// recordProxied hands a proxied exchange whose answer was held to the
// recorder (serve --record, scenariomock record): commit's last effect,
// once the answer exists. One with no upstream answer to record (a 502
// or 504, a loop's 508, an answer refused by its operation, a client
// gone or shutdown during the wait) is counted as skipped, as one too
// large to hold is (forward counted that one, which it streamed): the
// recording's skipped are the forwarded exchanges it does not hold.
func (s *Server) recordProxied(x *exchange) {
	if s.opts.Recorder == nil || !x.out.proxied {
		return
	}
	if !x.produced || x.kind != answerRecorded {
		if x.kind != answerProxied {
			s.opts.Recorder.Skip()
		}
		return
	}
	s.opts.Recorder.Add(record.Exchange{
		Method:        x.r.Method,
		Path:          x.r.URL.EscapedPath(),
		RawQuery:      x.r.URL.RawQuery,
		RequestHeader: x.r.Header,
		RequestBody:   x.body,
		Status:        x.rec.status,
		Header:        x.rec.header,
		Body:          x.rec.body,
		Latency:       x.out.upstreamLatency,
	}) // Add copies what it keeps
}
