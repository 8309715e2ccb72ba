package server

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
)

// AdminHandler returns the admin API alone, as the listener of
// --admin-addr serves it (see ServeSplit): every request is an admin call,
// a path outside /__admin gets the admin API's 404, and the guards of
// serveAdmin apply. It is safe for concurrent use.
func (s *Server) AdminHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		admin, canonical := adminTarget(r)
		if !admin {
			// Not an admin path in any spelling: nothing for a proxy rule
			// to be walked round, so the router's 404 answers it.
			canonical = true
		}
		s.serveAdmin(w, r, canonical)
	})
}

// serveAdmin answers an admin call once it has passed the guards, in this
// order: a bounded body, the canonical spelling, a Host no DNS-rebinding
// page can send. Routes are registered in adminRouter and nowhere else.
func (s *Server) serveAdmin(w http.ResponseWriter, r *http.Request, canonical bool) {
	// The body must be read (and bounded) even where no handler wants it,
	// or net/http would wait to drain it after answering. It is handed on,
	// for the admin calls that take one.
	body, err := s.readBody(w, r, nil)
	if err != nil {
		s.bodyProblem(w, r, err, s.opts.Clock.Now())
		return
	}
	if len(body) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	if !canonical {
		writeProblem(w, newProblem(http.StatusBadRequest, fmt.Sprintf(
			"%s is not the canonical spelling of an admin path; ask for %s exactly (no percent-encoding, dot segments, repeated slashes or absolute URL).",
			strconv.Quote(r.RequestURI), path.Clean(r.URL.Path))))
		return
	}
	if !s.adminHostAllowed(r.Host) {
		writeProblem(w, newProblem(http.StatusForbidden, fmt.Sprintf(
			"Host %q may not call the admin API, against DNS rebinding: only localhost names, IP addresses and the names given to --admin-hosts may.", r.Host)))
		return
	}
	s.admin.ServeHTTP(w, r)
}
