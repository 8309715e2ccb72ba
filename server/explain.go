package server

import (
	"fmt"

	"github.com/scenariomock/scenariomock/matcher"
)

// ExplainMode is how much a 404 tells the client about the routes that
// came closest to matching. The log always has the whole report.
type ExplainMode int

const (
	// ExplainRedacted, the default, names the closest routes and what
	// failed, but not the value a condition wants of a header, query
	// parameter or JSON key whose name looks secret (Authorization,
	// Cookie, X-Api-Key, access_token, password…): a client guessing a
	// token must not be told it.
	ExplainRedacted ExplainMode = iota
	// ExplainFull shows every wanted value.
	ExplainFull
	// ExplainOff answers the 404 problem without near misses.
	ExplainOff
)

var explainNames = [...]string{ExplainRedacted: "redacted", ExplainFull: "full", ExplainOff: "off"}

// String returns the mode's name, as --explain takes it.
func (m ExplainMode) String() string {
	if m < 0 || int(m) >= len(explainNames) {
		return fmt.Sprintf("ExplainMode(%d)", int(m))
	}
	return explainNames[m]
}

// ParseExplainMode returns the mode named full, redacted or off.
func ParseExplainMode(s string) (ExplainMode, error) {
	for m, name := range explainNames {
		if s == name {
			return ExplainMode(m), nil
		}
	}
	return 0, fmt.Errorf("want full, redacted or off, not %q", s)
}

// shown returns the near misses a 404 answers with under mode m.
func (m ExplainMode) shown(near []matcher.NearMiss) []matcher.NearMiss {
	switch m {
	case ExplainFull:
		return near
	case ExplainOff:
		return nil
	}
	out := make([]matcher.NearMiss, len(near))
	for i, n := range near {
		out[i] = n.Redacted()
	}
	return out
}
