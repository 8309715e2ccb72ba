package redis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/internal/redistest"
	"github.com/scenariomock/scenariomock/state/redis"
	"github.com/scenariomock/scenariomock/webhooks"
	"github.com/scenariomock/scenariomock/webhooks/outboxtest"
)

// BenchmarkRedisOutboxDelivery sends events through a dispatcher on the
// Redis outbox to a local receiver that answers 200, and reports the
// Redis round trips each delivery cost (add, claim, finish, and the
// claims that found nothing).
func BenchmarkRedisOutboxDelivery(b *testing.B) {
	srv := redistest.Start(b)
	s, err := redis.Open(context.Background(), srv.URL(), redis.Options{Prefix: "obench:"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	var got atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got.Add(1) }))
	b.Cleanup(recv.Close)
	d := webhooks.New(webhooks.Options{Outbox: s.Outbox(10_000_000), Concurrency: 8})
	if err := d.SetEndpoints([]webhooks.Endpoint{{Name: "shop", URL: recv.URL, Signing: webhooks.None}}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	b.ReportAllocs()
	before := s.RoundTrips()
	n := 0
	for b.Loop() {
		if err := d.Send(&webhooks.Event{Type: "thing.created", Object: []byte(`{"id":"t_1"}`)}, nil, 0, nil); err != nil {
			b.Fatal(err)
		}
		n++
	}
	deadline := time.Now().Add(time.Minute)
	// The outbox's size is read past the store, so that it counts no trip.
	for got.Load() < int64(n) || !outboxEmpty(b, srv) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d delivered", got.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
	b.ReportMetric(float64(s.RoundTrips()-before)/float64(n), "roundtrips/delivery")
}

func outboxEmpty(b *testing.B, srv *redistest.Server) bool {
	reply, err := srv.Command("ZCARD", "obench:{state}:w:q")
	if err != nil {
		b.Fatal(err)
	}
	return reply == ":0\r\n"
}

// TestRedisOutboxTwoDispatchers: two dispatchers on one Redis outbox (two
// replicas in one process), each sending half of 200 events, deliver
// every event exactly once between them.
func TestRedisOutboxTwoDispatchers(t *testing.T) {
	srv := redistest.Start(t)
	var mu sync.Mutex // guards seen
	seen := map[string]int{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct{ ID string }
		_ = json.NewDecoder(r.Body).Decode(&ev)
		mu.Lock()
		seen[ev.ID]++
		mu.Unlock()
	}))
	defer recv.Close()
	var ds []*webhooks.Dispatcher
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for range 2 {
		s, err := redis.Open(context.Background(), srv.URL(), redis.Options{Prefix: "two:"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		d := webhooks.New(webhooks.Options{Outbox: s.Outbox(0), Concurrency: 4})
		if err := d.SetEndpoints([]webhooks.Endpoint{{Name: "shop", URL: recv.URL, Signing: webhooks.None}}); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { d.Run(ctx) })
		ds = append(ds, d)
	}
	const n = 200
	for i := range n {
		if err := ds[i%2].Send(&webhooks.Event{Type: "thing.created"}, nil, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		got := len(seen)
		mu.Unlock()
		if got == n && ds[0].Pending() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events delivered, %d pending", got, n, ds[0].Pending())
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, c := range seen {
		if c != 1 {
			t.Errorf("event %s delivered %d times", id, c)
		}
	}
	made := 0
	for _, d := range ds {
		made += len(d.Attempts(webhooks.Filter{Outcome: webhooks.Delivered}))
	}
	if made != n {
		t.Errorf("%d delivered attempts logged across the dispatchers, want %d", made, n)
	}
}

// BenchmarkRedisOutboxClaim runs outboxtest.BenchClaim on a real
// redis-server, each size under its own prefix.
func BenchmarkRedisOutboxClaim(b *testing.B) {
	srv := redistest.Start(b)
	var n atomic.Int64
	outboxtest.BenchClaim(b, func(b *testing.B, queue int) webhooks.Outbox {
		s, err := redis.Open(context.Background(), srv.URL(), redis.Options{Prefix: fmt.Sprintf("claimbench%d:", n.Add(1))})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s.Outbox(queue)
	})
}

// TestRedisOutboxAdoptsAnOlderBuildsDeliveries: deliveries an older build
// left pending (in w:q alone, before the per-endpoint queues) are claimed
// by this one, in their due order, and dropped with their endpoint.
func TestRedisOutboxAdoptsAnOlderBuildsDeliveries(t *testing.T) {
	srv := redistest.Start(t)
	open := func() webhooks.Outbox {
		s, err := redis.Open(context.Background(), srv.URL(), redis.Options{Prefix: "adopt:"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s.Outbox(0)
	}
	ctx := context.Background()
	now := time.Now()
	q := func(id, ep string, due time.Time) webhooks.Queued {
		return webhooks.Queued{ID: id, EventID: "ev_" + id, Type: "thing.created", Endpoint: ep,
			Body: []byte(`{"id":"ev_` + id + `"}`), Created: now, Due: due}
	}
	old := open()
	for _, p := range []webhooks.Queued{q("d2", "shop", now.Add(-time.Second)), q("d1", "shop", now.Add(-2*time.Second)), q("d3", "crm", now.Add(-time.Second))} {
		if err := old.Add(ctx, []webhooks.Queued{p}, false); err != nil {
			t.Fatal(err)
		}
	}
	// What an older build's Add wrote: w:q and the deliveries, no
	// per-endpoint queues.
	for _, k := range []string{"w:p:shop", "w:p:crm", "w:e"} {
		if _, err := srv.Command("DEL", "adopt:{state}:"+k); err != nil {
			t.Fatal(err)
		}
	}
	o := open()
	got, _, err := o.Claim(ctx, now, 2, time.Minute, webhooks.PerEndpoint{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range got {
		ids = append(ids, p.ID)
	}
	if fmt.Sprint(ids) != "[d1 d2]" && fmt.Sprint(ids) != "[d1 d3]" {
		t.Fatalf("claimed %v, want d1 (the earliest) and one of d2, d3", ids)
	}
	dropped, err := o.Drop(ctx, "crm")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids) == "[d1 d2]" && (len(dropped) != 1 || dropped[0].ID != "d3") {
		t.Fatalf("dropped %v of crm, want d3", dropped)
	}
}
