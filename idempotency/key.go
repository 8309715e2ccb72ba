package idempotency

import (
	"errors"
	"strings"
)

// MaxKeyLength is the longest key accepted, Stripe's limit.
const MaxKeyLength = 255

// Errors of ParseKey; each is a 400 problem over HTTP.
var (
	ErrEmptyKey    = errors.New("the Idempotency-Key is empty")
	ErrLongKey     = errors.New("the Idempotency-Key is longer than 255 characters")
	ErrControlKey  = errors.New("the Idempotency-Key holds a control character")
	ErrBadQuotKey  = errors.New(`the Idempotency-Key starts with a quote but is not a valid quoted string (RFC 8941 sf-string: printable ASCII, \" and \\ the only escapes)`)
	ErrNonASCIIKey = errors.New("the Idempotency-Key holds a character outside printable ASCII")
)

// ParseKey returns the key a header (or other attribute) value names. The
// IETF draft sends it as an sf-string ("8e03978e-…", quoted); Stripe's
// clients send it bare. Both name the same key, so a quoted value is
// unquoted. Surrounding spaces are not part of the key (HTTP strips them
// from header values anyway).
func ParseKey(v string) (string, error) {
	v = trimBlanks(v)
	if strings.HasPrefix(v, `"`) {
		k, err := unquote(v)
		if err != nil {
			return "", err
		}
		v = k
	}
	switch {
	case v == "":
		return "", ErrEmptyKey
	case len(v) > MaxKeyLength:
		return "", ErrLongKey
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' || c == 0x7f {
			return "", ErrControlKey
		}
	}
	return v, nil
}

// unquote decodes an RFC 8941 sf-string (section 4.2.5): printable ASCII
// between double quotes, where only \" and \\ are escapes.
func unquote(v string) (string, error) {
	if len(v) < 2 || v[len(v)-1] != '"' {
		return "", ErrBadQuotKey
	}
	inner := v[1 : len(v)-1]
	var b strings.Builder
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		switch {
		case c == '\\':
			if i+1 == len(inner) || inner[i+1] != '"' && inner[i+1] != '\\' {
				return "", ErrBadQuotKey
			}
			i++
			b.WriteByte(inner[i])
		case c == '"':
			return "", ErrBadQuotKey
		case c < ' ' || c == 0x7f:
			return "", ErrControlKey
		case c > 0x7e:
			return "", ErrNonASCIIKey
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// trimBlanks is strings.Trim(v, " \t") without building the cutset's
// table on every key.
func trimBlanks(v string) string {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v
}
