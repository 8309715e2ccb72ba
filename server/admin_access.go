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
	"time"

	"github.com/scenariomock/scenariomock/dashboard"
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
// page can send, no cross-site request forgery, the admin token. Routes
// are registered in adminRouter and nowhere else. A refused call is never
// logged as a request to the scenarios.
func (s *Server) serveAdmin(w http.ResponseWriter, r *http.Request, canonical bool) {
	// The body must be read (and bounded) even where no handler wants it,
	// or net/http would wait to drain it after answering. It is handed on,
	// for the admin calls that take one.
	body, err := s.readBody(w, r, nil)
	if err != nil {
		s.adminBodyProblem(w, r, err)
		return
	}
	if len(body) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	if !canonical && dashboardDirectory(r) {
		// The dashboard asked for as a directory, as people type it and
		// as a link to a page "under" /__admin/ui reads: sent to the one
		// spelling, which a proxy rule then sees as it is.
		u := dashboard.Path
		if r.URL.RawQuery != "" {
			u += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, u, http.StatusMovedPermanently)
		return
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
	// Before the token, so that a page on another site learns nothing,
	// not even whether there is one.
	if why := s.crossSite(r, len(body) > 0); why != "" {
		writeProblem(w, newProblem(http.StatusForbidden, why))
		s.log.Warn("admin call refused", "method", r.Method, "path", r.URL.Path, "status", http.StatusForbidden, "reason", "cross-site request")
		return
	}
	if !adminOpen(r.URL.Path) && !s.adminAuthorized(r) {
		s.unauthorized(w, r)
		return
	}
	s.admin.ServeHTTP(w, r)
}

// dashboardDirectory reports whether r is a GET or HEAD of the
// dashboard's directory form, /__admin/ui/, spelled so (no encoding, no
// absolute form) and with nothing after it.
func dashboardDirectory(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	target, _, _ := strings.Cut(r.RequestURI, "?")
	return target == dashboard.Path+"/"
}

// crossSite says why r is refused as a cross-site request forgery, or ""
// if it is not one. A web page on any site can make its visitor's browser
// send a form or fetch() to 127.0.0.1 without asking the server first (no
// CORS preflight), and nothing keeps the request from changing state even
// though the page cannot read the answer. So calls that change state are
// refused when
//   - the browser says they come from another origin (Sec-Fetch-Site, or
//     an Origin that is not the Host: net/http's CrossOriginProtection), or
//   - they carry a body a browser sends without a preflight (text/plain, a
//     form, multipart, or no type at all), which catches browsers that send
//     neither header. No admin call reads such a body; a JSON one
//     (application/json) needs a preflight, which the admin API never
//     grants, and is let through for the calls that take one.
//
// Clients that are not browsers (curl, a test's HTTP client) send neither
// Origin nor Sec-Fetch-Site and pass; so do pages the admin API serves
// itself (same origin).
func (s *Server) crossSite(r *http.Request, hasBody bool) string {
	if err := s.crossOrigin.Check(r); err != nil {
		from := "Sec-Fetch-Site: " + r.Header.Get("Sec-Fetch-Site")
		if r.Header.Get("Sec-Fetch-Site") == "" {
			from = fmt.Sprintf("Origin %q, Host %q", r.Header.Get("Origin"), r.Host)
		}
		return fmt.Sprintf("%s %s comes from a page on another site (%s): a web page may not change the admin API's state, against cross-site request forgery. Call it from curl or a program (they send no Origin), or from a page on the admin API's own origin.",
			r.Method, r.URL.Path, from)
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return ""
	}
	ct := r.Header.Get("Content-Type")
	// The essence, as a browser parses it, or more: anything before ";".
	essence, _, _ := strings.Cut(ct, ";")
	switch strings.ToLower(strings.TrimSpace(essence)) {
	case "", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data":
		if !hasBody {
			return ""
		}
		if ct == "" {
			ct = "no Content-Type"
		}
		todo := "Send no body, or send JSON as application/json."
		if r.URL.Path == adminPrefix+"/scenarios" {
			// The one call whose body is a document, in YAML as often as
			// not: curl -d sends it as a form.
			todo = "Send the scenario document as application/yaml or application/json: curl -H 'Content-Type: application/yaml' --data-binary @file.yaml."
		}
		return fmt.Sprintf("%s %s has a body (%s) that any web page can make a browser send without asking first (a CORS-safelisted type): calls that change the admin API's state refuse it, against cross-site request forgery. %s",
			r.Method, r.URL.Path, ct, todo)
	}
	return ""
}

// adminHealth needs no token: health checks (a container's HEALTHCHECK,
// a load balancer's probe) carry none, and it tells nothing but "up".
const adminHealth = adminPrefix + "/health"

// adminOpen reports whether an admin path is served without the bearer
// token. A page a browser navigates to cannot send one; such a handler
// is listed here and checks the token its own way (a login form's field
// or a cookie, with adminTokenValid) before it shows or changes anything.
// The dashboard's page and assets are static and hold nothing secret: the
// page asks for the token and sends it on every call it makes. The TLS
// certificate is what every handshake already sends to anyone.
func adminOpen(path string) bool {
	return path == adminHealth || path == adminCertificate || dashboard.Serves(path)
}

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

// adminUnavailable answers an admin call whose state could not be read or
// written: a 503 rather than an answer that may be wrong.
func (s *Server) adminUnavailable(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("Retry-After", "1")
	s.adminProblem(w, r, err, newProblem(http.StatusServiceUnavailable, "The state store did not answer: "+err.Error()))
}

// adminBodyProblem answers an admin call whose body could not be read,
// and closes the connection, as refuseBody does for a mock request.
func (s *Server) adminBodyProblem(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("Connection", "close")
	s.adminProblem(w, r, err, newProblem(statusOf(err), err.Error()))
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// adminProblem sends p and logs the call as a request that went wrong
// (the admin API is not journaled).
func (s *Server) adminProblem(w http.ResponseWriter, r *http.Request, err error, p *Problem) {
	x := &exchange{s: s, w: w, r: r, start: s.opts.Clock.Now(), recorded: true}
	x.out.err, x.out.status = err, p.Status
	writeProblem(w, p)
	s.logLine(x)
}
