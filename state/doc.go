// Package state owns the runtime state of scenariomock: everything mutable
// that outlives a request and is not configuration. That is five things:
//
//   - sequence positions: per route, the hit count (the position of a
//     shared sequence) and, for per-key sequences, one position per
//     attribute value, bounded per route;
//   - the idempotency store: per (group, scope, key) the request's
//     fingerprint, whether the first request is still in flight, the exact
//     response it produced (status, ordered headers, body bytes) and when
//     the key expires, bounded as a whole;
//   - named counters (`seq "name"` in templates), counting from 1 and
//     shared by all routes;
//   - collections of stored JSON bodies by (collection, id), in insertion
//     order, bounded as a whole;
//   - route states (a route's state:, WireMock's scenario states) by
//     (session, name, key), Started until set, bounded as a whole.
//
// It does not know HTTP, scenarios or tables: callers pass plain strings
// (route identities, groups, keys), fingerprints they computed and
// responses they rendered. Deciding that a missing Idempotency-Key is a
// 400, a mismatch a 422, an in-flight key a 409 and a store error a 503
// is the server's job, as is computing the fingerprint.
//
// Where it sits in the flow:
//
//	request ─▶ server handler ─▶ table.Match ─▶ route ─▶ state (Claim; Hit) ─▶ delay
//	        ─▶ respond (Complete or Release; Save; Next) ─▶ journal
//
// Reloads: a Store is owned by the server, not by a table, so a reload
// keeps all of it. Sequence positions are keyed by route identity (which
// changes exactly when a route's name or definition changes); after a
// reload the server calls Sequences.Retain with the current identities, so
// a changed route starts its sequence over, as before this package existed.
// Idempotency keys are keyed by group (chosen by the scenario, so that
// several routes can share keys), scope and key; counters by name;
// collections by name and id; route states by session, name and key.
// None of these change with a reload, so stored responses, counters,
// collections and route states survive it unchanged.
//
// Every method takes a context and returns an error, because an
// implementation may be remote (Redis, so that replicas behind a load
// balancer share keys): each request-path operation is one round trip, the
// claim is atomic with a TTL, and completion is a compare-and-set on the
// claim's token. Memory is the in-memory implementation; package
// state/redis keeps the same state in a Redis database that several
// replicas share (redis.Open), in a package of its own so that what does
// not need Redis does not link go-redis.
//
// Reset is fenced (fence.go): a store counts its resets (Fencer.Epoch),
// a request notes the count when it arrives and passes it with its writes
// (InEpoch), and a write from before a Reset is refused with ErrFenced in
// the same step as it would have written, so that one test's stragglers
// cannot write into the next test's state, on any replica.
//
// The conformance suite in package statetest runs against both: the Redis
// store against a real redis-server, on the same injected clock (its
// scripts compare expiry with the store's Now, a Redis TTL being only the
// upper bound).
package state
