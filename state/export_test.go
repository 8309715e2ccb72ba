package state

import "hash/maphash"

// NewCollidingMemory returns a memory store in which every idempotency key
// has the same hash, and so has every collection item's id, so that the
// conformance suite also runs the path of keys and ids whose hash another
// holds.
func NewCollidingMemory(o Options) *Memory {
	m := NewMemory(o)
	m.idem.hash = func(Key) uint64 { return 42 }
	m.cols.hash = func(maphash.Seed, string) uint64 { return 42 }
	return m
}

// HashKeyInPieces is the key hash as written piece by piece, which
// hashKey's one write must equal.
func HashKeyInPieces(m *Memory, k Key) (pieces, once uint64) {
	var h maphash.Hash
	h.SetSeed(m.idem.seed)
	h.WriteString(k.Group)
	h.WriteByte(0)
	h.WriteString(k.Scope)
	h.WriteByte(0)
	h.WriteString(k.Key)
	return h.Sum64(), m.idem.hashKey(k)
}
