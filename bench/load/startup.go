package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// startupFiles is how many files writeStartupRoutes splits its routes into.
const startupFiles = 10

// writeStartupRoutes writes n routes into startupFiles files in dir, in
// the shapes people write (those of the scenarios and matcher
// benchmarks): one-line flow mappings with a name, a literal path and a
// JSON body; every third with a path variable and a header condition;
// every tenth in block style with a sequence. The same directory is what
// `scenariomock validate` is timed on:
//
//	go run ./bench/load -write-routes /tmp/routes100k
//	/usr/bin/time -v scenariomock validate /tmp/routes100k
func writeStartupRoutes(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	per := (n + startupFiles - 1) / startupFiles
	for f := 0; f*per < n; f++ {
		var b strings.Builder
		b.WriteString("routes:\n")
		for i := f * per; i < min(n, (f+1)*per); i++ {
			switch {
			case i%10 == 9:
				fmt.Fprintf(&b, "  - name: seq %d\n    method: POST\n    path: /orders/%d/pay\n    responses:\n      - { status: 202, body: { state: pending } }\n      - { status: 200, body: { state: paid, n: %d } }\n", i, i, i)
			case i%3 == 2:
				fmt.Fprintf(&b, "  - { name: user %d, method: GET, path: \"/users/{id}/orders/%d\", when: { headers: { X-Tenant: t%d } }, respond: { status: 200, headers: { X-N: \"%d\" }, body: { id: u, n: %d } } }\n", i, i, i, i, i)
			default:
				fmt.Fprintf(&b, "  - { name: item %d, method: GET, path: /items/%d, respond: { body: { n: %d, tags: [a, b] } } }\n", i, i, i)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("routes-%02d.yaml", f)), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// startupResult is one start of a server: how long until it answered
// GET /__admin/health, the CPU it had used by then, and its peak RSS.
type startupResult struct {
	health time.Duration
	cpu    time.Duration
	peak   int64
}

// startupCheck is a request that must be answered with want once the
// server is healthy: the last route of the set, a templated one.
type startupCheck struct {
	req  []byte
	want int
}

// startup starts bin serving dir rounds times and returns each start's
// figures, and the answers to the checks that were wrong or failed.
func (h *harness) startup(dir string, n int, checks []startupCheck) (rs []startupResult, errs, wrong int64, err error) {
	for range h.rounds {
		args := append([]string{"serve", "--addr", "{addr}"}, h.smArgs...)
		args = append(args, dir)
		t0 := time.Now()
		p, err := start("scenariomock", h.bin, args...)
		if err != nil {
			return nil, errs, wrong, err
		}
		r := startupResult{health: time.Since(t0), cpu: p.cpu()}
		_, r.peak = p.memory()
		for _, c := range checks {
			cn, err := dial(p.addr)
			if err != nil {
				errs++
				continue
			}
			rp, err := cn.do(c.req, 10*time.Second)
			cn.close()
			switch {
			case err != nil:
				errs++
			case rp.status != c.want:
				wrong++
			}
		}
		p.stop()
		rs = append(rs, r)
	}
	return rs, errs, wrong, nil
}

// startupChecks are requests the startup set must answer: its last route
// of each shape.
func startupChecks(n int) []startupCheck {
	var out []startupCheck
	last := func(shape func(i int) bool) int {
		for i := n - 1; i >= 0; i-- {
			if shape(i) {
				return i
			}
		}
		return -1
	}
	if i := last(func(i int) bool { return i%10 != 9 && i%3 != 2 }); i >= 0 {
		out = append(out, startupCheck{get(fmt.Sprintf("/items/%d", i)), 200})
	}
	if i := last(func(i int) bool { return i%10 != 9 && i%3 == 2 }); i >= 0 {
		req := fmt.Sprintf("GET /users/u1/orders/%d HTTP/1.1\r\nHost: bench\r\nX-Tenant: t%d\r\n\r\n", i, i)
		out = append(out, startupCheck{[]byte(req), 200})
		out = append(out, startupCheck{get(fmt.Sprintf("/users/u1/orders/%d", i)), 404}) // the header is missing
	}
	if i := last(func(i int) bool { return i%10 == 9 }); i >= 0 {
		req := fmt.Sprintf("POST /orders/%d/pay HTTP/1.1\r\nHost: bench\r\nContent-Length: 0\r\n\r\n", i)
		out = append(out, startupCheck{[]byte(req), 202})
	}
	return out
}

// medianStartup returns the start with the median time to health.
func medianStartup(rs []startupResult) startupResult {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b startupResult) int { return int(a.health - b.health) })
	return s[len(s)/2]
}
