package state

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// queued returns how many wait for name.
func (l *LocalLocks) queued(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if q, ok := l.held[name]; ok {
		return len(q.waiters)
	}
	return 0
}

// TestLocalLocksFIFO: waiters take a name in the order they came, and
// one whose wait ran out leaves the queue to the others.
func TestLocalLocksFIFO(t *testing.T) {
	var l LocalLocks
	ctx := context.Background()
	release, err := l.Lock(ctx, []string{"a"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	waitQueued := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); l.queued("a") != n; {
			if time.Now().After(deadline) {
				t.Fatalf("%d waiting, want %d", l.queued("a"), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for i := range 5 {
		wg.Go(func() {
			r, err := l.Lock(ctx, []string{"a"}, time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			r()
		})
		waitQueued(i + 1)
		if i == 2 {
			// One that gives up in the middle of the queue.
			if _, err := l.Lock(ctx, []string{"a"}, 10*time.Millisecond); !errors.Is(err, ErrLockTimeout) {
				t.Fatalf("a wait that runs out = %v", err)
			}
			waitQueued(i + 1)
		}
	}
	release()
	wg.Wait()
	if !slices.Equal(order, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("taken in the order %v, want the order of arrival", order)
	}
	if n := l.Held(); n != 0 {
		t.Fatalf("%d names held after every release", n)
	}
}
