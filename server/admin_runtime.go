package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/gorilla/mux"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
)

func (s *Server) runtimeRoutes(r *mux.Router) {
	r.HandleFunc(adminPrefix+"/scenarios", s.handleDocumentAdd).Methods(http.MethodPost)
	r.HandleFunc(adminPrefix+"/scenarios", s.handleDocumentsClear).Methods(http.MethodDelete)
	r.HandleFunc(adminPrefix+"/scenarios/{id}", s.handleDocument).Methods(http.MethodGet)
	r.HandleFunc(adminPrefix+"/scenarios/{id}", s.handleDocumentRemove).Methods(http.MethodDelete)
}

// adminDocument is one runtime document in the admin API.
type adminDocument struct {
	ID      string    `json:"id"`
	Added   time.Time `json:"added"`
	Session string    `json:"session,omitempty"`
	Routes  []string  `json:"routes"`
	Bytes   int       `json:"bytes"`
}

func (d *runtimeDoc) admin() adminDocument {
	return adminDocument{ID: d.id, Added: d.added, Session: d.session(), Routes: d.routeNames(), Bytes: d.size}
}

// runtimeDocs returns the runtime documents served now, newest last.
func (s *Server) runtimeDocs() []adminDocument {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	out := make([]adminDocument, 0, len(s.runtime))
	for _, d := range s.runtime {
		out = append(out, d.admin())
	}
	return out
}

// handleDocumentAdd adds a runtime document: it is parsed and checked as
// a file is (every problem, at its line:col in the document, in one 400),
// and against the files and the other documents (a route name taken in
// its session), kept in the store, and served by this server before the
// answer goes; the other replicas of a shared store follow when the
// store tells them.
func (s *Server) handleDocumentAdd(w http.ResponseWriter, r *http.Request) {
	ds := s.documents()
	if ds == nil {
		writeProblem(w, newProblem(http.StatusNotImplemented, "The state store keeps no runtime scenario documents."))
		return
	}
	var data []byte
	if r.Body != nil {
		data, _ = io.ReadAll(r.Body) // read and bounded by serveAdmin
	}
	if len(data) > MaxDocumentSize {
		writeProblem(w, newProblem(http.StatusRequestEntityTooLarge, fmt.Sprintf("A runtime scenario document is at most %d bytes; this one has %d.", MaxDocumentSize, len(data))))
		return
	}
	if len(data) == 0 {
		writeProblem(w, newProblem(http.StatusBadRequest, "Send a scenario document (YAML or JSON, as a scenario file) as the body, with Content-Type application/yaml or application/json."))
		return
	}
	id := newDocumentID()
	const posted = "posted"
	set, err := parseDocument(runtimeName(id), data)
	if err == nil {
		err = s.checkOverlay(set)
	}
	if err != nil {
		writeDocumentProblem(w, err, runtimeName(id), posted)
		return
	}
	if err := ds.Add(r.Context(), state.Document{ID: id, Added: s.opts.Clock.Now().UTC(), Data: data}); err != nil {
		if errors.Is(err, state.ErrDocumentsFull) {
			writeProblem(w, newProblem(http.StatusInsufficientStorage, err.Error()))
			return
		}
		s.adminUnavailable(w, r, err)
		return
	}
	_ = s.ReloadContext(r.Context())
	doc, ok := s.served(id)
	if !ok {
		// Another document posted meanwhile took a name, or the store
		// failed: take it back, and say why.
		_, rerr := ds.Remove(context.WithoutCancel(r.Context()), id)
		_ = s.ReloadContext(context.WithoutCancel(r.Context()))
		p := newProblem(http.StatusConflict, "The document was valid but did not become current; it was removed.")
		p.Errors = s.status.Load().problems
		if rerr != nil {
			p.Detail += " Removing it failed too: " + rerr.Error()
		}
		writeProblem(w, p)
		return
	}
	s.awaitReplicas(r.Context())
	w.Header().Set("Location", adminPrefix+"/scenarios/"+id)
	writeJSON(w, http.StatusCreated, doc)
}

// writeDocumentProblem answers a document that does not load: every
// problem, at its line:col in the document.
func writeDocumentProblem(w http.ResponseWriter, err error, name, shown string) {
	p := newProblem(http.StatusBadRequest, "The scenario document has problems; nothing was added.")
	for _, e := range scenarios.Problems(err) {
		if e.Pos.File == name {
			e.Pos.File = shown
		}
		p.Errors = append(p.Errors, e.Error())
	}
	if len(p.Errors) == 0 {
		p.Errors = []string{err.Error()}
	}
	writeProblem(w, p)
}

// checkOverlay checks that set would lay on the scenarios served now.
func (s *Server) checkOverlay(set *scenarios.Set) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	docs := append(slices.Clone(s.runtime), &runtimeDoc{set: set})
	files := s.files
	if files == nil {
		files = &scenarios.Set{}
	}
	_, err := overlayDocs(files, docs, nil)
	return err
}

// served returns the runtime document id as served now.
func (s *Server) served(id string) (adminDocument, bool) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	for _, d := range s.runtime {
		if d.id == id {
			return d.admin(), true
		}
	}
	return adminDocument{}, false
}

// handleDocument answers one runtime document, as posted.
func (s *Server) handleDocument(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	ds := s.documents()
	if ds == nil {
		writeProblem(w, newProblem(http.StatusNotFound, "No runtime scenario document "+id+"."))
		return
	}
	docs, _, err := ds.List(r.Context())
	if err != nil {
		s.adminUnavailable(w, r, err)
		return
	}
	for _, d := range docs {
		if d.ID == id {
			// The store keeps the bytes, not the type they came with: a
			// document that is JSON goes back as JSON (it is YAML too,
			// but a client that posted JSON reads it as such).
			ct := "application/yaml"
			if json.Valid(d.Data) {
				ct = "application/json"
			}
			w.Header().Set("Content-Type", ct)
			w.Header().Set("Cache-Control", "no-store")
			_, _ = w.Write(d.Data)
			return
		}
	}
	writeProblem(w, newProblem(http.StatusNotFound, "No runtime scenario document "+id+"; GET "+adminPrefix+"/scenarios?runtime=true lists them."))
}

// handleDocumentRemove removes one runtime document and serves what is
// left before answering.
func (s *Server) handleDocumentRemove(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	ds := s.documents()
	ok := false
	var err error
	if ds != nil {
		ok, err = ds.Remove(r.Context(), id)
	}
	if err != nil {
		s.adminUnavailable(w, r, err)
		return
	}
	if !ok {
		writeProblem(w, newProblem(http.StatusNotFound, "No runtime scenario document "+id+"; GET "+adminPrefix+"/scenarios?runtime=true lists them."))
		return
	}
	_ = s.ReloadContext(r.Context())
	s.awaitReplicas(r.Context())
	writeJSON(w, http.StatusOK, map[string]any{"removed": 1, "version": s.Version(), "routes": s.Routes()})
}

// handleDocumentsClear removes every runtime document; it asks for
// ?runtime=true, so that nobody reads it as removing the files.
func (s *Server) handleDocumentsClear(w http.ResponseWriter, r *http.Request) {
	if !paramsKnown(w, r, "runtime") {
		return
	}
	if r.URL.Query().Get("runtime") != "true" {
		writeProblem(w, newProblem(http.StatusBadRequest, "DELETE "+adminPrefix+"/scenarios removes the runtime scenario documents only: say so with ?runtime=true (scenario files are not removed over the API)."))
		return
	}
	n := 0
	var err error
	if ds := s.documents(); ds != nil {
		n, err = ds.Clear(r.Context())
	}
	if err != nil {
		s.adminUnavailable(w, r, err)
		return
	}
	_ = s.ReloadContext(r.Context())
	s.awaitReplicas(r.Context())
	writeJSON(w, http.StatusOK, map[string]any{"removed": n, "version": s.Version(), "routes": s.Routes()})
}
