package state

import (
	"context"
	"errors"
	"sync/atomic"
)

// The reset fence. Reset forgets the state, and a request that arrived
// before it (a test's straggler, still in its delay) must not write into
// the state that follows: one test's requests would fill the next test's
// collections, counters, keys and journal. So a store counts its resets
// (its epoch); a request notes the epoch when it arrives and passes it
// with its writes (InEpoch); and each write checks it in the same step as
// it writes (under the lock that Reset also takes, or in the same Lua
// script): a write whose epoch a Reset has since ended is refused with
// ErrFenced and changes nothing. A write either lands before the Reset,
// which then forgets it, or is refused: never after it.
//
// Fenced: Counters.Next, Collections.Save and Delete, Idempotency.Complete
// (a refused completion also frees its key) and Journal.Append. Not
// fenced: Claim and the Sequences (written as the request arrives, a Reset
// that follows forgets them), Release (a straggler must free its key),
// reads, Seed, and every write whose context carries no epoch (the admin
// API, seeding).

// ErrFenced is returned by a write whose context carries an epoch
// (InEpoch) that a Reset has since ended: the request arrived before the
// state it would write into, and the write changed nothing.
var ErrFenced = errors.New("state: reset since this request arrived")

// ErrResetUnconfirmed is returned (wrapped) by the Reset of a store that
// other processes share when the state was reset but not every process
// confirmed in time that it knows: one that did not may refuse its next
// requests' writes as if they had arrived before the reset (ErrFenced),
// never let a straggler write.
var ErrResetUnconfirmed = errors.New("state: reset, but not every replica confirmed it")

// Fencer is implemented by Memory and by state/redis's Store. It is apart
// from Store so that Store's other implementations stay valid; a server
// on a store without it fences requests within its own process only.
type Fencer interface {
	// Epoch returns how many times the store was reset, as this process
	// knows it, without a round trip: a request notes it when it arrives
	// and passes it with its writes (InEpoch). It is safe for concurrent
	// use. A store that other processes share returns from Reset only
	// once each of them knows the new epoch (or ErrResetUnconfirmed), so
	// that a request that arrives anywhere after a Reset has returned
	// notes the new one.
	Epoch() uint64
}

// Fenced is a context whose writes are fenced at Epoch: a fenced write
// of a store that implements Fencer fails with ErrFenced, changing
// nothing, once a Reset has moved the store's epoch past it. A caller
// that serves requests one at a time may keep one in a per-request value
// and pass its address, which allocates nothing; InEpoch makes one.
type Fenced struct {
	context.Context
	Epoch uint64
}

// epochKey is the context key under which a Fenced answers for itself.
type epochKey struct{}

// Value returns c itself for the fence's key, and the parent's values
// otherwise.
func (c *Fenced) Value(key any) any {
	if key == (epochKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// InEpoch returns ctx with its writes fenced at epoch.
func InEpoch(ctx context.Context, epoch uint64) context.Context {
	return &Fenced{Context: ctx, Epoch: epoch}
}

// EpochOf returns the epoch ctx's writes are fenced at, and whether they
// are fenced at all; for implementations in other packages (state/redis).
func EpochOf(ctx context.Context) (uint64, bool) {
	if f, ok := ctx.Value(epochKey{}).(*Fenced); ok {
		return f.Epoch, true
	}
	return 0, false
}

// fence is a memory store's epoch, shared by its parts. Reset moves it
// before it forgets anything; a part checks it under the lock with which
// Reset forgets that part, so a write sees either the old state (which
// Reset then forgets) or the new epoch (and is refused).
type fence struct{ epoch atomic.Uint64 }

// admits reports whether a write with ctx may land. A nil fence (a part
// built outside a Memory) admits every write.
func (f *fence) admits(ctx context.Context) bool {
	if f == nil {
		return true
	}
	e, ok := EpochOf(ctx)
	return !ok || e == f.epoch.Load()
}
