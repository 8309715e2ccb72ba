package server

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/scenariomock/scenariomock/idempotency"
	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
)

// idemRuntime is a route's idempotency block made ready to serve.
type idemRuntime struct {
	cfg *scenarios.Idempotency
	// The scenario's own answers for the four refusals; nil means the
	// built-in problem answers.
	missing, invalid, mismatch, conflict *prepared
}

func newIdemRuntime(cfg *scenarios.Idempotency) *idemRuntime {
	ir := &idemRuntime{cfg: cfg}
	for _, e := range []struct {
		src *scenarios.Response
		dst **prepared
	}{{cfg.Missing, &ir.missing}, {cfg.Invalid, &ir.invalid}, {cfg.Mismatch, &ir.mismatch}, {cfg.Conflict, &ir.conflict}} {
		if e.src != nil {
			*e.dst = prepare(e.src)
		}
	}
	return ir
}

// The idempotency outcomes (result.idem), as the log and the journal name them.
const (
	idemNew      = "new"
	idemReplayed = "replayed"
	idemMismatch = "mismatch"
	idemInFlight = "in-flight"
	idemMissing  = "missing-key"
	idemInvalid  = "invalid-key"
)

// claim is the first stage of a request to a route with an idempotency
// block (draft-ietf-httpapi-idempotency-key-header, Stripe's rules): the
// key is claimed in the store before the route runs, in one round trip
// that also fetches a stored answer. A replay or a refusal ends the
// request here: nothing of the route runs, no sequence step, no delay.
// A request that found its route's state locked may have claimed its
// key already, when matching (claimEarly): its claim is used.
func (s *Server) claim(x *exchange) bool {
	if x.rt == nil || x.rt.idem == nil {
		return true
	}
	ir := x.rt.idem
	if x.claimed { // claimed when matching (claimEarly, settleEarlyClaim)
		x.out.idem = idemNew
		return true
	}
	if rd := &x.states; rd.early != nil {
		rd.early = nil
		return s.claimed(x, ir, rd.earlyClaim)
	}
	cfg := ir.cfg
	k, fp, ok, err := idemKeyOf(x.in, cfg, x.m.Vars)
	switch {
	case err != nil:
		s.refuse(x, ir.invalid, probKeyInvalid, idemInvalid, err.Error()+".")
		return false
	case !ok && cfg.Required:
		s.refuse(x, ir.missing, probKeyMissing, idemMissing,
			fmt.Sprintf("This operation is idempotent: send a key in %s (a UUID is fine) so that a retry cannot run it twice.", cfg.Key))
		return false
	case !ok:
		return true
	}
	c, err := s.claimKey(x, cfg, k, fp)
	if err != nil {
		s.unavailable(x, err)
		return false
	}
	return s.claimed(x, ir, c)
}

// idemKeyOf returns the stored key and the fingerprint of request in
// for a route with idempotency block cfg, whose path bound vars; ok is
// false when the request sends no key, err says why the one it sends is
// not one.
func idemKeyOf(in *matcher.Request, cfg *scenarios.Idempotency, vars map[string]string) (k state.Key, fp state.Fingerprint, ok bool, err error) {
	raw, ok := in.Attribute(cfg.Key, vars)
	if !ok {
		return k, fp, false, nil
	}
	key, err := idempotency.ParseKey(raw)
	if err != nil {
		return k, fp, false, err
	}
	k = state.Key{Group: cfg.Group, Scope: scopeOf(in, cfg.Scope, vars), Key: key}
	fp = state.Fingerprint(idempotency.FingerprintOf(in, cfg.Fingerprint, vars))
	return k, fp, true, nil
}

// claimKey claims key k with fingerprint fp in the store, as route
// block cfg says (inFlight: wait waits for the first request's answer).
func (s *Server) claimKey(x *exchange, cfg *scenarios.Idempotency, k state.Key, fp state.Fingerprint) (state.Claim, error) {
	wait := cfg.InFlight == scenarios.Wait
	if wait {
		holdWrites(x.w) // the first request may take its delay and more
	}
	o := state.ClaimOptions{TTL: cfg.TTL, Wait: wait, Header: x.replayHeader}
	if _, ok := s.opts.Clock.(realClock); ok {
		o.Arrived = x.start // one clock read less in a store on the real clock
	}
	c, err := s.state.Idempotency().Claim(x.r.Context(), k, fp, o)
	if wait {
		s.writeWindow(x.w, 0)
	}
	return c, err
}

// claimed ends the claim stage with what the store decided, c: a new
// claim runs the route; a replay or a refusal ends the request.
func (s *Server) claimed(x *exchange, ir *idemRuntime, c state.Claim) bool {
	switch c.Outcome {
	case state.Replay:
		x.out.idem = idemReplayed
		x.kind, x.stored = answerStored, c.Response
		if cap(c.Response.Header) > cap(x.replayHeader) {
			x.replayHeader = c.Response.Header[:0] // the next replay's room
		}
	case state.Mismatch:
		s.refuse(x, ir.mismatch, probKeyReused, idemMismatch,
			"This Idempotency-Key was first used with another request; use a new key for a new request.")
	case state.InFlight:
		if x.r.Context().Err() != nil {
			// inFlight: wait, and the waiting client left first.
			x.out.idem = idemInFlight
			x.abort("client gone while waiting")
			return false
		}
		if ir.conflict == nil {
			x.w.Header().Set("Retry-After", "1")
		}
		s.refuse(x, ir.conflict, probKeyInFlight, idemInFlight,
			"The first request with this key is still running; retry after it completes.")
	case state.New:
		x.out.idem = idemNew
		x.tok, x.claimed = c.Token, true
		return true
	}
	return false
}

// refuse answers a request the idempotency rules turn away: with the
// scenario's own answer when it has one, else a problem of type t.
func (s *Server) refuse(x *exchange, own *prepared, t problemType, outcome, detail string) {
	x.out.idem = outcome
	if own != nil {
		s.answerOwn(x, own, "idempotency answer")
		return
	}
	x.answerProblem(t.problem(detail))
}

// answerOwn answers with the scenario's own answer in place of a
// built-in refusal (an idempotency error's, a lock timeout's); what names
// it in the error of one that fails to render.
func (s *Server) answerOwn(x *exchange, own *prepared, what string) {
	x.rec.direct(x.w.Header())
	if err := own.render(&x.rec, s.opts.MaxTemplateOutput, x); err != nil {
		x.fail(fmt.Errorf("route %q: %s: %w", x.out.route, what, err))
		return
	}
	x.kind = answerRecorded
}

// replay sends a stored response again, byte for byte, with the replay
// header: one lookup (the claim) and one write.
func (s *Server) replay(x *exchange) {
	resp := &x.stored
	h := x.w.Header()
	// One slice, kept on the connection, holds the values of the fields
	// w does not have yet (all of them, but for CORS).
	// A pooled exchange (HTTP/2, or ServeHTTP called directly) gets its
	// own: its caller may read w's header after ServeHTTP returns, when the
	// exchange already serves another request
	// (TestReplayHeadersOutliveTheRequest).
	var values []string
	if x.pooled {
		values = make([]string, len(resp.Header))
	} else {
		if cap(x.replayValues) < len(resp.Header) {
			x.replayValues = make([]string, len(resp.Header))
		}
		values = x.replayValues[:len(resp.Header)]
	}
	// The fields are sorted by name (recorder.response), so into a header
	// that starts empty (no CORS headers) each name goes once, without
	// looking it up first; a name repeated (a list) or out of order, or a
	// header that has fields already, is looked up from there on.
	lookup, prev := len(h) > 0, ""
	for i, f := range resp.Header {
		if !lookup && f.Name <= prev {
			lookup = true
		}
		prev = f.Name
		if lookup {
			if vs, ok := h[f.Name]; ok {
				h[f.Name] = append(vs, f.Value)
				continue
			}
		}
		values[i] = f.Value
		h[f.Name] = values[i : i+1 : i+1]
	}
	if rh := x.rt.idem.cfg.ReplayHeader; rh != "" {
		h[rh] = headerTrue
	}
	// The stored answer has its Content-Length (render sets it); it is
	// set again only if it says another length.
	var n [20]byte
	if cl := h["Content-Length"]; len(cl) != 1 || cl[0] != string(strconv.AppendInt(n[:0], int64(len(resp.Body)), 10)) {
		h["Content-Length"] = []string{strconv.Itoa(len(resp.Body))}
	}
	x.out.status = resp.Status
	s.record(x)
	x.w.WriteHeader(resp.Status)
	_, _ = x.w.Write(resp.Body)
}

// releaseClaim frees the request's key, if it holds one, so that a retry
// runs the route again. The store is written whatever the client does: a
// remote store must not keep a key in flight because the client hung up.
func (s *Server) releaseClaim(x *exchange) {
	if !x.claimed {
		return
	}
	x.claimed = false
	if err := s.state.Idempotency().Release(detached, x.tok); err != nil && !errors.Is(err, state.ErrNotClaimed) {
		s.log.Warn("idempotency key not released", "route", x.out.route, "error", err.Error())
	}
}

// completeClaim stores the answer under the request's key, if it holds
// one. When the store cannot take it (the claim was lost: the key expired
// or the store restarted and forgot it; or the store did not answer), the
// client gets a 503 instead of the answer: a retry will run the route
// again, and a success the client trusts would then be a second payment.
func (s *Server) completeClaim(x *exchange) {
	if !x.claimed {
		return
	}
	x.claimed = false
	err := s.state.Idempotency().Complete(x.detached(), x.tok, x.rec.response())
	if err == nil {
		return
	}
	x.produced = false
	if errors.Is(err, state.ErrFenced) {
		x.fencedOff(err) // the store freed the key
		return
	}
	x.w.Header().Set("Retry-After", "1")
	x.out.err = err
	detail := "The answer could not be stored for this Idempotency-Key (the state store did not answer: " + err.Error() + "); the request may have taken effect, and a retry runs it again."
	if errors.Is(err, state.ErrNotClaimed) {
		detail = "This request's claim on its Idempotency-Key was lost before its answer could be stored (the key expired or the state store forgot it); the request may have taken effect, and a retry runs it again."
	}
	x.answerProblem(newProblem(http.StatusServiceUnavailable, detail))
}

// detach returns a context that ignores the client leaving but ends at
// shutdown, for work that completes whether or not anyone waits for it:
// when shutdown begins, or with WaitDelaysOnShutdown when it gives up on
// the requests still running (ShutdownTimeout), as a delay or a forward
// without the claim does. It ended when shutdown began whatever the flag
// said, cutting the delay and forward of an idempotent route.
func (s *Server) detach(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	end := s.stopping
	if s.opts.WaitDelaysOnShutdown {
		end = context.Background() // never, outside Serve
		if base := s.abort.Load(); base != nil {
			end = *base
		}
	}
	stop := context.AfterFunc(end, func() { cancel(errShutdown) })
	return ctx, func() { stop(); cancel(nil) }
}

// scopeOf joins the scope's values into the stored key's scope. They are
// kept as a hash: a scope is often a credential (the Authorization
// header), which neither the store nor the admin API should hold. The
// Authorization header counts by the credential it carries
// (matcher.Credential): one API key sent as Bearer or as Basic is one
// scope, as it is one account to the provider.
func scopeOf(in *matcher.Request, scope []*scenarios.Attribute, vars map[string]string) string {
	if len(scope) == 0 {
		return ""
	}
	h := sha256.New()
	var n [8]byte
	for _, a := range scope {
		v, ok := in.Attribute(a, vars)
		if !ok {
			v = "\x00absent"
		} else if a.Kind == scenarios.HeaderAttr && a.Name == "Authorization" {
			v = matcher.Credential(v)
		}
		binary.BigEndian.PutUint64(n[:], uint64(len(v)))
		h.Write(n[:])
		h.Write([]byte(v))
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// recorder holds an answer made before it is sent: stored, saved, or
// broken by a fault. Its header is w's own when the answer is sent as it
// is (direct), else a map apart from what w already carries.
type recorder struct {
	header http.Header
	status int
	// body is the answer's body: buf's bytes, or a prepared response's
	// own, which is never written to.
	body []byte
	// buf is storage kept between the requests of a connection; the store,
	// the journal and collections copy what they keep of it.
	buf []byte
	// inW: header is w's.
	inW bool
	// stored is the answer's header as the store keeps it, when render
	// wrote a static answer (prepared.stored); nil: response reads it
	// from header.
	stored *storedHeader
	// head is the journal's encoding of the header render wrote for a
	// static answer (prepared.head), nil when stored is; journalResponse
	// hands it to the journal when the header sent is that one alone.
	head journalHead
	// names and fields are response's scratch.
	names  []string
	fields []state.Header
	// key is what the response that rendered the answer does to a claimed
	// Idempotency-Key (scenarios.Response.Idempotency).
	key scenarios.KeyEffect
	// trailer is a proxied answer's trailer fields (gRPC's Grpc-Status),
	// held with its body and sent after it; nil for none. The store does
	// not keep them: a replay has none.
	trailer http.Header
}

// storedHeader is a static answer's header as the idempotency store
// keeps it: its fields sorted by name, and packed (state.PackHeader).
type storedHeader struct {
	fields []state.Header
	packed state.PackedHeader
}

// scratch returns rec's storage emptied, for the next request's recorder
// (exchange.reset), or nils if it grew past what is worth keeping. Three
// slices, not a recorder: a recorder returned and assigned back was built
// and copied whole (about 120 instructions a request, under callgrind).
func (rec *recorder) scratch() (buf []byte, names []string, fields []state.Header) {
	if cap(rec.buf) > maxPooledBody || cap(rec.fields) > 64 {
		return nil, nil, nil
	}
	clear(rec.fields) // let go of the strings
	clear(rec.names)
	return rec.buf[:0], rec.names[:0], rec.fields[:0]
}

// direct makes h, w's header, where the answer is rendered.
func (rec *recorder) direct(h http.Header) {
	rec.header, rec.inW, rec.status, rec.body, rec.stored, rec.head, rec.key = h, true, 0, nil, nil, journalHead{}, scenarios.KeyByStatus
	rec.trailer = nil
}

// apart renders the answer into the exchange's own header map.
func (rec *recorder) apart(x *exchange) {
	if x.ownHeader == nil {
		x.ownHeader = http.Header{}
	}
	rec.header, rec.inW, rec.status, rec.body, rec.stored, rec.head = x.ownHeader, false, 0, nil, nil, journalHead{}
	rec.trailer = nil
}

func (rec *recorder) Header() http.Header { return rec.header }

func (rec *recorder) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
}

func (rec *recorder) Write(b []byte) (int, error) {
	rec.WriteHeader(http.StatusOK)
	rec.buf = append(append(rec.buf[:0], rec.body...), b...) // body may be buf's own bytes
	rec.body = rec.buf
	return len(b), nil
}

// response is the recorded answer as the store keeps it; net/http writes
// header fields sorted by name, so that is the order kept. Its slices are
// the recorder's scratch, reused by the next request: the store copies
// what it keeps.
func (rec *recorder) response() state.Response {
	if st := rec.stored; st != nil {
		return state.Response{Status: rec.status, Header: st.fields, Body: rec.body, Packed: st.packed}
	}
	names := rec.names[:0]
	for name := range rec.header {
		names = append(names, name)
	}
	slices.Sort(names)
	fields := rec.fields[:0]
	for _, name := range names {
		for _, v := range rec.header[name] {
			fields = append(fields, state.Header{Name: name, Value: v})
		}
	}
	rec.names, rec.fields = names, fields
	return state.Response{Status: rec.status, Header: fields, Body: rec.body}
}

// writeTo sends the answer.
func (rec *recorder) writeTo(w http.ResponseWriter) {
	if !rec.inW {
		h := w.Header()
		for name, vs := range rec.header {
			h[name] = vs
		}
	}
	if rec.trailer != nil {
		// Declared before the head, so that net/http chunks the body
		// (HTTP/1.1 carries trailers only after chunks) and sends the
		// values set once the body is written.
		h := w.Header()
		for name := range rec.trailer {
			h.Add("Trailer", name)
		}
		delete(h, "Content-Length")
	}
	w.WriteHeader(rec.status)
	if len(rec.body) > 0 {
		_, _ = w.Write(rec.body)
	}
	if rec.trailer != nil {
		h := w.Header()
		for name, vs := range rec.trailer {
			h[name] = vs
		}
	}
}
