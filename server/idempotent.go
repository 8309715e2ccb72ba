package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/scenariomock/scenariomock/idempotency"
	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
)

// idemRuntime is a route's idempotency block made ready to serve.
type idemRuntime struct {
	cfg *scenarios.Idempotency
	// The scenario's own answers for the three refusals; nil means the
	// built-in problem answers.
	missing, mismatch, conflict *prepared
}

func newIdemRuntime(cfg *scenarios.Idempotency) *idemRuntime {
	ir := &idemRuntime{cfg: cfg}
	for _, e := range []struct {
		src *scenarios.Response
		dst **prepared
	}{{cfg.Missing, &ir.missing}, {cfg.Mismatch, &ir.mismatch}, {cfg.Conflict, &ir.conflict}} {
		if e.src != nil {
			*e.dst = prepare(e.src)
		}
	}
	return ir
}

// The idempotency outcomes, as the log (and later the journal) names them.
const (
	idemNew      = "new"
	idemReplayed = "replayed"
	idemMismatch = "mismatch"
	idemInFlight = "in-flight"
	idemMissing  = "missing-key"
	idemInvalid  = "invalid-key"
)

// serveIdempotent answers a request to a route with an idempotency block:
// the key is claimed in the store before the route runs, and the route's
// answer is stored for retries (draft-ietf-httpapi-idempotency-key-header,
// Stripe's rules).
func (s *Server) serveIdempotent(w http.ResponseWriter, r *http.Request, in *matcher.Request, m matcher.Match, rt *routeRuntime, start time.Time) {
	ir := rt.idem
	cfg := ir.cfg
	raw, ok := in.Attribute(cfg.Key, m.Vars)
	if !ok {
		if !cfg.Required {
			call, p, err := s.next(r.Context(), rt, in, m)
			if err != nil {
				s.unavailable(w, r, m.Route.Name, err, start)
				return
			}
			s.respond(w, r, in, m, p, call, start)
			return
		}
		s.refuse(w, r, in, m, ir.missing, http.StatusBadRequest, idemMissing, start,
			"Idempotency-Key is missing",
			fmt.Sprintf("This operation is idempotent: send a key in %s (a UUID is fine) so that a retry cannot run it twice.", cfg.Key))
		return
	}
	key, err := idempotency.ParseKey(raw)
	if err != nil {
		s.refuse(w, r, in, m, nil, http.StatusBadRequest, idemInvalid, start, "Idempotency-Key is invalid", err.Error()+".")
		return
	}
	k := state.Key{Group: cfg.Group, Scope: scopeOf(in, cfg.Scope, m.Vars), Key: key}
	fp := state.Fingerprint(idempotency.FingerprintOf(in, cfg.Fingerprint, m.Vars))
	c, err := s.state.Idempotency().Claim(r.Context(), k, fp, state.ClaimOptions{TTL: cfg.TTL, Wait: cfg.InFlight == scenarios.Wait})
	if err != nil {
		s.unavailable(w, r, m.Route.Name, err, start)
		return
	}
	switch c.Outcome {
	case state.Replay:
		s.replay(w, r, m.Route.Name, cfg, c.Response, start)
	case state.Mismatch:
		s.refuse(w, r, in, m, ir.mismatch, http.StatusUnprocessableEntity, idemMismatch, start,
			"Idempotency-Key is already used",
			"This Idempotency-Key was first used with another request; use a new key for a new request.")
	case state.InFlight:
		if r.Context().Err() != nil {
			// inFlight: wait, and the waiting client left first.
			s.logRequest(r, m.Route.Name, 0, 0, start, slog.String("idempotency", idemInFlight), slog.String("outcome", "client gone while waiting"))
			panic(http.ErrAbortHandler)
		}
		if ir.conflict == nil {
			w.Header().Set("Retry-After", "1")
		}
		s.refuse(w, r, in, m, ir.conflict, http.StatusConflict, idemInFlight, start,
			"A request is outstanding for this Idempotency-Key",
			"The first request with this key is still running; retry after it completes.")
	case state.New:
		s.runClaimed(w, r, in, m, rt, c.Token, start)
	}
}

// refuse answers a request the idempotency rules turn away: with the
// scenario's own answer when it has one, else a problem.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, in *matcher.Request, m matcher.Match, own *prepared, status int, outcome string, start time.Time, title, detail string) {
	route := m.Route.Name
	if own != nil {
		if err := own.write(w, s.opts.MaxTemplateOutput, s.templateData(r.Context(), in, m, 0)); err != nil {
			err = fmt.Errorf("route %q: idempotency answer: %w", route, err)
			writeProblem(w, newProblem(statusOf(err), err.Error()))
			s.logProblem(r, route, statusOf(err), 0, start, slog.String("idempotency", outcome), slog.String("error", err.Error()))
			return
		}
		s.logRequest(r, route, own.status, 0, start, slog.String("idempotency", outcome))
		return
	}
	p := newProblem(status, detail)
	p.Title = title
	writeProblem(w, p)
	s.logRequest(r, route, status, 0, start, slog.String("idempotency", outcome))
}

// unavailable answers a request whose state could not be read or written:
// a 503 rather than an answer that may be wrong.
func (s *Server) unavailable(w http.ResponseWriter, r *http.Request, route string, err error, start time.Time) {
	w.Header().Set("Retry-After", "1")
	writeProblem(w, newProblem(http.StatusServiceUnavailable, "The state store did not answer: "+err.Error()))
	s.logProblem(r, route, http.StatusServiceUnavailable, 0, start, slog.String("error", err.Error()))
}

// replay sends a stored response again, byte for byte, with the replay
// header. Nothing of the route runs: no sequence step, no delay, no
// template.
func (s *Server) replay(w http.ResponseWriter, r *http.Request, route string, cfg *scenarios.Idempotency, resp state.Response, start time.Time) {
	h := w.Header()
	for _, f := range resp.Header {
		h[f.Name] = append(h[f.Name], f.Value)
	}
	if cfg.ReplayHeader != "" {
		h[cfg.ReplayHeader] = []string{"true"}
	}
	h["Content-Length"] = []string{strconv.Itoa(len(resp.Body))}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
	s.logRequest(r, route, resp.Status, 0, start, slog.String("idempotency", idemReplayed))
}

// runClaimed runs the route for the request that claimed its key, stores
// the answer when its status is one the route stores, and releases the key
// otherwise, so that a retry runs the route again.
func (s *Server) runClaimed(w http.ResponseWriter, r *http.Request, in *matcher.Request, m matcher.Match, rt *routeRuntime, tok state.Token, start time.Time) {
	cfg := rt.idem.cfg
	route := m.Route.Name
	// The store is written whatever the client does: a remote store must
	// not keep a key in flight because the client hung up.
	bg := context.WithoutCancel(r.Context())
	release := func() {
		if err := s.state.Idempotency().Release(bg, tok); err != nil && !errors.Is(err, state.ErrNotClaimed) {
			s.log.Warn("idempotency key not released", "route", route, "error", err.Error())
		}
	}
	call, p, err := s.next(r.Context(), rt, in, m)
	if err != nil {
		release()
		s.unavailable(w, r, route, err, start)
		return
	}
	// A real server that has started the work finishes it when the client
	// hangs up; the retry then finds the stored answer. Only shutdown
	// stops it (onClientAbort: discard stops with the client instead).
	ctx := r.Context()
	f := s.faultFor(p)
	delay := pickDelay(p.src.Delay, s.opts.Rand)
	if delay > 0 {
		// Contexts only for a delay: they cost allocations and a
		// registration with the shutdown signal.
		var stop func()
		if cfg.OnClientAbort == scenarios.Complete {
			ctx, stop = s.detach(r.Context())
		} else {
			ctx, stop = s.delayContext(r)
		}
		defer stop()
	} else if cfg.OnClientAbort == scenarios.Complete {
		ctx = context.WithoutCancel(ctx)
	}
	if delay > 0 && !s.opts.Clock.Wait(ctx, delay) {
		release()
		outcome := "client gone during delay"
		if errors.Is(context.Cause(ctx), errShutdown) {
			outcome = "delay cancelled by shutdown"
		}
		s.logRequest(r, route, 0, delay, start, slog.String("idempotency", idemNew), slog.String("outcome", outcome))
		panic(http.ErrAbortHandler)
	}
	if f != nil && f.After == scenarios.AfterArrival {
		// Nothing is processed: the key is free for the retry. A kind
		// that sends part of the answer renders it, writing nothing.
		release()
		var rec *recorder
		if f.SendsAnswer() {
			rec = &recorder{header: http.Header{}}
			if err := s.produce(ctx, rec, p, s.templateData(ctx, in, m, call)(), true); err != nil {
				err = fmt.Errorf("route %q: %w", route, err)
				writeProblem(w, newProblem(statusOf(err), err.Error()))
				s.logProblem(r, route, statusOf(err), delay, start, faultAttrs(f, slog.String("idempotency", idemNew), slog.String("error", err.Error()))...)
				return
			}
		}
		s.deliverFault(w, r, route, f, rec, delay, start, slog.String("idempotency", idemNew))
		return
	}
	rec := &recorder{header: http.Header{}}
	var d *templateData
	if p.src.Op != "" || p.src.Save != nil {
		d = s.templateData(ctx, in, m, call)()
		err = s.produce(bg, rec, p, d, false)
	} else {
		err = p.write(rec, s.opts.MaxTemplateOutput, s.templateData(ctx, in, m, call))
	}
	if err != nil {
		release()
		err = fmt.Errorf("route %q: %w", route, err)
		writeProblem(w, newProblem(statusOf(err), err.Error()))
		s.logProblem(r, route, statusOf(err), delay, start, slog.String("idempotency", idemNew), slog.String("error", err.Error()))
		return
	}
	if cfg.Store.Has(rec.status) {
		// The item is saved before the key is completed, and only for an
		// answer that is stored: a replay then finds both, a released
		// answer (5xx, fault, template failure) saves nothing, and a save
		// that fails (507) releases the key instead of storing a 201 whose
		// item does not exist.
		if p.src.Save != nil {
			if err := s.save(bg, p, d, rec); err != nil {
				release()
				err = fmt.Errorf("route %q: %w", route, err)
				writeProblem(w, newProblem(statusOf(err), err.Error()))
				s.logProblem(r, route, statusOf(err), delay, start, slog.String("idempotency", idemNew), slog.String("error", err.Error()))
				return
			}
		}
		if err := s.state.Idempotency().Complete(bg, tok, rec.response()); err != nil {
			// The answer still goes out; a retry runs the route again.
			s.log.Warn("idempotent response not stored", "route", route, "error", err.Error())
		}
		// Committed: the events go, once; a replay of the key sends none.
		s.commitEvents(bg, in, m, call, rec.status, rec.header, rec.body.Bytes())
	} else {
		release()
	}
	if f != nil {
		// After processing: the answer is stored (or the key released, as
		// its status says) and the item saved, and then the client never
		// gets it. The retry with the key gets the replay.
		s.deliverFault(w, r, route, f, rec, delay, start, slog.String("idempotency", idemNew))
		return
	}
	rec.writeTo(w)
	s.logRequest(r, route, rec.status, delay, start, slog.String("idempotency", idemNew))
}

// detach returns a context that ignores the client leaving but ends at
// shutdown, for work that completes whether or not anyone waits for it.
func (s *Server) detach(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	stop := context.AfterFunc(s.stopping, func() { cancel(errShutdown) })
	return ctx, func() { stop(); cancel(nil) }
}

// scopeOf joins the scope's values into the stored key's scope. They are
// kept as a hash: a scope is often a credential (the Authorization
// header), which neither the store nor the admin API should hold.
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
		}
		binary.BigEndian.PutUint64(n[:], uint64(len(v)))
		h.Write(n[:])
		h.Write([]byte(v))
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// recorder captures the answer prepared.write produces, so that it can be
// stored before it is sent.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (rec *recorder) Header() http.Header { return rec.header }

func (rec *recorder) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
}

func (rec *recorder) Write(b []byte) (int, error) {
	rec.WriteHeader(http.StatusOK)
	return rec.body.Write(b)
}

// response is the recorded answer as the store keeps it; net/http writes
// header fields sorted by name, so that is the order kept.
func (rec *recorder) response() state.Response {
	names := make([]string, 0, len(rec.header))
	for name := range rec.header {
		names = append(names, name)
	}
	slices.Sort(names)
	var fields []state.Header
	for _, name := range names {
		for _, v := range rec.header[name] {
			fields = append(fields, state.Header{Name: name, Value: v})
		}
	}
	return state.Response{Status: rec.status, Header: fields, Body: rec.body.Bytes()}
}

func (rec *recorder) writeTo(w http.ResponseWriter) {
	h := w.Header()
	for name, vs := range rec.header {
		h[name] = vs
	}
	w.WriteHeader(rec.status)
	_, _ = w.Write(rec.body.Bytes())
}
