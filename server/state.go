package server

import (
	"sync"
	"sync/atomic"
)

// routeState is the mutable state of one route: its hit count and its
// sequence positions. It is keyed by route identity and outlives tables,
// so a reload that leaves a route unchanged keeps its positions. It is safe
// for concurrent use.
type routeState struct {
	hits  atomic.Int64
	calls atomic.Int64 // position of the shared sequence

	mu    sync.Mutex       // guards keys, order and next
	keys  map[string]int64 // calls seen per attribute value
	order []string         // keys in insertion order, a ring once full
	next  int              // oldest entry of order once the ring is full
	limit int
}

func newRouteState(limit int) *routeState {
	return &routeState{limit: max(limit, 1)}
}

// advance counts a call and returns its 0-based position in the shared
// sequence.
func (s *routeState) advance() int64 { return s.calls.Add(1) - 1 }

// advanceKey counts a call for one attribute value and returns its 0-based
// position. Keys are bounded: past limit the oldest key is forgotten and
// starts over if it comes back.
func (s *routeState) advanceKey(key string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = map[string]int64{}
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
	s.calls.Store(0)
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
