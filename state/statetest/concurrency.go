package statetest

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/state"
)

func (h *harness) concurrency(t *testing.T) {
	hour := state.ClaimOptions{TTL: time.Hour}
	t.Run("ten concurrent claims of one key: exactly one new, nine in flight", func(t *testing.T) {
		t.Parallel()
		s, _ := h.open(t, state.Options{})
		idem := s.Idempotency()
		for round := range 50 {
			k := key(fmt.Sprint("k", round))
			var (
				claimed sync.WaitGroup
				mu      sync.Mutex // guards counts and tokens
				counts  = map[state.Outcome]int{}
				tokens  []state.Token
			)
			start := make(chan struct{})
			for range 10 {
				claimed.Go(func() {
					<-start
					c, err := idem.Claim(ctx, k, fp("a"), hour)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					defer mu.Unlock()
					counts[c.Outcome]++
					if c.Outcome == state.New {
						tokens = append(tokens, c.Token)
					}
				})
			}
			close(start)
			claimed.Wait() // the winner completes only after every claim is decided
			if counts[state.New] != 1 || counts[state.InFlight] != 9 {
				t.Fatalf("round %d: outcomes %v, want 1 new and 9 in flight", round, counts)
			}
			must(t, idem.Complete(ctx, tokens[0], response(k.Key)))
			sameResponse(t, claim(t, idem, k, fp("a"), hour, state.Replay).Response, response(k.Key))
		}
	})
	t.Run("ten concurrent waiting claims of one key: one runs, all get its response", func(t *testing.T) {
		t.Parallel()
		s, _ := h.open(t, state.Options{})
		idem := s.Idempotency()
		for round := range 50 {
			k := key(fmt.Sprint("k", round))
			var (
				wg     sync.WaitGroup
				mu     sync.Mutex // guards counts and bodies
				counts = map[state.Outcome]int{}
				bodies = map[string]int{}
			)
			start := make(chan struct{})
			for i := range 10 {
				wg.Go(func() {
					<-start
					c, err := idem.Claim(ctx, k, fp("a"), state.ClaimOptions{TTL: time.Hour, Wait: true})
					if err != nil {
						t.Error(err)
						return
					}
					r := c.Response
					if c.Outcome == state.New {
						runtime.Gosched() // let the others find the key in flight
						r = response(fmt.Sprint(k.Key, " by ", i))
						if err := idem.Complete(ctx, c.Token, r); err != nil {
							t.Error(err)
						}
					}
					mu.Lock()
					defer mu.Unlock()
					counts[c.Outcome]++
					bodies[string(r.Body)]++
				})
			}
			close(start)
			wg.Wait()
			if counts[state.New] != 1 || counts[state.Replay] != 9 || len(bodies) != 1 {
				t.Fatalf("round %d: outcomes %v, bodies %v; want 1 new, 9 replays of one body", round, counts, bodies)
			}
		}
	})
	t.Run("two keys never block each other", func(t *testing.T) {
		t.Parallel()
		s, _ := h.open(t, state.Options{})
		idem := s.Idempotency()
		a := claim(t, idem, key("A"), fp("a"), hour, state.New)
		waited := make(chan state.Claim, 1)
		go func() {
			c, err := idem.Claim(ctx, key("A"), fp("a"), state.ClaimOptions{TTL: time.Hour, Wait: true})
			if err != nil {
				t.Error(err)
			}
			waited <- c
		}()
		runtime.Gosched()
		// While A is in flight and has a waiter, B goes through its whole
		// life. A store that held a lock across A's claim or its wait
		// would hang here (the test's deadline reports it).
		b := claim(t, idem, key("B"), fp("b"), hour, state.New)
		claim(t, idem, key("B"), fp("b"), hour, state.InFlight)
		must(t, idem.Complete(ctx, b.Token, response("B")))
		sameResponse(t, claim(t, idem, key("B"), fp("b"), hour, state.Replay).Response, response("B"))
		select {
		case c := <-waited:
			t.Fatalf("the waiter on A returned %v before A completed", c.Outcome)
		default:
		}
		must(t, idem.Complete(ctx, a.Token, response("A")))
		if c := <-waited; c.Outcome != state.Replay {
			t.Fatalf("waiter on A = %v, want replay", c.Outcome)
		}
	})
	t.Run("many keys claimed and completed in parallel each replay their own response", func(t *testing.T) {
		t.Parallel()
		s, _ := h.open(t, state.Options{})
		idem := s.Idempotency()
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 200 {
					k := key(fmt.Sprint(g, "/", i))
					c, err := idem.Claim(ctx, k, fp("a"), hour)
					if err != nil || c.Outcome != state.New {
						t.Errorf("Claim(%s) = %v, %v", k.Key, c.Outcome, err)
						return
					}
					if err := idem.Complete(ctx, c.Token, response(k.Key)); err != nil {
						t.Error(err)
						return
					}
					r, err := idem.Claim(ctx, k, fp("a"), hour)
					if err != nil || r.Outcome != state.Replay || string(r.Response.Body) != k.Key {
						t.Errorf("replay of %s = %v %q, %v", k.Key, r.Outcome, r.Response.Body, err)
						return
					}
				}
			})
		}
		wg.Wait()
		if _, total, err := idem.List(ctx, state.ListOptions{}); err != nil || total != 1600 {
			t.Fatalf("List total = %d, %v; want 1600", total, err)
		}
	})
}

func (h *harness) bound(t *testing.T) {
	hour := state.ClaimOptions{TTL: time.Hour}
	t.Run("past the byte bound the least recently used completed keys go, never one in flight", func(t *testing.T) {
		t.Parallel()
		// 100-byte answers: a little over 100 bytes each as the store
		// counts them (status, headers), so that three fit in 350.
		s, _ := h.open(t, state.Options{MaxKeys: 100, MaxIdempotencyBytes: 350})
		idem := s.Idempotency()
		body := bytes.Repeat([]byte("x"), 100)
		complete := func(k string) {
			c := claim(t, idem, key(k), fp(k), hour, state.New)
			must(t, idem.Complete(ctx, c.Token, state.Response{Status: 201, Body: body}))
		}
		inFlight := claim(t, idem, key("running"), fp("running"), hour, state.New)
		complete("a")
		complete("b")
		complete("c")
		claim(t, idem, key("a"), fp("a"), hour, state.Replay) // by use: b, c, a
		complete("d")                                         // evicts b
		claim(t, idem, key("b"), fp("b2"), hour, state.New)
		for _, k := range []string{"a", "c", "d"} {
			claim(t, idem, key(k), fp(k), hour, state.Replay)
		}
		claim(t, idem, key("running"), fp("running"), hour, state.InFlight)
		must(t, idem.Complete(ctx, inFlight.Token, state.Response{Status: 201, Body: body}))
		u, ok := s.(state.UsageReporter)
		if !ok {
			t.Fatal("the store reports no usage (state.UsageReporter)")
		}
		got, err := u.Usage(ctx)
		must(t, err)
		if got.IdempotencyBytes <= 300 || got.IdempotencyBytes > 350 {
			t.Fatalf("Usage = %+v, want between 300 and 350 idempotency bytes", got)
		}
		// An answer larger than the whole bound is not kept.
		c := claim(t, idem, key("huge"), fp("huge"), hour, state.New)
		must(t, idem.Complete(ctx, c.Token, state.Response{Status: 201, Body: bytes.Repeat([]byte("x"), 400)}))
		claim(t, idem, key("huge"), fp("huge"), hour, state.New)
		must(t, idem.Reset(ctx))
		if got, err := u.Usage(ctx); err != nil || got.IdempotencyBytes != 0 {
			t.Fatalf("Usage after Reset = %+v, %v; want 0 bytes", got, err)
		}
		cols := s.Collections()
		_, err = cols.Save(ctx, "orders", "0123456789", []byte("012345678"))
		must(t, err)
		if got, err := u.Usage(ctx); err != nil || got.CollectionBytes != 19 {
			t.Fatalf("Usage = %+v, %v; want 19 collection bytes", got, err)
		}
	})
	t.Run("expired keys are evicted first, then the least recently used", func(t *testing.T) {
		t.Parallel()
		s, clock := h.open(t, state.Options{MaxKeys: 3})
		idem := s.Idempotency()
		complete := func(k string, ttl time.Duration) {
			c := claim(t, idem, key(k), fp(k), state.ClaimOptions{TTL: ttl}, state.New)
			must(t, idem.Complete(ctx, c.Token, response(k)))
		}
		complete("short", time.Minute)
		complete("b", time.Hour)
		complete("c", time.Hour)
		claim(t, idem, key("short"), fp("short"), state.ClaimOptions{TTL: time.Minute}, state.Replay)
		// Now by use: b (oldest), c, short (newest). short expires first.
		clock.Advance(2 * time.Minute)
		complete("d", time.Hour) // evicts short: expired, although recently used
		claim(t, idem, key("b"), fp("b"), state.ClaimOptions{TTL: time.Hour}, state.Replay)
		// By use: c (oldest), d, b.
		complete("e", time.Hour) // evicts c, the least recently used
		// In order: claiming c again evicts a key.
		for _, k := range []string{"b", "d", "e"} {
			claim(t, idem, key(k), fp(k), state.ClaimOptions{TTL: time.Hour}, state.Replay)
		}
		claim(t, idem, key("c"), fp("c"), state.ClaimOptions{TTL: time.Hour}, state.New)
	})
	t.Run("keys in flight are not evicted", func(t *testing.T) {
		t.Parallel()
		s, _ := h.open(t, state.Options{MaxKeys: 2})
		idem := s.Idempotency()
		hour := state.ClaimOptions{TTL: time.Hour}
		a := claim(t, idem, key("a"), fp("a"), hour, state.New)
		b := claim(t, idem, key("b"), fp("b"), hour, state.New)
		c := claim(t, idem, key("c"), fp("c"), hour, state.New)
		for _, tok := range []state.Token{a.Token, b.Token, c.Token} {
			must(t, idem.Complete(ctx, tok, response(tok.Key.Key)))
		}
		// Completed, they are evictable again: one more key brings the
		// store back within its bound.
		claim(t, idem, key("d"), fp("d"), hour, state.New)
		if _, total, err := idem.List(ctx, state.ListOptions{}); err != nil || total > 3 {
			t.Fatalf("List total = %d, %v; want at most 3", total, err)
		}
		claim(t, idem, key("c"), fp("c"), hour, state.Replay)
	})
	t.Run("the store stays within its bound", func(t *testing.T) {
		t.Parallel()
		s, _ := h.open(t, state.Options{MaxKeys: 100})
		idem := s.Idempotency()
		for i := range 1000 {
			c := claim(t, idem, key(fmt.Sprint(i)), fp("a"), state.ClaimOptions{TTL: time.Hour}, state.New)
			must(t, idem.Complete(ctx, c.Token, response("x")))
		}
		recs, total, err := idem.List(ctx, state.ListOptions{})
		must(t, err)
		if total != 100 || recs[0].Key.Key != "900" {
			t.Fatalf("after 1000 keys: %d kept, oldest %q; want 100, oldest 900", total, recs[0].Key.Key)
		}
	})
}
