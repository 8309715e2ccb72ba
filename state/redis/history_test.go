package redis_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/internal/redistest"
	"github.com/scenariomock/scenariomock/state/redis"
	"github.com/scenariomock/scenariomock/webhooks"
)

// TestRedisHistorySharedByReplicas: two dispatchers on one Redis, each
// making some of the attempts (a receiver that refuses each event's first
// attempt), list every attempt and delivery of both, with one sequence;
// a reset through one clears both.
func TestRedisHistorySharedByReplicas(t *testing.T) {
	srv := redistest.Start(t)
	var mu sync.Mutex // guards seen
	seen := map[string]int{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct{ ID string }
		_ = json.NewDecoder(r.Body).Decode(&ev)
		mu.Lock()
		seen[ev.ID]++
		first := seen[ev.ID] == 1
		mu.Unlock()
		if first {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer recv.Close()
	var ds []*webhooks.Dispatcher
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for range 2 {
		s, err := redis.Open(context.Background(), srv.URL(), redis.Options{Prefix: "hist:"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		d := webhooks.New(webhooks.Options{Outbox: s.Outbox(0), Shared: s.History(0), Concurrency: 4, TimeScale: 0.001})
		if err := d.SetEndpoints([]webhooks.Endpoint{{Name: "shop", URL: recv.URL, Signing: webhooks.None,
			Retry: webhooks.Retry{Schedule: []time.Duration{time.Second}, Timeout: 10 * time.Second}}}); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { d.Run(ctx) })
		ds = append(ds, d)
	}
	const n = 40
	for i := range n {
		if err := ds[i%2].Send(&webhooks.Event{Type: "thing.created"}, nil, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for len(ds[0].Deliveries(webhooks.Filter{Outcome: webhooks.Delivered})) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d deliveries listed as delivered by replica 0, %d pending",
				len(ds[0].Deliveries(webhooks.Filter{Outcome: webhooks.Delivered})), n, ds[0].Pending())
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i, d := range ds {
		as := d.Attempts(webhooks.Filter{})
		if len(as) != 2*n {
			t.Fatalf("replica %d lists %d attempts, want %d (a refused and an accepted one per event, by either replica)", i, len(as), 2*n)
		}
		for j := range as {
			if as[j].Seq != int64(j+1) {
				t.Fatalf("replica %d: attempt %d has seq %d: want one sequence across the replicas, oldest first", i, j, as[j].Seq)
			}
		}
		if got := len(d.Attempts(webhooks.Filter{Outcome: webhooks.Retrying})); got != n {
			t.Errorf("replica %d lists %d retrying attempts, want %d", i, got, n)
		}
		if got := len(d.Deliveries(webhooks.Filter{Outcome: webhooks.Delivered})); got != n {
			t.Errorf("replica %d lists %d delivered deliveries, want %d", i, got, n)
		}
	}
	ds[1].Reset()
	if as, fs := ds[0].Attempts(webhooks.Filter{}), ds[0].Deliveries(webhooks.Filter{}); len(as) != 0 || len(fs) != 0 {
		t.Errorf("after a reset through replica 1, replica 0 lists %d attempts, %d deliveries", len(as), len(fs))
	}
}

// TestRedisHistoryBounded: the history keeps the newest limit entries.
func TestRedisHistoryBounded(t *testing.T) {
	srv := redistest.Start(t)
	s, err := redis.Open(context.Background(), srv.URL(), redis.Options{Prefix: "bound:"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.History(3)
	ctx := context.Background()
	for i := range 5 {
		a := &webhooks.Attempt{EventID: "evt_" + string(rune('a'+i)), Attempt: 1, Outcome: webhooks.Delivered}
		if _, err := h.Record(ctx, a, &webhooks.Delivery{EventID: a.EventID, State: webhooks.Delivered}); err != nil {
			t.Fatal(err)
		}
	}
	as, err := h.Attempts(ctx)
	if err != nil || len(as) != 3 || as[0].EventID != "evt_c" || as[0].Seq != 3 || as[2].EventID != "evt_e" {
		t.Fatalf("Attempts = %+v, %v; want evt_c..evt_e, seq 3..5", as, err)
	}
	fs, err := h.Finished(ctx)
	if err != nil || len(fs) != 3 || fs[0].EventID != "evt_c" {
		t.Fatalf("Finished = %+v, %v; want the newest 3", fs, err)
	}
}
