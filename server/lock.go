package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
)

// lockRuntime is a route's lock: (scenarios.Lock) made ready to serve:
// the names its requests lock, and what one that waited too long gets.
type lockRuntime struct {
	names []*template.Template
	// op, when set, is the operation whose changed object (its path's id,
	// openapi.Operation.Changes) is locked too.
	op      *openapi.Operation
	wait    time.Duration
	timeout *prepared // nil: a 429 problem
}

// newLockRuntime returns the lock of route r, whose operation is op (nil
// for none); nil when its requests lock nothing, and its state's lock
// (locksState) has no timeout answer. A route that names an
// operation which changes a stored object locks that object, unless its
// lock: names others; one that proxies does not (the upstream keeps the
// state).
func newLockRuntime(r *scenarios.Route, op *openapi.Operation) *lockRuntime {
	l := r.Lock
	lr := &lockRuntime{wait: lockWait(l)}
	if l != nil {
		lr.names = l.Names
		if l.Timeout != nil {
			lr.timeout = prepare(l.Timeout)
		}
	}
	if op != nil && op.ChangesStored() && (l == nil || !l.Own) && !slices.ContainsFunc(r.Responses, func(resp *scenarios.Response) bool { return resp.Proxy != nil }) {
		lr.op = op
	}
	if len(lr.names) == 0 && lr.op == nil && (!locksState(r) || lr.timeout == nil) {
		return nil
	}
	return lr
}

// lockWait is how long a request of a route with lock: l (nil: none)
// waits for an object, or its route state, that another request holds.
func lockWait(l *scenarios.Lock) time.Duration {
	if l != nil && l.Wait > 0 {
		return l.Wait
	}
	return scenarios.DefaultLockWait
}

// maxLockName bounds a rendered name; a longer one is refused as a
// template that rendered too much.
const maxLockName = 1 << 10

// hold is the stage between wait and produce on a route with a lock: it
// takes the locks of the objects the request acts on, so that from
// produce's first read to commit's last write no other request acts on
// them (unhold gives them back). A request that waited longer than the
// lock's wait gets its timeout answer (Stripe's 429 lock_timeout), one
// whose client left while it waited ends, and both change nothing.
func (s *Server) hold(x *exchange) bool {
	if x.rt == nil || x.rt.lock == nil {
		return true
	}
	if f := x.fault; f != nil && f.After == scenarios.AfterArrival {
		return true // nothing is made or stored
	}
	lr := x.rt.lock
	names, err := lr.render(x)
	if err != nil {
		x.fail(fmt.Errorf("route %q: lock: %w", x.out.route, err))
		return false
	}
	if len(names) == 0 {
		return true
	}
	ctx := x.ctx
	if ctx == nil {
		ctx = x.r.Context()
	}
	release, cause, err := s.take(ctx, names, lr.wait)
	switch {
	case err == nil:
		x.addUnlock(release)
		return true
	case errors.Is(err, state.ErrLockTimeout):
		x.out.err = err
		s.lockTimeout(x, lr, names)
	case cause != nil:
		ended := "client gone while another request held its object"
		if errors.Is(cause, errShutdown) {
			ended = "lock wait cancelled by shutdown"
		}
		x.abort(ended)
	default:
		s.unavailable(x, err)
	}
	return false
}

// lockContext returns what a request waits on for an object another
// holds: its context, ended also when shutdown begins, as a delay is
// (unless WaitDelaysOnShutdown), and in any case when shutdown gives up
// on the requests still running. A request that completes whatever its
// client does (onClientAbort: complete) has a context that never ends:
// its wait outlived Serve, and a plain request's held Serve for the
// whole shutdown timeout.
func (s *Server) lockContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := func() bool { return false }
	if !s.opts.WaitDelaysOnShutdown {
		stop = context.AfterFunc(s.stopping, func() { cancel(context.Cause(s.stopping)) })
	} else if base := s.abort.Load(); base != nil && parent.Done() == nil {
		stop = context.AfterFunc(*base, func() { cancel(errShutdown) })
	}
	return ctx, func() { stop(); cancel(nil) }
}

// render returns the names the request locks, sorted (so that two
// requests never each hold what the other waits for) and without
// repeats; names that render nothing are left out.
func (lr *lockRuntime) render(x *exchange) ([]string, error) {
	var names []string
	if lr.op != nil {
		if id := lr.op.Changes(x.m.Vars); id != "" {
			names = append(names, id)
		}
	}
	if len(lr.names) > 0 {
		d := x.templateData()
		for _, t := range lr.names {
			name, err := renderName(t, d, maxLockName, "lock")
			if err != nil {
				return nil, err
			}
			if name != "" {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// renderName renders t, a template that names something (an object's
// lock, a route state's key), with d, within max bytes: what it writes,
// trimmed, or "" for a missing value. A longer name is refused naming
// max, not --max-template-output (which renderError names).
func renderName(t *template.Template, d *templateData, max int, field string) (string, error) {
	b := renderBuffer{max: max}
	if err := t.Execute(&b, d); err != nil {
		if errors.Is(err, scenarios.ErrOutputLimit) {
			return "", fmt.Errorf("%w: renders more than %d bytes", errRenderTooLarge, max)
		}
		return "", renderError(field, max, err)
	}
	if name := strings.TrimSpace(b.String()); name != "<no value>" {
		return name, nil
	}
	return "", nil
}

// lockTimeout answers a request that waited longer than its lock's wait:
// with the lock's timeout answer, or a 429 problem that says to retry.
func (s *Server) lockTimeout(x *exchange, lr *lockRuntime, names []string) {
	if lr.timeout != nil {
		s.answerOwn(x, lr.timeout, "lock timeout answer")
		return
	}
	x.w.Header().Set("Retry-After", "1")
	x.answerProblem(probObjectLocked.problem(fmt.Sprintf("Another request held %q for longer than %s; retry.", strings.Join(names, `", "`), lr.wait)))
}

// addUnlock adds release to what unhold calls: the lock of the route's
// state (taken when matching) and those hold took.
func (x *exchange) addUnlock(release func()) {
	if prev := x.unlock; prev != nil {
		x.unlock = func() { release(); prev() }
		return
	}
	x.unlock = release
}

// unhold gives back the locks hold took, and the lock of the route's
// state, once commit has stored the request's effects.
func (x *exchange) unhold() {
	if x.unlock != nil {
		x.unlock()
		x.unlock = nil
	}
}
