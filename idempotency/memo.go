package idempotency

import (
	"bytes"
	"hash/maphash"
	"sync"
)

// memo remembers recent fingerprints by their inputs as they came (what
// appendInputs writes with canonical false): a client retrying a request,
// and a load test, sends the same bytes again, and the canonical form and
// the SHA-256 over it are most of a replay's cost. The inputs determine
// the fingerprint (the canonical form is a function of the body and its
// media type), so a hit is exactly what computing it would give; inputs
// that differ in one byte are another entry. It is a fixed table of
// pointer-free slots, so it allocates nothing and costs the collector
// nothing; a slot keeps the latest inputs hashed to it.
var memo fingerprintMemo

// memoSlots and memoInputs bound the memo: 1,024 slots of inputs up to
// 224 bytes (a typical JSON create request and its path), about 270 KiB.
const (
	memoSlots  = 1024
	memoInputs = 224
)

type fingerprintMemo struct {
	seed  maphash.Seed
	once  sync.Once
	slots [memoSlots]memoSlot
}

type memoSlot struct {
	mu sync.Mutex
	n  uint16 // the length of in; 0: empty
	in [memoInputs]byte
	fp Fingerprint
}

func (m *fingerprintMemo) slot(in []byte) *memoSlot {
	m.once.Do(func() { m.seed = maphash.MakeSeed() })
	return &m.slots[maphash.Bytes(m.seed, in)%memoSlots]
}

func (m *fingerprintMemo) get(in []byte) (Fingerprint, bool) {
	if len(in) == 0 || len(in) > memoInputs {
		return Fingerprint{}, false
	}
	s := m.slot(in)
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(s.n) != len(in) || !bytes.Equal(s.in[:s.n], in) {
		return Fingerprint{}, false
	}
	return s.fp, true
}

func (m *fingerprintMemo) put(in []byte, fp Fingerprint) {
	if len(in) == 0 || len(in) > memoInputs {
		return
	}
	s := m.slot(in)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n = uint16(copy(s.in[:], in))
	s.fp = fp
}
