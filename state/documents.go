package state

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// Document is one runtime scenario document (POST /__admin/scenarios): a
// scenario file that lives in the store rather than on disk, so that every
// replica on the store serves it.
type Document struct {
	// ID names the document; the server chooses it.
	ID string `json:"id"`
	// Added is when it was added.
	Added time.Time `json:"added"`
	// Data is the document as posted (YAML or JSON).
	Data []byte `json:"data"`
}

// Documents keeps the runtime scenario documents, in the order added,
// and a version that changes with every change, so that replicas notice
// one and reload. A Store that has them implements DocumentStore.
// Implementations are safe for concurrent use.
type Documents interface {
	// Add appends d, unless the store holds MaxDocuments already
	// (ErrDocumentsFull) or one with its ID (ErrDocumentExists).
	Add(ctx context.Context, d Document) error
	// Remove forgets the document with id and reports whether there was one.
	Remove(ctx context.Context, id string) (bool, error)
	// Clear forgets every document and returns how many there were.
	Clear(ctx context.Context) (int, error)
	// List returns the documents in the order added, and the version they
	// are at, read together.
	List(ctx context.Context) ([]Document, int64, error)
	// Wait returns when the version is no longer version, or when ctx
	// ends (its error). A remote store may return early now and then (a
	// message lost): the caller lists and compares.
	Wait(ctx context.Context, version int64) error
}

// Replicas is implemented by the Documents of a store that several
// replicas share: each says which version of the documents it serves,
// so that the one that changed them can answer its client once every
// replica serves the change (a test's next request, whichever replica a
// load balancer sends it to, sees the stub it just added). A store of
// one process has one replica, its own, and does not implement it.
type Replicas interface {
	// Serving records that replica serves the documents at version, and
	// counts it as live for ttl (a replica that stops announcing is
	// forgotten then).
	Serving(ctx context.Context, replica string, version int64, ttl time.Duration) error
	// AllServing returns when every live replica serves version or a
	// later one, or when ctx ends (its error).
	AllServing(ctx context.Context, version int64) error
	// Leave forgets replica at once (a clean shutdown).
	Leave(ctx context.Context, replica string) error
}

// DocumentStore is implemented by stores that keep runtime documents.
type DocumentStore interface {
	Documents() Documents
}

// MaxDocuments is how many runtime documents a store keeps.
const MaxDocuments = 1000

// Errors of Documents.Add.
var (
	ErrDocumentsFull  = errors.New("state: too many runtime scenario documents (the bound is 1000; DELETE /__admin/scenarios?runtime=true removes them)")
	ErrDocumentExists = errors.New("state: a runtime scenario document with this id exists")
)

// memDocuments is the in-memory Documents.
type memDocuments struct {
	mu      sync.Mutex // guards docs, version and changed
	docs    []Document
	version int64
	changed chan struct{} // closed and replaced at every change
}

func newMemDocuments() *memDocuments { return &memDocuments{changed: make(chan struct{})} }

// bump records a change; the caller holds mu.
func (m *memDocuments) bump() {
	m.version++
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *memDocuments) Add(_ context.Context, d Document) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.docs) >= MaxDocuments {
		return ErrDocumentsFull
	}
	if slices.ContainsFunc(m.docs, func(o Document) bool { return o.ID == d.ID }) {
		return ErrDocumentExists
	}
	d.Data = slices.Clone(d.Data)
	m.docs = append(m.docs, d)
	m.bump()
	return nil
}

func (m *memDocuments) Remove(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := slices.IndexFunc(m.docs, func(o Document) bool { return o.ID == id })
	if i < 0 {
		return false, nil
	}
	m.docs = slices.Delete(m.docs, i, i+1)
	m.bump()
	return true, nil
}

func (m *memDocuments) Clear(context.Context) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.docs)
	if n > 0 {
		m.docs = nil
		m.bump()
	}
	return n, nil
}

func (m *memDocuments) List(context.Context) ([]Document, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.docs), m.version, nil
}

func (m *memDocuments) Wait(ctx context.Context, version int64) error {
	m.mu.Lock()
	if m.version != version {
		m.mu.Unlock()
		return nil
	}
	c := m.changed
	m.mu.Unlock()
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
