package state

import (
	"bytes"
	"context"
	"hash/maphash"
	"slices"
	"sort"
	"strings"
	"sync"
	"unsafe"
)

// memCollections keeps stored bodies. One lock for all collections:
// saving a resource is far rarer than matching a request, and one lock
// keeps the bound (over all collections) exact.
//
// Besides the count of items, the bytes of ids and bodies are bounded
// (Options.MaxCollectionBytes): a save past either bound is refused with
// ErrFull (507), never made room for by dropping an item, because a
// dropped item would turn a later GET of it into a 404 the client did not
// cause.
//
// What it keeps is free of pointers per item, as the idempotency store's
// keys are (idempotency.go): an item is a struct of numbers in one slice
// per collection, found by its id's 64-bit hash in a map of integers, and
// its id and body live in the collection's arena. A store of 100,000
// customers is then a few hundred chunks for the garbage collector, not
// 300,000 objects to trace every cycle, and the bytes of a replaced or
// deleted body go back to the heap with their chunk, or with a compaction.
//
// A body is kept once when an idempotency answer is the same bytes (a
// create's answer is the object it stored): the answer names the item
// (shared), and the item's body is copied into the answer before it is
// replaced or dropped (unshare), so that a replay still gives the bytes
// of the first answer. A Stripe customer's create then keeps 1.4 KB, not
// 2.3 (BenchmarkStripeServeCreate/kept in package openapi).
type memCollections struct {
	mu       sync.Mutex // guards everything below
	byName   map[string]*collection
	byNum    map[uint32]*collection // by collection.num, for the answers that share a body
	nums     uint32                 // last number given
	total    int                    // items over all collections
	bytes    int64                  // ids and bodies over all collections
	limit    int
	maxBytes int64
	fence    *fence
	seed     maphash.Seed
	hash     func(maphash.Seed, string) uint64 // maphash.String; tests make every id collide
	// idem is the idempotency store whose answers may share a body
	// with an item (nil: none do).
	idem *memIdempotency
	// saved is the items saved last, by their body's hash, where an
	// answer completing with the same bytes finds the item it shares.
	saved [savedRing]savedBody
	next  int
}

// savedRing is how many saves back an answer finds the item it shares:
// an answer completes right after its own save, but other requests save
// in between.
const savedRing = 64

// sharedMin is the body size below which an answer keeps its own copy:
// sharing costs the item and the answer a few bytes of reference.
const sharedMin = 128

// savedBody is one of the items saved last.
type savedBody struct {
	hash uint64 // of the body
	col  uint32 // collection.num
	item int32
}

// answerRef names the idempotency answer that shares an item's body: its
// shard, its slot, and the claim, so that a slot used again by another key
// is not taken for it. A zero claim names none.
type answerRef struct {
	claim uint64
	slot  int32
	shard int32
}

func newMemCollections(limit int, maxBytes int64, f *fence) *memCollections {
	return &memCollections{limit: limit, maxBytes: maxBytes, byName: map[string]*collection{}, byNum: map[uint32]*collection{},
		fence: f, seed: maphash.MakeSeed(), hash: maphash.String}
}

// register numbers col and makes it findable by its number. c.mu is held.
func (c *memCollections) register(col *collection) {
	c.nums++
	for c.nums == 0 || c.byNum[c.nums] != nil { // wrapped round
		c.nums++
	}
	col.num = c.nums
	c.byNum[col.num] = col
}

// forget drops col, whose items are all gone, first copying the bodies
// that answers share into them. c.mu is held.
func (c *memCollections) forget(col *collection) {
	for _, i := range col.order {
		c.unshare(col, i)
	}
	delete(c.byNum, col.num)
}

// unshare copies item i's body into the idempotency answer that shares
// it, if one does, before the body is replaced or dropped. c.mu is held.
func (c *memCollections) unshare(col *collection, i int32) {
	it := &col.items[i]
	if it.shared.claim == 0 {
		return
	}
	ref := it.shared
	it.shared = answerRef{}
	c.idem.own(ref, col.num, i, col.arena.bytes(it.body))
}

// noteSaved remembers that item i of col was saved with body, for an
// answer with the same bytes to share. c.mu is held.
func (c *memCollections) noteSaved(col *collection, i int32, body []byte) {
	if c.idem == nil || len(body) < sharedMin {
		return
	}
	c.saved[c.next] = savedBody{hash: maphash.Bytes(c.seed, body), col: col.num, item: i}
	c.next = (c.next + 1) % savedRing
}

// findSaved returns a recently saved item whose body is body and that no
// answer shares yet, or nil. c.mu is held.
func (c *memCollections) findSaved(body []byte) (*collection, int32) {
	h := maphash.Bytes(c.seed, body)
	for k := range savedRing {
		// Newest first: the answer's own save is usually the last.
		sv := c.saved[(c.next-1-k+2*savedRing)%savedRing]
		if sv.hash != h {
			continue
		}
		col := c.byNum[sv.col]
		if col == nil || int(sv.item) >= len(col.items) {
			continue
		}
		it := &col.items[sv.item]
		if it.shared.claim == 0 && bytes.Equal(col.arena.bytes(it.body), body) {
			return col, sv.item
		}
	}
	return nil, -1
}

// sharedBody returns the body of item i of the collection numbered num if
// the answer ref still shares it: false when it was copied into the
// answer since. The bytes are a view of the arena, never written again.
func (c *memCollections) sharedBody(num uint32, i int32, ref answerRef) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	col := c.byNum[num]
	if col == nil || int(i) >= len(col.items) || col.items[i].shared != ref {
		return nil, false
	}
	return col.arena.bytes(col.items[i].body), true
}

// itemBytes is what an item counts against the byte bound.
func itemBytes(id string, body []byte) int64 { return int64(len(id) + len(body)) }

// collection is one named collection; memCollections.mu guards it.
type collection struct {
	// byHash finds an item's slot by its id's hash; an id whose hash
	// another id holds goes to collided, by the id.
	byHash   map[uint64]int32
	collided map[string]int32
	items    []item
	free     []int32 // indices of unused items
	order    []int32 // the items in insertion order
	arena    arena
	bytes    int64  // ids and bodies, against the byte bound
	num      uint32 // memCollections.byNum's key
}

// item is one stored body. It holds no pointers.
type item struct {
	hash     uint64
	id, body span      // in the collection's arena
	shared   answerRef // the idempotency answer whose body is this one
}

func newCollection(n int) *collection {
	return &collection{byHash: make(map[uint64]int32, n)}
}

// id returns item i's id, a view of the arena, whose bytes are never
// written again.
func (col *collection) id(i int32) string {
	b := col.arena.bytes(col.items[i].id)
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// body returns item i's body, a view of the arena. An empty body is
// empty, not nil, as a copy of one was.
func (col *collection) body(i int32) []byte {
	if b := col.arena.bytes(col.items[i].body); b != nil {
		return b
	}
	return []byte{}
}

// lookup returns the index of the item with id, or -1.
func (col *collection) lookup(h uint64, id string) int32 {
	if i, ok := col.byHash[h]; ok && col.id(i) == id {
		return i
	}
	if len(col.collided) > 0 {
		if i, ok := col.collided[id]; ok {
			return i
		}
	}
	return -1
}

// add stores a new item at the end of the order and returns its index.
func (col *collection) add(h uint64, id string, body []byte) int32 {
	var i int32
	if n := len(col.free); n > 0 {
		i, col.free = col.free[n-1], col.free[:n-1]
	} else {
		i = int32(len(col.items))
		col.items = append(col.items, item{})
	}
	col.items[i] = item{hash: h, id: col.arena.add(unsafe.Slice(unsafe.StringData(id), len(id))), body: col.arena.add(body)}
	if _, taken := col.byHash[h]; !taken {
		col.byHash[h] = i
	} else {
		if col.collided == nil {
			col.collided = map[string]int32{}
		}
		col.collided[strings.Clone(id)] = i
	}
	col.order = append(col.order, i)
	col.bytes += itemBytes(id, body)
	return i
}

// replace stores body as item i's, in place.
func (col *collection) replace(i int32, body []byte) {
	it := &col.items[i]
	col.bytes += int64(len(body)) - int64(it.body.n)
	col.arena.drop(it.body)
	it.body = col.arena.add(body)
	col.compact()
}

// remove forgets item i.
func (col *collection) remove(i int32) {
	it := &col.items[i]
	if j, ok := col.byHash[it.hash]; ok && j == i {
		delete(col.byHash, it.hash)
	} else {
		delete(col.collided, col.id(i))
	}
	// A linear removal keeps List a plain slice; deletes are rare and a
	// full collection is 400 KB of indices to move at worst.
	if k := slices.Index(col.order, i); k >= 0 {
		col.order = slices.Delete(col.order, k, k+1)
	}
	col.bytes -= int64(it.id.n + it.body.n)
	col.arena.drop(it.id)
	col.arena.drop(it.body)
	*it = item{}
	col.free = append(col.free, i)
	col.compact()
}

// compact moves the live ids and bodies to fresh chunks when more than a
// third of the arena is dropped bytes (replaced or deleted bodies), as
// the idempotency shards do. Views of the old chunks that Load and List
// handed out stay valid: the old chunks are left to them.
func (col *collection) compact() {
	a := &col.arena
	if !a.wasteful() {
		return
	}
	var fresh arena
	for _, i := range col.order {
		it := &col.items[i]
		it.id = fresh.add(a.bytes(it.id))
		it.body = fresh.add(a.bytes(it.body))
	}
	*a = fresh
}

func (c *memCollections) Save(ctx context.Context, name, id string, body []byte) (bool, error) {
	h := c.hash(c.seed, id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.fence.admits(ctx) {
		return false, ErrFenced
	}
	col := c.byName[name]
	if col != nil {
		if i := col.lookup(h, id); i >= 0 {
			grown := int64(len(body)) - int64(col.items[i].body.n)
			if grown > 0 && c.bytes+grown > c.maxBytes {
				return false, ErrFull
			}
			c.unshare(col, i)
			col.replace(i, body)
			c.noteSaved(col, i, body)
			c.bytes += grown
			return false, nil
		}
	}
	if c.total >= c.limit || c.bytes+itemBytes(id, body) > c.maxBytes {
		return false, ErrFull
	}
	if col == nil {
		col = newCollection(0)
		c.register(col)
		c.byName[strings.Clone(name)] = col
	}
	c.noteSaved(col, col.add(h, id, body), body)
	c.total++
	c.bytes += itemBytes(id, body)
	return true, nil
}

func (c *memCollections) Load(_ context.Context, name, id string) ([]byte, bool, error) {
	h := c.hash(c.seed, id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if col := c.byName[name]; col != nil {
		if i := col.lookup(h, id); i >= 0 {
			return col.body(i), true, nil
		}
	}
	return nil, false, nil
}

func (c *memCollections) List(_ context.Context, name string, offset, limit int) ([]Item, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	col := c.byName[name]
	if col == nil {
		return []Item{}, 0, nil
	}
	total := len(col.order)
	offset = min(max(offset, 0), total)
	end := total
	if limit > 0 {
		end = min(offset+limit, total)
	}
	out := make([]Item, 0, end-offset)
	for _, i := range col.order[offset:end] {
		out = append(out, Item{ID: col.id(i), Body: col.body(i)})
	}
	return out, total, nil
}

func (c *memCollections) Delete(ctx context.Context, name, id string) (bool, error) {
	h := c.hash(c.seed, id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.fence.admits(ctx) {
		return false, ErrFenced
	}
	col := c.byName[name]
	if col == nil {
		return false, nil
	}
	i := col.lookup(h, id)
	if i < 0 {
		return false, nil
	}
	c.total--
	c.bytes -= int64(col.items[i].id.n + col.items[i].body.n)
	c.unshare(col, i)
	col.remove(i)
	if len(col.order) == 0 {
		c.forget(col)
		delete(c.byName, name)
	}
	return true, nil
}

func (c *memCollections) Seed(_ context.Context, name string, items []Item) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, oldBytes := 0, int64(0)
	if col := c.byName[name]; col != nil {
		old, oldBytes = len(col.order), col.bytes
	}
	col := newCollection(len(items))
	for _, in := range items {
		// A repeated id keeps its first position and its last body, as
		// saving the items one by one would.
		h := c.hash(c.seed, in.ID)
		if i := col.lookup(h, in.ID); i >= 0 {
			col.replace(i, in.Body)
			continue
		}
		col.add(h, in.ID, in.Body)
	}
	if c.total-old+len(col.order) > c.limit || c.bytes-oldBytes+col.bytes > c.maxBytes {
		return ErrFull
	}
	c.total += len(col.order) - old
	c.bytes += col.bytes - oldBytes
	if prev := c.byName[name]; prev != nil {
		c.forget(prev)
	}
	if len(col.order) == 0 {
		delete(c.byName, name)
	} else {
		c.register(col)
		c.byName[strings.Clone(name)] = col
	}
	return nil
}

func (c *memCollections) Reset(_ context.Context, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if name == "" {
		for _, col := range c.byName {
			c.forget(col)
		}
		c.byName, c.total, c.bytes = map[string]*collection{}, 0, 0
		return nil
	}
	if col := c.byName[name]; col != nil {
		c.total -= len(col.order)
		c.bytes -= col.bytes
		c.forget(col)
		delete(c.byName, name)
	}
	return nil
}

func (c *memCollections) Counts(context.Context) ([]CollectionCount, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]CollectionCount, 0, len(c.byName))
	for name, col := range c.byName {
		out = append(out, CollectionCount{Name: name, Items: len(col.order)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Bytes returns the bytes of ids and bodies stored in all collections.
func (c *memCollections) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}
