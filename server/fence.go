package server

import "net/http"

// The reset fence: POST /__admin/reset forgets the state, and a request
// that arrived before it (one still in its delay, typically: the
// straggler of the test before) must not write into the state that
// follows, or one test's requests fill the next test's collections,
// counters, keys and journal.
//
// A request notes the server's epoch when it arrives (serveScenario);
// a reset bumps it. Before produce, a request with effects (a template,
// which may draw a seq counter; a collection operation or save; an
// idempotency key; events; a generated answer) takes the fence for
// reading and checks the epoch: a straggler gets a 503 and writes
// nothing (commit releases its claim, which the reset already forgot),
// the others write their effects before any reset can begin, since the
// reset holds the fence for writing. record leaves stragglers out of the
// journal. A static answer takes no lock: it writes nothing after its
// delay.
//
// What is not fenced: the claim and the sequence step, written when the
// request arrives (a reset that follows forgets them), and the journal
// entry of a request answered at the very moment of a reset. The epoch
// is this process's: a reset on one replica does not fence another's
// requests in flight.

// fenceIn takes the fence for a request with effects and reports
// whether it may write them: false for a straggler, answered a 503.
func (s *Server) fenceIn(x *exchange) bool {
	p := x.p
	if !x.claimed && !p.templated && p.op == nil && p.src.Save == nil && (x.rt == nil || len(x.m.Route.Events) == 0) {
		return true
	}
	s.fence.RLock()
	x.fenced = true
	if s.epoch.Load() == x.epoch {
		return true
	}
	x.w.Header().Set("Retry-After", "1")
	x.answerProblem(newProblem(http.StatusServiceUnavailable, "The server's state was reset (POST /__admin/reset) while this request was in flight: it has taken no effect and was not journaled; a retry runs it again."))
	return false
}

// fenceOut lets go of the fence once commit has written the effects.
func (s *Server) fenceOut(x *exchange) {
	if x.fenced {
		x.fenced = false
		s.fence.RUnlock()
	}
}
