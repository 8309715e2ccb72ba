// Package statetest is the conformance suite of state.Store: every
// implementation's test calls Run with a function that builds a fresh
// store, and so runs the very same cases, concurrency and expiry included,
// the way gocloud.dev/docstore/drivertest tests the docstore drivers.
//
// Time is injected through state.Options.Now, so expiry is tested without
// sleeping: a remote implementation must take "now" from that clock (e.g.
// pass it to its scripts) rather than from the remote server's clock.
package statetest
