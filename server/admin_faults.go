package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"

	"github.com/scenariomock/scenariomock/scenarios"
)

// runtimeFault is a fault switched on through POST /__admin/faults: on
// one route (by name) or all, until it expires or DELETE /__admin/faults
// (or POST /__admin/reset) clears it. It replaces the route's own fault
// while it lasts, on canned and proxied routes alike.
type runtimeFault struct {
	ID    int64            `json:"id"`
	Route string           `json:"route,omitempty"` // "": every route
	Fault *scenarios.Fault `json:"-"`
	Kind  string           `json:"kind"`
	After string           `json:"after"`
	// Text is the fault as the listings describe it, its options
	// included: "latency of 2s ± 500ms, chance 0.5".
	Text string `json:"text"`
	// Chance is the fault's, Until when it reverts by itself (zero:
	// never).
	Chance float64   `json:"chance"`
	Until  time.Time `json:"until,omitzero"`
}

// runtimeFaults are the switched-on faults. The hot path loads one
// pointer (nil when none is on, the usual case); a change swaps in a new
// slice, so readers never lock.
type runtimeFaults struct {
	mu   sync.Mutex // serializes changes; guards next
	next int64
	on   atomic.Pointer[[]runtimeFault] // never changed once stored
}

// pick returns the runtime fault for route at now, drawing its chance
// from random, or nil; found reports whether one applies at all (then
// its draw decides, and the route's own fault does not).
func (rf *runtimeFaults) pick(route string, now time.Time, random func() float64) (f *scenarios.Fault, found bool) {
	p := rf.on.Load()
	if p == nil {
		return nil, false
	}
	for i := range *p {
		e := &(*p)[i]
		if e.Route != "" && e.Route != route || !e.Until.IsZero() && !now.Before(e.Until) {
			continue
		}
		if e.Fault.Chance > 0 && (e.Fault.Always() || random() < e.Fault.Chance) {
			return e.Fault, true
		}
		return nil, true
	}
	return nil, false
}

// active returns the faults that have not expired at now.
func (rf *runtimeFaults) active(now time.Time) []runtimeFault {
	out := []runtimeFault{}
	if p := rf.on.Load(); p != nil {
		for _, e := range *p {
			if e.Until.IsZero() || now.Before(e.Until) {
				out = append(out, e)
			}
		}
	}
	return out
}

// add switches e on, dropping expired entries; the newest entry wins.
func (rf *runtimeFaults) add(e runtimeFault, now time.Time) runtimeFault {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	rf.next++
	e.ID = rf.next
	list := append([]runtimeFault{e}, rf.active(now)...)
	rf.on.Store(&list)
	return e
}

// clear switches every runtime fault off.
func (rf *runtimeFaults) clear() int {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	n := 0
	if p := rf.on.Swap(nil); p != nil {
		n = len(*p)
	}
	return n
}

func (s *Server) faultRoutes(r *mux.Router) {
	r.HandleFunc(adminPrefix+"/faults", s.handleFaults).Methods(http.MethodGet)
	r.HandleFunc(adminPrefix+"/faults", s.handleFaultsAdd).Methods(http.MethodPost)
	r.HandleFunc(adminPrefix+"/faults", s.handleFaultsClear).Methods(http.MethodDelete)
}

func (s *Server) handleFaults(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"faults": s.faults.active(s.opts.Clock.Now())})
}

// handleFaultsAdd switches a fault on: {"route": "charge", "fault":
// {"kind": "connection-reset", "after": "processing", "chance": 0.5},
// "for": "30s"}. Without route, every route; without for, until cleared.
func (s *Server) handleFaultsAdd(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Route string          `json:"route"`
		Fault json.RawMessage `json:"fault"`
		For   string          `json:"for"`
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		writeProblem(w, newProblem(http.StatusBadRequest, "want {\"route\": name (optional), \"fault\": {\"kind\": ...}, \"for\": \"30s\" (optional)}: "+err.Error()))
		return
	}
	if len(in.Fault) == 0 {
		writeProblem(w, newProblem(http.StatusBadRequest, "fault is required, e.g. {\"kind\": \"connection-reset\", \"after\": \"processing\"}"))
		return
	}
	f, err := scenarios.ParseFault(in.Fault)
	if err != nil {
		writeProblem(w, newProblem(http.StatusBadRequest, err.Error()))
		return
	}
	now := s.opts.Clock.Now()
	e := runtimeFault{Route: in.Route, Fault: f, Kind: string(f.Kind), After: string(f.After), Text: f.String(), Chance: f.Chance}
	if in.For != "" {
		d, err := time.ParseDuration(in.For)
		if err != nil || d <= 0 {
			writeProblem(w, newProblem(http.StatusBadRequest, fmt.Sprintf("for %q: want a positive duration such as 30s", in.For)))
			return
		}
		e.Until = now.Add(d)
	}
	if in.Route != "" && !s.hasRoute(in.Route) {
		writeProblem(w, s.noRoute(in.Route))
		return
	}
	e = s.faults.add(e, now)
	s.log.Info("fault switched on", "route", e.Route, "kind", e.Kind, "after", e.After, "chance", e.Chance)
	writeJSON(w, http.StatusCreated, e)
}

func (s *Server) handleFaultsClear(w http.ResponseWriter, r *http.Request) {
	if !paramsKnown(w, r) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"cleared": s.faults.clear()})
}

// hasRoute reports whether the current scenarios have a route named name
// (or it is the fallback's or spy mode's).
func (s *Server) hasRoute(name string) bool {
	if name == fallbackRoute || name == proxyUnmatchedRoute {
		return true
	}
	for _, rt := range s.snap.Load().routes {
		if rt.route.Name == name {
			return true
		}
	}
	return false
}
