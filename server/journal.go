package server

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/state"
)

// journalRecord collects what the journal needs of a mock request beyond
// what its log line gets: the body, the snapshot version, the near misses.
// serveScenario attaches it to the request as its context, and
// logRequestAt, which every outcome of a request passes exactly once,
// appends the entry. It is the request's context itself (the request's
// own embedded) so that carrying it costs one allocation, shared with the
// entry, and the request copy WithContext makes.
type journalRecord struct {
	context.Context
	entry state.Entry
	// body is the request body in the pooled buffer: copied, up to the
	// body limit, when the entry is appended.
	body []byte
	// refused: the body was refused (413, 408, unreadable), so none is kept.
	refused bool
	// unmatched: no route matched (the fallback or a 404 answered).
	unmatched bool
	near      []matcher.NearMiss
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

// withJournal returns r carrying a fresh journal record, and the record.
func (s *Server) withJournal(r *http.Request, version int64) (*http.Request, *journalRecord) {
	jr := &journalRecord{Context: r.Context()}
	jr.entry.Version = version
	return r.WithContext(jr), jr
}

// journalOf returns the record r carries, or nil (an admin request, or the
// journal is off).
func (s *Server) journalOf(ctx context.Context) *journalRecord {
	if !s.journalOn() {
		return nil
	}
	jr, _ := ctx.Value(journalKey{}).(*journalRecord)
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
	// Clone makes one backing array for all the values (and the map).
	e.Headers = r.Header.Clone()
	switch {
	case len(jr.body) > 0:
		keep := min(len(jr.body), s.opts.JournalBodyLimit)
		// The body's buffer goes back to a pool after the request.
		e.Body = bytes.Clone(jr.body[:keep])
		e.BodySize = int64(len(jr.body))
		e.BodyTruncated = keep < len(jr.body)
	case jr.refused && r.ContentLength > 0:
		// A refused body is not kept; the size is the one declared.
		e.BodySize = r.ContentLength
		e.BodyTruncated = true
	}
	e.Route = route
	e.Matched = route != "" && !jr.unmatched
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
