package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// builder returns the bytes of request i of worker w, reusing buf; drive
// numbers its workers anew in every round.
type builder func(w, i int, buf []byte) []byte

func fixed(req []byte) builder { return func(_, _ int, _ []byte) []byte { return req } }

func get(path string) []byte {
	return []byte("GET " + path + " HTTP/1.1\r\nHost: bench\r\nUser-Agent: scenariomock-load\r\n\r\n")
}

// freshKeyPost is POST /payments with an Idempotency-Key no request has used.
func freshKeyPost(w, i int, buf []byte) []byte {
	const body = `{"amount":9800,"currency":"JPY"}`
	buf = append(buf[:0], "POST /payments HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nIdempotency-Key: bench-"...)
	buf = strconv.AppendInt(buf, int64(w), 10)
	buf = append(buf, '-')
	buf = strconv.AppendInt(buf, int64(i), 10)
	buf = append(buf, "\r\nContent-Length: "...)
	buf = strconv.AppendInt(buf, int64(len(body)), 10)
	buf = append(buf, "\r\n\r\n"+body...)
	return buf
}

// idempotentScenario emulates Idempotency-Key on POST /payments with a
// fixed answer, so that every answer is the same bytes (the baseline's)
// and the figures measure the claim and the store, not a template. A
// replay carries one more header, Idempotent-Replayed, which the baseline
// does not send.
const idempotentScenario = `routes:
  - name: create payment
    method: POST
    path: /payments
    idempotency: { key: header.Idempotency-Key, required: true }
    respond:
      status: 201
      headers: { Location: /payments/pay_demo_0001 }
      body: { id: pay_demo_0001, amount: 9800, currency: JPY, status: succeeded }
`

// spread sends worker w's i-th request to one of n paths so that all of
// them are hit evenly.
func spread(paths [][]byte) builder {
	return func(w, i int, _ []byte) []byte { return paths[(w*7919+i)%len(paths)] }
}

// result is one server's figures for one workload.
type result struct {
	summary
	errors int64
	wrong  int64
	peak   int64         // peak RSS in bytes
	cpu    time.Duration // server CPU time per request
	faults float64       // server minor page faults per request
}

// drives counts the calls of drive.
var drives atomic.Int64

// drive runs a closed-loop load: conns connections, each sending its next
// request as soon as the last answer arrived, for d. Every answer must be
// want (status and body); anything else counts as wrong.
func drive(p *proc, conns int, d time.Duration, b builder, want canned) result {
	return driveJudged(p, conns, d, b, func(rp reply) bool {
		return rp.status == want.Status && bytes.Equal(rp.body, want.Body)
	})
}

// driveJudged is drive with ok judging each answer: false counts it
// wrong.
func driveJudged(p *proc, conns int, d time.Duration, b builder, ok func(reply) bool) result {
	addr := p.addr
	// The builder's worker numbers are new in every drive, so that a
	// workload of fresh keys sends fresh keys in every round, not the
	// last round's again (which a store that kept them replays).
	first := int(drives.Add(1)) * conns
	cpu0, faults0 := p.cpu(), p.faults()
	var errs, wrong atomic.Int64
	lat := make([]samples, conns)
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < conns; w++ {
		wg.Go(func() {
			var c *conn
			buf := make([]byte, 0, 512)
			for i := 0; time.Now().Before(deadline); i++ {
				if c == nil {
					var err error
					if c, err = dial(addr); err != nil {
						errs.Add(1)
						time.Sleep(10 * time.Millisecond)
						continue
					}
				}
				buf = b(first+w, i, buf)
				t0 := time.Now()
				rp, err := c.do(buf, 30*time.Second)
				if err != nil {
					errs.Add(1)
					c.close()
					c = nil
					continue
				}
				lat[w] = append(lat[w], time.Since(t0))
				if !ok(rp) {
					wrong.Add(1)
				}
			}
			if c != nil {
				c.close()
			}
		})
	}
	wg.Wait()
	r := result{summary: summarize(lat, time.Since(start)), errors: errs.Load(), wrong: wrong.Load()}
	if r.n > 0 {
		r.cpu = (p.cpu() - cpu0) / time.Duration(r.n)
		r.faults = float64(p.faults()-faults0) / float64(r.n)
	}
	return r
}

// pair is a scenariomock process and a baseline answering the same bytes.
type pair struct {
	sm, base *proc
	want     canned
	dir      string
}

func (h *harness) startPair(scenario string, probeReq []byte, extraArgs ...string) (*pair, error) {
	args := append([]string{"serve", "--addr", "{addr}"}, h.smArgs...)
	if h.profile != "" {
		args = append(args, "--cpuprofile", filepath.Join(h.profile, fmt.Sprintf("%s-%d.prof", h.current, time.Now().UnixNano())))
	}
	args = append(append(args, extraArgs...), scenario)
	sm, err := start("scenariomock", h.bin, args...)
	if err != nil {
		return nil, err
	}
	want, err := probe(sm.addr, probeReq)
	if err != nil {
		sm.stop()
		return nil, err
	}
	return h.startBaseline(sm, want)
}

func (h *harness) startBaseline(sm *proc, want canned) (*pair, error) {
	dir, err := os.MkdirTemp("", "scenariomock-load-")
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(want)
	cannedPath := filepath.Join(dir, "canned.json")
	if err := os.WriteFile(cannedPath, b, 0o644); err != nil {
		return nil, err
	}
	args := []string{"-serve-baseline", cannedPath, "-baseline-addr", "{addr}"}
	if h.profile != "" {
		args = append(args, "-baseline-profile", filepath.Join(h.profile, fmt.Sprintf("baseline-%s-%d.prof", h.current, time.Now().UnixNano())))
	}
	base, err := start("baseline", h.self, args...)
	if err != nil {
		sm.stop()
		return nil, err
	}
	return &pair{sm: sm, base: base, want: want, dir: dir}, nil
}

func (p *pair) stop() {
	p.sm.stop()
	p.base.stop()
	os.RemoveAll(p.dir)
}

// ratios are per-round ratios of scenariomock to the baseline, each
// round's pair run back to back so that both saw the same machine.
type ratios struct{ rps, p99 []float64 }

// compare drives both servers rounds times, alternating which goes first,
// and returns each one's median round (by requests per second) with the
// process's peak RSS, and the per-round ratios.
func (h *harness) compare(p *pair, b builder) (sm, base result, r ratios) {
	var sms, bases []result
	for i := 0; i < h.rounds; i++ {
		var s, bs result
		if i%2 == 0 {
			bs = drive(p.base, h.conns, h.duration, b, p.want)
			s = drive(p.sm, h.conns, h.duration, b, p.want)
		} else {
			s = drive(p.sm, h.conns, h.duration, b, p.want)
			bs = drive(p.base, h.conns, h.duration, b, p.want)
		}
		sms, bases = append(sms, s), append(bases, bs)
		r.rps = append(r.rps, s.rps/bs.rps)
		r.p99 = append(r.p99, float64(s.p99)/float64(bs.p99))
	}
	sm, base = median(sms), median(bases)
	_, sm.peak = p.sm.memory()
	_, base.peak = p.base.memory()
	return sm, base, r
}

// medianRange returns the median of xs and its range.
func medianRange(xs []float64) (med, lo, hi float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2], s[0], s[len(s)-1]
}

func median(rs []result) result {
	slices.SortFunc(rs, func(a, b result) int {
		switch {
		case a.rps < b.rps:
			return -1
		case a.rps > b.rps:
			return 1
		}
		return 0
	})
	m := rs[len(rs)/2]
	for _, r := range rs { // a failure in any round is reported
		m.errors = max(m.errors, r.errors)
		m.wrong = max(m.wrong, r.wrong)
	}
	return m
}

// routesFile writes n routes GET /items/0 … /items/n-1, each answering the
// same bytes so that one baseline answer fits all.
func routesFile(dir string, n int) (string, error) {
	var b strings.Builder
	b.WriteString("routes:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - { method: GET, path: /items/%d, respond: { body: { ok: true } } }\n", i)
	}
	path := filepath.Join(dir, fmt.Sprintf("routes-%d.yaml", n))
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

// heldResult is the delay workload's figures for one server.
type heldResult struct {
	conns          int
	errors, wrong  int64
	errP50, errP99 time.Duration
	errMax         time.Duration
	idle, held     int64 // RSS before connecting, and the mean while all are held
	peak           int64
	answered       int
}

// hold opens n connections and keeps each in a delayed request, again and
// again, for d. Starts are spread over one delay so that answers arrive
// evenly (5,000/s for 10,000 connections and 2 s) and the figures measure
// the timer, not a burst of 10,000 answers at the same instant. The delay
// error is each answer's latency minus the delay.
// idle is the server's RSS before any connection of the workload: a later
// round's process has kept memory from the ones before.
func hold(p *proc, idle int64, n int, delay, d time.Duration, req []byte, want canned) heldResult {
	res := heldResult{conns: n, idle: idle}
	conns := make([]*conn, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	var dialErrs atomic.Int64
	for i := range conns {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, err := dial(p.addr)
			if err != nil {
				dialErrs.Add(1)
				return
			}
			conns[i] = c
		})
	}
	wg.Wait()
	var errs, wrong atomic.Int64
	errs.Add(dialErrs.Load())
	lat := make([]samples, n)
	begin := time.Now()
	deadline := begin.Add(d)
	for i, c := range conns {
		if c == nil {
			continue
		}
		wg.Go(func() {
			defer c.close()
			time.Sleep(time.Until(begin.Add(time.Duration(i) * delay / time.Duration(n))))
			for time.Now().Add(delay).Before(deadline) {
				t0 := time.Now()
				rp, err := c.do(req, delay+30*time.Second)
				if err != nil {
					errs.Add(1)
					return
				}
				lat[i] = append(lat[i], time.Since(t0)-delay)
				if rp.status != want.Status || !bytes.Equal(rp.body, want.Body) {
					wrong.Add(1)
				}
			}
		})
	}
	// Sample memory once every connection is in its delay.
	var rssSum, rssN int64
	time.Sleep(delay + delay/4)
	for rssN == 0 || time.Now().Add(delay).Before(deadline) {
		rss, _ := p.memory()
		rssSum, rssN = rssSum+rss, rssN+1
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	if rssN > 0 {
		res.held = rssSum / rssN
	}
	_, res.peak = p.memory()
	s := summarize(lat, time.Since(begin))
	res.errP50, res.errP99, res.errMax, res.answered = s.p50, s.p99, s.mx, s.n
	res.errors, res.wrong = errs.Load(), wrong.Load()
	return res
}

// perConn is the RSS a held connection adds, in bytes.
func (r heldResult) perConn() float64 {
	return float64(r.held-r.idle) / float64(r.conns)
}

// medianHeld returns the round with the median client-side p99.
func medianHeld(rs []heldResult) heldResult {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b heldResult) int { return int(a.errP99 - b.errP99) })
	return s[len(s)/2]
}
