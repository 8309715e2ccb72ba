package server

import (
	"maps"
	"net/http"

	"github.com/scenariomock/scenariomock/journal"
	"github.com/scenariomock/scenariomock/state"
)

// journalOn reports whether requests are journaled (--journal-size 0
// turns it off).
func (s *Server) journalOn() bool { return s.opts.JournalSize >= 0 }

// journalResponse fills x's entry's answer (state.Entry.Response) from
// what deliver is about to send, or from the answer a fault is about to
// break: record calls it just before the first byte goes out, so the
// head is the one the client gets (w's fields, CORS ones included, under
// the answer's own) and the body is cut at the journal's body limit like
// the request's. It returns nil when no answer was made: a fault at
// arrival, a client that left during the delay, shutdown. Nothing is
// copied here: Append copies what it keeps.
func (s *Server) journalResponse(x *exchange) *state.EntryResponse {
	o, r := &x.out, &x.response
	r.HeadersEncoded = nil
	var body []byte
	switch {
	case x.fault != nil && (x.kind == answerNone || x.produced):
		// deliverFault: the answer is in rec when one was made.
		if !x.produced {
			return nil
		}
		r.Status, r.Headers, body = x.rec.status, x.rec.sentHeader(x.w.Header()), x.rec.body
		r.Lost = o.status == 0
	case x.kind == answerRecorded:
		r.Status, r.Headers, body = x.rec.status, x.rec.sentHeader(x.w.Header()), x.rec.body
		r.HeadersEncoded = x.rec.head.of(r.Headers)
	case x.kind == answerStored:
		// replay has put the stored fields in w's header.
		r.Status, r.Headers, body = x.stored.Status, x.w.Header(), x.stored.Body
	case x.kind == answerProblem:
		h := maps.Clone(x.w.Header())
		if h == nil {
			h = http.Header{}
		}
		body = problemHead(h, x.problem)
		r.Status, r.Headers = x.problem.Status, h
	case x.kind == answerProxied && x.upstream != nil:
		// Streamed as it arrives: the body is never held, so not kept.
		r.Status, r.Headers, r.Streamed = x.upstream.Status, x.upstream.Header, true
		if h := x.w.Header(); len(h) > 0 {
			r.Headers = underHeaderCopy(x.upstream.Header, h)
		}
	default:
		return nil
	}
	// Set-Cookie is redacted by Append, with the request's credentials
	// (record sets the entry's Redact).
	keep := min(len(body), s.opts.JournalBodyLimit)
	r.Body, r.BodySize, r.BodyTruncated = body[:keep], int64(len(body)), keep < len(body)
	return r
}

// sentHeader is the head rec goes out with: its own header when it was
// rendered in w's (direct), else its fields over w's (as writeTo and the
// faults send them). A copy is made only when both have fields.
func (rec *recorder) sentHeader(w http.Header) http.Header {
	if rec.inW || len(w) == 0 {
		return rec.header
	}
	return underHeaderCopy(rec.header, w)
}

// underHeaderCopy returns over's fields on top of under's, in a new map.
func underHeaderCopy(over, under http.Header) http.Header {
	h := make(http.Header, len(over)+len(under))
	maps.Copy(h, under)
	maps.Copy(h, over)
	return h
}

// journalHead is a static answer's header as the journal encodes it
// (state.EncodeHeaders), made once when its route is compiled, so that
// journaling the answer copies bytes rather than walk a header map.
type journalHead struct {
	encoded []byte
	fields  int // the header's field names
}

// newJournalHead encodes h, unless a field of it is one the journal
// redacts: its encoding would depend on --journal-secrets.
func newJournalHead(h http.Header) journalHead {
	for name := range h {
		if (journal.Secrets{}).Secret(name) {
			return journalHead{}
		}
	}
	return journalHead{encoded: state.EncodeHeaders(nil, h, nil), fields: len(h)}
}

// of returns the encoding of sent, the header an answer rendered with
// jh's goes out with, or nil when sent holds more than jh's fields (a
// CORS field, a field w carried). Rendering set each of jh's fields in
// sent, so a header with no more names than jh holds jh's alone.
func (jh journalHead) of(sent http.Header) []byte {
	if jh.encoded == nil || len(sent) != jh.fields {
		return nil
	}
	return jh.encoded
}
