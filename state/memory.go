package state

import (
	"context"
	"errors"
)

// Memory is the in-memory Store: state of one process, lost when it
// exits. It starts no goroutines: expiry is checked when a key is read and
// swept a little on every new claim. It is safe for concurrent use.
type Memory struct {
	idem  *memIdempotency
	seqs  *memSequences
	ctrs  *memCounters
	cols  *memCollections
	jrnl  *memJournal
	docs  *memDocuments
	stats *memStates
	locks LocalLocks
	// fence counts resets; the parts check it as they write (fence.go).
	fence *fence
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory(o Options) *Memory {
	realClock := o.Now == nil
	o = o.WithDefaults()
	idem := newMemIdempotency(o.Now, o.MaxKeys, o.MaxIdempotencyBytes)
	idem.realClock = realClock
	f := &fence{}
	idem.fence = f
	jrnl := newMemJournal(o.JournalSize)
	jrnl.fence = f
	cols := newMemCollections(o.MaxItems, o.MaxCollectionBytes, f)
	cols.idem, idem.cols = idem, cols // an answer and an item share their bytes
	return &Memory{
		idem:  idem,
		seqs:  &memSequences{limit: o.MaxSequenceKeys},
		ctrs:  &memCounters{limit: o.MaxCounters, fence: f},
		cols:  cols,
		jrnl:  jrnl,
		docs:  newMemDocuments(),
		stats: &memStates{limit: o.MaxStates, fence: f},
		fence: f,
	}
}

// Idempotency returns the store of idempotency keys.
func (m *Memory) Idempotency() Idempotency { return m.idem }

// Sequences returns the sequence positions.
func (m *Memory) Sequences() Sequences { return m.seqs }

// Counters returns the named counters.
func (m *Memory) Counters() Counters { return m.ctrs }

// Collections returns the stored resources.
func (m *Memory) Collections() Collections { return m.cols }

// Journal returns the request journal.
func (m *Memory) Journal() Journal { return m.jrnl }

// Locks returns the objects' locks.
func (m *Memory) Locks() Locks { return &m.locks }

// States returns the route states.
func (m *Memory) States() States { return m.stats }

// Documents returns the runtime scenario documents. Reset leaves them:
// they are configuration, not what requests did.
func (m *Memory) Documents() Documents { return m.docs }

var _ DocumentStore = (*Memory)(nil)

var _ Fencer = (*Memory)(nil)

// Epoch returns how many times the store was reset.
func (m *Memory) Epoch() uint64 { return m.fence.epoch.Load() }

// Reset forgets everything. It moves the epoch first, so that a fenced
// write (fence.go) either lands before a part is forgotten or is refused.
func (m *Memory) Reset(ctx context.Context) error {
	m.fence.epoch.Add(1)
	return errors.Join(
		m.idem.Reset(ctx),
		m.seqs.Reset(ctx, ""),
		m.ctrs.Reset(ctx, ""),
		m.cols.Reset(ctx, ""),
		resetStates(ctx, m.stats),
		m.jrnl.Clear(ctx),
	)
}

func resetStates(ctx context.Context, s States) error {
	_, err := s.Reset(ctx, AllStates)
	return err
}

var _ UsageReporter = (*Memory)(nil)

// Usage returns the keys and bytes the store holds.
func (m *Memory) Usage(context.Context) (Usage, error) {
	keys, bytes := m.idem.usage()
	return Usage{IdempotencyKeys: keys, IdempotencyBytes: bytes, CollectionBytes: m.cols.Bytes()}, nil
}

// Close does nothing: a Memory holds no goroutines or connections. It is
// there so that the server closes every Store the same way.
func (m *Memory) Close() error { return nil }
