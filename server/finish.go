package server

import (
	"errors"
	"log/slog"
	"time"

	"github.com/scenariomock/scenariomock/internal/loghandler"
	"github.com/scenariomock/scenariomock/journal"
	"github.com/scenariomock/scenariomock/state"
)

// record makes the request's outcome known to everyone who asks: it
// appends the journal entry (GET /__admin/requests, /count, verify, every
// replica on a shared store) and counts a miss. deliver calls it just
// before the first byte of the answer, or of its fault, goes out, so that
// a client that has seen its answer always finds its request counted;
// finish calls it for a request that ended otherwise. A request is
// recorded once. The entry's duration is the time to this point, before
// the answer is written.
func (s *Server) record(x *exchange) {
	if x.recorded {
		return
	}
	x.recorded = true
	if s.epochNow() != x.epoch {
		return // a straggler of the state a reset forgot (fence.go)
	}
	o := &x.out
	if o.unmatched {
		s.unmatched.Add(1)
	}
	if x.rt != nil {
		x.rt.requests.count(x)
	}
	if !s.journalOn() {
		return
	}
	r := x.r
	e := &x.entry
	e.Time = x.start
	e.Method = r.Method
	e.Path = r.URL.Path
	e.Query = r.URL.RawQuery
	// Not a copy: Append copies what it keeps (the memory journal into
	// one pointer-free buffer per entry, a remote one into JSON), and
	// redacts the credentials, the answer's too, as it copies them.
	e.Headers = r.Header
	e.Redact = nil
	if !s.opts.JournalKeepsSecrets {
		e.Redact = journal.Secrets{}
	}
	switch {
	case len(x.body) > 0:
		keep := min(len(x.body), s.opts.JournalBodyLimit)
		// The body's buffer goes back to a pool after the request, but
		// Append copies it before it returns.
		e.Body = x.body[:keep]
		e.BodySize = int64(len(x.body))
		e.BodyTruncated = keep < len(x.body)
	case o.refused:
		// A refused body is not kept; the size is the one declared, or,
		// for a chunked body, unknown (0), but it was cut all the same.
		e.BodySize = max(r.ContentLength, 0)
		e.BodyTruncated = true
	}
	e.Route = o.route
	e.Matched = o.route != "" && !o.unmatched && !o.catchAll
	e.CatchAll = o.catchAll
	e.Session = o.session
	if len(o.near) > 0 {
		e.NearMisses = make([]state.NearMiss, len(o.near))
		for i, n := range o.near {
			e.NearMisses[i] = state.NearMiss{Route: n.Route, Reason: n.Reason}
		}
	}
	e.Status = o.status
	e.DelayMs = millis(o.delay)
	x.took = s.since(x.start)
	e.DurationMs = millis(x.took)
	e.Idempotency = o.idem
	if o.fault != nil {
		e.Fault, e.FaultAfter = string(o.fault.Kind), string(o.fault.After)
	}
	if o.proxied {
		e.Proxied, e.Upstream, e.UpstreamStatus, e.UpstreamMs = true, o.upstream, o.upstreamStatus, millis(o.upstreamLatency)
	}
	if o.stateMoved {
		e.State = &o.moved // Append copies it
	}
	e.Response = s.journalResponse(x)
	// Not the request's context: an entry is kept when the client has
	// left, and a remote journal must not drop it for that.
	if err := s.state.Journal().Append(x.detached(), e); errors.Is(err, state.ErrFenced) {
		return // a reset came between the check above and the append
	} else if err != nil {
		s.log.Warn("request not journaled", "method", r.Method, "path", r.URL.Path, "error", err.Error())
	}
}

// finish ends a request: it records it if deliver did not (a stage
// panicked), ends what the stages left running (a detached context, a
// claim), and writes the one log line each request gets, from x.out.
// serveScenario defers it, so it also runs when a stage aborts the
// handler (http.ErrAbortHandler).
func (s *Server) finish(x *exchange) {
	if x.finished {
		return
	}
	x.finished = true
	if x.upstream != nil {
		x.upstream.Discard() // a stage panicked before deliver streamed it
		x.upstream = nil
	}
	if x.release != nil {
		x.release()
	}
	s.releaseClaim(x)
	s.record(x)
	s.logLine(x)
}

// logLine writes the request's log line: the outcome's fields as
// attributes, in one order (method, path, route, status, duration_ms,
// delay_ms, idempotency, outcome, error, fault, fault_after, state, near), at
// warn for a request that went wrong. A line with no more than the
// idempotency outcome, at info, is formatted directly by a loghandler.Handler
// (HandleRequest); the others go through a slog.Record.
func (s *Server) logLine(x *exchange) {
	level := slog.LevelInfo
	if x.out.problemish() {
		level = slog.LevelWarn
	}
	h := s.log.Handler()
	ctx := x.r.Context()
	if !h.Enabled(ctx, level) {
		return
	}
	// The line's time is the start's plus the monotonic time since: one
	// clock read, not two (clock.go); none when record read it just before
	// a small answer went into net/http's buffer (deliver), which sends it
	// only after the handler returns.
	took := x.took
	if !x.written || took == 0 {
		took = s.since(x.start)
	}
	s.logOutcome(h, level, x, x.start.Add(took), false)
}

// logOutcome writes x's log line at now with h; viaRecord forces the
// slog.Record path (for tests that hold the two equal).
func (s *Server) logOutcome(h slog.Handler, level slog.Level, x *exchange, now time.Time, viaRecord bool) {
	r, o := x.r, &x.out
	ctx := r.Context()
	debug := h.Enabled(ctx, slog.LevelDebug)
	plain := o.ended == "" && o.err == nil && o.fault == nil && !(o.unmatched && o.route == "") && !o.stateMoved
	if lh, ok := h.(*loghandler.Handler); ok && level == slog.LevelInfo && !debug && plain && !viaRecord {
		var routeText []byte // formatted once, when o.route is the route's name
		if x.rt != nil && o.route == x.rt.route.Name {
			routeText = x.rt.logName
		}
		_ = lh.HandleRequest(now, r.Method, r.URL.Path, o.route, routeText, o.status, now.Sub(x.start), o.delay, o.idem)
		return
	}
	rec := slog.NewRecord(now, level, requestMsg, 0)
	rec.AddAttrs(
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.String("route", o.route),
		slog.Int("status", o.status),
		slog.Float64("duration_ms", millis(now.Sub(x.start))),
	)
	if o.delay > 0 {
		rec.AddAttrs(slog.Float64("delay_ms", millis(o.delay)))
	}
	if o.idem != "" {
		rec.AddAttrs(slog.String("idempotency", o.idem))
	}
	if o.ended != "" {
		rec.AddAttrs(slog.String("outcome", o.ended))
	}
	if o.err != nil {
		rec.AddAttrs(slog.String("error", o.err.Error()))
	}
	if o.fault != nil {
		rec.AddAttrs(slog.String("fault", string(o.fault.Kind)), slog.String("fault_after", string(o.fault.After)))
	}
	if o.stateMoved {
		rec.AddAttrs(slog.String("state", describeMove(o.moved)))
	}
	if o.unmatched && o.route == "" {
		rec.AddAttrs(slog.String("near", nearMisses(o.near)))
	}
	if debug {
		rec.AddAttrs(requestDetails(r, x.body)...)
	}
	_ = h.Handle(ctx, rec)
}
