// Package webhooks owns the events a mock sends to receivers under test:
// the endpoints they go to, the event objects (shaped like Stripe's), their
// signatures (Stripe's, Standard Webhooks', or none), a bounded outbox, and
// a dispatcher that delivers each event at least once on a retry schedule,
// with the delivery faults real providers produce (duplicates, reordering,
// delays, a first attempt never sent, and negative deliveries a receiver
// must refuse), repeatable with a seed. Every attempt is recorded in a
// bounded log that the admin API lists.
//
// It sits after a route's commit:
//
//	server commit ─▶ Dispatcher.Send ─▶ outbox ─▶ workers ─▶ receiver
//	                                     ▲            │
//	                                     └── retry ◀──┘ (non-2xx, timeout, reset)
//
// The outbox is an interface (Outbox): the dispatcher claims due
// deliveries from it with a lease and records each attempt's outcome
// there. NewMemoryOutbox is the default; state/redis provides one that
// replicas share, so that each attempt is made by one of them and what is
// pending outlives a replica. webhooks/outboxtest is the conformance
// suite both pass. This package does not link go-redis.
//
// Endpoints are configured (SetEndpoints), or found when an event is
// sent (SendTo): a Target, an endpoint object a route stored, whose
// deliveries carry its URL and secrets through the outbox, so that any
// replica can make their attempts, and take the rest of what an attempt
// needs from the configured Source it was found in.
//
// The package knows nothing of scenario files or of serving; the server
// turns a route's events: into Events, endpoints: into Endpoints and
// endpointsFrom: into a Source and, per event, its Targets. It
// owns its goroutines: Run starts them and returns, with the count of
// deliveries left pending, when its context ends.
package webhooks
