package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// server is the mock under test, running as a process group of its own so
// that stopping it also stops what it started (`go run` runs the program
// it built as its child).
type server struct {
	cmd     *exec.Cmd
	group   *group
	logPath string
	log     *os.File
	exited  chan struct{}
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// substitute replaces {port} and {addr} (127.0.0.1:{port}) in command.
func substitute(command []string, port int) []string {
	r := strings.NewReplacer("{port}", strconv.Itoa(port), "{addr}", "127.0.0.1:"+strconv.Itoa(port))
	out := make([]string, len(command))
	for i, a := range command {
		out[i] = r.Replace(a)
	}
	return out
}

// startServer starts command with its output in logPath.
func startServer(ctx context.Context, command []string, logPath string) (*server, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	g, err := startGroup(cmd)
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", strings.Join(command, " "), err)
	}
	s := &server{cmd: cmd, group: g, logPath: logPath, log: log, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(s.exited) }()
	return s, nil
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// waitReady waits until the server answers GET https://localhost:port/,
// as stripe-go's testing package asks it first.
func (s *server) waitReady(ctx context.Context, port int, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := mockVersion(ctx, port); err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("the server exited before it answered (%v); the end of its log:\n%s", s.cmd.ProcessState, tail(s.logPath, 20))
		case <-ctx.Done():
			return fmt.Errorf("the server did not answer GET https://localhost:%d/ within %v; the end of its log:\n%s", port, limit, tail(s.logPath, 20))
		case <-tick.C:
		}
	}
}

// stop ends the server's process group: SIGTERM, then SIGKILL after 10s.
func (s *server) stop() {
	s.group.signal(sigTerm)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
	}
	s.group.kill()           // what the server started and left, or the server itself
	_ = s.cmd.Process.Kill() // had it left its group
	<-s.exited
	s.log.Close()
}

// mockVersion asks GET https://localhost:port/ the way stripe-go's testing
// package does (no certificate check) and returns its Stripe-Mock-Version.
func mockVersion(ctx context.Context, port int) (string, error) {
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://localhost:"+strconv.Itoa(port)+"/", nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	return resp.Header.Get("Stripe-Mock-Version"), nil
}
