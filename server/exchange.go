package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/upstream"
)

// exchange is one mock request on its way through the pipeline (see
// serveRoute): what the stages share, the answer deliver sends, and the
// typed outcome that record and finish turn into the journal entry, the
// counters and the log line. Each stage writes its own fields; a field is
// read only by the stages after the one that sets it.
//
// Under Serve each HTTP/1 connection keeps one exchange in its context
// (connExchange), which its requests reuse, one at a time: the hot path
// allocates none. HTTP/2 requests, and a handler served by another
// http.Server, take one from a pool.
type exchange struct {
	s     *Server
	w     http.ResponseWriter
	r     *http.Request
	start time.Time
	snap  *snapshot
	// body is the request body, in a pooled buffer: whatever keeps it
	// past the request copies it (the journal, templates).
	body []byte
	in   *matcher.Request // &req, or a HEAD request's GET
	req  matcher.Request
	m    matcher.Match
	rt   *routeRuntime // nil for the fallback and for requests no route took
	// states reads the route states Match tests (states.go); in.States
	// points at it when the table has routes with is:.
	states stateReader

	// claim
	tok     state.Token
	claimed bool // tok holds the key: commit completes or releases it
	// epoch is the server's when the request arrived; fenced: it holds
	// the server's fence for reading (fence.go). fctx and fdetached are
	// the request's contexts with its writes fenced at epoch, kept here
	// so that they cost no allocation.
	epoch     uint64
	fenced    bool
	fctx      state.Fenced
	fdetached state.Fenced
	// advance
	p    *prepared // the response the call gets
	call int64     // its position in the sequence, from 0
	// wait
	fault *scenarios.Fault // drawn for this call; nil: the answer
	// ctx is what the route's work runs under (templates, collection
	// operations): the request's context, or one that outlasts the client
	// (onClientAbort: complete); release ends it.
	ctx     context.Context
	release func()
	// hold: gives back the objects' locks (unhold), and the route
	// state's taken when matching (states.go); nil when none are held
	unlock func()
	// produce
	data *templateData // made when a template first needs it
	// opValues are the request's values as its operation's check read
	// them (openapi.Exchange.Values), for the answer it generates.
	opValues map[string]any
	// violations are how the request broke its operation (check, under
	// validate: report), which an upstream's answer's follow
	// (checkAnswer) in the sl-violations header.
	violations []openapi.Violation
	produced   bool // rec holds the route's answer

	// The answer deliver sends: kind says which of the fields below holds it.
	kind    answerKind
	rec     recorder       // answerRecorded; and what a fault sends of the answer
	stored  state.Response // answerStored: a replay
	problem *Problem       // answerProblem
	// upstream is the upstream's answer, its body still on the
	// connection (answerProxied); deliver streams it, finish closes it if
	// deliver did not.
	upstream *upstream.Response
	// ownHeader is a header map kept between requests on a connection for
	// answers rendered apart from w's headers (stored ones, faults): the
	// store and the fault copy what they keep.
	ownHeader http.Header
	// replayHeader and replayValues are kept between requests like
	// ownHeader: a replay's header fields are decoded into the one
	// (state.ClaimOptions.Header) and its values set in w's header from
	// the other, so that a replay allocates neither. net/http copies the
	// header when the answer's header is written (WriteHeader), before
	// the next request on the connection reuses them.
	replayHeader []state.Header
	replayValues []string

	out result
	// recorded: the journal entry was appended (record); finished: the
	// log line was written. Each happens once.
	recorded, finished bool
	// took is the time from start to record's clock read, 0 if it read
	// none; written: deliver then wrote the whole answer into net/http's
	// buffer (at most smallAnswer bytes of body), which takes no time worth
	// a second read, so the log line's duration is took.
	took    time.Duration
	written bool
	entry   state.Entry
	// response is the entry's answer (journalResponse), kept here so
	// that journaling it allocates nothing.
	response state.EntryResponse
	// pooled: x came from exchanges, and end returns it there.
	pooled bool
}

// answerKind says what deliver sends.
type answerKind uint8

const (
	answerNone     answerKind = iota // nothing yet: a stage that ended the request must set one
	answerRecorded                   // rec: the route's answer, or a refusal's own
	answerStored                     // stored: the replay of an idempotent answer
	answerProblem                    // problem: an RFC 9457 problem
	answerAbort                      // no answer: the connection is dropped (a client that left, shutdown)
	answerProxied                    // upstream: an upstream's answer, streamed as it arrives
)

// result is what happened to a request, typed: the log line, the
// journal entry and the counters are all made from it, and nothing reads
// it back out of log attributes.
type result struct {
	route  string // "" when no route matched
	status int    // 0: no HTTP answer was sent (a fault, the client left)
	delay  time.Duration
	// idem is the idempotency outcome (idemNew, idemReplayed, ...), "" for
	// none.
	idem string
	// ended says why a request ended without its answer ("client gone
	// during delay", ...): the log line's "outcome".
	ended string
	err   error // what went wrong, for a problem answer
	// fault is the fault the request got (after its delay), nil for none.
	fault *scenarios.Fault
	// unmatched: no route matched (the fallback or a 404 answered); near
	// is the near-miss report, explained is whether it was made.
	unmatched, explained bool
	near                 []matcher.NearMiss
	// refused: the request body was refused (413, 408, unreadable).
	refused bool
	// catchAll: a route marked unmatched: true answered, which the entry
	// records as matching no route.
	catchAll bool
	// session is the test session the request carried (sessionOf), ""
	// for none.
	session string
	// proxied: an upstream was asked for the answer (upstream names it);
	// upstreamStatus and upstreamLatency are its answer's, 0 when it gave
	// none.
	proxied         bool
	upstream        string
	upstreamStatus  int
	upstreamLatency time.Duration
	// stateMoved: the route moved a state (its state: to:), as moved
	// says (commit's moveState).
	stateMoved bool
	moved      state.StateMove
}

// problemish reports whether the request is logged at warn: it went wrong
// (no route matched, its body was refused, its template failed).
func (o *result) problemish() bool {
	return o.err != nil || (o.unmatched && o.route == "")
}

// detached is the context of work that outlasts the client: store writes
// (a remote store must not keep a key in flight because the client hung
// up), saves, and the route's work under onClientAbort: complete without a
// delay. Nothing the pipeline calls reads a value of the request's
// context, so it is the background, which context.WithoutCancel would
// cost an allocation per call to wrap.
var detached = context.Background()

type exchangeKey struct{}

// connExchange gives each connection Serve accepts its exchange.
func connExchange(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, exchangeKey{}, &exchange{})
}

// exchanges hold the exchanges of requests that have no connection of
// their own to keep one in (HTTP/2 streams, a handler served without
// Serve's ConnContext) between requests.
var exchanges = sync.Pool{New: func() any { return &exchange{} }}

// exchangeFor returns the exchange for r, reset: the connection's when r
// is HTTP/1 under Serve, else one from the pool, which end returns.
func (s *Server) exchangeFor(w http.ResponseWriter, r *http.Request, start time.Time, snap *snapshot) *exchange {
	var x *exchange
	if r.ProtoMajor == 1 {
		x, _ = r.Context().Value(exchangeKey{}).(*exchange)
	}
	pooled := x == nil
	if pooled {
		x = exchanges.Get().(*exchange)
	}
	if x.s != nil {
		x.reset() // not ended (a bug): the request must not see the last one's fields
	}
	// end left every field zero but the kept buffers: setting the few a
	// request starts with costs less than writing the whole exchange
	// (1.3 KB) again.
	x.s, x.w, x.r, x.start, x.snap, x.ctx, x.pooled = s, w, r, start, snap, r.Context(), pooled
	x.entry.Version = snap.version
	return x
}

// end lets go of what the exchange points at once its request is over,
// so that a connection idle between requests (or the pool) pins no
// answer, body or request; its buffers are kept for the next request.
// Nothing may use x after end.
func (x *exchange) end() {
	x.unhold() // a stage that panicked: the object must not stay locked
	if x.fenced {
		x.s.fence.RUnlock() // a stage that panicked: a reset must not wait forever
	}
	if cap(x.body) >= largeBuffer || cap(x.rec.buf) >= largeBuffer {
		x.s.memory.let(cap(x.body), cap(x.rec.buf)) // their memory goes back (memory.go)
	}
	pooled := x.pooled
	x.reset()
	if pooled {
		exchanges.Put(x)
	}
}

// reset zeroes every field of x but its buffers, which it empties.
func (x *exchange) reset() {
	buf, names, fields := x.rec.scratch()
	own := x.ownHeader
	// The scratch slices pin no stored answer (their strings view the
	// store's memory) while the connection is idle.
	rh, rv := x.replayHeader[:cap(x.replayHeader)], x.replayValues[:cap(x.replayValues)]
	clear(rh)
	clear(rv)
	// One clear of the whole exchange, then the kept buffers back: a
	// composite literal would be built aside and copied in.
	*x = exchange{}
	x.rec.buf, x.rec.names, x.rec.fields = buf, names, fields
	x.ownHeader, x.replayHeader, x.replayValues = own, rh[:0], rv[:0]
	clear(own)
}

// templateData returns what the response's templates see, made the first
// time a template needs it, bounded by x.ctx and the step budget.
func (x *exchange) templateData() *templateData {
	if x.data == nil {
		s := x.s
		x.data = newTemplateData(x.in, x.m, x.call, s.opts.Clock.Now(), s.env(x.ctx))
		x.data.ctx, x.data.maxSteps = x.ctx, s.opts.maxTemplateSteps
		if x.rt != nil {
			x.data.op = x.rt.op // stored reads its document's objects, in headers and list: bodies too
			if x.data.op == nil {
				x.data.op = x.rt.scopeOf // a route of its own that acts for a stored object's owner
			}
		}
	}
	return x.data
}

// dataSource hands a render its template data when it first needs it:
// an exchange makes it then, a *templateData is it. A generated answer
// asks only for the operation's exchange, which an exchange gives without
// making its template data (parsing the body into .Request.JSON and
// .Request.Form).
type dataSource interface {
	templateData() *templateData
	opExchange() (context.Context, openapi.Exchange)
}

func (d *templateData) templateData() *templateData { return d }

func (d *templateData) opExchange() (context.Context, openapi.Exchange) {
	ctx := d.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	return ctx, openapi.Exchange{Request: d.in.HTTP, Body: d.in.Body, Vars: d.Request.Vars,
		Store: d.env.collections, Counters: d.env.counters, Rand: d.env.rand, Missing: d.opMissing}
}

func (x *exchange) opExchange() (context.Context, openapi.Exchange) {
	if x.data != nil {
		ctx, ox := x.data.opExchange()
		ox.Values = x.opValues
		return ctx, ox
	}
	s := x.s
	return x.ctx, openapi.Exchange{Request: x.in.HTTP, Body: x.in.Body, Vars: x.m.Vars,
		Store: s.state.Collections(), Counters: s.state.Counters(), Rand: s.opts.Rand, Values: x.opValues}
}

// answerProblem makes a problem the answer.
func (x *exchange) answerProblem(p *Problem) {
	x.kind, x.problem = answerProblem, p
}

// fail makes err the answer, as the problem statusOf maps it to.
func (x *exchange) fail(err error) {
	if errors.Is(err, state.ErrFenced) {
		x.fencedOff(err) // a write refused: the state was reset since it arrived
		return
	}
	x.out.err = err
	x.answerProblem(newProblem(statusOf(err), err.Error()))
}

// abort ends the request without an answer, for the reason ended.
func (x *exchange) abort(ended string) {
	x.kind, x.out.ended = answerAbort, ended
}
