package statetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/state"
)

// locks: a name's lock is held by one request at a time; another waits
// for it, up to its wait, and takes it once given back; a wait that runs
// out, or a context that ends, takes nothing.
func (h *harness) locks(t *testing.T) {
	s, _ := h.open(t, state.Options{})
	RunLocks(t, s.Locks(), s.Locks())
}

// RunLocks checks that a and b (one store's locks, or two replicas' of
// one shared store) exclude each other.
func RunLocks(t *testing.T, a, b state.Locks) {
	t.Helper()
	release, err := a.Lock(ctx, []string{"pi_1", "pi_2"}, time.Second)
	must(t, err)
	// A name held: the wait runs out, and nothing of the request's is
	// taken (pi_0, before it, stays free).
	if _, err := b.Lock(ctx, []string{"pi_0", "pi_2"}, 50*time.Millisecond); !errors.Is(err, state.ErrLockTimeout) {
		t.Fatalf("Lock of a held name = %v, want ErrLockTimeout", err)
	}
	free, err := b.Lock(ctx, []string{"pi_0", "pi_3", strings.Repeat("x", 1000)}, 50*time.Millisecond)
	if err != nil {
		t.Fatalf("Lock of free names = %v (a failed Lock kept what it took?)", err)
	}
	free()
	// A wait of 0: free names are taken, a held one is not waited for.
	free, err = b.Lock(ctx, []string{"pi_0"}, 0)
	if err != nil {
		t.Fatalf("Lock of a free name without waiting = %v", err)
	}
	free()
	if _, err := b.Lock(ctx, []string{"pi_0", "pi_1"}, 0); !errors.Is(err, state.ErrLockTimeout) {
		t.Fatalf("Lock of a held name without waiting = %v, want ErrLockTimeout", err)
	}
	// A context that ends first: its error.
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := b.Lock(cctx, []string{"pi_1"}, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock with a context that ends = %v, want its error", err)
	}
	// Given back: the waiter takes it.
	got := make(chan error, 1)
	go func() {
		r, err := b.Lock(ctx, []string{"pi_2"}, 30*time.Second)
		if err == nil {
			r()
		}
		got <- err
	}()
	release()
	if err := <-got; err != nil {
		t.Fatalf("Lock after the release = %v", err)
	}

	// Many at once, from both: one at a time inside, none lost.
	var inside, most atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	ran := 0
	var mu sync.Mutex // only for ran: the lock itself must exclude
	for i := range 40 {
		l := a
		if i%2 == 1 {
			l = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := l.Lock(ctx, []string{"shared", "z"}, 60*time.Second)
			if err != nil {
				failed.Store(err)
				return
			}
			n := inside.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			mu.Lock()
			ran++
			mu.Unlock()
			time.Sleep(time.Millisecond)
			inside.Add(-1)
			r()
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("Lock under contention: %v", err)
	}
	if ran != 40 || most.Load() != 1 {
		t.Fatalf("%d of 40 ran, at most %d at once; want 40, 1", ran, most.Load())
	}
}
