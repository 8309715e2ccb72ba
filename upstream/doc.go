// Package upstream forwards a request to a real HTTP server, the upstream of
// a proxied route, and hands its answer back as a streaming Response.
//
// It owns outbound HTTP: one http.Transport per Proxy with bounded idle
// connections (closed by Proxy.Close), the rewriting of the request
// (hop-by-hop headers of RFC 9110 §7.6.1 dropped, including those named in
// Connection; Host set to the upstream's; X-Forwarded-For, -Proto and -Host
// set; a route's header set and remove rules), the per-route timeout
// (default 30s) and the loop marker (a Via entry naming this mock, so that
// an upstream that is the mock itself is refused rather than recursed into;
// PointsAt catches the plain cases before any request, from the URL and
// the listener's address).
//
// Bodies stream both ways: the request body is handed to the transport as
// it arrives, and Response.Body is read from the connection as the caller
// writes it out (Response.WriteTo), so a 1 GB body costs a 32 KiB buffer.
// A streamed answer's trailers (gRPC's Grpc-Status) follow its body: the
// names the upstream declared are declared again (and a declared length
// dropped, so that HTTP/1.1 chunks the body), and the values are set once
// the upstream's body ends, hop-by-hop and framing fields left out; an
// answer its caller holds whole takes them from Response.Trailers.
//
// A protocol upgrade (WebSocket) is not tunnelled: Do refuses a request
// that asks for one with a 501 *Error, and an upstream's unasked 101 is a
// 502, rather than a 101 held until the timeout.
//
// It does not write errors to clients: an unreachable, slow or looping
// upstream is an *Error carrying the status the server answers with (502,
// 504 or 508), the upstream named and the cause, for the server's one
// function that turns errors into RFC 9457 problems. Neither does it know
// scenarios, faults, delays or the journal: in the server's orchestrator
// it is one arm of produce (Proxy.Do), with deliver writing the Response.
//
// net/http/httputil.ReverseProxy is not used because it writes the answer
// itself; the orchestrator must hold the upstream's answer between produce
// and deliver (a fault after processing throws it away, recording tees it).
package upstream
