package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
)

// Route states (a route's state:, WireMock's scenarios). A route with
// is: matches only while its state has that value: the matcher asks the
// request's stateReader, which renders the state's per: and reads the
// store, once per state and key in a request. A route with to: moves the
// state in commit, once its answer exists, beside its saves: not for a
// request refused or faulted at arrival, not for an answer its
// idempotency block releases, not for a replay (which never reaches
// commit's effects); a fault after processing does move it, as it saves.
//
// A route with both is: and to: holds its state's lock (state.Locks, on
// every replica of a shared store) from the read in matching to the move
// in commit, so that two requests racing on one state (a double-clicked
// "pay") run one after the other, the second matching what the first
// left (the "already paid" route): WireMock lets both see Started, which
// a check-then-act test cannot rehearse. The lock is taken before the
// route's delay, unlike lock:'s, since the state is read when matching;
// lock: [] on the route opts out, and its lock: wait: applies. A request
// that waited longer gets what the route's lock answers then: its lock:
// timeout: answer, or a 429 problem (stateLockTimeout). Whatever the
// routes' order: a request that waited for the lock and found the state
// moved matches again (matchRoute), so that the routes listed before the
// locking one are tested with the value it found. A request that finds
// the lock held and carries an Idempotency-Key claims it then
// (claimEarly): a retry of the request that holds the lock gets the
// claim's answer (the 409 of a key in flight, or the replay) at once, as
// on a route without a state, not a 429 after the lock's wait.

// stateReader is a request's matcher.StateReader. It lives in the
// exchange: a request that reads states allocates only what rendering
// per: and the store's reads allocate.
type stateReader struct {
	x *exchange
	// in is the request being matched (a HEAD request's GET).
	in *matcher.Request
	// locking: Match is running, and a route with is: and to: locks the
	// state it reads (Explain, after a miss, locks nothing).
	locking bool
	// preflight: the request is a CORS preflight, which changes nothing:
	// only a route written for OPTIONS, which answers it, locks.
	preflight bool
	// seen are the states read so far, so that each is read once.
	seen []seenState
	// err says why a state could not be read; the request is then
	// answered by it, not by a route the failed read let through.
	err error
	// held gives back the lock of the state the matched route moves; nil
	// when none is held.
	held func()
	// stale: a read under a state's lock found another value than an
	// earlier read of that state without it, which routes tested before
	// were judged by (matchRoute then matches again).
	stale bool
	// matched is the last route whose state had the value its is: wants,
	// and key that state's key: the route Match returns, whose move in
	// commit then goes to the key it read (and locked), not to a key its
	// per: renders again (a per: of seq or randomHex renders another).
	matched *scenarios.Route
	key     state.StateKey
	// early is the route whose request claimed its Idempotency-Key when
	// matching (claimEarly), and earlyClaim what the store decided: the
	// claim stage's answer if early is the route matched.
	early      *scenarios.Route
	earlyClaim state.Claim
}

// seenState is one state a request read.
type seenState struct {
	key    state.StateKey
	value  string
	locked bool // read under its lock, which held still keeps
}

// maxStateKey bounds what a per: renders, as the store bounds keys.
const maxStateKey = state.MaxStatePart

// ReadState reads route r's state for the request, rendering its per:
// with the path variables r bound.
func (rd *stateReader) ReadState(r *scenarios.Route, vars map[string]string) (string, string, bool) {
	x := rd.x
	if rd.err != nil {
		return "", "", false // one failure answers the request: read no more
	}
	key, err := stateKey(r, x.s.newStateData(x, rd.in, r, vars))
	if err != nil {
		rd.err = err
		return "", "", false
	}
	lock := rd.locking && locksState(r) && (!rd.preflight || explicitOptions(r))
	for i := range rd.seen {
		if sv := &rd.seen[i]; sv.key == key && (sv.locked || !lock) {
			rd.matching(r, key, sv.value)
			return key.Key, sv.value, true
		}
	}
	var release func()
	if lock {
		if release, err = x.s.lockState(x, r, key, vars); err != nil {
			rd.err = err
			return "", "", false
		}
		if release == nil {
			// The request's Idempotency-Key decided its answer
			// (claimEarly): the route's claim stage gives it,
			// whatever the state's value (the first request with the
			// key may have moved it), as on a route without a state.
			rd.matching(r, key, r.State.Is)
			return key.Key, r.State.Is, true
		}
	}
	value, err := x.s.state.States().Get(x.r.Context(), key)
	if err != nil {
		if release != nil {
			release()
		}
		rd.err = fmt.Errorf("%w: route state %s: %v", errStore, key.Name, err)
		return "", "", false
	}
	if lock {
		// The lock's holder may have moved the state since an earlier
		// route read it: the routes before this one judged a value that
		// is gone. Keep the fresh one, for Explain too.
		for i := range rd.seen {
			if sv := &rd.seen[i]; sv.key == key && sv.value != value {
				sv.value, rd.stale = value, true
			}
		}
	}
	// A read is locked while its lock is held: one given back (the
	// value is not r's is:) leaves a read that a later route with is:
	// and to: on this key must not move by, so it locks and reads again.
	held := release != nil && value == r.State.Is
	rd.seen = append(rd.seen, seenState{key: key, value: value, locked: held})
	switch {
	case held:
		rd.held = release // the route matches: it moves the state in commit
	case release != nil:
		release()
	}
	rd.matching(r, key, value)
	return key.Key, value, true
}

// matching notes route r's state key when its value is the one r's is:
// wants: is: is tested last, so Match returns r, and commit moves that
// key (moveState).
func (rd *stateReader) matching(r *scenarios.Route, key state.StateKey, value string) {
	if rd.locking && value == r.State.Is {
		rd.matched, rd.key = r, key
	}
}

// locksState reports whether route r's requests hold its state's lock
// from matching to commit: it reads (is:) and moves (to:) the state, and
// its lock: does not say [].
func locksState(r *scenarios.Route) bool {
	st := r.State
	return st != nil && st.Is != "" && st.To != "" && (r.Lock == nil || !r.Lock.Own || len(r.Lock.Names) > 0)
}

// stateLockName is the lock of state k, apart from every object id a
// lock: names (which holds no NUL byte from a YAML string).
func stateLockName(k state.StateKey) string {
	return "\x00state\x00" + k.Session + "\x00" + k.Name + "\x00" + k.Key
}

// lockState takes the lock of state k for a request of route r, whose
// path bound vars, waiting as the route's lock: says (lockWait). It
// returns a nil release and no error when the request, finding the lock
// held, claimed its Idempotency-Key and the claim answers it
// (claimEarly): it then waits for no lock.
func (s *Server) lockState(x *exchange, r *scenarios.Route, k state.StateKey, vars map[string]string) (func(), error) {
	names := []string{stateLockName(k)}
	ctx := x.r.Context()
	if r.Idempotency != nil && r.ScopeOf == nil && x.states.early == nil {
		release, err := s.state.Locks().Lock(ctx, names, 0)
		switch {
		case err == nil:
			return release, nil
		case errors.Is(err, state.ErrLockTimeout) && s.claimEarly(x, r, vars):
			return nil, nil
		}
	}
	wait := lockWait(r.Lock)
	release, cause, err := s.take(ctx, names, wait)
	switch {
	case err == nil:
		return release, nil
	case errors.Is(err, state.ErrLockTimeout):
		return nil, &stateLockError{err: err, key: k, wait: wait, route: r, vars: vars}
	case cause != nil:
		return nil, &stateLockError{err: cause, key: k, cause: true}
	}
	return nil, fmt.Errorf("%w: route state %s: %v", errStore, k.Name, err)
}

// claimEarly claims the Idempotency-Key of a request of route r, whose
// path bound vars, that found r's state locked: most often by the first
// request with the same key, which holds it from matching to commit. It
// reports whether the claim answers the request (a replay, or a 409 or
// 422 refusal), which then waits for no lock, as on a route without a
// state: Stripe answers a retry sent while the first request runs with a
// 409 at once, not after a lock's wait, nor with a 429. A new claim is
// kept (statesRead gives it to the exchange, or back) and the request
// waits for the lock. A request without a valid key, or whose claim the
// store did not answer, waits too: its claim stage says why.
func (s *Server) claimEarly(x *exchange, r *scenarios.Route, vars map[string]string) bool {
	rd := &x.states
	k, fp, ok, err := idemKeyOf(rd.in, r.Idempotency, vars)
	if !ok || err != nil {
		return false
	}
	c, err := s.claimKey(x, r.Idempotency, k, fp)
	if err != nil {
		return false
	}
	rd.early, rd.earlyClaim = r, c
	return c.Outcome != state.New
}

// stateLockError is a state's lock that a request did not get: it
// waited too long (a 429, as lock: answers), or its wait ended (cause:
// the client left, or shutdown).
type stateLockError struct {
	err   error
	key   state.StateKey
	wait  time.Duration
	cause bool
	// route is the route whose state's lock the request waited for, and
	// vars what its path bound: a timeout gets its lock's answer.
	route *scenarios.Route
	vars  map[string]string
}

func (e *stateLockError) Error() string { return "route state " + e.key.Name + ": " + e.err.Error() }
func (e *stateLockError) Unwrap() error { return e.err }

// newStateData returns what a state's per: sees: what a response
// template sees, with the path variables route r bound.
func (s *Server) newStateData(x *exchange, in *matcher.Request, r *scenarios.Route, vars map[string]string) *templateData {
	if r.State.Per == nil {
		return nil
	}
	d := newTemplateData(in, matcher.Match{Vars: vars}, 0, s.opts.Clock.Now(), s.env(x.r.Context()))
	d.Route, d.ctx, d.maxSteps = r.Name, x.r.Context(), s.opts.maxTemplateSteps
	return d
}

// stateKey names route r's state for a request whose template data
// (nil when r's state has no per:) is d.
func stateKey(r *scenarios.Route, d *templateData) (state.StateKey, error) {
	k := state.StateKey{Session: r.Session, Name: r.State.Name}
	if r.State.Per == nil {
		return k, nil
	}
	key, err := renderName(r.State.Per, d, maxStateKey, "per")
	if err != nil {
		return k, fmt.Errorf("route %q: state.per: %w", r.Name, err)
	}
	k.Key = key
	if strings.ContainsRune(k.Key, 0) {
		return k, fmt.Errorf("route %q: state.per: %w: renders a NUL byte", r.Name, errTemplate)
	}
	return k, nil
}

// matchStates readies the request's state reader before Match, when the
// table has routes with is:.
func (x *exchange) matchStates(t *matcher.Table, in *matcher.Request) {
	if !t.States() {
		return
	}
	x.states.x, x.states.in, x.states.locking = x, in, true
	in.States = &x.states
}

// maxStateRematches bounds how often matchRoute matches again: states
// that keep moving under a request give it the last match.
const maxStateRematches = 3

// matchRoute matches in against t. A request that waited for a state's
// lock may find the state moved by the request that held it, after
// routes listed before (the "already paid" route above "pay") were
// tested with the value read before the move: it then matches again,
// reading afresh, so that it gets the route of the state it finds (a
// 409), not a 404 or the route of a value that is gone.
func (x *exchange) matchRoute(t *matcher.Table, in *matcher.Request) (matcher.Match, bool) {
	rd := &x.states
	for try := 0; ; try++ {
		m, ok := t.Match(in)
		if !rd.stale || rd.err != nil || try == maxStateRematches {
			return m, ok
		}
		if rd.held != nil {
			rd.held()
			rd.held = nil
		}
		rd.seen, rd.stale = rd.seen[:0], false
	}
}

// statesRead ends matching's reads: the lock of the matched route's
// state goes to the exchange, which gives it back with the route's other
// locks (unhold). It reports whether every read succeeded; if one did
// not, the request is answered by why.
func (s *Server) statesRead(x *exchange) bool {
	rd := &x.states
	rd.locking = false
	if rd.held != nil {
		x.addUnlock(rd.held)
		rd.held = nil
	}
	if rd.early != nil {
		s.settleEarlyClaim(x)
	}
	err := rd.err
	if err == nil {
		return true
	}
	x.unhold()
	var le *stateLockError
	switch {
	case errors.As(err, &le) && le.cause:
		ended := "client gone while another request held its route state"
		if errors.Is(le.err, errShutdown) {
			ended = "lock wait cancelled by shutdown"
		}
		x.abort(ended)
	case errors.As(err, &le):
		x.out.err = err
		s.stateLockTimeout(x, le)
	case errors.Is(err, errStore):
		s.unavailable(x, err)
	default:
		x.fail(err)
	}
	return false
}

// stateLockTimeout answers a request that waited longer than its
// route's lock: wait: for the route's state: as the route's lock would
// (lockTimeout), with its lock: timeout: answer, rendered as the route's
// (its path variables bound), or a 429 problem that names the state.
func (s *Server) stateLockTimeout(x *exchange, le *stateLockError) {
	if le.route.Lock != nil && le.route.Lock.Timeout != nil {
		for _, rt := range x.snap.routes {
			if rt.route.Route == le.route && rt.lock != nil && rt.lock.timeout != nil {
				x.rt, x.m = rt, matcher.Match{Route: rt.route, Vars: le.vars}
				x.out.route = rt.route.Name
				s.answerOwn(x, rt.lock.timeout, "lock timeout answer")
				return
			}
		}
	}
	x.w.Header().Set("Retry-After", "1")
	x.answerProblem(probStateLocked.problem(fmt.Sprintf("Another request held route state %s for longer than %s; retry.", describeState(le.key), le.wait)))
}

// settleEarlyClaim settles the claim a request made when matching
// (claimEarly): one of the route matched is the claim stage's, and a new
// one goes to the exchange at once, so that commit releases it whatever
// stage ends the request; a new one of a route not matched (the state
// found under the lock moved), or of a request no route takes, is given
// back.
func (s *Server) settleEarlyClaim(x *exchange) {
	rd := &x.states
	r, c := rd.early, rd.earlyClaim
	if rd.err == nil && x.m.Route != nil && x.m.Route.Route == r {
		if c.Outcome == state.New {
			x.tok, x.claimed = c.Token, true
			rd.early = nil
		}
		return
	}
	rd.early = nil
	if c.Outcome == state.New {
		if err := s.state.Idempotency().Release(detached, c.Token); err != nil && !errors.Is(err, state.ErrNotClaimed) {
			s.log.Warn("idempotency key not released", "route", r.Name, "error", err.Error())
		}
	}
}

// moveState moves the matched route's state to its to:, in commit, with
// the request's writes fenced (a straggler of a reset moves nothing). It
// notes the move in the result, for the journal and the log line. A
// route with is: moves the key it matched on (the one it locked), which
// its per: is not rendered again for: one with seq or randomHex would
// render another.
func (s *Server) moveState(x *exchange) error {
	if x.m.Route == nil || x.m.Route.State == nil || x.m.Route.State.To == "" {
		return nil
	}
	r := x.m.Route.Route
	k := x.states.key          // the key it matched on (and locked)
	if x.states.matched != r { // a route with to: alone
		var d *templateData
		if r.State.Per != nil {
			d = x.templateData()
		}
		var err error
		if k, err = stateKey(r, d); err != nil {
			return err
		}
	}
	if err := s.state.States().Set(x.detached(), k, r.State.To); err != nil {
		switch {
		case errors.Is(err, state.ErrFenced):
			return err
		case errors.Is(err, state.ErrStatesFull):
			return fmt.Errorf("route state %s: %w", describeState(k), err)
		}
		return fmt.Errorf("%w: route state %s: %v", errStore, describeState(k), err)
	}
	x.out.moved = state.StateMove{Name: k.Name, Key: k.Key, From: r.State.Is, To: r.State.To}
	x.out.stateMoved = true
	return nil
}

// describeState names a state in a message: order ["o1"], or todo.
func describeState(k state.StateKey) string {
	if k.Key == "" {
		return k.Name
	}
	return fmt.Sprintf("%s [%q]", k.Name, k.Key)
}

// take takes the locks of names for a request with context ctx: first
// without waiting (a free name costs no context), then waiting up to
// wait, the wait ended also by shutdown (lockContext). cause says why
// the wait's context ended, if it did.
func (s *Server) take(ctx context.Context, names []string, wait time.Duration) (release func(), cause, err error) {
	locks := s.state.Locks()
	release, err = locks.Lock(ctx, names, 0)
	if errors.Is(err, state.ErrLockTimeout) {
		wctx, stop := s.lockContext(ctx)
		release, err = locks.Lock(wctx, names, wait)
		if wctx.Err() != nil {
			cause = context.Cause(wctx) // before stop ends it too
		}
		stop()
	} else if ctx.Err() != nil {
		cause = context.Cause(ctx)
	}
	return release, cause, err
}

// describeMove says what a request did to a state, for the log line:
// order ["o1"]: Started -> paid, or order ["o1"] -> paid for a route
// that read none.
func describeMove(m state.StateMove) string {
	name := describeState(state.StateKey{Name: m.Name, Key: m.Key})
	if m.From == "" {
		return name + " -> " + m.To
	}
	return name + ": " + m.From + " -> " + m.To
}
