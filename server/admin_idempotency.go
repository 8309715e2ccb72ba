package server

import (
	"net/http"
	"time"

	"github.com/scenariomock/scenariomock/state"
)

// adminKey is one idempotency key in GET /__admin/idempotency.
type adminKey struct {
	Group string `json:"group"`
	// Scope is a hash of the scope's values (they are often credentials),
	// empty without a scope.
	Scope   string    `json:"scope"`
	Key     string    `json:"key"`
	State   string    `json:"state"`            // in-flight or completed
	Status  int       `json:"status,omitempty"` // the stored answer's
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	Replays int64     `json:"replays"`
}

// handleIdempotency lists the idempotency keys that have not expired,
// oldest first: ?group= selects one group, ?offset= and ?limit= (default
// and at most one page, see listPage) page through them.
func (s *Server) handleIdempotency(w http.ResponseWriter, r *http.Request) {
	offset, limit, err := listPage(r)
	if err != nil {
		writeProblem(w, newProblem(http.StatusBadRequest, err.Error()))
		return
	}
	o := state.ListOptions{Group: r.URL.Query().Get("group"), Offset: offset, Limit: limit}
	records, total, err := s.state.Idempotency().List(r.Context(), o)
	if err != nil {
		s.adminUnavailable(w, r, err)
		return
	}
	keys := make([]adminKey, 0, len(records))
	for _, rec := range records {
		keys = append(keys, adminKey{
			Group: rec.Key.Group, Scope: rec.Key.Scope, Key: rec.Key.Key, State: rec.State, Status: rec.Status,
			Created: rec.Created, Expires: rec.Expires, Replays: rec.Replays,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"total": total, "offset": o.Offset, "keys": keys})
}

// handleIdempotencyDelete forgets every idempotency key.
func (s *Server) handleIdempotencyDelete(w http.ResponseWriter, r *http.Request) {
	if !paramsKnown(w, r) {
		return
	}
	n, err := s.state.Idempotency().Expire(r.Context(), "", "")
	if err != nil {
		s.adminUnavailable(w, r, err)
		return
	}
	s.log.Info("idempotency keys deleted", "keys", n)
	writeJSON(w, http.StatusOK, map[string]any{"expired": n})
}

// handleIdempotencyExpire expires keys now, so that a test can rehearse a
// retry after expiry without waiting a day: ?group= and ?key= narrow it
// (both absent: every key; a key in every scope of its group).
func (s *Server) handleIdempotencyExpire(w http.ResponseWriter, r *http.Request) {
	if !paramsKnown(w, r, "group", "key") {
		return
	}
	q := r.URL.Query()
	n, err := s.state.Idempotency().Expire(r.Context(), q.Get("group"), q.Get("key"))
	if err != nil {
		s.adminUnavailable(w, r, err)
		return
	}
	s.log.Info("idempotency keys expired", "group", q.Get("group"), "key", q.Get("key"), "keys", n)
	writeJSON(w, http.StatusOK, map[string]any{"expired": n})
}
