package idempotency

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"hash"
	"math"
	"mime"
	"net/url"
	"strconv"
	"strings"

	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/scenarios"
)

// Fingerprint is what must be equal for a retry to count as the same
// request.
type Fingerprint [sha256.Size]byte

// FingerprintOf hashes the parts of in that the route's fingerprint names.
// Bodies are canonicalised by their media type, so that what a client may
// legitimately vary between two sends of one request does not count:
// JSON key order, insignificant whitespace and the spelling of a number
// (1, 1.0 and 1e0 are one value); the order of form parameters. Any other
// body is its bytes.
func FingerprintOf(in *matcher.Request, parts []scenarios.FingerprintPart, vars map[string]string) Fingerprint {
	h := sha256.New()
	for _, p := range parts {
		switch {
		case p.Attr != nil:
			v, ok := in.Attribute(p.Attr, vars)
			field(h, p.Attr.String(), v, ok)
		case p.Whole == "method":
			field(h, "method", in.HTTP.Method, true)
		case p.Whole == "path":
			field(h, "path", in.HTTP.URL.Path, true)
		case p.Whole == "body":
			field(h, "body", string(canonicalBody(in)), true)
		}
	}
	var f Fingerprint
	h.Sum(f[:0])
	return f
}

// field writes one named value, length-prefixed so that no two different
// lists of values hash the same bytes.
func field(h hash.Hash, name, v string, present bool) {
	var n [8]byte
	for _, s := range []string{name, v} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	if !present {
		h.Write([]byte{0}) // an absent value differs from an empty one
	}
}

// canonicalBody returns the body in a form where equal requests are equal
// bytes.
func canonicalBody(in *matcher.Request) []byte {
	if len(in.Body) == 0 {
		return nil
	}
	mt, _, _ := mime.ParseMediaType(in.HTTP.Header.Get("Content-Type"))
	switch {
	case mt == "application/x-www-form-urlencoded":
		if vals, err := url.ParseQuery(string(in.Body)); err == nil {
			return []byte("form:" + vals.Encode()) // Encode sorts by key, keeps each key's values in order
		}
	case mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "":
		if out, ok := canonicalJSON([]byte("json:"), in.Body); ok {
			return out
		}
	}
	return append([]byte("raw:"), in.Body...)
}

// appendNumber writes a number by value, as the matcher compares numbers:
// an integer as an integer, anything else as the shortest float64 text.
// A number too large for float64 keeps its text.
func appendNumber(b []byte, n json.Number) []byte {
	if i, err := n.Int64(); err == nil {
		return strconv.AppendInt(b, i, 10)
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) {
		return append(b, n...)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
		return strconv.AppendInt(b, int64(f), 10)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
