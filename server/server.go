package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/gorilla/mux"
	"github.com/scenariomock/scenariomock/certs"
	"github.com/scenariomock/scenariomock/dashboard"
	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
)

// Options configure a Server. Zero values take the defaults shown.
type Options struct {
	// Load reads the scenarios; it is called by New and by every Reload.
	Load func() (*scenarios.Set, error)
	// Hash, if set, returns the content hash of what Load would read (the
	// value Load puts in Set.Hash) without parsing it, so that a reload of
	// unchanged files skips Load.
	Hash func() (string, error)
	// Source says where the scenarios come from, for the logs.
	Source string
	// Build describes the scenariomock binary (its module version, or
	// "(devel)" and its VCS revision), for the ready log line and GET
	// /__admin/health, so that a bug report or a CI log says which build
	// answered. Default "(devel)".
	Build string

	Logger *slog.Logger
	// MaxBody bounds request bodies (default 10 MiB); larger ones get 413.
	MaxBody int64
	// ShutdownTimeout is how long in-flight requests may take to finish
	// writing once shutdown begins (default 5s); then what is left is
	// cut off.
	ShutdownTimeout time.Duration
	// WaitDelaysOnShutdown lets requests in a delay finish it (within
	// ShutdownTimeout) when shutdown begins. By default their delays are
	// cancelled at once and their connections closed without an answer,
	// as for a client that left: a mock's delay is not work to finish.
	WaitDelaysOnShutdown bool
	// ReadHeaderTimeout bounds how long a client may take to send its
	// headers (default 10s), which ends slowloris connections.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds how long a client may take to send a whole
	// request, body included (default 30s); a body still incomplete then
	// gets 408. It does not limit delays: net/http clears the deadline once
	// the body has been read.
	ReadTimeout time.Duration
	// IdleTimeout closes keep-alive connections idle this long (default 2m).
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds request headers (default 64 KiB, against
	// net/http's 1 MiB, so a connection cannot pin a megabyte); larger
	// ones get 431 from net/http.
	MaxHeaderBytes int
	// AdminHosts are the host names, besides localhost names and IP
	// addresses, that admin calls may carry in Host: the names a
	// container is reached by. "*" allows any name.
	AdminHosts []string
	// AdminToken, if set, is the bearer token every admin call but
	// /__admin/health must carry (Authorization: Bearer <token>); see
	// CheckAdminToken for what a token may be.
	AdminToken string
	// MaxTemplateOutput bounds what one template renders, a header or
	// the body (default 4 MiB); a render that would pass it gets a 500
	// problem naming the limit.
	MaxTemplateOutput int
	// MaxSequenceKeys bounds the distinct keys a per-key sequence
	// remembers per route (default 100,000); the oldest is forgotten first.
	MaxSequenceKeys int
	// MaxIdempotencyKeys bounds the idempotency keys kept (default
	// 100,000): expired keys go first, then the least recently used.
	MaxIdempotencyKeys int
	// MaxCollectionItems bounds the items of all collections together
	// (default 100,000); a save past it gets 507.
	MaxCollectionItems int
	// State holds what outlives a request: sequence positions, idempotency
	// keys, counters, collections. Default: an in-memory store built from
	// the bounds above. A store passed in is the caller's to close.
	State state.Store
	// CORS answers browsers from any origin: preflights, and the CORS
	// headers on every answer of a route whose file has no cors: block
	// (--cors). The admin API never gets them.
	CORS bool
	// TLS, when set, serves HTTPS (HTTP/2 and HTTP/1.1) with its
	// certificates instead of plain HTTP, on both listeners of ServeSplit.
	TLS *tls.Config
	// JournalSize is how many requests the journal keeps (default
	// 10,000, state.DefaultJournalSize); a negative size turns the journal
	// off: nothing is recorded and /__admin/requests answers 404. With a
	// State passed in, the store's own cap applies; only off is read here.
	JournalSize int
	// JournalBodyLimit is how much of each request body the journal keeps
	// (default 64 KiB); Entry.BodySize still says the whole size.
	JournalBodyLimit int
	// Explain is how much a 404 tells the client of the closest routes
	// (default ExplainRedacted); the log line has the whole report.
	Explain ExplainMode
	// Clock is the source of time, injected by tests; default the real
	// clock.
	Clock Clock
	// Rand is the source of every random choice: a fault's chance, delay
	// ranges, random-data's bytes, and the template functions randomInt,
	// randomHex and uuid.
	// It must be safe for concurrent use. Default math/rand/v2's global
	// source; SeededRand makes the choices repeatable (serve --seed).
	Rand func() float64
	// streamKeepAlive replaces the 15s between keep-alive comments of
	// the request stream, for tests.
	streamKeepAlive time.Duration
	// maxTemplateSteps replaces scenarios.MaxRangeSteps, for tests that
	// would otherwise spend seconds reaching it under the race detector.
	maxTemplateSteps int
}

func (o *Options) setDefaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Build == "" {
		o.Build = "(devel)"
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 10 << 20
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 5 * time.Second
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = 10 * time.Second
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 30 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 2 * time.Minute
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = 64 << 10
	}
	if o.MaxTemplateOutput <= 0 {
		o.MaxTemplateOutput = 4 << 20
	}
	if o.maxTemplateSteps <= 0 {
		o.maxTemplateSteps = scenarios.MaxRangeSteps
	}
	if o.MaxSequenceKeys <= 0 {
		o.MaxSequenceKeys = 100_000
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	if o.MaxCollectionItems <= 0 {
		o.MaxCollectionItems = state.DefaultMaxItems
	}
	if o.JournalBodyLimit <= 0 {
		o.JournalBodyLimit = 64 << 10
	}
	if o.streamKeepAlive <= 0 {
		o.streamKeepAlive = 15 * time.Second
	}
	if o.State == nil {
		o.State = state.NewMemory(state.Options{
			Now: o.Clock.Now, MaxKeys: o.MaxIdempotencyKeys, MaxSequenceKeys: o.MaxSequenceKeys, MaxItems: o.MaxCollectionItems,
			JournalSize: max(o.JournalSize, 0),
		})
	}
}

// Server answers requests from the current scenario snapshot. It is safe
// for concurrent use.
type Server struct {
	opts  Options
	log   *slog.Logger
	snap  atomic.Pointer[snapshot]
	admin http.Handler
	state state.Store
	// local counts the hits of routes whose answers do not depend on
	// them (see routeRuntime.shared), in this process: such a route
	// keeps answering when a shared store is unreachable, and costs it
	// no round trip. Its hit counts are then this replica's.
	local state.Sequences
	// adminToken is the SHA-256 of Options.AdminToken, nil without one.
	adminToken []byte
	// crossOrigin refuses admin calls that change state from another
	// origin (see crossSite).
	crossOrigin *http.CrossOriginProtection

	// stopping ends when Serve begins to shut down (its cause is
	// errShutdown): delays and callers waiting for a reload watch it.
	stopping context.Context
	stop     context.CancelCauseFunc

	reloads  reloads
	reloadMu sync.Mutex // serializes reloads and seeding; guards lastHash and seeded
	lastHash string
	// seeded identifies the seed each seeded collection was last filled
	// from (see seed).
	seeded map[string]string
	status atomic.Pointer[reloadStatus]
	// unmatched counts requests no route matched (answered by the fallback
	// or a 404), so that a CI job can assert that nothing unmocked was
	// called. POST /__admin/reset zeroes it.
	unmatched atomic.Int64
}

// snapshot is one immutable generation of the served configuration.
type snapshot struct {
	table    *matcher.Table
	routes   []*routeRuntime // by matcher.Route.Index
	fallback *prepared
	cors     *corsRuntime // nil when CORS is off
	version  int64
	loadedAt time.Time
}

// routeRuntime joins a compiled route to its prepared responses. Its
// state lives in the state store, keyed by the route's identity.
type routeRuntime struct {
	route     *matcher.Route
	responses []*prepared
	idem      *idemRuntime // nil without an idempotency block
	// cors is the route's CORS policy (nil: none), and corsExpose its
	// Access-Control-Expose-Headers.
	cors       *corsPolicy
	corsExpose []string
	// shared says whether the route's hits are counted in the state
	// store: when its answer depends on its position (a sequence, a
	// template reading .Call) or it is idempotent. Otherwise they are
	// counted in Server.local.
	shared bool
	// op validates requests of a route compiled from an OpenAPI document
	// (nil for a YAML route); see openapi.go.
	op *openapi.Operation
}

// hits returns the sequence positions where rt's hits are counted.
func (s *Server) hits(rt *routeRuntime) state.Sequences {
	if rt.shared {
		return s.state.Sequences()
	}
	return s.local
}

// reloadStatus records the last reload attempt, for the admin API.
type reloadStatus struct {
	at       time.Time
	err      error
	problems []string
}

// New loads the scenarios and returns a server ready to serve them. Only
// this first load is fatal; later reloads keep the old snapshot on error.
func New(opts Options) (*Server, error) {
	if opts.Load == nil {
		return nil, errors.New("server: Options.Load is required")
	}
	opts.setDefaults()
	if err := CheckAdminToken(opts.AdminToken); err != nil {
		return nil, fmt.Errorf("server: Options.AdminToken: %w", err)
	}
	s := &Server{opts: opts, log: opts.Logger, state: opts.State, crossOrigin: http.NewCrossOriginProtection(),
		local: state.NewMemory(state.Options{MaxSequenceKeys: 1}).Sequences()}
	if opts.AdminToken != "" {
		sum := sha256.Sum256([]byte(opts.AdminToken))
		s.adminToken = sum[:]
	}
	s.stopping, s.stop = context.WithCancelCause(context.Background())
	s.admin = s.adminRouter()
	set, err := opts.Load()
	if err != nil {
		return nil, err
	}
	t, err := matcher.Compile(set)
	if err != nil {
		return nil, err
	}
	// A store other replicas share is not this process's to wipe: a
	// replica that starts saves its seeds over what they became, as a
	// reload does, and leaves the items created since alone.
	_, shared := opts.State.(state.Pinger)
	if err := s.seed(context.Background(), set, !shared); err != nil {
		return nil, err
	}
	s.lastHash = set.Hash
	now := opts.Clock.Now()
	s.snap.Store(s.build(t, 1, now))
	s.status.Store(&reloadStatus{at: now})
	return s, nil
}

// build makes a snapshot of t. Route state is kept in the store by route
// identity (name and definition), so an unchanged route keeps its sequence
// positions; Reload tells the store which identities are current.
func (s *Server) build(t *matcher.Table, version int64, now time.Time) *snapshot {
	snap := &snapshot{table: t, version: version, loadedAt: now}
	for _, r := range t.Routes() {
		rt := &routeRuntime{route: r}
		if r.Idempotency != nil {
			rt.idem = newIdemRuntime(r.Idempotency)
		}
		rt.shared = r.Sequence != nil || r.Idempotency != nil
		for _, resp := range r.Responses {
			rt.responses = append(rt.responses, prepare(resp))
			rt.shared = rt.shared || readsCall(resp)
		}
		rt.op = generatedOperation(r.Route, rt.responses)
		snap.routes = append(snap.routes, rt)
	}
	if fb := t.Fallback(); fb != nil {
		snap.fallback = prepare(fb)
	}
	snap.cors = buildCORS(t.Set(), s.opts.CORS, snap.routes)
	return snap
}

// Reload loads the scenarios again and makes them current. On error the
// old snapshot keeps serving and the error is kept for the admin API. A
// reload that reads exactly what the current snapshot was built from does
// nothing. Reload returns when a reload that started after it was called
// has finished, or when shutdown begins (errReloadPending). It is safe for
// concurrent use: calls made while a reload runs share the next one.
func (s *Server) Reload() error { return s.ReloadContext(context.Background()) }

// ReloadContext is Reload, giving up (errReloadPending) when ctx ends; the
// reload itself goes on and its outcome shows in the admin API.
func (s *Server) ReloadContext(ctx context.Context) error {
	c := s.requestReload()
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", errReloadPending, context.Cause(ctx))
	case <-s.stopping.Done():
		return fmt.Errorf("%w: %w", errReloadPending, context.Cause(s.stopping))
	}
}

// errReloadPending: a caller stopped waiting for a reload that still runs.
var errReloadPending = errors.New("reload still running")

// reloads merges concurrent reload requests. At most one reload runs; a
// request made while it runs joins the next one, which starts when it
// ends, so that every caller sees the files as they were when it asked
// (the running reload may have read them before) and twenty callers cost
// two loads, not twenty. A goroutine of the server runs the reloads, not
// a caller, so that a caller can stop waiting: a loader stuck on I/O then
// holds only that goroutine, which ends once no reload is pending.
type reloads struct {
	mu      sync.Mutex // guards running and next
	running bool
	next    *reloadCall // the reload to start when the running one ends
}

// reloadCall is one reload and the callers waiting for it.
type reloadCall struct {
	done    chan struct{}
	err     error // set before done is closed
	callers int   // guarded by reloads.mu
}

// requestReload returns the reload that will run next, starting the
// goroutine that runs reloads if none runs.
func (s *Server) requestReload() *reloadCall {
	rl := &s.reloads
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.next == nil {
		rl.next = &reloadCall{done: make(chan struct{})}
	}
	c := rl.next
	c.callers++
	if !rl.running {
		rl.running = true
		go s.runReloads()
	}
	return c
}

// runReloads runs pending reloads one after the other and ends when none
// is pending.
func (s *Server) runReloads() {
	rl := &s.reloads
	for {
		rl.mu.Lock()
		c := rl.next
		rl.next = nil
		if c == nil {
			rl.running = false
		}
		callers := 0
		if c != nil {
			callers = c.callers
		}
		rl.mu.Unlock()
		if c == nil {
			return
		}
		if callers > 1 {
			s.log.Debug("reload requests merged", "requests", callers)
		}
		c.err = s.reload()
		close(c.done)
	}
}

// reload is one reload; runReloads makes sure only one runs at a time.
func (s *Server) reload() error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	now := s.opts.Clock.Now()
	if s.opts.Hash != nil && s.status.Load().err == nil {
		// Files unchanged since the current snapshot: nothing to parse.
		if h, err := s.opts.Hash(); err == nil && h == s.lastHash {
			return nil
		}
	}
	set, err := s.opts.Load()
	var t *matcher.Table
	if err == nil {
		if set.Hash == s.lastHash && s.status.Load().err == nil {
			return nil
		}
		t, err = matcher.Compile(set)
	}
	if err == nil {
		err = s.seed(context.Background(), set, false)
	}
	old := s.snap.Load()
	if err != nil {
		st := &reloadStatus{at: now, err: err}
		for _, p := range scenarios.Problems(err) {
			st.problems = append(st.problems, p.Error())
		}
		s.status.Store(st)
		for _, p := range st.problems {
			s.log.Error("scenario error", "problem", p)
		}
		s.log.Error("reload failed; the last good scenarios keep serving", "version", old.version, "problems", len(st.problems))
		return err
	}
	s.lastHash = set.Hash
	snap := s.build(t, old.version+1, now)
	s.snap.Store(snap)
	ids := make([]string, len(snap.routes))
	for i, rt := range snap.routes {
		ids[i] = rt.route.Identity
	}
	// A route whose definition changed has a new identity and starts its
	// sequence over; idempotency keys, counters and collections are not
	// tied to routes and stay.
	if err := s.state.Sequences().Retain(context.Background(), ids); err != nil {
		s.log.Warn("sequence state of removed routes not forgotten", "error", err.Error())
	}
	_ = s.local.Retain(context.Background(), ids) // in memory: cannot fail
	s.status.Store(&reloadStatus{at: now})
	s.log.Info("reloaded", "version", snap.version, "files", len(set.Files), "routes", len(snap.routes))
	return nil
}

// Deps returns the body files the current snapshot read, for the watcher.
func (s *Server) Deps() []string { return s.snap.Load().table.Set().Deps }

// Version returns the version of the current snapshot; it counts
// successful reloads from 1.
func (s *Server) Version() int64 { return s.snap.Load().version }

// Routes returns the number of routes served.
func (s *Server) Routes() int { return len(s.snap.Load().routes) }

// Serve answers requests on ln until ctx ends, then shuts down: it stops
// accepting, lets requests in flight finish within ShutdownTimeout, then
// cancels the delays still waiting and closes what is left.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return s.ServeSplit(ctx, ln, nil)
}

// ServeSplit is Serve with the admin API on a listener of its own
// (--admin-addr): ln then answers the scenarios alone, a path under
// /__admin being one more path the routes may not match, and adminLn
// answers the admin API alone (see AdminHandler). A nil adminLn is Serve.
// Both shut down together, when ctx ends or when either fails.
func (s *Server) ServeSplit(ctx context.Context, ln, adminLn net.Listener) error {
	base, cancelDelays := context.WithCancelCause(context.Background())
	defer cancelDelays(nil)
	servers := []*http.Server{s.httpServer(s, base)}
	listeners := []net.Listener{ln}
	ready := []any{"addr", ln.Addr().String()}
	if adminLn != nil {
		servers[0].Handler = http.HandlerFunc(s.serveScenario)
		servers = append(servers, s.httpServer(s.AdminHandler(), base))
		listeners = append(listeners, adminLn)
		ready = append(ready, "admin_addr", adminLn.Addr().String())
	}
	if s.opts.TLS != nil {
		// Both listeners speak HTTPS with the same certificates: an admin
		// listener in plain HTTP next to an HTTPS one would send the admin
		// token in the clear. ServeTLS adds h2 to the protocols offered
		// (HTTP/2 for clients that ask for it, HTTP/1.1 for the others),
		// to its server's TLSConfig: each gets a clone.
		for _, hs := range servers {
			hs.TLSConfig = s.opts.TLS.Clone()
		}
		ready = append(ready, "scheme", "https")
		if fp := certFingerprint(s.opts.TLS); fp != "" {
			ready = append(ready, "sha256", fp)
		}
	}
	served := make(chan error, len(servers))
	for i, hs := range servers {
		if hs.TLSConfig != nil {
			go func() { served <- hs.ServeTLS(listeners[i], "", "") }()
		} else {
			go func() { served <- hs.Serve(listeners[i]) }()
		}
	}
	s.log.Info("ready", append(ready, "routes", s.Routes(), "scenarios", s.opts.Source, "build", s.opts.Build)...)
	running := len(servers)
	var err error
	select {
	case e := <-served:
		// One listener failed; the other must not go on alone.
		running--
		err = fmt.Errorf("serve: %w", e)
	case <-ctx.Done():
		s.log.Info("shutting down", "timeout_ms", millis(s.opts.ShutdownTimeout))
	}
	// Delays end now (unless WaitDelaysOnShutdown), and so do waits for
	// a reload: a loader stuck on I/O must not hold the process.
	s.stop(errShutdown)
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	// Both listeners drain at once, so that a slow admin call does not
	// take the scenarios' share of the timeout or the other way round.
	var late atomic.Bool
	var wg sync.WaitGroup
	for _, hs := range servers {
		wg.Go(func() {
			if hs.Shutdown(sctx) != nil {
				late.Store(true)
			}
		})
	}
	wg.Wait()
	if late.Load() {
		s.log.Warn("requests still running at the shutdown timeout; cancelling them")
		cancelDelays(errShutdown)
		for _, hs := range servers {
			_ = hs.Close()
		}
	}
	for ; running > 0; running-- {
		<-served
	}
	return err
}

// httpServer returns the net/http server of one listener; base is the
// context its requests derive from.
func (s *Server) httpServer(h http.Handler, base context.Context) *http.Server {
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		ReadTimeout:       s.opts.ReadTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    s.opts.MaxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	if s.journalOn() {
		hs.ConnContext = connJournal
	}
	return hs
}

// delayContext is what a delay waits on: the request's context, ended
// also when shutdown begins unless WaitDelaysOnShutdown.
func (s *Server) delayContext(r *http.Request) (context.Context, func()) {
	return s.stopContext(r, s.opts.WaitDelaysOnShutdown)
}

// stopContext is the request's context, ended also when shutdown begins
// unless outlast is set.
func (s *Server) stopContext(r *http.Request, outlast bool) (context.Context, func()) {
	if outlast {
		return r.Context(), func() {}
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	stop := context.AfterFunc(s.stopping, func() { cancel(context.Cause(s.stopping)) })
	return ctx, func() { stop(); cancel(nil) }
}

const adminPrefix = "/__admin"

// adminMethods are the methods each admin path takes, for routing and
// for the Allow header of a 405.
var adminMethods = map[string]string{
	adminPrefix + "/health":             "GET, HEAD",
	adminPrefix + "/scenarios":          "GET",
	adminPrefix + "/reset":              "POST",
	adminPrefix + "/reload":             "POST",
	adminPrefix + "/idempotency":        "GET, DELETE",
	adminPrefix + "/idempotency/expire": "POST",
	adminPrefix + "/counters":           "GET",
	adminPrefix + "/collections":        "GET, DELETE",
	adminPrefix + "/collections/{name}": "GET, DELETE",
	adminPrefix + "/ui":                 "GET, HEAD", // and each of its assets, /ui/*
	adminPrefix + "/requests":           "GET, DELETE",
	adminPrefix + "/requests/count":     "GET",
	adminPrefix + "/requests/stream":    "GET",
}

// errShutdown is the cause of the delays cancelled at the shutdown timeout.
var errShutdown = errors.New("shutdown")

// ServeHTTP answers one request: the admin API under /__admin, otherwise
// the scenarios.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	admin, canonical := adminTarget(r)
	if !admin {
		s.serveScenario(w, r)
		return
	}
	s.serveAdmin(w, r, canonical)
}

// adminTarget reports whether r is for the admin API and whether it came
// in the canonical form. A request is for the admin API when its path,
// percent-decoded, or decoded and cleaned of dot segments and repeated
// slashes, is /__admin or under it. It is canonical when the request
// target, as sent, is that cleaned path exactly (a query aside): origin
// form, nothing encoded that need not be. Every other spelling
// (/%5f_admin, //__admin, /./__admin, /__admin/../x, an absolute URL) is
// refused rather than served: a proxy rule that keeps /__admin from the
// outside matches the spelling it sees, so serving these would walk round
// it, and handing them to the scenarios would make one path mean two things.
func adminTarget(r *http.Request) (admin, canonical bool) {
	p := r.URL.Path
	if !strings.Contains(p, adminPrefix) { // the hot path: one scan, no allocation
		return false, false
	}
	clean := path.Clean(p)
	if !underAdmin(p) && !underAdmin(clean) {
		return false, false
	}
	target := r.RequestURI
	if target == "" { // a handler called directly, not by net/http's server
		target = r.URL.RequestURI()
	}
	if i := strings.IndexByte(target, '?'); i >= 0 {
		target = target[:i]
	}
	return true, target == clean
}

func underAdmin(p string) bool {
	return strings.HasPrefix(p, adminPrefix) && (len(p) == len(adminPrefix) || p[len(adminPrefix)] == '/')
}

// adminHostAllowed checks the Host of an admin call: a web page whose
// name an attacker points at 127.0.0.1 (DNS rebinding) sends its own name,
// which is not on the list. IP addresses, localhost names and no Host at
// all cannot come from such a page; names a container is reached by are
// given to --admin-hosts ("*" allows any).
func (s *Server) adminHostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "" || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	for _, h := range s.opts.AdminHosts {
		if h == "*" || strings.EqualFold(strings.TrimSuffix(h, "."), host) {
			return true
		}
	}
	return false
}

func (s *Server) serveScenario(w http.ResponseWriter, r *http.Request) {
	start := s.opts.Clock.Now()
	snap := s.snap.Load()
	var jr *journalRecord
	if s.journalOn() {
		r, jr = s.withJournal(r, snap.version)
		defer jr.end()
	}
	var body []byte
	var err error
	if r.Body != nil && r.Body != http.NoBody {
		bp := bodyBuffers.Get().(*[]byte)
		body, err = s.readBody(w, r, *bp)
		// Nothing holds on to the body once the answer is written:
		// matching, templates and sequence keys copy what they keep.
		defer func() {
			if cap(body) >= cap(*bp) && cap(body) <= maxPooledBody {
				*bp = body[:0]
			}
			bodyBuffers.Put(bp)
		}()
	}
	if err != nil {
		if snap.cors != nil {
			snap.cors.corsHeaders(w.Header(), r, nil)
		}
		if jr != nil {
			jr.refused = true
		}
		s.bodyProblem(w, r, err, start)
		return
	}
	if jr != nil {
		jr.body = body
	}
	r = s.withDebugBody(r, body)
	in := matcher.NewRequest(r, body)
	m, ok := snap.table.Match(in)
	if !ok && r.Method == http.MethodHead {
		// HEAD is GET without the body (RFC 9110 §9.3.2), as net/http's
		// file server and most servers answer it: a GET route answers it
		// unless a route matched HEAD itself. net/http drops the body we
		// write and keeps the Content-Length we set, so the headers are
		// GET's, Content-Length included. The call counts as the route's.
		get := r.WithContext(r.Context())
		get.Method = http.MethodGet
		asGet := matcher.NewRequest(get, body)
		if m, ok = snap.table.Match(asGet); ok {
			asGet.HTTP = r // templates see the method that was sent
			in = asGet
		}
	}
	if snap.cors != nil {
		// Preflights are answered here, before any route runs, unless a
		// route was written for OPTIONS.
		if isPreflight(r) && (!ok || !explicitOptions(m.Route.Route)) {
			s.preflight(w, r, snap.cors, start)
			return
		}
		var rt *routeRuntime
		if ok {
			rt = snap.routes[m.Route.Index]
		}
		snap.cors.corsHeaders(w.Header(), r, rt)
	}
	if !ok {
		s.miss(w, r, snap, in, start)
		return
	}
	rt := snap.routes[m.Route.Index]
	if rt.op != nil && !s.checkOperation(w, r, rt.op, body, start) {
		return
	}
	if rt.idem != nil {
		s.serveIdempotent(w, r, in, m, rt, start)
		return
	}
	call, resp, err := s.next(r.Context(), rt, in, m)
	if err != nil {
		s.unavailable(w, r, m.Route.Name, err, start)
		return
	}
	s.respond(w, r, in, m, resp, call, start)
}

// next advances the route's sequence for this request and returns the
// call's position and the response it gets. The position moves when the
// request arrives, before any delay, so a client that gives up during the
// delay gets the next response when it retries.
func (s *Server) next(ctx context.Context, rt *routeRuntime, in *matcher.Request, m matcher.Match) (int64, *prepared, error) {
	seqs := s.hits(rt)
	seq := rt.route.Sequence
	if seq == nil || seq.Per == nil {
		n, err := seqs.Hit(ctx, rt.route.Identity)
		if err != nil || seq == nil {
			return n, rt.responses[0], err
		}
		return n, rt.pick(n), nil
	}
	key, ok := in.Attribute(seq.Per, m.Vars)
	if !ok {
		key = "\x00absent" // requests without the attribute share one sequence
	}
	pos, err := seqs.HitKey(ctx, rt.route.Identity, key)
	if err != nil {
		return 0, rt.responses[0], err
	}
	return pos.Key, rt.pick(pos.Key), nil
}

// readsCall reports whether a response's templates may read .Call, the
// call's position, which then must be counted where every replica counts.
// It looks for the name in the parsed templates: a false positive only
// costs a round trip to the store.
func readsCall(r *scenarios.Response) bool {
	var ts []*template.Template
	if r.BodyTemplate != nil {
		ts = append(ts, r.BodyTemplate)
	}
	if r.JSONTemplate != nil {
		ts = append(ts, r.JSONTemplate.Templates()...)
	}
	for _, h := range r.Headers {
		if h.Template != nil {
			ts = append(ts, h.Template)
		}
	}
	for _, ref := range []*scenarios.ItemRef{r.Save, r.Ref} {
		if ref != nil && ref.ID != nil {
			ts = append(ts, ref.ID)
		}
	}
	for _, t := range ts {
		for _, tt := range t.Templates() {
			if tt.Tree != nil && tt.Tree.Root != nil && strings.Contains(tt.Tree.Root.String(), "Call") {
				return true
			}
		}
	}
	return r.Missing != nil && readsCall(r.Missing)
}

// pick returns the response at position n of the route's sequence.
func (rt *routeRuntime) pick(n int64) *prepared {
	count := int64(len(rt.responses))
	switch {
	case n < count:
		return rt.responses[n]
	case rt.route.Sequence.After == scenarios.Cycle:
		return rt.responses[n%count]
	}
	return rt.responses[count-1]
}

func (s *Server) respond(w http.ResponseWriter, r *http.Request, in *matcher.Request, m matcher.Match, p *prepared, call int64, start time.Time) {
	route := "(fallback)"
	if m.Route != nil {
		route = m.Route.Name
	}
	f := s.faultFor(p)
	delay := pickDelay(p.src.Delay, s.opts.Rand)
	if delay > 0 {
		ctx, release := s.delayContext(r)
		waited := s.opts.Clock.Wait(ctx, delay)
		cause := context.Cause(ctx)
		release()
		if !waited {
			// The client left, or shutdown cancelled the delay: drop the
			// connection without an answer. Returning would let net/http
			// send an empty 200 that no scenario says.
			outcome := "client gone during delay"
			if errors.Is(cause, errShutdown) {
				outcome = "delay cancelled by shutdown"
			}
			s.logRequest(r, route, 0, delay, start, slog.String("outcome", outcome))
			panic(http.ErrAbortHandler)
		}
	}
	if f != nil {
		s.respondFaulted(w, r, in, m, p, call, f, route, delay, start)
		return
	}
	var err error
	status := p.status
	if p.src.Op != "" || p.src.Save != nil {
		status, err = s.respondStored(r.Context(), w, p, s.templateData(r.Context(), in, m, call)())
	} else {
		err = p.write(w, s.opts.MaxTemplateOutput, s.templateData(r.Context(), in, m, call))
	}
	if err != nil {
		err = fmt.Errorf("route %q: %w", route, err)
		writeProblem(w, newProblem(statusOf(err), err.Error()))
		s.logProblem(r, route, statusOf(err), delay, start, slog.String("error", err.Error()))
		return
	}
	s.logRequest(r, route, status, delay, start)
}

// templateData returns what a response template sees, made when a
// template first needs it, bounded by ctx and the step budget.
func (s *Server) templateData(ctx context.Context, in *matcher.Request, m matcher.Match, call int64) func() *templateData {
	return func() *templateData {
		d := newTemplateData(in, m, call, s.opts.Clock.Now(), s.env(ctx))
		d.ctx, d.maxSteps = ctx, s.opts.maxTemplateSteps
		return d
	}
}

// miss answers a request that no route matched: with the fallback if the
// scenarios define one, else a 404 problem naming the closest routes and
// why each failed, as much as Options.Explain allows. The log gets the
// whole explanation.
func (s *Server) miss(w http.ResponseWriter, r *http.Request, snap *snapshot, in *matcher.Request, start time.Time) {
	s.unmatched.Add(1)
	// The journal keeps the near-miss report of every miss; ranking is
	// one pass over the routes, bounded like matching.
	var near []matcher.NearMiss
	explained := false
	if jr := s.journalOf(r.Context()); jr != nil {
		near, explained = snap.table.Explain(in), true
		jr.unmatched, jr.near = true, near
	}
	if snap.fallback != nil {
		// Misses are ordinary traffic here: rank near misses (one pass
		// over the routes) only when the debug log wants them.
		if s.log.Enabled(r.Context(), slog.LevelDebug) {
			if !explained {
				near = snap.table.Explain(in)
			}
			s.log.Debug("fallback served", "method", r.Method, "path", r.URL.Path, "near", nearMisses(near))
		}
		s.respond(w, r, in, matcher.Match{}, snap.fallback, 0, start)
		return
	}
	if !explained && (s.opts.Explain != ExplainOff || s.log.Enabled(r.Context(), slog.LevelWarn)) {
		near = snap.table.Explain(in)
	}
	p := newProblem(http.StatusNotFound, fmt.Sprintf("No route matches %s %s.", r.Method, r.URL.Path))
	if shown := s.opts.Explain.shown(near); len(shown) > 0 {
		p.Detail += " Closest: " + nearMisses(shown) + "."
		p.Closest = shown
	}
	writeProblem(w, p)
	s.logProblem(r, "", http.StatusNotFound, 0, start, slog.String("near", nearMisses(near)))
}

// nearMisses formats near misses for a detail or a log line.
func nearMisses(near []matcher.NearMiss) string {
	reasons := make([]string, len(near))
	for i, n := range near {
		reasons[i] = fmt.Sprintf("route %q: %s", n.Route, n.Reason)
	}
	return strings.Join(reasons, "; ")
}

// bodyBuffers hold request bodies of up to maxPooledBody bytes between
// requests, so that reading a body allocates nothing.
var bodyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

const maxPooledBody = 64 << 10

// readBody reads the whole request body into dst's storage, bounded by
// MaxBody. A declared length over the bound is refused before reading a
// byte, and memory grows with the bytes that arrive, not with the length a
// client claims. A client that stalls is cut off by the server's
// ReadTimeout.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, dst []byte) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > s.opts.MaxBody {
		return nil, fmt.Errorf("%w: %d bytes declared, the limit is %d (--max-body)", errBodyTooLarge, r.ContentLength, s.opts.MaxBody)
	}
	var err error
	if n := r.ContentLength; n > 0 && n <= maxPooledBody {
		// net/http's body reader stops at the declared length and hands
		// over io.EOF with the last bytes, which is what starts its
		// watch for a client that goes away during a delay.
		dst = slices.Grow(dst[:0], int(n))[:n]
		_, err = io.ReadFull(r.Body, dst)
	} else {
		buf := bytes.NewBuffer(dst[:0])
		if n > 0 {
			buf.Grow(int(min(n, 4<<10)))
		}
		_, err = buf.ReadFrom(http.MaxBytesReader(w, r.Body, s.opts.MaxBody))
		dst = buf.Bytes()
	}
	if err != nil {
		var mbe *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &mbe):
			return nil, fmt.Errorf("%w: the limit is %d bytes (--max-body)", errBodyTooLarge, s.opts.MaxBody)
		case errors.As(err, &ne) && ne.Timeout():
			return nil, fmt.Errorf("%w: the request was not complete within %s (--read-timeout)", errBodyTimeout, s.opts.ReadTimeout)
		}
		return nil, fmt.Errorf("%w: %v", errBodyUnreadable, err)
	}
	return dst, nil
}

// bodyProblem answers a request whose body could not be read. The
// connection is closed after the answer: what is left of the body is
// unknown, and net/http would otherwise wait to drain it first.
func (s *Server) bodyProblem(w http.ResponseWriter, r *http.Request, err error, start time.Time) {
	w.Header().Set("Connection", "close")
	writeProblem(w, newProblem(statusOf(err), err.Error()))
	// Once the handler returns, net/http drains up to 256 KiB of unread
	// body even after Connection: close, so a client that declared a body
	// and sends none would never see the connection end. An expired read
	// deadline ends that drain at once; the answer is already flushed.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	s.logProblem(r, "", statusOf(err), 0, start, slog.String("error", err.Error()))
}

// logRequest writes the one log line each request gets, and journals a
// mock request (see record: every outcome passes here). Status 0 means no
// HTTP answer was sent (a fault, or the client left). It builds the record
// itself, stamped with the time it measures the duration by, and keeps to
// the five attributes a slog.Record holds without allocating; delay is
// added only when there was one.
func (s *Server) logRequest(r *http.Request, route string, status int, delay time.Duration, start time.Time, extra ...slog.Attr) {
	s.logRequestAt(slog.LevelInfo, r, route, status, delay, start, extra...)
}

// logProblem is logRequest for a request that went wrong: no route
// matched, its body was refused, its template failed. These are logged at
// warn, so that --log-level=warn still shows them.
func (s *Server) logProblem(r *http.Request, route string, status int, delay time.Duration, start time.Time, extra ...slog.Attr) {
	s.logRequestAt(slog.LevelWarn, r, route, status, delay, start, extra...)
}

func (s *Server) logRequestAt(level slog.Level, r *http.Request, route string, status int, delay time.Duration, start time.Time, extra ...slog.Attr) {
	h := s.log.Handler()
	ctx := r.Context()
	jr := s.journalOf(ctx)
	logged := h.Enabled(ctx, level)
	if jr == nil && !logged {
		return
	}
	now := s.opts.Clock.Now()
	if jr != nil {
		s.record(jr, r, route, status, delay, start, now, extra)
	}
	if !logged {
		return
	}
	debug := h.Enabled(ctx, slog.LevelDebug)
	if lh, ok := h.(*logHandler); ok && level == slog.LevelInfo && !debug {
		switch {
		case len(extra) == 0:
			_ = lh.handleRequest(now, r.Method, r.URL.Path, route, status, now.Sub(start), delay, "")
			return
		case len(extra) == 1 && extra[0].Key == "idempotency" && extra[0].Value.Kind() == slog.KindString:
			// The idempotency outcome is on every request to an
			// idempotent route: keep those on the fast path too.
			_ = lh.handleRequest(now, r.Method, r.URL.Path, route, status, now.Sub(start), delay, extra[0].Value.String())
			return
		}
	}
	rec := slog.NewRecord(now, level, requestMsg, 0)
	rec.AddAttrs(
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.String("route", route),
		slog.Int("status", status),
		slog.Float64("duration_ms", millis(now.Sub(start))),
	)
	if delay > 0 {
		rec.AddAttrs(slog.Float64("delay_ms", millis(delay)))
	}
	rec.AddAttrs(extra...)
	if debug {
		rec.AddAttrs(requestDetails(r)...)
	}
	_ = h.Handle(ctx, rec)
}

// adminRouter is built once; the admin API is small and off the hot path.
func (s *Server) adminRouter() http.Handler {
	// Full paths on the root router: a mux subrouter answers a wrong
	// method with 404 instead of 405.
	r := mux.NewRouter()
	for path, h := range map[string]http.HandlerFunc{
		"/health": s.handleHealth, "/scenarios": s.handleScenarios, "/reset": s.handleReset, "/reload": s.handleReload,
		"/idempotency/expire": s.handleIdempotencyExpire, "/counters": s.handleCounters,
	} {
		r.HandleFunc(adminPrefix+path, h).Methods(strings.Split(adminMethods[adminPrefix+path], ", ")...)
	}
	r.HandleFunc(adminPrefix+"/idempotency", s.handleIdempotency).Methods(http.MethodGet)
	r.HandleFunc(adminPrefix+"/idempotency", s.handleIdempotencyDelete).Methods(http.MethodDelete)
	s.collectionRoutes(r)
	// The dashboard: each embedded file by its exact path, so that any
	// other /ui/... gets the admin API's 404 problem.
	for _, p := range dashboard.Assets() {
		r.Handle(p, dashboard.Handler()).Methods(http.MethodGet, http.MethodHead)
	}
	r.HandleFunc(adminPrefix+"/requests", s.handleRequests).Methods(http.MethodGet)
	r.HandleFunc(adminPrefix+"/requests", s.handleRequestsClear).Methods(http.MethodDelete)
	r.HandleFunc(adminPrefix+"/requests/count", s.handleRequestsCount).Methods(http.MethodGet)
	r.HandleFunc(adminPrefix+"/requests/stream", s.handleRequestsStream).Methods(http.MethodGet)
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, newProblem(http.StatusNotFound, fmt.Sprintf("The admin API has no %s; see GET %s/scenarios.", r.URL.Path, adminPrefix)))
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allow := adminMethods[r.URL.Path]
		if strings.HasPrefix(r.URL.Path, adminPrefix+"/collections/") {
			allow = adminMethods[adminPrefix+"/collections/{name}"]
		}
		if strings.HasPrefix(r.URL.Path, dashboard.Path+"/") {
			allow = adminMethods[dashboard.Path]
		}
		w.Header().Set("Allow", allow) // RFC 9110 asks a 405 for it
		writeProblem(w, newProblem(http.StatusMethodNotAllowed, fmt.Sprintf("%s takes %s, not %s.", r.URL.Path, allow, r.Method)))
	})
	return r
}

// certFingerprint returns the SHA-256 fingerprint of the first
// certificate cfg serves, for the ready log; "" when it has none set up
// front (GetCertificate).
func certFingerprint(cfg *tls.Config) string {
	if len(cfg.Certificates) == 0 || len(cfg.Certificates[0].Certificate) == 0 {
		return ""
	}
	return certs.Fingerprint(cfg.Certificates[0].Certificate[0])
}
