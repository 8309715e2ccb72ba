// Package scenariomocktest runs a scenariomock server inside a Go test,
// the way WireMock's JUnit rule does for Java: Start serves scenarios
// written in the test (YAML) or kept in files on a free loopback port,
// and stops the server when the test ends.
//
//	func TestCheckout(t *testing.T) {
//		srv := scenariomocktest.Start(t, scenariomocktest.YAML(`
//			routes:
//			  - name: create payment
//			    method: POST
//			    path: /payments
//			    respond: { status: 201, body: { id: pay_1 } }
//		`), scenariomocktest.FailOnUnmatched())
//
//		checkout(srv.URL()) // the code under test
//
//		if n := srv.Count(scenariomocktest.Filter{Route: "create payment", Status: "201"}); n != 1 {
//			t.Errorf("%d payments created, want 1", n)
//		}
//	}
//
// The server is package server's, on a real listener; Count, Requests,
// Reset, State and SetState ask it over its admin API (package
// adminclient), so a test exercises what a CI job's `scenariomock
// verify` does. SetState starts a test from the route state it needs
// (an order already paid) without the requests that lead there. With
// FailOnUnmatched, a request that no route matched fails the test at its
// end, with the near-miss report of each.
//
// It owns nothing but the wiring: loading is package scenarios', serving
// package server's, the journal package state's.
package scenariomocktest
