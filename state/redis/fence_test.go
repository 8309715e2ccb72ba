package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/scenariomock/scenariomock/internal/redistest"
	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/state/redis"
)

// TestRedisFenceAcrossStores: a Reset through one store (one replica)
// fences the writes of a request that another store's replica noted the
// epoch for before it, and returns only once that other store knows the
// new epoch, so that its next request writes into the fresh state.
func TestRedisFenceAcrossStores(t *testing.T) {
	srv := redistest.Start(t)
	open := func() *redis.Store {
		s, err := redis.Open(context.Background(), srv.URL(), redis.Options{Prefix: "fence:"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	ctx := context.Background()
	a, b, c := open(), open(), open()
	// The straggler on b arrived before the reset.
	straggler := state.InEpoch(ctx, b.Epoch())
	if _, err := b.Counters().Next(straggler, "pay"); err != nil {
		t.Fatal(err)
	}
	if err := a.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	// Reset returned: every replica knows, without asking Redis.
	for name, s := range map[string]*redis.Store{"a": a, "b": b, "c": c} {
		if s.Epoch() != 1 {
			t.Errorf("store %s: Epoch() = %d right after a's Reset returned, want 1", name, s.Epoch())
		}
	}
	if _, err := b.Counters().Next(straggler, "pay"); !errors.Is(err, state.ErrFenced) {
		t.Fatalf("the straggler's Next on b = %v, want ErrFenced", err)
	}
	if _, err := b.Collections().Save(straggler, "payments", "pay_1", []byte(`{}`)); !errors.Is(err, state.ErrFenced) {
		t.Fatalf("the straggler's Save on b = %v, want ErrFenced", err)
	}
	if err := b.Journal().Append(straggler, &state.Entry{Path: "/straggler"}); !errors.Is(err, state.ErrFenced) {
		t.Fatalf("the straggler's Append on b = %v, want ErrFenced", err)
	}
	// The next request on c notes the new epoch and starts over.
	fresh := state.InEpoch(ctx, c.Epoch())
	if n, err := c.Counters().Next(fresh, "pay"); err != nil || n != 1 {
		t.Fatalf("the next request's Next on c = %d, %v; want 1", n, err)
	}
	if n, _ := b.Journal().Entries(ctx, 0); len(n) != 0 {
		t.Fatalf("journal after the reset = %d entries, want none", len(n))
	}
}

// TestRedisResetUnconfirmed: a subscriber that is not a replica (a
// redis-cli PSUBSCRIBE, a replica that stopped reading) never
// acknowledges: Reset still resets, and says so with ErrResetUnconfirmed
// once it stops waiting.
func TestRedisResetUnconfirmed(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the acknowledgements' deadline (5 s)")
	}
	srv := redistest.Start(t)
	s, err := redis.Open(context.Background(), srv.URL(), redis.Options{Prefix: "unconfirmed:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	other := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	defer other.Close()
	ps := other.PSubscribe(ctx, "unconfirmed:*")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	if _, err := s.Counters().Next(ctx, "n"); err != nil {
		t.Fatal(err)
	}
	if err := s.Reset(ctx); !errors.Is(err, state.ErrResetUnconfirmed) {
		t.Fatalf("Reset with a silent subscriber = %v, want ErrResetUnconfirmed", err)
	}
	if n, err := s.Counters().Next(ctx, "n"); err != nil || n != 1 {
		t.Fatalf("Next after the unconfirmed Reset = %d, %v; want 1 (reset all the same)", n, err)
	}
}

// TestRedisFenceAfterRedisForgets: Redis that forgets the epoch (a
// FLUSHDB, a restart without persistence) after a reset leaves it behind
// the replicas' copies. Their requests' writes are then refused once at
// most, not for good, and a Reset after the loss still fences the
// requests that arrived before it.
func TestRedisFenceAfterRedisForgets(t *testing.T) {
	srv := redistest.Start(t)
	open := func() *redis.Store {
		s, err := redis.Open(context.Background(), srv.URL(), redis.Options{Prefix: "forget:"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	ctx := context.Background()
	a, b := open(), open()
	write := func(s *redis.Store) error {
		_, err := s.Counters().Next(state.InEpoch(ctx, s.Epoch()), "n")
		return err
	}
	if err := a.Reset(ctx); err != nil {
		t.Fatal(err)
	}

	t.Run("flushed", func(t *testing.T) {
		straggler := state.InEpoch(ctx, b.Epoch())
		if _, err := srv.Command("FLUSHDB"); err != nil {
			t.Fatal(err)
		}
		// A Reset right after the loss still fences the request that
		// arrived before it.
		if err := a.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Counters().Next(straggler, "n"); !errors.Is(err, state.ErrFenced) {
			t.Fatalf("the straggler's Next after a Reset that followed a FLUSHDB = %v, want ErrFenced", err)
		}
		if err := write(b); err != nil {
			t.Fatalf("a write after that Reset: %v", err)
		}
		// Without a Reset: a request that noted the replica's epoch
		// before Redis forgot it may be refused; the next one is not.
		if _, err := srv.Command("FLUSHDB"); err != nil {
			t.Fatal(err)
		}
		_ = write(b)
		if err := write(b); err != nil {
			t.Fatalf("a fenced write after FLUSHDB, once the replica saw a refusal: %v", err)
		}
		if err := write(a); err != nil {
			t.Fatalf("a fenced write on the other replica after FLUSHDB: %v", err)
		}
	})

	t.Run("restarted without persistence", func(t *testing.T) {
		srv.Stop()
		srv.Restart()
		// Once the replicas reconnect, their requests write again.
		deadline := time.Now().Add(10 * time.Second)
		for _, s := range []*redis.Store{a, b} {
			for {
				err := write(s)
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("fenced writes after a Redis restart still fail 10s on: %v", err)
				}
				time.Sleep(10 * time.Millisecond) // waiting for the reconnection
			}
		}
	})
}
