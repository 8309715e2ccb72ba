package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/http"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/scenariomock/scenariomock/dashboard"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		writeProblem(w, newProblem(http.StatusInternalServerError, err.Error()))
		return
	}
	b = append(b, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	snap := s.snap.Load()
	out := struct {
		Status string `json:"status"`
		// Version counts the scenario swaps (as in GET /__admin/scenarios);
		// Build is the binary's own version.
		Version int64  `json:"version"`
		Routes  int    `json:"routes"`
		Build   string `json:"build"`
		// State, for a shared store only, is "ok", or "unavailable" when
		// it does not answer; StateError then says why.
		State      string `json:"state,omitempty"`
		StateError string `json:"stateError,omitempty"`
		// Usage is what the store holds against its bounds
		// (--idempotency-max-bytes, --collections-max-bytes).
		Usage *adminUsage `json:"usage,omitempty"`
	}{Status: "ok", Version: snap.version, Routes: len(snap.routes), Build: s.opts.Build}
	// A shared store that is down degrades this replica without taking
	// it out of a load balancer's rotation (still 200): every replica
	// shares the store, routes that need no state keep answering, and
	// those that do answer 503 with Retry-After until it is back.
	if p, ok := s.state.(state.Pinger); ok {
		ctx, cancel := context.WithTimeout(r.Context(), healthPingTimeout)
		defer cancel()
		out.State = "ok"
		if err := p.Ping(ctx); err != nil {
			out.Status, out.State, out.StateError = "degraded", "unavailable", err.Error()
		}
	}
	if u, ok := s.state.(state.UsageReporter); ok && out.StateError == "" {
		ctx, cancel := context.WithTimeout(r.Context(), healthPingTimeout)
		defer cancel()
		if got, err := u.Usage(ctx); err == nil {
			out.Usage = &adminUsage{IdempotencyKeys: got.IdempotencyKeys, IdempotencyBytes: got.IdempotencyBytes, CollectionBytes: got.CollectionBytes}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// adminUsage is state.Usage in GET /__admin/health.
type adminUsage struct {
	IdempotencyKeys  int   `json:"idempotencyKeys"`
	IdempotencyBytes int64 `json:"idempotencyBytes"`
	CollectionBytes  int64 `json:"collectionBytes"`
}

// healthPingTimeout bounds the store check of a health request, which a
// load balancer makes often and times out on its own.
const healthPingTimeout = 500 * time.Millisecond

type adminStatus struct {
	Version    int64       `json:"version"`
	LoadedAt   time.Time   `json:"loadedAt"`
	Source     string      `json:"source"`
	LastReload adminReload `json:"lastReload"`
	Files      []adminFile `json:"files"`
	// Routes is one page of the routes, in match order (see Page).
	Routes   []adminRoute  `json:"routes"`
	Page     adminPage     `json:"page"`
	Fallback *adminOutcome `json:"fallback"`
	// Unmatched counts requests no route matched, since start or reset.
	Unmatched int64 `json:"unmatched"`
	// Runtime are the runtime scenario documents (POST
	// /__admin/scenarios), oldest first.
	Runtime []adminDocument `json:"runtime"`
}

// adminPage says which routes a GET /__admin/scenarios lists: at 100,000
// routes the whole list is 31 MB.
type adminPage struct {
	Offset int `json:"offset"`
	Limit  int `json:"limit"`
	// Total counts all the routes.
	Total int `json:"total"`
	// Next is the request for the following page; null on the last.
	Next *string `json:"next"`
}

// Default and largest page of routes for GET /__admin/scenarios.
const (
	defaultRoutePage = 1000
	maxRoutePage     = 10000
)

// listPage reads ?offset= and ?limit= for an admin listing of stored
// items: limit defaults to, and 0 means, one page of defaultRoutePage (a
// store's List reads 0 as "all", which a listing must not ask for).
func listPage(r *http.Request) (offset, limit int, err error) {
	if offset, err = pageParam(r, "offset", 0, math.MaxInt32); err != nil {
		return 0, 0, err
	}
	if limit, err = pageParam(r, "limit", defaultRoutePage, maxRoutePage); err != nil {
		return 0, 0, err
	}
	if limit == 0 {
		limit = defaultRoutePage
	}
	return offset, limit, nil
}

// pageParam reads a non-negative integer query parameter.
func pageParam(r *http.Request, name string, def, max int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > max {
		return 0, fmt.Errorf("?%s=%s: want an integer from 0 to %d", name, v, max)
	}
	return n, nil
}

type adminReload struct {
	At     time.Time `json:"at"`
	OK     bool      `json:"ok"`
	Error  *string   `json:"error"`
	Errors []string  `json:"errors"`
}

type adminFile struct {
	Path   string `json:"path"`
	Name   string `json:"name,omitempty"`
	Routes int    `json:"routes"`
}

type adminRoute struct {
	Order     int            `json:"order"`
	Name      string         `json:"name"`
	Methods   []string       `json:"methods"`
	Path      string         `json:"path"`
	Priority  int            `json:"priority"`
	Source    string         `json:"source"`
	When      []string       `json:"when"`
	Responses []adminOutcome `json:"responses"`
	Sequence  *adminSequence `json:"sequence,omitempty"`
	// State is what the route's state: does (scenarios.RouteState.Describe).
	State string `json:"state,omitempty"`
	// Hits counts the times the route ran (its sequence position moved);
	// Requests all the requests it took, replays and refusals included.
	Hits     int64         `json:"hits"`
	Requests adminRequests `json:"requests"`
	// Keys counts the attribute values with their own sequence position.
	Keys int `json:"keys,omitempty"`
}

type adminOutcome struct {
	Status   int    `json:"status,omitempty"` // none for a fault that never sends one
	Delay    string `json:"delay,omitempty"`
	Fault    string `json:"fault,omitempty"`
	Template bool   `json:"template,omitempty"`
	// Collection says what the response does with stored items, as in
	// "save payments" or "load payments".
	Collection string `json:"collection,omitempty"`
}

type adminSequence struct {
	Per   string `json:"per,omitempty"`
	After string `json:"after"`
	// Calls is the position of the shared sequence (not per key): the
	// route's hits.
	Calls int64 `json:"calls"`
}

func outcome(r *scenarios.Response) adminOutcome {
	o := adminOutcome{Status: r.Status, Template: r.Template}
	switch {
	case r.Save != nil:
		o.Collection = "save " + r.Save.Collection
	case len(r.Also) > 0:
		o.Collection = "save " + cmp.Or(r.Also[0].Collection, r.Also[0].Resource)
	case r.Op != "":
		o.Collection = string(r.Op) + " " + r.Ref.Collection
	}
	if f := r.Fault; f != nil {
		o.Fault = f.String()
		if f.Always() && f.After == scenarios.AfterArrival && !f.SendsAnswer() {
			o.Status = 0 // the fault sends no status
		}
	}
	if r.Delay.Kind != scenarios.NoDelay {
		o.Delay = r.Delay.String()
	}
	return o
}

func (s *Server) handleScenarios(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("runtime") == "true" {
		writeJSON(w, http.StatusOK, map[string]any{"runtime": s.runtimeDocs()})
		return
	}
	snap := s.snap.Load()
	st := s.status.Load()
	offset, err := pageParam(r, "offset", 0, math.MaxInt32)
	limit := 0
	if err == nil {
		limit, err = pageParam(r, "limit", defaultRoutePage, maxRoutePage)
	}
	if err != nil {
		writeProblem(w, newProblem(http.StatusBadRequest, err.Error()))
		return
	}
	page := snap.routes[min(offset, len(snap.routes)):min(offset+limit, len(snap.routes))]
	out := adminStatus{
		Version:    snap.version,
		LoadedAt:   snap.loadedAt,
		Source:     s.opts.Source,
		LastReload: adminReload{At: st.at, OK: st.err == nil, Errors: st.problems},
		Files:      []adminFile{},
		Routes:     []adminRoute{},
		Page:       adminPage{Offset: offset, Limit: limit, Total: len(snap.routes)},
		Unmatched:  s.unmatched.Load(),
		Runtime:    s.runtimeDocs(),
	}
	if end := offset + len(page); len(page) > 0 && end < len(snap.routes) {
		next := fmt.Sprintf("%s/scenarios?offset=%d&limit=%d", adminPrefix, end, limit)
		out.Page.Next = &next
	}
	if st.err != nil {
		problems := "problems"
		if len(st.problems) == 1 {
			problems = "problem"
		}
		msg := fmt.Sprintf("%d %s; the last good scenarios (version %d) keep serving", len(st.problems), problems, snap.version)
		out.LastReload.Error = &msg
	}
	if out.LastReload.Errors == nil {
		out.LastReload.Errors = []string{}
	}
	for _, f := range snap.table.Set().Files {
		out.Files = append(out.Files, adminFile{Path: f.Path, Name: f.Name, Routes: len(f.Routes)})
	}
	req := r
	for _, rt := range page {
		r := rt.route
		count, err := s.hitCount(req.Context(), rt)
		if err != nil {
			s.adminUnavailable(w, req, err)
			return
		}
		ar := adminRoute{
			Order: r.Index + 1, Name: r.Name, Methods: r.Methods, Path: r.Path, Priority: r.Priority,
			Source: r.Pos.String(), When: r.When.Describe(), Hits: count.Hits, Requests: rt.requests.admin(),
		}
		if ar.Methods == nil {
			ar.Methods = []string{}
		}
		if ar.When == nil {
			ar.When = []string{}
		}
		if r.State != nil {
			ar.State = r.State.Describe()
		}
		for _, resp := range r.Responses {
			ar.Responses = append(ar.Responses, outcome(resp))
		}
		if seq := r.Sequence; seq != nil {
			as := &adminSequence{After: string(seq.After), Calls: count.Hits}
			if seq.Per != nil {
				as.Per = seq.Per.String()
				ar.Keys = count.Keys
			}
			ar.Sequence = as
		}
		out.Routes = append(out.Routes, ar)
	}
	if fb := snap.table.Fallback(); fb != nil {
		o := outcome(fb)
		out.Fallback = &o
	}
	writeJSON(w, http.StatusOK, out)
}

// handleReset forgets all runtime state (sequence positions, hit counts,
// idempotency keys, counters, collections, route states, the request journal, the
// unmatched count) and refills seeded collections, or only
// the sequence state of the one route named by ?route=.
func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) {
	if !paramsKnown(w, r, "route") {
		return
	}
	snap := s.snap.Load()
	name := r.URL.Query().Get("route")
	if name == "" {
		// Requests writing their effects finish first; those still in a
		// delay find the epoch moved and write nothing (fence.go).
		s.fence.Lock()
		defer s.fence.Unlock()
		s.epoch.Add(1)
		if err := s.state.Reset(r.Context()); errors.Is(err, state.ErrResetUnconfirmed) {
			// Reset all the same; a replica that did not confirm may
			// answer its next request with effects a 503 (fence.go).
			s.log.Warn("state reset, but not every replica confirmed it in time", "error", err.Error())
		} else if err != nil {
			s.adminUnavailable(w, r, err)
			return
		}
		for _, rt := range snap.routes {
			rt.requests.reset()
		}
		s.reloadMu.Lock()
		err := s.seed(r.Context(), snap.table.Set(), true)
		s.reloadMu.Unlock()
		if err != nil {
			writeProblem(w, newProblem(http.StatusInsufficientStorage, err.Error()))
			return
		}
		s.unmatched.Store(0)
		s.faults.clear()
		s.hooks.d.Reset() // pending deliveries, the attempt log, the events
		s.log.Info("state reset", "routes", len(snap.routes))
		writeJSON(w, http.StatusOK, map[string]any{"reset": len(snap.routes)})
		return
	}
	n := 0
	for _, rt := range snap.routes {
		if rt.route.Name == name {
			if rt.shared { // else its hits are rt.requests', reset below
				if err := s.state.Sequences().Reset(r.Context(), rt.route.Identity); err != nil {
					s.adminUnavailable(w, r, err)
					return
				}
			}
			rt.requests.reset()
			n++
		}
	}
	if n == 0 {
		writeProblem(w, s.noRoute(name))
		return
	}
	s.log.Info("sequence state reset", "routes", n)
	writeJSON(w, http.StatusOK, map[string]any{"reset": n})
}

// handleReload reloads now, for --watch=false or a CI step that wants
// certainty rather than a file event.
func (s *Server) handleReload(w http.ResponseWriter, r *http.Request) {
	err := s.ReloadContext(r.Context())
	if errors.Is(err, errReloadPending) {
		writeProblem(w, newProblem(http.StatusServiceUnavailable, "Stopped waiting: the reload is still running (or the server is shutting down); its outcome will show in GET "+adminPrefix+"/scenarios."))
		return
	}
	if err != nil {
		p := newProblem(http.StatusUnprocessableEntity, "The scenarios did not load; the last good ones keep serving.")
		p.Errors = s.status.Load().problems
		writeProblem(w, p)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"version": s.Version(), "routes": s.Routes()})
}

type adminCounter struct {
	Name  string `json:"name"`
	Value int64  `json:"value"`
}

// handleCounters lists the named counters of seq by name, each with the
// value it last returned (the next call gets one more), a page at a time
// (?offset=, ?limit=, as listPage). POST /__admin/reset forgets them.
func (s *Server) handleCounters(w http.ResponseWriter, r *http.Request) {
	offset, limit, err := listPage(r)
	if err != nil {
		writeProblem(w, newProblem(http.StatusBadRequest, err.Error()))
		return
	}
	var list []state.Counter
	total := 0
	if p, ok := s.state.Counters().(state.CounterPager); ok {
		list, total, err = p.Page(r.Context(), offset, limit)
	} else {
		list, err = s.state.Counters().List(r.Context())
		total = len(list)
		list = list[min(offset, total):min(offset+limit, total)]
	}
	if err != nil {
		s.adminUnavailable(w, r, err)
		return
	}
	out := make([]adminCounter, len(list))
	for i, c := range list {
		out[i] = adminCounter{Name: c.Name, Value: c.Value}
	}
	writeJSON(w, http.StatusOK, map[string]any{"counters": out, "total": total, "offset": offset})
}

const adminPrefix = "/__admin"

// adminMethods are the methods each admin path takes, for routing and
// for the Allow header of a 405.
var adminMethods = map[string]string{
	adminPrefix + "/health":             "GET, HEAD",
	adminPrefix + "/scenarios":          "GET, POST, DELETE",
	adminPrefix + "/scenarios/{id}":     "GET, DELETE",
	adminPrefix + "/reset":              "POST",
	adminPrefix + "/reload":             "POST",
	adminPrefix + "/idempotency":        "GET, DELETE",
	adminPrefix + "/idempotency/expire": "POST",
	adminPrefix + "/counters":           "GET",
	adminPrefix + "/collections":        "GET, DELETE",
	adminPrefix + "/collections/{name}": "GET, DELETE",
	adminPrefix + "/states":             "GET, DELETE",
	adminPrefix + "/states/{name}":      "GET, PUT, DELETE",
	adminPrefix + "/ui":                 "GET, HEAD", // and each of its assets, /ui/*
	adminPrefix + "/requests":           "GET, DELETE",
	adminPrefix + "/requests/count":     "GET",
	adminPrefix + "/requests/stream":    "GET",
	adminPrefix + "/faults":             "GET, POST, DELETE",
	adminCertificate:                    "GET, HEAD",
}

// adminTarget reports whether r is for the admin API and whether it came
// in the canonical form. A request is for the admin API when its path,
// percent-decoded, or decoded and cleaned of dot segments and repeated
// slashes, is /__admin or under it. It is canonical when the request
// target, as sent, is that cleaned path exactly (a query aside): origin
// form, nothing encoded that need not be. Every other spelling
// (/%5f_admin, //__admin, /./__admin, /__admin/../x, an absolute URL) is
// refused rather than served: a proxy rule that keeps /__admin from the
// outside matches the spelling it sees, so serving these would walk round
// it, and handing them to the scenarios would make one path mean two things.
func adminTarget(r *http.Request) (admin, canonical bool) {
	p := r.URL.Path
	if !strings.Contains(p, adminPrefix) { // the hot path: one scan, no allocation
		return false, false
	}
	clean := path.Clean(p)
	if !underAdmin(p) && !underAdmin(clean) {
		return false, false
	}
	target := r.RequestURI
	if target == "" { // a handler called directly, not by net/http's server
		target = r.URL.RequestURI()
	}
	if i := strings.IndexByte(target, '?'); i >= 0 {
		target = target[:i]
	}
	return true, target == clean
}

func underAdmin(p string) bool {
	return strings.HasPrefix(p, adminPrefix) && (len(p) == len(adminPrefix) || p[len(adminPrefix)] == '/')
}

// adminHostAllowed checks the Host of an admin call: a web page whose
// name an attacker points at 127.0.0.1 (DNS rebinding) sends its own name,
// which is not on the list. IP addresses, localhost names and no Host at
// all cannot come from such a page; names a container is reached by are
// given to --admin-hosts ("*" allows any).
func (s *Server) adminHostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "" || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	for _, h := range s.opts.AdminHosts {
		if h == "*" || strings.EqualFold(strings.TrimSuffix(h, "."), host) {
			return true
		}
	}
	return false
}

// paramsKnown refuses, with a 400 problem, a query parameter that a call
// which changes state does not read, and reports whether there was none.
// Ignored, it would narrow nothing: POST /__admin/reset?session=A reset
// every session's state, DELETE /__admin/requests?session=A emptied every
// parallel test's journal, and DELETE /__admin/faults?route=x cleared
// every route's faults, each answering success.
func paramsKnown(w http.ResponseWriter, r *http.Request, known ...string) bool {
	q := r.URL.Query()
	for _, name := range slices.Sorted(maps.Keys(q)) {
		if slices.Contains(known, name) {
			continue
		}
		takes := "takes no query parameters"
		if len(known) > 0 {
			takes = "takes only ?" + strings.Join(known, "=, ?") + "="
		}
		writeProblem(w, newProblem(http.StatusBadRequest, fmt.Sprintf(
			"%s %s %s: it does not read ?%s=, and without it would act on everything, not on what ?%s= names. Nothing was changed.",
			r.Method, r.URL.Path, takes, name, name)))
		return false
	}
	return true
}

// adminRouter is built once; the admin API is small and off the hot path.
func (s *Server) adminRouter() http.Handler {
	// Full paths on the root router: a mux subrouter answers a wrong
	// method with 404 instead of 405.
	r := mux.NewRouter()
	for path, h := range map[string]http.HandlerFunc{
		"/health": s.handleHealth, "/reset": s.handleReset, "/reload": s.handleReload,
		"/idempotency/expire": s.handleIdempotencyExpire, "/counters": s.handleCounters,
		"/tls/certificate": s.handleCertificate,
	} {
		r.HandleFunc(adminPrefix+path, h).Methods(strings.Split(adminMethods[adminPrefix+path], ", ")...)
	}
	r.HandleFunc(adminPrefix+"/scenarios", s.handleScenarios).Methods(http.MethodGet)
	s.runtimeRoutes(r)
	r.HandleFunc(adminPrefix+"/idempotency", s.handleIdempotency).Methods(http.MethodGet)
	r.HandleFunc(adminPrefix+"/idempotency", s.handleIdempotencyDelete).Methods(http.MethodDelete)
	s.collectionRoutes(r)
	s.stateRoutes(r)
	s.webhookRoutes(r)
	s.faultRoutes(r)
	s.recordingRoutes(r)
	// The dashboard: each embedded file by its exact path, so that any
	// other /ui/... gets the admin API's 404 problem.
	for _, p := range dashboard.Assets() {
		r.Handle(p, dashboard.Handler()).Methods(http.MethodGet, http.MethodHead)
	}
	r.HandleFunc(adminPrefix+"/requests", s.handleRequests).Methods(http.MethodGet)
	r.HandleFunc(adminPrefix+"/requests", s.handleRequestsClear).Methods(http.MethodDelete)
	r.HandleFunc(adminPrefix+"/requests/count", s.handleRequestsCount).Methods(http.MethodGet)
	r.HandleFunc(adminPrefix+"/requests/stream", s.handleRequestsStream).Methods(http.MethodGet)
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, newProblem(http.StatusNotFound, fmt.Sprintf("The admin API has no %s; its dashboard is %s/ui, and GET %s/scenarios lists what is served.", r.URL.Path, adminPrefix, adminPrefix)))
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allow := adminMethods[r.URL.Path]
		if strings.HasPrefix(r.URL.Path, adminPrefix+"/collections/") {
			allow = adminMethods[adminPrefix+"/collections/{name}"]
		}
		if strings.HasPrefix(r.URL.Path, adminPrefix+"/scenarios/") {
			allow = adminMethods[adminPrefix+"/scenarios/{id}"]
		}
		if strings.HasPrefix(r.URL.Path, adminPrefix+"/states/") {
			allow = adminMethods[adminPrefix+"/states/{name}"]
		}
		if strings.HasPrefix(r.URL.Path, dashboard.Path+"/") {
			allow = adminMethods[dashboard.Path]
		}
		w.Header().Set("Allow", allow) // RFC 9110 asks a 405 for it
		writeProblem(w, newProblem(http.StatusMethodNotAllowed, fmt.Sprintf("%s takes %s, not %s.", r.URL.Path, allow, r.Method)))
	})
	return r
}
