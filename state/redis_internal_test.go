package state

import (
	"context"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/internal/redistest"
)

// TestRedisLostClaim: a claim whose answer was lost (a timeout) is released
// by its caller; whichever of the two Redis runs first (they travel on
// different connections), the key ends up free for the retry.
func TestRedisLostClaim(t *testing.T) {
	srv := redistest.Start(t)
	r, err := OpenRedis(context.Background(), srv.URL(), RedisOptions{Prefix: "lost:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	ctx := context.Background()
	for _, tc := range []struct {
		name         string
		releaseFirst bool
	}{{"claim, then its release", false}, {"release, then the claim", true}} {
		t.Run(tc.name, func(t *testing.T) {
			k := Key{Group: "g", Key: tc.name}
			id := newTokenID()
			if tc.releaseFirst {
				r.idem.releaseLost(ctx, Token{Key: k, ID: id})
			}
			res, err := r.idem.claimOnce(ctx, k, Fingerprint{}, time.Hour, id)
			if err != nil {
				t.Fatal(err)
			}
			c, err := decodeClaim(res)
			if tc.releaseFirst {
				if err == nil {
					t.Fatalf("a claim run after its release = %v, want abandoned", c.Outcome)
				}
			} else {
				if err != nil || c.Outcome != New {
					t.Fatalf("claim = %v, %v", c.Outcome, err)
				}
				r.idem.releaseLost(ctx, Token{Key: k, ID: id})
			}
			if c, err := r.idem.Claim(ctx, k, Fingerprint{}, ClaimOptions{}); err != nil || c.Outcome != New {
				t.Fatalf("the retry's claim = %v, %v; want new", c.Outcome, err)
			}
		})
	}
}
