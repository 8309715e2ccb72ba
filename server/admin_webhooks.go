package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/scenariomock/scenariomock/webhooks"
)

func init() {
	adminMethods[adminPrefix+"/webhooks"] = "GET"
	adminMethods[adminPrefix+"/webhooks/{id}/redeliver"] = "POST"
	adminMethods[adminPrefix+"/webhooks/stream"] = "GET"
	adminMethods[adminPrefix+"/webhooks/events"] = "POST"
}

func (s *Server) webhookRoutes(r *mux.Router) {
	r.HandleFunc(adminPrefix+"/webhooks", s.handleWebhooks).Methods(http.MethodGet)
	r.HandleFunc(adminPrefix+"/webhooks/{id}/redeliver", s.handleRedeliver).Methods(http.MethodPost)
	r.HandleFunc(adminPrefix+"/webhooks/stream", s.handleWebhooksStream).Methods(http.MethodGet)
	r.HandleFunc(adminPrefix+"/webhooks/events", s.handleSendEvent).Methods(http.MethodPost)
}

// webhookStreamPoll is how often the stream looks again without being
// woken: another replica's attempts (a shared history) wake nothing here.
// It also spaces the reads out, so that a busy dispatcher costs the
// stream at most a read this often.
const webhookStreamPoll = time.Second

// webhookStreamGap is the least time between two reads of the log, so
// that 1,000 attempts a second cost a follower ten reads, not 1,000.
const webhookStreamGap = 100 * time.Millisecond

// handleWebhooksStream tails the attempt log as server-sent events
// (event: attempt, id: its seq), with the filters of GET /__admin/webhooks
// but limit, flushed as they are logged, a keep-alive comment when nothing
// happened for a while, until the client leaves or the server shuts down.
// Last-Event-ID or ?after= resumes after an attempt; by default only
// attempts logged from now on are sent.
func (s *Server) handleWebhooksStream(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, p := s.webhookFilter(r.Context(), q)
	if p != nil {
		writeProblem(w, p)
		return
	}
	d := s.hooks.d
	param, text := "Last-Event-ID", r.Header.Get("Last-Event-ID")
	if text == "" && q.Has("after") {
		param, text = "after", q.Get("after")
	}
	after := int64(-1)
	if text != "" {
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || n < 0 {
			writeProblem(w, newProblem(http.StatusBadRequest, "Bad "+param+" "+strconv.Quote(text)+": want an attempt's seq (0 replays every attempt kept)."))
			return
		}
		after = n
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.stopping, cancel)()
	rc := http.NewResponseController(w)
	defer context.AfterFunc(ctx, func() { _ = rc.SetWriteDeadline(time.Now().Add(time.Second)) })()
	if after < 0 {
		// From now on: placed before the client learns that the stream
		// is open, so that an attempt it causes at once (a request sent
		// as soon as the headers arrive) is sent, not taken for history.
		after = 0
		if all := d.Attempts(webhooks.Filter{}); len(all) > 0 {
			after = all[len(all)-1].Seq
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return
	}
	var buf []byte
	quiet := time.Now()
	for {
		changed := d.Changed() // before the read: an attempt logged after it wakes the wait
		all := d.Attempts(webhooks.Filter{})
		if len(all) > 0 && all[len(all)-1].Seq < after {
			after = 0 // a reset started the sequence again (a fresh Redis)
		}
		for i := range all {
			a := &all[i]
			if a.Seq <= after {
				continue
			}
			after = a.Seq
			if !f.Match(a) {
				continue
			}
			data, err := json.Marshal(a)
			if err != nil {
				continue // an Attempt always marshals
			}
			buf = append(buf[:0], "id: "...)
			buf = strconv.AppendInt(buf, a.Seq, 10)
			buf = append(buf, "\nevent: attempt\ndata: "...)
			buf = append(buf, data...)
			buf = append(buf, "\n\n"...)
			if _, err := w.Write(buf); err != nil || rc.Flush() != nil {
				return
			}
			quiet = time.Now()
		}
		gap := time.NewTimer(webhookStreamGap)
		select {
		case <-ctx.Done():
			gap.Stop()
			return
		case <-gap.C:
		}
		poll := time.NewTimer(webhookStreamPoll)
		select {
		case <-ctx.Done():
			poll.Stop()
			return
		case <-changed:
		case <-poll.C:
		}
		poll.Stop()
		if time.Since(quiet) >= s.opts.streamKeepAlive {
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil || rc.Flush() != nil {
				return
			}
			quiet = time.Now()
		}
	}
}

// adminWebhooks is GET /__admin/webhooks: the deliveries (one per event and
// endpoint) and the attempts that the filters select, oldest first.
type adminWebhooks struct {
	Endpoints  []string            `json:"endpoints"`
	Pending    int                 `json:"pending"`
	Deliveries []webhooks.Delivery `json:"deliveries"`
	Attempts   []webhooks.Attempt  `json:"attempts"`
}

// handleWebhooks lists deliveries and attempts; ?endpoint=, ?type=,
// ?event=, ?session= and ?outcome= (delivered, retrying, failed, disabled, overflow,
// pending, or undelivered for all but delivered) filter, ?limit= keeps the
// last N of each.
func (s *Server) handleWebhooks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, p := s.webhookFilter(r.Context(), q)
	if p != nil {
		writeProblem(w, p)
		return
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeProblem(w, newProblem(http.StatusBadRequest, fmt.Sprintf("limit=%q: want a count, 0 or more", v)))
			return
		}
		f.Limit = n
	}
	out := adminWebhooks{
		Endpoints:  s.hooks.d.Endpoints(),
		Pending:    s.hooks.d.Pending(),
		Deliveries: s.hooks.d.Deliveries(f),
		Attempts:   s.hooks.d.Attempts(f),
	}
	if out.Endpoints == nil {
		out.Endpoints = []string{}
	}
	if out.Deliveries == nil {
		out.Deliveries = []webhooks.Delivery{}
	}
	if out.Attempts == nil {
		out.Attempts = []webhooks.Attempt{}
	}
	writeJSON(w, http.StatusOK, out)
}

// webhookOutcomes are the values ?outcome= takes: an attempt's outcome,
// a delivery's state, or undelivered.
var webhookOutcomes = []string{webhooks.Delivered, webhooks.Retrying, webhooks.Failed, webhooks.Disabled,
	webhooks.Overflow, webhooks.Pending, "undelivered"}

// webhookFilter reads the filters of GET /__admin/webhooks and its stream.
// A misspelt endpoint, event type (admin_names.go) or outcome is refused
// rather than matching nothing,
// which would make a check such as verify --webhook shopp --undelivered
// --none pass whatever was delivered. An endpoint that is gone (a reload
// or a runtime document removed it) is still taken while the log names it.
func (s *Server) webhookFilter(ctx context.Context, q url.Values) (webhooks.Filter, *Problem) {
	f := webhooks.Filter{Endpoint: q.Get("endpoint"), Type: q.Get("type"), EventID: q.Get("event"), Outcome: q.Get("outcome"), Session: q.Get("session")}
	if f.Outcome != "" && !slices.Contains(webhookOutcomes, f.Outcome) {
		return f, newProblem(http.StatusBadRequest, fmt.Sprintf("Bad filter outcome=%q: want one of %s.", f.Outcome, strings.Join(webhookOutcomes, ", ")))
	}
	if f.Type != "" {
		if p := s.eventTypeProblem(f.Type); p != nil {
			return f, p
		}
	}
	if f.Endpoint != "" {
		d := s.hooks.d
		eps := d.Endpoints()
		// A stored endpoint (endpointsFrom:) is known by its deliveries,
		// or else as it is stored.
		if !slices.Contains(eps, f.Endpoint) && len(d.Attempts(webhooks.Filter{Endpoint: f.Endpoint, Limit: 1})) == 0 &&
			len(d.Deliveries(webhooks.Filter{Endpoint: f.Endpoint, Limit: 1})) == 0 {
			switch stored, err := s.storedEndpointNamed(ctx, f.Endpoint); {
			case err != nil:
				return f, newProblem(http.StatusServiceUnavailable, "The stored webhook endpoints could not be read: "+err.Error())
			case stored:
				return f, nil
			}
			known := "the server has none (a file's webhooks: block)"
			if len(eps) > 0 {
				known = "its endpoints are " + strings.Join(eps, ", ")
			}
			if p := s.hooks.sources.Load(); p != nil && len(*p) > 0 {
				known += ", and no stored endpoint (endpointsFrom:) has that id"
			}
			return f, newProblem(http.StatusBadRequest, fmt.Sprintf("Bad filter endpoint=%q: no webhook endpoint has that name, and none did; %s.", f.Endpoint, known))
		}
	}
	return f, nil
}

// handleRedeliver sends an event again, to ?endpoint= or to every endpoint.
func (s *Server) handleRedeliver(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	n, err := s.hooks.d.Redeliver(id, r.URL.Query().Get("endpoint"))
	if n == 0 && err != nil {
		status := http.StatusNotFound
		if errors.Is(err, webhooks.ErrDisabled) {
			status = http.StatusConflict
		}
		writeProblem(w, newProblem(status, err.Error()))
		return
	}
	answer := map[string]any{"event": id, "queued": n}
	if err != nil {
		s.log.Warn("redelivery partly queued", "event", id, "error", err.Error())
		answer["notQueued"] = err.Error()
	}
	s.log.Info("webhook redelivery queued", "event", id, "deliveries", n)
	writeJSON(w, http.StatusAccepted, answer)
}

// eventRequest is the body of POST /__admin/webhooks/events: an event to
// send as if a route had made it, as `stripe trigger` makes one.
type eventRequest struct {
	Type string `json:"type"`
	// Object is data.object, laid over the fixture of the object the
	// type names when the served OpenAPI document has one (mappings
	// merge, as a save: entry's body does).
	Object json.RawMessage `json:"object"`
	// PreviousAttributes is data.previous_attributes.
	PreviousAttributes json.RawMessage `json:"previousAttributes"`
	// Endpoints names where it goes; empty means every endpoint.
	Endpoints []string `json:"endpoints"`
	// Headers are those of the request the event is kept as made by,
	// for the events collection's scope (Authorization: one API key's
	// GET /v1/events shows it) and the session its deliveries carry.
	Headers map[string]string `json:"headers"`
}

// maxEventType bounds an event type's length.
const maxEventType = 200

// handleSendEvent sends an event that no route made: the event of a
// provider's flow the scenarios do not play (a dispute, a failed renewal)
// for a receiver under test, signed and delivered as a route's are, and
// kept in the events collection. It answers the event as kept.
func (s *Server) handleSendEvent(w http.ResponseWriter, r *http.Request) {
	var req eventRequest
	dec := json.NewDecoder(r.Body) // bounded by serveAdmin
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeProblem(w, newProblem(http.StatusBadRequest, "Send a JSON object: {\"type\": \"invoice.payment_failed\", \"object\": {...}, \"previousAttributes\": {...}, \"endpoints\": [...], \"headers\": {\"Authorization\": \"Bearer sk_test_…\"}}: "+err.Error()))
		return
	}
	var problems []string
	if req.Type == "" || len(req.Type) > maxEventType || strings.ContainsFunc(req.Type, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
		problems = append(problems, fmt.Sprintf("type: want an event type such as invoice.payment_failed (1 to %d characters, no blanks)", maxEventType))
	}
	for name, raw := range map[string]json.RawMessage{"object": req.Object, "previousAttributes": req.PreviousAttributes} {
		if len(raw) > 0 && !strings.HasPrefix(strings.TrimSpace(string(raw)), "{") {
			problems = append(problems, name+": want a JSON object")
		}
	}
	known := s.hooks.d.Endpoints()
	for _, name := range req.Endpoints {
		if !slices.Contains(known, name) {
			problems = append(problems, fmt.Sprintf("endpoints: no webhook endpoint %q (the scenarios define %s)", name, listOrNone(known)))
		}
	}
	coll := s.hooks.collection.Load()
	if srcs := s.hooks.sources.Load(); len(known) == 0 && (coll == nil || coll.name == "") && (srcs == nil || len(*srcs) == 0) {
		problems = append(problems, "no webhook endpoints are defined and no events collection keeps events: the event would go nowhere (add webhooks: to a file, or serve with --forward-to)")
	}
	object := req.Object
	if len(problems) == 0 {
		if base := s.eventFixture(req.Type); base != nil {
			if len(object) == 0 {
				object = base
			} else if merged, err := mergeItem(base, object); err == nil {
				object = merged
			}
		}
		if len(object) == 0 {
			problems = append(problems, fmt.Sprintf("object: required: the served scenarios have no fixture of the object %q is about", req.Type))
		}
	}
	if len(problems) > 0 {
		p := newProblem(http.StatusBadRequest, "The event was not sent.")
		p.Errors = problems
		writeProblem(w, p)
		return
	}
	h := http.Header{}
	for k, v := range req.Headers {
		h.Set(k, v)
	}
	ev := &webhooks.Event{Type: req.Type, Object: object, Previous: req.PreviousAttributes, Session: h.Get(SessionHeader)}
	var to []webhooks.Target
	if len(req.Endpoints) == 0 {
		var stored targets // the endpoints routes stored, in the scope of headers
		s.storedEndpoints(r.Context(), h, &stored)
		to = stored.forType(req.Type)
	}
	// Send gives the event its id and time, with no endpoint too.
	if err := s.hooks.d.SendTo(ev, req.Endpoints, to, 0, nil); err != nil {
		s.adminUnavailable(w, r, err)
		return
	}
	s.keepEvent(r.Context(), h, ev, len(req.Endpoints), len(to))
	queued := len(req.Endpoints)
	if queued == 0 {
		queued = len(known) + len(to)
	}
	s.log.Info("webhook event sent over the admin API", "type", ev.Type, "event", ev.ID, "deliveries", queued)
	writeJSON(w, http.StatusAccepted, map[string]any{"event": json.RawMessage(ev.JSON(webhooks.DefaultAPIVersion, queued)), "queued": queued})
}

// eventFixture is the fixture of the object an event of type typ is about,
// from the first OpenAPI document the served routes were made from; nil
// when there is none.
func (s *Server) eventFixture(typ string) []byte {
	for _, rt := range s.snap.Load().routes {
		if rt.op != nil {
			return rt.op.EventFixture(typ)
		}
	}
	return nil
}

// listOrNone writes names for a message: "none" when there are none.
func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
