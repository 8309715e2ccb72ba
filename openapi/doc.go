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
// resources a create makes in the server's collections.
//
// It sits between loading and compiling:
//
//	scenarios.Load ─▶ openapi.Expand ─▶ matcher.Compile
//
// It wraps github.com/pb33f/libopenapi (parsing, $ref resolution) and
// libopenapi-validator (the JSON Schema validation), so that only the
// packages that need them link them. A Cache keeps compiled documents by
// content hash, so that a reload of an unchanged spec costs a hash, not a
// parse.
package openapi
