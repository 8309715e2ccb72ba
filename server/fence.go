package server

import (
	"context"
	"net/http"

	"github.com/scenariomock/scenariomock/state"
)

// The reset fence: POST /__admin/reset forgets the state, and a request
// that arrived before it (one still in its delay, typically: the
// straggler of the test before) must not write into the state that
// follows, or one test's requests fill the next test's collections,
// counters, keys and journal. On every replica: a reset through one
// replica sharing a Redis store fences the others' requests too.
//
// A request notes the reset epoch when it arrives (serveScenario): the
// store's (state.Fencer: Redis keeps it for every replica, and each
// replica a copy that a reset brings up to date before it returns), or
// this process's for a store without one. Before produce, a request with
// effects (a template, which may draw a seq counter; a collection
// operation or save; an idempotency key; events; a generated answer)
// takes the fence for reading and checks the epoch: a straggler gets a
// 503 and writes nothing (commit releases its claim, which the reset
// already forgot). The others write their effects with the epoch they
// noted (x.ctx and x.detached: state.Fenced), and the store refuses,
// in the same step, a write that a reset has overtaken since (a reset
// through another replica, which this one's lock does not hold back):
// that request too gets the 503 and leaves nothing (fencedOff). Within
// this process a reset holds the fence for writing, so effects and a
// reset never interleave. record leaves stragglers out of the journal
// (the journal's append is fenced too), and commit sends no events for a
// request that a reset overtook after its effects landed (they were
// forgotten with it). A static answer takes no lock and makes no round
// trip for the fence: it writes nothing after its delay but its journal
// entry, which the store fences.
//
// What is not fenced: the claim and the sequence step, written when the
// request arrives (a reset that follows forgets them), and events handed
// to the dispatcher in the instant between commit's check and the send.
// Without a state.Fencer the epoch is this process's: a reset on one
// replica does not fence another's requests in flight.

// epochNow returns the reset epoch a request notes when it arrives, and
// that a straggler finds moved: without a round trip.
func (s *Server) epochNow() uint64 {
	if s.fencer != nil {
		return s.fencer.Epoch()
	}
	return s.epoch.Load()
}

// fenceIn takes the fence for a request with effects and reports
// whether it may write them: false for a straggler, answered a 503.
// From here on its writes carry its epoch, for the store to check.
func (s *Server) fenceIn(x *exchange) bool {
	p := x.p
	if !x.claimed && !p.templated && p.op == nil && !p.saves() && (x.rt == nil || len(x.m.Route.Events) == 0) {
		return true
	}
	s.fence.RLock()
	x.fenced = true
	if s.epochNow() != x.epoch {
		x.fencedOff(nil)
		return false
	}
	if s.fencer != nil {
		x.fctx = state.Fenced{Context: x.ctx, Epoch: x.epoch}
		x.ctx = &x.fctx
		if d := x.data; d != nil {
			d.ctx, d.env.ctx = x.ctx, x.ctx
		}
	}
	return true
}

// fenceOut lets go of the fence once commit has written the effects.
func (s *Server) fenceOut(x *exchange) {
	if x.fenced {
		x.fenced = false
		s.fence.RUnlock()
	}
}

// detached returns the context of the request's writes that outlive its
// client (a save, a completion, the journal entry): fenced at its epoch
// when the store keeps one.
func (x *exchange) detached() context.Context {
	if x.s.fencer == nil {
		return detached
	}
	x.fdetached = state.Fenced{Context: detached, Epoch: x.epoch}
	return &x.fdetached
}

// fencedOff answers a straggler of a reset: found at fenceIn, or when the
// store refused one of its writes (err, state.ErrFenced).
func (x *exchange) fencedOff(err error) {
	x.out.err = err
	x.w.Header().Set("Retry-After", "1")
	x.answerProblem(newProblem(http.StatusServiceUnavailable, "The server's state was reset (POST /__admin/reset) while this request was in flight: it has taken no effect and was not journaled; a retry runs it again."))
}
