package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The hooks workload: the GET workload's closed loop, served while a paced
// stream of POSTs (eventRate a second) commits a route whose events: go to
// a receiver in this process, against the same server and POSTs without
// events:, in the same rounds. It reports the GET throughput ratio and the
// dispatch lag (commit to first attempt) that the server's attempt log
// measured (lagMs: an attempt's start less when it was due, which is the
// commit for an event with no after: and no delay).

const eventRate = 1000 // events a second

// hooksScenario serves the GET measured and the POST that sends an event
// (or none, when endpoint is ""). The answers are fixed, so that the
// figures measure the dispatcher, not a template.
func hooksScenario(endpoint string) string {
	var b strings.Builder
	if endpoint != "" {
		fmt.Fprintf(&b, `webhooks:
  endpoints:
    - name: bench
      url: %s
      signing: stripe
      secret: whsec_bench
`, endpoint)
	}
	b.WriteString(`routes:
  - name: get payment
    method: GET
    path: /payments/pay_demo_0001
    respond:
      body: { id: pay_demo_0001, amount: 9800, currency: JPY, status: succeeded }
  - name: create payment intent
    method: POST
    path: /v1/payment_intents
    respond:
      status: 200
      body: { id: pi_bench, object: payment_intent, amount: 2000, currency: usd }
`)
	if endpoint != "" {
		b.WriteString(`    events:
      - type: payment_intent.created
`)
	}
	return b.String()
}

// receiver answers every delivery 200 and counts them.
type receiver struct {
	srv  *http.Server
	url  string
	seen atomic.Int64
}

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{url: "http://" + ln.Addr().String() + "/hooks"}
	r.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.seen.Add(1)
		w.WriteHeader(http.StatusOK)
	})}
	go r.srv.Serve(ln)
	return r, nil
}

func (r *receiver) stop() { r.srv.Close() }

var postEvent = []byte("POST /v1/payment_intents HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")

// pace sends POSTs to p at rate a second on a few connections, each on a
// schedule of its own (open loop: a late answer does not slow the rate),
// until stop is closed; it returns how many were answered 200.
func pace(p *proc, rate int, stop <-chan struct{}) (sent, failed int64) {
	const conns = 4
	every := time.Second * conns / time.Duration(rate)
	var ok, bad atomic.Int64
	var wg sync.WaitGroup
	for w := range conns {
		wg.Go(func() {
			c, err := dial(p.addr)
			if err != nil {
				bad.Add(1)
				return
			}
			defer c.close()
			next := time.Now().Add(every * time.Duration(w) / conns)
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Until(next)):
				}
				next = next.Add(every)
				rp, err := c.do(postEvent, 30*time.Second)
				if err != nil {
					bad.Add(1)
					if c, err = dial(p.addr); err != nil {
						return
					}
					continue
				}
				if rp.status != 200 {
					bad.Add(1)
					continue
				}
				ok.Add(1)
			}
		})
	}
	<-stop
	wg.Wait()
	return ok.Load(), bad.Load()
}

// hooksRun is the hooks workload's figures.
type hooksRun struct {
	with, without result
	ratio         []float64
	lags          []time.Duration // first attempts' dispatch lag, all rounds
	events        int64           // POSTs answered by the server with events
	delivered     int64           // deliveries the receiver saw
	postFailed    int64
	pending       int
}

func (h *harness) hooks(tmp string) (run hooksRun, err error) {
	rcv, err := startReceiver()
	if err != nil {
		return run, err
	}
	defer rcv.stop()
	withFile, withoutFile := filepath.Join(tmp, "hooks.yaml"), filepath.Join(tmp, "nohooks.yaml")
	if err := os.WriteFile(withFile, []byte(hooksScenario(rcv.url)), 0o644); err != nil {
		return run, err
	}
	if err := os.WriteFile(withoutFile, []byte(hooksScenario("")), 0o644); err != nil {
		return run, err
	}
	args := append([]string{"serve", "--addr", "{addr}"}, h.smArgs...)
	with, err := start("scenariomock with events", h.bin, append(slices.Clone(args), withFile)...)
	if err != nil {
		return run, err
	}
	defer with.stop()
	without, err := start("scenariomock without events", h.bin, append(slices.Clone(args), withoutFile)...)
	if err != nil {
		return run, err
	}
	defer without.stop()
	req := get("/payments/pay_demo_0001")
	want, err := probe(with.addr, req)
	if err != nil {
		return run, err
	}
	round := func(p *proc) (result, int64, int64) {
		stop := make(chan struct{})
		var sent, failed int64
		done := make(chan struct{})
		go func() { sent, failed = pace(p, eventRate, stop); close(done) }()
		r := drive(p, h.conns, h.duration, fixed(req), want)
		close(stop)
		<-done
		return r, sent, failed
	}
	var withs, withouts []result
	for i := range h.rounds {
		var w, wo result
		var sent, failed int64
		if i%2 == 0 {
			wo, _, failed = round(without)
			run.postFailed += failed
			w, sent, failed = round(with)
		} else {
			w, sent, failed = round(with)
			run.postFailed += failed
			wo, _, failed = round(without)
		}
		run.postFailed += failed
		run.events += sent
		withs, withouts = append(withs, w), append(withouts, wo)
		run.ratio = append(run.ratio, w.rps/wo.rps)
	}
	run.with, run.without = median(withs), median(withouts)
	_, run.with.peak = with.memory()
	_, run.without.peak = without.memory()
	// Every event committed is delivered; wait for the last ones.
	deadline := time.Now().Add(time.Minute)
	for rcv.seen.Load() < run.events && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	run.delivered = rcv.seen.Load()
	run.lags, run.pending, err = firstAttemptLags(with.addr)
	return run, err
}

// firstAttemptLags reads the lag of every first attempt the server's
// attempt log holds (the last 10,000 by default).
func firstAttemptLags(addr string) ([]time.Duration, int, error) {
	res, err := http.Get("http://" + addr + "/__admin/webhooks?outcome=delivered")
	if err != nil {
		return nil, 0, err
	}
	defer res.Body.Close()
	var v struct {
		Pending  int
		Attempts []struct {
			Attempt int
			LagMS   float64 `json:"lagMs"`
		}
	}
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
		return nil, 0, fmt.Errorf("GET /__admin/webhooks: %w", err)
	}
	var lags []time.Duration
	for _, a := range v.Attempts {
		if a.Attempt == 1 {
			lags = append(lags, time.Duration(a.LagMS*float64(time.Millisecond)))
		}
	}
	slices.Sort(lags)
	return lags, v.Pending, nil
}

// hooksReport formats the hooks workload, and reports whether its
// targets were met.
func hooksReport(run hooksRun, duration time.Duration, conns int) (string, bool) {
	var b strings.Builder
	fmt.Fprintf(&b, "The GET workload (%d connections, closed loop, %s a round) served while %d POSTs a second (open loop, 4 connections) "+
		"commit a route that sends one event each (Stripe-signed) to a receiver in the harness answering 200, against the same server "+
		"and POSTs with no `events:`, in the same rounds (webhook defaults: `--webhook-concurrency 8`). Dispatch lag is each first attempt's `lagMs` "+
		"in the server's attempt log: its start less the commit.\n\n", conns, duration, eventRate)
	b.WriteString("| server | GET req/s | p50 | p99 | errors | wrong | server CPU per request | peak RSS |\n|---|---|---|---|---|---|---|---|\n")
	for _, x := range []struct {
		name string
		r    result
	}{{"without events", run.without}, {fmt.Sprintf("with %d events/s", eventRate), run.with}} {
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %d | %d | %.1f µs | %s |\n", x.name, x.r.rps, ms(x.r.p50), ms(x.r.p99), x.r.errors, x.r.wrong,
			float64(x.r.cpu)/float64(time.Microsecond), mib(x.r.peak))
	}
	ratio, lo, hi := medianRange(run.ratio)
	ok := ratio >= 0.90
	fmt.Fprintf(&b, "\nGET req/s with events ÷ without: **%.2f** (%.2f–%.2f) (target ≥ 0.90) %s\n\n", ratio, lo, hi, mark(ok))
	if len(run.lags) == 0 {
		b.WriteString("Dispatch lag: no first attempts in the attempt log ✗\n\n")
		return b.String(), false
	}
	p50, p99 := pct(run.lags, 0.50), pct(run.lags, 0.99)
	lagOK := p99 < 50*time.Millisecond
	fmt.Fprintf(&b, "Dispatch lag, commit to first attempt, over the last %d first attempts: p50 **%s**, p99 **%s**, max %s (target p99 < 50 ms) %s\n\n",
		len(run.lags), ms(p50), ms(p99), ms(run.lags[len(run.lags)-1]), mark(lagOK))
	fmt.Fprintf(&b, "Events committed: %d; deliveries received: %d; pending at the end: %d; POSTs failed: %d\n\n", run.events, run.delivered, run.pending, run.postFailed)
	return b.String(), ok && lagOK
}
