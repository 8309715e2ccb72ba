package webhooks

import (
	"slices"
	"strings"
	"time"
)

// Attempt is one entry of the attempt log: an attempt made, or a delivery
// refused before its next (overflow, a disabled endpoint), whose Attempt
// is 0.
type Attempt struct {
	Seq      int64     `json:"seq"`
	Delivery string    `json:"delivery,omitempty"`
	Endpoint string    `json:"endpoint"`
	EventID  string    `json:"eventId"`
	Type     string    `json:"type"`
	Session  string    `json:"session,omitempty"` // of the request that caused the event
	Attempt  int       `json:"attempt"`           // 1-based; 0 for a delivery refused, not attempted
	At       time.Time `json:"at"`
	// DurationMS is how long the attempt took, in milliseconds.
	DurationMS float64 `json:"durationMs"`
	// LagMS is, for a first attempt, how late it started after it was due
	// (the dispatch lag: commit to first attempt, less any after: or delay).
	LagMS  float64 `json:"lagMs,omitempty"`
	Status int     `json:"status,omitempty"`
	Error  string  `json:"error,omitempty"`
	// Fault names the faults drawn for the delivery (on its first attempt).
	Fault   string `json:"fault,omitempty"`
	Outcome string `json:"outcome"`
	// Next is when the next attempt is due, after a failed one.
	Next *time.Time `json:"next,omitempty"`
}

// Delivery summarises one event's delivery to one endpoint.
type Delivery struct {
	ID         string    `json:"id"`
	Endpoint   string    `json:"endpoint"`
	EventID    string    `json:"eventId"`
	Type       string    `json:"type"`
	Session    string    `json:"session,omitempty"` // of the request that caused the event
	State      string    `json:"state"`             // Pending, Delivered, Failed or Disabled
	Attempts   int       `json:"attempts"`
	LastStatus int       `json:"lastStatus,omitempty"`
	LastError  string    `json:"lastError,omitempty"`
	Fault      string    `json:"fault,omitempty"`
	Created    time.Time `json:"created"`
	Finished   time.Time `json:"finished,omitzero"`
}

// describe names what a draw holds, for the log; dup marks the second
// copy of a duplicated delivery.
func (dr draws) describe(dup bool) string {
	var parts []string
	if dr.duplicate {
		if dup {
			parts = append(parts, "duplicate (second copy)")
		} else {
			parts = append(parts, "duplicate (first copy)")
		}
	}
	if dup {
		return strings.Join(parts, ", ")
	}
	if dr.reorder {
		parts = append(parts, "reorder")
	}
	if dr.dropFirst {
		parts = append(parts, "drop-first")
	}
	if dr.delay > 0 {
		parts = append(parts, "delay "+dr.delay.String())
	}
	if dr.negative != "" {
		parts = append(parts, string(dr.negative))
	}
	return strings.Join(parts, ", ")
}

// Filter selects attempts or deliveries; an empty field matches all.
type Filter struct {
	Endpoint string
	Type     string
	EventID  string
	// Outcome matches an attempt's outcome or a delivery's state;
	// "undelivered" matches every one but Delivered (Deliveries leaves
	// out more: see there).
	Outcome string
	// Session matches the session of the request that caused the event.
	Session string
	// Limit keeps the last Limit matches; 0 keeps all.
	Limit int
}

// Match reports whether f selects a (Limit aside).
func (f *Filter) Match(a *Attempt) bool {
	return f.match(a.Endpoint, a.Type, a.EventID, a.Session, a.Outcome)
}

func (f *Filter) match(endpoint, typ, id, session, outcome string) bool {
	switch {
	case f.Session != "" && f.Session != session,
		f.Endpoint != "" && f.Endpoint != endpoint,
		f.Type != "" && f.Type != typ,
		f.EventID != "" && f.EventID != id:
		return false
	case f.Outcome == "undelivered":
		return outcome != Delivered
	}
	return f.Outcome == "" || f.Outcome == outcome
}

func limit[T any](out []T, n int) []T {
	if n > 0 && len(out) > n {
		return out[len(out)-n:]
	}
	return out
}

// Attempts returns the attempts that f selects, oldest first.
func (d *Dispatcher) Attempts(f Filter) []Attempt {
	var out []Attempt
	if shared, ok := d.sharedAttempts(); ok {
		for _, a := range shared {
			if f.match(a.Endpoint, a.Type, a.EventID, a.Session, a.Outcome) {
				out = append(out, a)
			}
		}
		return limit(out, f.Limit)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.attempts.each(func(a *Attempt) {
		if f.match(a.Endpoint, a.Type, a.EventID, a.Session, a.Outcome) {
			out = append(out, *a)
		}
	})
	return limit(out, f.Limit)
}

// Deliveries returns the deliveries that f selects: the finished ones
// kept, oldest first, then those pending. "undelivered" leaves out a
// delivery that failed (or a 410 ended) when another of its event (a
// redelivery, a duplicate) was accepted at the same endpoint: the
// receiver has the event. A pending one stays: it is still to come.
func (d *Dispatcher) Deliveries(f Filter) []Delivery {
	// Held from the finished to the pending, as this replica finishes a
	// delivery under it: none is in neither list. (Another replica's may
	// be, for a moment: the history is read first, so it is missed rather
	// than counted twice.)
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Delivery
	got := map[[2]string]bool{} // event id and endpoint delivered, for undelivered
	keep := func(s *Delivery) {
		if f.Outcome == "undelivered" && s.State == Delivered {
			got[[2]string{s.EventID, s.Endpoint}] = true
		}
		if f.match(s.Endpoint, s.Type, s.EventID, s.Session, s.State) {
			out = append(out, *s)
		}
	}
	if shared, ok := d.sharedFinished(); ok {
		for i := range shared {
			keep(&shared[i])
		}
	} else {
		d.finished.each(keep)
	}
	ctx, cancel := boxContext()
	queued, _ := d.box.List(ctx) // an outbox that does not answer lists none pending
	cancel()
	var pending []Delivery
	for i := range queued {
		q := &queued[i]
		if f.match(q.Endpoint, q.Type, q.EventID, q.Session, Pending) {
			pending = append(pending, q.summary(Pending))
		}
	}
	if len(got) > 0 {
		out = slices.DeleteFunc(out, func(s Delivery) bool { return got[[2]string{s.EventID, s.Endpoint}] })
	}
	sortByCreated(pending)
	return limit(append(out, pending...), f.Limit)
}

// sharedAttempts reads the shared history's attempts; false when there is
// none or it failed, and the dispatcher's own log answers.
func (d *Dispatcher) sharedAttempts() ([]Attempt, bool) {
	if d.opts.Shared == nil {
		return nil, false
	}
	ctx, cancel := boxContext()
	defer cancel()
	as, err := d.opts.Shared.Attempts(ctx)
	return as, err == nil
}

func (d *Dispatcher) sharedFinished() ([]Delivery, bool) {
	if d.opts.Shared == nil {
		return nil, false
	}
	ctx, cancel := boxContext()
	defer cancel()
	ds, err := d.opts.Shared.Finished(ctx)
	return ds, err == nil
}

// sortPending orders deliveries by creation, as they were queued.
func sortPending(qs []Queued) {
	slices.SortStableFunc(qs, func(a, b Queued) int { return a.Created.Compare(b.Created) })
}

func sortByCreated(ds []Delivery) {
	for i := 1; i < len(ds); i++ { // insertion sort: pending lists are small and mostly ordered
		for j := i; j > 0 && ds[j].Created.Before(ds[j-1].Created); j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
}

// Events returns the events kept, oldest first.
func (d *Dispatcher) Events() []*Event {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*Event
	d.events.each(func(e **Event) { out = append(out, *e) })
	return out
}

// ring is a bounded FIFO that drops its oldest element when full. It
// grows as it fills, so that a server that sends no webhooks holds none.
type ring[T any] struct {
	buf   []T
	start int // of the oldest element, once buf is full
	size  int
}

func newRing[T any](size int) ring[T] { return ring[T]{size: size} }

// push adds v and returns the element it pushed out, if any.
func (r *ring[T]) push(v T) (old T, dropped bool) {
	if len(r.buf) < r.size {
		r.buf = append(r.buf, v)
		return old, false
	}
	old = r.buf[r.start]
	r.buf[r.start] = v
	r.start = (r.start + 1) % len(r.buf)
	return old, true
}

func (r *ring[T]) each(f func(*T)) {
	for i := range r.buf {
		f(&r.buf[(r.start+i)%len(r.buf)])
	}
}

func (r *ring[T]) clear() {
	r.buf, r.start = nil, 0
}
