package state

import (
	"context"
	"encoding/binary"
	"hash/maphash"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// memIdempotency is the in-memory idempotency store. Keys are spread over
// shards, each with its own lock, so that requests with different keys
// contend only when they hash to the same shard, and no lock is held
// while a route runs or a waiter waits.
//
// What it keeps is free of pointers, so that a store of 100,000 answers
// gives the garbage collector almost nothing to trace (issue 14): each
// key is a slot, a struct of numbers in one slice per shard, found by
// its 64-bit hash in a map of integers; its key and its answer (status,
// headers and body, encoded as one run of bytes) live in the shard's
// arena, a few large byte chunks that hold no pointers. Links between
// slots (the LRU list, the expiry queues) are slot indices. An answer
// whose body is the bytes of an item just saved (a create's answer is the
// object it stored) keeps no copy of them: it names the item (slot.shared),
// which copies its body into the answer before replacing or dropping it
// (memCollections.unshare), so that a replay gives the first answer.
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
	// realClock: now is time.Now, so a claim may take the caller's
	// reading of it (ClaimOptions.Arrived).
	realClock bool
	// fence refuses a completion from before a reset (fence.go).
	fence *fence
	// cols is the collections whose items an answer may share its body
	// with (nil: every answer keeps its own).
	cols *memCollections
}

// idemShard holds the keys whose hash falls in it.
type idemShard struct {
	mu sync.Mutex // guards everything below
	// byHash finds a key's slot by its 64-bit hash. A key whose hash
	// another key holds goes to collided, by its encoded key, which is
	// empty but for a 1 in 10⁹ accident.
	byHash   map[uint64]int32
	collided map[string]int32
	slots    []slot
	free     []int32 // indices of unused slots
	// waiting holds the channel of each slot in flight that has
	// waiters; it is closed when the key completes or is freed, so
	// waiters block, never poll. Waiters are rare, so the channel is not
	// in the slot.
	waiting map[int32]chan struct{}
	// head and tail link the completed keys, most recently used at head
	// (-1: none). Keys in flight are not in it: evicting one would let a
	// duplicate run, which is what this store exists to prevent.
	head, tail int32
	// queues link the completed keys by expiry, one queue per ttl, so
	// that the next key to expire is found without a scan: for eviction
	// (expired keys go first) and for the sweep that frees expired keys
	// nobody asks for again. Keys of one ttl expire in the order they
	// complete, so a key joins its queue at the tail and leaves from
	// anywhere in O(1), where a heap sifted through cold memory on every
	// completion and eviction. A shard has as many queues as ttls in use
	// (one per route with idempotency, at most); an empty one is reused.
	queues []expiryQueue
	arena  arena
	ids    uint64 // last claim ID handed out
	_      [64]byte
}

// expiryQueue is the completed keys of one ttl, soonest to expire at
// head, linked through their slots' eprev and enext (-1: none).
type expiryQueue struct {
	ttl        int64
	head, tail int32
}

// slot is one key. Its shard's mu guards it. It holds no pointers.
type slot struct {
	hash             uint64
	fp               Fingerprint
	id               uint64 // the claim's Token.ID; 0 for an unused slot
	created, expires int64  // Unix nanoseconds; expires is MaxInt64 in flight
	ttl              int64  // nanoseconds kept from completion
	key, answer      span   // in the arena; answer is empty in flight
	prev, next       int32  // in the LRU list, once completed
	eprev, enext     int32  // in queues[queue], once completed
	queue            int32  // index in queues, once completed
	replays          uint32 // saturates
	completed        bool
	// shared: the answer's body is not in answer but is the body of
	// item of the collection numbered col (memCollections.findSaved),
	// bodyN bytes long, until the item copies it here (own).
	shared bool
	col    uint32
	item   int32
	bodyN  uint32
}

// answerSize is what slot e's answer counts against the byte bound: the
// same whether or not its body is shared.
func (e *slot) answerSize() int64 {
	if e.shared {
		return int64(e.answer.n) + int64(e.bodyN)
	}
	return int64(e.answer.n)
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
		s.shards = append(s.shards, &idemShard{byHash: map[uint64]int32{}, head: -1, tail: -1})
	}
	return s
}

// shard returns k's hash and the shard it falls in.
func (s *memIdempotency) shard(k Key) (uint64, *idemShard) {
	h := s.hash(k)
	return h, s.shards[h%uint64(len(s.shards))]
}

// refOf names the answer in slot i, of the claim id, of the key whose
// hash is h (shard): what an item whose body it shares holds.
func (s *memIdempotency) refOf(h uint64, i int32, id uint64) answerRef {
	return answerRef{claim: id, slot: i, shard: int32(h % uint64(len(s.shards)))}
}

func (s *memIdempotency) hashKey(k Key) uint64 {
	// The hash is of the bytes group\0scope\0key, whether written at once
	// or in pieces (maphash's contract); at once is cheaper, and the usual
	// key fits a buffer on the stack.
	var buf [256]byte
	if len(k.Group)+len(k.Scope)+len(k.Key)+2 <= len(buf) {
		return maphash.Bytes(s.seed, encodeKey(buf[:0], k))
	}
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(k.Group)
	h.WriteByte(0)
	h.WriteString(k.Scope)
	h.WriteByte(0)
	h.WriteString(k.Key)
	return h.Sum64()
}

// encodeKey appends k as group\0scope\0key. Groups and scopes hold no
// NUL (the server makes them), keys may: the key is last.
func encodeKey(b []byte, k Key) []byte {
	b = append(b, k.Group...)
	b = append(b, 0)
	b = append(b, k.Scope...)
	b = append(b, 0)
	return append(b, k.Key...)
}

// keyEquals reports whether the encoded key b is k, without allocating.
func keyEquals(b []byte, k Key) bool {
	n := len(k.Group) + len(k.Scope) + len(k.Key) + 2
	if len(b) != n {
		return false
	}
	g, rest := b[:len(k.Group)], b[len(k.Group):]
	if string(g) != k.Group || rest[0] != 0 {
		return false
	}
	rest = rest[1:]
	if string(rest[:len(k.Scope)]) != k.Scope || rest[len(k.Scope)] != 0 {
		return false
	}
	return string(rest[len(k.Scope)+1:]) == k.Key
}

// decodeKey is the inverse of encodeKey; the strings are copies.
func decodeKey(b []byte) Key {
	parts := strings.SplitN(string(b), "\x00", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return Key{Group: parts[0], Scope: parts[1], Key: parts[2]}
}

// tokenShard returns the hash of t's key and the shard it falls in:
// as Claim found them, when t carries its place.
func (s *memIdempotency) tokenShard(t Token) (uint64, *idemShard) {
	if t.at.slot > 0 {
		return t.at.hash, s.shards[t.at.hash%uint64(len(s.shards))]
	}
	return s.shard(t.Key)
}

// claimed returns the slot of claim t, whose key's hash is h, or -1 if
// the claim is gone: its place when t carries one (a claim's slot keeps
// its index while the claim lives, and claim IDs are unique in a
// shard), else the slot of its key. The caller checks that the slot is
// t's claim (its ID). sh.mu is held.
func (sh *idemShard) claimed(h uint64, t Token) int32 {
	if i := t.at.slot - 1; i >= 0 {
		if int(i) < len(sh.slots) && sh.slots[i].id == t.ID && sh.slots[i].hash == h {
			return i
		}
		return -1
	}
	i, _ := sh.lookup(h, t.Key)
	return i
}

// lookup returns the slot index of k, or -1; taken reports whether a key
// (k or another) holds hash h in byHash, as insert needs to know. sh.mu
// is held.
func (sh *idemShard) lookup(h uint64, k Key) (i int32, taken bool) {
	i, taken = sh.byHash[h]
	if taken && keyEquals(sh.arena.bytes(sh.slots[i].key), k) {
		return i, true
	}
	if len(sh.collided) > 0 {
		var buf [128]byte
		if i, ok := sh.collided[string(encodeKey(buf[:0], k))]; ok {
			return i, taken
		}
	}
	return -1, taken
}

func (s *memIdempotency) Claim(ctx context.Context, k Key, fp Fingerprint, o ClaimOptions) (Claim, error) {
	ttl := o.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	h, sh := s.shard(k)
	arrived := o.Arrived
	if !s.realClock {
		arrived = time.Time{}
	}
	counted := false // a replay counted, whose shared body had moved
	for {
		var now int64
		if !arrived.IsZero() {
			now, arrived = arrived.UnixNano(), time.Time{} // the first look only
		} else {
			now = s.now().UnixNano()
		}
		sh.mu.Lock()
		i, taken := sh.lookup(h, k)
		if i >= 0 && sh.slots[i].expires <= now {
			s.remove(sh, i)
			i = -1
			_, taken = sh.byHash[h]
		}
		if i < 0 {
			i, id := s.insert(sh, h, k, fp, now, ttl, taken)
			sh.mu.Unlock()
			return Claim{Outcome: New, Token: Token{Key: k, ID: id, at: claimAt{hash: h, slot: i + 1}}}, nil
		}
		e := &sh.slots[i]
		switch {
		case e.fp != fp:
			sh.mu.Unlock()
			return Claim{Outcome: Mismatch}, nil
		case e.completed:
			if e.replays < math.MaxUint32 && !counted {
				e.replays++
			}
			sh.unlink(i)
			sh.pushFront(i)
			r := decodeAnswer(sh.arena.bytes(e.answer), o.Header)
			if !e.shared {
				sh.mu.Unlock()
				return Claim{Outcome: Replay, Response: r}, nil
			}
			// The body is an item's, read under the collections' lock,
			// never taken inside a shard's (unshare takes them the
			// other way round).
			ref, col, item := s.refOf(h, i, e.id), e.col, e.item
			sh.mu.Unlock()
			if body, ok := s.cols.sharedBody(col, item, ref); ok {
				r.Body = body
				return Claim{Outcome: Replay, Response: r}, nil
			}
			counted = true // the item copied it into the answer: look again
			continue
		case !o.Wait:
			sh.mu.Unlock()
			return Claim{Outcome: InFlight}, nil
		}
		done := sh.waiting[i]
		if done == nil {
			if sh.waiting == nil {
				sh.waiting = map[int32]chan struct{}{}
			}
			done = make(chan struct{})
			sh.waiting[i] = done
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

// insert adds a key in flight and returns its slot and claim ID; taken
// says whether another key holds its hash h in byHash (lookup). sh.mu is
// held.
func (s *memIdempotency) insert(sh *idemShard, h uint64, k Key, fp Fingerprint, now int64, ttl time.Duration, taken bool) (int32, uint64) {
	for range sweepPerClaim {
		i := sh.expired(now)
		if i < 0 {
			break
		}
		s.remove(sh, i)
	}
	// Evicting up to two keys per new one brings a store that passed its
	// bound (by keys in flight, or by a shard with nothing to evict) back
	// within it.
	for range 2 {
		if s.count.Load() < s.limit || !s.evict(sh, now) {
			break
		}
	}
	sh.compact()
	sh.ids++
	var i int32
	if n := len(sh.free); n > 0 {
		i, sh.free = sh.free[n-1], sh.free[:n-1]
	} else {
		i = int32(len(sh.slots))
		sh.slots = append(sh.slots, slot{})
	}
	// A key in flight never expires: expiry counts from completion (as
	// Stripe's 24 hours do), so a route that runs longer than its ttl
	// cannot run twice at once. Release, Expire or the request's end
	// free it. The key is copied into the arena: the caller's strings
	// may be views of a reused buffer.
	var buf [128]byte
	sh.slots[i] = slot{
		hash: h, fp: fp, id: sh.ids, created: now, expires: math.MaxInt64, ttl: int64(ttl),
		key: sh.arena.add(encodeKey(buf[:0], k)), prev: -1, next: -1, eprev: -1, enext: -1, queue: -1,
	}
	if taken {
		_, taken = sh.byHash[h] // the key that held it may have gone above
	}
	if !taken {
		sh.byHash[h] = i
	} else {
		if sh.collided == nil {
			sh.collided = map[string]int32{}
		}
		sh.collided[string(encodeKey(buf[:0], k))] = i
	}
	s.count.Add(1)
	return i, sh.ids
}

// evict forgets the shard's next key to expire if it has expired, else its
// least recently used completed key, and reports whether there was one.
// sh.mu is held.
func (s *memIdempotency) evict(sh *idemShard, now int64) bool {
	switch i := sh.expired(now); {
	case i >= 0:
		s.remove(sh, i)
	case sh.tail >= 0:
		s.remove(sh, sh.tail)
	default:
		return false
	}
	return true
}

// remove forgets slot i and wakes its waiters. sh.mu is held.
func (s *memIdempotency) remove(sh *idemShard, i int32) {
	e := &sh.slots[i]
	// Without collided keys, every key is in byHash under its hash.
	if len(sh.collided) == 0 {
		delete(sh.byHash, e.hash)
	} else if j, ok := sh.byHash[e.hash]; ok && j == i {
		delete(sh.byHash, e.hash)
	} else {
		delete(sh.collided, string(sh.arena.bytes(e.key)))
	}
	if e.completed {
		sh.dequeue(i)
		sh.unlink(i)
		s.bytes.Add(-e.answerSize())
	}
	sh.arena.drop(e.key)
	sh.arena.drop(e.answer)
	sh.wake(i)
	*e = slot{}
	sh.free = append(sh.free, i)
	s.count.Add(-1)
}

// wake releases the waiters of slot i. sh.mu is held.
func (sh *idemShard) wake(i int32) {
	if done, ok := sh.waiting[i]; ok {
		close(done)
		delete(sh.waiting, i)
	}
}

func (s *memIdempotency) Complete(ctx context.Context, t Token, r Response) error {
	// The answer is encoded straight into the arena: one copy of the
	// caller's buffers (which it may reuse), no allocation of its own;
	// none of its body when an item just saved is the same bytes (a
	// create's answer): the answer shares the item's.
	h, sh := s.tokenShard(t)
	var col *collection
	item := int32(-1)
	if s.cols != nil && len(r.Body) >= sharedMin {
		s.cols.mu.Lock() // before the shard's, as unshare takes them
		if col, item = s.cols.findSaved(r.Body); col == nil {
			s.cols.mu.Unlock()
		}
	}
	sh.mu.Lock()
	i := sh.claimed(h, t)
	admitted := s.fence.admits(ctx)
	if !admitted || i < 0 || sh.slots[i].id != t.ID || sh.slots[i].completed {
		if col != nil {
			s.cols.mu.Unlock()
		}
		if !admitted {
			// A claim made after the reset by a request that arrived
			// before it: freed, or it would stay in flight.
			if i >= 0 && sh.slots[i].id == t.ID && !sh.slots[i].completed {
				s.remove(sh, i)
			}
			sh.mu.Unlock()
			return ErrFenced
		}
		sh.mu.Unlock()
		return ErrNotClaimed
	}
	sh.compact()
	e := &sh.slots[i]
	if col != nil {
		e.answer = sh.arena.addAnswer(Response{Status: r.Status, Header: r.Header, Packed: r.Packed})
		e.shared, e.col, e.item, e.bodyN = true, col.num, item, uint32(len(r.Body))
		col.items[item].shared = s.refOf(h, i, e.id)
		s.cols.mu.Unlock()
	} else {
		e.answer = sh.arena.addAnswer(r)
	}
	e.completed = true
	e.expires = expiresAt(s.now().UnixNano(), e.ttl)
	sh.enqueue(i)
	sh.pushFront(i)
	sh.wake(i)
	s.bytes.Add(e.answerSize())
	// Past the byte bound: the least recently used completed keys go,
	// in this shard first, then in the others, one shard locked at a
	// time, and this answer only when nothing else is left (it is larger
	// than the whole bound).
	for s.bytes.Load() > s.maxBytes && sh.tail >= 0 && sh.tail != i {
		s.remove(sh, sh.tail)
	}
	sh.mu.Unlock()
	for j := 1; j < len(s.shards) && s.bytes.Load() > s.maxBytes; j++ {
		other := s.shards[(h+uint64(j))%uint64(len(s.shards))]
		other.mu.Lock()
		for s.bytes.Load() > s.maxBytes && other.tail >= 0 {
			s.remove(other, other.tail)
		}
		other.mu.Unlock()
	}
	if s.bytes.Load() > s.maxBytes {
		sh.mu.Lock()
		if j := sh.claimed(h, t); j >= 0 && sh.slots[j].id == t.ID && sh.slots[j].completed {
			s.remove(sh, j)
		}
		sh.mu.Unlock()
	}
	return nil
}

// own makes the answer that ref names, which shares item i of the
// collection numbered num, keep body, the item's, as its own: before the
// item's body is replaced or dropped. s.cols.mu is held.
func (s *memIdempotency) own(ref answerRef, num uint32, i int32, body []byte) {
	sh := s.shards[ref.shard]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := &sh.slots[ref.slot]
	if e.id != ref.claim || !e.shared || e.col != num || e.item != i {
		return // the key was forgotten since
	}
	sh.compact()
	old := sh.arena.bytes(e.answer)
	sp, b := sh.arena.reserve(len(old) + len(body))
	sh.arena.commit(append(append(b, old...), body...))
	sh.arena.drop(e.answer)
	e.answer, e.shared, e.col, e.item, e.bodyN = sp, false, 0, 0, 0
}

// addAnswer adds r encoded as one run of bytes: status (2 bytes), then
// its header fields as PackHeader packs them (r.Packed, when set), then
// the body. The byte bound counts this length.
func (a *arena) addAnswer(r Response) span {
	n := 2 + len(r.Body)
	if r.Packed != nil {
		n += len(r.Packed)
	} else {
		n += headerSize(r.Header)
	}
	sp, b := a.reserve(n)
	b = binary.LittleEndian.AppendUint16(b, uint16(r.Status))
	if r.Packed != nil {
		b = append(b, r.Packed...)
	} else {
		b = appendHeader(b, r.Header)
	}
	a.commit(append(b, r.Body...))
	return sp
}

// headerSize is the length of h packed (PackHeader).
func headerSize(h []Header) int {
	n := 2
	for _, f := range h[:min(len(h), math.MaxUint16)] {
		n += 6 + min(len(f.Name), math.MaxUint16) + len(f.Value)
	}
	return n
}

// appendHeader appends h packed (PackHeader): at most 65,535 fields, a
// name cut to 65,535 bytes.
func appendHeader(b []byte, h []Header) []byte {
	h = h[:min(len(h), math.MaxUint16)]
	b = binary.LittleEndian.AppendUint16(b, uint16(len(h)))
	for _, f := range h {
		name := f.Name[:min(len(f.Name), math.MaxUint16)]
		b = binary.LittleEndian.AppendUint16(b, uint16(len(name)))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(f.Value)))
		b = append(b, name...)
		b = append(b, f.Value...)
	}
	return b
}

// decodeAnswer reads what encodeAnswer wrote. The header strings and the
// body are views of b, which the arena never writes again: a replay
// allocates only its header slice, and not that when scratch has room.
func decodeAnswer(b []byte, scratch []Header) Response {
	if len(b) < 4 {
		return Response{}
	}
	r := Response{Status: int(binary.LittleEndian.Uint16(b))}
	n := int(binary.LittleEndian.Uint16(b[2:]))
	b = b[4:]
	if n > 0 {
		if cap(scratch) >= n {
			r.Header = scratch[:n]
		} else {
			r.Header = make([]Header, n)
		}
		for i := range r.Header {
			nl, vl := int(binary.LittleEndian.Uint16(b)), int(binary.LittleEndian.Uint32(b[2:]))
			b = b[6:]
			r.Header[i] = Header{Name: view(b[:nl]), Value: view(b[nl : nl+vl])}
			b = b[nl+vl:]
		}
	}
	if len(b) > 0 {
		r.Body = b[:len(b):len(b)]
	}
	return r
}

// view is b as a string without a copy; b must never change.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// usage returns the keys kept and the bytes of their answers.
func (s *memIdempotency) usage() (keys int, bytes int64) {
	return int(s.count.Load()), s.bytes.Load()
}

func (s *memIdempotency) Release(_ context.Context, t Token) error {
	h, sh := s.tokenShard(t)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	i := sh.claimed(h, t)
	if i < 0 || sh.slots[i].id != t.ID || sh.slots[i].completed {
		return ErrNotClaimed
	}
	s.remove(sh, i)
	return nil
}

func (s *memIdempotency) Expire(_ context.Context, group, key string) (int, error) {
	n := 0
	for _, sh := range s.shards {
		sh.mu.Lock()
		var slots []int32
		for i := range sh.slots {
			if sh.slots[i].id != 0 {
				slots = append(slots, int32(i))
			}
		}
		for _, i := range slots {
			k := decodeKey(sh.arena.bytes(sh.slots[i].key))
			if (group == "" || k.Group == group) && (key == "" || k.Key == key) {
				s.remove(sh, i)
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
		for i := range sh.slots {
			e := &sh.slots[i]
			if e.id == 0 || e.expires <= now {
				continue
			}
			k := decodeKey(sh.arena.bytes(e.key))
			if o.Group != "" && k.Group != o.Group {
				continue
			}
			r := Record{
				Key: k, State: StateInFlight,
				Created: time.Unix(0, e.created), Expires: time.Unix(0, e.expires),
				Replays: int64(e.replays),
			}
			if e.completed {
				r.State, r.Status = StateCompleted, int(binary.LittleEndian.Uint16(sh.arena.bytes(e.answer)))
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
	from, to := pageBounds(o.Offset, o.Limit, total)
	return append([]Record{}, out[from:to]...), total, nil
}

func (sh *idemShard) pushFront(i int32) {
	e := &sh.slots[i]
	e.prev, e.next = -1, sh.head
	if sh.head >= 0 {
		sh.slots[sh.head].prev = i
	} else {
		sh.tail = i
	}
	sh.head = i
}

func (sh *idemShard) unlink(i int32) {
	e := &sh.slots[i]
	if e.prev >= 0 {
		sh.slots[e.prev].next = e.next
	} else {
		sh.head = e.next
	}
	if e.next >= 0 {
		sh.slots[e.next].prev = e.prev
	} else {
		sh.tail = e.prev
	}
	e.prev, e.next = -1, -1
}

// enqueue puts completed slot i in the expiry queue of its ttl: at the
// tail, unless a wall clock that went back makes it expire before keys
// already queued.
func (sh *idemShard) enqueue(i int32) {
	e := &sh.slots[i]
	q := -1
	for j := range sh.queues {
		if sh.queues[j].ttl == e.ttl {
			q = j
			break
		}
		if q < 0 && sh.queues[j].head < 0 {
			q = j // empty: reused if no queue has this ttl
		}
	}
	if q < 0 || sh.queues[q].ttl != e.ttl && sh.queues[q].head >= 0 {
		q = len(sh.queues)
		sh.queues = append(sh.queues, expiryQueue{head: -1, tail: -1})
	}
	qu := &sh.queues[q]
	qu.ttl = e.ttl
	e.queue = int32(q)
	after := qu.tail // the slot i goes after; -1: at head
	for after >= 0 && sh.slots[after].expires > e.expires {
		after = sh.slots[after].eprev
	}
	e.eprev = after
	if after >= 0 {
		e.enext = sh.slots[after].enext
		sh.slots[after].enext = i
	} else {
		e.enext = qu.head
		qu.head = i
	}
	if e.enext >= 0 {
		sh.slots[e.enext].eprev = i
	} else {
		qu.tail = i
	}
}

// dequeue takes completed slot i out of its expiry queue.
func (sh *idemShard) dequeue(i int32) {
	e := &sh.slots[i]
	qu := &sh.queues[e.queue]
	if e.eprev >= 0 {
		sh.slots[e.eprev].enext = e.enext
	} else {
		qu.head = e.enext
	}
	if e.enext >= 0 {
		sh.slots[e.enext].eprev = e.eprev
	} else {
		qu.tail = e.eprev
	}
	e.eprev, e.enext, e.queue = -1, -1, -1
}

// expired returns the slot that expires first if it has expired by now,
// else -1: the heads of the queues are the candidates.
func (sh *idemShard) expired(now int64) int32 {
	first, at := int32(-1), now
	for _, qu := range sh.queues {
		if qu.head >= 0 && sh.slots[qu.head].expires <= at {
			first, at = qu.head, sh.slots[qu.head].expires
		}
	}
	return first
}

// expiresAt is now + ttl, saturating.
func expiresAt(now, ttl int64) int64 {
	if ttl >= math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + ttl
}

// compact moves the live bytes of the shard's arena to fresh chunks when
// more than a third of it is dropped bytes, so that an arena under
// eviction holds at most 1.5 times what it keeps. Under the usual
// eviction, oldest first, the arena lets go of each chunk as its last
// key leaves (drop), so there is little to compact. sh.mu is held.
func (sh *idemShard) compact() {
	a := &sh.arena
	if !a.wasteful() {
		return
	}
	var fresh arena
	for i := range sh.slots {
		e := &sh.slots[i]
		if e.id == 0 {
			continue
		}
		e.key = fresh.add(a.bytes(e.key))
		if e.answer.n > 0 {
			e.answer = fresh.add(a.bytes(e.answer))
		}
	}
	*a = fresh
}

// compactMin is the dropped bytes below which an arena is not compacted.
const compactMin = 64 << 10

// arena holds bytes in a few large chunks, so that the stored keys and
// answers are not objects the garbage collector traces one by one.
// Bytes once added are never written again: views of them (replayed
// bodies and headers) stay valid, even after a compaction, which copies
// into new chunks and leaves the old ones to whoever still views them,
// or after a chunk is let go.
type arena struct {
	chunks [][]byte // chunks[i] is chunk number first+i; nil once let go
	held   []int64  // held[i]: the bytes of chunks[i] not dropped
	first  int32
	live   int64 // bytes of spans not dropped
	used   int64 // bytes of the chunks not let go
}

// span is a run of bytes in an arena: chunk is the chunk's number, which
// stays the same while chunks before it are let go.
type span struct {
	chunk int32
	off   uint32
	n     uint32
}

// Chunk sizes grow from arenaFirst to arenaMax, so that a shard that
// holds little costs little; a run larger than arenaMax gets its own.
const (
	arenaFirst = 1 << 10
	arenaMax   = 64 << 10
)

func (a *arena) add(b []byte) span {
	if len(b) == 0 {
		return span{}
	}
	sp, dst := a.reserve(len(b))
	a.commit(append(dst, b...))
	return sp
}

// reserve returns the span of the next n bytes and the last chunk to
// append exactly those n bytes to; commit then stores the chunk.
func (a *arena) reserve(n int) (span, []byte) {
	last := len(a.chunks) - 1
	if last < 0 || cap(a.chunks[last])-len(a.chunks[last]) < n {
		size := arenaFirst
		if last >= 0 {
			size = min(2*cap(a.chunks[last]), arenaMax)
			if a.held[last] == 0 { // emptied while it was being filled
				a.letGo(last)
			}
		}
		a.chunks = append(a.chunks, make([]byte, 0, max(size, n)))
		a.held = append(a.held, 0)
		last = len(a.chunks) - 1
	}
	c := a.chunks[last]
	a.live += int64(n)
	a.used += int64(n)
	a.held[last] += int64(n)
	return span{chunk: a.first + int32(last), off: uint32(len(c)), n: uint32(n)}, c
}

// commit stores the last chunk after an append within its capacity.
func (a *arena) commit(c []byte) { a.chunks[len(a.chunks)-1] = c }

func (a *arena) bytes(sp span) []byte {
	if sp.n == 0 {
		return nil
	}
	return a.chunks[sp.chunk-a.first][sp.off : sp.off+sp.n : sp.off+sp.n]
}

// wasteful reports whether the arena is worth compacting: more than
// compactMin of its bytes, and more than a third of them, are dropped.
func (a *arena) wasteful() bool {
	waste := a.used - a.live
	return waste > compactMin && waste > a.live/2
}

// drop marks sp's bytes dropped, and lets go of its chunk when nothing
// in it is left, unless it is the chunk still being filled.
func (a *arena) drop(sp span) {
	if sp.n == 0 {
		return
	}
	i := int(sp.chunk - a.first)
	a.live -= int64(sp.n)
	a.held[i] -= int64(sp.n)
	if a.held[i] == 0 && i < len(a.chunks)-1 {
		a.letGo(i)
	}
}

// letGo forgets chunk i, whose bytes are all dropped, then the chunks let
// go at the front, so that the chunk list stays as long as what is kept
// (a full store evicts oldest first, so chunks empty from the front).
func (a *arena) letGo(i int) {
	a.used -= int64(len(a.chunks[i]))
	a.chunks[i] = nil
	for len(a.chunks) > 0 && a.chunks[0] == nil {
		a.chunks, a.held = a.chunks[1:], a.held[1:]
		a.first++
	}
}
