package statetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/state"
)

// NewStore builds a fresh, empty store with the given options. Run closes
// it when the test ends.
type NewStore func(t *testing.T, o state.Options) state.Store

// Run runs the conformance suite against the stores newStore builds.
func Run(t *testing.T, newStore NewStore) {
	h := &harness{newStore: newStore}
	t.Run("Idempotency", h.idempotency)
	t.Run("IdempotencyConcurrency", h.concurrency)
	t.Run("IdempotencyBound", h.bound)
	t.Run("Sequences", h.sequences)
	t.Run("Counters", h.counters)
	t.Run("Collections", h.collections)
	t.Run("AnswersAndItems", h.answersAndItems)
	t.Run("StoreReset", h.storeReset)
	t.Run("Fence", h.fence)
	t.Run("Journal", h.journal)
	t.Run("Documents", h.documents)
	t.Run("Replicas", h.replicas)
	t.Run("Locks", h.locks)
	t.Run("States", h.states)
}

type harness struct{ newStore NewStore }

// Clock is a manual clock for state.Options.Now. It is safe for
// concurrent use.
type Clock struct {
	mu  sync.Mutex // guards now
	now time.Time
}

// NewClock returns a clock stopped at a fixed instant.
func NewClock() *Clock {
	return &Clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// open builds a store with a manual clock and the given options.
func (h *harness) open(t *testing.T, o state.Options) (state.Store, *Clock) {
	t.Helper()
	c := NewClock()
	if o.Now == nil {
		o.Now = c.Now
	}
	s := h.newStore(t, o)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, c
}

var ctx = context.Background()

func fp(s string) state.Fingerprint {
	var f state.Fingerprint
	copy(f[:], s)
	return f
}

func key(k string) state.Key { return state.Key{Group: "charges", Scope: "acct_1", Key: k} }

func response(body string) state.Response {
	return state.Response{
		Status: 201,
		// Order matters and a name may repeat: the replay is byte for byte.
		Header: []state.Header{{Name: "Content-Type", Value: "application/json"}, {Name: "Set-Cookie", Value: "b=2"}, {Name: "Set-Cookie", Value: "a=1"}},
		Body:   []byte(body),
	}
}

// claim calls Claim and fails the test on an error or an unexpected outcome.
func claim(t *testing.T, idem state.Idempotency, k state.Key, f state.Fingerprint, o state.ClaimOptions, want state.Outcome) state.Claim {
	t.Helper()
	c, err := idem.Claim(ctx, k, f, o)
	if err != nil {
		t.Fatalf("Claim(%q): %v", k.Key, err)
	}
	if c.Outcome != want {
		t.Fatalf("Claim(%q) = %v, want %v", k.Key, c.Outcome, want)
	}
	return c
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func sameResponse(t *testing.T, got, want state.Response) {
	t.Helper()
	if got.Status != want.Status || !slices.Equal(got.Header, want.Header) || !bytes.Equal(got.Body, want.Body) {
		t.Fatalf("response = %d %v %q, want %d %v %q", got.Status, got.Header, got.Body, want.Status, want.Header, want.Body)
	}
}

func (h *harness) idempotency(t *testing.T) {
	hour := state.ClaimOptions{TTL: time.Hour}
	cases := []struct {
		name string
		run  func(t *testing.T, idem state.Idempotency, clock *Clock)
	}{
		{"first claim of a key is new", func(t *testing.T, idem state.Idempotency, _ *Clock) {
			c := claim(t, idem, key("k1"), fp("a"), hour, state.New)
			if c.Token.Key != key("k1") {
				t.Fatalf("token key = %+v", c.Token.Key)
			}
		}},
		{"same key and fingerprint after completion replays the exact response", func(t *testing.T, idem state.Idempotency, _ *Clock) {
			c := claim(t, idem, key("k1"), fp("a"), hour, state.New)
			must(t, idem.Complete(ctx, c.Token, response(`{"id":"ch_1"}`)))
			for range 2 {
				r := claim(t, idem, key("k1"), fp("a"), hour, state.Replay)
				sameResponse(t, r.Response, response(`{"id":"ch_1"}`))
			}
			recs, _, err := idem.List(ctx, state.ListOptions{})
			must(t, err)
			if len(recs) != 1 || recs[0].Replays != 2 {
				t.Fatalf("records = %+v, want one with 2 replays", recs)
			}
		}},
		{"complete copies the body, so the caller may reuse its buffer", func(t *testing.T, idem state.Idempotency, _ *Clock) {
			c := claim(t, idem, key("k1"), fp("a"), hour, state.New)
			r := response(`{"id":"ch_1"}`)
			must(t, idem.Complete(ctx, c.Token, r))
			copy(r.Body, "XXXXXXXX")
			r.Header[0].Value = "text/plain"
			sameResponse(t, claim(t, idem, key("k1"), fp("a"), hour, state.Replay).Response, response(`{"id":"ch_1"}`))
		}},
		{"same key with another fingerprint after completion is a mismatch", func(t *testing.T, idem state.Idempotency, _ *Clock) {
			c := claim(t, idem, key("k1"), fp("a"), hour, state.New)
			must(t, idem.Complete(ctx, c.Token, response("{}")))
			claim(t, idem, key("k1"), fp("b"), hour, state.Mismatch)
			// The mismatch changed nothing: the first payload still replays.
			claim(t, idem, key("k1"), fp("a"), hour, state.Replay)
		}},
		{"same key with another fingerprint while in flight is a mismatch, even when waiting", func(t *testing.T, idem state.Idempotency, _ *Clock) {
			claim(t, idem, key("k1"), fp("a"), hour, state.New)
			claim(t, idem, key("k1"), fp("b"), hour, state.Mismatch)
			claim(t, idem, key("k1"), fp("b"), state.ClaimOptions{TTL: time.Hour, Wait: true}, state.Mismatch)
		}},
		{"same key while the first is in flight is in flight", func(t *testing.T, idem state.Idempotency, _ *Clock) {
			c := claim(t, idem, key("k1"), fp("a"), hour, state.New)
			claim(t, idem, key("k1"), fp("a"), hour, state.InFlight)
			must(t, idem.Complete(ctx, c.Token, response("{}")))
			claim(t, idem, key("k1"), fp("a"), hour, state.Replay)
		}},
		{"groups and scopes keep keys apart", func(t *testing.T, idem state.Idempotency, _ *Clock) {
			k := key("k1")
			claim(t, idem, k, fp("a"), hour, state.New)
			claim(t, idem, state.Key{Group: "refunds", Scope: k.Scope, Key: k.Key}, fp("b"), hour, state.New)
			claim(t, idem, state.Key{Group: k.Group, Scope: "acct_2", Key: k.Key}, fp("b"), hour, state.New)
		}},
		{"waiting claim gets the stored response once the first completes", func(t *testing.T, idem state.Idempotency, _ *Clock) {
			for i := range 20 {
				k := key(fmt.Sprint("k", i))
				c := claim(t, idem, k, fp("a"), hour, state.New)
				var completed atomic.Bool
				got := make(chan state.Claim, 1)
				go func() {
					r, err := idem.Claim(ctx, k, fp("a"), state.ClaimOptions{TTL: time.Hour, Wait: true})
					if err != nil {
						t.Error(err)
					}
					if r.Outcome != state.Replay {
						t.Errorf("waiting claim = %v (first completed: %v), want replay", r.Outcome, completed.Load())
					}
					got <- r
				}()
				runtime.Gosched() // most rounds, the waiter is blocked before Complete
				completed.Store(true)
				must(t, idem.Complete(ctx, c.Token, response(k.Key)))
				sameResponse(t, (<-got).Response, response(k.Key))
			}
		}},
		{"waiting claim takes the key over when the first releases it", func(t *testing.T, idem state.Idempotency, _ *Clock) {
			c := claim(t, idem, key("k1"), fp("a"), hour, state.New)
			got := make(chan state.Claim, 1)
			go func() {
				r, err := idem.Claim(ctx, key("k1"), fp("a"), state.ClaimOptions{TTL: time.Hour, Wait: true})
				if err != nil {
					t.Error(err)
				}
				got <- r
			}()
			runtime.Gosched()
			must(t, idem.Release(ctx, c.Token))
			r := <-got
			if r.Outcome != state.New {
				t.Fatalf("waiting claim after release = %v, want new", r.Outcome)
			}
			must(t, idem.Complete(ctx, r.Token, response("second")))
			sameResponse(t, claim(t, idem, key("k1"), fp("a"), hour, state.Replay).Response, response("second"))
		}},
		{"waiting is bounded by the waiter's context", func(t *testing.T, idem state.Idempotency, _ *Clock) {
			claim(t, idem, key("k1"), fp("a"), hour, state.New)
			wctx, cancel := context.WithCancel(ctx)
			got := make(chan state.Claim, 1)
			go func() {
				r, err := idem.Claim(wctx, key("k1"), fp("a"), state.ClaimOptions{TTL: time.Hour, Wait: true})
				if err != nil {
					t.Error(err)
				}
				got <- r
			}()
			runtime.Gosched()
			cancel()
			if r := <-got; r.Outcome != state.InFlight {
				t.Fatalf("cancelled wait = %v, want in-flight", r.Outcome)
			}
			// The first request is unaffected.
			claim(t, idem, key("k1"), fp("a"), hour, state.InFlight)
		}},
		{"release frees the key so that a retry runs the route again", func(t *testing.T, idem state.Idempotency, _ *Clock) {
			c := claim(t, idem, key("k1"), fp("a"), hour, state.New)
			must(t, idem.Release(ctx, c.Token))
			// A retry may even carry another payload: nothing was stored.
			c2 := claim(t, idem, key("k1"), fp("b"), hour, state.New)
			if c2.Token == c.Token {
				t.Fatal("a new claim reused the released token")
			}
			must(t, idem.Complete(ctx, c2.Token, response("ok")))
			claim(t, idem, key("k1"), fp("b"), hour, state.Replay)
		}},
		{"only the current claimer completes or releases", func(t *testing.T, idem state.Idempotency, _ *Clock) {
			c := claim(t, idem, key("k1"), fp("a"), hour, state.New)
			must(t, idem.Release(ctx, c.Token))
			if err := idem.Release(ctx, c.Token); !errors.Is(err, state.ErrNotClaimed) {
				t.Fatalf("second Release: %v, want ErrNotClaimed", err)
			}
			c2 := claim(t, idem, key("k1"), fp("a"), hour, state.New)
			if err := idem.Complete(ctx, c.Token, response("stale")); !errors.Is(err, state.ErrNotClaimed) {
				t.Fatalf("Complete with a released token: %v, want ErrNotClaimed", err)
			}
			must(t, idem.Complete(ctx, c2.Token, response("fresh")))
			if err := idem.Complete(ctx, c2.Token, response("again")); !errors.Is(err, state.ErrNotClaimed) {
				t.Fatalf("second Complete: %v, want ErrNotClaimed", err)
			}
			if err := idem.Release(ctx, c2.Token); !errors.Is(err, state.ErrNotClaimed) {
				t.Fatalf("Release after Complete: %v, want ErrNotClaimed", err)
			}
			if err := idem.Release(ctx, state.Token{Key: key("never"), ID: 1}); !errors.Is(err, state.ErrNotClaimed) {
				t.Fatalf("Release of an unknown key: %v, want ErrNotClaimed", err)
			}
			sameResponse(t, claim(t, idem, key("k1"), fp("a"), hour, state.Replay).Response, response("fresh"))
		}},
		{"a key past its ttl is new again", func(t *testing.T, idem state.Idempotency, clock *Clock) {
			c := claim(t, idem, key("k1"), fp("a"), state.ClaimOptions{TTL: time.Minute}, state.New)
			must(t, idem.Complete(ctx, c.Token, response("first")))
			clock.Advance(time.Minute - time.Nanosecond)
			claim(t, idem, key("k1"), fp("b"), state.ClaimOptions{TTL: time.Minute}, state.Mismatch)
			clock.Advance(time.Nanosecond)
			claim(t, idem, key("k1"), fp("b"), state.ClaimOptions{TTL: time.Minute}, state.New)
		}},
		{"a zero ttl keeps the key 24 hours", func(t *testing.T, idem state.Idempotency, clock *Clock) {
			c := claim(t, idem, key("k1"), fp("a"), state.ClaimOptions{}, state.New)
			must(t, idem.Complete(ctx, c.Token, response("first")))
			clock.Advance(24*time.Hour - time.Second)
			claim(t, idem, key("k1"), fp("a"), state.ClaimOptions{}, state.Replay)
			clock.Advance(time.Second)
			claim(t, idem, key("k1"), fp("a"), state.ClaimOptions{}, state.New)
		}},
		{"a key in flight never expires: its ttl counts from completion", func(t *testing.T, idem state.Idempotency, clock *Clock) {
			minute := state.ClaimOptions{TTL: time.Minute}
			c := claim(t, idem, key("k1"), fp("a"), minute, state.New)
			// The route runs longer than its ttl: a retry must not run it
			// a second time while the first still runs.
			clock.Advance(time.Hour)
			claim(t, idem, key("k1"), fp("a"), minute, state.InFlight)
			claim(t, idem, key("k1"), fp("b"), minute, state.Mismatch)
			recs, _, err := idem.List(ctx, state.ListOptions{})
			must(t, err)
			if len(recs) != 1 || recs[0].State != state.StateInFlight {
				t.Fatalf("an in-flight key an hour past its ttl is listed as %+v", recs)
			}
			must(t, idem.Complete(ctx, c.Token, response("first")))
			clock.Advance(time.Minute - time.Nanosecond)
			sameResponse(t, claim(t, idem, key("k1"), fp("a"), minute, state.Replay).Response, response("first"))
			clock.Advance(time.Nanosecond)
			c2 := claim(t, idem, key("k1"), fp("a"), minute, state.New)
			if err := idem.Complete(ctx, c.Token, response("old")); !errors.Is(err, state.ErrNotClaimed) {
				t.Fatalf("Complete of the first, expired claim: %v, want ErrNotClaimed", err)
			}
			must(t, idem.Complete(ctx, c2.Token, response("new")))
			sameResponse(t, claim(t, idem, key("k1"), fp("a"), hour, state.Replay).Response, response("new"))
		}},
		{"expire by group and key, by group, and all", func(t *testing.T, idem state.Idempotency, _ *Clock) {
			for _, k := range []state.Key{
				{Group: "charges", Scope: "s1", Key: "a"}, {Group: "charges", Scope: "s2", Key: "a"},
				{Group: "charges", Scope: "s1", Key: "b"}, {Group: "refunds", Scope: "s1", Key: "a"},
				{Group: "refunds", Scope: "s1", Key: "c"},
			} {
				c := claim(t, idem, k, fp("a"), hour, state.New)
				must(t, idem.Complete(ctx, c.Token, response("x")))
			}
			steps := []struct {
				group, key string
				n, left    int
			}{{"charges", "a", 2, 3}, {"charges", "a", 0, 3}, {"refunds", "", 2, 1}, {"", "", 1, 0}}
			for _, st := range steps {
				n, err := idem.Expire(ctx, st.group, st.key)
				must(t, err)
				_, left, err := idem.List(ctx, state.ListOptions{})
				must(t, err)
				if n != st.n || left != st.left {
					t.Fatalf("Expire(%q, %q) = %d leaving %d, want %d leaving %d", st.group, st.key, n, left, st.n, st.left)
				}
			}
			claim(t, idem, state.Key{Group: "charges", Scope: "s1", Key: "b"}, fp("z"), hour, state.New)
		}},
		{"expiring a key in flight wakes its waiters, who take it over", func(t *testing.T, idem state.Idempotency, _ *Clock) {
			c := claim(t, idem, key("k1"), fp("a"), hour, state.New)
			got := make(chan state.Claim, 1)
			go func() {
				r, err := idem.Claim(ctx, key("k1"), fp("a"), state.ClaimOptions{TTL: time.Hour, Wait: true})
				if err != nil {
					t.Error(err)
				}
				got <- r
			}()
			runtime.Gosched()
			_, err := idem.Expire(ctx, "charges", "k1")
			must(t, err)
			if r := <-got; r.Outcome != state.New {
				t.Fatalf("waiter after Expire = %v, want new", r.Outcome)
			}
			if err := idem.Complete(ctx, c.Token, response("x")); !errors.Is(err, state.ErrNotClaimed) {
				t.Fatalf("Complete after Expire: %v, want ErrNotClaimed", err)
			}
		}},
		{"list shows state, status, times and replays, oldest first, paged and by group", func(t *testing.T, idem state.Idempotency, clock *Clock) {
			start := clock.Now()
			a := claim(t, idem, key("a"), fp("a"), hour, state.New)
			must(t, idem.Complete(ctx, a.Token, response("a")))
			claim(t, idem, key("a"), fp("a"), hour, state.Replay)
			clock.Advance(time.Second)
			claim(t, idem, key("b"), fp("b"), state.ClaimOptions{TTL: 2 * time.Hour}, state.New)
			clock.Advance(time.Second)
			claim(t, idem, state.Key{Group: "refunds", Key: "c"}, fp("c"), hour, state.New)
			clock.Advance(time.Second)
			d := claim(t, idem, key("d"), fp("d"), state.ClaimOptions{TTL: time.Second}, state.New)
			must(t, idem.Complete(ctx, d.Token, response("d")))
			clock.Advance(time.Second) // d has expired: not listed

			recs, total, err := idem.List(ctx, state.ListOptions{})
			must(t, err)
			want := []state.Record{
				{Key: key("a"), State: state.StateCompleted, Status: 201, Created: start, Expires: start.Add(time.Hour), Replays: 1},
				// In flight: they would expire their ttl after completing now.
				{Key: key("b"), State: state.StateInFlight, Created: start.Add(time.Second), Expires: start.Add(4*time.Second + 2*time.Hour)},
				{Key: state.Key{Group: "refunds", Key: "c"}, State: state.StateInFlight, Created: start.Add(2 * time.Second), Expires: start.Add(4*time.Second + time.Hour)},
			}
			if total != 3 || len(recs) != 3 {
				t.Fatalf("List = %d records of %d, want 3 of 3: %+v", len(recs), total, recs)
			}
			for i := range want {
				g, w := recs[i], want[i]
				if g.Key != w.Key || g.State != w.State || g.Status != w.Status || !g.Created.Equal(w.Created) || !g.Expires.Equal(w.Expires) || g.Replays != w.Replays {
					t.Errorf("record %d = %+v, want %+v", i, g, w)
				}
			}
			recs, total, err = idem.List(ctx, state.ListOptions{Offset: 1, Limit: 1})
			must(t, err)
			if total != 3 || len(recs) != 1 || recs[0].Key != key("b") {
				t.Fatalf("page 2 of size 1 = %+v of %d, want b of 3", recs, total)
			}
			recs, total, err = idem.List(ctx, state.ListOptions{Group: "refunds"})
			must(t, err)
			if total != 1 || len(recs) != 1 || recs[0].Key.Key != "c" {
				t.Fatalf("group refunds = %+v of %d, want c of 1", recs, total)
			}
			recs, total, err = idem.List(ctx, state.ListOptions{Offset: 5})
			must(t, err)
			if total != 3 || len(recs) != 0 {
				t.Fatalf("past the end = %+v of %d, want none of 3", recs, total)
			}
		}},
		{"reset forgets every key", func(t *testing.T, idem state.Idempotency, _ *Clock) {
			c := claim(t, idem, key("a"), fp("a"), hour, state.New)
			must(t, idem.Complete(ctx, c.Token, response("a")))
			claim(t, idem, key("b"), fp("b"), hour, state.New)
			must(t, idem.Reset(ctx))
			if _, total, err := idem.List(ctx, state.ListOptions{}); err != nil || total != 0 {
				t.Fatalf("after Reset: %d keys, %v", total, err)
			}
			claim(t, idem, key("a"), fp("z"), hour, state.New)
			claim(t, idem, key("b"), fp("z"), hour, state.New)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, clock := h.open(t, state.Options{})
			tc.run(t, s.Idempotency(), clock)
		})
	}
}
