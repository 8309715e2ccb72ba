// Package openapi turns an OpenAPI document (3.0 or 3.1, JSON or YAML, with
// local $refs and $refs to sibling files) into scenario routes: one route
// per operation, named by its operationId, whose position points into the
// spec. The routes join the set that scenarios.Load made (Set.Extend), so
// the matcher, near-miss reports, the journal, `routes` and `verify
// --route` see them like the routes written in YAML; a YAML route of
// priority 0 or more matching the same request wins (generated routes
// have priority 0 and come after every file), one of negative priority (a
// catch-all) answers only what no operation does, and one named like an
// operationId replaces it. A YAML route may name an operation
// (operation: PostCustomers) to answer as it does, with its own
// conditions, faults, events, a merge patch and a missing: answer.
//
// Each generated route carries an *Operation in scenarios.Route.Operation.
// The server calls it from one place (server/openapi.go): Check validates a
// request against the operation (parameters, JSON and form bodies,
// security) and says what to answer when it is refused; Respond generates
// the answer (an example, a fixture, or values generated from the schema,
// with the request's values reflected) and, with state on, keeps the
// resources a create makes in the server's collections; in dynamic mode
// (Prism's mock -d: dynamic: on, or Prefer: dynamic=true) it draws each
// answer afresh from its schema and checks the draw as it checks a
// proxied answer (dynamic.go). On a route that
// proxies to a real upstream (the block's proxy:, Prism's proxy mode),
// CheckAnswer checks the upstream's answer instead (answer.go).
//
// Query parameters in deepObject style (expand[], metadata[k], lists of
// objects such as lines[0][amount]) are read like form bodies and checked
// against their schema (query.go); a response with no JSON media type (a
// PDF) is answered as that type. With errors: stripe, Stripe's dialect
// holds beyond refusals: a binary answer is stripe-mock's "Stripe binary
// response", which stripe-go's suite expects.
//
// It sits between loading and compiling:
//
//	scenarios.Load ─▶ openapi.Expand ─▶ matcher.Compile
//
// Nothing in it assumes Stripe's shapes: positions point into the file an
// operation is written in, list answers, id patterns and the field an item
// is stored by (its read's path variable: GitHub's issue_number names an
// issue's number) are read from the schemas (shape.go), a list's declared query parameters that name its
// items' fields narrow it (filter.go), a collection's search answering a
// search_result searches the stored objects in Stripe's query language
// (search.go), expand[] paths go through stored objects and lists' items
// (expand.go), answers are in the media type the
// request accepts
// (media.go), multipart bodies are typed and validated (multipart.go), a
// discriminator picks a oneOf branch or a subtype that extends its base
// through allOf (discriminator.go), a refusal of a
// value that fails a oneOf or anyOf, and a proxied answer's violation of
// one, lists its closest alternative's failures only (alternatives.go),
// and a broken $ref
// or YAML error in any file of a split document is placed where it is
// written (problems.go). Redocly Cafe's description (testdata/redocly-cafe,
// public_test.go), an excerpt of GitHub's (testdata/github,
// github_test.go), one of Svix's (testdata/svix, svix_test.go) and one of
// Mux's, whose answers are {"data": …} envelopes (testdata/mux,
// mux_test.go), are the non-Stripe documents the tests serve.
//
// It wraps github.com/pb33f/libopenapi (parsing, $ref resolution) and
// libopenapi-validator (the JSON Schema validation), so that only the
// packages that need them link them. A Cache keeps compiled documents by
// content hash, so that a reload of an unchanged spec costs a hash, not a
// parse.
package openapi
