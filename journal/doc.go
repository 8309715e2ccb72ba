// Package journal reads the request journal's filters: the query
// parameters of GET /__admin/requests and its count and stream
// (route=, method=, path=, status=, header.<Name>=, query.<name>=,
// form.<key>=, body.<json.path>=, idempotency=, matched=, since=, limit=), parsed once
// into a Filter that tells whether a journal entry matches.
//
// It also owns how credentials are kept out of entries: Secrets (the
// state.Redactor the server gives each entry, applied by the journal as
// it copies the headers) and RedactHeaders replace the values of
// SecretHeaders (Authorization, Cookie, API-key headers) with a short
// digest, and a filter on such a header matches the value as sent or as
// redacted.
//
// It owns these two only. The entries are recorded by the
// server and kept by the state package (state.Journal); this package does
// no I/O and keeps no state, so a filter is safe for concurrent use.
package journal
