package state

import (
	"encoding/binary"
	"time"
)

// entrySlot is one entry as the memory journal keeps it: its scalars, and
// everything else (strings, headers, body, near misses, violations)
// encoded into one pointer-free buffer. A full journal of 10,000
// requests then gives the garbage collector 10,000 buffers to mark and
// nothing inside them to trace, where Entry values holding each request's
// header map, path and value strings gave it ten objects and more per
// entry on every cycle (BenchmarkJournalGCMark). The buffer is reused
// when the entrySlot is overwritten, so a full journal appends without
// allocating.
type entrySlot struct {
	buf                 []byte
	id                  int64
	time                time.Time
	bodySize            int64
	status              int
	delayMs, durationMs float64
	upstreamMs          float64
	upstreamStatus      int
	version             int64
	headersSet          bool // Headers was not nil: JSON tells null from {}
	matched, catchAll   bool
	bodyTruncated       bool
	proxied             bool
	// The answer's scalars (Entry.Response); its headers and body are in
	// buf after the rest. hasResponse: Response was not nil.
	respStatus                        int
	respBodySize                      int64
	hasResponse, respHeadersSet       bool
	hasState                          bool // Entry.State, in buf after the violations
	respTruncated, respLost, respStrm bool
}

// set encodes e into s, in s's buffer: appends grow it, and a slot
// overwritten keeps its capacity for the next entry, unless that is far
// more than this entry needs (one large body must not pin its size in
// every slot it passed).
func (s *entrySlot) set(e *Entry) {
	if s.buf == nil { // a new slot: one allocation, room for the usual request
		room := 512 + len(e.Body)
		if e.Response != nil {
			room += 256 + len(e.Response.Body)
		}
		s.buf = make([]byte, 0, room)
	}
	b := s.buf[:0]
	// One call a string: a range over an array of them copied the nine
	// into it first (about 60 instructions a request, under callgrind).
	b = appendString(b, e.Method)
	b = appendString(b, e.Path)
	b = appendString(b, e.Query)
	b = appendString(b, e.Route)
	b = appendString(b, e.Fault)
	b = appendString(b, e.FaultAfter)
	b = appendString(b, e.Idempotency)
	b = appendString(b, e.Session)
	b = appendString(b, e.Upstream)
	b = EncodeHeaders(b, e.Headers, e.Redact)
	b = binary.AppendUvarint(b, uint64(len(e.Body)))
	b = append(b, e.Body...)
	b = binary.AppendUvarint(b, uint64(len(e.NearMisses)))
	for _, m := range e.NearMisses {
		b = appendString(appendString(b, m.Route), m.Reason)
	}
	b = binary.AppendUvarint(b, uint64(len(e.Violations)))
	for _, v := range e.Violations {
		b = appendString(b, v)
	}
	s.hasState = e.State != nil
	if m := e.State; m != nil {
		b = appendString(appendString(appendString(appendString(b, m.Name), m.Key), m.From), m.To)
	}
	s.hasResponse = e.Response != nil
	if r := e.Response; r != nil {
		if r.HeadersEncoded != nil {
			b = append(b, r.HeadersEncoded...)
		} else {
			b = EncodeHeaders(b, r.Headers, e.Redact)
		}
		b = binary.AppendUvarint(b, uint64(len(r.Body)))
		b = append(b, r.Body...)
		s.respStatus, s.respBodySize, s.respHeadersSet = r.Status, r.BodySize, r.Headers != nil
		s.respTruncated, s.respLost, s.respStrm = r.BodyTruncated, r.Lost, r.Streamed
	}
	if cap(b) > 4<<10 && cap(b) > 4*len(b) {
		b = append([]byte(nil), b...)
	}
	s.buf = b
	s.id, s.time, s.bodySize, s.status = e.ID, e.Time, e.BodySize, e.Status
	s.delayMs, s.durationMs, s.version = e.DelayMs, e.DurationMs, e.Version
	s.proxied, s.upstreamStatus, s.upstreamMs = e.Proxied, e.UpstreamStatus, e.UpstreamMs
	s.headersSet, s.matched, s.catchAll, s.bodyTruncated = e.Headers != nil, e.Matched, e.CatchAll, e.BodyTruncated
}

// EncodeHeaders appends h to b as the memory journal keeps a header
// (EntryResponse.HeadersEncoded): its count, then each name and its
// values, those of red's secret headers as red redacts them (red may be
// nil). It is safe for concurrent use.
func EncodeHeaders(b []byte, h map[string][]string, red Redactor) []byte {
	b = binary.AppendUvarint(b, uint64(len(h)))
	for name, values := range h {
		b = appendString(b, name)
		b = binary.AppendUvarint(b, uint64(len(values)))
		secret := red != nil && red.Secret(name)
		for _, v := range values {
			if secret {
				v = red.Redact(v)
			}
			b = appendString(b, v)
		}
	}
	return b
}

func appendString(b []byte, s string) []byte {
	// The uvarint of a length below 128 is that one byte; most of an
	// entry's strings are that short, and several are empty.
	switch {
	case len(s) == 0:
		return append(b, 0)
	case len(s) < 0x80:
		return append(append(b, byte(len(s))), s...)
	}
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// entry decodes s. b is a copy of s.buf that the entry's strings and body
// view without copying again: b must never change.
func (s *entrySlot) entry(b []byte) Entry {
	d := decoder{b: b}
	e := Entry{
		ID: s.id, Time: s.time, BodySize: s.bodySize, Status: s.status,
		DelayMs: s.delayMs, DurationMs: s.durationMs, Version: s.version,
		Matched: s.matched, CatchAll: s.catchAll, BodyTruncated: s.bodyTruncated,
		Proxied: s.proxied, UpstreamStatus: s.upstreamStatus, UpstreamMs: s.upstreamMs,
	}
	e.Method, e.Path, e.Query, e.Route = d.str(), d.str(), d.str(), d.str()
	e.Fault, e.FaultAfter, e.Idempotency = d.str(), d.str(), d.str()
	e.Session, e.Upstream = d.str(), d.str()
	e.Headers = d.headers(s.headersSet)
	if body := d.bytes(); len(body) > 0 {
		e.Body = body
	}
	if n := d.uvarint(); n > 0 {
		e.NearMisses = make([]NearMiss, n)
		for i := range e.NearMisses {
			e.NearMisses[i] = NearMiss{Route: d.str(), Reason: d.str()}
		}
	}
	if n := d.uvarint(); n > 0 {
		e.Violations = make([]string, n)
		for i := range e.Violations {
			e.Violations[i] = d.str()
		}
	}
	if s.hasState {
		e.State = &StateMove{Name: d.str(), Key: d.str(), From: d.str(), To: d.str()}
	}
	if s.hasResponse {
		r := &EntryResponse{
			Status: s.respStatus, BodySize: s.respBodySize,
			BodyTruncated: s.respTruncated, Lost: s.respLost, Streamed: s.respStrm,
		}
		r.Headers = d.headers(s.respHeadersSet)
		if body := d.bytes(); len(body) > 0 {
			r.Body = body
		}
		e.Response = r
	}
	return e
}

// headers reads what EncodeHeaders wrote: nil for none, unless set (the
// map was empty, not nil: JSON tells null from {}).
func (d *decoder) headers(set bool) map[string][]string {
	n := d.uvarint()
	if n == 0 && !set {
		return nil
	}
	h := make(map[string][]string, n)
	for range n {
		name := d.str()
		values := make([]string, d.uvarint())
		for i := range values {
			values[i] = d.str()
		}
		h[name] = values
	}
	return h
}

// decoder reads what entrySlot.set wrote, in order.
type decoder struct{ b []byte }

func (d *decoder) uvarint() int {
	v, n := binary.Uvarint(d.b)
	d.b = d.b[n:]
	return int(v)
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	b := d.b[:n:n]
	d.b = d.b[n:]
	return b
}

func (d *decoder) str() string { return view(d.bytes()) }
