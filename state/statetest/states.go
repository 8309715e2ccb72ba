package statetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/scenariomock/scenariomock/state"
)

// states tests the route states: Started until set, per session, name
// and key; List and Reset by filter; the bound; the fence; and a store
// Reset.
func (h *harness) states(t *testing.T) {
	order := func(session, key string) state.StateKey {
		return state.StateKey{Session: session, Name: "order", Key: key}
	}
	get := func(t *testing.T, ss state.States, k state.StateKey) string {
		t.Helper()
		v, err := ss.Get(ctx, k)
		must(t, err)
		return v
	}
	t.Run("unset is Started; each session, name and key has its own", func(t *testing.T) {
		t.Parallel()
		s, _ := h.open(t, state.Options{})
		ss := s.States()
		if v := get(t, ss, order("", "1")); v != state.StateStarted {
			t.Fatalf("unset state = %q, want %q", v, state.StateStarted)
		}
		must(t, ss.Set(ctx, order("", "1"), "paid"))
		must(t, ss.Set(ctx, order("A", "1"), "shipped"))
		must(t, ss.Set(ctx, state.StateKey{Name: "todo"}, "one item"))
		for k, want := range map[state.StateKey]string{
			order("", "1"): "paid", order("A", "1"): "shipped", order("", "2"): state.StateStarted,
			order("B", "1"): state.StateStarted, {Name: "todo"}: "one item", {Name: "todo", Key: "1"}: state.StateStarted,
		} {
			if v := get(t, ss, k); v != want {
				t.Errorf("Get(%+v) = %q, want %q", k, v, want)
			}
		}
		must(t, ss.Set(ctx, order("", "1"), "refunded"))
		if v := get(t, ss, order("", "1")); v != "refunded" {
			t.Errorf("after a second Set = %q, want refunded", v)
		}
		all, err := ss.List(ctx, state.AllStates)
		must(t, err)
		want := []state.StateValue{{StateKey: order("", "1"), Value: "refunded"}, {StateKey: state.StateKey{Name: "todo"}, Value: "one item"}, {StateKey: order("A", "1"), Value: "shipped"}}
		if !slices.Equal(all, want) {
			t.Fatalf("List = %+v, want %+v", all, want)
		}
	})
	t.Run("List and Reset by filter", func(t *testing.T) {
		t.Parallel()
		s, _ := h.open(t, state.Options{})
		ss := s.States()
		for _, k := range []state.StateKey{order("", "1"), order("", "2"), order("A", "1"), {Name: "todo"}} {
			must(t, ss.Set(ctx, k, "x"))
		}
		got, err := ss.List(ctx, state.StateFilter{Name: "order", AnyKey: true})
		must(t, err)
		if len(got) != 2 || got[0].Key != "1" || got[1].Key != "2" {
			t.Fatalf("List(order, no session) = %+v", got)
		}
		n, err := ss.Reset(ctx, state.StateFilter{Name: "order", Key: "1", AnySession: true})
		must(t, err)
		if n != 2 {
			t.Fatalf("Reset(order/1, any session) = %d, want 2", n)
		}
		if v := get(t, ss, order("A", "1")); v != state.StateStarted {
			t.Fatalf("after Reset = %q", v)
		}
		if v := get(t, ss, order("", "2")); v != "x" {
			t.Fatalf("a state Reset did not select = %q", v)
		}
		n, err = ss.Reset(ctx, state.AllStates)
		must(t, err)
		if n != 2 {
			t.Fatalf("Reset(all) = %d, want 2", n)
		}
		if got, _ := ss.List(ctx, state.AllStates); len(got) != 0 {
			t.Fatalf("List after Reset(all) = %+v", got)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		t.Parallel()
		s, _ := h.open(t, state.Options{MaxStates: 2})
		ss := s.States()
		must(t, ss.Set(ctx, order("", "1"), "a"))
		must(t, ss.Set(ctx, order("", "2"), "a"))
		if err := ss.Set(ctx, order("", "3"), "a"); !errors.Is(err, state.ErrStatesFull) {
			t.Fatalf("Set past the bound = %v, want ErrStatesFull", err)
		}
		must(t, ss.Set(ctx, order("", "2"), "b")) // a kept key moves
		if err := ss.Set(ctx, order("", strings.Repeat("k", state.MaxStatePart+1)), "a"); !errors.Is(err, state.ErrStatesFull) {
			t.Fatalf("Set of a long key = %v, want ErrStatesFull", err)
		}
		_, err := ss.Reset(ctx, state.StateFilter{Name: "order", Key: "1"})
		must(t, err)
		must(t, ss.Set(ctx, order("", "3"), "a"))
	})
	t.Run("fenced by a store Reset, which forgets them", func(t *testing.T) {
		t.Parallel()
		s, _ := h.open(t, state.Options{})
		ss := s.States()
		f := fencer(t, s)
		before := state.InEpoch(ctx, f.Epoch())
		must(t, ss.Set(before, order("", "1"), "paid"))
		must(t, s.Reset(ctx))
		if v := get(t, ss, order("", "1")); v != state.StateStarted {
			t.Fatalf("after a store Reset = %q, want Started", v)
		}
		if err := ss.Set(before, order("", "1"), "paid"); !errors.Is(err, state.ErrFenced) {
			t.Fatalf("Set from before the Reset = %v, want ErrFenced", err)
		}
		if v := get(t, ss, order("", "1")); v != state.StateStarted {
			t.Fatalf("a fenced Set wrote %q", v)
		}
		must(t, ss.Set(state.InEpoch(ctx, f.Epoch()), order("", "1"), "paid"))
	})
	t.Run("concurrent sets of many keys", func(t *testing.T) {
		t.Parallel()
		s, _ := h.open(t, state.Options{})
		ss := s.States()
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 20 {
					if err := ss.Set(ctx, order("", fmt.Sprint(i)), fmt.Sprint(j)); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		for i := range 8 {
			if v := get(t, ss, order("", fmt.Sprint(i))); v != "19" {
				t.Errorf("key %d = %q, want 19", i, v)
			}
		}
	})
}
