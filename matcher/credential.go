package matcher

import (
	"encoding/base64"
	"net/http"
	"slices"
	"strings"

	"github.com/scenariomock/scenariomock/scenarios"
)

// Credential returns the credential an Authorization header value
// carries, so that one API key sent two ways is one credential: the token
// of "Bearer <token>", the user (or, with a password, "user:password") of
// "Basic <base64>" (curl -u sk_test_…: sends the key as the user with an
// empty password, as Stripe's documentation does; a value that is not
// base64 is taken as it is, as Stripe takes "Basic sk_…"), and any other
// value as it is. Schemes are matched without regard to case and surrounding
// blanks are dropped.
func Credential(auth string) string {
	auth = strings.TrimSpace(auth)
	scheme, rest, ok := strings.Cut(auth, " ")
	if !ok {
		return auth
	}
	rest = strings.TrimSpace(rest)
	switch {
	case strings.EqualFold(scheme, "Bearer"):
		return rest
	case strings.EqualFold(scheme, "Basic"):
		raw, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return rest // "Basic sk_…", which Stripe takes too
		}
		user, pass, _ := strings.Cut(string(raw), ":")
		if pass == "" {
			return user
		}
		return string(raw)
	}
	return auth
}

// Owner says whose a request's stored items are under scope: "" for
// everyone's (the zero Scope, or a request that carries nothing the scope
// reads); else the API key (Credential), then each of the scope's headers
// the request sets, as name=value, joined by spaces ("sk_test_1
// Stripe-Account=acct_1"). A request without the headers is the key's
// own, as a Stripe platform's request without Stripe-Account is.
func Owner(scope scenarios.Scope, h http.Header) string {
	if scope.IsZero() {
		return ""
	}
	var out string
	if scope.Credential {
		out = Credential(h.Get("Authorization"))
	}
	for _, name := range scope.Headers {
		if v := h.Get(name); v != "" {
			if out != "" {
				out += " "
			}
			out += name + "=" + v
		}
	}
	return out
}

// ActAs sets in h what makes Owner(scope, h) owner, an Owner's value for
// scope: the API key as a Bearer token (no Authorization for none) and
// each of the scope's headers named in owner, the others removed; a
// request acts for the owner of a stored object this way
// (scenarios.ScopeOf). An owner whose credential has a space cannot be
// told from its headers; it is taken up to the first one.
func ActAs(scope scenarios.Scope, owner string, h http.Header) {
	if scope.IsZero() {
		return
	}
	parts := strings.Split(owner, " ")
	if owner == "" {
		parts = nil
	}
	cred := ""
	if scope.Credential && len(parts) > 0 && !isScopeHeader(scope, parts[0]) {
		cred, parts = parts[0], parts[1:]
	}
	if scope.Credential {
		h.Del("Authorization")
		if cred != "" {
			h.Set("Authorization", "Bearer "+cred)
		}
	}
	for _, name := range scope.Headers {
		h.Del(name)
	}
	for _, p := range parts {
		if name, v, ok := strings.Cut(p, "="); ok && isScopeHeader(scope, p) {
			h.Set(name, v)
		}
	}
}

// isScopeHeader reports whether part, of an Owner's value, is one of the
// scope's headers (Name=value).
func isScopeHeader(scope scenarios.Scope, part string) bool {
	name, _, ok := strings.Cut(part, "=")
	return ok && slices.Contains(scope.Headers, name)
}
