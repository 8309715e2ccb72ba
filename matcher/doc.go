// Package matcher compiles a validated scenarios.Set into an immutable
// Table and answers, for each request, which route serves it — and when
// none does, which routes came closest and why they failed.
//
//	*scenarios.Set ─▶ matcher.Compile ─▶ *matcher.Table ─▶ Table.Match(req)
//
// Routes are indexed by the literal segments that lead their path template
// (a trie), so a request only tests the routes that can match its path:
// the cost of a match does not grow with the number of routes. A fully
// literal path is one map lookup; the trie holds only templated routes.
// Among the candidates, the first in match order whose conditions all
// hold wins; match order is priority (higher first), then file order. A
// template whose variables are plain {name} segments is matched a segment
// at a time, any other by its regexp (scenarios.PathTemplate), as
// gorilla/mux would match it.
//
// A miss costs about what a hit costs: Explain ranks the candidates the
// index offers, tests conditions only of those that could still rank, and
// measures the edit distance to a bounded number of path templates (those
// a one-byte typo explains, then the neighbours in literal order).
//
// Each distinct condition whose cost grows with the request (a body test,
// a header or query regex or contains) is evaluated at most once per
// Request, by Match and Explain together. Raw body contains and regex read
// only the first MaxBodyScan (64 KiB) bytes; equals compares the whole body,
// lengths first. A near-miss report can be redacted (NearMiss.Redacted):
// the values wanted of fields whose names look secret are not shown.
//
// A route's state: is: is a condition like the others, tested last: the
// request's StateReader (Request.States, the server's, over its store)
// reads the state, so that the package itself does no I/O, and a route
// whose state is not what it wants is a near miss that says so (`state
// order ["o1"] is "paid", want "Started"`).
//
// The package has no I/O, no clock and no mutable state; a Table is safe
// for concurrent use. Sequence positions and route states belong to the
// server.
package matcher
