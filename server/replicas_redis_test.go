package server

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/scenariomock/scenariomock/internal/redistest"
	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/state/redis"
)

// TestRedisReplicasJournal: two replicas on one Redis journal requests
// at once, 200 each. Every entry gets its own ID, and each replica's
// GET /__admin/requests lists every request once, in ID order, the same
// list on both; listings taken while the appends run never show an ID
// twice or out of order (the IDs are taken and the entries added in one
// script call, so a reader sees no gap that fills later).
func TestRedisReplicasJournal(t *testing.T) {
	rs := redistest.Start(t)
	open := func() state.Store {
		st, err := redis.Open(context.Background(), rs.URL(), redis.Options{Prefix: "journal2:"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	const scenario = `
routes:
  - { name: ping, method: GET, path: '/ping/{n}', respond: { body: pong } }
`
	_, a, _ := serveYAML(t, Options{State: open()}, scenario)
	_, b, _ := serveYAML(t, Options{State: open()}, scenario)
	const each, workers = 200, 8
	ordered := func(l journalList) string {
		seen := map[string]bool{}
		for i, e := range l.Requests {
			if i > 0 && e.ID <= l.Requests[i-1].ID {
				return fmt.Sprintf("entry %d has ID %d after %d", i, e.ID, l.Requests[i-1].ID)
			}
			if seen[e.Path] {
				return fmt.Sprintf("%s listed twice", e.Path)
			}
			seen[e.Path] = true
		}
		return ""
	}
	// A listing races the appends on each replica.
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for _, hs := range []string{a.URL, b.URL} {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if bad := ordered(listRequests(t, hs, "limit=1000")); bad != "" {
					t.Errorf("listing on %s during the appends: %s", hs, bad)
					return
				}
			}
		})
	}
	var writers sync.WaitGroup
	for name, hs := range map[string]string{"a": a.URL, "b": b.URL} {
		for w := range workers {
			writers.Go(func() {
				for i := w; i < each; i += workers {
					if r := do(t, "GET", fmt.Sprintf("%s/ping/%s%d", hs, name, i), ""); r.status != 200 {
						t.Errorf("GET /ping/%s%d = %d %s", name, i, r.status, r.body)
					}
				}
			})
		}
	}
	writers.Wait()
	close(stop)
	readers.Wait()
	var lists [2]journalList
	for i, hs := range []string{a.URL, b.URL} {
		lists[i] = listRequests(t, hs, "limit=1000")
		l := lists[i]
		if l.Total != 2*each || len(l.Requests) != 2*each {
			t.Fatalf("replica %d lists %d entries (total %d), want %d", i, len(l.Requests), l.Total, 2*each)
		}
		if bad := ordered(l); bad != "" {
			t.Fatalf("replica %d: %s", i, bad)
		}
	}
	for i := range lists[0].Requests {
		x, y := lists[0].Requests[i], lists[1].Requests[i]
		if x.ID != y.ID || x.Path != y.Path {
			t.Fatalf("entry %d: %d %s on one replica, %d %s on the other", i, x.ID, x.Path, y.ID, y.Path)
		}
	}
}
