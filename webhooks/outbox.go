package webhooks

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Outbox holds the deliveries pending or in flight, ordered by when each
// is due. The dispatcher adds deliveries, claims the due ones with a
// lease, and records each attempt's outcome (Retry or Finish). A claimed
// delivery whose lease ends before its outcome is recorded (its replica
// crashed) is due again, so delivery is at least once; a claim is
// exclusive while its lease lasts, so replicas sharing one outbox deliver
// each attempt once. NewMemoryOutbox is this process's; state/redis has
// the one replicas share. Implementations are safe for concurrent use.
type Outbox interface {
	// Add stores ps (the copies of one event for one endpoint, one Due),
	// all or none: when fewer than len(ps) places are free it returns
	// ErrFull, wrapped with the count. With reorder, the earlier events
	// of ps' object at its endpoint that wait for their first attempt
	// and are due no later are moved behind ps, and their Faults say so
	// (OvertakenBy); those due later are left as they are.
	Add(ctx context.Context, ps []Queued, reorder bool) error
	// Claim leases up to max deliveries due at now until now+lease,
	// earliest due first, within per's bound for each endpoint, and
	// returns them (each with its Token) and when the next delivery is
	// due or a lease ends (zero when the outbox is empty). A due
	// delivery that per's bound kept back is left where it was, and
	// does not count as next: it is due once its endpoint's attempts end.
	// Within per's bounds, the endpoints with no attempt in flight
	// (Busy) go first, so that a freed slot goes to an endpoint that
	// waits for one, not to the older backlog of one whose receiver
	// hangs. A claim costs what it takes, not what per's bound keeps
	// back (each endpoint has its own due queue; outboxtest.BenchClaim).
	Claim(ctx context.Context, now time.Time, max int, lease time.Duration, per PerEndpoint) ([]Queued, time.Time, error)
	// Retry ends p's claim: p is due again at due, with p's Attempts,
	// LastStatus and LastError. ErrLeaseLost when p's lease ended and
	// another claim took it, or Reset dropped it.
	Retry(ctx context.Context, p *Queued, due time.Time) error
	// Finish removes the claimed p; ErrLeaseLost as for Retry.
	Finish(ctx context.Context, p *Queued) error
	// Drop removes the deliveries of endpoint that are not claimed, and
	// returns them (an endpoint answered 410).
	Drop(ctx context.Context, endpoint string) ([]Queued, error)
	// List returns every delivery pending or in flight, in no order.
	List(ctx context.Context) ([]Queued, error)
	// Len returns how many deliveries are pending or in flight.
	Len(ctx context.Context) (int, error)
	// Reset removes every delivery; their claims are lost.
	Reset(ctx context.Context) error
}

// PerEndpoint bounds the deliveries one claim takes for each endpoint:
// at most Max minus Busy[endpoint] (the attempts in flight there), so
// that an endpoint whose receiver hangs cannot hold every attempt slot.
// A zero Max is no bound. Within the bounds, a claim takes from the
// endpoints with none in flight and not Slow first: Slow names those
// whose last attempt got no answer within its timeout, so that a slot
// a hanging receiver's timeout frees goes to another endpoint before
// its own backlog (with 1 or 2 slots, two that hang would hold them
// otherwise). Slow does not change an endpoint's room.
type PerEndpoint struct {
	Max  int
	Busy map[string]int
	Slow map[string]bool
}

// last reports whether a claim takes from endpoint after the others.
func (per PerEndpoint) last(endpoint string) bool {
	return per.Busy[endpoint] > 0 || per.Slow[endpoint]
}

// room returns how many more deliveries a claim may take for endpoint,
// given taken already; -1 is no bound.
func (per PerEndpoint) room(endpoint string, taken int) int {
	if per.Max <= 0 {
		return -1
	}
	return max(per.Max-per.Busy[endpoint]-taken, 0)
}

// OvertakenBy is the note an Outbox adds to the Faults of a delivery that
// the reorder fault of the event id moved behind it. It names what
// happened to this delivery (it was overtaken); "reorder" alone is the
// note of the delivery whose fault was drawn.
func OvertakenBy(id string) string { return "overtaken by " + id + " (its reorder fault)" }

// ErrLeaseLost is returned by Retry and Finish for a delivery its claim
// no longer holds.
var ErrLeaseLost = errors.New("webhook delivery no longer claimed (its lease ended, or a reset dropped it)")

// FullError returns ErrFull wrapped with what the outbox holds, as every
// Outbox words it.
func FullError(pending, queue int) error {
	return fmt.Errorf("%w: %d deliveries pending (--webhook-queue %d)", ErrFull, pending, queue)
}

// Queued is one delivery in an outbox: one event on its way to one
// endpoint. Everything but Attempts, LastStatus, LastError, Faults (a
// reorder adds to it) and Token is fixed when it is added.
type Queued struct {
	ID       string
	EventID  string
	Type     string
	Endpoint string
	// Object is data.object.id, for reorder; "" when none.
	Object string
	// Session is the event's (Event.Session).
	Session string
	Body    []byte
	Created time.Time
	// Due is when the first attempt is due (Add); Claim leaves it as
	// the outbox stored it.
	Due time.Time
	// Attempts counts the attempts whose outcome was recorded.
	Attempts int
	// DropFirst and Negative spoil the first attempt (faults).
	DropFirst  bool
	Negative   Negative
	Faults     string
	LastStatus int
	LastError  string
	// Token is the lease of the claim that returned it.
	Token string
	// Target, for a delivery to an endpoint found when its event was
	// sent (SendTo), is that endpoint, carried by the delivery so that
	// any replica sharing the outbox can make the attempt; Endpoint is
	// then its Name. Nil for a configured endpoint.
	Target *Target
}

func (p *Queued) summary(state string) Delivery {
	return Delivery{
		ID: p.ID, Endpoint: p.Endpoint, EventID: p.EventID, Type: p.Type, Session: p.Session, State: state,
		Attempts: p.Attempts, LastStatus: p.LastStatus, LastError: p.LastError, Fault: p.Faults, Created: p.Created,
	}
}

// memoryOutbox is this process's outbox: a heap by due time (a claimed
// delivery is due when its lease ends) for each endpoint, a heap of the
// endpoints by their earliest delivery, and a map by id. A claim visits
// an endpoint its bound keeps back once, not each of its deliveries, so
// that a backlog held back for a receiver that hangs costs the claims
// for the others nothing.
type memoryOutbox struct {
	queue int

	mu    sync.Mutex // guards the fields below
	eps   epHeap     // the endpoints in byEP
	byEP  map[string]*memQueue
	byID  map[string]*memItem
	seq   uint64 // orders deliveries due at the same time
	token uint64
}

// memQueue is one endpoint's deliveries; it is in eps while it has any.
type memQueue struct {
	endpoint string
	heap     memHeap
	index    int // in eps
}

type memItem struct {
	p     Queued
	due   time.Time
	seq   uint64
	index int
}

// before orders deliveries as a claim takes them: by due time, then as
// they were added.
func (a *memItem) before(b *memItem) bool {
	if !a.due.Equal(b.due) {
		return a.due.Before(b.due)
	}
	return a.seq < b.seq
}

// NewMemoryOutbox returns an outbox in this process's memory that holds
// at most queue deliveries (10,000 when queue is 0 or less). What it holds
// is lost when the process ends.
func NewMemoryOutbox(queue int) Outbox {
	if queue <= 0 {
		queue = 10_000
	}
	return &memoryOutbox{queue: queue, byEP: map[string]*memQueue{}, byID: map[string]*memItem{}}
}

// push adds it to its endpoint's queue, made (and put in eps) if new.
func (m *memoryOutbox) push(it *memItem) {
	q, ok := m.byEP[it.p.Endpoint]
	if !ok {
		q = &memQueue{endpoint: it.p.Endpoint}
		m.byEP[q.endpoint] = q
		heap.Push(&q.heap, it)
		heap.Push(&m.eps, q)
		return
	}
	heap.Push(&q.heap, it)
	m.settle(q)
}

// settle puts q in its place in eps after its heap changed, and drops it
// when it is empty.
func (m *memoryOutbox) settle(q *memQueue) {
	if len(q.heap) == 0 {
		heap.Remove(&m.eps, q.index)
		delete(m.byEP, q.endpoint)
		return
	}
	heap.Fix(&m.eps, q.index)
}

func (m *memoryOutbox) Add(_ context.Context, ps []Queued, reorder bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.byID)+len(ps) > m.queue {
		return FullError(len(m.byID), m.queue)
	}
	for _, p := range ps {
		m.seq++
		it := &memItem{p: p, due: p.Due, seq: m.seq}
		it.p.Token = ""
		m.byID[p.ID] = it
		m.push(it)
	}
	if reorder && len(ps) > 0 && ps[0].Object != "" {
		first := &ps[0]
		q := m.byEP[first.Endpoint]
		for _, it := range q.heap {
			p := &it.p
			if p.Attempts > 0 || p.Token != "" || p.EventID == first.EventID || p.Object != first.Object {
				continue
			}
			if it.due.After(first.Due) {
				continue // already behind: not overtaken
			}
			it.due = first.Due
			m.seq++
			it.seq = m.seq
			p.Faults = join(p.Faults, OvertakenBy(first.EventID))
		}
		heap.Init(&q.heap)
		m.settle(q)
	}
	return nil
}

func (m *memoryOutbox) Claim(_ context.Context, now time.Time, max int, lease time.Duration, per PerEndpoint) ([]Queued, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Queued
	var kept []*memQueue // out of eps: per's bound keeps their deliveries back
	var busy []*memQueue // out of eps while the idle endpoints go first
	taken := map[string]int{}
	end := now.Add(lease)
	idleFirst := per.Max > 0 && (len(per.Busy) > 0 || len(per.Slow) > 0)
	for len(out) < max {
		if len(m.eps) == 0 || m.eps[0].heap[0].due.After(now) {
			if !idleFirst {
				break
			}
			idleFirst = false // then the busy ones, earliest first
			for _, q := range busy {
				heap.Push(&m.eps, q)
			}
			busy = nil
			continue
		}
		q := m.eps[0]
		it := q.heap[0]
		if idleFirst && per.last(q.endpoint) {
			busy = append(busy, heap.Pop(&m.eps).(*memQueue))
			continue
		}
		if per.room(q.endpoint, taken[q.endpoint]) == 0 {
			kept = append(kept, heap.Pop(&m.eps).(*memQueue))
			continue
		}
		taken[q.endpoint]++
		m.token++
		it.p.Token = fmt.Sprintf("m%d", m.token)
		it.due = end // seq unchanged
		heap.Fix(&q.heap, 0)
		heap.Fix(&m.eps, 0)
		out = append(out, it.p)
	}
	for _, q := range busy {
		heap.Push(&m.eps, q) // max was reached among the idle
	}
	var next time.Time
	if len(m.eps) > 0 {
		next = m.eps[0].heap[0].due
	}
	if len(out) > 0 && (next.IsZero() || end.Before(next)) {
		next = end // a lease of this claim, perhaps in a queue kept back
	}
	for _, q := range kept {
		heap.Push(&m.eps, q) // its deliveries keep their due and seq
	}
	return out, next, nil
}

// claimed returns p's item if p's claim holds it.
func (m *memoryOutbox) claimed(p *Queued) (*memItem, error) {
	it, ok := m.byID[p.ID]
	if !ok || it.p.Token == "" || it.p.Token != p.Token {
		return nil, ErrLeaseLost
	}
	return it, nil
}

func (m *memoryOutbox) Retry(_ context.Context, p *Queued, due time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	it, err := m.claimed(p)
	if err != nil {
		return err
	}
	it.p.Attempts, it.p.LastStatus, it.p.LastError, it.p.Token = p.Attempts, p.LastStatus, p.LastError, ""
	it.due = due
	m.seq++
	it.seq = m.seq
	q := m.byEP[it.p.Endpoint]
	heap.Fix(&q.heap, it.index)
	m.settle(q)
	return nil
}

func (m *memoryOutbox) Finish(_ context.Context, p *Queued) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	it, err := m.claimed(p)
	if err != nil {
		return err
	}
	q := m.byEP[it.p.Endpoint]
	heap.Remove(&q.heap, it.index)
	m.settle(q)
	delete(m.byID, p.ID)
	return nil
}

func (m *memoryOutbox) Drop(_ context.Context, endpoint string) ([]Queued, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q, ok := m.byEP[endpoint]
	if !ok {
		return nil, nil
	}
	var out []Queued
	keep := q.heap[:0]
	for _, it := range q.heap {
		if it.p.Token == "" {
			out = append(out, it.p)
			delete(m.byID, it.p.ID)
			continue
		}
		keep = append(keep, it)
	}
	clear(q.heap[len(keep):])
	q.heap = keep
	for i, it := range q.heap {
		it.index = i
	}
	heap.Init(&q.heap)
	m.settle(q)
	return out, nil
}

func (m *memoryOutbox) List(context.Context) ([]Queued, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Queued, 0, len(m.byID))
	for _, it := range m.byID {
		out = append(out, it.p)
	}
	return out, nil
}

func (m *memoryOutbox) Len(context.Context) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byID), nil
}

func (m *memoryOutbox) Reset(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.eps = nil
	m.byEP = map[string]*memQueue{}
	m.byID = map[string]*memItem{}
	return nil
}

// epHeap orders endpoint queues by their earliest delivery (memHeap's
// order); every queue in it has one.
type epHeap []*memQueue

func (h epHeap) Len() int           { return len(h) }
func (h epHeap) Less(i, j int) bool { return h[i].heap[0].before(h[j].heap[0]) }
func (h epHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *epHeap) Push(x any) {
	q := x.(*memQueue)
	q.index = len(*h)
	*h = append(*h, q)
}
func (h *epHeap) Pop() any {
	old := *h
	q := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	q.index = -1
	return q
}

// memHeap orders items by memItem.before.
type memHeap []*memItem

func (h memHeap) Len() int           { return len(h) }
func (h memHeap) Less(i, j int) bool { return h[i].before(h[j]) }
func (h memHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *memHeap) Push(x any) {
	it := x.(*memItem)
	it.index = len(*h)
	*h = append(*h, it)
}
func (h *memHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.index = -1
	return it
}
