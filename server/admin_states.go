package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gorilla/mux"

	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
)

// The route states' admin API, WireMock's /__admin/scenarios under
// another name (ours lists the runtime scenario documents):
//
//	GET    /__admin/states?offset=&limit=   the states set, and the names routes use
//	GET    /__admin/states/{name}?key=      one state's value (Started when never set)
//	PUT    /__admin/states/{name}?key=      {"value": "paid"} sets it
//	DELETE /__admin/states[/{name}][?key=]  sets them back to Started
//
// ?session= names the test session whose state it is (a route's state is
// its session's). GET and PUT of one state address exactly one: without
// ?session= and ?key=, that of no session and no key. A listing and a
// DELETE without ?session= cover every session, and a DELETE of a name
// without ?key= every key of it, as POST /__admin/reset covers all.

func (s *Server) stateRoutes(r *mux.Router) {
	r.HandleFunc(adminPrefix+"/states", s.handleStates).Methods(http.MethodGet)
	r.HandleFunc(adminPrefix+"/states", s.handleStatesDelete).Methods(http.MethodDelete)
	r.HandleFunc(adminPrefix+"/states/{name}", s.handleState).Methods(http.MethodGet)
	r.HandleFunc(adminPrefix+"/states/{name}", s.handleStatePut).Methods(http.MethodPut)
	r.HandleFunc(adminPrefix+"/states/{name}", s.handleStatesDelete).Methods(http.MethodDelete)
}

// adminState is one route state in the admin API.
type adminState struct {
	Session string `json:"session,omitempty"`
	Name    string `json:"name"`
	Key     string `json:"key,omitempty"`
	Value   string `json:"value"`
}

// stateNames returns the state names the current routes use, sorted.
func (s *Server) stateNames() []string {
	var names []string
	for _, rt := range s.snap.Load().routes {
		if st := rt.route.State; st != nil && !slices.Contains(names, st.Name) {
			names = append(names, st.Name)
		}
	}
	slices.Sort(names)
	return names
}

// handleStates lists the states set (?session= narrows it to one
// session's, ?name= to one name's), and the names the routes use, whose
// states not listed are Started. total counts the states set; ?offset=
// and ?limit= (as listPage's) page through them, for a caller that polls
// a store with many keys (the dashboard); without limit= every one is
// listed.
func (s *Server) handleStates(w http.ResponseWriter, r *http.Request) {
	if !paramsKnown(w, r, "session", "name", "offset", "limit") {
		return
	}
	q := r.URL.Query()
	offset, limit := 0, -1
	if q.Has("offset") || q.Has("limit") {
		var err error
		if offset, limit, err = listPage(r); err != nil {
			writeProblem(w, newProblem(http.StatusBadRequest, err.Error()))
			return
		}
	}
	f := state.StateFilter{AnySession: !q.Has("session"), Session: q.Get("session"), Name: q.Get("name"), AnyKey: true}
	vs, err := s.state.States().List(r.Context(), f)
	if err != nil {
		s.adminUnavailable(w, r, err)
		return
	}
	names := s.stateNames()
	if n := f.Name; n != "" && len(vs) == 0 && !slices.Contains(names, n) {
		// As a route= filter: a misspelt name would list nothing, and a
		// check that nothing is set would pass whatever happened.
		writeProblem(w, newProblem(http.StatusBadRequest, fmt.Sprintf("Bad filter name=%q: no route has a state of that name, and none is set; %s",
			n, nearNames(n, names, "state name", "GET /__admin/states lists them"))))
		return
	}
	total := len(vs)
	vs = vs[min(offset, total):]
	if limit >= 0 && limit < len(vs) {
		vs = vs[:limit]
	}
	out := make([]adminState, len(vs))
	for i, v := range vs {
		out[i] = adminState{v.Session, v.Name, v.Key, v.Value}
	}
	if names == nil {
		names = []string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"states": out, "total": total, "names": names, "started": state.StateStarted})
}

// stateTarget reads the state a request for one state names, or answers
// a problem and reports false: a 400 for a bad session= or key=, a 404
// for a name no route uses (the path names a state that does not exist),
// with the nearest one: a PUT of a misspelt name would set a state nothing
// reads, and a test would then fail far from its cause.
func (s *Server) stateTarget(w http.ResponseWriter, r *http.Request) (state.StateKey, bool) {
	q := r.URL.Query()
	k := state.StateKey{Name: mux.Vars(r)["name"], Session: q.Get("session"), Key: q.Get("key")}
	switch names := s.stateNames(); {
	case !slices.Contains(names, k.Name):
		writeProblem(w, newProblem(http.StatusNotFound, fmt.Sprintf("No route has a state named %q; %s", k.Name,
			nearNames(k.Name, names, "state name", "GET /__admin/states lists them"))))
		return k, false
	case k.Session != "" && !scenarios.ValidSession(k.Session):
		writeProblem(w, newProblem(http.StatusBadRequest, fmt.Sprintf("session=%q is not a session name: want 1 to 64 letters, digits, '.', '_' or '-'.", k.Session)))
		return k, false
	case len(k.Key) > state.MaxStatePart || strings.ContainsRune(k.Key, 0):
		writeProblem(w, newProblem(http.StatusBadRequest, fmt.Sprintf("key= must be at most %d bytes, without NUL bytes.", state.MaxStatePart)))
		return k, false
	}
	return k, true
}

// handleState answers one state's value: Started when it was never set.
func (s *Server) handleState(w http.ResponseWriter, r *http.Request) {
	if !paramsKnown(w, r, "session", "key") {
		return
	}
	k, ok := s.stateTarget(w, r)
	if !ok {
		return
	}
	v, err := s.state.States().Get(r.Context(), k)
	if err != nil {
		s.adminUnavailable(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, adminState{k.Session, k.Name, k.Key, v})
}

// handleStatePut sets one state to the body's value: {"value": "paid"}.
// It is not fenced: a test sets up its state after a reset, and nothing
// of an earlier test's is in flight in its own call.
func (s *Server) handleStatePut(w http.ResponseWriter, r *http.Request) {
	if !paramsKnown(w, r, "session", "key") {
		return
	}
	k, ok := s.stateTarget(w, r)
	if !ok {
		return
	}
	var req struct {
		Value string `json:"value"`
	}
	dec := json.NewDecoder(r.Body) // bounded by serveAdmin
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || strings.TrimSpace(req.Value) == "" || len(req.Value) > scenarios.MaxStateValue {
		why := "want a value"
		if err != nil {
			why = err.Error()
		}
		writeProblem(w, newProblem(http.StatusBadRequest, fmt.Sprintf("Send a JSON object: {\"value\": \"paid\"}, a value of 1 to %d bytes (%s).", scenarios.MaxStateValue, why)))
		return
	}
	if err := s.state.States().Set(r.Context(), k, req.Value); err != nil {
		if status := statusOf(err); status == http.StatusInsufficientStorage {
			writeProblem(w, newProblem(status, err.Error()))
			return
		}
		s.adminUnavailable(w, r, err)
		return
	}
	s.log.Info("route state set", "state", describeState(k), "session", k.Session, "value", req.Value)
	writeJSON(w, http.StatusOK, adminState{k.Session, k.Name, k.Key, req.Value})
}

// handleStatesDelete sets states back to Started: all of them, those of
// a name, or of a name and ?key=; ?session= narrows it to one session's.
func (s *Server) handleStatesDelete(w http.ResponseWriter, r *http.Request) {
	name, one := mux.Vars(r)["name"]
	known := []string{"session"}
	if one {
		known = append(known, "key")
	}
	if !paramsKnown(w, r, known...) {
		return
	}
	q := r.URL.Query()
	f := state.StateFilter{AnySession: !q.Has("session"), Session: q.Get("session"), Name: name, AnyKey: !q.Has("key"), Key: q.Get("key")}
	if one {
		if _, ok := s.stateTarget(w, r); !ok {
			return
		}
	}
	n, err := s.state.States().Reset(r.Context(), f)
	if err != nil {
		s.adminUnavailable(w, r, err)
		return
	}
	s.log.Info("route states reset", "name", name, "states", n)
	writeJSON(w, http.StatusOK, map[string]any{"reset": n})
}
