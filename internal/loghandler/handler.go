package loghandler

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// New returns a slog.Handler that writes each record exactly as
// slog's TextHandler (or, with asJSON, its JSONHandler) writes it with
// default options, but in about half the time and without a lock of its
// own: each record is formatted into a pooled buffer and written with one
// Write call, so w must be safe for concurrent use (a LogWriter is).
//
// It exists because the request log line is on every request's path, and
// slog's handlers there cost more than the rest of the handler together:
// they serialize on a mutex held across Write. Records in a group opened
// by WithGroup, which scenariomock does not use, are handed to slog's own
// handler.
func New(w io.Writer, asJSON bool, level slog.Leveler) slog.Handler {
	if level == nil {
		level = slog.LevelInfo
	}
	h := &Handler{w: w, json: asJSON, level: level}
	h.req = h.requestKeys()
	return h
}

// Handler is the handler New returns; its HandleRequest writes the
// request log line without building a record. It is safe for concurrent
// use.
type Handler struct {
	w     io.Writer
	json  bool
	level slog.Leveler
	pre   []byte      // attributes added by WithAttrs, formatted, each led by a separator
	attrs []slog.Attr // the same, for a fallback created by WithGroup
	req   requestKeys // the request line's constant parts, derived from the above
}

var logBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func (h *Handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

// open starts a record in a pooled buffer; close ends it, writes it out
// with one Write and returns the buffer.
func (h *Handler) open() (*[]byte, []byte) {
	bp := logBuffers.Get().(*[]byte)
	b := (*bp)[:0]
	if h.json {
		b = append(b, '{')
	}
	return bp, b
}

func (h *Handler) close(bp *[]byte, b []byte) error {
	if h.json {
		b = append(b, '}')
	}
	b = append(b, '\n')
	_, err := h.w.Write(b)
	if cap(b) <= 16<<10 { // keep only small buffers
		*bp = b
		logBuffers.Put(bp)
	}
	return err
}

func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	bp, b := h.open()
	first := true
	if !r.Time.IsZero() {
		b = h.key(b, slog.TimeKey, &first)
		b = h.time(b, r.Time.Round(0))
	}
	b = h.key(b, slog.LevelKey, &first)
	b = h.str(b, r.Level.String())
	b = h.key(b, slog.MessageKey, &first)
	b = h.str(b, r.Message)
	b = append(b, h.pre...)
	r.Attrs(func(a slog.Attr) bool {
		b = h.attr(b, "", a, &first)
		return true
	})
	return h.close(bp, b)
}

// HandleRequest writes the request log line: exactly what Handle writes
// for a record with message RequestMsg and the attributes method, path,
// route, status, duration_ms, delay_ms (when positive) and idempotency
// (when not empty), in that order (server's tests hold them equal),
// formatted with the same helpers but without building the record, and
// with its constant parts (level, message, keys) formatted once.
// routeText, when not nil, is route as h.Value formats it, formatted once
// by a caller that writes many lines with it. idem, when not empty, is
// the idempotency outcome, the attribute a request to an idempotent
// route adds after the others.
func (h *Handler) HandleRequest(t time.Time, method, path, route string, routeText []byte, status int, duration, delay time.Duration, idem string) error {
	if lw, ok := h.w.(*Writer); ok {
		// Formatted straight into the Writer's buffer, under its lock: no
		// buffer of its own, no copy.
		if b, ok := lw.lockBuffer(); ok {
			return lw.unlockBuffer(h.appendRequest(b, t, method, path, route, routeText, status, duration, delay, idem))
		}
	}
	bp := logBuffers.Get().(*[]byte)
	b := h.appendRequest((*bp)[:0], t, method, path, route, routeText, status, duration, delay, idem)
	_, err := h.w.Write(b)
	if cap(b) <= 16<<10 { // keep only small buffers
		*bp = b[:0]
		logBuffers.Put(bp)
	}
	return err
}

// appendRequest appends the request line, its newline included.
func (h *Handler) appendRequest(b []byte, t time.Time, method, path, route string, routeText []byte, status int, duration, delay time.Duration, idem string) []byte {
	k := &h.req
	b = append(b, k.time...)
	b = h.time(b, t.Round(0))
	b = append(b, k.method...)
	b = h.str(b, method)
	b = append(b, k.path...)
	b = h.str(b, path)
	b = append(b, k.route...)
	if routeText != nil {
		b = append(b, routeText...)
	} else {
		b = h.str(b, route)
	}
	b = append(b, k.status...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, k.duration...)
	b = h.appendMillis(b, duration)
	if delay > 0 {
		b = append(b, k.delay...)
		b = h.appendMillis(b, delay)
	}
	if idem != "" {
		b = append(b, k.idem...)
		b = h.str(b, idem)
	}
	if h.json {
		b = append(b, '}')
	}
	return append(b, '\n')
}

// Millis is a duration as the logs give every duration: a number of
// milliseconds, under a key ending in _ms. Numbers, so that a program
// reading JSON logs can add and compare them; one unit, so that no key
// needs parsing (slog's own handlers write integer nanoseconds in JSON
// and Go's "1.5s" in text).
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Value returns s formatted as h writes a string value (quoted as it
// needs, in text; a JSON string), for HandleRequest's routeText.
func (h *Handler) Value(s string) []byte { return h.str(nil, s) }

// requestKeys are the request line's constant parts, each with the
// separator before it; time's is the line's start, method's carries
// level, message and the attributes from WithAttrs.
type requestKeys struct{ time, method, path, route, status, duration, delay, idem []byte }

// requestKeys formats the constant parts for h's format and attributes.
func (h *Handler) requestKeys() requestKeys {
	var k requestKeys
	if h.json {
		k.time = []byte{'{'}
	}
	first := true
	k.time = h.key(k.time, slog.TimeKey, &first)
	k.method = h.key(nil, slog.LevelKey, &first)
	k.method = h.str(k.method, slog.LevelInfo.String())
	k.method = h.key(k.method, slog.MessageKey, &first)
	k.method = h.str(k.method, RequestMsg)
	k.method = append(k.method, h.pre...)
	k.method = h.key(k.method, "method", &first)
	for _, f := range []struct {
		dst *[]byte
		key string
	}{{&k.path, "path"}, {&k.route, "route"}, {&k.status, "status"}, {&k.duration, "duration_ms"}, {&k.delay, "delay_ms"}, {&k.idem, "idempotency"}} {
		*f.dst = h.key(nil, f.key, &first)
	}
	return k
}

// RequestMsg is the message of the request log line.
const RequestMsg = "request"

// float writes a float64 as slog's handlers do: strconv's shortest 'g'
// in text, encoding/json's format in JSON (without its allocations).
func (h *Handler) float(b []byte, f float64) []byte {
	if !h.json {
		return strconv.AppendFloat(b, f, 'g', -1, 64)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return jsonMarshal(b, f) // an error, written as slog writes one
	}
	// encoding/json's floatEncoder: 'f' unless tiny or huge, and e-09
	// shortened to e-9.
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

func (h *Handler) duration(b []byte, d time.Duration) []byte {
	if h.json {
		return strconv.AppendInt(b, int64(d), 10)
	}
	return append(b, d.String()...)
}

func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	n := Handler{w: h.w, json: h.json, level: h.level}
	first := false // the built-ins always come first
	n.pre = append([]byte(nil), h.pre...)
	for _, a := range as {
		n.pre = h.attr(n.pre, "", a, &first)
	}
	n.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	n.req = n.requestKeys()
	return &n
}

func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	opts := &slog.HandlerOptions{Level: h.level}
	var s slog.Handler = slog.NewTextHandler(h.w, opts)
	if h.json {
		s = slog.NewJSONHandler(h.w, opts)
	}
	return s.WithAttrs(h.attrs).WithGroup(name)
}

// key writes a separator unless the key comes first, then the key.
func (h *Handler) key(b []byte, key string, first *bool) []byte {
	return h.prefixedKey(b, "", key, first)
}

// prefixedKey writes a key in groups (text only). Like slog, it quotes
// the whole when the prefix or the key alone would need it, so an empty
// key in a group is quoted.
func (h *Handler) prefixedKey(b []byte, prefix, key string, first *bool) []byte {
	if !*first {
		if h.json {
			b = append(b, ',')
		} else {
			b = append(b, ' ')
		}
	}
	*first = false
	switch {
	case prefix == "":
		b = h.str(b, key)
	case needsQuoting(prefix) != quoteNone || needsQuoting(key) != quoteNone:
		b = strconv.AppendQuote(b, prefix+key)
	default:
		b = append(append(b, prefix...), key...)
	}
	if h.json {
		return append(b, ':')
	}
	return append(b, '=')
}

// attr writes one attribute; prefix is the dotted path of the groups it
// is in (text only: JSON nests groups as objects).
func (h *Handler) attr(b []byte, prefix string, a slog.Attr, first *bool) []byte {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return b // slog elides an empty attribute
	}
	if a.Value.Kind() == slog.KindGroup {
		as := a.Value.Group()
		if !h.nonEmpty(as) {
			return b // and a group with nothing in it
		}
		if a.Key == "" { // a group without a key is inlined
			for _, ga := range as {
				b = h.attr(b, prefix, ga, first)
			}
			return b
		}
		if h.json {
			b = h.key(b, a.Key, first)
			b = append(b, '{')
			inner := true
			for _, ga := range as {
				b = h.attr(b, "", ga, &inner)
			}
			return append(b, '}')
		}
		for _, ga := range as {
			b = h.attr(b, prefix+a.Key+".", ga, first)
		}
		return b
	}
	b = h.prefixedKey(b, prefix, a.Key, first)
	return h.value(b, a.Value)
}

func (h *Handler) nonEmpty(as []slog.Attr) bool {
	for _, a := range as {
		v := a.Value.Resolve()
		if v.Kind() == slog.KindGroup {
			if h.nonEmpty(v.Group()) {
				return true
			}
			continue
		}
		if !(slog.Attr{Key: a.Key, Value: v}).Equal(slog.Attr{}) {
			return true
		}
	}
	return false
}

// value writes an attribute's value as slog's handlers do; the formats
// differ only for floats, durations and arbitrary values.
func (h *Handler) value(b []byte, v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindString:
		return h.str(b, v.String())
	case slog.KindTime:
		return h.time(b, v.Time())
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool())
	case slog.KindDuration:
		return h.duration(b, v.Duration())
	case slog.KindFloat64:
		return h.float(b, v.Float64())
	}
	x := v.Any()
	if h.json {
		if err, ok := x.(error); ok {
			if _, marshals := x.(json.Marshaler); !marshals {
				return h.str(b, err.Error())
			}
		}
		return jsonMarshal(b, x)
	}
	if tm, ok := x.(encoding.TextMarshaler); ok {
		data, err := tm.MarshalText()
		if err != nil {
			return h.str(b, "!ERROR:"+err.Error())
		}
		return h.str(b, string(data))
	}
	if bs, ok := x.([]byte); ok {
		return strconv.AppendQuote(b, string(bs))
	}
	return h.str(b, fmt.Sprintf("%+v", x))
}

// jsonMarshal appends v as encoding/json writes it without HTML escaping,
// as slog does; an error is written the way slog writes one.
func jsonMarshal(b []byte, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		b = append(b, '"')
		b = appendJSONEscaped(b, "!ERROR:"+err.Error())
		return append(b, '"')
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

func (h *Handler) str(b []byte, s string) []byte {
	if h.json {
		b = append(b, '"')
		b = appendJSONEscaped(b, s)
		return append(b, '"')
	}
	switch needsQuoting(s) {
	case quoteNone:
		return append(b, s...)
	case quotePlain: // strconv.Quote of printable ASCII without " or \ adds only the quotes
		return append(append(append(b, '"'), s...), '"')
	}
	return strconv.AppendQuote(b, s)
}

func (h *Handler) time(b []byte, t time.Time) []byte {
	if h.json {
		b = append(b, '"')
		b = appendNanoTime(b, t)
		return append(b, '"')
	}
	return appendTextTime(b, t)
}

// The answers of needsQuoting: no quotes; quotes around the text as it is
// (printable ASCII without quote or backslash); quotes and escapes.
const (
	quoteNone = iota
	quotePlain
	quoteEscaped
)

// textByte classifies ASCII bytes for needsQuoting: 0 stands as it is, 1
// needs quoting but no escape (space, '='), 2 needs quoting and an escape.
// A backslash and DEL need no quoting, but an escape once quoted.
var textByte = func() (t [utf8.RuneSelf]byte) {
	for c := range t {
		switch {
		case c < ' ' || c == '"':
			t[c] = 2
		case c == ' ' || c == '=':
			t[c] = 1
		}
	}
	return t
}()

// textBits classifies every byte for needsQuoting, one bit each: a
// space or '=' needs quotes; a control character or '"' needs quotes and
// an escape; a backslash or DEL needs no quotes, but an escape once
// quoted; a byte of a multi-byte character needs the rune's own test.
var textBits = func() (t [256]byte) {
	for c := range t {
		switch {
		case c >= utf8.RuneSelf:
			t[c] = bitNonASCII
		case textByte[c] == 2:
			t[c] = bitEscape
		case textByte[c] == 1:
			t[c] = bitQuote
		case c == '\\' || c == 0x7f:
			t[c] = bitEscapeIfQuoted
		}
	}
	return t
}()

const (
	bitQuote = 1 << iota
	bitEscape
	bitEscapeIfQuoted
	bitNonASCII
)

// needsQuoting is slog's rule for text values: empty, or holding a space,
// an equals sign, a character JSON would escape (a backslash aside), or
// anything not printable. It also tells whether quoting would escape
// anything, since strconv.Quote of the rest only adds the quotes.
//
// Every request's line asks it of its method, path and route: ASCII is
// classified by one table lookup a byte, ORed together (four bytes a
// turn of the loop, which halves its instructions), and only text with
// other characters takes the rune by rune test.
func needsQuoting(s string) int {
	if s == "" {
		return quotePlain
	}
	var bits byte
	i := 0
	for ; i+4 <= len(s); i += 4 {
		q := s[i : i+4]
		bits |= textBits[q[0]] | textBits[q[1]] | textBits[q[2]] | textBits[q[3]]
	}
	for ; i < len(s); i++ {
		bits |= textBits[s[i]]
	}
	switch {
	case bits&bitNonASCII != 0:
		return needsQuotingRunes(s)
	case bits&bitEscape != 0:
		return quoteEscaped
	case bits&bitQuote == 0:
		return quoteNone
	case bits&bitEscapeIfQuoted != 0:
		return quoteEscaped
	}
	return quotePlain
}

// needsQuotingRunes is needsQuoting for text that is not all ASCII.
func needsQuotingRunes(s string) int {
	quote, escape := false, false
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch textByte[c] {
			case 2:
				return quoteEscaped
			case 1:
				quote = true
			}
			escape = escape || c == '\\' || c == 0x7f
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return quoteEscaped
		}
		i += size
	}
	switch {
	case !quote:
		return quoteNone
	case escape:
		return quoteEscaped
	}
	return quotePlain
}

// jsonSafe reports whether an ASCII byte stands unescaped in a JSON string.
func jsonSafe(c byte) bool { return c >= ' ' && c != '"' && c != '\\' }

const hexDigits = "0123456789abcdef"

// appendJSONEscaped escapes s for a JSON string as slog does: quotes,
// backslashes and control characters, invalid UTF-8 as U+FFFD, and U+2028
// and U+2029.
func appendJSONEscaped(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe(c) {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(append(b, s[start:i]...), `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		} else {
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(b, s[start:]...)
}
