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
package server
