// Package dashboard owns the live web dashboard of the admin API: one
// hand-written page (HTML, JavaScript and CSS, no framework, no build
// step) embedded in the binary, and the handler that serves it with a
// Content-Security-Policy allowing only the page's own origin. It fetches
// nothing from the internet.
//
// The page is a client of the admin API like any other: it reads
// GET /__admin/scenarios (paged; each route's runs and requests),
// /__admin/health, /__admin/idempotency, /__admin/states, /__admin/collections and a page
// of one collection's items (/__admin/collections/{name}), tails GET /__admin/requests/stream (with the
// journal's filters, read with fetch so that an admin token can go in the
// Authorization header) and GET /__admin/webhooks/stream (the webhook
// attempts, after the last ones of GET /__admin/webhooks), shows each
// journaled request's answer (the entry's response), and calls POST /__admin/reset,
// DELETE /__admin/requests and DELETE /__admin/states/{name} (one state's reset). It does not know the server's types and the
// server does not know the page's: package server mounts Handler under
// /__admin/ui and nothing else ties them.
//
// Where it sits:
//
//	browser ─▶ GET /__admin/ui ─▶ Handler (static, embedded)
//	        ─▶ fetch /__admin/... ─▶ server's admin API
package dashboard
