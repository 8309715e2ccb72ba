package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
)

// Runtime scenario documents (POST /__admin/scenarios) are scenario files
// kept in the state store, so that every replica on a shared store serves
// them. A reload lays them on the files (scenarios.Overlay): the newest
// first, all before the files, so that at equal priority a runtime route
// wins. The store keeps the documents as posted; each reload parses those
// it has not parsed yet, and the parsed ones are kept by id.

// MaxDocumentSize bounds one runtime document, in bytes; state.MaxDocuments
// bounds how many there are.
const MaxDocumentSize = 1 << 20

// runtimeDoc is one runtime document, parsed.
type runtimeDoc struct {
	id    string
	added time.Time
	set   *scenarios.Set
	size  int
}

// routeNames returns the names of the document's routes, in file order.
func (d *runtimeDoc) routeNames() []string {
	names := []string{}
	for _, r := range d.set.Routes() {
		names = append(names, r.Name)
	}
	return names
}

// session returns the document's session: name, or "".
func (d *runtimeDoc) session() string {
	if len(d.set.Files) > 0 {
		return d.set.Files[0].Session
	}
	return ""
}

// documents returns the store's runtime documents, nil when the store
// keeps none (a State passed in without them).
func (s *Server) documents() state.Documents {
	if ds, ok := s.state.(state.DocumentStore); ok {
		return ds.Documents()
	}
	return nil
}

// listDocuments returns the documents in the store and their version.
// When the store does not answer, the documents served now stay (and the
// version with them), so that a file reload goes on without the store.
// The caller holds reloadMu.
func (s *Server) listDocuments() ([]state.Document, int64) {
	ds := s.documents()
	if ds == nil {
		return nil, 0
	}
	ctx, cancel := context.WithTimeout(s.stopping, 5*time.Second)
	defer cancel()
	docs, v, err := ds.List(ctx)
	if err != nil {
		s.log.Warn("runtime scenario documents not read; those served stay", "error", err.Error())
		kept := make([]state.Document, len(s.runtime))
		for i, d := range s.runtime {
			kept[i] = state.Document{ID: d.id, Added: d.added}
		}
		return kept, s.docsVersion
	}
	return docs, v
}

// parseDocuments parses the documents not parsed yet, and forgets the
// parsed ones no longer listed. The caller holds reloadMu.
func (s *Server) parseDocuments(docs []state.Document) ([]*runtimeDoc, error) {
	out := make([]*runtimeDoc, 0, len(docs))
	parsed := make(map[string]*runtimeDoc, len(docs))
	var errs []error
	for _, d := range docs {
		rd := s.parsed[d.ID]
		if rd == nil {
			set, err := parseDocument(runtimeName(d.ID), d.Data)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			rd = &runtimeDoc{id: d.ID, added: d.Added, set: set, size: len(d.Data)}
		}
		parsed[d.ID] = rd
		out = append(out, rd)
	}
	s.parsed = parsed
	return out, errors.Join(errs...)
}

// runtimeName is how messages name a runtime document.
func runtimeName(id string) string { return "runtime/" + id }

// parseDocument reads one runtime document: a scenario file, YAML or JSON
// (which YAML reads), with everything a file may have but what would read
// the disk (bodyFile, an openapi: source).
func parseDocument(name string, data []byte) (*scenarios.Set, error) {
	set, err := scenarios.LoadDocument(name, data)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, f := range set.Files {
		if f.OpenAPI != nil {
			errs = append(errs, &scenarios.Error{Pos: scenarios.Pos{File: name, Line: 1, Col: 1}, Msg: "openapi: not available in a runtime document (it reads files); put it in a scenario file"})
		}
		for _, r := range f.Routes {
			if r.OperationName != "" {
				// The operations are compiled from the files' specs,
				// which a runtime document is not linked to.
				errs = append(errs, &scenarios.Error{Pos: r.OperationPos, Msg: fmt.Sprintf("route %q: operation: not available in a runtime document; put the route in the scenario file beside the openapi: block", r.Name)})
			}
		}
		f.Runtime = name[len("runtime/"):]
	}
	return set, errors.Join(errs...)
}

// overlayDocs lays docs on files; err is passed through, for the caller's
// one error path.
func overlayDocs(files *scenarios.Set, docs []*runtimeDoc, err error) (*scenarios.Set, error) {
	if err != nil {
		return nil, err
	}
	sets := make([]*scenarios.Set, len(docs))
	for i, d := range docs {
		sets[i] = d.set
	}
	return scenarios.Overlay(files, sets)
}

// newDocumentID returns a fresh document id.
func newDocumentID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail
	return "rt_" + hex.EncodeToString(b[:])
}

// watchDocuments reloads whenever another replica changes the runtime
// documents of a shared store, until shutdown begins. It runs only for a
// shared store: in memory, every change comes through this server's admin
// API, which reloads itself.
func (s *Server) watchDocuments() {
	ds := s.documents()
	defer close(s.docsWatched)
	for s.stopping.Err() == nil {
		s.reloadMu.Lock()
		v := s.docsVersion
		s.reloadMu.Unlock()
		if err := ds.Wait(s.stopping, v); err != nil {
			if s.stopping.Err() != nil {
				return
			}
			s.log.Warn("waiting for runtime scenario documents", "error", err.Error())
			select { // the store is away: bounded, not a spin
			case <-time.After(time.Second):
			case <-s.stopping.Done():
				return
			}
			continue
		}
		s.reloadMu.Lock()
		changed := s.docsVersion != v
		s.reloadMu.Unlock()
		if changed {
			continue // this replica reloaded already (its own POST)
		}
		if err := s.ReloadContext(s.stopping); err != nil && s.stopping.Err() == nil {
			s.log.Warn("reload after a runtime scenario change failed", "error", fmt.Sprint(err))
			// Wait for the next change rather than retry the same one.
			s.reloadMu.Lock()
			if s.docsVersion == v {
				_, s.docsVersion = s.listDocuments()
			}
			s.reloadMu.Unlock()
		}
	}
}

// How replicas of a shared store tell each other which runtime documents
// they serve (state.Replicas): each announces its version at every change
// and every replicaBeat, and counts as live for three beats; a change
// made over the admin API is answered once every live replica serves
// it, or after replicaWait.
const (
	replicaBeat = 2 * time.Second
	replicaWait = 5 * time.Second
)

// announceServed records that this server now serves the documents at
// version, and has announceDocuments tell the store at once. The caller
// holds reloadMu.
func (s *Server) announceServed(version int64) {
	s.servedDocs.Store(version)
	select {
	case s.docsServed <- struct{}{}:
	default: // one is pending: it reads the version when it runs
	}
}

// announceFirst tells a shared store which runtime documents this replica
// serves before it answers any request, so that another replica's change
// from then on waits for it. A store that does not answer in time is
// left to announceDocuments, which warns.
func (s *Server) announceFirst(rs state.Replicas) { _ = s.announce(rs) }

// announce tells the store the version this replica serves now, live for
// three beats.
func (s *Server) announce(rs state.Replicas) error {
	ctx, cancel := context.WithTimeout(s.stopping, replicaBeat)
	defer cancel()
	return rs.Serving(ctx, s.replica, s.servedDocs.Load(), 3*replicaBeat)
}

// announceDocuments tells a shared store which version of the runtime
// documents this replica serves, at every change and every replicaBeat
// (announceFirst told it first), until shutdown begins; then it takes
// the replica out, so that no change waits for it.
func (s *Server) announceDocuments(rs state.Replicas) {
	defer close(s.docsAnnounced)
	tick := time.NewTicker(replicaBeat)
	defer tick.Stop()
	warned := false
	for {
		select {
		case <-s.stopping.Done():
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = rs.Leave(ctx, s.replica)
			cancel()
			return
		case <-tick.C:
		case <-s.docsServed:
		}
		switch err := s.announce(rs); {
		case err != nil && s.stopping.Err() == nil && !warned:
			s.log.Warn("runtime scenario documents: this replica's version not announced; changes made on other replicas may answer before it serves them", "error", err.Error())
			warned = true
		case err == nil:
			warned = false
		}
	}
}

// awaitReplicas returns once every live replica of a shared store serves
// the runtime documents this one serves now, so that the admin call that
// changed them answers when a test's next request sees the change,
// whichever replica a load balancer sends it to. It waits replicaWait at
// most, and then says which version is not served everywhere yet.
func (s *Server) awaitReplicas(ctx context.Context) {
	rs, ok := s.documents().(state.Replicas)
	if !ok || s.docsAnnounced == nil {
		return // one process: served here is served
	}
	v := s.servedDocs.Load()
	ctx, cancel := context.WithTimeout(ctx, replicaWait)
	defer cancel()
	start := time.Now()
	if err := rs.AllServing(ctx, v); err != nil && s.stopping.Err() == nil {
		s.log.Warn("runtime scenario documents: not every replica serves the change yet", "version", v, "waited_ms", millis(time.Since(start)), "error", err.Error())
	}
}
