package server

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/gorilla/mux"
	"github.com/scenariomock/scenariomock/webhooks"
)

func init() {
	adminMethods[adminPrefix+"/webhooks"] = "GET"
	adminMethods[adminPrefix+"/webhooks/{id}/redeliver"] = "POST"
}

func (s *Server) webhookRoutes(r *mux.Router) {
	r.HandleFunc(adminPrefix+"/webhooks", s.handleWebhooks).Methods(http.MethodGet)
	r.HandleFunc(adminPrefix+"/webhooks/{id}/redeliver", s.handleRedeliver).Methods(http.MethodPost)
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
// ?event= and ?outcome= (delivered, retrying, failed, disabled, overflow,
// pending, or undelivered for all but delivered) filter, ?limit= keeps the
// last N of each.
func (s *Server) handleWebhooks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := webhooks.Filter{Endpoint: q.Get("endpoint"), Type: q.Get("type"), EventID: q.Get("event"), Outcome: q.Get("outcome")}
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
