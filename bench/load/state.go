package main

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The -state workloads: scenariomock with its state in Redis (serve
// --state URL), measured in the same rounds as the in-memory store and the
// bare net/http baseline, so that the ratios compare like with like.

// stateRun is the figures of a workload run against the three servers.
type stateRun struct {
	sm, base, redis result
	r               ratios // memory ÷ bare
	rBare, rMem     ratios // Redis ÷ bare, Redis ÷ memory
	trips           float64
}

// startRedisReplica starts a scenariomock on the Redis at url, under a
// prefix of its own so that runs share nothing.
func (h *harness) startRedisReplica(scenario string) (*proc, error) {
	prefix := fmt.Sprintf("bench-%s-%d:", h.current, time.Now().UnixNano())
	args := append([]string{"serve", "--addr", "{addr}", "--state", h.state, "--state-prefix", prefix}, h.smArgs...)
	return start("scenariomock --state redis", h.bin, append(args, scenario)...)
}

// compareState drives the pair and the Redis-backed server rounds times,
// rotating which goes first, and stops the Redis-backed server to read
// the round trips it made.
func (h *harness) compareState(p *pair, redis *proc, b builder) stateRun {
	var sms, bases, reds []result
	var out stateRun
	// As the pair was probed: the replay workload's one key then exists
	// before the load starts, rather than being in flight while 32
	// connections send it (409s, which are right but not the answer
	// measured).
	_, _ = probe(redis.addr, b(0, -1, nil))
	served := 0
	for i := 0; i < h.rounds; i++ {
		var s, bs, rs result
		order := []func(){
			func() { bs = drive(p.base, h.conns, h.duration, b, p.want) },
			func() { s = drive(p.sm, h.conns, h.duration, b, p.want) },
			func() { rs = drive(redis, h.conns, h.duration, b, p.want) },
		}
		for j := range order {
			order[(i+j)%len(order)]()
		}
		served += rs.n
		sms, bases, reds = append(sms, s), append(bases, bs), append(reds, rs)
		out.r.rps = append(out.r.rps, s.rps/bs.rps)
		out.r.p99 = append(out.r.p99, float64(s.p99)/float64(bs.p99))
		out.rBare.rps = append(out.rBare.rps, rs.rps/bs.rps)
		out.rBare.p99 = append(out.rBare.p99, float64(rs.p99)/float64(bs.p99))
		out.rMem.rps = append(out.rMem.rps, rs.rps/s.rps)
		out.rMem.p99 = append(out.rMem.p99, float64(rs.p99)/float64(s.p99))
	}
	out.sm, out.base, out.redis = median(sms), median(bases), median(reds)
	_, out.sm.peak = p.sm.memory()
	_, out.base.peak = p.base.memory()
	_, out.redis.peak = redis.memory()
	if trips, ok := redis.stopForTrips(); ok && served > 0 {
		out.trips = float64(trips) / float64(served)
	}
	return out
}

var tripsLine = regexp.MustCompile(`round_trips=(\d+)`)

// stopForTrips stops a Redis-backed scenariomock and reads the round trips
// it logged at shutdown (the probe and health checks are a few more).
func (p *proc) stopForTrips() (int64, bool) {
	p.stopKeepLog()
	defer p.log.Close()
	m := tripsLine.FindStringSubmatch(p.logText())
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	return n, err == nil
}

// stateRows formats a stateRun: the usual two rows, then the Redis-backed
// server's with its ratios to both.
func stateRows(name string, run stateRun) string {
	var b strings.Builder
	b.WriteString(throughputRows(name, run.sm, run.base, run.r, 0, 0))
	rps, rpsLo, rpsHi := medianRange(run.rBare.rps)
	p99, p99Lo, p99Hi := medianRange(run.rBare.p99)
	r := run.redis
	fmt.Fprintf(&b, "| %s | scenariomock --state redis | %.0f | %s | %s | %s | %d | %d | %.1f µs | %s | **%.2f** (%.2f–%.2f) | %.2f (%.2f–%.2f) |\n",
		name, r.rps, ms(r.p50), ms(r.p99), ms(r.p999), r.errors, r.wrong, float64(r.cpu)/float64(time.Microsecond), mib(r.peak),
		rps, rpsLo, rpsHi, p99, p99Lo, p99Hi)
	return b.String()
}

// stateSummary is the line under the table: Redis ÷ memory and the round
// trips per request.
func stateSummary(name string, run stateRun) string {
	rps, rpsLo, rpsHi := medianRange(run.rMem.rps)
	p99, p99Lo, p99Hi := medianRange(run.rMem.p99)
	return fmt.Sprintf("- %s: --state redis ÷ memory: req/s **%.2f** (%.2f–%.2f), p99 **%.2f** (%.2f–%.2f); Redis round trips per request: **%.2f**\n",
		name, rps, rpsLo, rpsHi, p99, p99Lo, p99Hi, run.trips)
}

// redactedURL hides a URL's password for the report.
func redactedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
