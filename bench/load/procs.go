package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// proc is a server under test running as its own process, so that its
// memory can be read apart from the load generator's.
type proc struct {
	name   string
	cmd    *exec.Cmd
	addr   string
	log    *os.File
	exited chan struct{}
}

// logTail returns the last n lines the process logged.
func (p *proc) logTail(n int) string {
	lines := strings.Split(strings.TrimRight(p.logText(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// logText returns everything the process has logged (its log file is
// deleted once opened, but readable through this process's descriptor).
func (p *proc) logText() string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/self/fd/%d", p.log.Fd()))
	return string(b)
}

var delayedLine = regexp.MustCompile(`path=(\S+) .*duration_ms=(\S+) delay_ms=(\S+)`)

// serverDelayErrors reads the request lines scenariomock logged for path
// and returns how much longer than its delay each took, as the server saw
// it: its timer's accuracy without the load generator's own noise.
func (p *proc) serverDelayErrors(path string) samples {
	var out samples
	for _, line := range strings.Split(p.logText(), "\n") {
		m := delayedLine.FindStringSubmatch(line)
		if m == nil || m[1] != path {
			continue
		}
		d, err1 := strconv.ParseFloat(m[2], 64)
		delay, err2 := strconv.ParseFloat(m[3], 64)
		if err1 == nil && err2 == nil {
			out = append(out, time.Duration((d-delay)*float64(time.Millisecond)))
		}
	}
	return out
}

// freePort returns a loopback address that was free a moment ago.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// start runs bin with args, where "{addr}" stands for the address it is
// to listen on, and waits until it answers GET /__admin/health.
func start(name, bin string, args ...string) (*proc, error) {
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "{addr}", addr)
	}
	// Logs go to a file, as a user running it in CI would send them: read
	// through a pipe, they would cost the load generator CPU on the very
	// machine being measured.
	logFile, err := os.CreateTemp("", "scenariomock-load-*.log")
	if err != nil {
		return nil, err
	}
	os.Remove(logFile.Name()) // the open file lives on until the process ends
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	p := &proc{name: name, cmd: cmd, addr: addr, log: logFile, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(p.exited) }()
	// Generous: a start of 100,000 routes on a loaded machine takes
	// seconds, and the startup workload measures it rather than fails it.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if healthy(addr) {
			return p, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("%s exited before it was ready:\n%s", name, p.logTail(20))
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			return nil, fmt.Errorf("%s: not healthy after 2 minutes", name)
		}
	}
}

func healthy(addr string) bool {
	c, err := dial(addr)
	if err != nil {
		return false
	}
	defer c.close()
	rp, err := c.do([]byte("GET /__admin/health HTTP/1.1\r\nHost: bench\r\n\r\n"), time.Second)
	return err == nil && rp.status > 0 // the baseline answers its canned status to every path
}

func (p *proc) stop() {
	p.stopKeepLog()
	p.log.Close()
}

// stopKeepLog stops the process and leaves its log open for reading.
func (p *proc) stopKeepLog() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// memory reads the process's resident set now and at its peak, in bytes.
func (p *proc) memory() (rss, peak int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return rss, peak
}

// cpu returns the CPU time the process has used (user and system).
func (p *proc) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// faults returns the minor page faults the process has taken: each is a
// page of memory touched for the first time, which the kernel zeroes
// (field 10 of /proc/<pid>/stat).
func (p *proc) faults() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	if len(f) < 8 {
		return 0
	}
	n, _ := strconv.ParseInt(f[7], 10, 64)
	return n
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times; 100 on Linux.
const clockTicks = 100

// canned is the fixed answer the baseline gives to every request.
type canned struct {
	Status int                 `json:"status"`
	Header map[string][]string `json:"header"`
	Body   []byte              `json:"body"`
	Delay  time.Duration       `json:"delay"`
}

// probe sends one request to scenariomock and records its answer, so that
// the baseline answers the very same bytes (Date aside, which both add).
func probe(addr string, req []byte) (canned, error) {
	c, err := dial(addr)
	if err != nil {
		return canned{}, err
	}
	defer c.close()
	if _, err := c.c.Write(req); err != nil {
		return canned{}, err
	}
	_ = c.c.SetDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return canned{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return canned{}, err
	}
	resp.Header.Del("Date")
	return canned{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

// serveBaseline is the harness re-executed as the baseline: a bare
// net/http server that answers every request with the canned bytes, after
// the canned delay (a timer and the request context, as scenariomock waits).
func serveBaseline(addr, cannedPath string) error {
	b, err := os.ReadFile(cannedPath)
	if err != nil {
		return err
	}
	var c canned
	if err := json.Unmarshal(b, &c); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if c.Delay > 0 && r.URL.Path != "/__admin/health" { // the harness's readiness check is not delayed
			t := time.NewTimer(c.Delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		hdr := w.Header()
		for k, v := range c.Header {
			hdr[k] = v
		}
		w.WriteHeader(c.Status)
		_, _ = w.Write(c.Body)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		sig := make(chan os.Signal, 1)
		notify(sig)
		<-sig
		_ = srv.Shutdown(ctx)
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}
