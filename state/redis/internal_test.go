package redis

import (
	"bufio"
	"context"
	"errors"
	"github.com/scenariomock/scenariomock/state"
	"net"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/internal/redistest"
)

// TestRedisLostClaim: a claim whose answer was lost (a timeout) is released
// by its caller; whichever of the two Redis runs first (they travel on
// different connections), the key ends up free for the retry.
func TestRedisLostClaim(t *testing.T) {
	srv := redistest.Start(t)
	r, err := Open(context.Background(), srv.URL(), Options{Prefix: "lost:"})
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
			k := state.Key{Group: "g", Key: tc.name}
			id := newTokenID()
			if tc.releaseFirst {
				r.idem.releaseLost(ctx, state.Token{Key: k, ID: id})
			}
			res, err := r.idem.claimOnce(ctx, k, state.Fingerprint{}, time.Hour, id)
			if err != nil {
				t.Fatal(err)
			}
			c, err := decodeClaim(res)
			if tc.releaseFirst {
				if err == nil {
					t.Fatalf("a claim run after its release = %v, want abandoned", c.Outcome)
				}
			} else {
				if err != nil || c.Outcome != state.New {
					t.Fatalf("claim = %v, %v", c.Outcome, err)
				}
				r.idem.releaseLost(ctx, state.Token{Key: k, ID: id})
			}
			if c, err := r.idem.Claim(ctx, k, state.Fingerprint{}, state.ClaimOptions{}); err != nil || c.Outcome != state.New {
				t.Fatalf("the retry's claim = %v, %v; want new", c.Outcome, err)
			}
		})
	}
}

// TestRedisJournalAway: while Redis is away the journal's Appends fail at
// once after the first failure (a route that needs no state must not
// wait on each), and append again when it is back.
func TestRedisJournalAway(t *testing.T) {
	srv := redistest.Start(t)
	r, err := Open(context.Background(), srv.URL(), Options{Prefix: "away:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	ctx := context.Background()
	j := r.Journal()
	if err := j.Append(ctx, &state.Entry{Path: "/before"}); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if err := j.Append(ctx, &state.Entry{Path: "/down"}); err == nil {
		t.Fatal("an Append with Redis stopped succeeded")
	}
	away := 0
	for range 20 {
		err := j.Append(ctx, &state.Entry{Path: "/down"})
		if err == nil {
			t.Fatal("an Append with Redis stopped succeeded")
		}
		if errors.Is(err, errJournalAway) {
			away++
		}
	}
	if away == 0 {
		t.Error("every Append after a failed one asked Redis again")
	}
	srv.Restart()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		err := j.Append(ctx, &state.Entry{Path: "/after"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing a minute after Redis came back: %v", err)
		}
	}
}

// asleep reports whether the redis-server at addr fails to answer a PING
// within 200ms, that is, whether DEBUG SLEEP holds it.
func asleep(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	_, err = bufio.NewReader(c).ReadString('\n')
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestRedisReleaseRetried: a Release that Redis does not answer (DEBUG
// SLEEP, past the read timeout) fails, and the key is freed once Redis
// answers again, not left in flight for its TTL. The same for a claim
// whose answer was lost.
func TestRedisReleaseRetried(t *testing.T) {
	srv := redistest.Start(t)
	r, err := Open(context.Background(), srv.URL(), Options{Prefix: "retry:", ReadTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	ctx := context.Background()
	idem := r.Idempotency()
	k := state.Key{Group: "g", Key: "released"}
	c, err := idem.Claim(ctx, k, state.Fingerprint{}, state.ClaimOptions{})
	if err != nil || c.Outcome != state.New {
		t.Fatalf("Claim = %v, %v", c.Outcome, err)
	}
	slept := make(chan error, 1)
	go func() {
		_, err := srv.Command("DEBUG", "SLEEP", "2")
		slept <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); !asleep(srv.Addr()); {
		if time.Now().After(deadline) {
			t.Fatal("redis-server never went to sleep")
		}
	}
	if err := idem.Release(ctx, c.Token); err == nil {
		t.Fatal("a Release while Redis sleeps succeeded")
	}
	lost := state.Key{Group: "g", Key: "lost"}
	if _, err := idem.Claim(ctx, lost, state.Fingerprint{}, state.ClaimOptions{}); err == nil {
		t.Fatal("a Claim while Redis sleeps succeeded")
	}
	if err := <-slept; err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); r.idem.retry.len() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d releases still pending 30s after Redis woke", r.idem.retry.len())
		}
	}
	for _, k := range []state.Key{k, lost} {
		if c, err := idem.Claim(ctx, k, state.Fingerprint{}, state.ClaimOptions{}); err != nil || c.Outcome != state.New {
			t.Fatalf("Claim(%s) after Redis woke = %v, %v; want new (the key freed)", k.Key, c.Outcome, err)
		}
	}
}
