package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkServeWhileDelivering measures GET throughput while events=N/s
// are being created (a POST route with an event, at N a second) and
// delivered to a local receiver, against events=0 in the same run: the
// ratio of their ns/op is the cost of the deliveries.
func BenchmarkServeWhileDelivering(b *testing.B) {
	var delivered atomic.Int64
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		delivered.Add(1)
	}))
	defer rc.Close()
	_, base, _ := serveYAMLRunning(b, Options{JournalSize: -1}, fmt.Sprintf(`
webhooks:
  endpoints:
    - { name: r, url: '%s', secret: whsec_test_123 }
routes:
  - { name: get, method: GET, path: /v1/items/1, respond: { status: 200, body: { id: 1 } } }
  - name: create
    method: POST
    path: /v1/payment_intents
    respond: { status: 200, body: { id: pi_1, object: payment_intent } }
    events: [{ type: payment_intent.created }]
`, rc.URL))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	for _, rate := range []int{0, 1000} {
		b.Run(fmt.Sprintf("events=%d/s", rate), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			before := delivered.Load()
			start := time.Now()
			// Four senders, so that a slow POST does not hold the rate down.
			for range min(rate, 4) {
				wg.Go(func() {
					tick := time.NewTicker(4 * time.Second / time.Duration(rate))
					defer tick.Stop()
					for {
						select {
						case <-ctx.Done():
							return
						case <-tick.C:
						}
						resp, err := client.Post(base+"/v1/payment_intents", "application/json", strings.NewReader("{}"))
						if err == nil {
							_, _ = io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
						}
					}
				})
			}
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Get(base + "/v1/items/1")
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
			b.StopTimer()
			cancel()
			wg.Wait()
			b.ReportMetric(float64(delivered.Load()-before)/time.Since(start).Seconds(), "deliveries/s")
		})
	}
}
