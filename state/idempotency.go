package state

import (
	"context"
	"hash/maphash"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// memIdempotency is the in-memory idempotency store. Keys are spread over
// shards, each with its own lock, so that requests with different keys
// contend only when they hash to the same shard, and no lock is held
// while a route runs or a waiter waits.
type memIdempotency struct {
	now    func() time.Time
	seed   maphash.Seed
	hash   func(Key) uint64 // hashKey; tests make every key collide
	shards []*idemShard
	limit  int64
	// count is the keys of all shards: the bound is over the whole store,
	// while eviction happens in the shard that needs room.
	count atomic.Int64
	// bytes is the size of the stored answers of all shards, against
	// maxBytes: a completion past it evicts least recently used
	// completed keys, in its shard first, then in the others.
	bytes    atomic.Int64
	maxBytes int64
}

// idemShard holds the keys whose hash falls in it.
type idemShard struct {
	mu sync.Mutex // guards everything below and the entries
	// byHash finds a key by its 64-bit hash: a map slot is then 16 bytes
	// instead of 56 (three strings and a pointer), which is a fifth of the
	// memory a stored key costs. A key whose hash another key holds goes
	// to collided, which is empty but for a 1 in 10⁹ accident.
	byHash   map[uint64]*entry
	collided map[Key]*entry
	// waiting holds the channel of each key in flight that has waiters;
	// it is closed when the key completes or is freed, so waiters block,
	// never poll. Waiters are rare, so the channel is not in the entry.
	waiting map[*entry]chan struct{}
	// lru links the completed keys, most recently used after the
	// sentinel. Keys in flight are not in it: evicting one would let a
	// duplicate run, which is what this store exists to prevent.
	lru entry
	// byExpiry is a min-heap on expires, so the next key to expire is
	// found without a scan: for eviction (expired keys go first) and for
	// the sweep that frees expired keys nobody asks for again.
	byExpiry []*entry
	ids      uint64 // last claim ID handed out
	_        [64]byte
}

// entry is one key. Its shard's mu guards it. Its fields are sized so
// that it fits the 192-byte allocation class.
type entry struct {
	key              Key
	fp               Fingerprint
	id               uint64 // the claim's Token.ID
	created, expires int64  // Unix nanoseconds; expires is MaxInt64 in flight
	ttl              int64  // nanoseconds kept from completion
	resp             Response
	prev, next       *entry // in lru, once completed
	replays          uint32 // saturates
	at               int32  // index in byExpiry
	size             uint32 // of the stored answer, once completed
	completed        bool
}

// Sweeping a couple of expired keys per new claim frees them at least as
// fast as keys arrive, without a goroutine that would need an owner.
const sweepPerClaim = 2

func newMemIdempotency(now func() time.Time, limit int, maxBytes int64) *memIdempotency {
	// One shard keeps small stores exactly LRU (and their tests exact); a
	// store big enough to be busy gets enough shards for the cores.
	n := 1
	if limit >= 4096 {
		n = 64
	}
	s := &memIdempotency{now: now, seed: maphash.MakeSeed(), limit: int64(limit), maxBytes: maxBytes}
	s.hash = s.hashKey
	for range n {
		sh := &idemShard{byHash: map[uint64]*entry{}}
		sh.lru.next, sh.lru.prev = &sh.lru, &sh.lru
		s.shards = append(s.shards, sh)
	}
	return s
}

// shard returns k's hash and the shard it falls in.
func (s *memIdempotency) shard(k Key) (uint64, *idemShard) {
	h := s.hash(k)
	return h, s.shards[h%uint64(len(s.shards))]
}

func (s *memIdempotency) hashKey(k Key) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(k.Group)
	h.WriteByte(0)
	h.WriteString(k.Scope)
	h.WriteByte(0)
	h.WriteString(k.Key)
	return h.Sum64()
}

// lookup returns the entry of k, or nil. sh.mu is held.
func (sh *idemShard) lookup(h uint64, k Key) *entry {
	if e := sh.byHash[h]; e != nil && e.key == k {
		return e
	}
	if len(sh.collided) > 0 {
		return sh.collided[k]
	}
	return nil
}

func (s *memIdempotency) Claim(ctx context.Context, k Key, fp Fingerprint, o ClaimOptions) (Claim, error) {
	ttl := o.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	h, sh := s.shard(k)
	for {
		now := s.now().UnixNano()
		sh.mu.Lock()
		e := sh.lookup(h, k)
		if e != nil && e.expires <= now {
			s.remove(sh, e)
			e = nil
		}
		switch {
		case e == nil:
			id := s.insert(sh, h, k, fp, now, ttl)
			sh.mu.Unlock()
			return Claim{Outcome: New, Token: Token{Key: k, ID: id}}, nil
		case e.fp != fp:
			sh.mu.Unlock()
			return Claim{Outcome: Mismatch}, nil
		case e.completed:
			if e.replays < math.MaxUint32 {
				e.replays++
			}
			sh.unlink(e)
			sh.pushFront(e)
			r := e.resp
			sh.mu.Unlock()
			return Claim{Outcome: Replay, Response: r}, nil
		case !o.Wait:
			sh.mu.Unlock()
			return Claim{Outcome: InFlight}, nil
		}
		done := sh.waiting[e]
		if done == nil {
			if sh.waiting == nil {
				sh.waiting = map[*entry]chan struct{}{}
			}
			done = make(chan struct{})
			sh.waiting[e] = done
		}
		sh.mu.Unlock()
		select {
		case <-done:
			// Completed, released or forgotten: look again, which
			// replays, or claims the key for this request.
		case <-ctx.Done():
			return Claim{Outcome: InFlight}, nil
		}
	}
}

// insert adds a key in flight and returns its claim ID. sh.mu is held.
func (s *memIdempotency) insert(sh *idemShard, h uint64, k Key, fp Fingerprint, now int64, ttl time.Duration) uint64 {
	for i := 0; i < sweepPerClaim && len(sh.byExpiry) > 0 && sh.byExpiry[0].expires <= now; i++ {
		s.remove(sh, sh.byExpiry[0])
	}
	// Evicting up to two keys per new one brings a store that passed its
	// bound (by keys in flight, or by a shard with nothing to evict) back
	// within it.
	for range 2 {
		if s.count.Load() < s.limit || !s.evict(sh, now) {
			break
		}
	}
	// A key in flight never expires: expiry counts from completion (as
	// Stripe's 24 hours do), so a route that runs longer than its ttl
	// cannot run twice at once. Release, Expire or the request's end
	// free it.
	sh.ids++
	e := &entry{
		// Cloned: the caller's strings may be views of a reused buffer.
		key:     Key{Group: strings.Clone(k.Group), Scope: strings.Clone(k.Scope), Key: strings.Clone(k.Key)},
		fp:      fp,
		id:      sh.ids,
		created: now,
		expires: math.MaxInt64,
		ttl:     int64(ttl),
	}
	if sh.byHash[h] == nil {
		sh.byHash[h] = e
	} else {
		if sh.collided == nil {
			sh.collided = map[Key]*entry{}
		}
		sh.collided[e.key] = e
	}
	sh.push(e)
	s.count.Add(1)
	return e.id
}

// evict forgets the shard's next key to expire if it has expired, else its
// least recently used completed key, and reports whether there was one.
// sh.mu is held.
func (s *memIdempotency) evict(sh *idemShard, now int64) bool {
	switch {
	case len(sh.byExpiry) > 0 && sh.byExpiry[0].expires <= now:
		s.remove(sh, sh.byExpiry[0])
	case sh.lru.prev != &sh.lru:
		s.remove(sh, sh.lru.prev)
	default:
		return false
	}
	return true
}

// remove forgets e and wakes its waiters. sh.mu is held.
func (s *memIdempotency) remove(sh *idemShard, e *entry) {
	if h := s.hash(e.key); sh.byHash[h] == e {
		delete(sh.byHash, h)
	} else {
		delete(sh.collided, e.key)
	}
	sh.heapRemove(e)
	if e.completed {
		sh.unlink(e)
		s.bytes.Add(-int64(e.size))
	}
	sh.wake(e)
	s.count.Add(-1)
}

// wake releases the waiters of e. sh.mu is held.
func (sh *idemShard) wake(e *entry) {
	if done, ok := sh.waiting[e]; ok {
		close(done)
		delete(sh.waiting, e)
	}
}

func (s *memIdempotency) Complete(_ context.Context, t Token, r Response) error {
	// Copy before locking: the caller may reuse its buffers, and the
	// copy need not hold up other keys of the shard.
	r.Header = slices.Clone(r.Header)
	r.Body = slices.Clone(r.Body)
	size := answerSize(r)
	h, sh := s.shard(t.Key)
	sh.mu.Lock()
	e := sh.lookup(h, t.Key)
	if e == nil || e.id != t.ID || e.completed {
		sh.mu.Unlock()
		return ErrNotClaimed
	}
	e.resp = r
	e.completed = true
	e.size = uint32(min(size, math.MaxUint32))
	e.expires = expiresAt(s.now().UnixNano(), e.ttl)
	sh.fix(e)
	sh.pushFront(e)
	sh.wake(e)
	s.bytes.Add(int64(e.size))
	// Past the byte bound: the least recently used completed keys go,
	// in this shard first, then in the others, one shard locked at a
	// time, and this answer only when nothing else is left (it is larger
	// than the whole bound).
	for s.bytes.Load() > s.maxBytes && sh.lru.prev != &sh.lru && sh.lru.prev != e {
		s.remove(sh, sh.lru.prev)
	}
	sh.mu.Unlock()
	for i := 1; i < len(s.shards) && s.bytes.Load() > s.maxBytes; i++ {
		other := s.shards[(h+uint64(i))%uint64(len(s.shards))]
		other.mu.Lock()
		for s.bytes.Load() > s.maxBytes && other.lru.prev != &other.lru {
			s.remove(other, other.lru.prev)
		}
		other.mu.Unlock()
	}
	if s.bytes.Load() > s.maxBytes {
		sh.mu.Lock()
		if sh.lookup(h, t.Key) == e && e.completed {
			s.remove(sh, e)
		}
		sh.mu.Unlock()
	}
	return nil
}

// answerSize is what a stored answer counts against the byte bound.
func answerSize(r Response) int {
	n := len(r.Body) + 8 // the status and the header count
	for _, h := range r.Header {
		n += len(h.Name) + len(h.Value) + 4
	}
	return n
}

// usage returns the keys kept and the bytes of their answers.
func (s *memIdempotency) usage() (keys int, bytes int64) {
	return int(s.count.Load()), s.bytes.Load()
}

func (s *memIdempotency) Release(_ context.Context, t Token) error {
	h, sh := s.shard(t.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.lookup(h, t.Key)
	if e == nil || e.id != t.ID || e.completed {
		return ErrNotClaimed
	}
	s.remove(sh, e)
	return nil
}

func (s *memIdempotency) Expire(_ context.Context, group, key string) (int, error) {
	n := 0
	for _, sh := range s.shards {
		sh.mu.Lock()
		for _, e := range sh.entries() {
			if (group == "" || e.key.Group == group) && (key == "" || e.key.Key == key) {
				s.remove(sh, e)
				n++
			}
		}
		sh.mu.Unlock()
	}
	return n, nil
}

func (s *memIdempotency) Reset(ctx context.Context) error {
	_, err := s.Expire(ctx, "", "")
	return err
}

func (s *memIdempotency) List(_ context.Context, o ListOptions) ([]Record, int, error) {
	now := s.now().UnixNano()
	var out []Record
	for _, sh := range s.shards {
		sh.mu.Lock()
		for _, e := range sh.byExpiry {
			if e.expires <= now || (o.Group != "" && e.key.Group != o.Group) {
				continue
			}
			r := Record{
				Key: e.key, State: StateInFlight,
				Created: time.Unix(0, e.created), Expires: time.Unix(0, e.expires),
				Replays: int64(e.replays),
			}
			if e.completed {
				r.State, r.Status = StateCompleted, e.resp.Status
			} else {
				// In flight: it would expire ttl after completing now.
				r.Expires = time.Unix(0, expiresAt(now, e.ttl))
			}
			out = append(out, r)
		}
		sh.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.Created.Equal(b.Created) {
			return a.Created.Before(b.Created)
		}
		if a.Key.Group != b.Key.Group {
			return a.Key.Group < b.Key.Group
		}
		if a.Key.Scope != b.Key.Scope {
			return a.Key.Scope < b.Key.Scope
		}
		return a.Key.Key < b.Key.Key
	})
	total := len(out)
	from := min(max(o.Offset, 0), total)
	to := total
	if o.Limit > 0 {
		to = min(from+o.Limit, total)
	}
	return append([]Record{}, out[from:to]...), total, nil
}

// entries returns a copy of the shard's entries, to remove some while
// going through them. sh.mu is held.
func (sh *idemShard) entries() []*entry { return slices.Clone(sh.byExpiry) }

func (sh *idemShard) pushFront(e *entry) {
	e.prev, e.next = &sh.lru, sh.lru.next
	e.next.prev = e
	sh.lru.next = e
}

func (sh *idemShard) unlink(e *entry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (sh *idemShard) push(e *entry) {
	e.at = int32(len(sh.byExpiry))
	sh.byExpiry = append(sh.byExpiry, e)
	sh.up(int(e.at))
}

// fix moves e to its place in byExpiry after its expires changed.
func (sh *idemShard) fix(e *entry) {
	if !sh.down(int(e.at)) {
		sh.up(int(e.at))
	}
}

// expiresAt is now + ttl, saturating.
func expiresAt(now, ttl int64) int64 {
	if ttl >= math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + ttl
}

func (sh *idemShard) heapRemove(e *entry) {
	h := sh.byExpiry
	i, last := int(e.at), len(h)-1
	if i != last {
		sh.swap(i, last)
	}
	h[last] = nil
	sh.byExpiry = h[:last]
	if i != last {
		if !sh.down(i) {
			sh.up(i)
		}
	}
}

func (sh *idemShard) swap(i, j int) {
	h := sh.byExpiry
	h[i], h[j] = h[j], h[i]
	h[i].at, h[j].at = int32(i), int32(j)
}

func (sh *idemShard) up(i int) {
	h := sh.byExpiry
	for i > 0 {
		p := (i - 1) / 2
		if h[p].expires <= h[i].expires {
			return
		}
		sh.swap(i, p)
		i = p
	}
}

// down moves h[i] down to its place and reports whether it moved.
func (sh *idemShard) down(i int) bool {
	h := sh.byExpiry
	start := i
	for {
		c := 2*i + 1
		if c >= len(h) {
			break
		}
		if r := c + 1; r < len(h) && h[r].expires < h[c].expires {
			c = r
		}
		if h[i].expires <= h[c].expires {
			break
		}
		sh.swap(i, c)
		i = c
	}
	return i > start
}
