// Package adminclient is a Go client of scenariomock's admin API: the
// request journal (list, count, clear, live tail), reset and the route
// listing. The `verify` and `requests` commands and package
// scenariomocktest use it; a test or a CI step in Go may too.
//
// It owns the HTTP side of asking (URLs, filters as query parameters, the
// bearer token, problem answers turned into errors). It does not own what
// the answers mean: the journal's entries are state.Entry values, decided
// by the server.
//
//	client ─▶ GET /__admin/requests?route=…&status=201 ─▶ server ─▶ state.Journal
package adminclient
