package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Outcomes of an attempt, and the states of a delivery, as the attempt log
// and the admin API name them.
const (
	Delivered = "delivered" // the receiver answered 2xx
	Retrying  = "retrying"  // the attempt failed and another is scheduled
	Failed    = "failed"    // the attempt failed and the schedule is spent
	Disabled  = "disabled"  // the receiver answered 410; its endpoint is off
	Overflow  = "overflow"  // the outbox was full: the delivery never started
	Pending   = "pending"   // a delivery's state while attempts remain
)

// ErrFull is returned by Send when the outbox holds Options.Queue
// deliveries; the overflow is recorded in the attempt log too.
var ErrFull = errors.New("webhook outbox full")

// errDropped is the error of a first attempt the drop-first fault never sent.
var errDropped = errors.New("not sent (drop-first fault)")

// errNoAnswer is the error of an attempt its timeout ended.
var errNoAnswer = errors.New("no answer")

// Options configures a Dispatcher.
type Options struct {
	// Queue bounds the deliveries pending or in flight (default 10,000).
	Queue int
	// Concurrency bounds the attempts in flight at once (default 8), and
	// so the goroutines a hanging receiver can hold. When there may be
	// more than one endpoint (more than one configured, or a source),
	// one endpoint has fewer than half of them in flight ((n-1)/2, and
	// at least 1), so that two receivers that hang leave the others one
	// at least. At 2 or less they hold every slot, and a slot that one's
	// timeout frees goes to the other endpoints first (PerEndpoint.Slow):
	// another endpoint's event waits one timeout, not for their backlog.
	Concurrency int
	// TimeScale multiplies every wait: after, delay, the retry schedule and
	// Retry-After (default 1; 0.01 for CI). Signed timestamps stay real.
	TimeScale float64
	// Seed seeds the fault draws.
	Seed uint64
	// History bounds the attempts, finished deliveries and events kept
	// for the admin API (default 10,000 each).
	History int
	// Transport sends the attempts; nil means a transport of the
	// dispatcher's own, closed when Run returns.
	Transport http.RoundTripper
	// Now is the clock of signed timestamps, the log and the outbox's
	// due times; nil is time.Now.
	Now func() time.Time
	// Outbox holds the deliveries; nil is one in this process's memory
	// bounded by Queue. Replicas that share one (state/redis) deliver
	// each attempt once, and what is pending outlives a replica.
	Outbox Outbox
	// Shared, when set, is the attempt log and the finished deliveries
	// that replicas share (state/redis): the queries answer from it.
	Shared History
}

// Dispatcher delivers events to endpoints at least once. It is safe for
// concurrent use; Run delivers, and Send, the queries and Reset may be
// called before, during and after it.
type Dispatcher struct {
	opts   Options
	box    Outbox
	client *http.Client
	own    *http.Transport // closed when Run returns; nil with Options.Transport
	wake   chan struct{}

	flightMu sync.Mutex      // guards flight and slow
	flight   map[string]int  // attempts in flight (claimed) by endpoint
	slow     map[string]bool // endpoints whose last attempt got no answer (PerEndpoint.Slow)

	mu        sync.Mutex // guards everything below, and orders outcomes with the log
	endpoints map[string]*endpointState
	names     []string // endpoint names in configuration order
	rng       *rand.Rand
	events    ring[*Event]
	byID      map[string]*Event // the events in events
	attempts  ring[Attempt]
	finished  ring[Delivery]
	attemptN  int64
	changed   chan struct{} // closed at the next attempt logged (Changed)

	sources map[string]*Source // where targets are found (SetSources)
	// targets holds, by event id, the targets each event in events was
	// sent to, for Redeliver.
	targets map[string][]Target
	// sentTo holds, by event id, the configured endpoints an event in
	// events was sent to when it was not sent to every one (a route's
	// endpoints:), so that Redeliver sends it to those alone.
	sentTo map[string][]string
	// gone holds, by targetKey, the URL of each target that answered
	// 410: as a configured endpoint, it gets no more events there until
	// Reset (its stored object may give it a new URL, which is enabled).
	gone map[string]string
}

// targetKey names a target across its sends: its source and its name.
func targetKey(t *Target) string { return t.Source + "\x00" + t.Name }

// isGone reports whether a 410 disabled t at its URL.
func (d *Dispatcher) isGone(t *Target) bool {
	u, ok := d.gone[targetKey(t)]
	return ok && u == t.URL
}

type endpointState struct {
	Endpoint
	disabled bool
}

// New returns a dispatcher with no endpoints; it delivers once Run runs.
func New(opts Options) *Dispatcher {
	if opts.Queue <= 0 {
		opts.Queue = 10_000
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	if opts.TimeScale <= 0 {
		opts.TimeScale = 1
	}
	if opts.History <= 0 {
		opts.History = 10_000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	box := opts.Outbox
	if box == nil {
		box = NewMemoryOutbox(opts.Queue)
	}
	d := &Dispatcher{
		opts:      opts,
		box:       box,
		wake:      make(chan struct{}, 1),
		flight:    map[string]int{},
		slow:      map[string]bool{},
		endpoints: map[string]*endpointState{},
		byID:      map[string]*Event{},
		sources:   map[string]*Source{},
		targets:   map[string][]Target{},
		sentTo:    map[string][]string{},
		gone:      map[string]string{},
		rng:       rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		events:    newRing[*Event](opts.History),
		attempts:  newRing[Attempt](opts.History),
		finished:  newRing[Delivery](opts.History),
	}
	rt := opts.Transport
	if rt == nil {
		d.own = &http.Transport{
			Proxy:               nil, // a receiver under test is reached directly
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConnsPerHost: opts.Concurrency,
			IdleConnTimeout:     30 * time.Second,
		}
		rt = d.own
	}
	d.client = &http.Client{
		Transport: rt,
		// A 3xx is a failed attempt, as providers count it: never followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return d
}

// SetEndpoints replaces the endpoints. An endpoint kept with the same URL
// stays disabled if a 410 disabled it; deliveries pending for an endpoint
// that is gone fail at their next attempt.
func (d *Dispatcher) SetEndpoints(eps []Endpoint) error {
	var errs []error
	seen := map[string]bool{}
	for i := range eps {
		if err := eps[i].Check(); err != nil {
			errs = append(errs, fmt.Errorf("endpoint %q: %w", eps[i].Name, err))
		}
		if seen[eps[i].Name] {
			errs = append(errs, fmt.Errorf("endpoint %q: defined twice", eps[i].Name))
		}
		seen[eps[i].Name] = true
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	next := make(map[string]*endpointState, len(eps))
	d.names = d.names[:0]
	for _, e := range eps {
		st := &endpointState{Endpoint: e}
		st.Retry = e.Retry.withDefaults()
		if old, ok := d.endpoints[e.Name]; ok && old.URL == e.URL {
			st.disabled = old.disabled
		}
		next[e.Name] = st
		d.names = append(d.names, e.Name)
	}
	d.endpoints = next
	d.signal() // a shared outbox may hold deliveries for endpoints new here
	return nil
}

// Endpoints returns the names of the endpoints, in configuration order.
func (d *Dispatcher) Endpoints() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.names...)
}

// Send queues ev for the endpoints named in to (every endpoint when to is
// empty), after a wait (scaled by the time scale), with the fault f (nil
// for none). An event with no ID gets one, with no Created time now. It
// returns ErrFull, wrapped, for each endpoint the outbox had no room for,
// an error for a name that is not an endpoint, and the outbox's error if
// it failed (Redis away); the other endpoints get the event.
func (d *Dispatcher) Send(ev *Event, to []string, after time.Duration, f *Fault) error {
	_, err := d.send(ev, to, len(to) == 0, nil, after, f)
	return err
}

// batch is the copies of one event for one endpoint.
type batch struct {
	ps      []Queued
	reorder bool
}

// recipient is one endpoint an event goes to: configured, or a target
// (with its source) found at send time.
type recipient struct {
	ep     *endpointState
	target *Target
}

// send is SendTo, and returns how many deliveries it queued; with every,
// to is every configured endpoint.
func (d *Dispatcher) send(ev *Event, to []string, every bool, targets []Target, after time.Duration, f *Fault) (int, error) {
	if ev.ID == "" {
		ev.ID = NewID()
	}
	if ev.Created.IsZero() {
		ev.Created = d.opts.Now()
	}
	if len(ev.Object) == 0 {
		ev.Object = json.RawMessage("{}")
	}
	for _, raw := range []*json.RawMessage{&ev.Object, &ev.Previous} {
		if len(*raw) == 0 {
			continue
		}
		var b bytes.Buffer
		if err := json.Compact(&b, *raw); err != nil {
			return 0, fmt.Errorf("event %s: data is not JSON: %w", ev.Type, err)
		}
		*raw = b.Bytes()
	}
	var errs []error
	var batches []batch
	d.mu.Lock()
	if every {
		to = d.names
	}
	now := d.opts.Now()
	d.remember(ev, targets, to, every)
	object := ev.ObjectID()
	var rs []recipient
	for _, name := range to {
		ep, ok := d.endpoints[name]
		if !ok {
			errs = append(errs, fmt.Errorf("event %s: no webhook endpoint %q", ev.Type, name))
			continue
		}
		rs = append(rs, recipient{ep: ep})
	}
	for i := range targets {
		t := &targets[i]
		src, ok := d.sources[t.Source]
		if !ok {
			errs = append(errs, fmt.Errorf("event %s: webhook endpoint %q: no endpoint source %q", ev.Type, t.Name, t.Source))
			continue
		}
		if err := t.Check(src); err != nil {
			errs = append(errs, fmt.Errorf("event %s: webhook endpoint %q: %w", ev.Type, t.Name, err))
			continue
		}
		tc := *t // the deliveries' own: the caller's slice may change
		rs = append(rs, recipient{ep: &endpointState{Endpoint: t.endpoint(src), disabled: d.isGone(t)}, target: &tc})
	}
	for _, r := range rs {
		ep, name := r.ep, r.ep.Name
		dr := f.draw(d.rng)
		copies := 1
		if dr.duplicate {
			copies = 2
		}
		if ep.disabled {
			d.record(Attempt{Endpoint: name, EventID: ev.ID, Type: ev.Type, Session: ev.Session, At: now, Outcome: Disabled, Error: "endpoint disabled by a 410 answer"})
			continue
		}
		body := ev.payload(apiVersion(ep), len(to)+len(targets))
		due := now.Add(d.scaled(ep, after+dr.delay))
		b := batch{reorder: dr.reorder}
		for c := range copies {
			p := Queued{
				ID: "whd_" + randomToken(20), EventID: ev.ID, Type: ev.Type, Object: object, Session: ev.Session, Endpoint: name, Body: body,
				Due: due, Created: now, DropFirst: dr.dropFirst, Negative: dr.negative, Faults: dr.describe(c == 1),
				Target: r.target,
			}
			if c == 1 {
				p.Negative, p.DropFirst = "", false // the copy is plain
			}
			b.ps = append(b.ps, p)
		}
		batches = append(batches, b)
	}
	d.mu.Unlock()
	queued := 0
	for _, b := range batches {
		ctx, cancel := boxContext()
		err := d.box.Add(ctx, b.ps, b.reorder)
		cancel()
		if err != nil {
			p := &b.ps[0]
			outcome := Overflow
			if !errors.Is(err, ErrFull) {
				outcome, err = Failed, fmt.Errorf("outbox: %w", err)
			}
			d.mu.Lock()
			d.record(Attempt{Endpoint: p.Endpoint, EventID: ev.ID, Type: ev.Type, Session: ev.Session, At: now, Outcome: outcome, Error: err.Error()})
			d.mu.Unlock()
			errs = append(errs, err)
			continue
		}
		queued += len(b.ps)
	}
	d.signal()
	return queued, errors.Join(errs...)
}

// boxTimeout bounds one outbox operation that no request's context bounds
// (the Redis client's own timeouts are shorter).
const boxTimeout = 5 * time.Second

func boxContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), boxTimeout)
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + ", " + b
}

func apiVersion(ep *endpointState) string {
	if ep.APIVersion != "" {
		return ep.APIVersion
	}
	return DefaultAPIVersion
}

// scaled is the wait w times the endpoint's time scale, at most the
// largest Duration: a timeScale: of 1e10 or more made a long wait wrap
// to a negative one, due at once.
func (d *Dispatcher) scaled(ep *endpointState, w time.Duration) time.Duration {
	s := ep.TimeScale
	if s <= 0 {
		s = d.opts.TimeScale
	}
	return duration(float64(w) * s)
}

// duration converts ns nanoseconds to a Duration from 0 to the largest:
// Go's conversion of a float64 out of int64's range is implementation
// specific (math.MinInt64 on amd64). NaN (0 times an infinite scale) is 0.
func duration(ns float64) time.Duration {
	switch {
	case !(ns > 0):
		return 0
	case ns >= math.MaxInt64: // float64(math.MaxInt64) is 2⁶³, past the range
		return math.MaxInt64
	}
	return time.Duration(ns)
}

func (d *Dispatcher) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// remember keeps ev, and the targets it is sent to, for Redeliver and
// the admin API.
func (d *Dispatcher) remember(ev *Event, targets []Target, to []string, every bool) {
	if _, ok := d.byID[ev.ID]; ok {
		return
	}
	if old, dropped := d.events.push(ev); dropped {
		delete(d.byID, old.ID)
		delete(d.targets, old.ID)
		delete(d.sentTo, old.ID)
	}
	d.byID[ev.ID] = ev
	if len(targets) > 0 {
		d.targets[ev.ID] = slices.Clone(targets)
	}
	if !every {
		d.sentTo[ev.ID] = slices.Clone(to)
	}
}

// Run delivers until ctx ends, with at most Options.Concurrency attempts
// at once, and returns the number of deliveries left pending (in a
// shared outbox, every replica's). An attempt in flight when ctx ends is
// cut and left pending, due at once.
func (d *Dispatcher) Run(ctx context.Context) (pending int) {
	var wg sync.WaitGroup
	d.schedule(ctx, &wg)
	wg.Wait()
	if d.own != nil {
		d.own.CloseIdleConnections()
	}
	return d.Pending()
}

// Pending returns the number of deliveries pending or in flight, or -1
// when the outbox does not answer.
func (d *Dispatcher) Pending() int {
	ctx, cancel := boxContext()
	defer cancel()
	n, err := d.box.Len(ctx)
	if err != nil {
		return -1
	}
	return n
}

// leaseSlack is how much longer than an attempt's timeout a claim lasts:
// time for the outcome to reach the outbox.
const leaseSlack = 5 * time.Second

// claimRetry is how long the scheduler waits after the outbox failed.
const claimRetry = time.Second

// lease is how long a claim lasts: the longest attempt, and its outcome.
func (d *Dispatcher) lease() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	var l time.Duration
	for _, ep := range d.endpoints {
		l = max(l, ep.Retry.Timeout)
	}
	for _, src := range d.sources {
		l = max(l, src.Retry.Timeout)
	}
	if l == 0 {
		l = DefaultRetry.Timeout
	}
	return l + leaseSlack
}

// perEndpoint is the claims' bound by endpoint (Options.Concurrency),
// with the attempts in flight now.
func (d *Dispatcher) perEndpoint() PerEndpoint {
	d.mu.Lock()
	n := d.opts.Concurrency
	if len(d.endpoints) > 1 || len(d.sources) > 0 {
		// Half (rounded up) let two hanging receivers take every slot,
		// and the others' deliveries wait for their timeouts.
		n = max((n-1)/2, 1)
	}
	d.mu.Unlock()
	d.flightMu.Lock()
	defer d.flightMu.Unlock()
	per := PerEndpoint{Max: n, Busy: maps.Clone(d.flight)}
	if len(d.slow) > 0 {
		per.Slow = maps.Clone(d.slow)
	}
	return per
}

// answered notes whether endpoint's receiver answered an attempt, or
// let it time out (PerEndpoint.Slow).
func (d *Dispatcher) answered(endpoint string, ok bool) {
	d.flightMu.Lock()
	defer d.flightMu.Unlock()
	if ok {
		delete(d.slow, endpoint)
	} else {
		d.slow[endpoint] = true
	}
}

// flying counts the attempts of claimed in flight.
func (d *Dispatcher) flying(claimed []Queued) {
	d.flightMu.Lock()
	defer d.flightMu.Unlock()
	for _, p := range claimed {
		d.flight[p.Endpoint]++
	}
}

// landed ends the count of p's attempt, and wakes the scheduler when its
// endpoint was at its bound: a claim may have kept its deliveries back.
func (d *Dispatcher) landed(p *Queued, per int) {
	d.flightMu.Lock()
	n := d.flight[p.Endpoint]
	if n <= 1 {
		delete(d.flight, p.Endpoint)
	} else {
		d.flight[p.Endpoint] = n - 1
	}
	d.flightMu.Unlock()
	if n >= per {
		d.signal()
	}
}

// schedule claims due deliveries while a worker is free and starts an
// attempt for each, until ctx ends.
func (d *Dispatcher) schedule(ctx context.Context, wg *sync.WaitGroup) {
	free := make(chan struct{}, d.opts.Concurrency)
	for range d.opts.Concurrency {
		free <- struct{}{}
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-free:
		case <-ctx.Done():
			return
		}
		n := 1
	more:
		for n < d.opts.Concurrency {
			select {
			case <-free:
				n++
			default:
				break more
			}
		}
		cctx, cancel := context.WithTimeout(ctx, boxTimeout)
		per := d.perEndpoint()
		claimed, next, err := d.box.Claim(cctx, d.opts.Now(), n, d.lease(), per)
		cancel()
		d.flying(claimed)
		for range n - len(claimed) {
			free <- struct{}{}
		}
		claimedAt := time.Now()
		for _, run := range inOrder(claimed) {
			wg.Go(func() {
				var prev chan struct{} // closed when the previous step's attempts have ended
				for _, step := range run {
					if prev != nil {
						waitTurn(ctx, prev, claimedAt.Add(orderWait))
					}
					done := make(chan struct{})
					var left atomic.Int32
					left.Store(int32(len(step)))
					for _, p := range step {
						wg.Go(func() {
							defer func() {
								d.landed(&p, per.Max)
								free <- struct{}{}
								if left.Add(-1) == 0 {
									close(done)
								}
							}()
							d.attempt(ctx, p)
						})
					}
					prev = done
				}
			})
		}
		if err == nil && len(claimed) == n {
			continue // perhaps more are due
		}
		wait := time.Duration(-1)
		switch {
		case err != nil:
			wait = claimRetry
		case !next.IsZero():
			wait = max(next.Sub(d.opts.Now()), 0)
		}
		if wait >= 0 {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// orderWait bounds how long after its claim a delivery waits for the
// earlier steps of its run (inOrder): its lease (the longest timeout and
// leaseSlack) must still cover its own attempt, or another claim would
// make it a second time. A receiver slower than that to answer the
// reordered event gets the overtaken one while it is still answering.
const orderWait = leaseSlack / 2

// waitTurn waits until prev is closed, deadline passes or ctx ends.
func waitTurn(ctx context.Context, prev <-chan struct{}, deadline time.Time) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-prev:
	case <-t.C:
	case <-ctx.Done():
	}
}

// inOrder splits claimed deliveries into runs that may go at once. The
// deliveries of one object at one endpoint are one run, in steps of one
// event each, in the order claimed: a step's attempts (an event and its
// duplicate) go together, and the next step once they have ended (or,
// for a receiver that is slow to answer, orderWait after the claim).
// Without it, an event that a reorder fault moved before its object's
// earlier events was claimed with them and sent in parallel, so the
// receiver saw them in either order. Other deliveries are runs of one.
func inOrder(claimed []Queued) [][][]Queued {
	var runs [][][]Queued
	at := map[string]int{} // endpoint and object → its run's index
	for _, p := range claimed {
		if p.Object == "" {
			runs = append(runs, [][]Queued{{p}})
			continue
		}
		k := p.Endpoint + "\x00" + p.Object
		i, ok := at[k]
		if !ok {
			at[k] = len(runs)
			runs = append(runs, [][]Queued{{p}})
			continue
		}
		run := runs[i]
		if last := run[len(run)-1]; last[0].EventID == p.EventID {
			run[len(run)-1] = append(last, p)
		} else {
			run = append(run, []Queued{p})
		}
		runs[i] = run
	}
	return runs
}

// attempt makes one attempt of the claimed p and records what follows.
func (d *Dispatcher) attempt(ctx context.Context, p Queued) {
	d.mu.Lock()
	start := d.opts.Now()
	ep, ok := d.endpoints[p.Endpoint]
	var epc endpointState
	if t := p.Target; t != nil {
		// Found at send time: the delivery carries the endpoint, its
		// source the settings.
		var src *Source
		src, ok = d.sources[t.Source]
		if ok {
			epc = endpointState{Endpoint: t.endpoint(src), disabled: d.isGone(t)}
		}
	} else if ok {
		epc = *ep
	}
	n := p.Attempts + 1
	a := Attempt{Delivery: p.ID, Endpoint: p.Endpoint, EventID: p.EventID, Type: p.Type, Session: p.Session, Attempt: n, At: start}
	var neg Negative
	drop := false
	if n == 1 {
		a.LagMS = ms(start.Sub(p.Due))
		a.Fault = p.Faults
		neg, drop = p.Negative, p.DropFirst
	}
	d.mu.Unlock()
	switch {
	case !ok && p.Target != nil:
		a.Error = "no webhook endpoint source " + strconv.Quote(p.Target.Source) + " (removed by a reload)"
		d.finish(&p, &a, Failed)
		return
	case !ok:
		a.Error = "no webhook endpoint " + strconv.Quote(p.Endpoint) + " (removed by a reload)"
		d.finish(&p, &a, Failed)
		return
	case epc.disabled:
		a.Error = "endpoint disabled by a 410 answer"
		d.finish(&p, &a, Disabled)
		return
	}
	var status int
	var retryAfter time.Duration
	var err error
	if drop {
		err = errDropped
	} else {
		status, retryAfter, err = d.post(ctx, &epc, &p, neg)
		if status != 0 || errors.Is(err, errNoAnswer) {
			d.answered(p.Endpoint, status != 0)
		}
	}
	a.DurationMS = ms(d.opts.Now().Sub(start))
	if err != nil && ctx.Err() != nil {
		// Shutdown cut the attempt: it stays pending, due at once, to be
		// made again (by another replica, with a shared outbox).
		bctx, cancel := boxContext()
		_ = d.box.Retry(bctx, &p, d.opts.Now())
		cancel()
		return
	}
	a.Status = status
	if err != nil {
		a.Error = err.Error()
	}
	switch {
	case err == nil && status >= 200 && status < 300:
		if neg != "" {
			a.Error = "the receiver accepted a delivery with " + string(neg)
		}
		d.finish(&p, &a, Delivered)
	case status == http.StatusGone:
		d.disable(&p, &a)
	case n-1 < len(epc.Retry.Schedule):
		wait := epc.Retry.Schedule[n-1]
		if retryAfter >= 0 && (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) {
			wait = retryAfter
		}
		d.retry(&p, &a, d.scaled(&epc, wait))
	default:
		d.finish(&p, &a, Failed)
	}
}

// maxRetryAfter bounds the wait a receiver's Retry-After can ask for.
const maxRetryAfter = 24 * time.Hour

// UserAgent is the User-Agent of every delivery attempt.
const UserAgent = "scenariomock-webhooks/1"

// IsDelivery reports whether a request with header h is a delivery of a
// scenariomock's webhooks (by its User-Agent), so that a server whose own
// endpoint URL leads back to it does not answer its events with more.
func IsDelivery(h http.Header) bool {
	return strings.HasPrefix(h.Get("User-Agent"), "scenariomock-webhooks/")
}

// post sends one attempt and returns the status and the Retry-After wait:
// -1 when there is none (or it is not a number of seconds or a date), so
// that Retry-After: 0 (or a date past) asks for a retry at once.
func (d *Dispatcher) post(ctx context.Context, ep *endpointState, p *Queued, neg Negative) (int, time.Duration, error) {
	actx, cancel := context.WithTimeout(ctx, ep.Retry.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, ep.URL, bytes.NewReader(p.Body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", UserAgent)
	sign(req.Header, &ep.Endpoint, p.EventID, d.opts.Now(), p.Body, neg)
	resp, err := d.client.Do(req)
	if err != nil {
		if actx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return 0, 0, fmt.Errorf("%w within %s (retry.timeout)", errNoAnswer, ep.Retry.Timeout)
		}
		return 0, 0, err
	}
	// Drain a little so the connection can be reused; a receiver's answer
	// is not kept.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	ra := time.Duration(-1)
	if v := resp.Header.Get("Retry-After"); v != "" {
		if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
			ra = time.Duration(min(secs, int(maxRetryAfter/time.Second))) * time.Second // no overflow
		} else if t, err := http.ParseTime(v); err == nil {
			ra = min(max(t.Sub(d.opts.Now()), 0), maxRetryAfter)
		}
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return resp.StatusCode, ra, fmt.Errorf("redirect to %q not followed", resp.Header.Get("Location"))
	}
	return resp.StatusCode, ra, nil
}

// retry records a failed attempt and schedules the next. An outcome the
// outbox refuses (the claim was lost to a reset, or to another replica
// after the lease) is not logged: whoever holds the delivery now logs its
// own attempts.
func (d *Dispatcher) retry(p *Queued, a *Attempt, wait time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p.Attempts = a.Attempt
	p.LastStatus, p.LastError = a.Status, a.Error
	due := d.opts.Now().Add(wait)
	ctx, cancel := boxContext()
	err := d.box.Retry(ctx, p, due)
	cancel()
	if errors.Is(err, ErrLeaseLost) {
		return
	}
	if err != nil {
		a.Error = join(a.Error, "outbox: "+err.Error()+" (due again when its lease ends)")
	}
	a.Next = &due
	a.Outcome = Retrying
	d.record(*a)
	d.signal()
}

// disable turns an endpoint off after a 410, and ends its deliveries.
func (d *Dispatcher) disable(p *Queued, a *Attempt) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t := p.Target; t != nil {
		d.gone[targetKey(t)] = t.URL
	} else if ep, ok := d.endpoints[p.Endpoint]; ok {
		ep.disabled = true
	}
	if !d.finishLocked(p, a, Disabled) {
		return
	}
	ctx, cancel := boxContext()
	dropped, _ := d.box.Drop(ctx, p.Endpoint)
	cancel()
	sortPending(dropped)
	// A delivery dropped is no attempt: its record's Attempt is 0, and
	// its summary counts the attempts it made (logFinished).
	for i := range dropped {
		q := &dropped[i]
		d.logFinished(q, &Attempt{Delivery: q.ID, Endpoint: q.Endpoint, EventID: q.EventID, Type: q.Type, Session: q.Session, At: a.At, Outcome: Disabled, Error: "endpoint disabled by a 410 answer"}, Disabled)
	}
}

func (d *Dispatcher) finish(p *Queued, a *Attempt, outcome string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.finishLocked(p, a, outcome)
}

// finishLocked removes p from the outbox and logs it, and reports whether
// p was still claimed (see retry).
func (d *Dispatcher) finishLocked(p *Queued, a *Attempt, outcome string) bool {
	p.Attempts = a.Attempt
	ctx, cancel := boxContext()
	err := d.box.Finish(ctx, p)
	cancel()
	if errors.Is(err, ErrLeaseLost) {
		return false
	}
	if err != nil {
		a.Error = join(a.Error, "outbox: "+err.Error()+" (due again when its lease ends)")
	}
	d.logFinished(p, a, outcome)
	return true
}

func (d *Dispatcher) logFinished(p *Queued, a *Attempt, outcome string) {
	a.Outcome = outcome
	p.LastStatus, p.LastError = a.Status, a.Error
	sum := p.summary(outcome)
	sum.Attempts = max(a.Attempt, p.Attempts) // a dropped one's record is Attempt 0
	sum.Finished = a.At
	d.recordFinished(*a, &sum)
	d.finished.push(sum)
}

func (d *Dispatcher) record(a Attempt) { d.recordFinished(a, nil) }

// recordFinished logs a, and the delivery sum that a finished (nil when
// none), here and in the shared history.
func (d *Dispatcher) recordFinished(a Attempt, sum *Delivery) {
	d.attemptN++
	a.Seq = d.attemptN
	if d.opts.Shared != nil {
		ctx, cancel := boxContext()
		if n, err := d.opts.Shared.Record(ctx, &a, sum); err == nil {
			a.Seq = n
		}
		cancel()
	}
	d.attempts.push(a)
	if d.changed != nil {
		close(d.changed)
		d.changed = nil
	}
}

// Changed returns a channel closed when this dispatcher next logs an
// attempt (another replica's, in a shared History, does not close it:
// a follower polls too). It is safe for concurrent use.
func (d *Dispatcher) Changed() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.changed == nil {
		d.changed = make(chan struct{})
	}
	return d.changed
}

// Redeliver sends the event with id again to endpoint (when empty, to
// the endpoints and targets it was sent to: a route's endpoints: alone,
// not every endpoint), as a fresh delivery
// without faults, and returns how many deliveries it queued. An event no
// longer kept is an error. A target gets it as it was when the event was
// sent: its object is not read again.
func (d *Dispatcher) Redeliver(id, endpoint string) (int, error) {
	d.mu.Lock()
	ev, ok := d.byID[id]
	targets := d.targets[id]
	to, some := d.sentTo[id]
	d.mu.Unlock()
	if !ok {
		return 0, fmt.Errorf("no event %q (the dispatcher keeps the last %d)", id, d.opts.History)
	}
	if endpoint == "" && some {
		n, err := d.send(ev, to, false, targets, 0, nil)
		return n, errors.Join(err, d.disabledError(targets, to...))
	}
	if endpoint == "" {
		n, err := d.send(ev, nil, true, targets, 0, nil)
		return n, errors.Join(err, d.disabledError(targets, d.Endpoints()...))
	}
	for _, t := range targets {
		if t.Name == endpoint {
			if err := d.disabledError([]Target{t}); err != nil {
				return 0, err
			}
			return d.send(ev, nil, false, []Target{t}, 0, nil)
		}
	}
	if err := d.disabledError(nil, endpoint); err != nil {
		return 0, err
	}
	return d.send(ev, []string{endpoint}, false, nil, 0, nil)
}

// ErrDisabled is the error of a redelivery to an endpoint that a 410
// answer disabled.
var ErrDisabled = errors.New("disabled by a 410 answer (POST /__admin/reset enables it again)")

// disabledError names the targets and the endpoints of names that a 410
// disabled (nil when none is), each wrapping ErrDisabled.
func (d *Dispatcher) disabledError(targets []Target, names ...string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, name := range names {
		if ep, ok := d.endpoints[name]; ok && ep.disabled {
			errs = append(errs, fmt.Errorf("webhook endpoint %q: %w", name, ErrDisabled))
		}
	}
	for i := range targets {
		if d.isGone(&targets[i]) {
			errs = append(errs, fmt.Errorf("webhook endpoint %q: %w", targets[i].Name, ErrDisabled))
		}
	}
	return errors.Join(errs...)
}

// Event returns the event with id, if it is still kept.
func (d *Dispatcher) Event(id string) (*Event, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ev, ok := d.byID[id]
	return ev, ok
}

// Reset drops every pending delivery (in a shared outbox, every
// replica's), the attempt log and the events kept, and enables the
// endpoints again. Attempts in flight finish and are forgotten.
func (d *Dispatcher) Reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	ctx, cancel := boxContext()
	_ = d.box.Reset(ctx)
	cancel()
	d.byID = map[string]*Event{}
	d.targets = map[string][]Target{}
	d.sentTo = map[string][]string{}
	d.gone = map[string]string{}
	d.events.clear()
	d.attempts.clear()
	d.finished.clear()
	if d.opts.Shared != nil {
		ctx, cancel := boxContext()
		_ = d.opts.Shared.Reset(ctx)
		cancel()
	}
	for _, ep := range d.endpoints {
		ep.disabled = false
	}
	d.flightMu.Lock()
	clear(d.slow)
	d.flightMu.Unlock()
	d.signal()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
