package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The stripe workload: Stripe's own OpenAPI document served by scenariomock
// (validation, state by convention, Idempotency-Key emulated) against
// stripe-mock, the mock Stripe's users run today (validation only, no
// state, no idempotency), and the bare net/http baseline, in the same
// rounds. It is not among the default workloads: it installs stripe-mock
// with `go install` (the module proxy) unless -stripe-mock names a binary,
// and reads Stripe's spec from stripe-mock's module (go.mod requires it).

// stripeMockModule is where stripe-mock and its copy of Stripe's spec
// (embedded/openapi/spec3.json, fixtures3.json) come from.
const stripeMockModule = "github.com/stripe/stripe-mock"

// stripeScenario serves spec3.json as the --openapi flags would, with
// Stripe's idempotency rules on every POST (defaults apply to generated
// routes; serve --openapi alone has no defaults). The openapi package's
// BenchmarkStripeServeCreate serves the same file.
//
//go:embed stripe-scenario.yaml
var stripeScenario string

// stripeForm is the create's body, as stripe-go sends one.
const stripeForm = "email=jenny%40example.com&name=Jenny+Rosen&description=bench&metadata[order]=6735"

// stripeCreate is POST /v1/customers with an Idempotency-Key no request
// has used.
func stripeCreate(w, i int, buf []byte) []byte {
	buf = append(buf[:0], "POST /v1/customers HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer sk_test_bench\r\nContent-Type: application/x-www-form-urlencoded\r\nIdempotency-Key: bench-"...)
	buf = strconv.AppendInt(buf, int64(w), 10)
	buf = append(buf, '-')
	buf = strconv.AppendInt(buf, int64(i), 10)
	buf = append(buf, "\r\nContent-Length: "...)
	buf = strconv.AppendInt(buf, int64(len(stripeForm)), 10)
	buf = append(buf, "\r\n\r\n"+stripeForm...)
	return buf
}

func stripeRetrieve(id string) []byte {
	return []byte("GET /v1/customers/" + id + " HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer sk_test_bench\r\n\r\n")
}

// isCustomer judges a mock's answer to the create: a 200 customer with
// the email sent. Both mocks answer fresh ids, so answers are judged, not
// compared.
func isCustomer(rp reply) bool { return customerWith(rp, `"email":"jenny@example.com"`) }

// customerWith says whether rp is a 200 customer whose body holds want.
func customerWith(rp reply, want string) bool {
	return rp.status == 200 && bytes.Contains(rp.body, []byte(`"object":"customer"`)) && bytes.Contains(rp.body, []byte(want))
}

// stripeFiles returns the directory of stripe-mock's copy of Stripe's
// spec, downloading the module (the version go.mod requires) if needed.
func stripeFiles() (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", stripeMockModule).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", stripeMockModule, err)
	}
	var m struct{ Dir, Version string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s: no directory in %s", stripeMockModule, out)
	}
	return filepath.Join(m.Dir, "embedded", "openapi"), nil
}

// stripeMockBinary returns bin, or installs stripe-mock at version into
// dir with go install (from the module proxy).
func stripeMockBinary(bin, version, dir string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	install := exec.Command("go", "install", stripeMockModule+"@"+version)
	install.Env = append(os.Environ(), "GOBIN="+dir, "GOWORK=off", "GOFLAGS=")
	if out, err := install.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install %s@%s: %v\n%s", stripeMockModule, version, err, out)
	}
	return filepath.Join(dir, "stripe-mock"), nil
}

// stripeRun is the figures of one stripe workload: scenariomock, stripe-mock
// and the baseline, with the per-round ratios.
type stripeRun struct {
	sm, mock, base result
	vsMock, vsBare ratios
}

// stripe runs the create and retrieve workloads against the three servers.
func (h *harness) stripe(tmp, mockBin, mockVersion string) (create, retrieve stripeRun, err error) {
	specDir, err := stripeFiles()
	if err != nil {
		return create, retrieve, err
	}
	dir := filepath.Join(tmp, "stripe")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return create, retrieve, err
	}
	// The scenario names its spec beside it: copies, as the loader holds
	// files to the scenario's directory.
	for _, f := range []string{"spec3.json", "fixtures3.json"} {
		b, err := os.ReadFile(filepath.Join(specDir, f))
		if err != nil {
			return create, retrieve, err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return create, retrieve, err
		}
	}
	scenario := filepath.Join(dir, "stripe.yaml")
	if err := os.WriteFile(scenario, []byte(stripeScenario), 0o644); err != nil {
		return create, retrieve, err
	}
	mockBin, err = stripeMockBinary(mockBin, mockVersion, filepath.Join(tmp, "bin"))
	if err != nil {
		return create, retrieve, err
	}
	mock, err := start("stripe-mock", mockBin, "-http-addr", "{addr}", "-spec", filepath.Join(specDir, "spec3.json"), "-fixtures", filepath.Join(specDir, "fixtures3.json"))
	if err != nil {
		return create, retrieve, err
	}
	defer mock.stop()
	if rp, err := probe(mock.addr, stripeCreate(0, -1, nil)); err != nil || !isCustomer(reply{status: rp.Status, body: rp.Body}) {
		return create, retrieve, fmt.Errorf("stripe-mock's answer to POST /v1/customers: %d %s %v", rp.Status, rp.Body, err)
	}
	// The pair: scenariomock, and the baseline answering the bytes of
	// scenariomock's first create.
	// Every create stores a customer: bounds past what the rounds store
	// (the default 100,000 items fill in a few seconds, and a full store
	// answers 507).
	p, err := h.startPair(scenario, stripeCreate(0, -1, nil), "--max-collection-items", "2000000", "--collections-max-bytes", "8GiB")
	if err != nil {
		return create, retrieve, err
	}
	defer p.stop()
	if !isCustomer(reply{status: p.want.Status, body: p.want.Body}) {
		return create, retrieve, fmt.Errorf("scenariomock's answer to POST /v1/customers: %d %s", p.want.Status, p.want.Body)
	}
	create = h.compareStripe(p, mock, stripeCreate, isCustomer)

	// Retrieve the customer the probe created: stored here, and any id is
	// answered by stripe-mock.
	var c struct{ ID string }
	if err := json.Unmarshal(p.want.Body, &c); err != nil || c.ID == "" {
		return create, retrieve, fmt.Errorf("no id in %s", p.want.Body)
	}
	get := stripeRetrieve(c.ID)
	want, err := probe(p.sm.addr, get)
	if err != nil {
		return create, retrieve, err
	}
	p.base.stop() // stopped again, harmlessly, by p.stop
	p2, err := h.startBaseline(p.sm, want)
	if err != nil {
		return create, retrieve, err
	}
	defer func() { p2.base.stop(); os.RemoveAll(p2.dir) }()
	isStored := func(rp reply) bool { return customerWith(rp, `"id":"`+c.ID+`"`) }
	retrieve = h.compareStripe(p2, mock, fixed(get), isStored)
	return create, retrieve, nil
}

// compareStripe drives scenariomock, stripe-mock and the baseline rounds
// times, rotating which goes first. ok judges the two mocks' answers; the
// baseline's must be its canned bytes.
func (h *harness) compareStripe(p *pair, mock *proc, b builder, ok func(reply) bool) stripeRun {
	var sms, mocks, bases []result
	var out stripeRun
	for i := 0; i < h.rounds; i++ {
		var s, m, bs result
		order := []func(){
			func() { bs = drive(p.base, h.conns, h.duration, b, p.want) },
			func() { s = driveJudged(p.sm, h.conns, h.duration, b, ok) },
			func() { m = driveJudged(mock, h.conns, h.duration, b, ok) },
		}
		for j := range order {
			order[(i+j)%len(order)]()
		}
		sms, mocks, bases = append(sms, s), append(mocks, m), append(bases, bs)
		out.vsMock.rps = append(out.vsMock.rps, s.rps/m.rps)
		out.vsMock.p99 = append(out.vsMock.p99, float64(s.p99)/float64(m.p99))
		out.vsBare.rps = append(out.vsBare.rps, s.rps/bs.rps)
		out.vsBare.p99 = append(out.vsBare.p99, float64(s.p99)/float64(bs.p99))
	}
	out.sm, out.mock, out.base = median(sms), median(mocks), median(bases)
	_, out.sm.peak = p.sm.memory()
	_, out.mock.peak = mock.memory()
	_, out.base.peak = p.base.memory()
	return out
}

// stripeRows formats one stripe workload: a row per server, with
// scenariomock's ratios to stripe-mock and to the baseline.
func stripeRows(name string, r stripeRun, target float64) string {
	row := func(server string, x result, ratio string) string {
		return fmt.Sprintf("| %s | %s | %.0f | %s | %s | %d | %d | %.1f µs | %.2f | %s | %s |\n", name, server, x.rps, ms(x.p50), ms(x.p99), x.errors, x.wrong,
			float64(x.cpu)/float64(time.Microsecond), x.faults, mib(x.peak), ratio)
	}
	vm, vmLo, vmHi := medianRange(r.vsMock.rps)
	vb, vbLo, vbHi := medianRange(r.vsBare.rps)
	cell := fmt.Sprintf("÷ stripe-mock **%.2f** (%.2f–%.2f)", vm, vmLo, vmHi)
	if target > 0 {
		cell += fmt.Sprintf(" target ≥ %.1f %s", target, mark(vm >= target))
	}
	cell += fmt.Sprintf("; ÷ bare %.2f (%.2f–%.2f)", vb, vbLo, vbHi)
	return row("bare net/http", r.base, "") + row("stripe-mock", r.mock, "") + row("scenariomock", r.sm, cell)
}

const stripeHeader = "| workload | server | req/s | p50 | p99 | errors | wrong | server CPU per request | page faults per request | peak RSS | scenariomock's req/s |\n|---|---|---|---|---|---|---|---|---|---|---|\n"

// stripeSummary names what the rows measure.
func stripeSummary(version string) string {
	return strings.Join([]string{
		"Stripe's OpenAPI document (spec3.json and fixtures3.json from " + stripeMockModule + "'s module) served by `scenariomock serve stripe.yaml` ",
		"(an `openapi:` block with `errors: stripe`, state on, and `defaults: idempotency:` keyed by Idempotency-Key, scoped by Authorization) ",
		"and by stripe-mock " + version + " (`-http-addr`, the same spec and fixtures; it validates and generates, and keeps no state and no keys). ",
		"The create sends a form body with a fresh Idempotency-Key each time: scenariomock validates it, claims the key, generates the customer, ",
		"stores it and the answer (its store bounded at 2,000,000 items and 8 GiB rather than the defaults, which the rounds would fill); the retrieve reads back the customer the first create stored. Answers are judged (200, a customer, the email sent; ",
		"the retrieve a customer with the stored id; stripe-mock answers any id, from its fixture), not compared: both mocks make fresh ids. The bare net/http baseline answers scenariomock's first answer's bytes. ",
		"Servers rotate which goes first each round. Page faults are the server's minor faults per request: memory touched for the first time, ",
		"which the kernel zeroes; a store that keeps every create grows into fresh memory, a stateless mock does not.\n\n",
	}, "")
}
