// Package idempotency holds the rules of Idempotency-Key emulation that
// depend on the request: reading and checking a key (an RFC 8941
// sf-string, as the IETF draft sends it, or a bare Stripe-style value),
// the key's scope, and the fingerprint that tells a retry from a new
// request reusing the key.
//
// It sits between the matcher and the state package in the flow: the
// server matches a route, asks this package for the key and fingerprint of
// the request, and claims them in the state package's store, which knows
// nothing of HTTP. This package keeps no state and does no I/O.
package idempotency
