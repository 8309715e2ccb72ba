package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The proxy workload: one scenariomock process whose routes forward to
// upstreams, each measured against the same upstream called directly, in
// the ways a user meets a proxy:
//
//   - the closed loop of the other workloads against an upstream that
//     answers at once: every process wants the CPU, so on a small machine
//     the ratio says who gets it more than what forwarding costs;
//   - an upstream a network away (it answers after a fixed wait, burning
//     no CPU while it waits), as a sandbox is: the ratio says what the
//     proxy adds to the round trip;
//   - requests at a fixed, moderate rate (open loop): the latency a
//     forward adds when nothing queues, and the proxy's CPU per request;
//   - one large body streamed through: the proxy's memory must stay flat.

// proxyOptions are the proxy workload's knobs (flags of the harness).
type proxyOptions struct {
	away       time.Duration // the network-away upstream's wait
	awayConns  []int         // its closed loops' connections
	rates      []int         // the open loop's requests a second
	streamSize int64         // the streamed body's bytes
}

// proxyGet is the proxy workload's request to the upstream that answers at once.
var proxyGet = get("/payments/pay_demo_0001")

// proxyAwayGet goes through the route to the upstream a network away;
// that upstream (a baseline) answers every path alike.
var proxyAwayGet = get("/away/payments/pay_demo_0001")

// proxyProcs is the proxy workload's processes: scenariomock (sm) in
// front of two baselines, one that answers at once (now) and one that
// answers after opts.away (away), plus the in-process upstream of the
// streamed body.
type proxyProcs struct {
	sm, now, away *proc
	want          canned
	dir           string
	stream        *http.Server
	streamAddr    string
}

func (pp *proxyProcs) stop() {
	pp.sm.stop()
	pp.now.stop()
	pp.away.stop()
	if pp.stream != nil {
		_ = pp.stream.Close()
	}
	os.RemoveAll(pp.dir)
}

// startProxyProcs starts the upstreams, then scenariomock with a route to
// each: /payments/{id} to the one that answers at once, /away/... to the
// one a network away, /stream/... to the streamed body.
func (h *harness) startProxyProcs(tmp string, o proxyOptions) (*proxyProcs, error) {
	demo, err := start("scenariomock", h.bin, "serve", "--addr", "{addr}", demoPath)
	if err != nil {
		return nil, err
	}
	want, err := probe(demo.addr, proxyGet)
	demo.stop()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(tmp, "proxy-")
	if err != nil {
		return nil, err
	}
	pp := &proxyProcs{want: want, dir: dir}
	baseline := func(name string, c canned) (*proc, error) {
		b, _ := json.Marshal(c)
		path := filepath.Join(dir, name+".json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return nil, err
		}
		args := []string{"-serve-baseline", path, "-baseline-addr", "{addr}"}
		if h.profile != "" {
			args = append(args, "-baseline-profile", filepath.Join(h.profile, fmt.Sprintf("baseline-proxy-%s-%d.prof", name, time.Now().UnixNano())))
		}
		return start("baseline", h.self, args...)
	}
	fail := func(err error) (*proxyProcs, error) {
		for _, p := range []*proc{pp.now, pp.away} {
			if p != nil {
				p.stop()
			}
		}
		if pp.stream != nil {
			_ = pp.stream.Close()
		}
		os.RemoveAll(dir)
		return nil, err
	}
	if pp.now, err = baseline("now", want); err != nil {
		return fail(err)
	}
	away := want
	away.Delay = o.away
	if pp.away, err = baseline("away", away); err != nil {
		return fail(err)
	}
	if o.streamSize > 0 {
		if pp.stream, pp.streamAddr, err = serveZeros(o.streamSize); err != nil {
			return fail(err)
		}
	}
	var routes strings.Builder
	routes.WriteString("routes:\n")
	fmt.Fprintf(&routes, "  - { name: proxied, method: GET, path: \"/payments/{id}\", respond: { proxy: \"http://%s\" } }\n", pp.now.addr)
	fmt.Fprintf(&routes, "  - { name: away, method: GET, path: \"/away/{rest:.*}\", respond: { proxy: \"http://%s\" } }\n", pp.away.addr)
	if pp.stream != nil {
		fmt.Fprintf(&routes, "  - { name: stream, method: GET, path: \"/stream\", respond: { proxy: \"http://%s\" } }\n", pp.streamAddr)
	}
	scenario := filepath.Join(dir, "proxy.yaml")
	if err := os.WriteFile(scenario, []byte(routes.String()), 0o644); err != nil {
		return fail(err)
	}
	smArgs := append([]string{"serve", "--addr", "{addr}"}, h.smArgs...)
	if h.profile != "" {
		smArgs = append(smArgs, "--cpuprofile", filepath.Join(h.profile, fmt.Sprintf("proxy-%d.prof", time.Now().UnixNano())))
	}
	if pp.sm, err = start("scenariomock", h.bin, append(smArgs, scenario)...); err != nil {
		return fail(err)
	}
	return pp, nil
}

// serveZeros serves size zero bytes, with their Content-Length, to every
// GET, from this process: an upstream with a body too large to hold.
func serveZeros(size int64) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	buf := make([]byte, 64<<10)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		for left := size; left > 0; {
			n := int64(len(buf))
			if left < n {
				n = left
			}
			if _, err := w.Write(buf[:n]); err != nil {
				return
			}
			left -= n
		}
	})}
	go srv.Serve(ln)
	return srv, ln.Addr().String(), nil
}

// proxyWorkload runs the proxy rows and writes them to md.
func (h *harness) proxyWorkload(tmp string, o proxyOptions, md *strings.Builder, failed func(string, int64, int64), progress func(string, ...any)) error {
	pp, err := h.startProxyProcs(tmp, o)
	if err != nil {
		return err
	}
	defer pp.stop()
	md.WriteString("scenariomock serves routes `respond: { proxy: ... }` in front of bare net/http servers answering the demo's GET bytes; " +
		"\"bare\" is the same upstream called directly, so each ratio is what forwarding costs. scenariomock runs as it does by default: " +
		"journal on, a log line per request.\n\n")

	// 1. The closed loop against the upstream that answers at once.
	h.current = "proxy"
	progress("workload proxy: closed loop, the upstream answers at once")
	sm, base, r := h.compare(&pair{sm: pp.sm, base: pp.now, want: pp.want}, fixed(proxyGet))
	fmt.Fprintf(md, "**CPU-bound closed loop** (%d connections, each sending its next request when its answer arrives; the upstream answers at once). "+
		"The load client, scenariomock and the upstream share the machine's %d cores, so this ratio is bounded by the CPU a forward needs "+
		"on top of the upstream's own, about (client + upstream) ÷ (client + proxy + upstream), whatever the proxy does; it is no estimate of "+
		"what a user in front of a real upstream sees (the rows after it are).\n\n", h.conns, numCPU())
	md.WriteString(throughputHeader)
	name := "6. GET proxied ÷ direct, upstream answers at once, closed loop (CPU-bound)"
	md.WriteString(throughputRows(name, sm, base, r, 0, 0))
	fmt.Fprintf(md, "\nLatency added in this loop (median rounds): p50 %s, p99 %s; it is mostly queueing for the CPU.\n\n", ms(sm.p50-base.p50), ms(sm.p99-base.p99))
	failed(name, sm.errors+base.errors, sm.wrong+base.wrong)

	// 2. The upstream a network away.
	fmt.Fprintf(md, "**Upstream a network away**: the upstream answers after %s, waiting on a timer (no CPU), as a sandbox across a network does; "+
		"closed loops of a few connections, each ratio against the same loop calling that upstream directly (target ≥ 0.80).\n\n", o.away)
	md.WriteString(throughputHeader)
	want := pp.want
	saved := h.conns
	for _, c := range o.awayConns {
		h.conns = c
		h.current = fmt.Sprintf("proxy-away-%d", c)
		progress("workload proxy: upstream %s away, %d connections", o.away, c)
		sm, base, r := h.compare(&pair{sm: pp.sm, base: pp.away, want: want}, fixed(proxyAwayGet))
		name := fmt.Sprintf("6a. GET proxied ÷ direct, upstream %s away, %d connections", o.away, c)
		md.WriteString(throughputRows(name, sm, base, r, 0.80, 0))
		failed(name, sm.errors+base.errors, sm.wrong+base.wrong)
	}
	h.conns = saved
	md.WriteString("\n")

	// 3. A fixed rate: the latency a forward adds when nothing queues.
	fmt.Fprintf(md, "**Fixed rate (open loop)**: requests go out on a schedule, whatever the answers do, from a pool of %d connections, "+
		"to the upstream that answers at once, through the proxy and directly, alternately for %s each, %d rounds; latency is from the moment a "+
		"request is written to its whole answer, the median round's. Added latency = proxied − direct (target p50 < 1 ms). "+
		"Late sends: requests the client sent more than 1 ms after their time (a busy machine delays the client itself).\n\n", openLoopConns, h.duration, h.rounds)
	md.WriteString("| rate | path | answers | p50 | p99 | p99.9 | errors | wrong | late sends | server CPU per request | added p50 | added p99 |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, rate := range o.rates {
		h.current = fmt.Sprintf("proxy-rate-%d", rate)
		progress("workload proxy: %d requests a second", rate)
		var sms, bases []openResult
		for i := 0; i < h.rounds; i++ {
			if i%2 == 0 {
				bases = append(bases, openLoop(pp.now, rate, h.duration, proxyGet, pp.want))
				sms = append(sms, openLoop(pp.sm, rate, h.duration, proxyGet, pp.want))
			} else {
				sms = append(sms, openLoop(pp.sm, rate, h.duration, proxyGet, pp.want))
				bases = append(bases, openLoop(pp.now, rate, h.duration, proxyGet, pp.want))
			}
		}
		sm, base := medianOpen(sms), medianOpen(bases)
		addP50, addP99 := sm.p50-base.p50, sm.p99-base.p99
		row := func(path string, r openResult, added string) {
			fmt.Fprintf(md, "| %d/s | %s | %d | %s | %s | %s | %d | %d | %d | %.1f µs | %s |\n", rate, path, r.n, ms(r.p50), ms(r.p99), ms(r.p999),
				r.errors, r.wrong, r.late, float64(r.cpu)/float64(time.Microsecond), added)
		}
		row("direct (bare net/http)", base, " | ")
		row("proxied (scenariomock)", sm, fmt.Sprintf("**%s** target < 1 ms %s | %s", ms(addP50), mark(addP50 < time.Millisecond), ms(addP99)))
		for i := range sms {
			failed(fmt.Sprintf("6b. %d/s", rate), sms[i].errors+bases[i].errors, sms[i].wrong+bases[i].wrong)
		}
	}
	md.WriteString("\n")

	// 4. One large body through the proxy.
	if pp.stream != nil {
		h.current = "proxy-stream"
		progress("workload proxy: %d MiB streamed through", o.streamSize>>20)
		s := streamThrough(pp.sm, "/stream", o.streamSize)
		fmt.Fprintf(md, "**A %d MiB body streamed through the proxy** (the route proxies to an upstream in the harness that sends zeros with a "+
			"Content-Length; the client reads and discards). scenariomock's RSS sampled every 20 ms while it streams.\n\n", o.streamSize>>20)
		md.WriteString("| bytes received | time | MiB/s | RSS before | RSS max while streaming | growth | peak RSS of the process (VmHWM) | error |\n|---|---|---|---|---|---|---|---|\n")
		errText := ""
		if s.err != nil {
			errText = s.err.Error()
		}
		fmt.Fprintf(md, "| %d | %s | %.0f | %s | %s | %s | %s | %s |\n\n", s.n, ms(s.took), float64(s.n)/(1<<20)/s.took.Seconds(),
			mib(s.before), mib(s.maxRSS), mib(s.maxRSS-s.before), mib(s.peak), errText)
		var errs int64
		if s.err != nil || s.n != o.streamSize {
			errs = 1
		}
		failed("6c. stream", errs, 0)
	}
	return nil
}

// openLoopConns is the open loop's pool: enough that a request finds a
// free connection at the rates measured.
const openLoopConns = 32

// openResult is one open-loop round against one server.
type openResult struct {
	summary
	errors, wrong int64
	late          int64         // sent more than 1 ms after their time
	cpu           time.Duration // server CPU time per request
}

// openLoop sends req to p at rate a second for d, on a schedule: request
// i is due at start + i/rate and goes out on the next free connection of
// the pool as soon as it is due, whether or not earlier ones were
// answered. Each latency counts from the write of the request.
func openLoop(p *proc, rate int, d time.Duration, req []byte, want canned) openResult {
	interval := time.Second / time.Duration(rate)
	total := int(d / interval)
	due := make(chan time.Time, total)
	var errs, wrong, late atomic.Int64
	lat := make([]samples, openLoopConns)
	cpu0 := p.cpu()
	var wg sync.WaitGroup
	for w := range openLoopConns {
		wg.Go(func() {
			var c *conn
			defer func() {
				if c != nil {
					c.close()
				}
			}()
			for at := range due {
				if c == nil {
					var err error
					if c, err = dial(p.addr); err != nil {
						errs.Add(1)
						continue
					}
				}
				t0 := time.Now()
				if t0.Sub(at) > time.Millisecond {
					late.Add(1)
				}
				rp, err := c.do(req, 30*time.Second)
				if err != nil {
					errs.Add(1)
					c.close()
					c = nil
					continue
				}
				lat[w] = append(lat[w], time.Since(t0))
				if rp.status != want.Status || string(rp.body) != string(want.Body) {
					wrong.Add(1)
				}
			}
		})
	}
	start := time.Now()
	for i := range total {
		at := start.Add(time.Duration(i) * interval)
		if wait := time.Until(at); wait > 0 {
			time.Sleep(wait)
		}
		due <- at
	}
	close(due)
	wg.Wait()
	r := openResult{summary: summarize(lat, time.Since(start)), errors: errs.Load(), wrong: wrong.Load(), late: late.Load()}
	if r.n > 0 {
		r.cpu = (p.cpu() - cpu0) / time.Duration(r.n)
	}
	return r
}

// medianOpen returns the round with the median p50.
func medianOpen(rs []openResult) openResult {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b openResult) int { return int(a.p50 - b.p50) })
	m := s[len(s)/2]
	for _, r := range rs {
		m.errors, m.wrong = max(m.errors, r.errors), max(m.wrong, r.wrong)
	}
	return m
}

// streamResult is one body streamed through the proxy.
type streamResult struct {
	n                    int64
	took                 time.Duration
	before, maxRSS, peak int64
	err                  error
}

// streamThrough GETs path from p and reads the answer's body to its end,
// sampling p's RSS meanwhile.
func streamThrough(p *proc, path string, size int64) streamResult {
	var res streamResult
	res.before, _ = p.memory()
	ctx, cancel := context.WithCancel(context.Background())
	sampled := make(chan int64)
	go func() {
		var mx int64
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if rss, _ := p.memory(); rss > mx {
				mx = rss
			}
			select {
			case <-ctx.Done():
				sampled <- mx
				return
			case <-t.C:
			}
		}
	}()
	t0 := time.Now()
	res.n, res.err = getBody(p.addr, path)
	res.took = time.Since(t0)
	cancel()
	res.maxRSS = <-sampled
	_, res.peak = p.memory()
	if res.err == nil && res.n != size {
		res.err = fmt.Errorf("received %d of %d bytes", res.n, size)
	}
	return res
}

// getBody sends GET path and discards the answer's body, returning its size.
func getBody(addr, path string) (int64, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Minute))
	if _, err := c.Write(get(path)); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 64<<10), nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return 0, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return io.Copy(io.Discard, resp.Body)
}
