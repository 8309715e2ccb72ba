// Command load measures scenariomock against a bare net/http server that
// answers the same bytes, in one run, on this machine: throughput and
// latency under a closed-loop load, many routes, thousands of connections
// held in delays, and reloads under load. It prints Markdown.
//
//	go run ./bench/load                      # every workload, the default sizes
//	go run ./bench/load -out bench/RESULTS.md
//	go run ./bench/load -workloads get,post -duration 2s -rounds 1
//	go run ./bench/load -workloads stripe   # Stripe's spec against stripe-mock (go install from the module proxy)
//
// Run it from the repository root. It builds scenariomock, runs each server
// as its own process (so their memory is measured apart from the load), and
// drives them from in-process clients on loopback.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func notify(c chan os.Signal) { signal.Notify(c, os.Interrupt, syscall.SIGTERM) }

type harness struct {
	bin, self string
	conns     int
	duration  time.Duration
	rounds    int
	smArgs    []string
	profile   string
	current   string
	state     string // a Redis URL: also measure serve --state on it
	// stripeMock is the stripe workload's stripe-mock binary, or "" to
	// install stripeMockVersion.
	stripeMock, stripeMockVersion string
}

const demoPath = "examples/payments-idempotency.yaml"

func main() {
	baseline := flag.String("serve-baseline", "", "internal: run as the baseline server answering the canned response in this file")
	baselineAddr := flag.String("baseline-addr", "", "internal: the baseline's address")
	baselineProfile := flag.String("baseline-profile", "", "internal: write the baseline's CPU profile here")
	workloads := flag.String("workloads", "get,post,idem,replay,proxy,routes,startup,delay,reload,hooks,runtime", "which workloads to run, comma-separated")
	conns := flag.Int("conns", 32, "connections of the closed-loop load")
	duration := flag.Duration("duration", 5*time.Second, "length of each round")
	rounds := flag.Int("rounds", 3, "rounds per workload and server; the median is reported")
	heldConns := flag.Int("held", 10000, "connections held in delays by the delay workload")
	delay := flag.Duration("delay", 2*time.Second, "the delay workload's delay")
	heldFor := flag.Duration("held-for", 8*time.Second, "how long each round of the delay workload runs")
	heldRounds := flag.Int("held-rounds", 3, "rounds of the delay workload per server")
	edits := flag.Int("edits", 100, "rewrites of the scenario file in the reload workload")
	startupRoutes := flag.Int("startup-routes", 100000, "routes the startup workload serves (in 10 files)")
	writeRoutes := flag.String("write-routes", "", "only write the startup workload's -startup-routes routes into this directory, e.g. for timing scenariomock validate on it")
	out := flag.String("out", "", "also write the results to this Markdown file")
	profile := flag.String("profile", "", "write scenariomock CPU profiles into this directory")
	smArgs := flag.String("scenariomock-args", "", "extra arguments for scenariomock serve, e.g. --log-level=warn")
	bin := flag.String("bin", "", "a scenariomock binary to use instead of building one")
	stateURL := flag.String("state", "", "a Redis URL (redis://127.0.0.1:6379/0): also measure the idem and replay workloads with serve --state on it, against the in-memory store and bare net/http in the same rounds")
	proxyAway := flag.Duration("proxy-away", 2*time.Millisecond, "the proxy workload's upstream a network away answers after this wait")
	proxyAwayConns := flag.String("proxy-away-conns", "8,32", "connections of the proxy workload's closed loops against the upstream a network away, comma-separated")
	proxyRates := flag.String("proxy-rates", "1000,2000", "requests a second of the proxy workload's open loop, comma-separated")
	proxyStream := flag.Int64("proxy-stream-mib", 1024, "MiB of the body the proxy workload streams through the proxy (0: none)")
	stripeMock := flag.String("stripe-mock", "", "the stripe workload's stripe-mock binary (default: go install github.com/stripe/stripe-mock@-stripe-mock-version into a temporary GOBIN)")
	stripeMockVersion := flag.String("stripe-mock-version", "v0.203.0", "the stripe-mock version the stripe workload installs")
	check := flag.Bool("check", false, "exit 1 if any answer failed or was wrong (for CI; speed is never checked, shared machines are too noisy)")
	flag.Parse()

	if *baseline != "" {
		if *baselineProfile != "" {
			f, err := os.Create(*baselineProfile)
			if err == nil && pprof.StartCPUProfile(f) == nil {
				defer pprof.StopCPUProfile()
			}
		}
		if err := serveBaseline(*baselineAddr, *baseline); err != nil {
			fmt.Fprintln(os.Stderr, "baseline:", err)
			pprof.StopCPUProfile()
			os.Exit(1)
		}
		return
	}
	// The load generator must not pause its clients to collect garbage
	// while it measures: a pause reads as latency of whichever server is
	// being measured. It allocates little (buffers are reused, latencies
	// kept as samples), so collection is left to the memory limit.
	if *writeRoutes != "" {
		if err := writeStartupRoutes(*writeRoutes, *startupRoutes); err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
		return
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(4 << 30)
	proxy := proxyOptions{away: *proxyAway, streamSize: *proxyStream << 20}
	var err error
	if proxy.awayConns, err = ints(*proxyAwayConns); err == nil {
		proxy.rates, err = ints(*proxyRates)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(2)
	}
	failures, err := run(*workloads, *conns, *duration, *rounds, *heldConns, *heldRounds, *delay, *heldFor, *edits, *startupRoutes, *out, *profile, *smArgs, *bin, *stateURL, *stripeMock, *stripeMockVersion, proxy)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
	if *check && len(failures) > 0 {
		fmt.Fprintln(os.Stderr, "load: failed or wrong answers:\n  "+strings.Join(failures, "\n  "))
		os.Exit(1)
	}
}

// run runs the workloads and returns, besides an error, the workloads
// that had failed or wrong answers.
func run(workloads string, conns int, duration time.Duration, rounds, heldConns, heldRounds int, delay, heldFor time.Duration, edits, startupRoutes int, out, profile, smArgs, bin, stateURL, stripeMock, stripeMockVersion string, proxy proxyOptions) (failures []string, err error) {
	failed := func(name string, errors, wrong int64) {
		if errors > 0 || wrong > 0 {
			failures = append(failures, fmt.Sprintf("%s: %d errors, %d wrong", name, errors, wrong))
		}
	}
	if _, err := os.Stat(demoPath); err != nil {
		return nil, fmt.Errorf("run from the repository root (%s not found)", demoPath)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "scenariomock-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if bin == "" {
		bin = filepath.Join(tmp, "scenariomock")
		build := exec.Command("go", "build", "-o", bin, ".")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("go build: %w", err)
		}
	}
	if profile != "" {
		if err := os.MkdirAll(profile, 0o755); err != nil {
			return nil, err
		}
	}
	h := &harness{bin: bin, self: self, conns: conns, duration: duration, rounds: rounds, profile: profile, smArgs: strings.Fields(smArgs), state: stateURL,
		stripeMock: stripeMock, stripeMockVersion: stripeMockVersion}
	want := map[string]bool{}
	for _, w := range strings.Split(workloads, ",") {
		want[strings.TrimSpace(w)] = true
	}

	var md strings.Builder
	fmt.Fprintf(&md, "# Load results\n\n%s\n\n", machine())
	fmt.Fprintf(&md, "Command: `go run ./bench/load %s`\n\n", strings.Join(os.Args[1:], " "))
	fmt.Fprintf(&md, "Both servers run as their own processes on loopback; the load comes from in-process clients in the harness "+
		"(raw HTTP/1.1 keep-alive, closed loop: each connection sends its next request when the last answer arrives). "+
		"The baseline is a bare `net/http` server answering the very bytes scenariomock answers. "+
		"Throughput figures are the median of %d rounds of %s with %d connections, alternating which server goes first; "+
		"each ratio is the median of the rounds' ratios (each scenariomock round against the baseline round run next to it), with their range in brackets. "+
		"scenariomock runs with its defaults (a log line per request at info level)%s.\n\n",
		rounds, duration, conns, argsNote(smArgs))
	section := func(title string) { fmt.Fprintf(&md, "## %s\n\n", title) }
	progress := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

	if want["get"] || want["post"] || want["idem"] || want["replay"] {
		section("Throughput and latency")
		idem := filepath.Join(tmp, "idempotent.yaml")
		if err := os.WriteFile(idem, []byte(idempotentScenario), 0o644); err != nil {
			return nil, err
		}
		md.WriteString(throughputHeader)
		var stateLines []string
		for _, w := range []struct {
			key, name string
			scenario  string
			probe     []byte
			b         builder
			target    float64
		}{
			{"get", "1. GET /payments/pay_demo_0001 (fixed response)", demoPath, get("/payments/pay_demo_0001"), fixed(get("/payments/pay_demo_0001")), 0.95},
			{"post", "2. POST /payments, a fresh Idempotency-Key per request (header-matched, per-key sequence)", demoPath, freshKeyPost(0, -1, nil), freshKeyPost, 0.90},
			{"idem", "2a. POST /payments, a fresh Idempotency-Key per request, idempotency emulated (claim, store; the store full at 100,000 keys)", idem, freshKeyPost(0, -1, nil), freshKeyPost, 0.85},
			{"replay", "2b. POST /payments, one Idempotency-Key replayed", idem, freshKeyPost(0, -1, nil), fixed(freshKeyPost(0, -1, nil)), 0.90},
		} {
			if !want[w.key] {
				continue
			}
			h.current = w.key
			progress("workload %s", w.name)
			p, err := h.startPair(w.scenario, w.probe)
			if err != nil {
				return nil, err
			}
			if h.state != "" && (w.key == "idem" || w.key == "replay") {
				redis, err := h.startRedisReplica(w.scenario)
				if err != nil {
					p.stop()
					return nil, err
				}
				run := h.compareState(p, redis, w.b)
				p.stop()
				md.WriteString(stateRows(w.name, run))
				stateLines = append(stateLines, stateSummary(w.key, run))
				failed(w.name, run.sm.errors+run.base.errors+run.redis.errors, run.sm.wrong+run.base.wrong+run.redis.wrong)
				continue
			}
			sm, base, r := h.compare(p, w.b)
			p.stop()
			md.WriteString(throughputRows(w.name, sm, base, r, w.target, 1.5))
			failed(w.name, sm.errors+base.errors, sm.wrong+base.wrong)
		}
		md.WriteString("\n")
		if len(stateLines) > 0 {
			fmt.Fprintf(&md, "With the state in Redis (`--state %s`; the ratios are per round, median and range):\n\n%s\n", redactedURL(h.state), strings.Join(stateLines, ""))
		}
	}

	if want["stripe"] {
		section("Stripe's API: scenariomock against stripe-mock")
		h.current = "stripe"
		progress("workload stripe")
		version := h.stripeMockVersion
		if h.stripeMock != "" {
			version = "(" + h.stripeMock + ")"
		}
		create, retrieve, err := h.stripe(tmp, h.stripeMock, h.stripeMockVersion)
		if err != nil {
			return nil, err
		}
		md.WriteString(stripeSummary(version))
		md.WriteString(stripeHeader)
		for _, w := range []struct {
			name   string
			r      stripeRun
			target float64
		}{
			{"9. POST /v1/customers, a fresh Idempotency-Key per request", create, 3},
			{"9a. GET /v1/customers/{id}, the stored customer", retrieve, 0},
		} {
			md.WriteString(stripeRows(w.name, w.r, w.target))
			failed(w.name, w.r.sm.errors+w.r.mock.errors+w.r.base.errors, w.r.sm.wrong+w.r.mock.wrong+w.r.base.wrong)
		}
		md.WriteString("\n")
	}

	if want["proxy"] {
		section("Proxy overhead")
		if err := h.proxyWorkload(tmp, proxy, &md, failed, progress); err != nil {
			return nil, err
		}
	}

	if want["routes"] {
		section("Many routes")
		md.WriteString("Each file holds routes `GET /items/0` … `GET /items/N-1`; \"spread\" sends each request to the next route in a " +
			"scattered order so that all are hit, \"first\" and \"last\" always hit one end of the file.\n\n")
		md.WriteString(throughputHeader)
		spreadRPS := map[int]float64{}
		for _, c := range []struct {
			n     int
			which string
		}{{10, "spread"}, {1000, "first"}, {1000, "last"}, {1000, "spread"}, {10000, "spread"}} {
			h.current = fmt.Sprintf("routes-%d-%s", c.n, c.which)
			progress("workload routes=%d %s", c.n, c.which)
			file, err := routesFile(tmp, c.n)
			if err != nil {
				return nil, err
			}
			paths := make([][]byte, c.n)
			for i := range paths {
				paths[i] = get(fmt.Sprintf("/items/%d", i))
			}
			b := spread(paths)
			switch c.which {
			case "first":
				b = fixed(paths[0])
			case "last":
				b = fixed(paths[c.n-1])
			}
			p, err := h.startPair(file, paths[0])
			if err != nil {
				return nil, err
			}
			sm, base, r := h.compare(p, b)
			p.stop()
			target := 0.85
			if c.which == "spread" {
				target = 0
				spreadRPS[c.n] = sm.rps
			}
			name := fmt.Sprintf("3. %d routes, %s", c.n, c.which)
			md.WriteString(throughputRows(name, sm, base, r, target, 0))
			failed(name, sm.errors+base.errors, sm.wrong+base.wrong)
		}
		if r10, r10k := spreadRPS[10], spreadRPS[10000]; r10 > 0 && r10k > 0 {
			cost := r10 / r10k
			fmt.Fprintf(&md, "\nCost per request at 10,000 routes ÷ at 10 routes (scenariomock, spread): **%.2f×** (target ≤ 1.3×) %s\n", cost, mark(cost <= 1.3))
		}
		md.WriteString("\n")
	}

	if want["startup"] {
		section("Startup with many routes")
		h.current = "startup"
		progress("workload startup: %d routes", startupRoutes)
		dir := filepath.Join(tmp, "startup")
		if err := writeStartupRoutes(dir, startupRoutes); err != nil {
			return nil, err
		}
		rs, errs, wrong, err := h.startup(dir, startupRoutes, startupChecks(startupRoutes))
		if err != nil {
			return nil, err
		}
		cannedPath := filepath.Join(tmp, "startup-canned.json")
		if err := os.WriteFile(cannedPath, []byte(`{"status":200}`), 0o644); err != nil {
			return nil, err
		}
		t0 := time.Now()
		base, err := start("baseline", self, "-serve-baseline", cannedPath, "-baseline-addr", "{addr}")
		if err != nil {
			return nil, err
		}
		baseHealth := time.Since(t0)
		_, basePeak := base.memory()
		base.stop()
		sm := medianStartup(rs)
		fmt.Fprintf(&md, "`scenariomock serve` of %d routes in %d files (the shapes of the Go benchmarks: literal paths with JSON bodies; every third "+
			"`/users/{id}/orders/N` with a header condition; every tenth a sequence), from the start of the process to its first answer to "+
			"`GET /__admin/health`; CPU is what the process had used by then, peak RSS its high-water mark. The median of %d starts; "+
			"a bare `net/http` process started beside it for scale. Then the last route of each shape must answer.\n\n",
			startupRoutes, startupFiles, len(rs))
		md.WriteString("| server | time to health | CPU by then | peak RSS | starts (time to health) | errors | wrong |\n|---|---|---|---|---|---|---|\n")
		fmt.Fprintf(&md, "| bare net/http (no routes) | %s | | %s | | | |\n", ms(baseHealth), mib(basePeak))
		var each []string
		for _, r := range rs {
			each = append(each, ms(r.health))
		}
		fmt.Fprintf(&md, "| scenariomock | %s | %s | %s | %s | %d | %d |\n", ms(sm.health), ms(sm.cpu), mib(sm.peak), strings.Join(each, ", "), errs, wrong)
		failed("6. startup", errs, wrong)
		ok := sm.health < 3*time.Second && sm.peak < 300<<20
		fmt.Fprintf(&md, "\nTarget at 100,000 routes: healthy in < 3 s, peak RSS < 300 MB %s\n\n", mark(ok))
	}

	if want["delay"] {
		section("Connections held in delays")
		h.current = "delay"
		progress("workload delay: %d connections, %s", heldConns, delay)
		file := filepath.Join(tmp, "delay.yaml")
		if err := os.WriteFile(file, []byte(fmt.Sprintf("routes: [{ path: /slow, respond: { body: { ok: true }, delay: %s } }]\n", delay)), 0o644); err != nil {
			return nil, err
		}
		req := get("/slow")
		p, err := h.startPair(file, req)
		if err != nil {
			return nil, err
		}
		p.want.Delay = delay
		p.base.stop()
		if p, err = h.startBaseline(p.sm, p.want); err != nil {
			return nil, err
		}
		// A garbage collection that falls inside a round's window moves its
		// p99 by tens of milliseconds, for either server; rounds show it.
		var bases, sms []heldResult
		baseIdle, _ := p.base.memory()
		smIdle, _ := p.sm.memory()
		for i := 0; i < heldRounds; i++ {
			bases = append(bases, hold(p.base, baseIdle, heldConns, delay, heldFor, req, p.want))
			sms = append(sms, hold(p.sm, smIdle, heldConns, delay, heldFor, req, p.want))
		}
		time.Sleep(200 * time.Millisecond) // let the last log lines reach the file
		server := summarize([]samples{p.sm.serverDelayErrors("/slow")}, time.Second)
		p.stop()
		base, sm := medianHeld(bases), medianHeld(sms)
		fmt.Fprintf(&md, "%d connections, each sending `GET /slow` (a %s delay) again as soon as it is answered, for %s; their first requests are spread over one delay, "+
			"so answers come evenly (%d/s) rather than all at one instant. Delay error = answer latency − %s, measured by the client. "+
			"Memory is the server's RSS sampled while all connections are held, minus its RSS before they connected. "+
			"Each row is the median round of %d by client p99; the p99 range over the rounds is in brackets.\n\n",
			heldConns, delay, heldFor, int(float64(heldConns)/delay.Seconds()), delay, heldRounds)
		md.WriteString("| server | answers | errors | wrong | delay error p50 | p99 | max | RSS idle | RSS held | per held connection | peak RSS |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, r := range []struct {
			name   string
			r      heldResult
			rounds []heldResult
		}{{"bare net/http", base, bases}, {"scenariomock", sm, sms}} {
			lo, hi := r.rounds[0].errP99, r.rounds[0].errP99
			for _, x := range r.rounds {
				lo, hi = min(lo, x.errP99), max(hi, x.errP99)
			}
			fmt.Fprintf(&md, "| %s | %d | %d | %d | %s | %s (%s–%s) | %s | %s | %s | %.1f KiB | %s |\n", r.name, r.r.answered, r.r.errors, r.r.wrong,
				ms(r.r.errP50), ms(r.r.errP99), ms(lo), ms(hi), ms(r.r.errMax), mib(r.r.idle), mib(r.r.held), r.r.perConn()/1024, mib(r.r.peak))
		}
		for i := range sms {
			failed("4. held connections", sms[i].errors+bases[i].errors, sms[i].wrong+bases[i].wrong)
		}
		extra := (sm.perConn() - base.perConn()) / 1024
		fmt.Fprintf(&md, "\nAs scenariomock measured them itself (its log's duration minus delay, all %d requests of all rounds): delay error p50 %s, p99 %s, max %s.\n",
			server.n, ms(server.p50), ms(server.p99), ms(server.mx))
		fmt.Fprintf(&md, "\nscenariomock's delay error p99 as the client saw it: **%s** (target < 5 ms) %s. Memory per held connection beyond bare net/http's: **%.1f KiB** (target < 4 KiB) %s\n\n",
			ms(sm.errP99), mark(sm.errP99 < 5*time.Millisecond), extra, mark(extra < 4))
	}

	if want["reload"] {
		section("Reload under load")
		h.current = "reload"
		progress("workload reload: %d edits", edits)
		r, err := h.reloadUnderLoad(demoPath, edits)
		if err != nil {
			return nil, err
		}
		slices.Sort(r.served)
		slices.Sort(r.errorsShown)
		fmt.Fprintf(&md, "Workload 1 (%d connections) runs while a copy of the demo is rewritten %d times, alternately in place and by atomic rename; "+
			"every 4th edit is invalid (cut in half, a bad duration, a tab, emptied). Every answer must be 200 with the demo's body and the "+
			"`X-Version` of an edit already written. Edit-to-served is the time from the end of a write to the first answer carrying it; "+
			"the harness waits for each edit to be served before the next.\n\n", h.conns, edits)
		md.WriteString("| edits (valid / invalid) | answers | req/s | errors | wrong | edit-to-served p50 | p99 | max | valid edits not served in 2 s | invalid edits shown in the admin API (p50) |\n|---|---|---|---|---|---|---|---|---|---|\n")
		fmt.Fprintf(&md, "| %d (%d / %d) | %d | %.0f | %d | %d | %s | %s | %s | %d | %d of %d (%s) |\n",
			r.edits, r.valid, r.invalid, r.n, r.rps, r.errors, r.wrong, ms(pct(r.served, 0.5)), ms(pct(r.served, 0.99)), ms(pct(r.served, 1)),
			r.missed, len(r.errorsShown), r.invalid, ms(pct(r.errorsShown, 0.5)))
		failed("5. reload under load", r.errors, r.wrong+int64(r.missed))
		ok := r.errors == 0 && r.wrong == 0 && r.missed == 0 && pct(r.served, 0.99) < 100*time.Millisecond
		fmt.Fprintf(&md, "\nTarget: 0 errors, 0 wrong, edit-to-served p99 < 100 ms %s\n\n", mark(ok))
	}

	if want["runtime"] {
		section("Runtime documents under load")
		h.current = "runtime"
		cycles := max(edits, 1)
		progress("workload runtime: %d documents added and removed", cycles)
		r, err := h.runtimeUnderLoad(cycles)
		if err != nil {
			return nil, err
		}
		for _, d := range [][]time.Duration{r.post, r.del, r.served} {
			slices.Sort(d)
		}
		fmt.Fprintf(&md, "Workload 1 (%d connections, GET /payments/pay_demo_0001, every answer checked) runs while a runtime document of 10 routes "+
			"is added (`POST /__admin/scenarios`) and removed (`DELETE /__admin/scenarios/{id}`) %d times, one after the other. "+
			"After each POST answers, one of its routes is asked on another connection and must answer; after each DELETE it must be 404.\n\n", h.conns, cycles)
		md.WriteString("| cycles | answers | req/s | errors | wrong | load p50 | p99 | max | POST p50 / p99 | DELETE p50 / p99 | POST answered to route served p99 | document routes wrong |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		fmt.Fprintf(&md, "| %d | %d | %.0f | %d | %d | %s | %s | %s | %s / %s | %s / %s | %s | %d |\n",
			r.cycles, r.n, r.rps, r.errors, r.wrong, ms(r.p50), ms(r.p99), ms(r.mx), ms(pct(r.post, 0.5)), ms(pct(r.post, 0.99)),
			ms(pct(r.del, 0.5)), ms(pct(r.del, 0.99)), ms(pct(r.served, 0.99)), r.wrongRoutes)
		failed("8. runtime documents under load", r.errors, r.wrong+int64(r.wrongRoutes))
		ok := r.errors == 0 && r.wrong == 0 && r.wrongRoutes == 0 && r.p99 < 100*time.Millisecond
		fmt.Fprintf(&md, "\nTarget: 0 errors, 0 wrong, load p99 < 100 ms while documents come and go %s\n\n", mark(ok))
	}

	if want["hooks"] {
		section("Webhooks delivered while serving")
		h.current = "hooks"
		progress("workload hooks: %d events/s", eventRate)
		run, err := h.hooks(tmp)
		if err != nil {
			return nil, err
		}
		text, _ := hooksReport(run, h.duration, h.conns)
		md.WriteString(text)
		failed("7. webhooks", run.with.errors+run.without.errors+run.postFailed+max(0, run.events-run.delivered), run.with.wrong+run.without.wrong)
	}

	fmt.Print(md.String())
	if out != "" {
		return failures, os.WriteFile(out, []byte(md.String()), 0o644)
	}
	return failures, nil
}

const throughputHeader = "| workload | server | req/s | p50 | p99 | p99.9 | errors | wrong | server CPU per request | peak RSS | req/s ÷ bare | p99 ÷ bare |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n"

// throughputRows formats both servers' figures; a target of 0 is not
// checked. Ratios are the median of the rounds' ratios, with their range.
func throughputRows(name string, sm, base result, r ratios, rpsTarget, p99Target float64) string {
	rps, rpsLo, rpsHi := medianRange(r.rps)
	p99, p99Lo, p99Hi := medianRange(r.p99)
	rpsCell := fmt.Sprintf("**%.2f** (%.2f–%.2f)", rps, rpsLo, rpsHi)
	if rpsTarget > 0 {
		rpsCell += fmt.Sprintf(" target ≥ %.2f %s", rpsTarget, mark(rps >= rpsTarget))
	}
	p99Cell := fmt.Sprintf("%.2f (%.2f–%.2f)", p99, p99Lo, p99Hi)
	if p99Target > 0 {
		p99Cell = fmt.Sprintf("**%.2f** (%.2f–%.2f) target ≤ %.1f %s", p99, p99Lo, p99Hi, p99Target, mark(p99 <= p99Target))
	}
	row := func(server string, r result, ratios string) string {
		return fmt.Sprintf("| %s | %s | %.0f | %s | %s | %s | %d | %d | %.1f µs | %s | %s |\n", name, server, r.rps, ms(r.p50), ms(r.p99), ms(r.p999), r.errors, r.wrong,
			float64(r.cpu)/float64(time.Microsecond), mib(r.peak), ratios)
	}
	return row("bare net/http", base, " | ") + row("scenariomock", sm, rpsCell+" | "+p99Cell)
}

// ints parses a comma-separated list of positive integers.
func ints(list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q: want positive integers separated by commas", list)
		}
		out = append(out, n)
	}
	return out, nil
}

func numCPU() int { return runtime.NumCPU() }

func mark(ok bool) string {
	if ok {
		return "✅"
	}
	return "❌"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func pct(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func argsNote(args string) string {
	if args == "" {
		return ""
	}
	return ", with `" + args + "`"
}

// machine describes where the figures were measured.
func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				cpu = strings.TrimSpace(strings.SplitN(line, ":", 2)[1])
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb)
		mem = fmt.Sprintf(", %.0f GiB", float64(kb)/(1<<20))
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return fmt.Sprintf("Machine: %d cores (%s)%s, Linux %s, %s. Measured %s.", runtime.NumCPU(), cpu, mem,
		strings.TrimSpace(string(kernel)), runtime.Version(), time.Now().UTC().Format("2006-01-02 15:04 UTC"))
}
