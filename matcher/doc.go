// Package matcher compiles a validated scenarios.Set into an immutable
// Table and answers, for each request, which route serves it — and when
// none does, which routes came closest and why they failed.
//
//	*scenarios.Set ─▶ matcher.Compile ─▶ *matcher.Table ─▶ Table.Match(req)
//
// Routes are indexed by the literal segments that lead their path template
// (a trie), so a request only tests the routes that can match its path:
// the cost of a match does not grow with the number of routes. Among the
// candidates, the first in match order whose conditions all hold wins;
// match order is priority (higher first), then file order.
//
// The package has no I/O, no clock and no mutable state; a Table is safe
// for concurrent use. Sequence state belongs to the server.
package matcher
