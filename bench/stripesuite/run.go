package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// config is what one run measures and where it writes.
type config struct {
	module, version string   // the module whose suite runs, from the module proxy
	dir             string   // or this module directory
	port            int      // a server already listening, or
	stripeMock      string   // a stripe-mock version to install and start, or
	server          []string // a command to start, with {port} and {addr}
	out             string   // results directory; "" for a new temporary one
	baseline        string   // a passed.txt to compare with
	timeout, ready  time.Duration
	run             string // go test -run
	parallel        int    // go test -p
	keep            bool   // keep the module's temporary copy
}

// run measures the suite once and prints the summary to w. The returned
// error means the suite could not be run; failing tests are results.
func run(ctx context.Context, cfg config, w io.Writer) (*results, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()

	out := cfg.out
	if out == "" {
		var err error
		if out, err = os.MkdirTemp("", "stripesuite-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "stripesuite-work-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if !cfg.keep {
			os.RemoveAll(tmp)
		}
	}()

	tree, err := moduleTree(ctx, cfg, tmp, w)
	if err != nil {
		return nil, err
	}
	if cfg.keep {
		fmt.Fprintf(w, "module copy kept in %s\n", tree)
	}

	// The server.
	port, label := cfg.port, fmt.Sprintf("a server on port %d", cfg.port)
	command := cfg.server
	if cfg.stripeMock != "" {
		bin, err := installStripeMock(ctx, cfg.stripeMock, filepath.Join(tmp, "bin"), w)
		if err != nil {
			return nil, err
		}
		// -https-addr alone would also start HTTP on :12111, every
		// interface: give HTTP a loopback address of its own.
		command = []string{bin, "-http-addr", "127.0.0.1:0", "-https-addr", "{addr}"}
		label = "stripe-mock " + cfg.stripeMock
	}
	if len(command) > 0 {
		if port, err = freePort(); err != nil {
			return nil, err
		}
		command = substitute(command, port)
		if cfg.stripeMock == "" {
			label = strings.Join(command, " ")
		}
		srv, err := startServer(ctx, command, filepath.Join(out, "server.log"))
		if err != nil {
			return nil, err
		}
		defer srv.stop()
		fmt.Fprintf(w, "started %s (pid %d) on 127.0.0.1:%d; its log: %s\n", label, srv.pid(), port, srv.logPath)
		if err := srv.waitReady(ctx, port, cfg.ready); err != nil {
			return nil, err
		}
	}
	version, err := mockVersion(ctx, port)
	if err != nil {
		return nil, fmt.Errorf("%s: GET https://localhost:%d/: %w", label, port, err)
	}
	if version == "" {
		fmt.Fprintf(w, "warning: GET / has no Stripe-Mock-Version header: stripe-go's testing package exits in init, so every package whose tests import it fails without running a test\n")
	}

	// The suite.
	fmt.Fprintf(w, "running go test ./... of %s in %s against %s (Stripe-Mock-Version %q); results in %s\n", cfg.name(), tree, label, version, out)
	start := time.Now()
	res, err := goTest(ctx, cfg, tree, port, out)
	if err != nil {
		return nil, err
	}
	res.against, res.suite, res.took = label, cfg.name(), time.Since(start).Round(time.Second)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		res.timedOut = cfg.timeout
	}
	if cfg.baseline != "" {
		if err := res.compare(cfg.baseline); err != nil {
			return nil, err
		}
	}
	if err := res.write(out); err != nil {
		return nil, err
	}
	res.summarize(w, out)
	return res, nil
}

// name is the module and version being tested, or the directory.
func (cfg config) name() string {
	if cfg.dir != "" {
		return cfg.dir
	}
	return cfg.module + "@" + cfg.version
}

// moduleTree returns a writable directory holding the module's source.
func moduleTree(ctx context.Context, cfg config, tmp string, w io.Writer) (string, error) {
	src := cfg.dir
	if src == "" {
		fmt.Fprintf(w, "downloading %s\n", cfg.name())
		var err error
		if src, err = download(ctx, cfg.module, cfg.version, tmp); err != nil {
			return "", err
		}
	}
	tree := filepath.Join(tmp, "module")
	if err := copyTree(src, tree); err != nil {
		return "", fmt.Errorf("copy %s: %w", src, err)
	}
	return tree, nil
}

// goTest runs the suite in tree against the server on port, writing go
// test's events to out/test.json while it counts them.
func goTest(ctx context.Context, cfg config, tree string, port int, out string) (*results, error) {
	args := []string{"test", "-json", "-count=1", "-timeout", cfg.timeout.String()}
	if cfg.run != "" {
		args = append(args, "-run", cfg.run)
	}
	if cfg.parallel > 0 {
		args = append(args, "-p", strconv.Itoa(cfg.parallel))
	}
	args = append(args, "./...")
	events, err := os.Create(filepath.Join(out, "test.json"))
	if err != nil {
		return nil, err
	}
	defer events.Close()
	stderr, err := os.Create(filepath.Join(out, "go-test.stderr"))
	if err != nil {
		return nil, err
	}
	defer stderr.Close()

	cmd := exec.Command("go", args...)
	cmd.Dir = tree
	cmd.Env = append(goEnv(), "STRIPE_MOCK_PORT="+strconv.Itoa(port))
	cmd.Stderr = stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	g, err := startGroup(cmd)
	if err != nil {
		return nil, fmt.Errorf("go test: %w", err)
	}
	// go test runs the test binaries as its children: on a deadline or a
	// signal the whole group goes, not go test alone.
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			g.kill()
		case <-done:
		}
	}()
	res, perr := parseEvents(io.TeeReader(pipe, events), modulePath(tree))
	werr := cmd.Wait()
	g.kill() // anything go test left behind
	if perr != nil {
		return nil, fmt.Errorf("read go test's events: %w", perr)
	}
	var exit *exec.ExitError
	if werr != nil && !errors.As(werr, &exit) {
		return nil, fmt.Errorf("go test: %w", werr)
	}
	if res.total() == 0 && len(res.brokenPackages) == 0 && ctx.Err() == nil {
		return nil, fmt.Errorf("go test ran no test (%v); its stderr:\n%s", werr, tail(stderr.Name(), 20))
	}
	return res, nil
}

// goEnv is this process's environment for the go command run on the
// module: outside any workspace, and free to add go.sum lines it lacks.
func goEnv() []string {
	env := []string{"GOWORK=off"}
	flags := "-mod=mod"
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "GOFLAGS="):
			flags = strings.TrimSpace(strings.TrimPrefix(kv, "GOFLAGS=") + " " + flags)
		case strings.HasPrefix(kv, "GOWORK="), strings.HasPrefix(kv, "STRIPE_MOCK_PORT="):
		default:
			env = append(env, kv)
		}
	}
	return append(env, "GOFLAGS="+flags)
}

// modulePath reads the module line of tree's go.mod ("" if none).
func modulePath(tree string) string {
	b, err := os.ReadFile(filepath.Join(tree, "go.mod"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
