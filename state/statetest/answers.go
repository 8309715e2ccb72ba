package statetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/state"
)

// answersAndItems checks that an idempotency answer whose body is the
// very bytes of an item just saved (a create's answer is the object it
// stored, and the memory store keeps those bytes once) replays those
// bytes whatever later happens to the item: Stripe replays the first
// answer, not the object as it is now.
func (h *harness) answersAndItems(t *testing.T) {
	hour := state.ClaimOptions{TTL: time.Hour}
	// body is a stored object of the size of a Stripe customer.
	body := func(id, name string) string {
		return fmt.Sprintf(`{"id":%q,"object":"customer","name":%q,"padding":%q}`, id, name, strings.Repeat("x", 900))
	}
	// created saves item id and completes key k with its bytes, as a
	// create does, and returns the answer.
	created := func(t *testing.T, s state.Store, k, id string) state.Response {
		t.Helper()
		c := claim(t, s.Idempotency(), key(k), fp(k), hour, state.New)
		b := []byte(body(id, "first"))
		_, err := s.Collections().Save(ctx, "customers", id, b)
		must(t, err)
		r := response(string(b))
		must(t, s.Idempotency().Complete(ctx, c.Token, r))
		return r
	}
	replays := func(t *testing.T, s state.Store, k string, want state.Response) {
		t.Helper()
		c := claim(t, s.Idempotency(), key(k), fp(k), hour, state.Replay)
		sameResponse(t, c.Response, want)
	}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, c state.Collections, id string)
	}{
		{"replaced", func(t *testing.T, c state.Collections, id string) {
			_, err := c.Save(ctx, "customers", id, []byte(body(id, "second")))
			must(t, err)
		}},
		{"replaced twice", func(t *testing.T, c state.Collections, id string) {
			for _, name := range []string{"second", "third"} {
				_, err := c.Save(ctx, "customers", id, []byte(body(id, name)))
				must(t, err)
			}
		}},
		{"deleted", func(t *testing.T, c state.Collections, id string) {
			_, err := c.Delete(ctx, "customers", id)
			must(t, err)
		}},
		{"deleted and saved again", func(t *testing.T, c state.Collections, id string) {
			_, err := c.Delete(ctx, "customers", id)
			must(t, err)
			_, err = c.Save(ctx, "customers", id, []byte(body(id, "again")))
			must(t, err)
		}},
		{"reseeded", func(t *testing.T, c state.Collections, id string) {
			must(t, c.Seed(ctx, "customers", []state.Item{{ID: id, Body: []byte(body(id, "seeded"))}}))
		}},
		{"collection reset", func(t *testing.T, c state.Collections, _ string) {
			must(t, c.Reset(ctx, "customers"))
		}},
		{"every collection reset", func(t *testing.T, c state.Collections, _ string) {
			must(t, c.Reset(ctx, ""))
		}},
	} {
		t.Run("an answer replays its first bytes after its item is "+tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := h.open(t, state.Options{})
			first := created(t, s, "k1", "cus_1")
			other := created(t, s, "k2", "cus_2")
			replays(t, s, "k1", first)
			tc.change(t, s.Collections(), "cus_1")
			replays(t, s, "k1", first)
			replays(t, s, "k1", first) // and again, from wherever it is kept now
			replays(t, s, "k2", other)
		})
	}
	t.Run("two answers with one item's bytes both replay them after it changes", func(t *testing.T) {
		t.Parallel()
		s, _ := h.open(t, state.Options{})
		first := created(t, s, "k1", "cus_1")
		c := claim(t, s.Idempotency(), key("k2"), fp("k2"), hour, state.New)
		must(t, s.Idempotency().Complete(ctx, c.Token, first))
		_, err := s.Collections().Save(ctx, "customers", "cus_1", []byte(body("cus_1", "second")))
		must(t, err)
		replays(t, s, "k1", first)
		replays(t, s, "k2", first)
	})
	t.Run("an item changes after the answer that had its bytes is forgotten", func(t *testing.T) {
		t.Parallel()
		s, _ := h.open(t, state.Options{})
		created(t, s, "k1", "cus_1")
		if n, err := s.Idempotency().Expire(ctx, "", "k1"); err != nil || n != 1 {
			t.Fatalf("Expire = %d, %v", n, err)
		}
		// Another key takes the forgotten one's place, with other bytes.
		second := created(t, s, "k2", "cus_2")
		_, err := s.Collections().Save(ctx, "customers", "cus_1", []byte(body("cus_1", "second")))
		must(t, err)
		_, err = s.Collections().Delete(ctx, "customers", "cus_1")
		must(t, err)
		replays(t, s, "k2", second)
		claim(t, s.Idempotency(), key("k1"), fp("k1"), hour, state.New)
	})
	t.Run("replays while the items change, concurrently", func(t *testing.T) {
		t.Parallel()
		s, _ := h.open(t, state.Options{})
		const n = 20
		firsts := make([]state.Response, n)
		for i := range n {
			firsts[i] = created(t, s, fmt.Sprint("k", i), fmt.Sprint("cus_", i))
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for round := range 20 {
					for i := range n {
						if g%2 == 0 {
							id := fmt.Sprint("cus_", i)
							if _, err := s.Collections().Save(ctx, "customers", id, []byte(body(id, fmt.Sprint(g, "-", round)))); err != nil {
								t.Error(err)
								return
							}
							continue
						}
						c, err := s.Idempotency().Claim(ctx, key(fmt.Sprint("k", i)), fp(fmt.Sprint("k", i)), hour)
						if err != nil || c.Outcome != state.Replay || string(c.Response.Body) != string(firsts[i].Body) {
							t.Errorf("replay of k%d = %v %.40q, %v; want its first answer", i, c.Outcome, c.Response.Body, err)
							return
						}
					}
				}
			})
		}
		wg.Wait()
	})
}
