package state

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestExpiryQueues checks the memory store's expiry queues (one per ttl,
// soonest at head): keys of two ttls expire in the order of their
// expiry across the queues, a wall clock that goes back still queues a
// key by its expiry, and a queue emptied is reused for another ttl.
func TestExpiryQueues(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_000_000, 0)
	s := newMemIdempotency(func() time.Time { return now }, 100, 1<<20)
	sh := s.shards[0]
	complete := func(k string, ttl time.Duration) {
		t.Helper()
		c, err := s.Claim(ctx, Key{Key: k}, Fingerprint{}, ClaimOptions{TTL: ttl})
		if err != nil || c.Outcome != New {
			t.Fatalf("Claim(%s) = %+v, %v", k, c, err)
		}
		if err := s.Complete(ctx, c.Token, Response{Status: 200}); err != nil {
			t.Fatal(err)
		}
	}
	// expiring returns the keys in the order they expire, by taking each
	// from the queues in turn as the clock runs out.
	expiring := func() []string {
		t.Helper()
		var out []string
		for i := sh.expired(1<<62 - 1); i >= 0; i = sh.expired(1<<62 - 1) {
			out = append(out, decodeKey(sh.arena.bytes(sh.slots[i].key)).Key)
			s.remove(sh, i)
		}
		return out
	}
	complete("m1", time.Minute) // expires at +1m
	complete("h1", time.Hour)   // +1h
	now = now.Add(10 * time.Second)
	complete("m2", time.Minute) // +1m10s
	now = now.Add(-5 * time.Second)
	complete("m3", time.Minute) // +1m5s: the clock went back
	complete("s1", time.Second) // +6s: a third ttl
	if len(sh.queues) != 3 {
		t.Fatalf("%d queues, want 3", len(sh.queues))
	}
	if got, want := expiring(), []string{"s1", "m1", "m3", "m2", "h1"}; !slices.Equal(got, want) {
		t.Fatalf("expiry order %v, want %v", got, want)
	}
	complete("d1", 24*time.Hour)
	if len(sh.queues) != 3 {
		t.Fatalf("%d queues after another ttl, want 3: an empty one reused", len(sh.queues))
	}
	if got, want := expiring(), []string{"d1"}; !slices.Equal(got, want) {
		t.Fatalf("expiry order %v, want %v", got, want)
	}
}
