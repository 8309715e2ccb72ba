// Package server serves a scenario table over HTTP: it owns the listener,
// the request handler, delays, faults, the admin API under /__admin, and
// all mutable state (sequence positions, reload status).
//
//	request ─▶ Server.ServeHTTP ─▶ Table.Match ─▶ sequence ─▶ delay ─▶ respond ─▶ log
//
// On the hot path the only shared mutable thing is one atomic pointer to
// the current snapshot (table plus prepared responses); a reload builds a
// new snapshot and swaps it in, and requests in flight finish on the one
// they started with.
package server
