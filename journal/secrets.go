package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/scenariomock/scenariomock/state"
)

// SecretHeaders are the headers the journal keeps redacted by default
// (serve --journal-secrets keep keeps them as sent): credentials that an
// admin API reader, a dashboard screenshot or a shared Redis should not
// see, in requests and, for Set-Cookie, in the answers journaled with
// them.
var SecretHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key", "Api-Key", "X-Auth-Token", "Set-Cookie"}

// redactedPrefix starts a redacted value, after the scheme an
// Authorization header keeps ("Bearer redacted:1a2b3c4d").
const redactedPrefix = "redacted:"

// Redact returns the redacted form of a secret header's value: the
// authentication scheme, when the value has one (Bearer, Basic), and the
// first 8 hex digits of the value's SHA-256, so that requests with other
// credentials stay apart and a filter can name one (Match redacts a
// filter's value the same way). The hash is unsalted, to be the same on
// every replica: it tells keys apart, it does not hide a guessable one.
func Redact(value string) string {
	if last := lastRedacted.Load(); last != nil && last.value == value {
		return last.redacted
	}
	sum := sha256.Sum256([]byte(value))
	digest := redactedPrefix + hex.EncodeToString(sum[:4])
	out := digest
	scheme, rest, ok := strings.Cut(value, " ")
	if ok && rest != "" && isToken(scheme) {
		out = scheme + " " + digest
	}
	lastRedacted.Store(&redaction{value, out})
	return out
}

// lastRedacted is the last value Redact redacted: a client sends the
// same API key on every request, and every journaled request redacts it.
var lastRedacted atomic.Pointer[redaction]

type redaction struct{ value, redacted string }

// isToken reports whether s is a short run of letters, as an
// authentication scheme is.
func isToken(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// RedactHeaders returns h with the values of SecretHeaders redacted. It
// returns h itself when it has none of them (no copy, no allocation), and
// otherwise a copy, leaving h as it was.
func RedactHeaders(h http.Header) http.Header {
	return state.RedactHeaders(h, Secrets{})
}

// Secrets is the journal's state.Redactor: the values of SecretHeaders,
// as Redact redacts them. The server sets it as a journal entry's Redact,
// so that the journal redacts while it copies the headers, in the one
// walk over each map, rather than after a walk of its own (and a copy)
// here.
type Secrets struct{}

// Secret reports whether name is one of SecretHeaders.
func (Secrets) Secret(name string) bool { return isSecret(name) }

// Redact is the package's Redact.
func (Secrets) Redact(value string) string { return Redact(value) }

var _ state.Redactor = Secrets{}

// isSecret reports whether a canonical header name is one of
// SecretHeaders; a switch, cheaper than a lookup per name on every
// journaled request.
func isSecret(name string) bool {
	switch name {
	case "Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key", "Api-Key", "X-Auth-Token", "Set-Cookie":
		return true
	}
	return false
}

// headerMatches reports whether a header's values hold want: as sent, or
// redacted as Redact does, for a secret header that was.
func headerMatches(vs []string, name, want string) bool {
	if slices.Contains(vs, want) {
		return true
	}
	return isSecret(name) && slices.Contains(vs, Redact(want))
}
