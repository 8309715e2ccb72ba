package server

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
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
// page can send, the admin token. Routes are registered in adminRouter and
// nowhere else. A refused call is logged as such, never as a request to
// the scenarios.
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
	if r.URL.Path != adminHealth && !s.adminAuthorized(r) {
		s.unauthorized(w, r)
		return
	}
	s.admin.ServeHTTP(w, r)
}

// adminHealth needs no token: health checks (a container's HEALTHCHECK,
// a load balancer's probe) carry none, and it tells nothing but "up".
const adminHealth = adminPrefix + "/health"

// CheckAdminToken says whether token can be an admin token: empty (no
// token), or visible ASCII without spaces, which every client can send in
// an Authorization header as it is.
func CheckAdminToken(token string) error {
	for i := 0; i < len(token); i++ {
		if c := token[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("byte %d is %q: a token is visible ASCII without spaces (try openssl rand -hex 32)", i+1, token[i:i+1])
		}
	}
	return nil
}

// adminAuthorized reports whether r may call the admin API: always
// without an admin token, else only when r carries Authorization: Bearer
// <token>. The token is read from that header alone: in a query string it
// would land in logs and browser history. A handler that takes the token
// another way (a dashboard's login form) checks it with adminTokenValid.
func (s *Server) adminAuthorized(r *http.Request) bool {
	if s.adminToken == nil {
		return true
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	// RFC 9110 §11.1: the scheme is case-insensitive.
	return ok && strings.EqualFold(scheme, "Bearer") && s.adminTokenValid(strings.TrimLeft(token, " "))
}

// adminTokenValid reports whether token is the admin token (false when
// there is none). It compares SHA-256 digests in constant time, so that
// neither the time taken nor a length check tells how much of a guess was
// right.
func (s *Server) adminTokenValid(token string) bool {
	if s.adminToken == nil {
		return false
	}
	sum := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(sum[:], s.adminToken) == 1
}

// unauthorized answers an admin call without the right token: 401 with
// the challenge RFC 6750 §3 asks for.
func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request) {
	detail := "This admin call needs the admin token (--admin-token, SCENARIOMOCK_ADMIN_TOKEN) as Authorization: Bearer <token>; only " + adminHealth + " goes without."
	reason := "no admin token"
	if r.Header.Get("Authorization") != "" {
		detail = "The Authorization header does not carry the admin token (Authorization: Bearer <token>, as given to --admin-token or SCENARIOMOCK_ADMIN_TOKEN)."
		reason = "wrong admin token"
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="scenariomock admin"`)
	writeProblem(w, newProblem(http.StatusUnauthorized, detail))
	s.log.Warn("admin call refused", "method", r.Method, "path", r.URL.Path, "status", http.StatusUnauthorized, "reason", reason)
}
