package server

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/scenariomock/scenariomock/journal"
	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/state"
)

// journalRecord collects what the journal needs of a mock request beyond
// what its log line gets: the body, the snapshot version, the near misses.
// serveScenario finds it in the request's context, and logRequestAt, which
// every outcome of a request passes exactly once, appends the entry.
//
// Under Serve each connection has one record, in its context (see
// connJournal), which its requests reuse: an HTTP/1 connection serves one
// request at a time, so this costs no allocation per request. Otherwise
// (HTTP/2, or the handler served by another http.Server) a request gets a
// record of its own as its context, the request's own context embedded,
// at the cost of two allocations.
type journalRecord struct {
	context.Context // nil in a connection's record
	entry           state.Entry
	// body is the request body in the pooled buffer: copied, up to the
	// body limit, when the entry is appended.
	body []byte
	// refused: the body was refused (413, 408, unreadable), so none is kept.
	refused bool
	// unmatched: no route matched (the fallback or a 404 answered).
	unmatched bool
	// catchAll: a route marked unmatched: true answered, which the entry
	// records as matching no route.
	catchAll bool
	near     []matcher.NearMiss
	// active: the record is a mock request's (serveScenario's), not left
	// over on the connection from an earlier one.
	active bool
	// done: the entry was appended; a request is journaled once.
	done bool
}

type journalKey struct{}

// Value finds the record under journalKey, and the rest in the request's
// own context.
func (jr *journalRecord) Value(key any) any {
	if key == (journalKey{}) {
		return jr
	}
	return jr.Context.Value(key)
}

// journalOn reports whether requests are journaled (--journal-size 0
// turns it off).
func (s *Server) journalOn() bool { return s.opts.JournalSize >= 0 }

// withJournal returns r carrying a fresh journal record, and the record;
// end must be called when the request ends.
func (s *Server) withJournal(r *http.Request, version int64) (*http.Request, *journalRecord) {
	if r.ProtoMajor == 1 {
		if jr, _ := r.Context().Value(journalKey{}).(*journalRecord); jr != nil && jr.Context == nil {
			*jr = journalRecord{active: true}
			jr.entry.Version = version
			return r, jr
		}
	}
	jr := &journalRecord{Context: r.Context(), active: true}
	jr.entry.Version = version
	return r.WithContext(jr), jr
}

// end makes a connection's record inactive between requests, so that an
// admin request on the connection is not taken for a mock request.
func (jr *journalRecord) end() { jr.active = false }

// connJournal gives each connection Serve accepts its journal record.
func connJournal(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, journalKey{}, &journalRecord{})
}

// journalOf returns the record r carries, or nil (an admin request, or the
// journal is off).
func (s *Server) journalOf(ctx context.Context) *journalRecord {
	if !s.journalOn() {
		return nil
	}
	jr, _ := ctx.Value(journalKey{}).(*journalRecord)
	if jr == nil || !jr.active {
		return nil
	}
	return jr
}

// record appends r's journal entry, once. The extras are the log line's:
// "idempotency", "fault" and "fault_after" are kept.
func (s *Server) record(jr *journalRecord, r *http.Request, route string, status int, delay time.Duration, start, now time.Time, extra []slog.Attr) {
	if jr.done {
		return
	}
	jr.done = true
	e := &jr.entry
	e.Time = start
	e.Method = r.Method
	e.Path = r.URL.Path
	e.Query = r.URL.RawQuery
	// Not a copy: net/http makes each request's header map afresh and
	// writes it no more once the handler runs, and handlers do not write
	// it (net/http's rule, which the server keeps). A clone would cost
	// three allocations per request, the journal's largest share.
	e.Headers = r.Header
	if !s.opts.JournalKeepsSecrets {
		e.Headers = journal.RedactHeaders(r.Header) // a copy, only when it has a credential
	}
	switch {
	case len(jr.body) > 0:
		keep := min(len(jr.body), s.opts.JournalBodyLimit)
		// The body's buffer goes back to a pool after the request.
		e.Body = bytes.Clone(jr.body[:keep])
		e.BodySize = int64(len(jr.body))
		e.BodyTruncated = keep < len(jr.body)
	case jr.refused:
		// A refused body is not kept; the size is the one declared, or,
		// for a chunked body, unknown (0), but it was cut all the same.
		e.BodySize = max(r.ContentLength, 0)
		e.BodyTruncated = true
	}
	e.Route = route
	e.Matched = route != "" && !jr.unmatched && !jr.catchAll
	e.CatchAll = jr.catchAll
	if len(jr.near) > 0 {
		e.NearMisses = make([]state.NearMiss, len(jr.near))
		for i, n := range jr.near {
			e.NearMisses[i] = state.NearMiss{Route: n.Route, Reason: n.Reason}
		}
	}
	e.Status = status
	e.DelayMs = millis(delay)
	e.DurationMs = millis(now.Sub(start))
	for _, a := range extra {
		switch a.Key {
		case "idempotency":
			e.Idempotency = a.Value.String()
		case "fault":
			e.Fault = a.Value.String()
		case "fault_after":
			e.FaultAfter = a.Value.String()
		}
	}
	// Not the request's context: an entry is kept when the client has
	// left, and a remote journal must not drop it for that.
	if err := s.state.Journal().Append(context.Background(), e); err != nil {
		s.log.Warn("request not journaled", "method", r.Method, "path", r.URL.Path, "error", err.Error())
	}
}
