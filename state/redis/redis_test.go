package redis_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/internal/redistest"
	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/state/redis"
	"github.com/scenariomock/scenariomock/state/statetest"
	"github.com/scenariomock/scenariomock/webhooks"
	"github.com/scenariomock/scenariomock/webhooks/outboxtest"
)

// TestRedis runs the conformance suite against a real redis-server, each
// store under its own prefix so that the parallel cases share nothing.
func TestRedis(t *testing.T) {
	srv := redistest.Start(t)
	var n atomic.Int64
	statetest.Run(t, func(t *testing.T, o state.Options) state.Store {
		s, err := redis.Open(context.Background(), srv.URL(), redis.Options{
			Options: o,
			Prefix:  fmt.Sprintf("test%d:", n.Add(1)),
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestRedisCloseLeaksNothing: after Close, no goroutine of the store is
// left (the subscription's, the pool's), even with a claim waiting.
func TestRedisCloseLeaksNothing(t *testing.T) {
	srv := redistest.Start(t)
	before := runtime.NumGoroutine()
	s, err := redis.Open(context.Background(), srv.URL(), redis.Options{Prefix: "leak:"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := state.Key{Group: "g", Key: "k"}
	c, err := s.Idempotency().Claim(ctx, k, state.Fingerprint{}, state.ClaimOptions{})
	if err != nil || c.Outcome != state.New {
		t.Fatalf("Claim = %v, %v", c.Outcome, err)
	}
	waited := make(chan state.Claim)
	go func() {
		// Closed before its first round trip, the claim fails; closed
		// while it waits, it returns in flight. Either way it returns.
		c, err := s.Idempotency().Claim(ctx, k, state.Fingerprint{}, state.ClaimOptions{Wait: true})
		if err != nil {
			c.Outcome = state.InFlight
		}
		waited <- c
	}()
	if _, err := s.Counters().Next(ctx, "n"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if c := <-waited; c.Outcome != state.InFlight {
		t.Fatalf("a claim waiting at Close = %v, want in-flight", c.Outcome)
	}
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRedisURLErrors: a bad URL or an unreachable server is an error that
// names the URL without its password.
func TestRedisURLErrors(t *testing.T) {
	for _, url := range []string{"redis://:hunter2@127.0.0.1:1/0", "redis://:hunter2@127.0.0.1:1/notadb", "http://:hunter2@x"} {
		_, err := redis.Open(context.Background(), url, redis.Options{DialTimeout: 100 * time.Millisecond})
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%s) = %v, want an error without the password", url, err)
		}
	}
}

// BenchmarkRedis measures the Redis store's request-path operations
// against a real redis-server on this machine (which shares its cores):
// a first request (claim, complete), a replay, a sequence step.
func BenchmarkRedis(b *testing.B) {
	srv := redistest.Start(b)
	s, err := redis.Open(context.Background(), srv.URL(), redis.Options{Prefix: "bench:"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	idem := s.Idempotency()
	resp := benchResponse(256)
	b.Run("op=claim-complete", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			claimComplete(b, idem, "cc-"+strconv.Itoa(i), resp)
		}
	})
	b.Run("op=replay", func(b *testing.B) {
		claimComplete(b, idem, "replayed", resp)
		b.ReportAllocs()
		for b.Loop() {
			c, err := idem.Claim(benchCtx, state.Key{Group: "charges", Key: "replayed"}, benchFP, benchOpts)
			if err != nil || c.Outcome != state.Replay {
				b.Fatalf("replay: %v %v", c.Outcome, err)
			}
		}
	})
	b.Run("op=hit-key", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := s.Sequences().HitKey(benchCtx, "route", strconv.Itoa(i%1000)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestRedisSharedAcrossStores: stores on one Redis with one prefix (the
// replicas of one mock) see each other's journal entries, waits and keys;
// another prefix sees none of them.
func TestRedisSharedAcrossStores(t *testing.T) {
	srv := redistest.Start(t)
	open := func(prefix string) state.Store {
		s, err := redis.Open(context.Background(), srv.URL(), redis.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	ctx := context.Background()
	a, b, other := open("shared:"), open("shared:"), open("other:")

	waited := make(chan error, 1)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	go func() { waited <- b.Journal().Wait(wctx, 0) }()
	e := &state.Entry{Method: "POST", Path: "/payments", Status: 201, Body: []byte(`{"amount":1}`)}
	if err := a.Journal().Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("Wait on another store: %v", err)
	}
	got, err := b.Journal().Entries(ctx, 0)
	if err != nil || len(got) != 1 || got[0].ID != e.ID || got[0].Path != "/payments" || string(got[0].Body) != `{"amount":1}` {
		t.Fatalf("Entries through another store = %+v, %v", got, err)
	}
	if got, _ := other.Journal().Entries(ctx, 0); len(got) != 0 {
		t.Fatalf("another prefix sees %d entries", len(got))
	}

	k := state.Key{Group: "g", Key: "k"}
	c, err := a.Idempotency().Claim(ctx, k, state.Fingerprint{1}, state.ClaimOptions{})
	if err != nil || c.Outcome != state.New {
		t.Fatalf("Claim = %v, %v", c.Outcome, err)
	}
	replay := make(chan state.Claim, 1)
	go func() {
		c, _ := b.Idempotency().Claim(wctx, k, state.Fingerprint{1}, state.ClaimOptions{Wait: true})
		replay <- c
	}()
	if c, _ := other.Idempotency().Claim(ctx, k, state.Fingerprint{2}, state.ClaimOptions{}); c.Outcome != state.New {
		t.Fatalf("the same key under another prefix = %v, want new", c.Outcome)
	}
	if err := a.Idempotency().Complete(ctx, c.Token, state.Response{Status: 201, Body: []byte("done")}); err != nil {
		t.Fatal(err)
	}
	if r := <-replay; r.Outcome != state.Replay || string(r.Response.Body) != "done" {
		t.Fatalf("waiting claim on another store = %v %q, want the replay", r.Outcome, r.Response.Body)
	}
}

var (
	benchCtx  = context.Background()
	benchFP   = state.Fingerprint{1, 2, 3}
	benchOpts = state.ClaimOptions{TTL: time.Hour}
)

// benchResponse is what a typical JSON create answers.
func benchResponse(bodySize int) state.Response {
	return state.Response{
		Status: 201,
		Header: []state.Header{{Name: "Content-Type", Value: "application/json"}, {Name: "Location", Value: "/v1/charges/ch_1"}},
		Body:   make([]byte, bodySize),
	}
}

func claimComplete(b *testing.B, idem state.Idempotency, key string, resp state.Response) {
	c, err := idem.Claim(benchCtx, state.Key{Group: "charges", Key: key}, benchFP, benchOpts)
	if err != nil || c.Outcome != state.New {
		b.Fatalf("claim %s: %v %v", key, c.Outcome, err)
	}
	if err := idem.Complete(benchCtx, c.Token, resp); err != nil {
		b.Fatal(err)
	}
}

// TestRedisOutbox runs the webhook outbox's conformance suite against a
// real redis-server, each outbox under its own prefix.
func TestRedisOutbox(t *testing.T) {
	srv := redistest.Start(t)
	var n atomic.Int64
	outboxtest.Run(t, func(t *testing.T, queue int) webhooks.Outbox {
		s, err := redis.Open(context.Background(), srv.URL(), redis.Options{Prefix: fmt.Sprintf("outbox%d:", n.Add(1))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s.Outbox(queue)
	})
}

// TestRedisLocksAcrossReplicas: two stores on one Redis (two replicas)
// exclude each other by an object's lock.
func TestRedisLocksAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	open := func() *redis.Store {
		s, err := redis.Open(context.Background(), srv.URL(), redis.Options{Prefix: "locks:"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	statetest.RunLocks(t, open().Locks(), open().Locks())
}

// TestRedisJournalIDsAfterRedisForgets: a Redis that forgot the journal
// (a restart without persistence, a FLUSHDB) does not number entries from
// 1 again: a replica's appends go on past the largest ID it appended or
// read, so that a tail after an ID it was shown does not miss the new
// entries.
func TestRedisJournalIDsAfterRedisForgets(t *testing.T) {
	srv := redistest.Start(t)
	open := func() *redis.Store {
		s, err := redis.Open(context.Background(), srv.URL(), redis.Options{Prefix: "journalids:"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	ctx := context.Background()
	a, b := open(), open()
	for range 3 {
		if err := a.Journal().Append(ctx, &state.Entry{Path: "/before"}); err != nil {
			t.Fatal(err)
		}
	}
	if es, err := b.Journal().Entries(ctx, 0); err != nil || len(es) != 3 || es[2].ID != 3 {
		t.Fatalf("entries read through b = %v, %v; want IDs 1 to 3", es, err)
	}
	if _, err := srv.Command("FLUSHDB"); err != nil {
		t.Fatal(err)
	}
	for i, s := range []*redis.Store{b, a} {
		e := &state.Entry{Path: "/after"}
		if err := s.Journal().Append(ctx, e); err != nil {
			t.Fatal(err)
		}
		if want := int64(4 + i); e.ID != want {
			t.Fatalf("entry %d appended after FLUSHDB has ID %d, want %d", i+1, e.ID, want)
		}
	}
}
