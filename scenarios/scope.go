package scenarios

import (
	"net/textproto"
	"strings"

	"gopkg.in/yaml.v3"
)

// Scope says whose stored items are (a collection's, an OpenAPI source's
// resources, the events a webhooks: block keeps): everyone's, the zero
// Scope; or each API key's own (Credential: the key read from Bearer or
// Basic auth, as each Stripe account has its objects), and within it each
// value of Headers (Stripe-Account: a Connect platform acting for one of
// its connected accounts sees that account's objects, not its own).
//
// In a file: scope: none, scope: credential, or a list of credential and
// header.<Name>: scope: [credential, header.Stripe-Account].
type Scope struct {
	Credential bool
	Headers    []string // canonical header names
}

// IsZero says whether s is everyone's.
func (s Scope) IsZero() bool { return !s.Credential && len(s.Headers) == 0 }

// String writes s as a file does: "none", "credential", or the parts
// joined by a space ("credential header.Stripe-Account").
func (s Scope) String() string {
	if s.IsZero() {
		return "none"
	}
	var parts []string
	if s.Credential {
		parts = append(parts, "credential")
	}
	for _, h := range s.Headers {
		parts = append(parts, "header."+h)
	}
	return strings.Join(parts, " ")
}

var scopeModes = []string{"none", "credential"}

// scope decodes a scope: one word of scopeModes, or a list of
// credential and header.<Name>.
func (d *decoder) scope(n *yaml.Node, field string) Scope {
	n = d.resolve(n)
	if n.Kind != yaml.SequenceNode {
		w, _ := d.oneOfWord(n, field, scopeModes)
		return Scope{Credential: w == "credential"}
	}
	var s Scope
	if len(n.Content) == 0 {
		d.fail(n, field, "an empty list: want none, credential, or a list of credential and header.<Name>")
	}
	for _, e := range n.Content {
		e = d.resolve(e)
		v, ok := d.str(e, field)
		if !ok {
			continue
		}
		name, isHeader := strings.CutPrefix(v, "header.")
		switch {
		case v == "credential":
			s.Credential = true
		case isHeader && tokenRE.MatchString(name):
			s.Headers = append(s.Headers, textproto.CanonicalMIMEHeaderKey(name))
		default:
			d.fail(e, field, "want credential or header.<Name> in the list (header.Stripe-Account), got %q", v)
		}
	}
	return s
}
