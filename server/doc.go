// Package server serves a scenario table over HTTP: it owns the listeners,
// the request pipeline (matching aside: package matcher), delays, faults,
// the admin API under /__admin (on the scenario listener, or on one of its
// own: ServeSplit) and its guards (admin_access.go: token, cross-site
// requests, Host), and the reload status. What outlives a request
// (sequence positions, idempotency keys, counters, collections, route
// states, the journal) lives in package state, behind its interfaces;
// the server asks it for what changes and keeps none of it.
//
// On the hot path the only shared mutable thing is one atomic pointer to
// the current snapshot (table plus prepared responses); a reload builds a
// new snapshot and swaps it in, and requests in flight finish on the one
// they started with.
//
// # One request
//
// A mock request is one exchange (exchange.go): the value its stages
// share, kept in the connection's context so that an HTTP/1 request
// allocates none, with a typed result that the log line, the journal and
// the counters read. Its path, in order:
//
//	ServeHTTP                     server.go     admin API or scenarios
//	serveScenario                 pipeline.go   read the body; defer finish
//	  match                       pipeline.go   route (its state: is: read by states.go's stateReader; matched again by matchRoute when a state's lock found the state moved; a request that finds it locked claims its Idempotency-Key there, claimEarly); CORS preflight (cors.go); miss: 404 (405 on an OpenAPI path), or the fallback
//	  serveRoute                  pipeline.go   the orchestrator:
//	    actFor                    scopeof.go      scopeOf: the request acts for the scope that stored the object it names
//	    check                     openapi.go      the request against its OpenAPI operation
//	    claim                     idempotent.go   Idempotency-Key: a replay or a refusal ends here
//	    advance                   pipeline.go     sequence position, the response to use
//	    wait                      pipeline.go     fault draw and delay; a client that left ends here
//	    hold                      lock.go         the locks of the objects the request acts on (lock:); one that waited too long ends here
//	    produce                   pipeline.go     the answer: canned, template (respond.go), collection operation (collections.go), proxy (proxy.go), OpenAPI operation (openapi.go: its refuse:, cases:, envelope: and override:)
//	    commit                    pipeline.go     save the items (save:), move the route's state (states.go), complete or release the claim, send the events (webhooks.go), record a proxied exchange (proxy.go)
//	    (unhold)                  lock.go         the locks given back, once commit stored the effects
//	    deliver                   pipeline.go     record, then write the answer, or the fault (fault.go)
//	  finish                      finish.go     the log line (and record, if deliver did not run)
//
// Where to change what:
//   - A new kind of answer (proxying, OpenAPI-generated): one arm in
//     produce, rendering into x.rec; everything after it (saving,
//     storing for idempotency, faults, journal) then applies unchanged.
//   - A new effect of a request (recording, as sendEvents for webhook
//     events): one call at the end of commit, after the save and the
//     claim's completion, so that it happens only for an answer that
//     exists and is stored, once per key, and before the client sees it.
//   - A new way for a request to end early: a stage sets the answer
//     (x.fail, x.answerProblem, x.abort) and returns false; commit
//     releases the claim and deliver sends it.
//   - A new field in the log line or the journal: add it to result
//     (exchange.go), set it in the stage that knows it, read it in record
//     or logOutcome (finish.go). Never read a log attribute back.
//   - A new fault kind: deliverFault (fault.go). Faults switched on at
//     run time (admin_faults.go) replace the route's own in wait.
//
// A proxied answer (proxy.go) streams from the upstream to the client
// (answerProxied) unless a fault, a claim, the recorder or the route's
// OpenAPI operation must hold it, or it is small (a declared length up to
// 32 KiB); then forward reads it into x.rec and it is an ordinary answer
// from there on. The operation checks it there (checkAnswer, openapi.go:
// Prism's proxy mode), and may turn it into a 502. Routes that
// proxy to the server's own listener are refused when Serve starts and
// at reload (checkLoops), and per request by the Via marker (a 508).
//
// record (finish.go) appends the journal entry just before the first byte
// of the answer, or of its fault, reaches the client: a client that has
// seen its answer, or its connection reset, finds its request in GET
// /__admin/requests and /count, on every replica. Entries are numbered as
// they are appended, so a request answered after another (as a client
// that waits for each answer sends them) has the higher number; requests
// in flight at once are numbered as they are answered.
//
// Elsewhere: reload.go swaps snapshots (Reload), seeds collections (seed),
// and seeds them again when a shared store forgot everything
// (seedForgotten); collections.go runs the collection operations;
// fence.go keeps a request that a POST /__admin/reset (on any replica)
// overtook from writing into the state that follows;
// runtime.go lays the runtime documents (POST /__admin/scenarios) on the
// files, reloads when another replica changes them, and, on a shared
// store, tells it which version this replica serves (announceDocuments)
// so that a change is answered once every replica serves it
// (awaitReplicas); admin*.go are the admin API; problem.go maps errors to
// statuses (statusOf) and writes RFC 9457 problems; log.go wires in
// internal/loghandler, which makes the log line cheap.
//
// CORS (cors.go) is part of the snapshot: each route answers browsers as
// its file's cors: block says (or --cors, for files without one), and
// preflights are answered before routing. With CORS off the hot path
// pays one nil check. The admin API never gets CORS headers: a dashboard
// is served from the same origin. With Options.TLS the server speaks
// HTTPS, HTTP/2 included, on the admin listener too. Faults (fault.go)
// that break the connection need one of their own, which HTTP/2 does not
// give a request: there they send what the kind sends through the
// ResponseWriter and reset the stream.
package server
