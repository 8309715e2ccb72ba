package loghandler

import (
	"strconv"
	"sync/atomic"
	"time"
)

// second is one wall-clock second formatted once: a log line's time up to
// its seconds ("2006-01-02T15:04:05") and its zone ("Z", "+09:00"), both as
// time.RFC3339 writes them. Zone offsets change only on whole seconds, so
// within one second of one location only the fraction differs.
type second struct {
	unix   int64
	loc    *time.Location
	prefix [len("2006-01-02T15:04:05")]byte
	zone   []byte
}

// lastSecond is the second the latest line was written in; a new second
// costs one allocation and one time.AppendFormat, every other line a
// load and a compare.
var lastSecond atomic.Pointer[second]

// secondOf returns t's second, or nil for a year RFC 3339 cannot write
// in four digits (left to time.AppendFormat).
func secondOf(t time.Time) *second {
	sec, loc := t.Unix(), t.Location()
	if c := lastSecond.Load(); c != nil && c.unix == sec && c.loc == loc {
		return c
	}
	if y := t.Year(); y < 0 || y > 9999 {
		return nil
	}
	c := &second{unix: sec, loc: loc}
	f := t.Truncate(time.Second).AppendFormat(make([]byte, 0, 32), time.RFC3339)
	copy(c.prefix[:], f)
	c.zone = f[len(c.prefix):]
	lastSecond.Store(c)
	return c
}

// appendTextTime writes t as slog's TextHandler does (its
// appendRFC3339Millis): RFC 3339 with exactly three digits of fraction.
func appendTextTime(b []byte, t time.Time) []byte {
	c := secondOf(t)
	if c == nil {
		const prefixLen = len("2006-01-02T15:04:05.000")
		n := len(b)
		b = t.Truncate(time.Millisecond).Add(time.Millisecond/10).AppendFormat(b, time.RFC3339Nano)
		return append(b[:n+prefixLen], b[n+prefixLen+1:]...)
	}
	ms := t.Nanosecond() / int(time.Millisecond)
	b = append(b, c.prefix[:]...)
	b = append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	return append(b, c.zone...)
}

// appendNanoTime writes t as time.RFC3339Nano does: the fraction to the
// nanosecond, its trailing zeros dropped, none when it is zero.
func appendNanoTime(b []byte, t time.Time) []byte {
	c := secondOf(t)
	if c == nil {
		return t.AppendFormat(b, time.RFC3339Nano)
	}
	b = append(b, c.prefix[:]...)
	if ns := t.Nanosecond(); ns != 0 {
		var d [10]byte
		d[0] = '.'
		for i := 9; i > 0; i-- {
			d[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for d[n-1] == '0' {
			n--
		}
		b = append(b, d[:n]...)
	}
	return append(b, c.zone...)
}

// appendMillis writes d as h.float(b, Millis(d)) does, without the
// shortest-float search where it is not needed: a whole number of
// nanoseconds below 10^15 has at most 15 digits, so its exact decimal
// in milliseconds is the shortest that reads back as the same float64.
// The exact decimal is what strconv writes wherever it chooses plain
// notation over an exponent: text (%g) from 10^-4 ms up to 10^6 ms,
// JSON from 10^-6 ms up to 10^21 ms.
func (h *Handler) appendMillis(b []byte, d time.Duration) []byte {
	lo, hi := time.Duration(100), time.Duration(1e12)
	if h.json {
		lo, hi = 1, 1e15
	}
	if d != 0 && (d < lo || d >= hi) {
		return h.float(b, Millis(d))
	}
	ms, frac := int64(d/time.Millisecond), int64(d%time.Millisecond)
	b = strconv.AppendInt(b, ms, 10)
	if frac == 0 {
		return b
	}
	var f [7]byte
	f[0] = '.'
	for i := 6; i > 0; i-- {
		f[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := 7
	for f[n-1] == '0' {
		n--
	}
	return append(b, f[:n]...)
}
