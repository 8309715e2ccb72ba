package statetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/scenariomock/scenariomock/state"
)

// fence checks the reset fence: a write fenced at an epoch that a Reset
// has since ended is refused and changes nothing; the others land.
func (h *harness) fence(t *testing.T) {
	t.Run("writes from before a reset are refused and change nothing", func(t *testing.T) {
		t.Parallel()
		s, _ := h.open(t, state.Options{})
		f := fencer(t, s)
		before := state.InEpoch(ctx, f.Epoch())
		// Fenced writes at the current epoch land.
		if n, err := s.Counters().Next(before, "n"); err != nil || n != 1 {
			t.Fatalf("Next fenced at the current epoch = %d, %v", n, err)
		}
		if _, err := s.Collections().Save(before, "orders", "old", []byte(`{}`)); err != nil {
			t.Fatalf("Save fenced at the current epoch: %v", err)
		}
		must(t, s.Journal().Append(before, &state.Entry{Path: "/before"}))

		e0 := f.Epoch()
		must(t, s.Reset(ctx))
		if e := f.Epoch(); e != e0+1 {
			t.Fatalf("Epoch after Reset = %d, want %d", e, e0+1)
		}
		after := state.InEpoch(ctx, f.Epoch())

		// The new state, written by requests that arrived after the reset.
		if n, err := s.Counters().Next(after, "n"); err != nil || n != 1 {
			t.Fatalf("Next after Reset = %d, %v, want 1", n, err)
		}
		if _, err := s.Collections().Save(after, "orders", "new", []byte(`{"n":1}`)); err != nil {
			t.Fatal(err)
		}
		must(t, s.Journal().Append(after, &state.Entry{Path: "/after"}))
		fresh := claim(t, s.Idempotency(), key("fresh"), fp("a"), state.ClaimOptions{}, state.New)
		late := claim(t, s.Idempotency(), key("late"), fp("a"), state.ClaimOptions{}, state.New)
		freed := claim(t, s.Idempotency(), key("freed"), fp("a"), state.ClaimOptions{}, state.New)

		// A straggler's writes: all refused.
		for name, err := range map[string]error{
			"Next of a counter the new state has": second(s.Counters().Next(before, "n")),
			"Next of a new counter":               second(s.Counters().Next(before, "m")),
			"Save":                                second(s.Collections().Save(before, "orders", "straggler", []byte(`{}`))),
			"Save over an item":                   second(s.Collections().Save(before, "orders", "new", []byte(`{"n":2}`))),
			"Delete":                              second(s.Collections().Delete(before, "orders", "new")),
			"Append":                              s.Journal().Append(before, &state.Entry{Path: "/straggler"}),
			// Its claim landed after the reset (it arrived just before):
			// the refused completion frees the key.
			"Complete": s.Idempotency().Complete(before, late.Token, response("straggler")),
		} {
			if !errors.Is(err, state.ErrFenced) {
				t.Errorf("%s fenced before the reset: %v, want ErrFenced", name, err)
			}
		}
		// Release is never fenced: a straggler must free its key.
		must(t, s.Idempotency().Release(before, freed.Token))
		// Writes without an epoch are not fenced (the admin API, seeding).
		if _, err := s.Collections().Save(ctx, "seeded", "1", []byte(`{}`)); err != nil {
			t.Fatalf("unfenced Save: %v", err)
		}
		must(t, s.Idempotency().Complete(after, fresh.Token, response("fresh")))

		// Nothing of the straggler is left.
		if n, err := s.Counters().Next(after, "n"); err != nil || n != 2 {
			t.Errorf("counter n = %d, %v, want 2 (1 after the reset, then this one)", n, err)
		}
		counters, err := s.Counters().List(ctx)
		must(t, err)
		for _, c := range counters {
			if c.Name == "m" {
				t.Errorf("the straggler's new counter m exists: %+v", counters)
			}
		}
		items, _, err := s.Collections().List(ctx, "orders", 0, 0)
		must(t, err)
		if len(items) != 1 || items[0].ID != "new" || string(items[0].Body) != `{"n":1}` {
			t.Errorf("orders = %+v, want only the item saved after the reset, unchanged", items)
		}
		entries, err := s.Journal().Entries(ctx, 0)
		must(t, err)
		if len(entries) != 1 || entries[0].Path != "/after" {
			t.Errorf("journal = %v, want only /after", paths(entries))
		}
		claim(t, s.Idempotency(), key("late"), fp("b"), state.ClaimOptions{}, state.New) // freed
		claim(t, s.Idempotency(), key("freed"), fp("b"), state.ClaimOptions{}, state.New)
		sameResponse(t, claim(t, s.Idempotency(), key("fresh"), fp("a"), state.ClaimOptions{}, state.Replay).Response, response("fresh"))
	})

	t.Run("no write from before a reset lands after it, under concurrency", func(t *testing.T) {
		t.Parallel()
		s, _ := h.open(t, state.Options{})
		f := fencer(t, s)
		const writers, each = 8, 60
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := range each {
					e := f.Epoch()
					fctx := state.InEpoch(ctx, e)
					// Each write says which epoch it was fenced at.
					tag := fmt.Sprintf("e%d-w%d-%d", e, w, i)
					if err := s.Journal().Append(fctx, &state.Entry{Path: "/" + tag}); err != nil && !errors.Is(err, state.ErrFenced) {
						t.Error(err)
						return
					}
					if _, err := s.Collections().Save(fctx, "orders", tag, []byte(`{}`)); err != nil && !errors.Is(err, state.ErrFenced) {
						t.Error(err)
						return
					}
				}
			}()
		}
		close(start)
		must(t, s.Reset(ctx))
		last := f.Epoch()
		wg.Wait()
		prefix := fmt.Sprintf("e%d-", last)
		entries, err := s.Journal().Entries(ctx, 0)
		must(t, err)
		for _, e := range entries {
			if !strings.HasPrefix(e.Path, "/"+prefix) {
				t.Fatalf("journal entry %s was written at an epoch before the last reset (%d)", e.Path, last)
			}
		}
		items, _, err := s.Collections().List(ctx, "orders", 0, 0)
		must(t, err)
		for _, it := range items {
			if !strings.HasPrefix(it.ID, prefix) {
				t.Fatalf("item %s was saved at an epoch before the last reset (%d)", it.ID, last)
			}
		}
	})
}

func fencer(t *testing.T, s state.Store) state.Fencer {
	t.Helper()
	f, ok := s.(state.Fencer)
	if !ok {
		t.Fatalf("%T does not implement state.Fencer", s)
	}
	return f
}

func second[T any](_ T, err error) error { return err }

func paths(entries []state.Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Path
	}
	return out
}
