// Command scenariomock serves HTTP scenarios written in YAML: canned
// responses, sequences, delays and faults, hot-reloaded while it runs.
package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/scenariomock/scenariomock/adminclient"
	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/server"
	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/state/redis"
	"github.com/scenariomock/scenariomock/webhooks"
)

// The examples built into the binary: serve and routes use one of them
// when given no path, the demo unless --example names another. The list
// comes from the directory, so a new example needs no code. The files an
// example names (the Stripe example's spec, gzip-compressed, with its
// license) are built in beside it, and read from here (scenarios.LoadFS).
//
//go:embed examples/*.yaml examples/stripe/*.gz examples/stripe/LICENSE
var examples embed.FS

// builtinFiles are the files built in beside the examples (stripe/…), by
// the names an example gives them: a copy of an example that names one
// reads it from here when it is not beside the copy (scenarios.LoadWith).
var builtinFiles = func() fs.FS {
	sub, _ := fs.Sub(examples, "examples") // the name is valid
	return sub
}()

// loadExample loads a built-in example, data being its file's content:
// the files it names are the ones built in beside it.
func loadExample(file string, data []byte) (*scenarios.Set, error) {
	if builtin, err := examples.ReadFile(file); err == nil && string(builtin) == string(data) {
		return scenarios.LoadFS(examples, file)
	}
	return scenarios.LoadBytes(file, data)
}

// demoExample is the fixed demo, served when serve is given no path.
const demoExample = "payments-idempotency"

// exampleNames lists the built-in examples by name (the file name without
// .yaml), sorted.
func exampleNames() []string {
	files, _ := fs.Glob(examples, "examples/*.yaml") // the pattern is valid
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = strings.TrimSuffix(path.Base(f), ".yaml")
	}
	return names
}

// example returns a built-in example's file name, as positions name it,
// and its contents. An unknown name is a usage error listing the known.
func example(name string) (file string, data []byte, err error) {
	return exampleNamed("--example", name)
}

// exampleNamed is example for a name given as what: the --example flag,
// or the argument of the examples command.
func exampleNamed(what, name string) (file string, data []byte, err error) {
	file = "examples/" + name + ".yaml"
	if !strings.ContainsAny(name, "/\\*?[") {
		if data, err = examples.ReadFile(file); err == nil {
			return file, data, nil
		}
	}
	return "", nil, withCode(exitUsage, fmt.Errorf("%s %q: no such example; the built-in examples are %s", what, name, strings.Join(exampleNames(), ", ")))
}

// scenarioSource says where the scenarios come from: the paths given, or a
// built-in example, which cannot go with them.
func scenarioSource(paths []string, exampleName string, exampleSet bool) (file string, data []byte, err error) {
	if len(paths) > 0 {
		if exampleSet {
			return "", nil, withCode(exitUsage, fmt.Errorf("--example %q and the paths %s: give one or the other; the built-in examples are %s", exampleName, strings.Join(paths, " "), strings.Join(exampleNames(), ", ")))
		}
		return "", nil, nil
	}
	return example(exampleName)
}

func exampleFlagUsage() string {
	return "serve this built-in example when no path is given: " + strings.Join(exampleNames(), ", ")
}

// Exit codes. They are part of the interface (the README has the table):
// a CI step tells a broken scenario file from a port already taken by
// them.
const (
	exitOK        = 0
	exitFailure   = 1 // the scenarios are invalid or unreadable, or another failure at run time
	exitUsage     = 2 // a bad command, flag, argument or SCENARIOMOCK_* variable
	exitListen    = 3 // serve cannot listen on --addr or --admin-addr
	exitUnhealthy = 4 // health: no healthy server answered
	// exitUnreachable is verify's and requests': no server answered at
	// --addr. It is health's code: the same failure, seen by a CI step.
	exitUnreachable = exitUnhealthy
)

// exitError is an error with the code main exits with.
type exitError struct {
	code int
	err  error
	// noHint: a usage error the server judged (a refused filter or
	// token), which the usage text would not help with.
	noHint bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// errReported means the problem was already printed; exit 1 quietly.
var errReported = &exitError{code: exitFailure, err: errors.New("reported")}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd(os.Stdout, os.Stderr).ExecuteContext(ctx)
	stop()
	os.Exit(report(os.Stderr, err))
}

// report prints err, unless it was printed already, and returns the exit
// code for it. An error without a code never reached a command's own work:
// cobra refused the command line (an unknown command or flag, a bad flag
// value, a wrong number of arguments), so it is a usage error.
func report(w io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	code := exitUsage
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if !errors.Is(err, errReported) {
		fmt.Fprintln(w, "scenariomock:", err)
	}
	if code == exitUsage && (ee == nil || !ee.noHint) {
		fmt.Fprintln(w, "Run 'scenariomock --help' for usage.")
	}
	return code
}

// failing gives exitFailure to the errors of a command's own work that do
// not carry a code yet, so that only cobra's own errors are left without
// one.
func failing(run func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := run(cmd, args)
		var ee *exitError
		if err != nil && !errors.As(err, &ee) {
			return withCode(exitFailure, err)
		}
		return err
	}
}

// version describes the build: the module version (a release, or the
// pseudo-version go build derives from a checkout), the VCS revision and
// whether the checkout had uncommitted changes, or "(devel)" when the
// build recorded none of these.
func version(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "(devel)"
	}
	var revision, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	var parts []string
	if v := info.Main.Version; v != "" && v != "(devel)" {
		parts = append(parts, v)
	}
	if revision != "" {
		r := "revision " + revision
		if modified == "true" {
			r += ", modified"
		}
		parts = append(parts, r)
	}
	switch len(parts) {
	case 0:
		return "(devel)"
	case 1:
		return parts[0]
	}
	return parts[0] + " (" + parts[1] + ")"
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "scenariomock",
		Short: "A configurable HTTP scenario mock server",
		Long: `scenariomock serves HTTP scenarios written in YAML.

Exit codes: 0 success; 1 invalid or unreadable scenarios (or another
failure at run time); 2 usage: a bad command, flag, argument or
SCENARIOMOCK_* variable; 3 serve cannot listen on --addr or --admin-addr;
4 health found no healthy server, or verify or requests found no server
at --addr. verify exits 1 when the requests received are not as
expected.`,
		Version:       version(debug.ReadBuildInfo()),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return withCode(exitUsage, applyEnv(cmd.Flags()))
		},
	}
	root.SetVersionTemplate("scenariomock {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newServeCmd(stderr), newValidateCmd(stdout, stderr), newRoutesCmd(stdout, stderr), newHealthCmd(stdout),
		newInitCmd(stdout), newExamplesCmd(stdout), newSchemaCmd(stdout), newCertCmd(stdout),
		newVerifyCmd(stdout, stderr), newRequestsCmd(stdout, stderr), newRecordCmd(stderr), newTriggerCmd(stdout))
	// cobra adds its completion command (bash, zsh, fish, powershell) to a
	// root with subcommands; the README says how to install each script.
	return root
}

type serveOptions struct {
	paths             []string
	openapi           openapiOptions
	example           string
	exampleSet        bool
	addr              string
	adminAddr         string
	adminToken        string
	watch             bool
	debounce          time.Duration
	maxBody           byteSize
	logFormat         string
	logLevel          string
	shutdownTimeout   time.Duration
	readHeaderTimeout time.Duration
	readTimeout       time.Duration
	writeTimeout      time.Duration
	maxHeaderBytes    byteSize
	maxSequenceKeys   int
	maxIdemKeys       int
	maxTemplateOutput byteSize
	adminHosts        []string
	shutdownWaitDelay bool
	maxItems          int
	maxCounters       int
	maxStates         int
	maxIdemBytes      byteSize
	maxColBytes       byteSize
	journalSize       int
	journalBodyLimit  byteSize
	journalSecrets    secretsFlag
	cpuProfile        string
	explain           explainFlag
	state             string
	statePrefix       string
	seed              uint64
	seedSet           bool
	cors              bool
	tls               tlsOptions
	webhooks          webhooks.Options
	proxy             proxyOptions
	forward           forwardOptions
}

func newServeCmd(stderr io.Writer) *cobra.Command { return newServeCmdFor(stderr, false) }

// newServeCmdFor is serve, or with recordCmd the record command: serve's
// flags, no scenarios, every request forwarded and recorded.
func newServeCmdFor(stderr io.Writer, recordCmd bool) *cobra.Command {
	opts := serveOptions{maxBody: 10 << 20, maxHeaderBytes: 64 << 10, maxTemplateOutput: 4 << 20, journalBodyLimit: 64 << 10,
		maxIdemBytes: state.DefaultMaxIdempotencyBytes, maxColBytes: state.DefaultMaxCollectionBytes}
	cmd := &cobra.Command{
		Use:   "serve [file or directory ...]",
		Short: "Serve scenarios (the built-in payments demo when no path is given)",
		Long: `Serve the scenarios in the given YAML files and directories (searched
recursively for *.yaml and *.yml, in lexical order), reloading them as they
change. With no path, the built-in demo examples/payments-idempotency.yaml
is served, or the built-in example --example names. Every flag can also be set as SCENARIOMOCK_<FLAG>, e.g.
SCENARIOMOCK_ADDR=0.0.0.0:8080; SCENARIOMOCK_SCENARIOS lists paths
separated by colons when none are given.`,
		RunE: failing(func(cmd *cobra.Command, args []string) error {
			if recordCmd {
				// They would answer requests that are then not recorded:
				// serve --record records what its scenarios leave to
				// --proxy-unmatched.
				for _, name := range []string{"example", "openapi"} {
					if cmd.Flags().Changed(name) {
						return withCode(exitUsage, fmt.Errorf("--%s: record serves no scenarios, it forwards every request to --target; to serve scenarios and record what they do not answer, run serve --%s ... --proxy-unmatched URL --record DIR", name, name))
					}
				}
				opts.proxy.recording = true
				return runServe(cmd.Context(), opts, stderr)
			}
			opts.paths = pathsOrEnv(args)
			opts.exampleSet = cmd.Flags().Changed("example")
			opts.seedSet = cmd.Flags().Changed("seed")
			return runServe(cmd.Context(), opts, stderr)
		}),
	}
	if recordCmd {
		cmd.Use = "record --target URL [--out DIR]"
		cmd.Short = "Record an upstream's answers as scenario files (a recording proxy; Ctrl-C writes them)"
		cmd.Long = `Forward every request to --target and, when stopped (SIGINT/SIGTERM),
write what it answered into --out as scenario files that validate accepts and
serve replays: one route per method and path template, repeated calls as a
responses: sequence, compressed bodies decoded. Request headers are not
written unless --record-headers lists them; credentials are redacted, and a
file that would still hold one seen in the traffic is refused.`
		cmd.Args = func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("record takes no paths (%q): it serves no scenarios, it forwards every request to --target; to serve scenarios and record what they do not answer, run serve PATH ... --proxy-unmatched URL --record DIR", args[0])
			}
			return nil
		}
		opts.proxy.record = "recorded"
	}
	f := cmd.Flags()
	opts.proxy.flags(f, recordCmd)
	f.StringVar(&opts.example, "example", demoExample, exampleFlagUsage())
	_ = cmd.RegisterFlagCompletionFunc("example", completeExamples) // the flag exists
	f.StringVar(&opts.addr, "addr", "127.0.0.1:8080", "address to listen on (0.0.0.0:8080 in containers)")
	f.StringVar(&opts.adminAddr, "admin-addr", "", "serve the admin API on this address of its own (127.0.0.1:9090), and not under /__admin of --addr")
	f.StringVar(&opts.adminToken, "admin-token", "", "require Authorization: Bearer <token> on every admin call but /__admin/health (prefer SCENARIOMOCK_ADMIN_TOKEN: a flag shows in ps)")
	f.BoolVar(&opts.watch, "watch", true, "reload the scenarios when their files change")
	f.DurationVar(&opts.debounce, "debounce", 30*time.Millisecond, "how long file changes must settle before a reload")
	f.Var(&opts.maxBody, "max-body", "largest request body accepted; larger ones get 413")
	f.StringVar(&opts.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&opts.logLevel, "log-level", "info", "log level: debug (a request's line adds its query, headers and body), info (a line per request), warn or error")
	f.DurationVar(&opts.shutdownTimeout, "shutdown-timeout", 5*time.Second, "how long requests in flight may finish writing after SIGINT/SIGTERM")
	waitUsage := "on SIGINT/SIGTERM, let requests in a delay finish it, and proxied ones wait for their upstream, within --shutdown-timeout instead of dropping them at once"
	if recordCmd {
		// Ctrl-C is how a recording ends: the requests forwarded just
		// before it are part of the session recorded, not slow ones.
		waitUsage = "on SIGINT/SIGTERM, let forwards in flight wait for their upstream's answer, within --shutdown-timeout, and record it; false drops them at once, counted as skipped"
	}
	f.BoolVar(&opts.shutdownWaitDelay, "shutdown-wait-delays", recordCmd, waitUsage)
	f.DurationVar(&opts.readHeaderTimeout, "read-header-timeout", 10*time.Second, "how long a client may take to send request headers")
	f.DurationVar(&opts.readTimeout, "read-timeout", 30*time.Second, "how long a client may take to send a whole request, body included (then 408)")
	f.DurationVar(&opts.writeTimeout, "write-timeout", 60*time.Second, "how long a client may take to read an answer, counted after the route's delay (then it is dropped); the request stream and listings get it per write")
	f.Var(&opts.maxHeaderBytes, "max-header-bytes", "largest request header block accepted; larger ones get 431")
	f.IntVar(&opts.maxIdemKeys, "idempotency-max-keys", 100_000, "idempotency keys kept; past it expired keys go first, then the least recently used (keys in flight are never dropped)")
	f.IntVar(&opts.maxSequenceKeys, "max-sequence-keys", 100_000, "distinct keys a per-key sequence remembers per route before forgetting the oldest")
	f.Var(&opts.explain, "explain", "what a 404 tells the client of the closest routes: redacted (no wanted values of secret-looking headers, query parameters or JSON keys), full or off; the log has all")
	f.Var(&opts.maxTemplateOutput, "max-template-output", "largest header or body a response template may render; larger ones get a 500 problem")
	f.StringSliceVar(&opts.adminHosts, "admin-hosts", nil, "host names besides localhost and IP addresses that admin calls may use (the names a container is reached by; * for any)")
	f.IntVar(&opts.maxItems, "max-collection-items", 100_000, "items all stored collections may hold together; a save past it gets 507")
	f.Var(&opts.maxIdemBytes, "idempotency-max-bytes", "bytes of stored idempotent answers kept; past it the least recently used completed keys go (keys in flight are never dropped)")
	f.Var(&opts.maxColBytes, "collections-max-bytes", "bytes of ids and bodies all stored collections may hold together; a save past it gets 507")
	f.IntVar(&opts.maxCounters, "max-counters", state.DefaultMaxCounters, "names of seq counters kept (a name may come from the request); a new name past it is refused until POST /__admin/reset")
	f.IntVar(&opts.maxStates, "max-states", state.DefaultMaxStates, "route states kept (a state's key may come from the request, per:); a move to a new key past it is refused until POST /__admin/reset")
	f.StringVar(&opts.state, "state", "memory", "where runtime state lives: memory (this process), or a Redis URL that replicas share: redis://[:password@]host:6379/0, rediss:// for TLS")
	f.StringVar(&opts.statePrefix, "state-prefix", redis.DefaultPrefix, "prefix of every Redis key: replicas with the same prefix share state, others do not")
	f.Uint64Var(&opts.seed, "seed", 0, "make every random choice repeatable (fault chances, delay ranges, randomInt, randomHex, uuid) for the same requests in the same order")
	f.BoolVar(&opts.cors, "cors", false, "answer browsers from any origin (CORS preflights and headers, credentials allowed) on routes whose file has no cors: block; not the admin API")
	opts.tls.flags(f, true)
	opts.openapi.flags(f)
	opts.forward.flags(f)
	f.IntVar(&opts.webhooks.Queue, "webhook-queue", 10_000, "webhook deliveries the outbox holds, pending or in flight; past it an event is refused and the refusal is in GET /__admin/webhooks")
	f.IntVar(&opts.webhooks.Concurrency, "webhook-concurrency", 8, "webhook attempts in flight at once; with more than one endpoint, one holds fewer than half (so, from 3 on, two receivers that hang leave the others a slot)")
	f.Float64Var(&opts.webhooks.TimeScale, "time-scale", 1, "multiply webhook waits (after, fault delays, the retry schedule, Retry-After) by this: 0.01 runs a 30s retry in 300ms for CI; signed timestamps stay real")
	f.IntVar(&opts.journalSize, "journal-size", 10_000, "requests the journal keeps for GET /__admin/requests (the oldest go first); 0 turns the journal off")
	f.Var(&opts.journalBodyLimit, "journal-body-limit", "how much of each request body the journal keeps (bodySize says the whole size)")
	f.Var(&opts.journalSecrets, "journal-secrets", "redact: the journal and the dashboard show credential headers (Authorization, Cookie, X-Api-Key, ...) as a short hash; keep: as sent")
	f.StringVar(&opts.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (for the load harness)")
	_ = f.MarkHidden("cpuprofile")
	if recordCmd {
		// Flags about the scenarios that record does not serve: --example
		// and --openapi are refused, the others do nothing. Kept, hidden,
		// so that the refusal can say what to run instead.
		for _, name := range recordHides {
			_ = f.MarkHidden(name)
		}
	}
	registerCompletions(cmd, map[string][]cobra.Completion{"log-format": logFormats, "log-level": logLevels, "explain": explainModes, "journal-secrets": journalSecrets})
	return cmd
}

// recordHides are serve's flags that record's help leaves out: record
// forwards every request and serves no scenarios.
var recordHides = []string{"example", "watch", "debounce", "openapi", "openapi-fixtures", "openapi-validate", "openapi-errors",
	"openapi-scope", "openapi-references", "openapi-existing-ids", "openapi-proxy", "dynamic", "unknown-ids"}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	switch format {
	case "text", "json":
		return slog.New(server.NewLogHandler(w, format == "json", lv)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// runServe loads, starts the watcher and the server, and returns when ctx
// ends and both have stopped.
func runServe(ctx context.Context, opts serveOptions, stderr io.Writer) error {
	logs := server.NewLogWriter(stderr)
	log, err := newLogger(logs, opts.logFormat, opts.logLevel)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if opts.journalSize < 0 {
		return withCode(exitUsage, fmt.Errorf("--journal-size %d: want a number of requests, or 0 for no journal", opts.journalSize))
	}
	if err := checkWebhookFlags(opts.webhooks); err != nil {
		return withCode(exitUsage, err)
	}
	if err := opts.forward.check(); err != nil {
		return withCode(exitUsage, err)
	}
	if opts.cpuProfile != "" {
		stop, err := startCPUProfile(opts.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if err := opts.openapi.check(); err != nil {
		return withCode(exitUsage, err)
	}
	recorder, err := opts.proxy.recorder()
	if err != nil {
		return err
	}
	file, data, err := scenarioSource(opts.paths, opts.example, opts.exampleSet)
	if err != nil {
		return err
	}
	if opts.proxy.recording {
		file, data = "recording", emptyScenario // every request goes to --target
	}
	if len(opts.paths) == 0 && opts.openapi.spec != "" {
		file, data = opts.openapi.spec, emptyScenario // the spec alone
	}
	if err := server.CheckAdminToken(opts.adminToken); err != nil {
		return withCode(exitUsage, fmt.Errorf("--admin-token (or SCENARIOMOCK_ADMIN_TOKEN): %w", err))
	}
	// With --admin-addr the admin listener speaks HTTPS too, with the same
	// certificate, so a self-signed one names its host as well.
	tlsConfig, err := opts.tls.config([]string{opts.addr, opts.adminAddr}, time.Now())
	if err != nil {
		return err
	}
	load := func() (*scenarios.Set, error) { return scenarios.LoadWith(builtinFiles, opts.paths...) }
	source := strings.Join(opts.paths, " ")
	if len(opts.paths) == 0 {
		load = func() (*scenarios.Set, error) { return loadExample(file, data) }
		what := "built-in example "
		if opts.example == demoExample {
			what = "built-in demo "
		}
		source = what + file + " (run `scenariomock serve <path>` to serve your own)"
		if opts.proxy.recording {
			source = "recording of " + opts.proxy.unmatched + " into " + opts.proxy.record
			opts.watch = false
		}
		opts.watch = opts.watch && opts.openapi.spec != ""
		if opts.openapi.spec != "" {
			source = "OpenAPI document " + opts.openapi.spec
		}
	}
	load = opts.forward.wrap(loadWithOpenAPI(load, opts.openapi.expand(openapi.NewCache())))
	watchPaths := opts.paths
	if len(watchPaths) == 0 && opts.openapi.spec != "" {
		watchPaths = []string{specDir(opts.openapi.spec)} // the spec is a dep
	}
	var watcher *scenarios.Watcher
	if opts.watch {
		// Watch before the first load, so that an edit during it is seen.
		if watcher, err = scenarios.NewWatcher(watchPaths, opts.debounce, log); err != nil {
			log.Warn("hot reload is off", "error", err)
		}
	}
	// The names --addr and --admin-addr listen on are ones the admin API
	// is reached by.
	adminHosts := opts.adminHosts
	for _, addr := range []string{opts.addr, opts.adminAddr} {
		if host, _, err := net.SplitHostPort(addr); err == nil && host != "" {
			adminHosts = append(adminHosts, host)
		}
	}
	// hash reads the files a reload would load, without parsing them, so
	// that a reload of unchanged files (a watcher event for a file that
	// was only touched, an admin reload) costs a read, not a parse.
	var srv *server.Server
	var hash func() (string, error)
	if len(opts.paths) > 0 {
		hash = func() (string, error) { return scenarios.Hash(opts.paths, srv.Deps()) }
	}
	var random func() float64 // nil: math/rand/v2's own seeding
	if opts.seedSet {
		random = server.SeededRand(opts.seed)
	}
	store, err := openState(ctx, opts)
	if err != nil {
		return err
	}
	// The memory store is made here, not by the server, so that every
	// bound of the flags reaches it as it reaches Redis.
	var shared state.Store = state.NewMemory(withJournal(stateOptions(opts), opts))
	if store != nil {
		shared = store
	}
	if store != nil {
		defer func() {
			// The load harness reads round_trips to report round trips
			// per request.
			log.Info("state store closed", "round_trips", store.RoundTrips())
			store.Close()
		}()
		log.Info("state shared in Redis", "url", redactedURL(opts.state), "prefix", opts.statePrefix)
	}
	restoreGC := relaxGC(opts.paths)
	srv, err = server.New(server.Options{
		State: shared, Load: load, Hash: hash, Source: source, Logger: log, Build: version(debug.ReadBuildInfo()),
		MaxBody: int64(opts.maxBody), ShutdownTimeout: opts.shutdownTimeout,
		ReadHeaderTimeout: opts.readHeaderTimeout, ReadTimeout: opts.readTimeout, WriteTimeout: opts.writeTimeout, MaxHeaderBytes: int(opts.maxHeaderBytes),
		MaxSequenceKeys: opts.maxSequenceKeys, MaxIdempotencyKeys: opts.maxIdemKeys, Explain: server.ExplainMode(opts.explain),
		MaxTemplateOutput: int(opts.maxTemplateOutput), AdminHosts: adminHosts, AdminToken: opts.adminToken,
		WaitDelaysOnShutdown: opts.shutdownWaitDelay, MaxCollectionItems: opts.maxItems, Rand: random,
		CORS: opts.cors, TLS: tlsConfig,
		JournalSize: journalSize(opts.journalSize), JournalBodyLimit: int(opts.journalBodyLimit),
		JournalKeepsSecrets: bool(opts.journalSecrets),
		Webhooks:            webhookOptions(opts, store),
		ProxyUnmatched:      opts.proxy.unmatched, ProxyInsecureTLS: opts.proxy.insecure, Recorder: recorder,
		RecordDir: opts.proxy.record,
	})
	restoreGC()
	if err != nil {
		printProblems(stderr, err)
		return errReported
	}
	opts.forward.log(log)
	ln, err := net.Listen("tcp", opts.addr)
	if err != nil {
		return withCode(exitListen, listenError(err, "--addr"))
	}
	if recorder != nil {
		recorder.SetMockURL(mockURL(ln.Addr(), tlsConfig != nil))
	}
	var adminLn net.Listener
	if opts.adminAddr != "" {
		if adminLn, err = net.Listen("tcp", opts.adminAddr); err != nil {
			ln.Close()
			return withCode(exitListen, fmt.Errorf("--admin-addr: %w", listenError(err, "--admin-addr")))
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { logs.Run(ctx, 100*time.Millisecond) })
	if watcher != nil {
		wg.Go(func() {
			_ = watcher.Run(ctx, srv.Deps(), func() []string { _ = srv.Reload(); return srv.Deps() })
		})
	}
	err = srv.ServeSplit(ctx, ln, adminLn)
	cancel()
	wg.Wait()
	if err != nil && recorder != nil && recorder.Len() == 0 {
		return err // refused at start (a proxy loop): nothing to write
	}
	return errors.Join(err, opts.proxy.writeRecording(recorder, log))
}

// journalSize maps --journal-size to Options.JournalSize, where zero is
// the default and a negative size is off.
func journalSize(flag int) int {
	if flag == 0 {
		return -1
	}
	return flag
}

// openState opens the store --state names: nil for memory (the server
// makes its own), a Redis store for a redis:// or rediss:// URL. The
// bounds are the same flags as for memory.
func openState(ctx context.Context, opts serveOptions) (*redis.Store, error) {
	switch {
	case opts.state == "" || opts.state == "memory":
		return nil, nil
	case strings.HasPrefix(opts.state, "redis://") || strings.HasPrefix(opts.state, "rediss://"):
	default:
		return nil, withCode(exitUsage, fmt.Errorf("--state %q: want memory, redis://host:6379/0 or rediss://host:6379/0", redactedURL(opts.state)))
	}
	if opts.statePrefix == "" {
		return nil, withCode(exitUsage, errors.New("--state-prefix must not be empty"))
	}
	s, err := redis.Open(ctx, opts.state, redis.Options{
		Options: stateOptions(opts),
		Prefix:  opts.statePrefix,
	})
	if err != nil {
		return nil, fmt.Errorf("--state: %w", err)
	}
	return s, nil
}

// stateOptions are the bounds of the state store that the flags set, for
// memory and Redis alike.
func stateOptions(opts serveOptions) state.Options {
	return state.Options{
		MaxKeys: opts.maxIdemKeys, MaxSequenceKeys: opts.maxSequenceKeys, MaxItems: opts.maxItems,
		MaxCounters: opts.maxCounters, MaxStates: opts.maxStates, MaxIdempotencyBytes: int64(opts.maxIdemBytes), MaxCollectionBytes: int64(opts.maxColBytes),
	}
}

// withJournal adds the journal's size to o for the memory store, as the
// server would size the store it makes (off is the default size: the
// server itself journals nothing then).
func withJournal(o state.Options, opts serveOptions) state.Options {
	o.JournalSize = max(journalSize(opts.journalSize), 0)
	return o
}

// redactedURL hides a URL's password, for logs and errors.
func redactedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

func printProblems(w io.Writer, err error) {
	problems := scenarios.Problems(err)
	for _, p := range problems {
		fmt.Fprintln(w, p)
	}
	files := map[string]bool{}
	for _, p := range problems {
		files[p.Pos.File] = true
	}
	fmt.Fprintf(w, "%d %s in %d %s\n", len(problems), plural(len(problems), "problem"), len(files), plural(len(files), "file"))
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// pathsOrEnv returns the scenario paths given as arguments or, when there
// are none, those listed in SCENARIOMOCK_SCENARIOS.
func pathsOrEnv(args []string) []string {
	if len(args) == 0 {
		if env := os.Getenv(envPrefix + "SCENARIOS"); env != "" {
			return filepath.SplitList(env)
		}
	}
	return args
}

func newValidateCmd(stdout, stderr io.Writer) *cobra.Command {
	var spec, fixtures string
	cmd := &cobra.Command{
		Use:   "validate <file or directory> ...",
		Short: "Check scenario files (and an OpenAPI document); print file:line:col problems and exit 1 if any",
		RunE: failing(func(_ *cobra.Command, args []string) error {
			paths := pathsOrEnv(args)
			if len(paths) == 0 && spec == "" {
				return withCode(exitUsage, errors.New("validate needs files or directories (or SCENARIOMOCK_SCENARIOS), or --openapi"))
			}
			opts := openapi.Options{Cache: commandSpecs}
			load := func() (*scenarios.Set, error) { return scenarios.LoadWith(builtinFiles, paths...) }
			if spec != "" {
				opts.Extra = []*scenarios.OpenAPISource{openapi.FileSource(spec, fixtures)}
				if len(paths) == 0 {
					load = func() (*scenarios.Set, error) { return scenarios.LoadBytes(spec, emptyScenario) } // the spec alone, as serve --openapi
				}
			}
			restoreGC := relaxGC(paths)
			set, err := loadWithOpenAPI(load, opts)()
			restoreGC()
			if err != nil {
				printProblems(stderr, err)
				return errReported
			}
			n := len(set.Routes())
			fmt.Fprintf(stdout, "ok: %d %s, %d %s\n", len(set.Files), plural(len(set.Files), "file"), n, plural(n, "route"))
			return nil
		}),
	}
	cmd.Flags().StringVar(&spec, "openapi", "", "check this OpenAPI document too, as serve --openapi serves it (alone when no path is given)")
	cmd.Flags().StringVar(&fixtures, "openapi-fixtures", "", "the fixtures file of --openapi")
	return cmd
}

func newRoutesCmd(stdout, stderr io.Writer) *cobra.Command {
	var exampleName, spec, fixtures string
	cmd := &cobra.Command{
		Use:   "routes [file or directory ...]",
		Short: "List the routes served, in match order (the built-in demo when no path is given)",
		RunE: failing(func(cmd *cobra.Command, args []string) error {
			paths := pathsOrEnv(args)
			file, data, err := scenarioSource(paths, exampleName, cmd.Flags().Changed("example"))
			if err != nil {
				return err
			}
			var set *scenarios.Set
			switch {
			case len(paths) > 0:
				set, err = scenarios.LoadWith(builtinFiles, paths...)
			case spec != "":
				set, err = scenarios.LoadBytes(spec, emptyScenario) // the spec alone, as serve --openapi
			default:
				set, err = loadExample(file, data)
			}
			if err == nil {
				opts := openapi.Options{Cache: commandSpecs}
				if spec != "" {
					opts.Extra = []*scenarios.OpenAPISource{openapi.FileSource(spec, fixtures)}
				}
				err = openapi.Expand(set, opts)
			}
			if err != nil {
				printProblems(stderr, err)
				return errReported
			}
			t, err := matcher.Compile(set)
			if err != nil {
				return err
			}
			printRoutes(stdout, t)
			return nil
		}),
	}
	cmd.Flags().StringVar(&exampleName, "example", demoExample, "list this built-in example's routes when no path is given: "+strings.Join(exampleNames(), ", "))
	cmd.Flags().StringVar(&spec, "openapi", "", "list the routes of this OpenAPI document too, after the YAML routes of the paths given (as serve --openapi)")
	cmd.Flags().StringVar(&fixtures, "openapi-fixtures", "", "the fixtures file of --openapi")
	_ = cmd.RegisterFlagCompletionFunc("example", completeExamples) // the flag exists
	return cmd
}

func printRoutes(w io.Writer, t *matcher.Table) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tNAME\tMETHOD\tPATH\tWHEN\tRESPONDS\tSOURCE")
	for _, r := range t.Routes() {
		method := "*"
		if len(r.Methods) > 0 {
			method = strings.Join(r.Methods, ",")
		}
		conds := r.When.Describe()
		if r.State != nil {
			conds = append(conds, r.State.Describe())
		}
		when := strings.Join(conds, "; ")
		if when == "" {
			when = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Index+1, r.Name, method, r.Path, when, describeResponses(r.Route), r.Pos)
	}
	if fb := t.Fallback(); fb != nil {
		fmt.Fprintf(tw, "-\t(fallback)\t*\t*\tno route matched\t%s\t%s\n", describeResponses(&scenarios.Route{Responses: []*scenarios.Response{fb}}), fb.Pos)
	}
	tw.Flush()
}

// describeResponses summarizes what a route answers: "201 after 10s → 201
// (per header.Idempotency-Key)".
func describeResponses(r *scenarios.Route) string {
	parts := make([]string, len(r.Responses))
	for i, resp := range r.Responses {
		s := fmt.Sprint(resp.Status)
		if f := resp.Fault; f != nil {
			s = f.String()
			if !f.Always() || f.After == scenarios.AfterProcessing || f.SendsAnswer() {
				s = fmt.Sprint(resp.Status) + " with " + s
			}
		}
		if resp.Delay.Kind != scenarios.NoDelay {
			s += " after " + resp.Delay.String()
		}
		parts[i] = s
	}
	out := strings.Join(parts, " → ")
	if seq := r.Sequence; seq != nil && len(r.Responses) > 1 {
		if seq.Per != nil {
			out += " (per " + seq.Per.String() + ")"
		}
		if seq.After == scenarios.Cycle {
			out += " (cycling)"
		}
	}
	return out
}

func newHealthCmd(stdout io.Writer) *cobra.Command {
	var addr, adminAddr string
	var timeout time.Duration
	var tlsOpts tlsOptions
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Exit 0 when a scenariomock server answers its health check (for HEALTHCHECK)",
		Args:  cobra.NoArgs,
		RunE: failing(func(cmd *cobra.Command, _ []string) error {
			if adminAddr != "" {
				addr = adminAddr // the admin API, health included, is there
			}
			return checkHealth(cmd.Context(), stdout, addr, timeout, tlsOpts)
		}),
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address of the server (0.0.0.0 means this host)")
	cmd.Flags().StringVar(&adminAddr, "admin-addr", "", "address of the server's admin API when serve has it on one of its own (--admin-addr); asked instead of --addr")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "how long to wait for the answer")
	// The same flags and variables as serve, so that a bare health in a
	// container that sets SCENARIOMOCK_TLS_* speaks HTTPS to it.
	tlsOpts.flags(cmd.Flags(), false)
	return cmd
}

func checkHealth(ctx context.Context, stdout io.Writer, addr string, timeout time.Duration, tlsOpts tlsOptions) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--addr %q: %w", addr, err))
	}
	host = adminclient.ReachableHost(host) // 0.0.0.0: ask on loopback
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client, scheme, err := tlsOpts.httpClient()
	if err != nil {
		return err
	}
	url := scheme + "://" + net.JoinHostPort(host, port) + "/__admin/health"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if errors.Is(err, syscall.ECONNREFUSED) {
		return withCode(exitUnhealthy, fmt.Errorf("unhealthy: %w (is `scenariomock serve` running at that address?)", err))
	}
	if err != nil {
		return withCode(exitUnhealthy, fmt.Errorf("unhealthy: %w", err))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		if strings.Contains(string(body), "HTTP request to an HTTPS server") {
			return withCode(exitUnhealthy, fmt.Errorf("unhealthy: %s answered %s: the server speaks HTTPS; pass --tls-cert or --tls-self-signed as to serve", url, resp.Status))
		}
		if resp.StatusCode == http.StatusNotFound && strings.Contains(string(body), "No route matches") {
			// The scenario port of a serve that has --admin-addr.
			return withCode(exitUnhealthy, fmt.Errorf("unhealthy: %s answered %s: %s", url, resp.Status, noAdminHint))
		}
		return withCode(exitUnhealthy, fmt.Errorf("unhealthy: %s answered %s", url, resp.Status))
	}
	fmt.Fprint(stdout, string(body))
	return nil
}

// webhookOptions are the dispatcher's flags; --seed seeds its faults too.
// With a Redis store the replicas share one outbox, bounded by
// --webhook-queue across them all.
func webhookOptions(opts serveOptions, store *redis.Store) webhooks.Options {
	w := opts.webhooks
	w.Seed = opts.seed
	if store != nil {
		w.Outbox = store.Outbox(w.Queue)
		w.Shared = store.History(w.History)
	}
	return w
}

func checkWebhookFlags(w webhooks.Options) error {
	switch {
	case w.Queue < 1:
		return fmt.Errorf("--webhook-queue %d: want 1 or more deliveries", w.Queue)
	case w.Concurrency < 1:
		return fmt.Errorf("--webhook-concurrency %d: want 1 or more attempts at once", w.Concurrency)
	case !(w.TimeScale > 0) || w.TimeScale > 1000:
		return fmt.Errorf("--time-scale %g: want a factor above 0 (0.01 makes a 1s wait 10ms), at most 1000", w.TimeScale)
	}
	return nil
}

// listenError says what to do about a port that is taken, the commonest
// reason serve cannot listen.
func listenError(err error, flag string) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%w; another process listens there (another scenariomock?): stop it, or choose another port with %s (127.0.0.1:0 takes a free one)", err, flag)
	}
	return err
}
