// Package redis is the state.Store that replicas share: sequence
// positions, idempotency keys, counters, collections, route states and
// the journal kept in one Redis database, under a key prefix, so that
// several scenariomock processes behind a load balancer behave as one
// (--state redis://).
//
// It owns the connection to Redis (github.com/redis/go-redis), the Lua
// scripts that make each request-path operation one atomic round trip,
// and the one subscription that wakes waiters when another replica
// completes a key or appends to the journal. It does not own the state
// interfaces, their semantics or the in-memory store: those are package
// state, and the conformance suite in state/statetest runs against both.
// It is a package of its own so that the packages which do not need Redis
// (adminclient, journal, the in-memory store) do not link go-redis.
//
// It also holds the webhook outbox that replicas share (Store.Outbox, a
// webhooks.Outbox): deliveries by due time, claimed with a lease.
//
// Where it sits in the flow: main opens it (Open) when --state names a
// Redis URL and hands it to the server as its state.Store; the server
// calls it exactly as it calls the memory store.
package redis
