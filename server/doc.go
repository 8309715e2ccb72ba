// Package server serves a scenario table over HTTP: it owns the listeners,
// the request handler, delays, faults, the admin API under /__admin (on
// the scenario listener, or on one of its own: ServeSplit) and its guards
// (admin_access.go: token, cross-site requests, Host), and all mutable
// state (sequence positions, reload status).
//
//	request ─▶ Server.ServeHTTP ─▶ Table.Match ─▶ sequence ─▶ delay ─▶ respond ─▶ log
//
// On the hot path the only shared mutable thing is one atomic pointer to
// the current snapshot (table plus prepared responses); a reload builds a
// new snapshot and swaps it in, and requests in flight finish on the one
// they started with.
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
