package statetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/scenariomock/scenariomock/state"
)

func (h *harness) sequences(t *testing.T) {
	cases := []struct {
		name string
		opts state.Options
		run  func(t *testing.T, seq state.Sequences)
	}{
		{"hits count from 0 per route", state.Options{}, func(t *testing.T, seq state.Sequences) {
			for i, route := range []string{"a", "a", "b", "a", "b"} {
				want := []int64{0, 1, 0, 2, 1}[i]
				if n, err := seq.Hit(ctx, route); err != nil || n != want {
					t.Fatalf("hit %d on %s = %d, %v; want %d", i, route, n, err, want)
				}
			}
		}},
		{"per-key positions count per value, and hits count them all", state.Options{}, func(t *testing.T, seq state.Sequences) {
			steps := []struct {
				value string
				want  state.Position
			}{{"u1", state.Position{Hit: 0, Key: 0}}, {"u1", state.Position{Hit: 1, Key: 1}}, {"u2", state.Position{Hit: 2, Key: 0}}, {"u1", state.Position{Hit: 3, Key: 2}}, {"", state.Position{Hit: 4, Key: 0}}}
			for _, st := range steps {
				if p, err := seq.HitKey(ctx, "r", st.value); err != nil || p != st.want {
					t.Fatalf("HitKey(%q) = %+v, %v; want %+v", st.value, p, err, st.want)
				}
			}
			if c, err := seq.Count(ctx, "r"); err != nil || c != (state.SequenceCount{Hits: 5, Keys: 3}) {
				t.Fatalf("Count = %+v, %v", c, err)
			}
			if c, err := seq.Count(ctx, "unknown"); err != nil || c != (state.SequenceCount{}) {
				t.Fatalf("Count of an unknown route = %+v, %v", c, err)
			}
		}},
		{"per-key values are bounded per route, oldest forgotten first", state.Options{MaxSequenceKeys: 2}, func(t *testing.T, seq state.Sequences) {
			for _, v := range []string{"a", "a", "b", "c"} { // c pushes a out
				_, err := seq.HitKey(ctx, "r", v)
				must(t, err)
			}
			// In order: b was kept, a starts over (and pushes c out).
			for _, st := range []struct {
				value string
				want  int64
			}{{"b", 1}, {"a", 0}} {
				if p, err := seq.HitKey(ctx, "r", st.value); err != nil || p.Key != st.want {
					t.Fatalf("HitKey(%q).Key = %d, %v; want %d", st.value, p.Key, err, st.want)
				}
			}
			if c, _ := seq.Count(ctx, "r"); c.Keys != 2 {
				t.Fatalf("Keys = %d, want 2", c.Keys)
			}
		}},
		{"reset one route or all", state.Options{}, func(t *testing.T, seq state.Sequences) {
			for _, r := range []string{"a", "b"} {
				_, err := seq.HitKey(ctx, r, "v")
				must(t, err)
			}
			must(t, seq.Reset(ctx, "a"))
			if p, _ := seq.HitKey(ctx, "a", "v"); p != (state.Position{}) {
				t.Fatalf("a after its reset = %+v", p)
			}
			if p, _ := seq.HitKey(ctx, "b", "v"); p != (state.Position{Hit: 1, Key: 1}) {
				t.Fatalf("b after a's reset = %+v", p)
			}
			must(t, seq.Reset(ctx, ""))
			for _, r := range []string{"a", "b"} {
				if c, _ := seq.Count(ctx, r); c != (state.SequenceCount{}) {
					t.Fatalf("%s after reset all = %+v", r, c)
				}
			}
		}},
		{"retain forgets the routes not listed", state.Options{}, func(t *testing.T, seq state.Sequences) {
			for _, r := range []string{"a", "b", "c"} {
				_, err := seq.Hit(ctx, r)
				must(t, err)
			}
			must(t, seq.Retain(ctx, []string{"a", "c", "new"}))
			for r, want := range map[string]int64{"a": 1, "b": 0, "c": 1} {
				if n, _ := seq.Hit(ctx, r); n != want {
					t.Fatalf("%s after Retain = %d, want %d", r, n, want)
				}
			}
		}},
		{"concurrent hits get every position exactly once", state.Options{}, func(t *testing.T, seq state.Sequences) {
			var (
				wg       sync.WaitGroup
				mu       sync.Mutex // guards hits and keys
				hits     []int64
				keyCalls []int64
			)
			for range 10 {
				wg.Go(func() {
					for range 100 {
						p, err := seq.HitKey(ctx, "r", "same")
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						hits, keyCalls = append(hits, p.Hit), append(keyCalls, p.Key)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if len(hits) != 1000 {
				t.Fatalf("%d of 1000 hits answered", len(hits)) // the errors above say why
			}
			slices.Sort(hits)
			slices.Sort(keyCalls)
			for i := range 1000 {
				if hits[i] != int64(i) || keyCalls[i] != int64(i) {
					t.Fatalf("position %d: hit %d, key %d", i, hits[i], keyCalls[i])
				}
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := h.open(t, tc.opts)
			tc.run(t, s.Sequences())
		})
	}
}

func (h *harness) counters(t *testing.T) {
	t.Run("counters count from 1 per name, list and reset", func(t *testing.T) {
		t.Parallel()
		s, _ := h.open(t, state.Options{})
		c := s.Counters()
		for i, name := range []string{"order", "order", "invoice", "order"} {
			want := []int64{1, 2, 1, 3}[i]
			if n, err := c.Next(ctx, name); err != nil || n != want {
				t.Fatalf("Next(%s) #%d = %d, %v; want %d", name, i, n, err, want)
			}
		}
		list, err := c.List(ctx)
		must(t, err)
		if want := []state.Counter{{Name: "invoice", Value: 1}, {Name: "order", Value: 3}}; !slices.Equal(list, want) {
			t.Fatalf("List = %v, want %v", list, want)
		}
		must(t, c.Reset(ctx, "order"))
		if n, _ := c.Next(ctx, "order"); n != 1 {
			t.Fatalf("order after its reset = %d, want 1", n)
		}
		if n, _ := c.Next(ctx, "invoice"); n != 2 {
			t.Fatalf("invoice after order's reset = %d, want 2", n)
		}
		must(t, c.Reset(ctx, ""))
		for _, name := range []string{"order", "invoice"} {
			if n, _ := c.Next(ctx, name); n != 1 {
				t.Fatalf("%s after reset all = %d, want 1", name, n)
			}
		}
	})
	t.Run("names are bounded, refused past the bound, and reset forgets them", func(t *testing.T) {
		t.Parallel()
		s, _ := h.open(t, state.Options{MaxCounters: 3})
		c := s.Counters()
		for _, name := range []string{"a", "b", "c", "a"} {
			_, err := c.Next(ctx, name)
			must(t, err)
		}
		if _, err := c.Next(ctx, "d"); !errors.Is(err, state.ErrCountersFull) {
			t.Fatalf("a fourth name of 3 = %v, want ErrCountersFull", err)
		}
		if n, err := c.Next(ctx, "a"); err != nil || n != 3 {
			t.Fatalf("a known name past the bound = %d, %v; want 3", n, err)
		}
		if _, err := c.Next(ctx, strings.Repeat("x", state.MaxCounterName+1)); !errors.Is(err, state.ErrCounterName) {
			t.Fatalf("a name of %d bytes = %v, want ErrCounterName", state.MaxCounterName+1, err)
		}
		must(t, c.Reset(ctx, "b"))
		if n, err := c.Next(ctx, "d"); err != nil || n != 1 {
			t.Fatalf("a new name after a reset made room = %d, %v; want 1", n, err)
		}
		pager, ok := c.(state.CounterPager)
		if !ok {
			t.Fatal("Counters do not page (state.CounterPager)")
		}
		page, total, err := pager.Page(ctx, 1, 1)
		must(t, err)
		if want := []state.Counter{{Name: "c", Value: 1}}; total != 3 || !slices.Equal(page, want) {
			t.Fatalf("Page(1, 1) = %v of %d, want %v of 3", page, total, want)
		}
		if page, total, _ := pager.Page(ctx, 5, 10); total != 3 || len(page) != 0 {
			t.Fatalf("a page past the end = %v of %d", page, total)
		}
		must(t, c.Reset(ctx, ""))
		if list, err := c.List(ctx); err != nil || len(list) != 0 {
			t.Fatalf("List after reset all = %v, %v; want no names", list, err)
		}
		for _, name := range []string{"e", "f", "g"} {
			if n, err := c.Next(ctx, name); err != nil || n != 1 {
				t.Fatalf("Next(%s) after reset all = %d, %v", name, n, err)
			}
		}
	})
	t.Run("concurrent next hands out every value once", func(t *testing.T) {
		t.Parallel()
		s, _ := h.open(t, state.Options{})
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex // guards seen
			seen []int64
		)
		for range 10 {
			wg.Go(func() {
				for range 100 {
					n, err := s.Counters().Next(ctx, "id")
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					seen = append(seen, n)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		slices.Sort(seen)
		for i, n := range seen {
			if n != int64(i+1) {
				t.Fatalf("value %d = %d", i+1, n)
			}
		}
	})
}

func ids(items []state.Item) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.ID+"="+string(it.Body))
	}
	return out
}

func (h *harness) collections(t *testing.T) {
	cases := []struct {
		name string
		opts state.Options
		run  func(t *testing.T, c state.Collections)
	}{
		{"save, load, replace in place and delete", state.Options{}, func(t *testing.T, c state.Collections) {
			for _, it := range []struct{ id, body string }{{"1", "a"}, {"2", "b"}, {"3", "c"}} {
				if created, err := c.Save(ctx, "orders", it.id, []byte(it.body)); err != nil || !created {
					t.Fatalf("Save(%s) = %v, %v", it.id, created, err)
				}
			}
			body := []byte("B")
			if created, err := c.Save(ctx, "orders", "2", body); err != nil || created {
				t.Fatalf("replacing Save = %v, %v; want not created", created, err)
			}
			body[0] = 'X' // the store copied it
			if b, ok, err := c.Load(ctx, "orders", "2"); err != nil || !ok || string(b) != "B" {
				t.Fatalf("Load(2) = %q, %v, %v", b, ok, err)
			}
			if _, ok, err := c.Load(ctx, "orders", "9"); err != nil || ok {
				t.Fatalf("Load(9) = %v, %v; want absent", ok, err)
			}
			if _, ok, _ := c.Load(ctx, "users", "1"); ok {
				t.Fatal("collections share ids")
			}
			items, total, err := c.List(ctx, "orders", 0, 0)
			must(t, err)
			if got := ids(items); total != 3 || !slices.Equal(got, []string{"1=a", "2=B", "3=c"}) {
				t.Fatalf("List = %v of %d", got, total)
			}
			if ok, err := c.Delete(ctx, "orders", "2"); err != nil || !ok {
				t.Fatalf("Delete(2) = %v, %v", ok, err)
			}
			if ok, err := c.Delete(ctx, "orders", "2"); err != nil || ok {
				t.Fatalf("second Delete(2) = %v, %v; want false", ok, err)
			}
			_, err = c.Save(ctx, "orders", "2", []byte("again"))
			must(t, err)
			items, _, _ = c.List(ctx, "orders", 0, 0)
			if got := ids(items); !slices.Equal(got, []string{"1=a", "3=c", "2=again"}) {
				t.Fatalf("after delete and save again = %v", got)
			}
		}},
		{"list pages in insertion order", state.Options{}, func(t *testing.T, c state.Collections) {
			for i := range 7 {
				_, err := c.Save(ctx, "orders", fmt.Sprint(i), []byte("x"))
				must(t, err)
			}
			pages := []struct {
				offset, limit int
				want          []string
			}{
				{0, 3, []string{"0=x", "1=x", "2=x"}},
				{3, 3, []string{"3=x", "4=x", "5=x"}},
				{6, 3, []string{"6=x"}},
				{9, 3, []string{}},
				{-1, 2, []string{"0=x", "1=x"}},
			}
			for _, p := range pages {
				items, total, err := c.List(ctx, "orders", p.offset, p.limit)
				must(t, err)
				if got := ids(items); total != 7 || !slices.Equal(got, p.want) {
					t.Fatalf("List(%d, %d) = %v of %d, want %v of 7", p.offset, p.limit, got, total, p.want)
				}
			}
			if items, total, err := c.List(ctx, "none", 0, 10); err != nil || total != 0 || len(items) != 0 {
				t.Fatalf("List of an unknown collection = %v of %d, %v", items, total, err)
			}
		}},
		{"seed replaces a collection's items", state.Options{}, func(t *testing.T, c state.Collections) {
			_, err := c.Save(ctx, "orders", "old", []byte("o"))
			must(t, err)
			must(t, c.Seed(ctx, "orders", []state.Item{{ID: "s1", Body: []byte("1")}, {ID: "s2", Body: []byte("2")}, {ID: "s1", Body: []byte("1b")}}))
			items, _, _ := c.List(ctx, "orders", 0, 0)
			if got := ids(items); !slices.Equal(got, []string{"s1=1b", "s2=2"}) {
				t.Fatalf("after Seed = %v", got)
			}
		}},
		{"the bound refuses new items with ErrFull and changes nothing", state.Options{MaxItems: 3}, func(t *testing.T, c state.Collections) {
			for _, id := range []string{"1", "2"} {
				_, err := c.Save(ctx, "orders", id, []byte("x"))
				must(t, err)
			}
			_, err := c.Save(ctx, "users", "1", []byte("x"))
			must(t, err)
			if _, err := c.Save(ctx, "users", "2", []byte("x")); !errors.Is(err, state.ErrFull) {
				t.Fatalf("Save past the bound: %v, want ErrFull", err)
			}
			if _, err := c.Save(ctx, "users", "1", []byte("y")); err != nil {
				t.Fatalf("replacing at the bound: %v", err)
			}
			if err := c.Seed(ctx, "orders", []state.Item{{ID: "a"}, {ID: "b"}, {ID: "c"}}); !errors.Is(err, state.ErrFull) {
				t.Fatalf("Seed past the bound: %v, want ErrFull", err)
			}
			if _, total, _ := c.List(ctx, "orders", 0, 0); total != 2 {
				t.Fatalf("a refused Seed changed the collection: %d items", total)
			}
			must(t, c.Seed(ctx, "orders", []state.Item{{ID: "a"}, {ID: "b"}})) // replaces 2 with 2
			_, err = c.Delete(ctx, "orders", "a")
			must(t, err)
			if _, err := c.Save(ctx, "users", "2", []byte("x")); err != nil {
				t.Fatalf("Save after a delete made room: %v", err)
			}
		}},
		{"the byte bound refuses what would pass it and changes nothing", state.Options{MaxCollectionBytes: 20}, func(t *testing.T, c state.Collections) {
			ten := []byte("0123456789")
			_, err := c.Save(ctx, "orders", "a", ten) // 11 bytes with its id
			must(t, err)
			if _, err := c.Save(ctx, "orders", "b", ten); !errors.Is(err, state.ErrFull) {
				t.Fatalf("Save of 11 more bytes of 20 with 11 used: %v, want ErrFull", err)
			}
			if _, err := c.Save(ctx, "orders", "a", []byte("0123456789012345678")); err != nil { // 20 bytes
				t.Fatalf("replacing up to the byte bound: %v", err)
			}
			if _, err := c.Save(ctx, "orders", "a", []byte("01234567890123456789")); !errors.Is(err, state.ErrFull) {
				t.Fatalf("replacing past the byte bound: %v, want ErrFull", err)
			}
			if body, _, _ := c.Load(ctx, "orders", "a"); string(body) != "0123456789012345678" {
				t.Fatalf("a refused replace changed the item: %q", body)
			}
			if err := c.Seed(ctx, "users", []state.Item{{ID: "x", Body: []byte("1")}}); !errors.Is(err, state.ErrFull) {
				t.Fatalf("Seed past the byte bound: %v, want ErrFull", err)
			}
			must(t, c.Seed(ctx, "orders", []state.Item{{ID: "s", Body: ten}, {ID: "s", Body: []byte("1")}})) // replaces a: 2 bytes
			if _, err := c.Save(ctx, "users", "u", ten); err != nil {
				t.Fatalf("Save after a Seed made room: %v", err)
			}
			_, err = c.Delete(ctx, "users", "u")
			must(t, err)
			must(t, c.Reset(ctx, "orders"))
			if _, err := c.Save(ctx, "users", "0123456789", []byte("012345678")); err != nil {
				t.Fatalf("Save of 19 bytes after a delete and a reset: %v", err)
			}
		}},
		// Enough replaced and deleted bytes that a store which packs
		// bodies together moves the living ones (Memory's arena compacts
		// past 64 KiB dropped); a body loaded before stays what it was.
		{"bodies survive many replaces and deletes", state.Options{}, func(t *testing.T, c state.Collections) {
			body := func(i, round int) []byte {
				return fmt.Appendf(bytes.Repeat([]byte{'.'}, 500), `{"id":%d,"round":%d}`, i, round)
			}
			const n = 200
			for round := range 3 {
				for i := range n {
					_, err := c.Save(ctx, "orders", fmt.Sprint(i), body(i, round))
					must(t, err)
				}
			}
			first, _, err := c.Load(ctx, "orders", "0")
			must(t, err)
			for i := 0; i < n; i += 2 {
				if ok, err := c.Delete(ctx, "orders", fmt.Sprint(i)); err != nil || !ok {
					t.Fatalf("Delete(%d) = %v, %v", i, ok, err)
				}
			}
			for i := 1; i < n; i += 2 {
				_, err := c.Save(ctx, "orders", fmt.Sprint(i), body(i, 3))
				must(t, err)
			}
			if !bytes.Equal(first, body(0, 2)) {
				t.Fatalf("a body loaded before the deletes changed to %.40q", first)
			}
			items, total, err := c.List(ctx, "orders", 0, 0)
			must(t, err)
			if total != n/2 || len(items) != n/2 {
				t.Fatalf("List = %d items of %d, want %d", len(items), total, n/2)
			}
			for k, it := range items {
				i := 2*k + 1
				if it.ID != fmt.Sprint(i) || !bytes.Equal(it.Body, body(i, 3)) {
					t.Fatalf("item %d = %s %.40q, want %d and its last body", k, it.ID, it.Body, i)
				}
				if b, ok, err := c.Load(ctx, "orders", it.ID); err != nil || !ok || !bytes.Equal(b, it.Body) {
					t.Fatalf("Load(%s) = %.40q, %v, %v", it.ID, b, ok, err)
				}
			}
		}},
		{"reset one collection or all, and counts", state.Options{}, func(t *testing.T, c state.Collections) {
			for _, col := range []string{"orders", "orders", "users"} {
				_, err := c.Save(ctx, col, fmt.Sprint(len(col), col), []byte("x"))
				must(t, err)
			}
			_, err := c.Save(ctx, "orders", "another", []byte("x"))
			must(t, err)
			counts, err := c.Counts(ctx)
			must(t, err)
			if want := []state.CollectionCount{{Name: "orders", Items: 2}, {Name: "users", Items: 1}}; !slices.Equal(counts, want) {
				t.Fatalf("Counts = %v, want %v", counts, want)
			}
			must(t, c.Reset(ctx, "orders"))
			if _, total, _ := c.List(ctx, "users", 0, 0); total != 1 {
				t.Fatal("resetting orders emptied users")
			}
			must(t, c.Reset(ctx, ""))
			if counts, _ := c.Counts(ctx); len(counts) != 0 {
				t.Fatalf("Counts after reset all = %v", counts)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := h.open(t, tc.opts)
			tc.run(t, s.Collections())
		})
	}
}

func (h *harness) storeReset(t *testing.T) {
	s, _ := h.open(t, state.Options{})
	c := claim(t, s.Idempotency(), key("k"), fp("a"), state.ClaimOptions{}, state.New)
	must(t, s.Idempotency().Complete(ctx, c.Token, response("x")))
	_, err := s.Sequences().Hit(ctx, "r")
	must(t, err)
	_, err = s.Counters().Next(ctx, "n")
	must(t, err)
	_, err = s.Collections().Save(ctx, "orders", "1", []byte("x"))
	must(t, err)
	must(t, s.Reset(ctx))
	claim(t, s.Idempotency(), key("k"), fp("b"), state.ClaimOptions{}, state.New)
	if n, _ := s.Sequences().Hit(ctx, "r"); n != 0 {
		t.Errorf("hit after Reset = %d", n)
	}
	if n, _ := s.Counters().Next(ctx, "n"); n != 1 {
		t.Errorf("counter after Reset = %d", n)
	}
	if _, ok, _ := s.Collections().Load(ctx, "orders", "1"); ok {
		t.Error("item kept by Reset")
	}
}
