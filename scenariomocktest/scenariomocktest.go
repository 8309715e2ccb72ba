package scenariomocktest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/adminclient"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/server"
	"github.com/scenariomock/scenariomock/state"
)

// Filter selects journal entries; see adminclient.Filter.
type Filter = adminclient.Filter

// Source is where a server's scenarios come from: YAML or Files.
type Source struct {
	desc string
	load func() (*scenarios.Set, error)
}

// YAML serves the scenarios in text, as if it were one file named
// inline.yaml (problems are reported at its lines). The indentation
// common to all its lines is removed first, so that text may be indented
// with the Go code around it, tabs included.
func YAML(text string) Source {
	data := []byte(dedent(text))
	return Source{desc: "inline.yaml", load: func() (*scenarios.Set, error) { return scenarios.LoadBytes("inline.yaml", data) }}
}

// Files serves the scenario files and directories at paths, as `serve`
// does (directories are searched for *.yaml and *.yml).
func Files(paths ...string) Source {
	return Source{desc: strings.Join(paths, " "), load: func() (*scenarios.Set, error) { return scenarios.Load(paths...) }}
}

// dedent removes the leading blanks all non-blank lines share.
func dedent(text string) string {
	lines := strings.Split(text, "\n")
	prefix := ""
	first := true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first {
			prefix, first = indent, false
			continue
		}
		for !strings.HasPrefix(indent, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			lines[i] = "" // the blanks before a closing backquote, say
			continue
		}
		lines[i] = strings.TrimPrefix(l, prefix)
	}
	return strings.Join(lines, "\n")
}

// Option configures a server.
type Option func(*config)

type config struct {
	failOnUnmatched bool
	seed            *uint64
	logLevel        *slog.Level
	server          []func(*server.Options)
}

// FailOnUnmatched makes the end of the test (or Close) fail when any
// request matched no route, listing each with its near-miss report: the
// test then proves that the code under test called nothing unmocked.
func FailOnUnmatched() Option { return func(c *config) { c.failOnUnmatched = true } }

// Seed makes the server's random choices (randomHex, randomInt and uuid
// in templates, delay ranges, fault chances) repeat from run to run, as
// serve --seed does, for requests made one after another.
func Seed(seed uint64) Option { return func(c *config) { c.seed = &seed } }

// Log writes the server's log lines at level and above to t.Log (the
// default is no log): slog.LevelInfo for a line per request,
// slog.LevelWarn for unmatched requests and other problems.
func Log(level slog.Level) Option { return func(c *config) { c.logLevel = &level } }

// ServerOptions changes the server's options before it starts (bounds,
// timeouts, a state store). Load, Source, Logger and Rand are set by the
// other options.
func ServerOptions(fn func(*server.Options)) Option {
	return func(c *config) { c.server = append(c.server, fn) }
}

// Server is a scenariomock server running in this process. It is safe
// for concurrent use.
type Server struct {
	url    string
	client *adminclient.Client
	tb     testing.TB // nil for a server from New
	cfg    config
	log    *testLog

	cancel context.CancelFunc
	served chan error // Serve's result
	once   sync.Once
	err    error // Close's result
}

// Start serves src on a free port of 127.0.0.1 until the test ends. It
// fails the test at once (t.Fatal) when the scenarios do not load, and at
// its end (t.Error) when FailOnUnmatched finds unmatched requests. Call
// it from the test's goroutine.
func Start(t testing.TB, src Source, opts ...Option) *Server {
	t.Helper()
	var log *testLog
	cfg := configure(opts)
	if cfg.logLevel != nil {
		log = &testLog{tb: t}
	}
	s, err := start(src, cfg, log)
	if err != nil {
		t.Fatalf("scenariomocktest: %v", err)
	}
	s.tb = t
	t.Cleanup(func() {
		// A Close the test called itself returned its error to the test.
		if first, err := s.close(); first && err != nil {
			t.Errorf("scenariomocktest: %v", err)
		}
	})
	return s
}

// StartFiles is Start(t, Files(paths...)).
func StartFiles(t testing.TB, paths ...string) *Server {
	t.Helper()
	return Start(t, Files(paths...))
}

// New serves src on a free port of 127.0.0.1 until Close, for use outside
// a test (an Example, a main). Its Count, Requests and Reset panic on
// error; Client's methods return them.
func New(src Source, opts ...Option) (*Server, error) {
	return start(src, configure(opts), nil)
}

func configure(opts []Option) config {
	var c config
	for _, o := range opts {
		o(&c)
	}
	return c
}

func start(src Source, cfg config, log *testLog) (*Server, error) {
	if src.load == nil {
		return nil, errors.New("no scenarios: pass YAML(...) or Files(...)")
	}
	opts := server.Options{Load: src.load, Source: src.desc}
	for _, fn := range cfg.server {
		fn(&opts)
	}
	opts.Load, opts.Source = src.load, src.desc
	if log != nil {
		opts.Logger = slog.New(server.NewLogHandler(log, false, *cfg.logLevel))
	}
	if cfg.seed != nil {
		opts.Rand = server.SeededRand(*cfg.seed) // serve --seed's
	}
	srv, err := server.New(opts)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", src.desc, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{url: "http://" + ln.Addr().String(), cfg: cfg, log: log, cancel: cancel, served: make(chan error, 1)}
	s.client, err = adminclient.New(s.url)
	if err != nil {
		cancel()
		ln.Close()
		return nil, err
	}
	go func() { s.served <- srv.Serve(ctx, ln) }()
	return s, nil
}

// URL is the server's base URL, http://127.0.0.1:<port>.
func (s *Server) URL() string { return s.url }

// Client is a client of the server's admin API, for what the helpers
// below do not cover (Clear, Stream, Routes) and for errors as values.
func (s *Server) Client() *adminclient.Client { return s.client }

// patience bounds each helper's admin call: generous, for loaded CI
// machines running tests under -race.
const patience = 30 * time.Second

func (s *Server) check(err error) {
	if err == nil {
		return
	}
	if s.tb == nil {
		panic(fmt.Sprintf("scenariomocktest: %v", err))
	}
	s.tb.Helper()
	s.tb.Fatalf("scenariomocktest: %v", err)
}

// Count returns how many requests received match f.
func (s *Server) Count(f Filter) int {
	if s.tb != nil {
		s.tb.Helper()
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	n, err := s.client.Count(ctx, f)
	s.check(err)
	return n
}

// Requests returns the requests received that match f, oldest first (the
// newest f.Limit, or 1000).
func (s *Server) Requests(f Filter) []state.Entry {
	if s.tb != nil {
		s.tb.Helper()
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	entries, _, err := s.client.Requests(ctx, f)
	s.check(err)
	return entries
}

// Add serves the routes of a scenario document (YAML or JSON, as a
// scenario file; indentation common to its lines is removed) on top of the
// server's, for the rest of t: they win over the server's own routes of
// the same priority, and are removed when t ends. A document with
// session: NAME answers only requests that carry that session (header
// X-Scenariomock-Session, or path prefix /__session/NAME/), so parallel
// tests can share one server. A document with problems fails t with each
// at its line:col. Add returns the names of the routes added.
func (s *Server) Add(t testing.TB, doc string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	d, err := s.client.AddScenarios(ctx, []byte(dedent(doc)))
	if err != nil {
		t.Fatalf("scenariomocktest: Add: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		if err := s.client.RemoveScenarios(ctx, d.ID); err != nil {
			t.Errorf("scenariomocktest: Add: removing its document at the end of the test: %v", err)
		}
	})
	return d.Routes
}

// State returns the value of the route state name (a route's state:)
// for key (what its per: renders, "" for a state without per:), of the
// routes of no session: Started when nothing moved it.
func (s *Server) State(name, key string) string {
	if s.tb != nil {
		s.tb.Helper()
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	v, err := s.client.State(ctx, adminclient.StateRef{Name: name, Key: key})
	s.check(err)
	return v
}

// SetState sets the route state name for key ("" for a state without
// per:), of the routes of no session, to value, as if a route had moved
// it: a test starts from the state it needs ("the order is paid")
// without the requests that lead there. Client().SetState reaches a
// session's.
func (s *Server) SetState(name, key, value string) {
	if s.tb != nil {
		s.tb.Helper()
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	s.check(s.client.SetState(ctx, adminclient.StateRef{Name: name, Key: key}, value))
}

// States lists the route states that were set, of every session; a state
// not listed is Started.
func (s *Server) States() []adminclient.State {
	if s.tb != nil {
		s.tb.Helper()
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	vs, err := s.client.States(ctx)
	s.check(err)
	return vs
}

// Reset forgets everything the server remembers: sequence positions,
// idempotency keys, collections, counters, route states and the requests received, so
// that one server can serve several subtests from the same start.
func (s *Server) Reset() {
	if s.tb != nil {
		s.tb.Helper()
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	s.check(s.client.Reset(ctx))
}

// Close stops the server (Start's cleanup calls it) and, with
// FailOnUnmatched, returns an error listing the requests no route
// matched. Calls after the first return the first's result.
func (s *Server) Close() error {
	_, err := s.close()
	return err
}

// close is Close, and reports whether this call was the first.
func (s *Server) close() (first bool, err error) {
	s.once.Do(func() {
		first = true
		var errs []error
		if s.cfg.failOnUnmatched {
			errs = append(errs, s.unmatched())
		}
		s.cancel()
		if err := <-s.served; err != nil {
			errs = append(errs, err)
		}
		if s.log != nil {
			s.log.close()
		}
		s.err = errors.Join(errs...)
	})
	return first, s.err
}

// unmatched describes the requests no route matched, or returns nil.
func (s *Server) unmatched() error {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	entries, total, err := s.client.Requests(ctx, Filter{Matched: "false", Limit: 100})
	if err != nil {
		return fmt.Errorf("FailOnUnmatched: %w", err)
	}
	if total == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s matched no route", total, plural(total, "request"))
	if total > len(entries) {
		fmt.Fprintf(&b, " (the newest %d below)", len(entries))
	}
	b.WriteString(":")
	for _, e := range entries {
		fmt.Fprintf(&b, "\n  %s %s", e.Method, e.Path)
		if e.Query != "" {
			b.WriteString("?" + e.Query)
		}
		if e.Status != 0 {
			fmt.Fprintf(&b, " → %d", e.Status)
		}
		switch {
		case e.CatchAll:
			fmt.Fprintf(&b, ": answered by %q, a catch-all (unmatched: true)", e.Route)
		case len(e.NearMisses) == 0:
			b.WriteString(": no route came close")
		}
		for _, m := range e.NearMisses {
			fmt.Fprintf(&b, "\n      %s: %s", m.Route, m.Reason)
		}
	}
	return errors.New(b.String())
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// testLog writes log lines to t.Log until the server has stopped: a
// handler that outlives shutdown's timeout must not call t.Log after the
// test ended, which panics.
type testLog struct {
	mu     sync.Mutex // guards closed
	tb     testing.TB
	closed bool
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.tb.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (l *testLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
}

var _ io.Writer = (*testLog)(nil)
