package redis

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/scenariomock/scenariomock/state"
	"net"
	"strconv"
	"sync"
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

// TestRedisResetTrash: between resetScript and the cleaning of its trash,
// the keys of before the reset count as gone to every script, and the
// cleaning frees their records, not those of keys claimed again since.
func TestRedisResetTrash(t *testing.T) {
	srv := redistest.Start(t)
	r, err := Open(context.Background(), srv.URL(), Options{Prefix: "trash:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	ctx := context.Background()
	idem := r.Idempotency()
	k := func(s string) state.Key { return state.Key{Group: "g", Key: s} }
	done, err := idem.Claim(ctx, k("done"), state.Fingerprint{1}, state.ClaimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := idem.Complete(ctx, done.Token, state.Response{Status: 201, Body: []byte("before")}); err != nil {
		t.Fatal(err)
	}
	flying, err := idem.Claim(ctx, k("flying"), state.Fingerprint{1}, state.ClaimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The reset's script alone: the trash is not cleaned yet.
	res, err := resetScript.Run(ctx, r.rdb, []string{r.key("e")}, r.base, trashTTL.Milliseconds(), r.Epoch()).Int64Slice()
	if err != nil || len(res) != 2 || res[0] != 1 {
		t.Fatalf("resetScript = %v, %v", res, err)
	}
	if u, err := r.Usage(ctx); err != nil || u.IdempotencyKeys != 0 || u.IdempotencyBytes != 0 {
		t.Fatalf("Usage after the reset = %+v, %v; want nothing", u, err)
	}
	if recs, n, err := idem.List(ctx, state.ListOptions{Group: "g"}); err != nil || len(recs) != 0 {
		t.Fatalf("List of the group after the reset = %v (%d), %v; want none", recs, n, err)
	}
	if err := idem.Complete(ctx, flying.Token, state.Response{Status: 201}); !errors.Is(err, state.ErrNotClaimed) {
		t.Fatalf("Complete of a claim from before the reset = %v, want ErrNotClaimed", err)
	}
	again, err := idem.Claim(ctx, k("done"), state.Fingerprint{2}, state.ClaimOptions{})
	if err != nil || again.Outcome != state.New {
		t.Fatalf("Claim of a key completed before the reset = %v, %v; want new", again.Outcome, err)
	}
	if err := idem.Complete(ctx, again.Token, state.Response{Status: 201, Body: []byte("after")}); err != nil {
		t.Fatal(err)
	}
	trash := r.key("i", "trash", "1")
	if left, err := cleanTrashScript.Run(ctx, r.rdb, []string{trash}, r.base).Int64(); err != nil || left != 0 {
		t.Fatalf("cleanTrashScript = %d, %v", left, err)
	}
	if n, err := r.rdb.Exists(ctx, r.idem.keys(k("flying"))[0], trash).Result(); err != nil || n != 0 {
		t.Fatalf("after cleaning, %d of the old record and the trash remain (%v)", n, err)
	}
	c, err := idem.Claim(ctx, k("done"), state.Fingerprint{2}, state.ClaimOptions{})
	if err != nil || c.Outcome != state.Replay || string(c.Response.Body) != "after" {
		t.Fatalf("the key claimed since the reset = %v %q, %v; want its replay", c.Outcome, c.Response.Body, err)
	}
	if recs, _, err := idem.List(ctx, state.ListOptions{Group: "g"}); err != nil || len(recs) != 1 {
		t.Fatalf("List of the group = %+v, %v; want the one key", recs, err)
	}
}

// BenchmarkRedisReset measures Reset at three sizes of state: keys
// completed idempotency keys with 1 KiB answers in 10 groups, as many
// collection items, and a tenth as many counters and journal entries.
// Besides the whole Reset, it reports how long Redis was held at once:
// script-ms by resetScript, chunk-ms by the longest cleanTrashScript call
// (Redis answers nobody else meanwhile).
func BenchmarkRedisReset(b *testing.B) {
	srv := redistest.Start(b)
	for _, keys := range []int{100, 10_000, 100_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			r, err := Open(context.Background(), srv.URL(), Options{Prefix: fmt.Sprintf("bench%d:", keys)})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			ctx := context.Background()
			var script, chunk time.Duration
			for range b.N {
				b.StopTimer()
				fillForReset(b, r, keys)
				b.StartTimer()
				t0 := time.Now()
				res, err := resetScript.Run(ctx, r.rdb, []string{r.key("e")}, r.base, trashTTL.Milliseconds(), r.Epoch()).Int64Slice()
				if err != nil {
					b.Fatal(err)
				}
				script = max(script, time.Since(t0))
				trash := r.key("i", "trash", strconv.FormatInt(res[0], 10))
				for {
					t0 := time.Now()
					left, err := cleanTrashScript.Run(ctx, r.rdb, []string{trash}, r.base).Int64()
					if err != nil {
						b.Fatal(err)
					}
					chunk = max(chunk, time.Since(t0))
					if left == 0 {
						break
					}
				}
			}
			b.ReportMetric(float64(script.Microseconds())/1000, "script-ms")
			b.ReportMetric(float64(chunk.Microseconds())/1000, "chunk-ms")
		})
	}
}

// fillForReset stores what BenchmarkRedisReset resets.
func fillForReset(b *testing.B, r *Store, keys int) {
	ctx := context.Background()
	body := make([]byte, 1024)
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < keys; i += 32 {
				id := strconv.Itoa(i)
				c, err := r.Idempotency().Claim(ctx, state.Key{Group: "g" + strconv.Itoa(i%10), Key: id}, state.Fingerprint{}, state.ClaimOptions{})
				if err == nil {
					err = r.Idempotency().Complete(ctx, c.Token, state.Response{Status: 201, Body: body})
				}
				if err == nil {
					_, err = r.Collections().Save(ctx, "items", id, []byte(`{"id":"`+id+`"}`))
				}
				if err == nil && i%10 == 0 {
					_, err = r.Counters().Next(ctx, "n"+id)
				}
				if err == nil && i%10 == 0 {
					err = r.Journal().Append(ctx, &state.Entry{Path: "/" + id})
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestRedisLockOutlivesTTL: a lock held longer than its ttl (a route
// state's lock held across a long delay) still excludes another replica
// until it is released, and is free at once after.
func TestRedisLockOutlivesTTL(t *testing.T) {
	srv := redistest.Start(t)
	open := func() *Store {
		r, err := Open(context.Background(), srv.URL(), Options{Prefix: "ttl:"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		r.locks.ttl = 1500 * time.Millisecond
		return r
	}
	a, b := open(), open()
	ctx := context.Background()
	names := []string{"order:ord_1"}
	release, err := a.Locks().Lock(ctx, names, 0)
	if err != nil {
		t.Fatal(err)
	}
	held := time.Now()
	for time.Since(held) < 3*a.locks.ttl {
		if rel, err := b.Locks().Lock(ctx, names, 0); !errors.Is(err, state.ErrLockTimeout) {
			if err == nil {
				rel()
			}
			t.Fatalf("%s into a hold, the other replica's Lock = %v, want %v", time.Since(held).Round(time.Millisecond), err, state.ErrLockTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	release()
	rel, err := b.Locks().Lock(ctx, names, 10*time.Second)
	if err != nil {
		t.Fatalf("after the release, the other replica's Lock = %v", err)
	}
	rel()
}

// TestRedisClaimOfDeadReplica: a key in flight whose replica died
// mid-request (its heartbeat stopped; a SIGKILL) is claimed anew once the
// replica's lease lapses, by a retry and by one that waits, rather than
// answering 409 (or waiting) for the key's whole ttl. While the replica
// lives, however long its request runs, the key stays its own.
func TestRedisClaimOfDeadReplica(t *testing.T) {
	srv := redistest.Start(t)
	open := func() *Store {
		s, err := Open(context.Background(), srv.URL(), Options{Prefix: "dead:"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	ctx := context.Background()
	a, b := open(), open()
	const lease = 300 * time.Millisecond
	a.beat.close()
	beat, err := startHeartbeat(ctx, a, lease)
	if err != nil {
		t.Fatal(err)
	}
	a.beat = beat
	k := state.Key{Group: "g", Key: "k"}
	first, err := a.Idempotency().Claim(ctx, k, state.Fingerprint{}, state.ClaimOptions{})
	if err != nil || first.Outcome != state.New {
		t.Fatalf("first claim = %v, %v", first.Outcome, err)
	}
	// Alive for several leases: the key stays a's.
	for end := time.Now().Add(4 * lease); time.Now().Before(end); time.Sleep(lease / 4) {
		if c, err := b.Idempotency().Claim(ctx, k, state.Fingerprint{}, state.ClaimOptions{}); err != nil || c.Outcome != state.InFlight {
			t.Fatalf("a retry while a lives = %v, %v; want in flight", c.Outcome, err)
		}
	}
	waited := make(chan state.Claim, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		c, err := b.Idempotency().Claim(wctx, k, state.Fingerprint{}, state.ClaimOptions{Wait: true})
		if err != nil {
			t.Error(err)
		}
		waited <- c
	}()
	a.beat.close() // a dies: nothing releases its claim
	var c state.Claim
	select {
	case c = <-waited:
	case <-time.After(20 * time.Second):
		t.Fatal("a claim waiting for the key of a replica that died still waits 20 s on")
	}
	if c.Outcome != state.New {
		t.Fatalf("the waiting claim once a died = %v, want new", c.Outcome)
	}
	// The dead replica's late completion is refused: one answer per key.
	if err := a.Idempotency().Complete(ctx, first.Token, state.Response{Status: 201}); !errors.Is(err, state.ErrNotClaimed) {
		t.Fatalf("the dead replica's completion = %v, want ErrNotClaimed", err)
	}
	if err := b.Idempotency().Complete(ctx, c.Token, state.Response{Status: 201, Body: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	if c, err := b.Idempotency().Claim(ctx, k, state.Fingerprint{}, state.ClaimOptions{}); err != nil || c.Outcome != state.Replay || string(c.Response.Body) != "b" {
		t.Fatalf("a retry after = %v %q, %v; want the replay of b's answer", c.Outcome, c.Response.Body, err)
	}
}

// TestRedisJournalSeenFromOthers: a replica learns the IDs the others'
// appends took from their messages, without reading the journal, so that
// its first append after Redis forgot the counter goes past them too.
func TestRedisJournalSeenFromOthers(t *testing.T) {
	srv := redistest.Start(t)
	open := func() *Store {
		s, err := Open(context.Background(), srv.URL(), Options{Prefix: "seen:"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	ctx := context.Background()
	a, b := open(), open()
	for range 3 {
		if err := a.Journal().Append(ctx, &state.Entry{Path: "/a"}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for b.jrnl.seen.Load() != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("b saw ID %d 10 s after a appended 3 entries, want 3", b.jrnl.seen.Load())
		}
		time.Sleep(time.Millisecond) // waiting for the subscription's goroutine
	}
	if _, err := srv.Command("FLUSHDB"); err != nil {
		t.Fatal(err)
	}
	e := &state.Entry{Path: "/b"}
	if err := b.Journal().Append(ctx, e); err != nil || e.ID != 4 {
		t.Fatalf("b's append after FLUSHDB = ID %d, %v; want 4", e.ID, err)
	}
}
