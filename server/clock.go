package server

import (
	"context"
	"time"
)

// Clock is the server's source of time. Tests inject one to shorten or
// record delays; the default is the real clock.
type Clock interface {
	Now() time.Time
	// Wait blocks for d or until ctx ends, and reports whether d elapsed.
	// It holds no thread: it waits on a timer and the context.
	Wait(ctx context.Context, d time.Duration) bool
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
