package idempotency

import (
	"errors"
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
		err            error
	}{
		{"bare", "8e03978e-40d5-43e8-bc93-6894a57f9324", "8e03978e-40d5-43e8-bc93-6894a57f9324", nil},
		{"sf-string names the same key", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`, "8e03978e-40d5-43e8-bc93-6894a57f9324", nil},
		{"escapes", `"a\"b\\c"`, `a"b\c`, nil},
		{"spaces around", "  k1 ", "k1", nil},
		{"tabs and spaces around", "\t k1\t \t", "k1", nil},
		{"only blanks", " \t ", "", ErrEmptyKey},
		{"inner space kept", "a b", "a b", nil},
		{"255 characters", strings.Repeat("k", 255), strings.Repeat("k", 255), nil},
		{"empty", "", "", ErrEmptyKey},
		{"empty quoted", `""`, "", ErrEmptyKey},
		{"256 characters", strings.Repeat("k", 256), "", ErrLongKey},
		{"control", "a\x01b", "", ErrControlKey},
		{"DEL", "a\x7fb", "", ErrControlKey},
		{"unterminated quote", `"abc`, "", ErrBadQuotKey},
		{"bad escape", `"a\nb"`, "", ErrBadQuotKey},
		{"inner quote", `"a"b"`, "", ErrBadQuotKey},
		{"non-ASCII in sf-string", "\"caf\u00e9\"", "", ErrNonASCIIKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseKey(tc.in)
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Errorf("ParseKey(%q) = %q, %v; want %q, %v", tc.in, got, err, tc.want, tc.err)
			}
		})
	}
}
