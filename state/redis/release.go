package redis

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/scenariomock/scenariomock/state"
)

// releaser frees, in the background, the keys whose release (or whose
// completion, or whose claim's answer) was lost because Redis did not
// answer: a timeout or a lost connection. Without it such a key stays in
// flight for its whole Redis TTL, and every retry gets 409 for 24 hours.
// It frees objects' locks the same way (lockRelease): a lock whose
// release was lost stayed held for lockTTL on every replica, and each
// request on the object waited its wait and got a 429.
// It retries each until Redis answers, then forgets it: a release that
// finds the key no longer held by its token (completed after all,
// expired, taken over) changes nothing, so retrying is always safe.
//
// Why retry rather than give each claim a short lease the running
// request renews: a lease costs every request a timer and a round trip
// per renewal during its delay, and a Redis away for longer than the
// lease would free keys whose requests still run, the duplicate this
// store exists to prevent. Retrying costs nothing until a round trip
// fails. (A replica that dies leaves its claims to its lapsed r: key
// instead, liveness.go: one lease per replica, not per claim.)
//
// It owns one goroutine, started by Open and stopped by Close, which
// makes one last attempt at what is left (bounded by the read timeout).
type releaser struct {
	idem    *redisIdempotency
	timeout time.Duration // of each attempt

	mu      sync.Mutex              // guards pending
	pending map[pendingRelease]bool // what to release, and whether its claim's answer was lost
	wake    chan struct{}           // capacity 1: something was added
	cancel  context.CancelFunc
	done    chan struct{} // closed when run returns
}

// maxPendingReleases bounds the keys waiting for Redis; past it a lost
// release is dropped, and its key waits out its Redis TTL as before.
const maxPendingReleases = 100_000

// Backoff between rounds while Redis does not answer.
const (
	releaseRetryMin = 50 * time.Millisecond
	releaseRetryMax = 2 * time.Second
)

func startReleaser(idem *redisIdempotency, timeout time.Duration) *releaser {
	ctx, cancel := context.WithCancel(context.Background())
	rl := &releaser{
		idem: idem, timeout: timeout,
		pending: map[pendingRelease]bool{}, wake: make(chan struct{}, 1),
		cancel: cancel, done: make(chan struct{}),
	}
	go rl.run(ctx)
	return rl
}

// pendingRelease is what waits for Redis: an idempotency claim's token
// (state.Token) or a lock's (lockRelease).
type pendingRelease any

// lockRelease is a lock whose release was lost: its key and the token of
// the request that held it; lost says the take's reply was lost, not the
// release's (the request never knew it held the lock).
type lockRelease struct {
	key, token string
	lost       bool
}

// add schedules t's release; lost says its claim's answer was lost (the
// claim may still reach Redis after the release, see releaseScript).
func (rl *releaser) add(t pendingRelease, lost bool) {
	rl.mu.Lock()
	if len(rl.pending) < maxPendingReleases {
		rl.pending[t] = rl.pending[t] || lost
	}
	rl.mu.Unlock()
	select {
	case rl.wake <- struct{}{}:
	default:
	}
}

// len returns how many releases wait for Redis, for tests.
func (rl *releaser) len() int {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return len(rl.pending)
}

func (rl *releaser) run(ctx context.Context) {
	defer close(rl.done)
	backoff := releaseRetryMin
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			// One last attempt, so that a Close right after an outage
			// leaves nothing behind if Redis is back.
			last, cancel := context.WithTimeout(context.Background(), rl.timeout)
			rl.round(last)
			cancel()
			return
		case <-rl.wake:
		case <-timer.C:
		}
		if rl.round(ctx) {
			backoff = releaseRetryMin
			continue
		}
		timer.Reset(backoff)
		backoff = min(2*backoff, releaseRetryMax)
	}
}

// round tries every pending release and reports whether none is left. It
// stops at the first that Redis does not answer: the others would fail
// the same way.
func (rl *releaser) round(ctx context.Context) bool {
	rl.mu.Lock()
	todo := make([]pendingRelease, 0, len(rl.pending))
	for t := range rl.pending {
		todo = append(todo, t)
	}
	rl.mu.Unlock()
	for _, t := range todo {
		rl.mu.Lock()
		lost := rl.pending[t]
		rl.mu.Unlock()
		actx, cancel := context.WithTimeout(ctx, rl.timeout)
		var err error
		switch t := t.(type) {
		case state.Token:
			err = rl.idem.release(actx, t, lost)
		case lockRelease:
			err = rl.idem.r.locks.release(actx, t.key, t.token, t.lost)
		}
		cancel()
		if err != nil && !errors.Is(err, state.ErrNotClaimed) {
			return false
		}
		rl.mu.Lock()
		delete(rl.pending, t)
		rl.mu.Unlock()
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return len(rl.pending) == 0
}

// close stops the goroutine after its last attempt.
func (rl *releaser) close() {
	rl.cancel()
	<-rl.done
}
