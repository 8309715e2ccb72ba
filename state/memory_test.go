package state_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/state/statetest"
)

func TestMemory(t *testing.T) {
	statetest.Run(t, func(_ *testing.T, o state.Options) state.Store { return state.NewMemory(o) })
}

// TestMemorySharded runs the suite on a store big enough to be sharded
// (the bound tests set their own small bounds and so run unsharded).
func TestMemorySharded(t *testing.T) {
	statetest.Run(t, func(_ *testing.T, o state.Options) state.Store {
		if o.MaxKeys == 0 {
			o.MaxKeys = 1 << 20
		}
		return state.NewMemory(o)
	})
}

// TestMemoryHashCollisions runs the suite with every key's hash the same.
func TestMemoryHashCollisions(t *testing.T) {
	statetest.Run(t, func(_ *testing.T, o state.Options) state.Store { return state.NewCollidingMemory(o) })
}

// TestMemoryShardedBound checks the bound of a store big enough to be
// sharded: the bound is over the whole store, not per shard.
func TestMemoryShardedBound(t *testing.T) {
	const limit = 5000
	idem := state.NewMemory(state.Options{MaxKeys: limit}).Idempotency()
	ctx := context.Background()
	for i := range 4 * limit {
		k := state.Key{Group: "g", Key: strconv.Itoa(i)}
		c, err := idem.Claim(ctx, k, state.Fingerprint{}, state.ClaimOptions{})
		if err != nil || c.Outcome != state.New {
			t.Fatalf("Claim(%d) = %v, %v", i, c.Outcome, err)
		}
		if err := idem.Complete(ctx, c.Token, state.Response{Status: 200}); err != nil {
			t.Fatal(err)
		}
		if i == limit-1 {
			if _, total, _ := idem.List(ctx, state.ListOptions{}); total != limit {
				t.Fatalf("%d keys kept of the first %d, want all", total, limit)
			}
		}
	}
	recs, total, err := idem.List(ctx, state.ListOptions{})
	if err != nil || total != limit {
		t.Fatalf("after %d keys: %d kept, %v; want %d", 4*limit, total, err, limit)
	}
	// Eviction is least recently used per shard: what is kept is recent.
	if oldest, _ := strconv.Atoi(recs[0].Key.Key); oldest < 2*limit {
		t.Fatalf("oldest key kept = %d, want one of the last %d", oldest, 2*limit)
	}
}

// TestClaimArrived: a store on the real clock takes the caller's reading
// (ClaimOptions.Arrived) as the claim's time, one on an injected clock
// never does (the caller's clock is not its own).
func TestClaimArrived(t *testing.T) {
	ctx := context.Background()
	k := state.Key{Group: "g", Key: "k"}
	fp := state.Fingerprint{1}
	for _, tc := range []struct {
		name string
		now  func() time.Time
		want state.Outcome // a claim arriving two hours after a 1h key completed
	}{
		{"real clock", nil, state.New},
		{"injected clock", time.Now, state.Replay},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idem := state.NewMemory(state.Options{Now: tc.now}).Idempotency()
			c, err := idem.Claim(ctx, k, fp, state.ClaimOptions{TTL: time.Hour, Arrived: time.Now()})
			if err != nil || c.Outcome != state.New {
				t.Fatalf("first claim: %v %v", c.Outcome, err)
			}
			if err := idem.Complete(ctx, c.Token, state.Response{Status: 201}); err != nil {
				t.Fatal(err)
			}
			later := time.Now().Add(2 * time.Hour)
			c, err = idem.Claim(ctx, k, fp, state.ClaimOptions{TTL: time.Hour, Arrived: later})
			if err != nil || c.Outcome != tc.want {
				t.Fatalf("claim arriving 2h later: %v %v, want %v", c.Outcome, err, tc.want)
			}
		})
	}
}

// TestKeyHashInOneWrite checks that the idempotency key hash, written at
// once from a buffer on the stack, is the hash of the key's parts written
// one by one, for keys that fit the buffer and keys that do not.
func TestKeyHashInOneWrite(t *testing.T) {
	t.Parallel()
	m := state.NewMemory(state.Options{})
	// 224 bytes of key fill the buffer with the group and scope.
	for _, n := range []int{0, 1, 100, 223, 224, 225, 255, 300} {
		k := state.Key{Group: "create payment", Scope: "0123456789abcdef", Key: strings.Repeat("k", n)}
		if pieces, once := state.HashKeyInPieces(m, k); pieces != once {
			t.Errorf("key of %d bytes: hash %x, in pieces %x", n, once, pieces)
		}
	}
}
