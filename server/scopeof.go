package server

import (
	"context"
	"fmt"

	"github.com/scenariomock/scenariomock/matcher"
)

// actFor is the stage before check for a route with scopeOf: (a browser's
// Stripe Checkout page, which carries no API key): it finds the stored
// object the route names, in whichever scope it was stored, and makes the
// request act for that scope's owner, as if it had carried their API key
// (matcher.ActAs): the operation's check and answer, stored, the save:
// entries and the events (to that owner's webhook endpoints) all read the
// owner from the request's headers, so they follow. Only the request the
// route's work sees (x.in.HTTP) changes: the journal keeps the headers
// that came. An id stored nowhere is the route's missing: answer, or
// leaves the request as it came. A store that fails answers 503; an id
// that does not render, 500.
func (s *Server) actFor(x *exchange) bool {
	if x.rt == nil || x.rt.scopeOf == nil {
		return true
	}
	op, so := x.rt.scopeOf, x.m.Route.ScopeOf
	d := x.templateData()
	b := renderBuffer{max: s.opts.MaxTemplateOutput}
	if err := so.ID.Execute(&b, d); err != nil {
		x.fail(renderError("scopeOf.id", b.max, err))
		return false
	}
	id := b.String()
	if id == "" {
		return true
	}
	coll, found, err := s.findStored(x.ctx, func(coll string) bool {
		_, ok := op.CollectionOwner(coll, so.Resource)
		return ok
	}, id)
	if err != nil {
		s.unavailable(x, err)
		return false
	}
	if !found {
		return s.missingOwner(x)
	}
	owner, _ := op.CollectionOwner(coll, so.Resource)
	r := x.in.HTTP.WithContext(x.in.HTTP.Context()) // a shallow copy
	r.Header = r.Header.Clone()
	matcher.ActAs(op.Scope(), owner, r.Header)
	x.in.HTTP = r
	d.Request.Headers = r.Header
	return true
}

// missingOwner answers the route's missing: when the object its
// scopeOf: names is stored in no scope, and reports whether the request
// goes on (as it came) for a route without one.
func (s *Server) missingOwner(x *exchange) bool {
	var miss *prepared
	if len(x.rt.responses) > 0 {
		miss = x.rt.responses[0].missing
	}
	if miss == nil {
		return true
	}
	d := x.templateData()
	d.instead = true // nothing was done: no event
	rec := &x.rec
	rec.apart(x)
	if err := miss.render(rec, s.opts.MaxTemplateOutput, x); err != nil {
		x.fail(fmt.Errorf("route %q: missing: %w", x.out.route, err))
		return false
	}
	x.kind = answerRecorded
	return false
}

// findStored returns the collection, of those owns takes, that keeps an
// item of that id, in whatever scope: the admin API takes a filter that
// names a stored webhook endpoint without the request that stored it
// (storedEndpointNamed), and a browser pays a Checkout Session without
// the API key that made it (actFor).
func (s *Server) findStored(ctx context.Context, owns func(coll string) bool, id string) (string, bool, error) {
	colls := s.state.Collections()
	counts, err := colls.Counts(ctx)
	if err != nil {
		return "", false, err
	}
	for _, c := range counts {
		if !owns(c.Name) {
			continue
		}
		if _, ok, err := colls.Load(ctx, c.Name, id); err != nil || ok {
			return c.Name, ok, err
		}
	}
	return "", false, nil
}
