package idempotency

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

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
	// The inputs as they came (the body as its bytes, after its
	// Content-Type) are the memo's key, in one buffer: a sha256 hash
	// object and a write per value would allocate on every request. A
	// request the memo can keep has it on the stack, a larger one pooled.
	if n := len(in.Body) + 128; n > smallInputs {
		bp := buffers.Get().(*[]byte)
		raw := appendRaw(slices.Grow((*bp)[:0], n), in, parts, vars)
		fp := fingerprintOf(raw, in, parts, vars)
		putBuffer(bp, &raw)
		return fp
	}
	var room [smallInputs]byte
	return fingerprintOf(appendRaw(room[:0], in, parts, vars), in, parts, vars)
}

// smallInputs is the room FingerprintOf has on the stack: more than the
// memo keeps (memoInputs).
const smallInputs = 256

// fingerprintOf returns the fingerprint of in, whose inputs as they came
// are raw: the memo's, else the SHA-256 of the canonical bytes, which
// the memo then keeps.
func fingerprintOf(raw []byte, in *matcher.Request, parts []scenarios.FingerprintPart, vars map[string]string) Fingerprint {
	if fp, ok := memo.get(raw); ok {
		return fp
	}
	bp := buffers.Get().(*[]byte)
	b := appendInputs(slices.Grow((*bp)[:0], len(in.Body)+128), in, parts, vars, true)
	fp := Fingerprint(sha256.Sum256(b))
	putBuffer(bp, &b)
	memo.put(raw, fp)
	return fp
}

// appendInputs appends the named parts of in, each length-prefixed so
// that no two different lists of values give the same bytes; the body
// canonicalised by its media type, or (!canonical) as appendRaw appends
// it.
func appendInputs(b []byte, in *matcher.Request, parts []scenarios.FingerprintPart, vars map[string]string, canonical bool) []byte {
	if !canonical {
		return appendRaw(b, in, parts, vars)
	}
	for _, p := range parts {
		if p.Attr == nil && p.Whole == "body" {
			b = append(b, "body"...)
			at := len(b)
			b = append(b, 0, 0, 0, 0, 0, 0, 0, 0) // the body's length, once known
			b = appendCanonicalBody(b, in)
			binary.BigEndian.PutUint64(b[at:], uint64(len(b)-at-8))
			continue
		}
		b = appendPart(b, in, p, vars)
	}
	return b
}

// appendRaw appends the named parts of in as appendInputs does, but the
// body as its bytes after its Content-Type, which determine its
// canonical form: the memo's key, which costs no parsing (not even of
// the media type).
func appendRaw(b []byte, in *matcher.Request, parts []scenarios.FingerprintPart, vars map[string]string) []byte {
	for _, p := range parts {
		b = appendPart(b, in, p, vars)
	}
	return b
}

// appendPart appends part p of in, the body as its bytes.
func appendPart(b []byte, in *matcher.Request, p scenarios.FingerprintPart, vars map[string]string) []byte {
	switch {
	case p.Attr != nil:
		v, ok := in.Attribute(p.Attr, vars)
		b = field(b, p.Attr.String(), v, ok)
	case p.Whole == "method":
		b = field(b, "method", in.HTTP.Method, true)
	case p.Whole == "path":
		b = field(b, "path", in.HTTP.URL.Path, true)
	case p.Whole == "body":
		var ct string
		if len(in.Body) > 0 {
			ct = contentType(in)
		}
		b = field(b, "body", ct, true)
		b = binary.BigEndian.AppendUint64(b, uint64(len(in.Body)))
		b = append(b, in.Body...)
	}
	return b
}

// buffers hold the bytes fingerprints are computed over, and the
// scratch of canonical JSON objects, between requests.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// putBuffer returns *b's storage to the pool, unless it grew past what is
// worth keeping.
func putBuffer(bp *[]byte, b *[]byte) {
	if cap(*b) <= 64<<10 {
		*bp = (*b)[:0]
		buffers.Put(bp)
	}
}

// field appends one named value, length-prefixed so that no two different
// lists of values give the same bytes.
func field(b []byte, name, v string, present bool) []byte {
	for _, s := range []string{name, v} {
		b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	if !present {
		b = append(b, 0) // an absent value differs from an empty one
	}
	return b
}

// appendCanonicalBody appends the body in a form where equal requests are
// equal bytes.
func appendCanonicalBody(b []byte, in *matcher.Request) []byte {
	if len(in.Body) == 0 {
		return b
	}
	mt := mediaType(contentType(in))
	switch {
	case mt == "application/x-www-form-urlencoded":
		if vals, err := url.ParseQuery(string(in.Body)); err == nil {
			return append(append(b, "form:"...), vals.Encode()...) // Encode sorts by key, keeps each key's values in order
		}
	case mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "":
		if out, ok := canonicalJSON(append(b, "json:"...), in.Body); ok {
			return out
		}
	}
	return append(append(b, "raw:"...), in.Body...)
}

// contentType is in.HTTP.Header.Get("Content-Type") without
// canonicalizing the name on every request: it is canonical already.
func contentType(in *matcher.Request) string {
	if v := in.HTTP.Header["Content-Type"]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// mediaType returns a Content-Type's media type in lower case, without
// its parameters: what mime.ParseMediaType gives for a valid one, without
// its allocations on every request.
func mediaType(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.TrimSpace(ct)
	for i := 0; i < len(ct); i++ {
		if c := ct[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(ct)
		}
	}
	return ct
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
