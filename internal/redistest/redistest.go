package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/internal/testport"
)

// Binary is where Debian's redis-server package installs the server.
const Binary = "redis-server"

// Server is one redis-server process. It is safe for concurrent use.
type Server struct {
	t    testing.TB
	dir  string
	port int

	mu   sync.Mutex // guards cmd and done
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Start starts a redis-server on a free port (testport.Free: not one the
// kernel hands out as a source port; a port taken anyway before
// redis-server binds it is drawn again) and stops it when t ends. A
// machine without redis-server fails the test with the command that
// installs it: a test that cannot run must not pass.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath(Binary); err != nil {
		t.Fatalf("redis-server is not installed (%v): apt-get install -y redis-server", err)
	}
	s := &Server{t: t, dir: t.TempDir()}
	t.Cleanup(s.Stop)
	for try := 1; ; try++ {
		s.port = testport.Free(t)
		err := s.start()
		if err == nil {
			return s
		}
		if !errors.Is(err, errPortTaken) || try == 10 {
			t.Fatal(err)
		}
		t.Logf("redistest: port %d taken between the check and redis-server's bind; another port", s.port)
	}
}

// errPortTaken: redis-server exited at start because its port was taken.
var errPortTaken = errors.New("redis-server's port was taken")

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is the server's redis:// URL, database 0.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Stop stops the server (SIGTERM, then SIGKILL) and waits for it to exit.
// Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// StopSaving stops the server the way an operator restarting it would
// (SHUTDOWN SAVE): what it holds is written to its directory, and Restart
// loads it back. Tests of an outage use it so that what was stored before
// still exists after, and only the outage is under test.
func (s *Server) StopSaving() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	if _, err := s.Command("SHUTDOWN", "SAVE"); err != nil && !errors.Is(err, io.EOF) {
		s.t.Logf("SHUTDOWN SAVE: %v", err)
	}
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Restart starts the server again on the same port and directory, and
// returns once it answers
// PING. The server must be stopped. It starts empty unless StopSaving
// stopped it.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatal(err)
	}
}

// start starts the server on s.port and returns once it answers PING. An
// error wraps errPortTaken when redis-server could not bind the port.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("redistest: Restart of a running server")
	}
	cmd := exec.Command(Binary, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--enable-debug-command", "local", "--dir", s.dir, "--logfile", filepath.Join(s.dir, "redis.log"))
	cmd.Dir = s.dir
	logStart := int64(0) // what earlier starts wrote to the log is not this start's
	if fi, err := os.Stat(filepath.Join(s.dir, "redis.log")); err == nil {
		logStart = fi.Size()
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := ping(s.Addr())
		if err == nil {
			return nil
		}
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			log = log[min(logStart, int64(len(log))):]
			s.cmd = nil
			if strings.Contains(string(log), "Address already in use") {
				return fmt.Errorf("%w: %s", errPortTaken, log)
			}
			return fmt.Errorf("redis-server exited at start: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s did not answer PING within 30s: %v", s.Addr(), err)
		}
		time.Sleep(20 * time.Millisecond) // polling a process that is starting up
	}
}

// ping sends PING in the inline protocol and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return errors.New("unexpected reply to PING: " + strconv.Quote(line))
	}
	return nil
}

// Command sends one command in the inline protocol and returns the first
// line of the reply, for tests that read INFO or send SHUTDOWN.
func (s *Server) Command(args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprintf(c, "%s\r\n", strings.Join(args, " ")); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}
