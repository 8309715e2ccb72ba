package state

import (
	"context"
	"errors"
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
// The zero value is ready to use.
type LocalLocks struct {
	mu   sync.Mutex               // guards held
	held map[string]chan struct{} // closed when the name's lock is given back
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
		for {
			l.mu.Lock()
			busy, ok := l.held[name]
			if !ok {
				if l.held == nil {
					l.held = map[string]chan struct{}{}
				}
				l.held[name] = make(chan struct{})
				l.mu.Unlock()
				break
			}
			l.mu.Unlock()
			if timer == nil {
				timer = time.NewTimer(wait)
			}
			select {
			case <-busy:
				continue // given back: try again (another waiter may take it first)
			case <-timer.C:
				l.unlock(names[:i])
				return nil, ErrLockTimeout
			case <-ctx.Done():
				l.unlock(names[:i])
				return nil, ctx.Err()
			}
		}
	}
	return func() { l.unlock(names) }, nil
}

// unlock gives back the locks of names, waking whoever waits for them.
func (l *LocalLocks) unlock(names []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, name := range names {
		if busy, ok := l.held[name]; ok {
			delete(l.held, name)
			close(busy)
		}
	}
}

// Held returns how many names are locked now, for tests.
func (l *LocalLocks) Held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.held)
}
