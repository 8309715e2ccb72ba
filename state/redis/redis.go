package redis

import (
	"context"
	"fmt"
	"github.com/scenariomock/scenariomock/state"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Store is the state.Store that replicas share: all state lives in one Redis
// database, under a key prefix, so that replicas behind a load balancer
// claim idempotency keys, advance sequences and store items together.
// Every request-path operation is one round trip (a Lua script or a
// single command). It is safe for concurrent use.
//
// Key layout: every key is Prefix + "{state}:" + a name, so that all the
// keys of a store carry one Redis Cluster hash tag and each script touches
// one slot. Scripts also reach keys they derive from their arguments (an
// evicted idempotency key, a collection by name), which Redis allows for
// keys of the same slot. The URL forms here open a single-node client;
// running on a Cluster would need a cluster client and puts one store on
// one shard.
type Store struct {
	rdb    *goredis.Client
	base   string // Prefix + "{state}:"
	o      state.Options
	notify *notifier

	idem  *redisIdempotency
	seqs  *redisSequences
	ctrs  *redisCounters
	cols  *redisCollections
	jrnl  *redisJournal
	docs  *redisDocuments
	stats *redisStates
	locks redisLocks

	// trips counts round trips to Redis, for the load harness's figure
	// of round trips per request.
	trips atomic.Int64
	// epoch is this replica's copy of the reset epoch, e (fence.go).
	epoch atomic.Uint64
	// replica names this Store among those sharing the prefix, and beat
	// keeps it known to be alive (liveness.go).
	replica string
	beat    *heartbeat

	closeOnce sync.Once
	closeErr  error
}

var _ state.Store = (*Store)(nil)

// Options configures Open. The zero value gives the defaults.
type Options struct {
	// Options are the bounds and the clock, as for Memory.
	state.Options
	// Prefix starts every key (default "scenariomock:"); stores with
	// different prefixes share nothing.
	Prefix string
	// DialTimeout (default 1s), ReadTimeout and WriteTimeout (default
	// 500ms each) bound each round trip, so that an unreachable Redis
	// turns into a 503 quickly rather than a hung request. Parameters in
	// the URL (dial_timeout=, read_timeout=, write_timeout=) win.
	DialTimeout, ReadTimeout, WriteTimeout time.Duration
	// PoolSize is the most connections open at once (default 64; the
	// URL's pool_size= wins). A request holds one for one round trip.
	PoolSize int
	// Retries is how many times a command that failed on the network is
	// sent again (default 0; the URL's max_retries= wins). Retrying a
	// script that may have run already (a read timeout) would run it
	// twice, so the default is none: the request gets a 503 instead.
	Retries int
}

// Defaults of Options.
const (
	DefaultPrefix       = "scenariomock:"
	DefaultDialTimeout  = time.Second
	DefaultReadTimeout  = 500 * time.Millisecond
	DefaultWriteTimeout = 500 * time.Millisecond
	DefaultPoolSize     = 64
)

// Open connects to the Redis at rawURL (redis://[user:password@]host:port/db
// or rediss:// for TLS) and returns a store on it. It fails when the URL
// is malformed or Redis does not answer a PING within ctx and the dial
// timeout: a server should not start on a store it cannot reach.
func Open(ctx context.Context, rawURL string, o Options) (*Store, error) {
	ro, err := redisClientOptions(rawURL, o)
	if err != nil {
		return nil, err
	}
	quietRedis.Do(func() { goredis.SetLogger(discardLogger{}) })
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	rdb := goredis.NewClient(ro)
	r := &Store{rdb: rdb, base: o.Prefix + "{state}:", o: o.Options.WithDefaults(), replica: newReplicaID()}
	rdb.AddHook(tripHook{&r.trips})
	pctx, cancel := context.WithTimeout(ctx, ro.DialTimeout+ro.ReadTimeout)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("state: redis %s: %w", redactURL(rawURL), err)
	}
	// Before the subscription, whose messages reach it.
	r.jrnl = &redisJournal{r: r}
	// Before the subscription, whose reconnections set the key again.
	if r.beat, err = startHeartbeat(pctx, r, replicaLease); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("state: redis %s: replica key: %w", redactURL(rawURL), err)
	}
	r.notify, err = startNotifier(pctx, rdb, r.base+"n:", notifyHooks{
		channel: r.key("n", "e"), message: r.epochMessage, resubscribed: r.resubscribed,
		journal: r.key("n", "j"), appended: r.appended,
	})
	if err != nil {
		r.beat.close()
		_ = rdb.Close()
		return nil, fmt.Errorf("state: redis %s: subscribe: %w", redactURL(rawURL), err)
	}
	// After the subscription: a reset from now on is not missed.
	if err := r.refreshEpoch(pctx); err != nil {
		r.notify.close()
		r.beat.close()
		_ = rdb.Close()
		return nil, fmt.Errorf("state: redis %s: reset epoch: %w", redactURL(rawURL), err)
	}
	r.idem = &redisIdempotency{r: r}
	r.idem.retry = startReleaser(r.idem, ro.ReadTimeout)
	r.seqs = &redisSequences{r: r}
	r.ctrs = &redisCounters{r: r}
	r.cols = &redisCollections{r: r}
	r.docs = &redisDocuments{r: r}
	r.stats = &redisStates{r: r}
	r.locks.r = r
	r.locks.ttl = lockTTL
	return r, nil
}

// redisClientOptions parses the URL and applies the defaults the URL does
// not override.
func redisClientOptions(rawURL string, o Options) (*goredis.Options, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("state: redis URL: %w", err)
	}
	ro, err := goredis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("state: redis URL %s: %w", redactURL(rawURL), err)
	}
	q := u.Query()
	set := func(param string, dst *time.Duration, v, def time.Duration) {
		if q.Has(param) {
			return
		}
		if v <= 0 {
			v = def
		}
		*dst = v
	}
	set("dial_timeout", &ro.DialTimeout, o.DialTimeout, DefaultDialTimeout)
	set("read_timeout", &ro.ReadTimeout, o.ReadTimeout, DefaultReadTimeout)
	set("write_timeout", &ro.WriteTimeout, o.WriteTimeout, DefaultWriteTimeout)
	if !q.Has("pool_size") {
		ro.PoolSize = DefaultPoolSize
		if o.PoolSize > 0 {
			ro.PoolSize = o.PoolSize
		}
	}
	if !q.Has("pool_timeout") {
		// Waiting for a free connection is bounded like a round trip.
		ro.PoolTimeout = ro.DialTimeout
	}
	if !q.Has("max_retries") {
		ro.MaxRetries = -1 // go-redis: -1 is none, 0 is its default of 3
		if o.Retries > 0 {
			ro.MaxRetries = o.Retries
		}
	}
	// One dial per attempt: go-redis would dial five times, 100ms apart,
	// before a command fails, and a request waits for all of them.
	if ro.DialerRetries == 0 {
		ro.DialerRetries = 1
	}
	// A request's deadline bounds its round trips too.
	ro.ContextTimeoutEnabled = true
	// Each replica's connections say whose they are, in CLIENT LIST.
	if ro.ClientName == "" {
		ro.ClientName = "scenariomock"
	}
	// RESP2 keeps replies of scripts plain arrays on every Redis version.
	ro.Protocol = 2
	ro.DisableIdentity = true
	return ro, nil
}

// quietRedis silences go-redis's own logger, which writes unstructured
// lines to stderr: its errors reach the caller, who logs them (once per
// failed request, with the route).
var quietRedis sync.Once

type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}

// redactURL hides the password of a Redis URL for error messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// Idempotency returns the store of idempotency keys.
func (r *Store) Idempotency() state.Idempotency { return r.idem }

// Sequences returns the sequence positions.
func (r *Store) Sequences() state.Sequences { return r.seqs }

// Counters returns the named counters.
func (r *Store) Counters() state.Counters { return r.ctrs }

// Collections returns the stored resources.
func (r *Store) Collections() state.Collections { return r.cols }

// Journal returns the request journal.
func (r *Store) Journal() state.Journal { return r.jrnl }

// States returns the route states.
func (r *Store) States() state.States { return r.stats }

var _ state.UsageReporter = (*Store)(nil)

// Usage returns what every replica's shared state holds, in one round
// trip.
func (r *Store) Usage(ctx context.Context) (state.Usage, error) {
	var keys *goredis.IntCmd
	var bytes *goredis.SliceCmd
	_, err := r.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		keys = p.ZCard(ctx, r.key("i", "idx"))
		bytes = p.MGet(ctx, r.key("i", "bytes"), r.key("o", "b"))
		return nil
	})
	if err != nil {
		return state.Usage{}, fmt.Errorf("state: redis usage: %w", err)
	}
	u := state.Usage{IdempotencyKeys: int(keys.Val())}
	if v := bytes.Val(); len(v) == 2 {
		s0, _ := v[0].(string)
		s1, _ := v[1].(string)
		u.IdempotencyBytes, _ = strconv.ParseInt(s0, 10, 64)
		u.CollectionBytes, _ = strconv.ParseInt(s1, 10, 64)
	}
	return u, nil
}

// Ping reports whether Redis answers, for the health endpoint.
func (r *Store) Ping(ctx context.Context) error {
	return r.rdb.Ping(ctx).Err()
}

// RoundTrips returns how many round trips to Redis the store has made
// (a pipeline is one), for measurements.
func (r *Store) RoundTrips() int64 { return r.trips.Load() }

// tripHook counts round trips.
type tripHook struct{ n *atomic.Int64 }

func (h tripHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h tripHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h tripHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// Close ends the subscription and the background releases (after one last
// attempt at those still pending) and closes the connections. Claims
// waiting for a key return InFlight.
func (r *Store) Close() error {
	r.closeOnce.Do(func() {
		r.notify.close()
		r.idem.retry.close()
		r.beat.close()
		r.closeErr = r.rdb.Close()
	})
	return r.closeErr
}

// key returns the full name of one of the store's keys.
func (r *Store) key(parts ...string) string {
	return r.base + strings.Join(parts, ":")
}
