package webhooks

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
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

// Options configures a Dispatcher.
type Options struct {
	// Queue bounds the deliveries pending or in flight (default 10,000).
	Queue int
	// Concurrency bounds the attempts in flight at once (default 8), and
	// so the goroutines a hanging receiver can hold.
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
	// Now is the clock of signed timestamps and the log; nil is time.Now.
	Now func() time.Time
}

// Dispatcher delivers events to endpoints at least once. It is safe for
// concurrent use; Run delivers, and Send, the queries and Reset may be
// called before, during and after it.
type Dispatcher struct {
	opts   Options
	client *http.Client
	own    *http.Transport // closed when Run returns; nil with Options.Transport
	wake   chan struct{}

	mu        sync.Mutex // guards everything below
	endpoints map[string]*endpointState
	names     []string // endpoint names in configuration order
	queue     deliveryHeap
	live      map[string]*delivery // pending or in flight, by id
	gen       int64                // bumped by Reset: attempts of an older generation are dropped
	rng       *rand.Rand
	seq       uint64
	events    ring[*Event]
	byID      map[string]*Event // the events in events
	attempts  ring[Attempt]
	finished  ring[Delivery]
	attemptN  int64
}

type endpointState struct {
	Endpoint
	disabled bool
}

// delivery is one event on its way to one endpoint.
type delivery struct {
	id       string
	ev       *Event
	object   string // data.object.id, for reorder
	endpoint string
	body     []byte
	due      time.Time
	seq      uint64 // orders deliveries due at the same time
	attempts int
	first    draws  // the faults of the first attempt
	faults   string // what was drawn, for the log
	gen      int64
	created  time.Time
	last     int    // the last attempt's status
	lastErr  string // and error
	index    int    // in the heap; -1 when not queued
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
	d := &Dispatcher{
		opts:      opts,
		wake:      make(chan struct{}, 1),
		endpoints: map[string]*endpointState{},
		live:      map[string]*delivery{},
		byID:      map[string]*Event{},
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
		if e.Retry.Schedule == nil && e.Retry.Timeout == 0 {
			st.Retry = DefaultRetry
		} else if st.Retry.Timeout == 0 {
			st.Retry.Timeout = DefaultRetry.Timeout
		}
		if old, ok := d.endpoints[e.Name]; ok && old.URL == e.URL {
			st.disabled = old.disabled
		}
		next[e.Name] = st
		d.names = append(d.names, e.Name)
	}
	d.endpoints = next
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
// and an error for a name that is not an endpoint; the other endpoints
// get the event.
func (d *Dispatcher) Send(ev *Event, to []string, after time.Duration, f *Fault) error {
	_, err := d.send(ev, to, after, f)
	return err
}

// send is Send, and returns how many deliveries it queued.
func (d *Dispatcher) send(ev *Event, to []string, after time.Duration, f *Fault) (int, error) {
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
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(to) == 0 {
		to = d.names
	}
	var errs []error
	queued := 0
	now := d.opts.Now()
	d.remember(ev)
	object := ev.ObjectID()
	for _, name := range to {
		ep, ok := d.endpoints[name]
		if !ok {
			errs = append(errs, fmt.Errorf("event %s: no webhook endpoint %q", ev.Type, name))
			continue
		}
		dr := f.draw(d.rng)
		copies := 1
		if dr.duplicate {
			copies = 2
		}
		if ep.disabled {
			d.record(Attempt{Endpoint: name, EventID: ev.ID, Type: ev.Type, At: now, Outcome: Disabled, Error: "endpoint disabled by a 410 answer"})
			continue
		}
		if len(d.live)+copies > d.opts.Queue {
			err := fmt.Errorf("%w: %d deliveries pending (--webhook-queue %d)", ErrFull, len(d.live), d.opts.Queue)
			d.record(Attempt{Endpoint: name, EventID: ev.ID, Type: ev.Type, At: now, Outcome: Overflow, Error: err.Error()})
			errs = append(errs, err)
			continue
		}
		body := ev.payload(apiVersion(ep), len(to))
		due := now.Add(d.scaled(ep, after+dr.delay))
		for c := range copies {
			dl := &delivery{
				id: "whd_" + randomToken(20), ev: ev, object: object, endpoint: name, body: body,
				due: due, gen: d.gen, created: now, first: dr, faults: dr.describe(c == 1),
			}
			if c == 1 {
				dl.first.negative, dl.first.dropFirst = "", false // the copy is plain
			}
			d.seq++
			dl.seq = d.seq
			d.live[dl.id] = dl
			heap.Push(&d.queue, dl)
			queued++
		}
		if dr.reorder {
			d.reorder(name, ev, object, due)
		}
	}
	d.signal()
	return queued, errors.Join(errs...)
}

// reorder moves the queued first attempts of the earlier events of
// object at endpoint behind ev's, which is due at due.
func (d *Dispatcher) reorder(endpoint string, ev *Event, object string, due time.Time) {
	if object == "" {
		return
	}
	for _, dl := range d.queue {
		if dl.endpoint != endpoint || dl.attempts > 0 || dl.ev == ev || dl.object != object {
			continue
		}
		if dl.due.Before(due) {
			dl.due = due
		}
		d.seq++
		dl.seq = d.seq
		dl.faults = join(dl.faults, "reordered behind "+ev.ID)
	}
	heap.Init(&d.queue)
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

func (d *Dispatcher) scaled(ep *endpointState, w time.Duration) time.Duration {
	s := ep.TimeScale
	if s <= 0 {
		s = d.opts.TimeScale
	}
	return time.Duration(float64(w) * s)
}

func (d *Dispatcher) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// remember keeps ev for Redeliver and the admin API.
func (d *Dispatcher) remember(ev *Event) {
	if _, ok := d.byID[ev.ID]; ok {
		return
	}
	if old, dropped := d.events.push(ev); dropped {
		delete(d.byID, old.ID)
	}
	d.byID[ev.ID] = ev
}

// Run delivers until ctx ends, with at most Options.Concurrency attempts
// at once, and returns the number of deliveries left pending. An attempt
// in flight when ctx ends is cut and counted as pending.
func (d *Dispatcher) Run(ctx context.Context) (pending int) {
	work := make(chan *delivery)
	var wg sync.WaitGroup
	for range d.opts.Concurrency {
		wg.Go(func() {
			for dl := range work {
				d.attempt(ctx, dl)
			}
		})
	}
	d.schedule(ctx, work)
	close(work)
	wg.Wait()
	if d.own != nil {
		d.own.CloseIdleConnections()
	}
	return d.Pending()
}

// Pending returns the number of deliveries pending or in flight.
func (d *Dispatcher) Pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.live)
}

// schedule hands each delivery to a worker when it is due.
func (d *Dispatcher) schedule(ctx context.Context, work chan<- *delivery) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		var next *delivery
		wait := time.Duration(-1)
		d.mu.Lock()
		if len(d.queue) > 0 {
			if w := d.queue[0].due.Sub(d.opts.Now()); w <= 0 {
				next = heap.Pop(&d.queue).(*delivery)
			} else {
				wait = w
			}
		}
		d.mu.Unlock()
		if next != nil {
			select {
			case work <- next:
				continue
			case <-ctx.Done():
				d.requeue(next)
				return
			}
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

// requeue puts back a delivery taken for an attempt that did not happen.
func (d *Dispatcher) requeue(dl *delivery) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if dl.gen == d.gen {
		heap.Push(&d.queue, dl)
	}
}

// attempt makes one attempt of dl and decides what follows.
func (d *Dispatcher) attempt(ctx context.Context, dl *delivery) {
	d.mu.Lock()
	if dl.gen != d.gen {
		d.mu.Unlock()
		return // Reset dropped it
	}
	start := d.opts.Now()
	ep, ok := d.endpoints[dl.endpoint]
	var epc endpointState
	if ok {
		epc = *ep
	}
	dl.attempts++
	n := dl.attempts
	a := Attempt{Delivery: dl.id, Endpoint: dl.endpoint, EventID: dl.ev.ID, Type: dl.ev.Type, Attempt: n, At: start}
	var neg Negative
	drop := false
	if n == 1 {
		a.LagMS = ms(start.Sub(dl.due))
		a.Fault = dl.faults
		neg, drop = dl.first.negative, dl.first.dropFirst
	}
	d.mu.Unlock()
	switch {
	case !ok:
		a.Error = "no webhook endpoint " + strconv.Quote(dl.endpoint) + " (removed by a reload)"
		d.finish(dl, &a, Failed)
		return
	case epc.disabled:
		a.Error = "endpoint disabled by a 410 answer"
		d.finish(dl, &a, Disabled)
		return
	}
	var status int
	var retryAfter time.Duration
	var err error
	if drop {
		err = errDropped
	} else {
		status, retryAfter, err = d.post(ctx, &epc, dl, neg)
	}
	a.DurationMS = ms(d.opts.Now().Sub(start))
	if err != nil && ctx.Err() != nil {
		// Shutdown cut the attempt: it stays pending, to be made again.
		d.mu.Lock()
		dl.attempts--
		d.mu.Unlock()
		d.requeue(dl)
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
		d.finish(dl, &a, Delivered)
	case status == http.StatusGone:
		d.disable(dl, &a)
	case n-1 < len(epc.Retry.Schedule):
		wait := epc.Retry.Schedule[n-1]
		if retryAfter > 0 && (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) {
			wait = retryAfter
		}
		d.retry(dl, &a, d.scaled(&epc, wait))
	default:
		d.finish(dl, &a, Failed)
	}
}

// maxRetryAfter bounds the wait a receiver's Retry-After can ask for.
const maxRetryAfter = 24 * time.Hour

// post sends one attempt and returns the status and the Retry-After wait.
func (d *Dispatcher) post(ctx context.Context, ep *endpointState, dl *delivery, neg Negative) (int, time.Duration, error) {
	actx, cancel := context.WithTimeout(ctx, ep.Retry.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, ep.URL, bytes.NewReader(dl.body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "scenariomock-webhooks/1")
	sign(req.Header, &ep.Endpoint, dl.ev.ID, d.opts.Now(), dl.body, neg)
	resp, err := d.client.Do(req)
	if err != nil {
		if actx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return 0, 0, fmt.Errorf("no answer within %s (retry.timeout)", ep.Retry.Timeout)
		}
		return 0, 0, err
	}
	// Drain a little so the connection can be reused; a receiver's answer
	// is not kept.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	var ra time.Duration
	if v := resp.Header.Get("Retry-After"); v != "" {
		if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
			ra = time.Duration(secs) * time.Second
		} else if t, err := http.ParseTime(v); err == nil {
			ra = max(t.Sub(d.opts.Now()), 0)
		}
		ra = min(ra, maxRetryAfter)
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return resp.StatusCode, ra, fmt.Errorf("redirect to %q not followed", resp.Header.Get("Location"))
	}
	return resp.StatusCode, ra, nil
}

func (d *Dispatcher) retry(dl *delivery, a *Attempt, wait time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if dl.gen != d.gen {
		return
	}
	dl.last, dl.lastErr = a.Status, a.Error
	dl.due = d.opts.Now().Add(wait)
	next := dl.due
	a.Next = &next
	a.Outcome = Retrying
	d.seq++
	dl.seq = d.seq
	heap.Push(&d.queue, dl)
	d.record(*a)
	d.signal()
}

// disable turns an endpoint off after a 410, and ends its deliveries.
func (d *Dispatcher) disable(dl *delivery, a *Attempt) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if dl.gen != d.gen {
		return
	}
	if ep, ok := d.endpoints[dl.endpoint]; ok {
		ep.disabled = true
	}
	d.finishLocked(dl, a, Disabled)
	var keep deliveryHeap
	for _, q := range d.queue {
		if q.endpoint != dl.endpoint {
			keep = append(keep, q)
			continue
		}
		d.finishLocked(q, &Attempt{Delivery: q.id, Endpoint: q.endpoint, EventID: q.ev.ID, Type: q.ev.Type, Attempt: q.attempts + 1, At: a.At, Outcome: Disabled, Error: "endpoint disabled by a 410 answer"}, Disabled)
	}
	d.queue = keep
	heap.Init(&d.queue)
}

func (d *Dispatcher) finish(dl *delivery, a *Attempt, outcome string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if dl.gen != d.gen {
		return
	}
	d.finishLocked(dl, a, outcome)
}

func (d *Dispatcher) finishLocked(dl *delivery, a *Attempt, outcome string) {
	a.Outcome = outcome
	dl.last, dl.lastErr = a.Status, a.Error
	d.record(*a)
	delete(d.live, dl.id)
	sum := dl.summary(outcome)
	sum.Finished = a.At
	d.finished.push(sum)
}

func (d *Dispatcher) record(a Attempt) {
	d.attemptN++
	a.Seq = d.attemptN
	d.attempts.push(a)
}

// Redeliver sends the event with id again to endpoint (every endpoint when
// empty), as a fresh delivery without faults, and returns how many
// deliveries it queued. An event no longer kept is an error.
func (d *Dispatcher) Redeliver(id, endpoint string) (int, error) {
	d.mu.Lock()
	ev, ok := d.byID[id]
	d.mu.Unlock()
	if !ok {
		return 0, fmt.Errorf("no event %q (the dispatcher keeps the last %d)", id, d.opts.History)
	}
	var to []string
	if endpoint != "" {
		to = []string{endpoint}
	}
	return d.send(ev, to, 0, nil)
}

// Event returns the event with id, if it is still kept.
func (d *Dispatcher) Event(id string) (*Event, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ev, ok := d.byID[id]
	return ev, ok
}

// Reset drops every pending delivery, the attempt log and the events
// kept, and enables the endpoints again. Attempts in flight finish and
// are forgotten.
func (d *Dispatcher) Reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen++
	d.queue = nil
	d.live = map[string]*delivery{}
	d.byID = map[string]*Event{}
	d.events.clear()
	d.attempts.clear()
	d.finished.clear()
	for _, ep := range d.endpoints {
		ep.disabled = false
	}
	d.signal()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// deliveryHeap orders deliveries by due time, then by seq.
type deliveryHeap []*delivery

func (h deliveryHeap) Len() int { return len(h) }
func (h deliveryHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h deliveryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *deliveryHeap) Push(x any) {
	dl := x.(*delivery)
	dl.index = len(*h)
	*h = append(*h, dl)
}
func (h *deliveryHeap) Pop() any {
	old := *h
	dl := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	dl.index = -1
	return dl
}
