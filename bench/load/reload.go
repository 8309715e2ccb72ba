package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// reloadResult is the reload-under-load workload's figures.
type reloadResult struct {
	edits, valid, invalid int
	result                                // the load running during the edits
	served                []time.Duration // edit-to-served latency of each valid edit seen
	missed                int             // valid edits not served within the timeout
	errorsShown           []time.Duration // invalid edit to the error in /__admin/scenarios
	errorsMissed          int
}

// versioned is the demo with an X-Version header on every response, so
// that the load can tell which edit answered it.
func versioned(demo string, v int) string {
	return strings.Replace(demo, "    Cache-Control: no-store\n", fmt.Sprintf("    Cache-Control: no-store\n    X-Version: \"%d\"\n", v), 1)
}

// broken returns the k-th kind of invalid edit of content.
func broken(content string, k int) string {
	switch k % 4 {
	case 0:
		// Saved half-way, inside a flow mapping, so that what is left is
		// never valid YAML (a cut between routes could be a valid, shorter
		// file, which the server would rightly serve).
		cut := strings.Index(content, "body: &payment {") + len("body: &payment { id: pay_")
		return content[:cut]
	case 1:
		return strings.Replace(content, "delay: 10s", "delay: 10", 1) // a validation error
	case 2:
		return strings.Replace(content, "  - name: payment found", "\t- name: payment found", 1) // a tab
	}
	return "" // emptied
}

const reloadTimeout = 2 * time.Second

// reloadUnderLoad serves a copy of the demo and rewrites it edits times
// while conns connections request GET /payments/pay_demo_0001 without
// pause. Every answer must be 200 with the demo's body and the X-Version
// of an edit already written; each valid edit is timed from the write to
// the first answer that carries it.
func (h *harness) reloadUnderLoad(demoPath string, edits int) (reloadResult, error) {
	res := reloadResult{edits: edits}
	demoBytes, err := os.ReadFile(demoPath)
	if err != nil {
		return res, err
	}
	demo := string(demoBytes)
	dir, err := os.MkdirTemp("", "scenariomock-reload-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "payments.yaml")
	if err := os.WriteFile(path, []byte(versioned(demo, 0)), 0o644); err != nil {
		return res, err
	}
	args := append([]string{"serve", "--addr", "{addr}"}, h.smArgs...)
	if h.profile != "" {
		args = append(args, "--cpuprofile", filepath.Join(h.profile, "reload.prof"))
	}
	sm, err := start("scenariomock", h.bin, append(args, dir)...)
	if err != nil {
		return res, err
	}
	defer sm.stop()
	req := get("/payments/pay_demo_0001")
	want, err := probe(sm.addr, req)
	if err != nil {
		return res, err
	}

	valid := make([]atomic.Bool, edits+1) // versions written so far
	seen := make([]atomic.Int64, edits+1) // first time each version was served
	valid[0].Store(true)
	finish := h.background(sm.addr, req, func(rp reply, at time.Time) bool {
		v, verr := strconv.Atoi(string(rp.version))
		if rp.status != 200 || !bytes.Equal(rp.body, want.Body) || verr != nil || v < 0 || v > edits || !valid[v].Load() {
			return false
		}
		seen[v].CompareAndSwap(0, at.UnixNano())
		return true
	})

	admin, err := dial(sm.addr)
	if err != nil {
		return res, err
	}
	defer admin.close()
	lastErrorAt := ""
	for i := 1; i <= edits; i++ {
		content := versioned(demo, i)
		invalid := i%4 == 0
		if invalid {
			content = broken(content, i/4)
		}
		if !invalid {
			valid[i].Store(true)
		}
		var werr error
		if i%2 == 0 {
			werr = os.WriteFile(path, []byte(content), 0o644) // in place
		} else {
			tmp := filepath.Join(dir, ".payments.yaml.tmp")
			if werr = os.WriteFile(tmp, []byte(content), 0o644); werr == nil {
				werr = os.Rename(tmp, path) // atomic rename, as most editors save
			}
		}
		if werr != nil {
			return res, werr
		}
		written := time.Now()
		deadline := written.Add(reloadTimeout)
		if invalid {
			res.invalid++
			shown := false
			for time.Now().Before(deadline) {
				at, ok := lastReload(admin)
				if !ok && at != "" && at != lastErrorAt {
					lastErrorAt = at
					shown = true
					break
				}
				time.Sleep(2 * time.Millisecond)
			}
			if shown {
				res.errorsShown = append(res.errorsShown, time.Since(written))
			} else {
				res.errorsMissed++
			}
			continue
		}
		res.valid++
		for seen[i].Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(200 * time.Microsecond)
		}
		if s := seen[i].Load(); s != 0 {
			res.served = append(res.served, time.Unix(0, s).Sub(written))
		} else {
			res.missed++
		}
	}
	res.result = finish()
	_, res.peak = sm.memory()
	return res, nil
}

// lastReload reads lastReload.at and .ok from the admin API.
func lastReload(c *conn) (at string, ok bool) {
	rp, err := c.do([]byte("GET /__admin/scenarios HTTP/1.1\r\nHost: bench\r\n\r\n"), 5*time.Second)
	if err != nil || rp.status != 200 {
		return "", true
	}
	var st struct {
		LastReload struct {
			At string `json:"at"`
			OK bool   `json:"ok"`
		} `json:"lastReload"`
	}
	if json.Unmarshal(rp.body, &st) != nil {
		return "", true
	}
	return st.LastReload.At, st.LastReload.OK
}
