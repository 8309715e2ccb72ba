package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// proxyGet is the proxy workload's request.
var proxyGet = get("/payments/pay_demo_0001")

// startProxyPair starts the bare net/http server as an upstream answering
// the demo's GET bytes, and scenariomock with one route that proxies to
// it: the pair's "scenariomock" is the proxied path, its "bare" the same
// upstream called directly, so the ratio is the proxy's overhead.
func (h *harness) startProxyPair(tmp string) (*pair, error) {
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
	b, _ := json.Marshal(want)
	cannedPath := filepath.Join(dir, "canned.json")
	if err := os.WriteFile(cannedPath, b, 0o644); err != nil {
		return nil, err
	}
	args := []string{"-serve-baseline", cannedPath, "-baseline-addr", "{addr}"}
	if h.profile != "" {
		args = append(args, "-baseline-profile", filepath.Join(h.profile, fmt.Sprintf("baseline-proxy-%d.prof", time.Now().UnixNano())))
	}
	base, err := start("baseline", h.self, args...)
	if err != nil {
		return nil, err
	}
	scenario := filepath.Join(dir, "proxy.yaml")
	route := fmt.Sprintf("routes:\n  - { name: proxied, method: GET, path: \"/payments/{id}\", respond: { proxy: \"http://%s\" } }\n", base.addr)
	if err := os.WriteFile(scenario, []byte(route), 0o644); err != nil {
		base.stop()
		return nil, err
	}
	smArgs := append([]string{"serve", "--addr", "{addr}"}, h.smArgs...)
	if h.profile != "" {
		smArgs = append(smArgs, "--cpuprofile", filepath.Join(h.profile, fmt.Sprintf("proxy-%d.prof", time.Now().UnixNano())))
	}
	sm, err := start("scenariomock", h.bin, append(smArgs, scenario)...)
	if err != nil {
		base.stop()
		return nil, err
	}
	return &pair{sm: sm, base: base, want: want, dir: dir}, nil
}
