// Package outboxtest is the conformance suite of webhooks.Outbox: the
// memory outbox's test and the Redis outbox's (state/redis) call Run with
// a function that builds a fresh outbox, and so run the very same cases:
// due order, the bound, exclusive claims under concurrency, a lease that
// ends (a crashed replica), retries, reorder, drop and reset. Time is the
// now each call is given, so leases end without sleeping.
package outboxtest
