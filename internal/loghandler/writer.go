package loghandler

import (
	"context"
	"io"
	"sync"
	"time"
)

// Writer buffers log output so that the log line every request writes
// costs no system call on the request's path: Write only appends to a
// buffer; Run, in its own goroutine, writes full buffers out at once and
// the current one every interval. It is safe for concurrent use.
//
// slog's handlers hold their own lock while they call Write, so a Write
// that made a system call would stall every request goroutine behind it;
// that is what this type exists to avoid.
type Writer struct {
	w        io.Writer
	mu       sync.Mutex // guards buf, pending, free, inFlight and running
	room     sync.Cond  // signalled each time Run has written a buffer out
	buf      []byte
	pending  [][]byte // full buffers, oldest first, for Run to write
	free     [][]byte // written buffers, for reuse: steady logging allocates nothing
	inFlight int      // buffers Run has taken and not yet written
	running  bool
	wake     chan struct{} // tells Run that a buffer is pending
}

// logBuffer is the size at which a buffer is handed to Run; logPending
// bounds the buffers waiting, so a stuck destination slows logging down
// rather than growing memory without bound.
const (
	logBuffer  = 64 << 10
	logPending = 8
)

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer {
	l := &Writer{w: w, wake: make(chan struct{}, 1)}
	l.room.L = &l.mu
	return l
}

// Write appends p. While Run is not running it writes through, so that
// nothing logged before Run starts or after it ends is held back.
func (l *Writer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.running {
		return l.w.Write(p)
	}
	l.buf = append(l.buf, p...)
	l.filled()
	return len(p), nil
}

// lockBuffer locks l and returns its buffer, for a line to be appended to
// it in place and handed back with unlockBuffer; false (and l unlocked)
// when Run is not running, and lines are written through.
func (l *Writer) lockBuffer() ([]byte, bool) {
	l.mu.Lock()
	if !l.running {
		l.mu.Unlock()
		return nil, false
	}
	return l.buf, true
}

// unlockBuffer takes back the buffer lockBuffer gave, with what was
// appended to it, and unlocks l.
func (l *Writer) unlockBuffer(b []byte) error {
	l.buf = b
	l.filled()
	l.mu.Unlock()
	return nil
}

// filled hands the buffer to Run once it is full, and waits while Run is
// behind. l.mu is held.
func (l *Writer) filled() {
	if len(l.buf) < logBuffer {
		return
	}
	l.pending = append(l.pending, l.buf)
	if n := len(l.free); n > 0 {
		l.buf, l.free = l.free[n-1][:0], l.free[:n-1]
	} else {
		l.buf = make([]byte, 0, logBuffer+logBuffer/4)
	}
	select {
	case l.wake <- struct{}{}:
	default: // Run is already woken
	}
	for l.running && len(l.pending)+l.inFlight > logPending {
		l.room.Wait() // backpressure: Run is behind
	}
}

// Run writes log output until ctx ends, then writes what is left and
// returns; later writes go straight through. While it runs it is the only
// goroutine that writes, so lines keep their order.
func (l *Writer) Run(ctx context.Context, interval time.Duration) {
	l.mu.Lock()
	l.running = true
	l.mu.Unlock()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		withCurrent := false
		select {
		case <-l.wake:
		case <-t.C:
			withCurrent = true
		case <-ctx.Done():
			// The last buffers are written under the lock, so that no line
			// written through afterwards can overtake them.
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, b := range append(l.pending, l.buf) {
				_, _ = l.w.Write(b)
			}
			l.pending, l.buf, l.running = nil, nil, false
			l.room.Broadcast() // writers waiting for room now write through
			return
		}
		l.mu.Lock()
		out := l.pending
		l.pending = nil
		if withCurrent && len(l.buf) > 0 {
			out = append(out, l.buf)
			l.buf = nil
		}
		l.inFlight = len(out)
		l.mu.Unlock()
		for _, b := range out {
			_, _ = l.w.Write(b)
			l.mu.Lock()
			l.inFlight--
			if cap(b) >= logBuffer && len(l.free) < logPending {
				l.free = append(l.free, b)
			}
			l.room.Broadcast()
			l.mu.Unlock()
		}
	}
}
