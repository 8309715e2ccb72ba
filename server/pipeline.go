package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/scenariomock/scenariomock/internal/contentcoding"
	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/webhooks"
)

// serveScenario answers a request that is not for the admin API: it reads
// the body, matches a route (match answers CORS preflights and misses),
// and hands a matched request to serveRoute. Whatever happens, finish
// logs it once.
func (s *Server) serveScenario(w http.ResponseWriter, r *http.Request) {
	start := s.opts.Clock.Now()
	snap := s.snap.Load()
	x := s.exchangeFor(w, r, start, snap)
	defer x.end()
	if r.Body != nil && r.Body != http.NoBody {
		bp := bodyBuffers.Get().(*[]byte)
		// Nothing holds on to the body once the answer is written:
		// matching, templates, sequence keys and the journal copy what
		// they keep. finish runs before this (deferred after it).
		defer putBody(bp, x)
		body, err := s.readBody(w, r, *bp)
		if err != nil {
			defer s.finish(x)
			s.refuseBody(x, err)
			return
		}
		x.body = body
	}
	x.epoch = s.epochNow() // arrived: once the body is in
	defer s.finish(x)
	if s.match(x) {
		s.serveRoute(x)
	}
}

// match finds the route for the request, and answers what no route
// runs for: a CORS preflight, a miss (the fallback runs as a route). It
// reports whether a route took the request.
func (s *Server) match(x *exchange) bool {
	w, r, snap := x.w, x.r, x.snap
	x.req = *matcher.NewRequest(r, x.body) // in the exchange: no allocation
	in := &x.req
	in.Session = sessionOf(r)
	x.out.session = in.Session
	x.matchStates(snap.table, in)
	x.states.preflight = snap.cors != nil && isPreflight(r) // answered below, unless by a route written for OPTIONS
	m, ok := x.matchRoute(snap.table, in)
	if !ok && r.Method == http.MethodHead {
		// HEAD is GET without the body (RFC 9110 §9.3.2), as net/http's
		// file server and most servers answer it: a GET route answers it
		// unless a route matched HEAD itself. net/http drops the body we
		// write and keeps the Content-Length we set, so the headers are
		// GET's, Content-Length included. The call counts as the route's.
		get := r.WithContext(r.Context())
		get.Method = http.MethodGet
		asGet := matcher.NewRequest(get, x.body)
		asGet.Session = in.Session
		x.matchStates(snap.table, asGet)
		if m, ok = x.matchRoute(snap.table, asGet); ok {
			asGet.HTTP = r // templates see the method that was sent
			in = asGet
		}
	}
	x.in, x.m = in, m
	if !s.statesRead(x) {
		s.deliver(x) // a state that could not be read: no route is sure
		return false
	}
	if snap.cors != nil {
		// Preflights are answered here, before any route runs, unless a
		// route was written for OPTIONS.
		if isPreflight(r) && (!ok || !explicitOptions(m.Route.Route)) {
			s.preflight(x, snap.cors)
			return false
		}
		var rt *routeRuntime
		if ok {
			rt = snap.routes[m.Route.Index]
		}
		snap.cors.corsHeaders(w.Header(), r, rt)
	}
	if !ok {
		s.miss(x)
		return false
	}
	x.rt = snap.routes[m.Route.Index]
	x.out.route = m.Route.Name
	x.out.catchAll = m.Route.Unmatched
	return true
}

// SessionHeader names the test session a request belongs to: routes of
// a runtime document with session: NAME answer only requests that carry
// it, here or as the path prefix /__session/NAME/.
const SessionHeader = "X-Scenariomock-Session"

// sessionPrefix starts a path that names its session.
const sessionPrefix = "/__session/"

// sessionOf returns the session r carries, taking the path prefix
// /__session/NAME off its path (the routes see the rest), or else the
// header's value. A prefix whose name is not a session name is left, as
// any other path.
func sessionOf(r *http.Request) string {
	if p := r.URL.Path; strings.HasPrefix(p, sessionPrefix) {
		name, rest, _ := strings.Cut(p[len(sessionPrefix):], "/")
		if scenarios.ValidSession(name) {
			r.URL.Path, r.URL.RawPath = "/"+rest, ""
			return name
		}
	}
	if v := r.Header[SessionHeader]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// putBody returns a request body's buffer to the pool.
func putBody(bp *[]byte, x *exchange) {
	if body := x.body; cap(body) >= cap(*bp) && cap(body) <= maxPooledBody {
		*bp = body[:0]
	}
	bodyBuffers.Put(bp)
}

// serveRoute runs a request that a route (or the fallback) answers, one
// stage after another; each stage is a method over the exchange, and one
// that ends the request (a replay, a refusal, a client that left, a
// failure) sets the answer and returns false. commit and deliver run
// whatever stage ended it: commit releases a claim the request no longer
// needs, and deliver sends the answer it has, after record has put it in
// the journal.
//
// A new kind of answer is one arm in produce; a new effect of a request
// (an event, a recording) is one call in commit.
func (s *Server) serveRoute(x *exchange) {
	if s.actFor(x) && s.check(x) && s.claim(x) && s.advance(x) && s.wait(x) && s.hold(x) && s.fenceIn(x) {
		s.produce(x)
	}
	s.commit(x)
	s.fenceOut(x)
	x.unhold()
	s.deliver(x)
}

// advance moves the route's sequence for this request and picks the
// response it gets. The position moves when the request arrives, before
// any delay, so a client that gives up during the delay gets the next
// response when it retries. The fallback has no sequence (call 0).
func (s *Server) advance(x *exchange) bool {
	if x.rt == nil {
		return true
	}
	call, p, err := s.next(x.r.Context(), x.rt, x.in, x.m)
	if err != nil {
		s.unavailable(x, err)
		return false
	}
	x.call, x.p = call, p
	return true
}

// next returns the call's position in rt's sequence and the response it
// gets.
func (s *Server) next(ctx context.Context, rt *routeRuntime, in *matcher.Request, m matcher.Match) (int64, *prepared, error) {
	if !rt.shared { // no sequence: one response, whatever the count
		return rt.requests.hits.Add(1) - 1, rt.responses[0], nil
	}
	seqs := s.state.Sequences()
	seq := rt.route.Sequence
	if seq == nil || seq.Per == nil {
		n, err := seqs.Hit(ctx, rt.route.Identity)
		if err != nil || seq == nil {
			return n, rt.responses[0], err
		}
		return n, rt.pick(n), nil
	}
	key, ok := in.Attribute(seq.Per, m.Vars)
	if !ok {
		key = "\x00absent" // requests without the attribute share one sequence
	}
	pos, err := seqs.HitKey(ctx, rt.route.Identity, key)
	if err != nil {
		return 0, rt.responses[0], err
	}
	return pos.Key, rt.pick(pos.Key), nil
}

// wait draws the call's fault and delay (in that order, from
// Options.Rand, so that a seeded server repeats them) and waits the delay.
// A client that leaves during it, or shutdown (unless
// WaitDelaysOnShutdown), ends the request without an answer: returning
// would let net/http send an empty 200 that no scenario says.
//
// A request that claimed an idempotency key goes on when its client
// leaves (onClientAbort: complete, the default), as a real server that
// has started the work finishes it; the retry then finds the stored
// answer. Only shutdown stops it.
func (s *Server) wait(x *exchange) bool {
	p := x.p
	x.fault = s.faultFor(p)
	if f, ok := s.faults.pick(x.out.route, x.start, s.opts.Rand); ok {
		x.fault = f // switched on through POST /__admin/faults
	}
	// A bandwidth fault takes the request body as slowly as it sends.
	delay := pickDelay(p.src.Delay, s.opts.Rand) + uploadTime(x.fault, len(x.body))
	x.out.delay = delay
	complete := x.claimed && x.rt.idem.cfg.OnClientAbort == scenarios.Complete
	var ctx context.Context
	switch {
	case delay > 0 && complete:
		// Contexts only for a delay: they cost allocations and a
		// registration with the shutdown signal.
		x.ctx, x.release = s.detach(x.r.Context())
		ctx = x.ctx
	case delay > 0 && x.claimed:
		x.ctx, x.release = s.delayContext(x.r)
		ctx = x.ctx
	case delay > 0:
		var release func()
		ctx, release = s.delayContext(x.r)
		defer release()
	case complete:
		x.ctx = detached
	}
	if delay > 0 {
		// The client's time to take the answer counts from its end.
		s.writeWindow(x.w, delay)
	}
	if delay > 0 && !s.opts.Clock.Wait(ctx, delay) {
		ended := "client gone during delay"
		if errors.Is(context.Cause(ctx), errShutdown) {
			ended = "delay cancelled by shutdown"
		}
		x.abort(ended)
		return false
	}
	x.out.fault = x.fault
	return true
}

// produce makes the route's answer into x.rec: a canned or templated
// response, or a collection operation (load, list, delete) and its answer.
// It saves nothing and stores nothing: commit does, once the answer
// exists. A fault at arrival renders only what its kind sends of the
// answer, and changes nothing (a delete finds its item and leaves it).
func (s *Server) produce(x *exchange) {
	p, f := x.p, x.fault
	arrival := f != nil && f.After == scenarios.AfterArrival
	if arrival && !f.SendsAnswer() {
		return // nothing of the answer is sent: deliver breaks the exchange
	}
	if p.target != nil || p.targetErr != nil {
		s.forward(x)
		return
	}
	rec := &x.rec
	if f == nil && p.src.Op == "" && !p.saves() && (!x.claimed || p.stored != nil && p.op == nil && x.snap.cors == nil) {
		// Sent as it is rendered: straight into w's headers. A static
		// answer is stored as its prepared header says (rec.stored), so
		// one for a claimed key may be too, when w holds no CORS headers
		// for an event's template to see among the answer's.
		rec.direct(x.w.Header())
	} else {
		// Stored, saved or faulted: apart from what w already carries.
		rec.apart(x)
	}
	var err error
	if p.src.Op != "" || p.saves() {
		ctx := x.ctx
		if x.claimed && !arrival {
			// The store is written whatever the client does: a remote
			// store must not keep a key in flight because the client
			// hung up.
			ctx = x.detached()
		}
		err = s.operate(ctx, rec, p, x.templateData(), arrival)
	} else {
		err = p.render(rec, s.opts.MaxTemplateOutput, x)
	}
	if err != nil {
		x.fail(fmt.Errorf("route %q: %w", x.out.route, err))
		return
	}
	x.kind, x.produced = answerRecorded, true
}

// commit makes the request's effects permanent once its answer exists:
// it saves the items save: names (saveAlso: those with a body of their
// own) and moves the route's state (moveState, states.go), then completes the idempotency claim
// with the answer, or releases the claim (a refusal, a failure, a fault
// at arrival, a status the route does not store) so that a retry runs
// the route again. The item is saved before the key is completed, and
// only for an answer that is stored: a replay then finds both, a released
// answer saves nothing, and a save that fails (507) releases the key
// instead of storing a 201 whose item does not exist.
//
// Effects are one call each here, after the save and the claim's
// completion: the route's webhook events (sendEvents), and last the
// recording of a proxied exchange (recordProxied, deferred so that every
// way out of commit records an answer that exists).
func (s *Server) commit(x *exchange) {
	defer s.recordProxied(x) // the last effect, whatever return is taken
	f := x.fault
	if !x.produced || f != nil && f.After == scenarios.AfterArrival {
		s.releaseClaim(x)
		return
	}
	if x.claimed && !x.keeps() {
		s.releaseClaim(x)
		return
	}
	var undo []undoItem // what to take back when a later entry fails
	if p := x.p; p.src.Save != nil {
		// Saving outlives a client that hangs up now: the answer exists.
		if err := s.save(x.detached(), p, x.data, &x.rec, &undo); err != nil {
			s.releaseClaim(x)
			x.produced = false
			x.fail(fmt.Errorf("route %q: %w", x.out.route, err))
			return
		}
	}
	if p := x.p; len(p.src.Also) > 0 && x.savesAlso() {
		if err := s.saveAlso(x.detached(), p, x.templateData(), &x.rec, &undo); err != nil {
			s.unsave(x.detached(), undo)
			s.releaseClaim(x)
			x.produced = false
			x.fail(fmt.Errorf("route %q: %w", x.out.route, err))
			return
		}
	}
	// The state moves with the saves: before the key is completed, so
	// that a replay finds it moved, and not at all when the answer is
	// released.
	if err := s.moveState(x); err != nil {
		s.unsave(x.detached(), undo)
		s.releaseClaim(x)
		x.produced = false
		x.fail(err)
		return
	}
	claimed := x.claimed
	s.completeClaim(x)
	if !x.produced {
		return // the claim was lost: the client gets a 503, and no event
	}
	if s.epochNow() != x.epoch {
		return // reset since its effects landed: forgotten, and no event (fence.go)
	}
	s.sendEvents(x, claimed)
}

// savesAlso reports whether the answer's save: entries with a body of
// their own are saved: with any answer commit saves, and on a route that
// names an operation with a 2xx answer the operation made only (not a
// refusal's, a missing:'s or an undeclared status's), as its events; an
// envelope's answer by the operation's it wraps (Stripe's 402 card error
// over the declined payment intent, beside which its failed charge is
// saved).
func (x *exchange) savesAlso() bool {
	if x.p.op == nil {
		return true
	}
	status := x.rec.status
	if x.data != nil && x.data.wrapped {
		status = x.data.answeredStatus
	}
	return status >= 200 && status < 300 && (x.data == nil || !x.data.instead)
}

// keeps reports whether the answer is stored under the claimed key: as
// the response that rendered it says, or by its status class.
func (x *exchange) keeps() bool {
	switch x.rec.key {
	case scenarios.KeyStore:
		return true
	case scenarios.KeyRelease:
		return false
	}
	return x.rt.idem.cfg.Store.Has(x.rec.status)
}

// sendEvents sends the route's events for the answer just committed: a
// 2xx only, and none when a missing: or refuse: answered in its
// operation's place; then those of the save: entries that saved, each
// about its item. A replay never reaches here, so a key's events go
// once. The dispatcher keeps the body: it gets a copy, the recorder's
// being reused.
func (s *Server) sendEvents(x *exchange, claimed bool) {
	if x.rt == nil || len(x.m.Route.Events) == 0 && (x.data == nil || len(x.data.saved) == 0) || x.data != nil && x.data.instead {
		return
	}
	if webhooks.IsDelivery(x.in.HTTP.Header) {
		// A webhook endpoint whose URL leads back to a route with
		// events: each delivery would send more, without end (10,000
		// requests in 3s). The route answers; its events are not sent.
		if _, warned := s.hookLoops.LoadOrStore(x.m.Route.Name, true); !warned {
			s.log.Warn("webhook events not sent: the request is a webhook delivery (does an endpoint's url lead back to this server?)",
				"route", x.m.Route.Name)
		}
		return
	}
	ctx := x.r.Context()
	if claimed {
		ctx = detached
	}
	var before, after []byte // the object as stored before and after the request, for previous_attributes
	status, body := x.rec.status, x.rec.body
	if x.data != nil {
		before, after = x.data.item, x.data.after
		if x.data.wrapped { // an envelope's: the events see the operation's answer
			status, body = x.data.answeredStatus, x.data.answered
		}
	}
	if enc := x.rec.header.Get("Content-Encoding"); enc != "" && x.out.proxied {
		// An upstream's compressed answer: its events see the JSON.
		if dec, err := contentcoding.Decode(enc, body, int(s.opts.MaxBody)); err == nil {
			body = dec
		}
	}
	s.commitEvents(ctx, x.in, x.m, x.m.Route.Events, x.call, status, x.rec.header, bytes.Clone(body), before, after)
	if x.data != nil {
		for _, it := range x.data.saved {
			s.commitEvents(ctx, x.in, x.m, it.events, x.call, status, x.rec.header, it.after, it.before, it.after)
		}
	}
}

// templateData returns what a template rendered outside the pipeline
// (a webhook event's data) sees, made when first needed.
func (s *Server) templateData(ctx context.Context, in *matcher.Request, m matcher.Match, call int64) func() *templateData {
	return func() *templateData {
		d := newTemplateData(in, m, call, s.opts.Clock.Now(), s.env(ctx))
		d.ctx, d.maxSteps = ctx, s.opts.maxTemplateSteps
		return d
	}
}

// deliver sends the answer, or breaks the exchange as the request's fault
// says. record journals the request first: a client that has seen any
// byte of its answer (or its connection reset) finds it in the journal.
func (s *Server) deliver(x *exchange) {
	if x.fault != nil && (x.kind == answerNone || x.produced) {
		s.deliverFault(x)
		return
	}
	w := x.w
	switch x.kind {
	case answerRecorded:
		x.out.status = x.rec.status
		s.record(x)
		x.rec.writeTo(w)
		x.written = len(x.rec.body) <= smallAnswer
	case answerProxied:
		s.deliverProxied(x)
	case answerStored:
		s.replay(x)
		x.written = len(x.stored.Body) <= smallAnswer
	case answerProblem:
		x.out.status = x.problem.Status
		s.record(x)
		writeProblem(w, x.problem)
		x.written = true
	case answerAbort:
		s.record(x)
		panic(http.ErrAbortHandler)
	default:
		// A stage ended the request without an answer: a bug of ours.
		x.fail(fmt.Errorf("route %q: no answer was made", x.out.route))
		x.out.status = x.problem.Status
		s.record(x)
		writeProblem(w, x.problem)
	}
}

// smallAnswer is the largest body deliver counts as written at once:
// net/http's response buffer takes it whole (2 KiB before it chunks or
// flushes), so the write makes no system call.
const smallAnswer = 2 << 10

// unavailable answers a request whose state could not be read or written:
// a 503 rather than an answer that may be wrong.
func (s *Server) unavailable(x *exchange, err error) {
	x.w.Header().Set("Retry-After", "1")
	x.out.err = err
	// err often starts with errStore's words already: say them once.
	msg := strings.TrimPrefix(err.Error(), errStore.Error()+": ")
	x.answerProblem(newProblem(http.StatusServiceUnavailable, "The state store did not answer: "+msg))
}

// miss answers a request that no route matched: with the fallback if the
// scenarios define one, else a 404 problem naming the closest routes and
// why each failed, as much as Options.Explain allows. The log gets the
// whole explanation.
func (s *Server) miss(x *exchange) {
	r, snap := x.r, x.snap
	x.out.unmatched = true
	// The journal keeps the near-miss report of every miss; ranking is
	// one pass over the routes, bounded like matching.
	if s.journalOn() {
		x.out.near, x.out.explained = snap.table.Explain(x.in), true
	}
	if snap.fallback == nil && s.unmatchedProxy != nil {
		// Spy mode: what is not mocked goes to the real upstream.
		x.out.route = proxyUnmatchedRoute
		x.p = s.unmatchedProxy
		s.serveRoute(x)
		return
	}
	if snap.fallback != nil {
		// Misses are ordinary traffic here: rank near misses (one pass
		// over the routes) only when the debug log wants them.
		if s.log.Enabled(r.Context(), slog.LevelDebug) {
			if !x.out.explained {
				x.out.near, x.out.explained = snap.table.Explain(x.in), true
			}
			s.log.Debug("fallback served", "method", r.Method, "path", r.URL.Path, "near", nearMisses(x.out.near))
		}
		x.out.route = fallbackRoute
		x.p = snap.fallback
		s.serveRoute(x)
		return
	}
	if !x.out.explained && (s.opts.Explain != ExplainOff || s.log.Enabled(r.Context(), slog.LevelWarn)) {
		x.out.near, x.out.explained = snap.table.Explain(x.in), true
	}
	p := newProblem(http.StatusNotFound, fmt.Sprintf("No route matches %s %s.", r.Method, r.URL.Path))
	if allow := allowed(snap.table, x.in); allow != "" {
		// RFC 9110 §15.5.6: the origin server MUST send Allow with a 405.
		x.w.Header().Set("Allow", allow)
		p = newProblem(http.StatusMethodNotAllowed, fmt.Sprintf("%s takes %s, not %s.", r.URL.Path, allow, r.Method))
	}
	if shown := s.opts.Explain.shown(x.out.near); len(shown) > 0 {
		p.Detail += " Closest: " + nearMisses(shown) + "."
		p.Closest = shown
	}
	x.answerProblem(p)
	s.deliver(x)
}

// allowed returns the methods that the request's path takes, for the
// Allow header of a 405, when the path is an OpenAPI operation's and
// none of its routes takes the request's method, as Prism answers; ""
// for a 404. A path only YAML routes serve stays a 404, as WireMock
// answers, and so does one of a document whose errors are Stripe's
// (errors: stripe), as Stripe and stripe-mock answer an unknown method
// on a known URL. The methods are those of every route on the path, the
// YAML ones too, and HEAD with GET, which answers it.
func allowed(t *matcher.Table, in *matcher.Request) string {
	method := in.HTTP.Method
	if method == http.MethodHead {
		method = http.MethodGet // a GET route answers HEAD (match)
	}
	var methods []string
	spec := false
	for _, r := range t.OnPath(in) {
		if len(r.Methods) == 0 || r.TakesMethod(method) {
			return "" // a route takes the method: its conditions failed
		}
		if op, ok := r.Operation.(*openapi.Operation); ok {
			if op.Errors() == "stripe" {
				return ""
			}
			spec = true
		}
		methods = append(methods, r.Methods...)
		if slices.Contains(r.Methods, http.MethodGet) {
			methods = append(methods, http.MethodHead)
		}
	}
	if !spec {
		return ""
	}
	slices.Sort(methods)
	return strings.Join(slices.Compact(methods), ", ")
}

// fallbackRoute names the fallback in the log and the journal.
const fallbackRoute = "(fallback)"

// refuseBody answers a request whose body could not be read. The
// connection is closed after the answer: what is left of the body is
// unknown, and net/http would otherwise wait to drain it first.
func (s *Server) refuseBody(x *exchange, err error) {
	w := x.w
	if x.snap.cors != nil {
		x.snap.cors.corsHeaders(w.Header(), x.r, nil)
	}
	x.out.refused = true
	w.Header().Set("Connection", "close")
	x.fail(err)
	s.deliver(x)
	// Once the handler returns, net/http drains up to 256 KiB of unread
	// body even after Connection: close, so a client that declared a body
	// and sends none would never see the connection end. An expired read
	// deadline ends that drain at once; the answer is already flushed.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}
