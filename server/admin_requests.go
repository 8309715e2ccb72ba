package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/scenariomock/scenariomock/journal"
	"github.com/scenariomock/scenariomock/state"
)

// requestFilter reads the journal filter of r's query, without the
// parameters named in skip. It answers the request itself, and returns
// false, when the journal is off or the filter is bad.
func (s *Server) requestFilter(w http.ResponseWriter, r *http.Request, skip ...string) (journal.Filter, url.Values, bool) {
	if !s.journalOn() {
		writeProblem(w, newProblem(http.StatusNotFound, "The request journal is off (--journal-size 0): no request is recorded."))
		return journal.Filter{}, nil, false
	}
	// Not r.URL.Query(), which drops what it cannot parse (a ";", a bad
	// escape): a filter that lost a parameter would match too much.
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeProblem(w, newProblem(http.StatusBadRequest, "Bad filter: the query does not parse ("+err.Error()+"); escape ;, % and & in values."))
		return journal.Filter{}, nil, false
	}
	kept := url.Values{}
	for name, vs := range q {
		kept[name] = vs
	}
	for _, name := range skip {
		delete(kept, name)
	}
	f, err := journal.ParseFilter(kept)
	if err != nil {
		writeProblem(w, newProblem(http.StatusBadRequest, "Bad filter "+err.Error()+"."))
		return journal.Filter{}, nil, false
	}
	return f, q, true
}

// routeKnown answers the request with a 400 problem, and returns false,
// when its route= filter names a route that neither the scenarios nor the
// journal know (admin_names.go): a listing or a count, which verify asks,
// would be empty. A state.<name>= filter is refused the same way when no
// route has that state. The stream takes any name: a test may follow a route
// before it adds it.
func (s *Server) routeKnown(w http.ResponseWriter, r *http.Request, q url.Values) bool {
	p, err := s.stateFilterProblem(r.Context(), q)
	if p == nil && err == nil && q.Has("route") {
		p, err = s.routeProblem(r.Context(), q.Get("route"))
	}
	switch {
	case err != nil:
		s.adminUnavailable(w, r, err)
	case p != nil:
		writeProblem(w, p)
	default:
		return true
	}
	return false
}

// journalPage is how many entries a listing or the request stream reads
// from the journal at once: what a reader that stalls can pin.
const journalPage = 256

// eachMatching calls fn with each journal entry f matches, oldest first,
// reading the journal a page at a time: a listing holds one page and
// what it keeps, not a copy of the journal. The entry is the page's: fn
// copies what it keeps.
func (s *Server) eachMatching(ctx context.Context, f journal.Filter, fn func(*state.Entry)) error {
	j := s.state.Journal()
	for after := f.After(); ; {
		page, err := state.EntriesPage(ctx, j, after, journalPage)
		if err != nil {
			return err
		}
		// A client that left, or shutdown, stops a long match.
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for i := range page {
			if f.Match(&page[i]) {
				fn(&page[i])
			}
		}
		if len(page) < journalPage {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

// handleRequests lists the newest journal entries that match the filter
// (limit=, default 1000), newest last, with how many matched in all.
func (s *Server) handleRequests(w http.ResponseWriter, r *http.Request) {
	f, q, ok := s.requestFilter(w, r)
	if !ok || !s.routeKnown(w, r, q) {
		return
	}
	// The newest limit matches, in a ring: kept[total%limit] is the
	// oldest once it is full.
	limit, total := f.Limit(), 0
	var kept []state.Entry
	err := s.eachMatching(r.Context(), f, func(e *state.Entry) {
		if len(kept) < limit {
			kept = append(kept, *e)
		} else {
			kept[total%limit] = *e
		}
		total++
	})
	if err != nil {
		s.adminUnavailable(w, r, err)
		return
	}
	if len(kept) == limit {
		k := total % limit
		kept = append(kept[k:], kept[:k]...)
	}
	// Written an entry at a time: the whole answer can be many times the
	// journal's own size (a body of control bytes escapes to six bytes
	// each), and must not be held in memory at once.
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(windowWriter{s, w}, 32<<10)
	bw.WriteString("{\n  \"requests\": [")
	for i := range kept {
		if i > 0 {
			bw.WriteString(",")
		}
		b, err := json.MarshalIndent(&kept[i], "    ", "  ")
		if err != nil {
			return // cannot happen for an Entry; the answer is cut
		}
		bw.WriteString("\n    ")
		if _, err := bw.Write(b); err != nil {
			return // the client left
		}
	}
	if len(kept) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("],\n  \"total\": " + strconv.Itoa(total) + "\n}\n")
	_ = bw.Flush()
}

// handleRequestsCount counts the journal entries that match the filter.
func (s *Server) handleRequestsCount(w http.ResponseWriter, r *http.Request) {
	f, q, ok := s.requestFilter(w, r)
	if !ok || !s.routeKnown(w, r, q) {
		return
	}
	n := 0
	if err := s.eachMatching(r.Context(), f, func(*state.Entry) { n++ }); err != nil {
		s.adminUnavailable(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"count": n})
}

// handleRequestsClear empties the journal. Entry IDs go on increasing, so
// a live tail never sees one twice.
func (s *Server) handleRequestsClear(w http.ResponseWriter, r *http.Request) {
	if !paramsKnown(w, r) {
		return
	}
	if !s.journalOn() {
		writeProblem(w, newProblem(http.StatusNotFound, "The request journal is off (--journal-size 0): no request is recorded."))
		return
	}
	if err := s.state.Journal().Clear(r.Context()); err != nil {
		s.adminUnavailable(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleRequestsStream tails the journal as server-sent events: each
// matching entry as it is recorded, flushed one by one, a keep-alive
// comment when nothing happened for a while (so that proxies and clients
// keep the connection), until the client leaves or the server shuts down.
// Last-Event-ID (an EventSource reconnecting) or ?after= resumes after an
// entry; by default only entries recorded from now on are sent.
func (s *Server) handleRequestsStream(w http.ResponseWriter, r *http.Request) {
	f, q, ok := s.requestFilter(w, r, "after")
	if !ok {
		return
	}
	j := s.state.Journal()
	// An EventSource reconnects to the same URL with Last-Event-ID: the
	// header is the later position, so it wins over ?after=.
	param, text := "Last-Event-ID", r.Header.Get("Last-Event-ID")
	if text == "" && q.Has("after") {
		param, text = "after", q.Get("after")
	}
	var after int64
	if text != "" {
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || n < 0 {
			writeProblem(w, newProblem(http.StatusBadRequest, "Bad "+param+" "+strconv.Quote(text)+": want an entry id (0 replays every entry kept)."))
			return
		}
		after = n
	} else {
		entries, err := j.Entries(r.Context(), 0)
		if err != nil {
			s.adminUnavailable(w, r, err)
			return
		}
		if len(entries) > 0 {
			after = entries[len(entries)-1].ID
		}
	}
	// The stream ends when shutdown begins, not at the shutdown timeout:
	// it is never done on its own, and Shutdown waits for it.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.stopping, cancel)()

	rc := http.NewResponseController(w)
	// A client that stops reading blocks a write, which no context ends:
	// when the stream ends (shutdown, or the client left), a deadline a
	// second away ends such a write, and leaves the time to end a stream
	// that is read cleanly. Not when the handler returns on its own
	// (deferred after, so run before, the cancel above): the connection
	// may serve another request. The handler waits for it to have run:
	// on HTTP/2 the ResponseWriter must not be touched once it returns.
	ending := make(chan struct{})
	stopEnding := context.AfterFunc(ctx, func() {
		defer close(ending)
		_ = rc.SetWriteDeadline(time.Now().Add(time.Second))
	})
	defer func() {
		if !stopEnding() {
			<-ending
		}
	}()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx would hold the events back
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return
	}
	// Each write has WriteTimeout (a client that stops reading is
	// dropped, and the page it pins freed), the waits between none. Not
	// once the stream ends: the second set above must stand.
	window := func() bool {
		if ctx.Err() != nil {
			return false
		}
		s.writeWindow(w, 0)
		if ctx.Err() != nil {
			_ = rc.SetWriteDeadline(time.Now().Add(time.Second))
			return false
		}
		return true
	}
	var buf []byte
	// The bodies of the page in hand: when the stream ends (a client that
	// stopped reading, dropped), their memory goes back (memory.go).
	held := 0
	defer func() { s.memory.let(held, 0) }()
	for {
		// A page at a time: a client that stalls pins one page, not the
		// journal's worth of entries it has not yet read (entries the
		// journal itself may have dropped since).
		entries, err := state.EntriesPage(ctx, j, after, journalPage)
		held = 0
		for i := range entries {
			held += len(entries[i].Body)
		}
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("request stream ended: the journal did not answer", "error", err.Error())
			}
			return
		}
		for i := range entries {
			e := &entries[i]
			after = e.ID
			if !f.Match(e) {
				continue
			}
			data, err := json.Marshal(e)
			if err != nil {
				continue // an Entry always marshals
			}
			buf = append(buf[:0], "id: "...)
			buf = strconv.AppendInt(buf, e.ID, 10)
			buf = append(buf, "\nevent: request\ndata: "...)
			buf = append(buf, data...) // json.Marshal escapes newlines: one line
			buf = append(buf, "\n\n"...)
			if !window() {
				return
			}
			if _, err := w.Write(buf); err != nil || rc.Flush() != nil {
				return
			}
		}
		if len(entries) == journalPage {
			continue // more to send: no wait
		}
		holdWrites(w)
		wait, stop := context.WithTimeout(ctx, s.opts.streamKeepAlive)
		err = j.Wait(wait, after)
		stop()
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, context.DeadlineExceeded):
			if !window() {
				return
			}
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil || rc.Flush() != nil {
				return
			}
		case err != nil:
			s.log.Warn("request stream ended: the journal did not answer", "error", err.Error())
			return
		}
	}
}

// windowWriter gives each write to w (a listing's page of 32 KiB) its own
// WriteTimeout: a long listing read steadily is not cut, one that stops
// being read is.
type windowWriter struct {
	s *Server
	w http.ResponseWriter
}

func (ww windowWriter) Write(p []byte) (int, error) {
	ww.s.writeWindow(ww.w, 0)
	return ww.w.Write(p)
}
