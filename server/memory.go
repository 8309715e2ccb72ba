package server

import (
	"runtime/debug"
	"sync"
	"time"
)

// Memory back after large answers. A client that stops reading a large
// answer is dropped at --write-timeout and its answer freed (issue 19
// item 5), but freed is not returned: the Go runtime keeps the pages
// until a collection runs (on an idle server, the forced one two minutes
// later) and its scavenger hands them back, a little at a time. 100
// stalled readers of 8 MiB answers held 2.5 GiB of RSS for two minutes
// after their handlers returned, and 1 GiB a minute later
// (bench/stall). So once large bodies and answers adding up to
// returnAfter have ended, the server collects and returns the free
// memory to the system (debug.FreeOSMemory) when no large one has ended
// for returnDelay (a burst of drops is over), or returnEvery after the
// first, whichever comes first: a full collection of a small live heap
// takes milliseconds, and a server steadily serving large answers pays
// it at most that often.

const (
	// largeBuffer is the smallest body or answer that counts: the
	// smaller ones are pooled, or small enough for the runtime's own
	// pace.
	largeBuffer = 1 << 20
	returnAfter = 64 << 20
	returnDelay = time.Second
	returnEvery = 10 * time.Second
)

// timer is what memoryReturn needs of a *time.Timer.
type timer interface {
	Reset(time.Duration) bool
	Stop() bool
}

// memoryReturn decides when to return memory to the system. Its timer is
// its only goroutine, which stop ends (waiting for a return under way).
// It is safe for concurrent use.
type memoryReturn struct {
	// now, after and free are time.Now, time.AfterFunc and
	// debug.FreeOSMemory; tests replace them.
	now   func() time.Time
	after func(time.Duration, func()) timer
	free  func()

	mu      sync.Mutex // guards all below
	ended   int64      // bytes of large buffers let go since the last return
	timer   timer      // armed: a return is due at due
	due     time.Time
	latest  time.Time // the latest due may be: returnEvery after arming
	stopped bool
	running sync.WaitGroup // a return under way
}

func newMemoryReturn() *memoryReturn {
	return &memoryReturn{
		now:   time.Now,
		after: func(d time.Duration, f func()) timer { return time.AfterFunc(d, f) },
		free:  debug.FreeOSMemory,
	}
}

// let notes that a request let go of its body and answer buffers, of
// these capacities; those of a largeBuffer or more count.
func (m *memoryReturn) let(body, answer int) {
	n := 0
	if body >= largeBuffer {
		n += body
	}
	if answer >= largeBuffer {
		n += answer
	}
	if n == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ended += int64(n)
	if m.stopped || m.ended < returnAfter {
		return
	}
	now := m.now()
	if m.timer == nil {
		m.due, m.latest = now.Add(returnDelay), now.Add(returnEvery)
		m.timer = m.after(returnDelay, m.give)
		return
	}
	// A burst goes on: wait for its end, up to latest.
	due := now.Add(returnDelay)
	if due.After(m.latest) {
		due = m.latest
	}
	if due.After(m.due) {
		m.due = due
		m.timer.Reset(due.Sub(now))
	}
}

// give returns the free memory to the system, when it is due.
func (m *memoryReturn) give() {
	m.mu.Lock()
	if m.stopped || m.timer == nil || m.now().Before(m.due) {
		// Stopped, or a run of the timer that a Reset overtook.
		m.mu.Unlock()
		return
	}
	m.timer, m.ended = nil, 0
	m.running.Add(1)
	m.mu.Unlock()
	defer m.running.Done()
	m.free()
}

// stop ends the timer: no return starts after it, and one under way has
// finished when it returns.
func (m *memoryReturn) stop() {
	m.mu.Lock()
	m.stopped = true
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
	m.mu.Unlock()
	m.running.Wait()
}
