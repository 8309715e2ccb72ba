package server

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// routeState is the mutable state of one route: its hit count and its
// sequence positions. It is keyed by route identity and outlives tables,
// so a reload that leaves a route unchanged keeps its positions. It is safe
// for concurrent use.
type routeState struct {
	// hits counts the route's requests; it is also the position of a
	// shared sequence, so one atomic add serves both.
	hits atomic.Int64

	// Keys are stored as 64-bit hashes rather than strings: the map then
	// holds no pointers, so a full store of 100,000 keys costs the garbage
	// collector nothing to scan and does not keep request strings alive.
	// Two distinct keys share a position only if their hashes collide:
	// about 3·10⁻¹⁰ for 100,000 keys.
	mu    sync.Mutex       // guards keys, order and next
	keys  map[uint64]int64 // calls seen per attribute value, by its hash
	order []uint64         // keys in insertion order, a ring once full
	next  int              // oldest entry of order once the ring is full
	limit int
}

// keySeed makes key hashes unpredictable, so no client can make two keys
// collide on purpose.
var keySeed = maphash.MakeSeed()

func newRouteState(limit int) *routeState {
	return &routeState{limit: max(limit, 1)}
}

// hit counts a request and returns its 0-based position among the
// route's requests: the position in a shared sequence.
func (s *routeState) hit() int64 { return s.hits.Add(1) - 1 }

// advanceKey counts a call for one attribute value and returns its 0-based
// position. Keys are bounded: past limit the oldest key is forgotten and
// starts over if it comes back.
func (s *routeState) advanceKey(value string) int64 {
	key := maphash.String(keySeed, value)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = map[uint64]int64{}
	}
	n, seen := s.keys[key]
	if !seen {
		if len(s.order) < s.limit {
			s.order = append(s.order, key)
		} else {
			delete(s.keys, s.order[s.next])
			s.order[s.next] = key
			s.next = (s.next + 1) % s.limit
		}
	}
	s.keys[key] = n + 1
	return n
}

// reset forgets every position and the hit count.
func (s *routeState) reset() {
	s.hits.Store(0)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys, s.order, s.next = nil, nil, 0
}

// keyCount returns how many attribute values have their own position.
func (s *routeState) keyCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}
