package server

import "sync/atomic"

// routeRequests counts the requests a route took, by how each ended, so
// that the admin API and the dashboard can say why a route's hits (the
// times it ran: its sequence position) are fewer than its requests in
// the journal: a replay answers the stored answer without running the
// route, and a refusal (an idempotency 409, 422 or 400, an OpenAPI
// validation error, a 503 when the store did not answer) answers before
// it runs. It is safe for concurrent use.
//
// The counts are this process's, kept in memory: counting them in a
// shared store would cost every replay a round trip. A reload keeps them
// for every route whose identity is unchanged (as the store keeps its
// hits); POST /__admin/reset zeroes them.
//
// hits counts the times a route whose hits are not shared (see
// routeRuntime.shared) ran, in this process; it is kept and reset with
// the rest.
type routeRequests struct {
	total, replayed, refused atomic.Int64
	hits                     atomic.Int64
}

// count counts x, which rt took, once it is recorded.
func (c *routeRequests) count(x *exchange) {
	c.total.Add(1)
	switch {
	case x.out.idem == idemReplayed:
		c.replayed.Add(1)
	case x.p == nil: // advance never ran: answered before the route ran
		c.refused.Add(1)
	}
}

// reset zeroes the counts.
func (c *routeRequests) reset() {
	c.total.Store(0)
	c.replayed.Store(0)
	c.refused.Store(0)
	c.hits.Store(0)
}

// adminRequests is a route's routeRequests in GET /__admin/scenarios.
type adminRequests struct {
	Total    int64 `json:"total"`
	Replayed int64 `json:"replayed"`
	Refused  int64 `json:"refused"`
}

func (c *routeRequests) admin() adminRequests {
	return adminRequests{Total: c.total.Load(), Replayed: c.replayed.Load(), Refused: c.refused.Load()}
}

// carryCounts gives each route of snap the counts of the route of old
// with its identity, or new ones.
func carryCounts(snap, old *snapshot) {
	var kept map[string]*routeRequests
	if old != nil && len(old.routes) > 0 {
		kept = make(map[string]*routeRequests, len(old.routes))
		for _, rt := range old.routes {
			kept[rt.route.Identity] = rt.requests
		}
	}
	for _, rt := range snap.routes {
		if c := kept[rt.route.Identity]; c != nil {
			rt.requests = c
			continue
		}
		rt.requests = &routeRequests{}
	}
}
