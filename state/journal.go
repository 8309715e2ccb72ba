package state

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"sync"
	"time"
	"unicode/utf8"
)

// Journal records the requests the server answered, for verification
// (WireMock's request journal). It keeps the newest entries up to a cap:
// a CI job asks what was received, a dashboard tails it live.
// Implementations are safe for concurrent use.
type Journal interface {
	// Append records e and sets e.ID: 1, 2, 3, ... in the order entries
	// are appended, never reused (not even after Clear or Reset), so a
	// live tail never sees an ID twice. Past the cap the oldest entries
	// are dropped. Append copies what it keeps of e, Headers and Body
	// included, before it returns: the caller may then reuse them (the
	// server does, for its next request). When e.Redact is set, the
	// secret headers' values (request's and answer's) are kept only as
	// it redacts them.
	Append(ctx context.Context, e *Entry) error
	// Entries returns the entries kept with an ID above after, oldest
	// first (after = 0: all of them). They are shared: read, never modify.
	Entries(ctx context.Context, after int64) ([]Entry, error)
	// Clear drops every entry.
	Clear(ctx context.Context) error
	// Wait returns nil once an entry with an ID above after is kept
	// (cleared entries do not count), or ctx's error when ctx ends first.
	// It never spins.
	Wait(ctx context.Context, after int64) error
}

// JournalPager is implemented by the journals of Memory and of
// state/redis: a stream or a listing reads one page at a time, so that a
// reader that stalls pins one page, not a journal's worth of entries the
// journal itself has since dropped. It is apart from Journal so that
// Journal's other implementations stay valid (see EntriesPage).
type JournalPager interface {
	// Page returns at most limit (> 0) of the entries kept with an ID
	// above after, oldest first. They are shared: read, never modify.
	Page(ctx context.Context, after int64, limit int) ([]Entry, error)
}

// EntriesPage returns at most limit of j's entries with an ID above
// after, oldest first: one page, read as one when j is a JournalPager.
func EntriesPage(ctx context.Context, j Journal, after int64, limit int) ([]Entry, error) {
	if p, ok := j.(JournalPager); ok {
		return p.Page(ctx, after, limit)
	}
	entries, err := j.Entries(ctx, after)
	return entries[:min(len(entries), limit)], err
}

// Redactor keeps credentials out of a journal (journal.Secrets is the
// server's): a journal keeps the values of the headers it calls secret
// only as it redacts them. Implementations are safe for concurrent use.
type Redactor interface {
	// Secret reports whether a canonical header name's values are
	// redacted.
	Secret(name string) bool
	// Redact returns what is kept of a secret header's value.
	Redact(value string) string
}

// DefaultJournalSize is how many entries a journal keeps by default.
const DefaultJournalSize = 10_000

// Entry is one request as the journal records it.
type Entry struct {
	ID     int64     `json:"id"`
	Time   time.Time `json:"time"` // when the request arrived
	Method string    `json:"method"`
	Path   string    `json:"path"`
	// Query is the raw query string, without '?'.
	Query   string              `json:"query,omitempty"`
	Headers map[string][]string `json:"headers"`
	// Body is the request body up to the journal's body limit; in JSON it
	// is "body" when it is valid UTF-8, else "bodyBase64".
	Body []byte `json:"-"`
	// BodySize is the size received, before the cut.
	BodySize      int64 `json:"bodySize"`
	BodyTruncated bool  `json:"bodyTruncated,omitempty"`
	// Route is the route that answered: "" when none matched,
	// "(fallback)" when the fallback answered.
	Route   string `json:"route,omitempty"`
	Matched bool   `json:"matched"`
	// CatchAll: Route is marked unmatched: true (a catch-all), so Matched
	// is false although it answered.
	CatchAll bool `json:"catchAll,omitempty"`
	// Session is the test session the request carried (a header
	// X-Scenariomock-Session, or the path prefix /__session/NAME/, which
	// Path no longer has); "" for none.
	Session string `json:"session,omitempty"`
	// NearMisses is the near-miss report of a request no route matched.
	NearMisses []NearMiss `json:"nearMisses,omitempty"`
	// Status is 0 when no HTTP answer was sent (a fault, the client left).
	Status  int     `json:"status"`
	DelayMs float64 `json:"delayMs,omitempty"`
	Fault   string  `json:"fault,omitempty"`
	// FaultAfter is "arrival" or "processing".
	FaultAfter string `json:"faultAfter,omitempty"`
	// Idempotency is the idempotency outcome: new, replayed, mismatch,
	// in-flight, missing-key, invalid-key, or "" for none.
	Idempotency string `json:"idempotency,omitempty"`
	// Proxied: the answer came from an upstream (a proxy: route, or
	// --proxy-unmatched), Upstream the URL asked, UpstreamStatus its
	// status (0: it gave none: a 502 or 504 was answered) and UpstreamMs
	// the time to its answer's headers.
	Proxied        bool    `json:"proxied,omitempty"`
	Upstream       string  `json:"upstream,omitempty"`
	UpstreamStatus int     `json:"upstreamStatus,omitempty"`
	UpstreamMs     float64 `json:"upstreamMs,omitempty"`
	// State is the route state the request moved (its route's state:
	// to:); nil when it moved none.
	State *StateMove `json:"state,omitempty"`
	// Violations are how the request broke its OpenAPI operation
	// (validate: enforce or report), one line each; none for a YAML route.
	Violations []string `json:"violations,omitempty"`
	DurationMs float64  `json:"durationMs"`
	// Version is the version of the scenarios that answered.
	Version int64 `json:"version"`
	// Response is the answer the request got (nil when none was made: a
	// fault at arrival, a client that left during the delay): sent, sent
	// in part (Fault says how), or made and lost to a fault (Lost).
	Response *EntryResponse `json:"response,omitempty"`
	// Redact, when not nil, redacts the secret headers' values of Headers
	// and Response.Headers as they are copied: by Append (the memory
	// journal as it encodes them, in the one walk over each map) and by
	// MarshalJSON (what a remote journal keeps). The maps themselves are
	// left as they are. An entry read back from a journal has none.
	Redact Redactor `json:"-"`
}

// EntryResponse is the answer a journaled request got, as the journal
// keeps it: its head as the server wrote it, its body cut at the
// journal's body limit like the request's.
type EntryResponse struct {
	Status  int                 `json:"status"`
	Headers map[string][]string `json:"headers"`
	// Body is the answer's body up to the journal's body limit; in JSON
	// it is "body" when it is valid UTF-8, else "bodyBase64".
	Body []byte `json:"-"`
	// BodySize is the size of the whole body, before the cut.
	BodySize      int64 `json:"bodySize"`
	BodyTruncated bool  `json:"bodyTruncated,omitempty"`
	// Lost: the answer was made (its effects happened) but the client got
	// none of it: the entry's fault broke the connection or the stream
	// first (Entry.Status is then 0).
	Lost bool `json:"lost,omitempty"`
	// Streamed: an upstream's answer passed on as it arrived (a proxy
	// route with nothing that had to hold it): its body was never held,
	// so none is kept and BodySize is unknown (0).
	Streamed bool `json:"streamed,omitempty"`
	// HeadersEncoded, when not nil, is Headers as EncodeHeaders encodes
	// them, with what the entry's Redact redacts already redacted: the
	// memory journal copies these bytes rather than walk Headers (the
	// server's static answers are encoded once, when their route is
	// compiled). Headers is set all the same: a journal that marshals
	// the entry (MarshalJSON) reads the map.
	HeadersEncoded []byte `json:"-"`
}

// responseJSON is EntryResponse's JSON form without its methods.
type responseJSON EntryResponse

// MarshalJSON writes the body as Entry's, as text or as base64.
func (r EntryResponse) MarshalJSON() ([]byte, error) {
	out := struct {
		responseJSON
		Body       *string `json:"body,omitempty"`
		BodyBase64 *string `json:"bodyBase64,omitempty"`
	}{responseJSON: responseJSON(r)}
	out.Body, out.BodyBase64 = bodyJSON(r.Body)
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *EntryResponse) UnmarshalJSON(b []byte) error {
	var in struct {
		responseJSON
		Body       *string `json:"body"`
		BodyBase64 *string `json:"bodyBase64"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*r = EntryResponse(in.responseJSON)
	body, err := bodyFromJSON(in.Body, in.BodyBase64)
	r.Body = body
	return err
}

// bodyJSON is a body's JSON form: text when it is valid UTF-8, else
// base64; neither for an empty one.
func bodyJSON(body []byte) (text, b64 *string) {
	if len(body) == 0 {
		return nil, nil
	}
	if utf8.Valid(body) {
		s := string(body)
		return &s, nil
	}
	s := base64.StdEncoding.EncodeToString(body)
	return nil, &s
}

// bodyFromJSON reads what bodyJSON writes.
func bodyFromJSON(text, b64 *string) ([]byte, error) {
	switch {
	case text != nil:
		return []byte(*text), nil
	case b64 != nil:
		return base64.StdEncoding.DecodeString(*b64)
	}
	return nil, nil
}

// StateMove is a route state a request moved, as the journal keeps it.
type StateMove struct {
	Name string `json:"name"`
	Key  string `json:"key,omitempty"`
	// From is the value the route matched in (its is:), "" when the
	// route read none; To is the value it moved the state to.
	From string `json:"from,omitempty"`
	To   string `json:"to"`
}

// NearMiss is one route a request came close to matching, and why it did
// not.
type NearMiss struct {
	Route  string `json:"route"`
	Reason string `json:"reason"`
}

// entryJSON is Entry's JSON form without its methods.
type entryJSON Entry

// MarshalJSON writes the body as text when it is valid UTF-8, else as
// base64, so that a JSON body reads as itself.
func (e Entry) MarshalJSON() ([]byte, error) {
	if e.Redact != nil {
		e.Headers = RedactHeaders(e.Headers, e.Redact)
		if e.Response != nil {
			r := *e.Response
			r.Headers = RedactHeaders(r.Headers, e.Redact)
			e.Response = &r
		}
	}
	out := struct {
		entryJSON
		Body       *string `json:"body,omitempty"`
		BodyBase64 *string `json:"bodyBase64,omitempty"`
	}{entryJSON: entryJSON(e)}
	out.Body, out.BodyBase64 = bodyJSON(e.Body)
	return json.Marshal(out)
}

// RedactHeaders returns h with the values of red's secret headers
// redacted: h itself when it has none, else a copy.
func RedactHeaders(h map[string][]string, red Redactor) map[string][]string {
	var out map[string][]string
	for name, vs := range h {
		if !red.Secret(name) {
			continue
		}
		if out == nil {
			out = maps.Clone(h)
		}
		rv := make([]string, len(vs))
		for i, v := range vs {
			rv[i] = red.Redact(v)
		}
		out[name] = rv
	}
	if out == nil {
		return h
	}
	return out
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *Entry) UnmarshalJSON(b []byte) error {
	var in struct {
		entryJSON
		Body       *string `json:"body"`
		BodyBase64 *string `json:"bodyBase64"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*e = Entry(in.entryJSON)
	body, err := bodyFromJSON(in.Body, in.BodyBase64)
	e.Body = body
	return err
}

// memJournal is a ring of the newest entries, kept as slots
// (journalslot.go) that the garbage collector has nothing to trace in.
type memJournal struct {
	mu     sync.Mutex  // guards all below
	ring   []entrySlot // allocated as it fills, up to size
	size   int
	start  int   // index in ring of the oldest entry
	n      int   // entries kept
	lastID int64 // ID of the newest entry ever appended
	// wake is closed by the next Append; made only when someone waits,
	// so that appending allocates nothing when nobody tails the journal.
	wake chan struct{}
	// fence refuses an entry from before a reset (fence.go).
	fence *fence
}

func newMemJournal(size int) *memJournal {
	return &memJournal{size: size}
}

func (j *memJournal) Append(ctx context.Context, e *Entry) error {
	j.mu.Lock()
	if !j.fence.admits(ctx) {
		j.mu.Unlock()
		return ErrFenced
	}
	j.lastID++
	e.ID = j.lastID
	switch {
	case j.n < j.size && len(j.ring) < j.size:
		j.ring = append(j.ring, entrySlot{})
		j.ring[len(j.ring)-1].set(e)
		j.n++
	default: // full: overwrite the oldest
		j.ring[j.start].set(e)
		j.start = (j.start + 1) % j.size
	}
	wake := j.wake
	j.wake = nil
	j.mu.Unlock()
	if wake != nil {
		close(wake)
	}
	return nil
}

func (j *memJournal) Entries(ctx context.Context, after int64) ([]Entry, error) {
	return j.Page(ctx, after, 0)
}

// Page is Entries with at most limit entries; 0 for all of them. Their
// strings and bodies view one copy of the slots' buffers, made under the
// lock: an Append that overwrites a slot afterwards does not change them.
func (j *memJournal) Page(_ context.Context, after int64, limit int) ([]Entry, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	first := j.lastID - int64(j.n) + 1 // ID of the oldest entry kept
	skip := 0
	if after >= first {
		skip = int(min(after-first+1, int64(j.n)))
	}
	end := j.n
	if limit > 0 {
		end = min(end, skip+limit)
	}
	size := 0
	for i := skip; i < end; i++ {
		size += len(j.ring[(j.start+i)%len(j.ring)].buf)
	}
	all := make([]byte, 0, size)
	out := make([]Entry, 0, end-skip)
	for i := skip; i < end; i++ {
		sl := &j.ring[(j.start+i)%len(j.ring)]
		from := len(all)
		all = append(all, sl.buf...)
		out = append(out, sl.entry(all[from:len(all):len(all)]))
	}
	return out, nil
}

func (j *memJournal) Clear(context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	clear(j.ring) // let the bodies go
	j.ring, j.start, j.n = j.ring[:0], 0, 0
	return nil
}

func (j *memJournal) Wait(ctx context.Context, after int64) error {
	for {
		j.mu.Lock()
		// An entry above after is kept (the newest, if any is): IDs past
		// after that were cleared do not count, or a tail would spin.
		if j.n > 0 && j.lastID > after {
			j.mu.Unlock()
			return nil
		}
		if j.wake == nil {
			j.wake = make(chan struct{})
		}
		wake := j.wake
		j.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
