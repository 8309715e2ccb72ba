package server

import (
	"encoding/json"
	"net/http"

	"github.com/gorilla/mux"
)

func (s *Server) collectionRoutes(r *mux.Router) {
	r.HandleFunc(adminPrefix+"/collections", s.handleCollections).Methods(http.MethodGet)
	r.HandleFunc(adminPrefix+"/collections", s.handleCollectionsDelete).Methods(http.MethodDelete)
	r.HandleFunc(adminPrefix+"/collections/{name}", s.handleCollection).Methods(http.MethodGet)
	r.HandleFunc(adminPrefix+"/collections/{name}", s.handleCollectionsDelete).Methods(http.MethodDelete)
}

// adminCollection is one collection in GET /__admin/collections.
type adminCollection struct {
	Name  string `json:"name"`
	Items int    `json:"items"`
}

// handleCollections lists the collections that hold items, with their
// counts, and the bound on all of them.
func (s *Server) handleCollections(w http.ResponseWriter, r *http.Request) {
	counts, err := s.state.Collections().Counts(r.Context())
	if err != nil {
		s.adminUnavailable(w, r, err)
		return
	}
	out := make([]adminCollection, 0, len(counts))
	total := 0
	for _, c := range counts {
		out = append(out, adminCollection{c.Name, c.Items})
		total += c.Items
	}
	writeJSON(w, http.StatusOK, map[string]any{"collections": out, "items": total, "maxItems": s.opts.MaxCollectionItems})
}

// adminItem is one item in GET /__admin/collections/{name}.
type adminItem struct {
	ID   string          `json:"id"`
	Body json.RawMessage `json:"body"`
}

// handleCollection lists a collection's items in insertion order:
// ?offset= and ?limit= (default 1,000) page through them. A collection
// that holds nothing is empty, not missing: collections exist by name.
func (s *Server) handleCollection(w http.ResponseWriter, r *http.Request) {
	name := mux.Vars(r)["name"]
	offset, limit, err := listPage(r)
	if err != nil {
		writeProblem(w, newProblem(http.StatusBadRequest, err.Error()))
		return
	}
	items, total, err := s.state.Collections().List(r.Context(), name, offset, limit)
	if err != nil {
		s.adminUnavailable(w, r, err)
		return
	}
	out := make([]adminItem, 0, len(items))
	for _, it := range items {
		body := json.RawMessage(it.Body)
		if !json.Valid(body) { // stored by a remote store's other writer
			b, _ := json.Marshal(string(it.Body))
			body = b
		}
		out = append(out, adminItem{it.ID, body})
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": name, "total": total, "offset": offset, "items": out})
}

// handleCollectionsDelete empties one collection, or all of them. Seeds
// come back with POST /__admin/reset or a reload that changes them.
func (s *Server) handleCollectionsDelete(w http.ResponseWriter, r *http.Request) {
	if !paramsKnown(w, r) {
		return
	}
	name := mux.Vars(r)["name"]
	counts, err := s.state.Collections().Counts(r.Context())
	if err == nil {
		err = s.state.Collections().Reset(r.Context(), name)
	}
	if err != nil {
		s.adminUnavailable(w, r, err)
		return
	}
	n := 0
	for _, c := range counts {
		if name == "" || c.Name == name {
			n += c.Items
		}
	}
	s.log.Info("collections emptied", "collection", name, "items", n)
	writeJSON(w, http.StatusOK, map[string]any{"deleted": n})
}
