// Package journal reads the request journal's filters: the query
// parameters of GET /__admin/requests and its count and stream
// (route=, method=, path=, status=, header.<Name>=, query.<name>=,
// form.<key>=, body.<json.path>=, idempotency=, matched=, since=, limit=), parsed once
// into a Filter that tells whether a journal entry matches.
//
// It owns the filter language only. The entries are recorded by the
// server and kept by the state package (state.Journal); this package does
// no I/O and keeps no state, so a filter is safe for concurrent use.
package journal
