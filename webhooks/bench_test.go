package webhooks

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkDispatchLag sends events at 1,000 a second to a local receiver
// and reports the dispatch lag, from Send (the route's commit) to the
// receiver reading the request, at the median and the 99th percentile.
func BenchmarkDispatchLag(b *testing.B) {
	var mu sync.Mutex // guards sent and lags
	sent := map[string]time.Time{}
	var lags []time.Duration
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		at := time.Now()
		var ev struct{ ID string }
		_ = json.Unmarshal(body, &ev)
		mu.Lock()
		lags = append(lags, at.Sub(sent[ev.ID]))
		mu.Unlock()
	}))
	defer srv.Close()
	d := New(Options{Queue: 100_000})
	if err := d.SetEndpoints([]Endpoint{{Name: "r", URL: srv.URL, Signing: Stripe, Secrets: []string{secret}}}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		<-tick.C
		ev := &Event{ID: NewID(), Type: "payment_intent.created", Object: json.RawMessage(`{"id":"pi_1","object":"payment_intent"}`)}
		mu.Lock()
		sent[ev.ID] = time.Now()
		mu.Unlock()
		if err := d.Send(ev, nil, 0, nil); err != nil {
			b.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for d.Pending() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	if len(lags) == 0 {
		return
	}
	slices.Sort(lags)
	b.ReportMetric(float64(lags[len(lags)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lags[len(lags)*99/100].Microseconds())/1000, "p99-ms")
}
