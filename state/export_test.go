package state

// NewCollidingMemory returns a memory store in which every idempotency key
// has the same hash, so that the conformance suite also runs the path of
// keys whose hash another key holds.
func NewCollidingMemory(o Options) *Memory {
	m := NewMemory(o)
	m.idem.hash = func(Key) uint64 { return 42 }
	return m
}
