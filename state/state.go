package state

import (
	"context"
	"errors"
	"time"
)

// Store is all runtime state of one server. Implementations are safe for
// concurrent use.
type Store interface {
	Idempotency() Idempotency
	Sequences() Sequences
	Counters() Counters
	Collections() Collections
	Journal() Journal
	// Locks serializes the requests that act on one object.
	Locks() Locks
	// States keeps the route states (state:).
	States() States
	// Reset forgets everything: keys, positions, counters, items, route
	// states and the journal.
	Reset(ctx context.Context) error
	// Close releases what the store holds (connections, goroutines).
	// Nothing may be called after Close.
	Close() error
}

// Pinger is implemented by stores that other processes share (Redis):
// the health endpoint asks them whether they answer, and the server
// treats their state as not its own to wipe at startup.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Forgetter is implemented by stores that other processes share and that
// can forget all they hold while those run (a Redis restarted without
// persistence, or flushed). Forgotten's channel receives each time the
// store finds it has forgotten, in one process of those sharing it, so
// that this one seeds again what the scenarios seed, as a restart of a
// single process would. It is safe for concurrent use.
type Forgetter interface {
	Forgotten() <-chan struct{}
}

// Errors an implementation returns. Anything else is a failure of the
// store itself (a lost connection), which the server turns into a 503.
var (
	// ErrNotClaimed is returned by Complete and Release when the token no
	// longer holds its key: the key was completed or released already,
	// expired, evicted, or expired by an admin call.
	ErrNotClaimed = errors.New("state: idempotency key no longer claimed by this token")
	// ErrFull is returned by Collections when saving one more item would
	// pass the store's bound.
	ErrFull = errors.New("state: collections are full")
	// ErrCountersFull is returned by Counters.Next for a name it has not
	// seen when it already keeps Options.MaxCounters names. Reset forgets
	// names and so makes room.
	ErrCountersFull = errors.New("state: too many seq counters (the bound is --max-counters; POST /__admin/reset forgets them)")
	// ErrCounterName is returned by Counters.Next for a name longer than
	// MaxCounterName bytes.
	ErrCounterName = errors.New("state: seq counter name longer than 1024 bytes")
)

// MaxCounterName is the longest counter name, in bytes.
const MaxCounterName = 1024

// Options configures a store. The zero value gives the defaults.
type Options struct {
	// Now is the store's clock; tests inject one to expire keys without
	// sleeping. Default: time.Now.
	Now func() time.Time
	// MaxKeys bounds the idempotency keys kept (default 100,000). Past it,
	// an expired key goes first, then the least recently used completed
	// key. Keys in flight are never evicted (that would let a duplicate
	// run), so the store may pass the bound by the requests in flight.
	// Memory applies this order exactly up to 4,095 keys; above, it shards
	// its keys and evicts within the shard of the new key, so the order is
	// per shard (1/64 of the keys).
	MaxKeys int
	// MaxSequenceKeys bounds the attribute values a per-key sequence
	// remembers per route (default 100,000); the oldest is forgotten first
	// and starts over if it comes back.
	MaxSequenceKeys int
	// MaxItems bounds the items of all collections together (default
	// 100,000); past it Save and Seed fail with ErrFull.
	MaxItems int
	// JournalSize is how many requests the journal keeps (default
	// 10,000); the oldest go first.
	JournalSize int
	// MaxCollectionBytes bounds the bytes of the ids and bodies of all
	// collections together (default 256 MiB); past it Save and Seed fail
	// with ErrFull, as past MaxItems.
	MaxCollectionBytes int64
	// MaxIdempotencyBytes bounds the bytes of the stored answers
	// (status, headers and body) of all completed idempotency keys
	// (default 256 MiB); past it the least recently used completed keys
	// are forgotten, as past MaxKeys. Keys in flight are never forgotten.
	MaxIdempotencyBytes int64
	// MaxCounters bounds the names of seq counters (default 10,000): a
	// name can come from a request, and past the bound Next refuses a new
	// one with ErrCountersFull.
	MaxCounters int
	// MaxStates bounds the route states kept (default 100,000): a
	// state's key can come from a request (per:), and past the bound
	// States.Set refuses a new one with ErrStatesFull.
	MaxStates int
}

// Defaults of Options.
const (
	DefaultMaxKeys         = 100_000
	DefaultMaxSequenceKeys = 100_000
	DefaultMaxItems        = 100_000
	DefaultMaxCounters     = 10_000
	DefaultMaxStates       = 100_000
	// DefaultMaxCollectionBytes and DefaultMaxIdempotencyBytes are 256 MiB.
	DefaultMaxCollectionBytes  = 256 << 20
	DefaultMaxIdempotencyBytes = 256 << 20
	// DefaultTTL is how long a key is kept when ClaimOptions.TTL is zero:
	// 24 hours, as Stripe keeps its keys.
	DefaultTTL = 24 * time.Hour
)

// WithDefaults returns o with every zero field set to its default, for
// implementations in other packages (state/redis).
func (o Options) WithDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxKeys <= 0 {
		o.MaxKeys = DefaultMaxKeys
	}
	if o.MaxSequenceKeys <= 0 {
		o.MaxSequenceKeys = DefaultMaxSequenceKeys
	}
	if o.MaxItems <= 0 {
		o.MaxItems = DefaultMaxItems
	}
	if o.JournalSize <= 0 {
		o.JournalSize = DefaultJournalSize
	}
	if o.MaxCollectionBytes <= 0 {
		o.MaxCollectionBytes = DefaultMaxCollectionBytes
	}
	if o.MaxIdempotencyBytes <= 0 {
		o.MaxIdempotencyBytes = DefaultMaxIdempotencyBytes
	}
	if o.MaxCounters <= 0 {
		o.MaxCounters = DefaultMaxCounters
	}
	if o.MaxStates <= 0 {
		o.MaxStates = DefaultMaxStates
	}
	return o
}

// Idempotency stores the first response per idempotency key and decides,
// atomically, what each later request with the key gets. Implementations
// are safe for concurrent use. It follows the
// IETF draft "The Idempotency-Key HTTP Header Field" and Stripe's
// documented behaviour.
//
// The flow of one request: Claim; on New run the route, then Complete with
// the exact response (or Release it when the outcome must not be stored:
// a fault, a failed template, a 5xx before committing, a client abort with
// onClientAbort: discard). Complete and Release should get a context that
// the client's disconnect does not cancel (context.WithoutCancel), because
// the operation completes regardless of the client.
type Idempotency interface {
	// Claim decides what a request with key k and fingerprint fp gets:
	//   - New when the key is free (never seen, expired, or released):
	//     the key is now in flight and Claim.Token completes or releases it;
	//   - Replay when it completed with the same fingerprint: Claim.Response
	//     is the stored response, fetched in the same round trip;
	//   - Mismatch when it was claimed with another fingerprint, completed
	//     or not;
	//   - InFlight when it is still in flight with the same fingerprint.
	// With o.Wait an in-flight key is waited for instead: Claim returns
	// the Replay once the first request completes, or New when it was
	// released (this request then runs the route itself). If ctx ends
	// first, Claim returns InFlight and a nil error. (Memory blocks on a
	// channel closed on completion; a remote store may subscribe to the
	// key's completion or poll, within ctx.)
	Claim(ctx context.Context, k Key, fp Fingerprint, o ClaimOptions) (Claim, error)
	// Complete stores r as the key's response, if t still holds the key
	// (compare-and-set); otherwise it returns ErrNotClaimed. The store
	// copies r.Body and r.Header. The key expires the claim's TTL after
	// Complete.
	Complete(ctx context.Context, t Token, r Response) error
	// Release frees the key without storing anything, if t still holds
	// it; otherwise it returns ErrNotClaimed. A retry then runs the route.
	Release(ctx context.Context, t Token) error
	// Expire forgets keys now: those of group ("" for all groups) named
	// key ("" for all keys), in every scope. It returns how many it
	// forgot. A forgotten key in flight can no longer be completed.
	Expire(ctx context.Context, group, key string) (int, error)
	// List returns the keys that have not expired, oldest claim first,
	// and how many there are in all (before Offset and Limit).
	List(ctx context.Context, o ListOptions) ([]Record, int, error)
	// Reset forgets every key, like Expire(ctx, "", "").
	Reset(ctx context.Context) error
}

// Key names one idempotency key.
type Key struct {
	// Group is chosen by the scenario: routes of one group share keys
	// (by default a route is its own group).
	Group string
	// Scope separates clients that may pick the same key, e.g. the
	// Authorization header's value, as Stripe scopes keys by account.
	Scope string
	// Key is the Idempotency-Key header's value.
	Key string
}

// Fingerprint identifies a request's payload (a SHA-256 the server
// computes); the same key with another fingerprint is a mismatch.
type Fingerprint [32]byte

// ClaimOptions are the per-route settings of a claim.
type ClaimOptions struct {
	// TTL is how long the key is kept from its completion; zero means
	// DefaultTTL. Past it the key is new again. A key in flight never
	// expires (a route slower than its ttl must not run twice at once):
	// only Complete, Release or Expire end it.
	TTL time.Duration
	// Wait makes a claim of an in-flight key wait for the first request's
	// result (inFlight: wait) instead of returning InFlight.
	Wait bool
	// Header, when its capacity suffices, receives a replay's header
	// fields (Response.Header is then Header[:n]) instead of a new slice:
	// a caller that serves one request at a time keeps one and reuses it
	// (the server does, per connection). A store may ignore it.
	Header []Header
	// Arrived, when not zero, is when the request arrived by the real
	// clock (time.Now, as the caller read it): a store on the real clock
	// (Options.Now nil) may take it as the claim's time instead of
	// reading the clock again. Only the first look uses it; a claim that
	// waited reads the clock.
	Arrived time.Time
}

// Outcome is what Claim decided.
type Outcome uint8

// Outcomes of Claim.
const (
	New Outcome = iota + 1
	Replay
	Mismatch
	InFlight
)

// String returns the outcome's name, for logs.
func (o Outcome) String() string {
	switch o {
	case New:
		return "new"
	case Replay:
		return "replay"
	case Mismatch:
		return "mismatch"
	case InFlight:
		return "in-flight"
	}
	return "invalid"
}

// Claim is the result of Idempotency.Claim.
type Claim struct {
	Outcome Outcome
	// Token holds the key, for Complete or Release; set for New only.
	Token Token
	// Response is the stored response; set for Replay only. It is shared
	// with other replays: read it, never modify it.
	Response Response
}

// Token proves a claim: only its holder completes or releases the key.
type Token struct {
	Key Key
	// ID tells this claim of the key from earlier and later ones.
	ID uint64
	// at is where the memory store keeps the claim, so that Complete and
	// Release find it without hashing and looking up Key again; zero (a
	// Token another store or a caller made) has them look it up.
	at claimAt
}

// claimAt is the memory store's place of a claim: its key's hash, and
// its slot's index plus one (0: unknown).
type claimAt struct {
	hash uint64
	slot int32
}

// Response is a stored response, replayed byte for byte.
type Response struct {
	Status int
	Header []Header // in the order they are written
	Body   []byte
	// Packed, when not nil, is Header as PackHeader packs it, made once
	// for an answer stored again and again (a static route's): the memory
	// store copies it rather than packing Header on every completion.
	// Other stores may ignore it.
	Packed PackedHeader
}

// PackedHeader is header fields as the memory store keeps them with an
// answer (PackHeader).
type PackedHeader []byte

// PackHeader packs h as the memory store keeps an answer's header
// fields: their count (2 bytes), then per field its name's length (2),
// its value's length (4), the name and the value. It is safe for
// concurrent use.
func PackHeader(h []Header) PackedHeader {
	return appendHeader(make([]byte, 0, headerSize(h)), h)
}

// Header is one response header field.
type Header struct {
	Name, Value string
}

// ListOptions selects and pages the records of Idempotency.List.
type ListOptions struct {
	Group  string // "" for every group
	Offset int
	Limit  int // 0 for no limit
}

// Record describes one idempotency key, for the admin API.
type Record struct {
	Key     Key
	State   string // StateInFlight or StateCompleted
	Status  int    // the stored response's status; 0 while in flight
	Created time.Time
	Expires time.Time
	Replays int64 // how many times the stored response was replayed
}

// States of a Record.
const (
	StateInFlight  = "in-flight"
	StateCompleted = "completed"
)

// Sequences keeps the position of each request in its route's sequence.
// Routes are named by identity, which changes exactly when a route's
// definition does. Positions count from 0. Implementations are safe for
// concurrent use.
type Sequences interface {
	// Hit counts a request of route and returns its position among the
	// route's requests: the position in a shared sequence.
	Hit(ctx context.Context, route string) (int64, error)
	// HitKey counts a request of route whose sequence is per attribute
	// value, in one round trip: the route's hit and the value's position.
	HitKey(ctx context.Context, route, value string) (Position, error)
	// Count returns a route's hits and how many values have their own
	// position, for the admin API.
	Count(ctx context.Context, route string) (SequenceCount, error)
	// Reset forgets the positions and hits of route ("" for every route).
	Reset(ctx context.Context, route string) error
	// Retain forgets every route not in routes, so that a route whose
	// definition changed (and with it its identity) starts over.
	Retain(ctx context.Context, routes []string) error
}

// Position is where a request falls in a per-key sequence.
type Position struct {
	Hit int64 // among all the route's requests
	Key int64 // among the route's requests with the same attribute value
}

// SequenceCount describes one route's sequence state.
type SequenceCount struct {
	Hits int64
	Keys int // attribute values with their own position
}

// Counters are named counters shared by all routes (`seq "name"`).
// Implementations are safe for concurrent use.
type Counters interface {
	// Next increments the counter and returns its value: 1 on first use.
	// A new name past Options.MaxCounters fails with ErrCountersFull, one
	// longer than MaxCounterName with ErrCounterName.
	Next(ctx context.Context, name string) (int64, error)
	// List returns every counter by name (at most Options.MaxCounters).
	List(ctx context.Context) ([]Counter, error)
	// Reset forgets counter name ("" for all), so that Next returns 1
	// and the name no longer counts against the bound.
	Reset(ctx context.Context, name string) error
}

// CounterPager is implemented by the Counters of Memory and of
// state/redis: the admin listing reads one page at a time. It is apart
// from Counters so that Counters' other implementations stay valid.
type CounterPager interface {
	// Page returns the counters by name from offset, at most limit of
	// them (0 for all), and how many there are in all.
	Page(ctx context.Context, offset, limit int) ([]Counter, int, error)
}

// Usage is what a store holds, for the health endpoint.
type Usage struct {
	IdempotencyKeys  int   // keys kept, in flight or completed
	IdempotencyBytes int64 // of the stored answers, against MaxIdempotencyBytes
	CollectionBytes  int64 // of ids and bodies, against MaxCollectionBytes
}

// UsageReporter is implemented by Memory and by state/redis's Store. It is
// apart from Store so that Store's other implementations stay valid.
type UsageReporter interface {
	Usage(ctx context.Context) (Usage, error)
}

// Counter is one named counter's current value.
type Counter struct {
	Name  string
	Value int64
}

// Collections stores JSON bodies by (collection, id), in insertion order.
// The store copies saved bodies; bodies it returns must not be modified.
// Implementations are safe for concurrent use.
type Collections interface {
	// Save stores body under id, replacing (in place, keeping its
	// position) an item of that id. It reports whether the item is new,
	// and fails with ErrFull when a new item would pass the bound.
	Save(ctx context.Context, collection, id string, body []byte) (created bool, err error)
	// Load returns the item's body and whether it exists.
	Load(ctx context.Context, collection, id string) ([]byte, bool, error)
	// List returns a collection's items in insertion order from offset,
	// at most limit of them (0 for all), and how many there are in all.
	List(ctx context.Context, collection string, offset, limit int) ([]Item, int, error)
	// Delete removes an item and reports whether it existed.
	Delete(ctx context.Context, collection, id string) (bool, error)
	// Seed replaces a collection's items with items, in their order. It
	// fails with ErrFull, changing nothing, when they would pass the bound.
	Seed(ctx context.Context, collection string, items []Item) error
	// Reset empties collection ("" for all of them).
	Reset(ctx context.Context, collection string) error
	// Counts returns each non-empty collection's name and item count.
	Counts(ctx context.Context) ([]CollectionCount, error)
}

// Item is one stored body.
type Item struct {
	ID   string
	Body []byte
}

// CollectionCount describes one collection, for the admin API.
type CollectionCount struct {
	Name  string
	Items int
}
