package server

import (
	"context"
	"encoding/json"
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
}

func (s *Server) webhookRoutes(r *mux.Router) {
	r.HandleFunc(adminPrefix+"/webhooks", s.handleWebhooks).Methods(http.MethodGet)
	r.HandleFunc(adminPrefix+"/webhooks/{id}/redeliver", s.handleRedeliver).Methods(http.MethodPost)
	r.HandleFunc(adminPrefix+"/webhooks/stream", s.handleWebhooksStream).Methods(http.MethodGet)
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
	f, p := s.webhookFilter(q)
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
	f, p := s.webhookFilter(q)
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
func (s *Server) webhookFilter(q url.Values) (webhooks.Filter, *Problem) {
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
		if !slices.Contains(eps, f.Endpoint) && len(d.Attempts(webhooks.Filter{Endpoint: f.Endpoint, Limit: 1})) == 0 {
			known := "the server has none (a file's webhooks: block)"
			if len(eps) > 0 {
				known = "its endpoints are " + strings.Join(eps, ", ")
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
		writeProblem(w, newProblem(http.StatusNotFound, err.Error()))
		return
	}
	if err != nil {
		s.log.Warn("redelivery partly queued", "event", id, "error", err.Error())
	}
	s.log.Info("webhook redelivery queued", "event", id, "deliveries", n)
	writeJSON(w, http.StatusAccepted, map[string]any{"event": id, "queued": n})
}
