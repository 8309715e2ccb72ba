package state

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// memSequences keeps sequence positions per route identity.
type memSequences struct {
	// routes maps identity to *routeSeq. A sync.Map because every request
	// reads it and almost none write: reads take no lock.
	routes sync.Map
	limit  int
}

// routeSeq is the mutable state of one route: its hit count and its
// sequence positions. It is safe for concurrent use.
type routeSeq struct {
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

func (s *memSequences) route(id string) *routeSeq {
	if r, ok := s.routes.Load(id); ok {
		return r.(*routeSeq)
	}
	r, _ := s.routes.LoadOrStore(id, &routeSeq{limit: max(s.limit, 1)})
	return r.(*routeSeq)
}

func (s *memSequences) Hit(_ context.Context, route string) (int64, error) {
	return s.route(route).hits.Add(1) - 1, nil
}

func (s *memSequences) HitKey(_ context.Context, route, value string) (Position, error) {
	r := s.route(route)
	return Position{Hit: r.hits.Add(1) - 1, Key: r.advance(value)}, nil
}

func (s *memSequences) Count(_ context.Context, route string) (SequenceCount, error) {
	v, ok := s.routes.Load(route)
	if !ok {
		return SequenceCount{}, nil
	}
	r := v.(*routeSeq)
	r.mu.Lock()
	defer r.mu.Unlock()
	return SequenceCount{Hits: r.hits.Load(), Keys: len(r.keys)}, nil
}

func (s *memSequences) Reset(_ context.Context, route string) error {
	if route != "" {
		if v, ok := s.routes.Load(route); ok {
			v.(*routeSeq).reset()
		}
		return nil
	}
	// Reset in place rather than dropping the routes, so that a request
	// holding a route's state while the reset runs counts in the new era.
	s.routes.Range(func(_, v any) bool {
		v.(*routeSeq).reset()
		return true
	})
	return nil
}

func (s *memSequences) Retain(_ context.Context, routes []string) error {
	keep := make(map[string]bool, len(routes))
	for _, r := range routes {
		keep[r] = true
	}
	s.routes.Range(func(k, _ any) bool {
		if !keep[k.(string)] {
			s.routes.Delete(k)
		}
		return true
	})
	return nil
}

// advance counts a call for one attribute value and returns its 0-based
// position. Keys are bounded: past limit the oldest key is forgotten and
// starts over if it comes back.
func (r *routeSeq) advance(value string) int64 {
	key := maphash.String(keySeed, value)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys == nil {
		r.keys = map[uint64]int64{}
	}
	n, seen := r.keys[key]
	if !seen {
		if len(r.order) < r.limit {
			r.order = append(r.order, key)
		} else {
			delete(r.keys, r.order[r.next])
			r.order[r.next] = key
			r.next = (r.next + 1) % r.limit
		}
	}
	r.keys[key] = n + 1
	return n
}

// reset forgets every position and the hit count.
func (r *routeSeq) reset() {
	r.hits.Store(0)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys, r.order, r.next = nil, nil, 0
}
