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
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/scenariomock/scenariomock/certs"
	"github.com/scenariomock/scenariomock/internal/loghandler"
	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/record"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/upstream"
	"github.com/scenariomock/scenariomock/webhooks"
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
	// ShutdownTimeout) when shutdown begins, and proxied requests wait
	// for their upstream's answer. By default their delays and waits are
	// cancelled at once and their connections closed without an answer,
	// as for a client that left: a mock's delay is not work to finish,
	// and a proxied request cut by shutdown is one whose upstream is slow.
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
	// WriteTimeout bounds how long a client may take to take an answer
	// (default 60s): a client that stops reading is dropped, and the
	// answer it pins freed. It counts from the request's headers, plus
	// the route's delay, a wait for an idempotent request in flight, or
	// a slow body's interval; the request stream and the listings give
	// each write (a page, an event) its own WriteTimeout.
	WriteTimeout time.Duration
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
	// JournalKeepsSecrets keeps credential headers in the journal as sent
	// (--journal-secrets keep); by default they are redacted
	// (journal.RedactHeaders).
	JournalKeepsSecrets bool
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
	// Webhooks configures the dispatcher of the routes' events: the outbox
	// size, the concurrency, the time scale and the faults' seed.
	Webhooks webhooks.Options
	// ProxyUnmatched, when set, forwards every request that no route
	// matches (and no fallback answers) to this upstream instead of
	// answering 404 (--proxy-unmatched): spy mode.
	ProxyUnmatched string
	// ProxyInsecureTLS skips verifying upstreams' certificates, for test
	// upstreams with self-signed ones.
	ProxyInsecureTLS bool
	// Recorder, when set, keeps every proxied exchange (serve --record,
	// scenariomock record); its owner writes it out.
	Recorder *record.Recorder
	// RecordDir is where POST /__admin/recording writes Recorder's files
	// before the owner does; "" refuses the call.
	RecordDir string
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
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 60 * time.Second
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
		// On the real clock the store reads time.Now itself, and so takes
		// a request's arrival for its claim (ClaimOptions.Arrived): one
		// clock read less per claim. Another clock it must ask.
		var now func() time.Time
		if _, real := o.Clock.(realClock); !real {
			now = o.Clock.Now
		}
		o.State = state.NewMemory(state.Options{
			Now: now, MaxKeys: o.MaxIdempotencyKeys, MaxSequenceKeys: o.MaxSequenceKeys, MaxItems: o.MaxCollectionItems,
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
	// adminToken is the SHA-256 of Options.AdminToken, nil without one.
	adminToken []byte
	// crossOrigin refuses admin calls that change state from another
	// origin (see crossSite).
	crossOrigin *http.CrossOriginProtection

	// stopping ends when Serve begins to shut down (its cause is
	// errShutdown): delays and callers waiting for a reload watch it.
	stopping context.Context
	stop     context.CancelCauseFunc
	// abort is ServeSplit's base context, which the requests' derive
	// from: it ends when shutdown gives up on the requests still running
	// (after ShutdownTimeout), or when Serve returns. Nil before Serve.
	abort atomic.Pointer[context.Context]

	reloads  reloads
	reloadMu sync.Mutex // serializes reloads and seeding; guards lastHash and seeded
	lastHash string
	// seeded identifies the seed each seeded collection was last filled
	// from (see seed).
	seeded map[string]string
	status atomic.Pointer[reloadStatus]
	// files is the last good set of files, which a change of the runtime
	// documents lays them on again; runtime are the documents served,
	// oldest first, at docsVersion; parsed keeps them by id. All guarded
	// by reloadMu.
	files       *scenarios.Set
	runtime     []*runtimeDoc
	docsVersion int64
	parsed      map[string]*runtimeDoc
	// docsWatched is closed when watchDocuments returns; nil when it
	// does not run.
	docsWatched chan struct{}
	// On a store that replicas share (state.Replicas), this one is
	// replica; servedDocs is the version of the documents it serves (set
	// by a reload that laid them), which announceDocuments tells the
	// store, at once when docsServed is signalled. docsAnnounced is
	// closed when announceDocuments returns; nil when it does not run.
	replica       string
	servedDocs    atomic.Int64
	docsServed    chan struct{}
	docsAnnounced chan struct{}
	// unmatched counts requests no route matched (answered by the fallback
	// or a 404), so that a CI job can assert that nothing unmocked was
	// called. POST /__admin/reset zeroes it.
	unmatched atomic.Int64
	// epoch counts full resets (POST /__admin/reset); a request notes it
	// when it arrives, and one that finds it moved is a straggler of the
	// state before (fence.go). fence is held for reading while a request
	// writes its effects, for writing while a reset forgets: the two
	// never interleave.
	epoch atomic.Uint64
	fence sync.RWMutex
	// fencer is the store's epoch, when it keeps one: a reset through
	// any replica sharing the store then fences this one's requests too.
	fencer state.Fencer
	// hooks delivers the routes' events (webhooks.go).
	hooks hooks
	// hookLoops holds the names of the routes whose events a webhook
	// delivery asked for (a loop: sendEvents), warned of once each.
	hookLoops sync.Map
	// proxy forwards proxied routes to their upstreams (proxy.go); Serve
	// closes its idle connections when it ends. unmatchedProxy answers
	// misses under Options.ProxyUnmatched (nil: none).
	proxy          *upstream.Proxy
	unmatchedProxy *prepared
	// listening is the scenario listener's address once Serve starts,
	// for checkLoops (proxy.go).
	listening atomic.Pointer[[]net.Addr]
	// faults are the faults switched on at run time (admin_faults.go).
	faults runtimeFaults
	// memory returns the memory of large bodies and answers to the
	// system once they have ended (memory.go); Serve stops it.
	memory *memoryReturn
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
	// counted in requests.hits, in this process: such a route keeps
	// answering when a shared store is unreachable, and costs it no round
	// trip. Its hit counts are then this replica's.
	shared bool
	// requests counts the requests the route took (routecount.go).
	requests *routeRequests
	// logName is the route's name as the request log line writes it,
	// formatted once (loghandler.Handler.Value); nil when the server's
	// log handler is not one.
	logName []byte
	// op validates the requests of a route compiled from an OpenAPI
	// document and generates its answers (nil for a YAML route); see
	// openapi.go.
	op *openapi.Operation
	// lock names the objects the route's requests lock (lock.go); nil
	// when they lock none.
	lock *lockRuntime
	// scopeOf is the operation of the document whose stored object the
	// route's requests act for (scenarios.ScopeOf, scopeof.go); nil when
	// they act for themselves. It is also the document the template
	// function stored reads on a route that names no operation.
	scopeOf *openapi.Operation
}

// hitCount returns rt's hits, and its sequence's keys.
func (s *Server) hitCount(ctx context.Context, rt *routeRuntime) (state.SequenceCount, error) {
	if rt.shared {
		return s.state.Sequences().Count(ctx, rt.route.Identity)
	}
	return state.SequenceCount{Hits: rt.requests.hits.Load()}, nil
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
		replica: newDocumentID()[len("rt_"):], docsServed: make(chan struct{}, 1)}
	s.fencer, _ = opts.State.(state.Fencer)
	s.memory = newMemoryReturn()
	if opts.AdminToken != "" {
		sum := sha256.Sum256([]byte(opts.AdminToken))
		s.adminToken = sum[:]
	}
	up, err := unmatchedProxy(opts.ProxyUnmatched)
	if err != nil {
		return nil, err
	}
	s.unmatchedProxy = up
	s.proxy = upstream.New(upstream.Options{TLSInsecure: opts.ProxyInsecureTLS})
	s.stopping, s.stop = context.WithCancelCause(context.Background())
	s.admin = s.adminRouter()
	s.newHooks()
	files, err := opts.Load()
	if err != nil {
		return nil, err
	}
	// Runtime documents another replica posted to a shared store serve
	// from the start.
	docs, docsVersion := s.listDocuments()
	rdocs, err := s.parseDocuments(docs)
	set, err := overlayDocs(files, rdocs, err)
	if err != nil {
		return nil, fmt.Errorf("runtime scenario documents in the store: %w", err)
	}
	s.files, s.runtime, s.docsVersion = files, rdocs, docsVersion
	s.servedDocs.Store(docsVersion)
	s.configureWebhooks(set)
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
	s.lastHash = files.Hash
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
	lh, _ := s.log.Handler().(*loghandler.Handler)
	for _, r := range t.Routes() {
		rt := &routeRuntime{route: r}
		if lh != nil {
			rt.logName = lh.Value(r.Name)
		}
		if r.Idempotency != nil {
			rt.idem = newIdemRuntime(r.Idempotency)
		}
		rt.shared = r.Sequence != nil || r.Idempotency != nil
		for _, resp := range r.Responses {
			rt.responses = append(rt.responses, prepare(resp))
			rt.shared = rt.shared || readsCall(resp)
		}
		for _, rf := range append(slices.Clip(r.Refuse), r.Cases...) {
			rt.shared = rt.shared || readsCall(rf.Response)
		}
		rt.op = generatedOperation(r.Route, rt.responses)
		rt.lock = newLockRuntime(r.Route, rt.op)
		if r.ScopeOf != nil {
			rt.scopeOf, _ = r.ScopeOf.Operation.(*openapi.Operation)
		}
		snap.routes = append(snap.routes, rt)
	}
	if fb := t.Fallback(); fb != nil {
		snap.fallback = prepare(fb)
	}
	snap.cors = buildCORS(t.Set(), s.opts.CORS, snap.routes)
	carryCounts(snap, s.snap.Load())
	return snap
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
	if err := s.listen(ln); err != nil {
		// A route proxies to this very listener: nothing started yet.
		ln.Close()
		if adminLn != nil {
			adminLn.Close()
		}
		return err
	}
	base, cancelDelays := context.WithCancelCause(context.Background())
	defer cancelDelays(nil)
	s.abort.Store(&base)
	// Last, after the requests: the last of them have ended.
	defer s.memory.stop()
	s.startWebhooks() // until shutdown begins (s.stop)
	defer s.waitWebhooks()
	if fs, ok := s.state.(state.Forgetter); ok {
		forgetting := make(chan struct{})
		go s.seedForgotten(fs.Forgotten(), forgetting) // until shutdown begins (s.stop)
		defer func() { <-forgetting }()
	}
	if _, shared := s.state.(state.Pinger); shared && s.documents() != nil && s.docsWatched == nil {
		s.docsWatched = make(chan struct{})
		go s.watchDocuments() // until shutdown begins (s.stop)
		defer func() { <-s.docsWatched }()
		if rs, ok := s.documents().(state.Replicas); ok {
			s.announceFirst(rs) // before ready: a change made from now on waits for this replica
			s.docsAnnounced = make(chan struct{})
			go s.announceDocuments(rs) // until shutdown begins (s.stop)
			defer func() { <-s.docsAnnounced }()
		}
	}
	defer s.proxy.Close() // after the requests in flight: their forwards end with them
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
		// net/http sets it per request (HTTP/1: on the connection once the
		// headers are read; HTTP/2: on the stream); waits push it back
		// (writeWindow).
		WriteTimeout:   s.opts.WriteTimeout,
		MaxHeaderBytes: s.opts.MaxHeaderBytes,
		BaseContext:    func(net.Listener) context.Context { return base },
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	// Each connection carries its exchange, which its HTTP/1 requests reuse.
	hs.ConnContext = connExchange
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

// errShutdown is the cause of the delays cancelled at the shutdown timeout.
var errShutdown = errors.New("shutdown")

// ServeHTTP answers one request: the admin API under /__admin, otherwise
// the scenarios.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer s.survive(r)
	admin, canonical := adminTarget(r)
	if !admin {
		s.serveScenario(w, r)
		return
	}
	s.serveAdmin(w, r, canonical)
}

// survive logs a panic of a request's handling at error level, with its
// stack, and ends the request as net/http ends one that aborts: the
// connection is closed. A panic is a bug; net/http alone would report it
// only through ErrorLog, which logs at debug level, so it went unseen.
func (s *Server) survive(r *http.Request) {
	v := recover()
	if v == nil || v == http.ErrAbortHandler {
		if v != nil {
			panic(v)
		}
		return
	}
	s.log.Error("a request's handling panicked; its connection is closed", "method", r.Method, "path", r.URL.Path,
		"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	panic(http.ErrAbortHandler)
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
	if r.EnvelopeText != nil {
		ts = append(ts, r.EnvelopeText)
	}
	for _, jt := range []*scenarios.JSONTemplate{r.JSONTemplate, r.Envelope, r.OverrideTemplate} {
		if jt != nil {
			ts = append(ts, jt.Templates()...)
		}
	}
	for _, h := range r.Headers {
		if h.Template != nil {
			ts = append(ts, h.Template)
		}
	}
	for _, ref := range append([]*scenarios.ItemRef{r.Save, r.Ref}, r.Also...) {
		if ref != nil && ref.ID != nil {
			ts = append(ts, ref.ID)
		}
		if ref != nil && ref.Body != nil {
			ts = append(ts, ref.Body.Templates()...)
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

// certFingerprint returns the SHA-256 fingerprint of the first
// certificate cfg serves, for the ready log; "" when it has none set up
// front (GetCertificate).
func certFingerprint(cfg *tls.Config) string {
	if len(cfg.Certificates) == 0 || len(cfg.Certificates[0].Certificate) == 0 {
		return ""
	}
	return certs.Fingerprint(cfg.Certificates[0].Certificate[0])
}

// writeWindow gives the client WriteTimeout from now, plus extra (a wait
// about to begin), to take what is written to w next: on HTTP/1 the
// connection's write deadline, on HTTP/2 the stream's (whose timer resets
// the stream when it passes, written to or not, so that a wait must push
// it back before it begins, not after). A client that stops reading then
// has its connection (or stream) closed when it passes, and the handler,
// with the answer it holds, returns.
func (s *Server) writeWindow(w http.ResponseWriter, extra time.Duration) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout + extra))
}

// holdWrites lifts w's write deadline for a wait of unknown length (a
// hang, an idle stream), in which nothing is written; writeWindow sets it
// again before the next write.
func holdWrites(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
}
