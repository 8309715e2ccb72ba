// Command stall shows what a user of scenariomock sees when clients stop
// reading large answers (issue 19 item 5): it starts the server as its own
// process, opens -conns connections with a receive buffer of 4 KiB, each
// POSTing -size bytes to a route that echoes them ({{ .Request.Body }}),
// never reads, and prints the server's resident memory (VmRSS) every
// -every until -watch has passed (counted from the first POST), with the
// number of those requests the server has finished (logged) by then. The clients keep their sockets
// open throughout: only the server's --write-timeout can drop them.
//
//	go build -o /tmp/smk . && go run ./bench/stall -bin /tmp/smk -- --write-timeout 5s
//
// With -streams K it shows issue 19 item 8 instead: it first fills the
// journal with -fill requests of a -size body each (the journal keeps up
// to --journal-body-limit of each, 64 KiB by default), then K clients
// open GET /__admin/requests/stream?after=0 with the same small receive
// buffer and never read:
//
//	go run ./bench/stall -bin /tmp/smk -streams 5 -size 65536 -fill 10000 -- --write-timeout 5s
//
// Arguments after -- go to `scenariomock serve`.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	bin := flag.String("bin", "scenariomock", "the scenariomock binary")
	conns := flag.Int("conns", 100, "clients that never read")
	size := flag.Int("size", 8<<20, "bytes each client posts, and is answered (with -streams: each request that fills the journal)")
	streams := flag.Int("streams", 0, "instead of -conns clients of an echo, this many clients of the request stream that never read")
	fill := flag.Int("fill", 10_000, "with -streams: requests journaled first")
	watch := flag.Duration("watch", 3*time.Minute, "how long to watch the server's memory")
	every := flag.Duration("every", 5*time.Second, "how often to print it")
	flag.Parse()
	if *streams > 0 {
		*conns = *streams
	}
	if err := run(*bin, *conns, *size, *streams > 0, *fill, *watch, *every, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "stall:", err)
		os.Exit(1)
	}
}

func run(bin string, conns, size int, stream bool, fill int, watch, every time.Duration, serveArgs []string) error {
	dir, err := os.MkdirTemp("", "stall")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	scenario := "routes:\n  - { method: POST, path: /echo, respond: { template: true, body: \"{{ .Request.Body }}\" } }\n" +
		"  - { method: POST, path: /fill, respond: { status: 204 } }\n"
	if err := os.WriteFile(filepath.Join(dir, "echo.yaml"), []byte(scenario), 0o644); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	limit := strconv.Itoa(2 * size)
	args := append([]string{"serve", "--addr", addr, "--max-body", limit, "--max-template-output", limit, "--log-format", "json"}, serveArgs...)
	args = append(args, dir)
	cmd := exec.Command(bin, args...)
	logs, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	finished := make(chan struct{}, conns)
	go func() {
		sc := bufio.NewScanner(logs)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if line := sc.Text(); strings.Contains(line, `"path":"/echo"`) || strings.Contains(line, `"path":"/__admin/requests/stream"`) {
				finished <- struct{}{}
			}
		}
	}()
	if err := waitUp(addr); err != nil {
		return err
	}
	fmt.Printf("server: %s %s\n", bin, strings.Join(args, " "))
	fmt.Printf("idle RSS %s\n", mib(rss(cmd.Process.Pid)))
	body := strings.Repeat("x", size)
	if stream {
		if err := fillJournal(addr, fill, body); err != nil {
			return err
		}
		fmt.Printf("journaled %d requests of %s; RSS %s\n", fill, mib(int64(size)), mib(rss(cmd.Process.Pid)))
	}
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	start := time.Now()
	for range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
		open = append(open, c)
		if stream {
			_, err = fmt.Fprintf(c, "GET /__admin/requests/stream?after=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		} else {
			_, err = fmt.Fprintf(c, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", size, body)
		}
		if err != nil {
			return err
		}
	}
	if stream {
		fmt.Printf("%d clients opened the request stream from the start and read nothing\n", conns)
	} else {
		fmt.Printf("%d clients posted %s each in %s and read nothing\n", conns, mib(int64(size)), time.Since(start).Round(time.Millisecond))
	}
	done, peak := 0, int64(0)
	fmt.Println("     t   RSS        handlers returned (-streams: connections the server closed)")
	next := time.Duration(0)
	for el := time.Since(start); el <= watch; el = time.Since(start) {
		for more := true; more; {
			select {
			case <-finished:
				done++
			default:
				more = false
			}
		}
		r := rss(cmd.Process.Pid)
		peak = max(peak, r)
		if el >= next {
			if stream {
				// Admin calls are not logged: count the connections the
				// server closed.
				done = closedByServer(addr, open)
			}
			fmt.Printf("%6.0fs  %-9s  %d of %d\n", el.Seconds(), mib(r), done, conns)
			next = (el/every + 1) * every
		}
		time.Sleep(250 * time.Millisecond)
	}
	fmt.Printf("peak RSS %s\n", mib(peak))
	return nil
}

// closedByServer counts the clients' connections whose server side has
// been closed (its state in /proc/net/tcp is no longer ESTABLISHED): a
// client that never reads sees no end of its own.
func closedByServer(server string, clients []net.Conn) int {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return -1
	}
	hexAddr := func(a string) string {
		ap, err := netip.ParseAddrPort(a)
		if err != nil {
			return ""
		}
		ip := ap.Addr().As4()
		return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], ap.Port())
	}
	local := hexAddr(server)
	want := map[string]bool{}
	for _, c := range clients {
		want[hexAddr(c.LocalAddr().String())] = true
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && f[1] == local && want[f[2]] && f[3] != "01" {
			n++
		}
	}
	return n
}

// fillJournal sends n requests with body on one connection, reading each
// answer.
func fillJournal(addr string, n int, body string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	rd := bufio.NewReader(c)
	for i := range n {
		if _, err := fmt.Fprintf(c, "POST /fill HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
			return err
		}
		resp, err := http.ReadResponse(rd, nil)
		if err != nil {
			return fmt.Errorf("fill %d: %w", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return nil
}

// waitUp waits for the server to accept connections.
func waitUp(addr string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not accept connections in 30s", addr)
}

// rss returns the process's resident memory in bytes (VmRSS).
func rss(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	b, _ := io.ReadAll(f)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
