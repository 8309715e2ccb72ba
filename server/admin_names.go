package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/scenariomock/scenariomock/journal"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/webhooks"
)

// A filter that names a route, or a webhook event type, by a name nothing
// has would select nothing, and a check such as verify --route "creat
// payment" --none (or --at-most 1) would pass whatever the client did.
// So a name is refused unless the current scenarios have it (the files
// and the runtime documents, of any session) or the record does (the
// journal names the route, the webhook log the type): a route that a
// reload or a removed runtime document took away is still counted while
// its requests are in the journal. A route that exists and was never
// called is a count of 0, as before.

// routeProblem returns the problem that refuses a route= filter that
// names no route, or nil when name is known.
func (s *Server) routeProblem(ctx context.Context, name string) (*Problem, error) {
	if name == corsRoute || s.hasRoute(name) {
		return nil, nil
	}
	f, err := journal.ParseFilter(url.Values{"route": {name}})
	if err != nil {
		return nil, err
	}
	found := false
	// eachMatching reads the whole journal; what it costs a filter that
	// names a gone route is what a listing costs.
	if err := s.eachMatching(ctx, f, func(*state.Entry) { found = true }); err != nil {
		return nil, err
	}
	if found {
		return nil, nil
	}
	return newProblem(http.StatusBadRequest, fmt.Sprintf("Bad filter route=%q: no route has that name, and no request in the journal was answered by one; %s",
		name, nearNames(name, s.routeNames(), "route", "GET /__admin/scenarios lists them"))), nil
}

// stateFilterProblem returns the problem that refuses a state.<name>=
// filter of q whose name no route's state has and no journal entry moved,
// or nil: as a misspelt route=, it would select nothing, and a check that
// a state moved at most once would pass whatever happened.
func (s *Server) stateFilterProblem(ctx context.Context, q url.Values) (*Problem, error) {
	var keys []string
	for k := range q {
		if name, ok := strings.CutPrefix(k, "state."); ok && name != "" {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, nil // the routes' state names are not walked for a filter without one
	}
	slices.Sort(keys)
	names := s.stateNames()
	for _, k := range keys {
		name := strings.TrimPrefix(k, "state.")
		if slices.Contains(names, name) {
			continue
		}
		found := false
		if err := s.eachMatching(ctx, journal.Filter{}, func(e *state.Entry) {
			found = found || e.State != nil && e.State.Name == name
		}); err != nil {
			return nil, err
		}
		if !found {
			return newProblem(http.StatusBadRequest, fmt.Sprintf("Bad filter %s=%q: no route has a state named %q, and no request in the journal moved one; %s",
				k, q.Get(k), name, nearNames(name, names, "state name", "GET /__admin/states lists them"))), nil
		}
	}
	return nil, nil
}

// routeNames are the names of the routes served now, in match order.
func (s *Server) routeNames() []string {
	var names []string
	for _, rt := range s.snap.Load().routes {
		if !slices.Contains(names, rt.route.Name) {
			names = append(names, rt.route.Name)
		}
	}
	return names
}

// noRoute is the 400 of an admin call that names a route no scenario has
// (POST /__admin/faults, POST /__admin/reset?route=), with the name it
// likely misspells: the same status as routeProblem's for a filter, since
// it is the same mistake, in what the call sent, on a path that exists.
func (s *Server) noRoute(name string) *Problem {
	return newProblem(http.StatusBadRequest, fmt.Sprintf("No route is named %q; %s", name, nearNames(name, s.routeNames(), "route", "GET /__admin/scenarios lists them")))
}

// eventTypeProblem returns the problem that refuses a type= filter of the
// webhook log that names an event type no route sends and no delivery
// has, or nil when typ is known.
func (s *Server) eventTypeProblem(typ string) *Problem {
	var types []string
	for _, rt := range s.snap.Load().routes {
		for _, e := range append(slices.Clip(rt.route.Events), rt.route.SaveEvents()...) {
			if e.Type == typ {
				return nil
			}
			if !slices.Contains(types, e.Type) {
				types = append(types, e.Type)
			}
		}
	}
	if len(s.hooks.d.Deliveries(webhooks.Filter{Type: typ, Limit: 1})) > 0 {
		return nil
	}
	return newProblem(http.StatusBadRequest, fmt.Sprintf("Bad filter type=%q: no route sends events of that type, and no delivery had one; %s",
		typ, nearNames(typ, types, "event type", "GET /__admin/scenarios lists the routes and their events")))
}

// nearNames says which of names word most likely misspells (did you mean
// "create payment"?), or, when none is near, what the names are: the end
// of a sentence.
func nearNames(word string, names []string, what, lister string) string {
	if len(names) == 0 {
		return "the scenarios have no " + what + "s."
	}
	type near struct {
		name string
		d    int
	}
	var close []near
	lw := strings.ToLower(word)
	limit := max(2, len(word)/4)
	for _, n := range names {
		ln := strings.ToLower(n)
		d := scenarios.EditDistance(lw, ln)
		if d <= limit || strings.Contains(ln, lw) || strings.Contains(lw, ln) {
			close = append(close, near{n, d})
		}
	}
	slices.SortStableFunc(close, func(a, b near) int { return a.d - b.d })
	quote := func(ns []string) string {
		q := make([]string, len(ns))
		for i, n := range ns {
			q[i] = fmt.Sprintf("%q", n)
		}
		return strings.Join(q, ", ")
	}
	if len(close) > 0 {
		var ns []string
		for _, c := range close[:min(len(close), 3)] {
			if c.d == close[0].d { // the nearest, and as near
				ns = append(ns, c.name)
			}
		}
		if len(ns) == 1 {
			return "did you mean " + quote(ns) + "?"
		}
		return "did you mean one of " + quote(ns) + "?"
	}
	if len(names) <= 10 {
		return "the " + what + "s are " + quote(names) + "."
	}
	return fmt.Sprintf("there are %d %ss, none near it (%s).", len(names), what, lister)
}
