package state

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// Locks serializes the requests that act on one object: a refund and
// the refund beside it both read what the payment received and what its
// refunds returned so far, then store theirs; run at once, both see the
// same sum and both pass the check (two refunds of the whole). Holding
// the object's lock from the read to the last write makes the second
// read what the first wrote, as Stripe answers (it locks an object while
// a request acts on it).
//
// A name is any string (an object's id); two requests that name the same
// one run one at a time, whatever routes they took.
type Locks interface {
	// Lock takes the lock of each name, in the order given, waiting while
	// another request holds one of them, for at most wait. Callers give
	// the names sorted, so that two requests never each hold what the
	// other waits for. It returns the release, which gives back every
	// lock taken and must be called once; or ErrLockTimeout, having taken
	// none, when wait ran out, or ctx's error when ctx ended first, or a
	// failure of the store. With a wait of 0 it takes them only if no one
	// holds them. Lock keeps names until the release.
	Lock(ctx context.Context, names []string, wait time.Duration) (release func(), err error)
}

// ErrLockTimeout is returned by Locks.Lock when another request held a
// name for longer than the wait.
var ErrLockTimeout = errors.New("state: another request holds the object's lock")

// LocalLocks are the locks of one process: Memory's, and in front of a
// shared store's, so that the requests of one replica that wait for the
// same object queue here rather than asking the store again and again.
// Waiters take a name in the order they came: a release hands it to the
// first (FIFO), so that no waiter is passed over until its wait runs out,
// and wakes only that one. The zero value is ready to use.
type LocalLocks struct {
	mu   sync.Mutex // guards held
	held map[string]*lockQueue
}

// lockQueue is a held name and those who wait for it, first first. A
// waiter's channel gets the name when it is handed over.
type lockQueue struct {
	waiters []chan struct{}
}

var _ Locks = (*LocalLocks)(nil)

// Lock takes the names' locks (Locks.Lock).
func (l *LocalLocks) Lock(ctx context.Context, names []string, wait time.Duration) (func(), error) {
	var timer *time.Timer // made on the first wait only: an uncontended lock costs no timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for i, name := range names {
		l.mu.Lock()
		q, busy := l.held[name]
		if !busy {
			if l.held == nil {
				l.held = map[string]*lockQueue{}
			}
			l.held[name] = &lockQueue{}
			l.mu.Unlock()
			continue
		}
		if wait <= 0 {
			l.mu.Unlock()
			l.unlock(names[:i])
			return nil, ErrLockTimeout
		}
		handed := make(chan struct{}, 1)
		q.waiters = append(q.waiters, handed)
		l.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(wait)
		}
		var err error
		select {
		case <-handed:
			continue // handed over by its holder: held now
		case <-timer.C:
			err = ErrLockTimeout
		case <-ctx.Done():
			err = ctx.Err()
		}
		if !l.leave(name, handed) {
			// Handed over as the wait ended: held, and given on.
			l.unlock(names[i : i+1])
		}
		l.unlock(names[:i])
		return nil, err
	}
	return func() { l.unlock(names) }, nil
}

// leave takes a waiter out of name's queue; false when it is no longer in
// it (the name was handed to it).
func (l *LocalLocks) leave(name string, handed chan struct{}) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if q, ok := l.held[name]; ok {
		if k := slices.Index(q.waiters, handed); k >= 0 {
			q.waiters = slices.Delete(q.waiters, k, k+1)
			return true
		}
	}
	return false
}

// unlock gives back the locks of names, each to its first waiter if it
// has one.
func (l *LocalLocks) unlock(names []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, name := range names {
		q, ok := l.held[name]
		if !ok {
			continue
		}
		if len(q.waiters) == 0 {
			delete(l.held, name)
			continue
		}
		next := q.waiters[0]
		q.waiters = slices.Delete(q.waiters, 0, 1)
		next <- struct{}{} // buffered: the waiter finds it whenever it looks
	}
}

// Held returns how many names are locked now, for tests.
func (l *LocalLocks) Held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.held)
}
