package server

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"
)

// corsPolicy is a cors: block, or --cors, made ready to answer with. It
// belongs to a snapshot and is never changed.
type corsPolicy struct {
	anyOrigin bool
	origins   []string // patterns, lower case (scenarios.AllowsOrigin)
	// methods and headers are what a preflight allows, joined; "" means
	// what the preflight asks for.
	methods, headers string
	maxAge           time.Duration // 0: no Access-Control-Max-Age
	credentials      bool
	expose           []string // the block's exposeHeaders
}

func (p *corsPolicy) allows(origin string) bool {
	return p.anyOrigin || scenarios.AllowsOrigin(p.origins, origin)
}

// anyOriginPolicy is --cors: any origin, echoed, with credentials, and
// whatever method and headers a preflight asks for.
func anyOriginPolicy() *corsPolicy { return &corsPolicy{anyOrigin: true, credentials: true} }

func newCORSPolicy(c *scenarios.CORS) *corsPolicy {
	return &corsPolicy{
		anyOrigin:   slices.Contains(c.Origins, "*"),
		origins:     c.Origins,
		methods:     strings.Join(c.Methods, ", "),
		headers:     strings.Join(c.Headers, ", "),
		maxAge:      c.MaxAge,
		credentials: c.Credentials,
		expose:      c.ExposeHeaders,
	}
}

// corsRuntime is a snapshot's CORS: nil when no file has a cors: block
// and --cors is off, which keeps the hot path to one nil check.
type corsRuntime struct {
	// policies are the files' blocks in file order, then --cors.
	policies []*corsPolicy
	// expose is the Access-Control-Expose-Headers of answers no route
	// gives (404s, refused bodies, the fallback).
	expose []string
}

// buildCORS makes the snapshot's CORS and gives each route its file's
// policy, or --cors's when its file has no block. A route of a file
// with a block answers only the origins that block allows, --cors or not:
// the file is the more specific word.
func buildCORS(set *scenarios.Set, anyOrigin bool, routes []*routeRuntime) *corsRuntime {
	byBlock := map[*scenarios.CORS]*corsPolicy{}
	cr := &corsRuntime{}
	for _, f := range set.Files {
		if f.CORS != nil && byBlock[f.CORS] == nil {
			byBlock[f.CORS] = newCORSPolicy(f.CORS)
			cr.policies = append(cr.policies, byBlock[f.CORS])
		}
	}
	var fallback *corsPolicy
	if anyOrigin {
		fallback = anyOriginPolicy()
		cr.policies = append(cr.policies, fallback)
	}
	if len(cr.policies) == 0 {
		return nil
	}
	var configured []string
	for _, p := range cr.policies {
		configured = append(configured, p.expose...)
	}
	cr.expose = exposeValue(configured, []string{"Idempotent-Replayed"}, nil)
	for _, rt := range routes {
		r := rt.route.Route
		p := fallback
		if r.CORS != nil {
			p = byBlock[r.CORS]
		}
		if p == nil {
			continue
		}
		rt.cors = p
		replay := []string{"Idempotent-Replayed"}
		answers := slices.Clone(r.Responses)
		if idem := r.Idempotency; idem != nil {
			if idem.ReplayHeader != "" {
				replay = append(replay, idem.ReplayHeader)
			}
			for _, a := range []*scenarios.Response{idem.Missing, idem.Mismatch, idem.Conflict} {
				if a != nil {
					answers = append(answers, a)
				}
			}
		}
		rt.corsExpose = exposeValue(p.expose, replay, answers)
	}
	return cr
}

// exposeValue is the Access-Control-Expose-Headers value for answers that
// may carry the given names, the headers of these responses, Location and
// Retry-After (which the problems and idempotency answers send): every
// header that is not already readable, so that a page sees what curl sees.
func exposeValue(configured, replay []string, answers []*scenarios.Response) []string {
	names := append(slices.Clone(configured), replay...)
	names = append(names, "Location", "Retry-After")
	var add func(*scenarios.Response)
	add = func(r *scenarios.Response) {
		for _, h := range r.Headers {
			names = append(names, h.Name)
		}
		if r.Missing != nil {
			add(r.Missing)
		}
	}
	for _, r := range answers {
		add(r)
	}
	var out []string
	for _, n := range names {
		if !safelisted(n) && !strings.HasPrefix(n, "Access-Control-") && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return []string{strings.Join(out, ", ")}
}

// safelisted reports whether a page may read a response header without
// it being exposed (the Fetch standard's CORS-safelisted response-header
// names).
func safelisted(name string) bool {
	switch name {
	case "Cache-Control", "Content-Language", "Content-Length", "Content-Type", "Expires", "Last-Modified", "Pragma":
		return true
	}
	return false
}

// Shared header values: never appended to in place (their capacity is
// their length).
var (
	varyOrigin    = []string{"Origin"}
	varyPreflight = []string{"Origin, Access-Control-Request-Method, Access-Control-Request-Headers"}
	headerTrue    = []string{"true"}
)

// corsHeaders puts the CORS headers of an answer into h: the route's
// policy when rt is not nil, else that of answers no route gives (see
// allowing). A request without Origin is not from a browser's CORS
// fetch and gets none. Headers the route's answer sets itself override
// these, Access-Control-* included.
func (cr *corsRuntime) corsHeaders(h http.Header, r *http.Request, rt *routeRuntime) {
	o := r.Header["Origin"]
	if len(o) == 0 {
		return
	}
	origin := o[0]
	h["Vary"] = varyOrigin
	var allowed, credentials bool
	expose := cr.expose
	if rt != nil {
		if rt.cors == nil || !rt.cors.allows(origin) {
			return
		}
		allowed, credentials, expose = true, rt.cors.credentials, rt.corsExpose
	} else {
		allowed, credentials = cr.allowing(origin)
	}
	if !allowed {
		return
	}
	// The request's own value, capped so that nothing appends into it:
	// an echo costs no allocation.
	h["Access-Control-Allow-Origin"] = o[:1:1]
	if credentials {
		h["Access-Control-Allow-Credentials"] = headerTrue
	}
	h["Access-Control-Expose-Headers"] = expose
}

// allowing answers for what no route answers: an origin is allowed when
// some policy allows it, with credentials when one of those does. Such
// answers (a preflight, a 404) come before any route is chosen, so no
// file's block is more fitting than another's, and the answer to the
// actual request still carries only its own route's headers: a page can
// read a route's answer only if the route's file allows its origin.
func (cr *corsRuntime) allowing(origin string) (allowed, credentials bool) {
	for _, p := range cr.policies {
		if p.allows(origin) {
			allowed = true
			credentials = credentials || p.credentials
		}
	}
	return allowed, credentials
}

// isPreflight reports whether r is a CORS preflight (Fetch standard: an
// OPTIONS request with Origin and Access-Control-Request-Method).
func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && len(r.Header["Origin"]) > 0 && len(r.Header["Access-Control-Request-Method"]) > 0
}

// explicitOptions reports whether a route was written for OPTIONS: such a
// route answers preflights itself, a route taking any method does not
// (a catch-all would otherwise break every browser call).
func explicitOptions(m *scenarios.Route) bool { return slices.Contains(m.Methods, http.MethodOptions) }

// preflight answers a CORS preflight before routing: 204 with what the
// policies that allow the origin allow together (the union of their
// methods and headers, the shortest max age), or a 403 problem, which a
// browser reports as a CORS failure and the log explains.
func (s *Server) preflight(x *exchange, cr *corsRuntime) {
	w, r := x.w, x.r
	x.out.route = corsRoute
	origin := r.Header.Get("Origin")
	h := w.Header()
	h["Vary"] = varyPreflight
	var methods, headers []string
	echoMethod, echoHeaders, credentials, allowed := false, false, false, false
	var maxAge time.Duration
	for _, p := range cr.policies {
		if !p.allows(origin) {
			continue
		}
		if !allowed || p.maxAge < maxAge {
			maxAge = p.maxAge
		}
		allowed = true
		credentials = credentials || p.credentials
		echoMethod = echoMethod || p.methods == ""
		echoHeaders = echoHeaders || p.headers == ""
		methods = append(methods, p.methods)
		headers = append(headers, p.headers)
	}
	if !allowed {
		msg := fmt.Sprintf("Origin %s is not allowed: no cors: block lists it (and --cors is off).", strconv.Quote(origin))
		x.out.err = errors.New(msg)
		x.answerProblem(newProblem(http.StatusForbidden, msg))
		s.deliver(x)
		return
	}
	h["Access-Control-Allow-Origin"] = []string{origin}
	if credentials {
		h["Access-Control-Allow-Credentials"] = headerTrue
	}
	if echoMethod {
		h["Access-Control-Allow-Methods"] = r.Header["Access-Control-Request-Method"][:1:1]
	} else {
		h["Access-Control-Allow-Methods"] = []string{joinLists(methods)}
	}
	if asked := r.Header["Access-Control-Request-Headers"]; len(asked) > 0 {
		if echoHeaders {
			h["Access-Control-Allow-Headers"] = []string{strings.Join(asked, ", ")}
		} else {
			h["Access-Control-Allow-Headers"] = []string{joinLists(headers)}
		}
	}
	if maxAge > 0 {
		h["Access-Control-Max-Age"] = []string{strconv.Itoa(int(maxAge / time.Second))}
	}
	// Chrome asks before a public page calls a private address, as a page
	// deployed on the web calling a mock on localhost does.
	if r.Header.Get("Access-Control-Request-Private-Network") == "true" {
		h["Access-Control-Allow-Private-Network"] = headerTrue
	}
	x.rec.direct(h)
	x.rec.status = http.StatusNoContent
	x.kind = answerRecorded
	s.deliver(x)
}

// corsRoute names preflights answered before routing in the log.
const corsRoute = "(cors preflight)"

// joinLists joins comma-separated lists, without repeats.
func joinLists(lists []string) string {
	var out []string
	for _, l := range lists {
		for _, v := range strings.Split(l, ", ") {
			if v != "" && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return strings.Join(out, ", ")
}
