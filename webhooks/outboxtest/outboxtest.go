package outboxtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/webhooks"
)

// NewOutbox builds a fresh, empty outbox that holds at most queue
// deliveries.
type NewOutbox func(t *testing.T, queue int) webhooks.Outbox

var ctx = context.Background()

// t0 is the suite's now; times are whole microseconds, as Redis keeps them.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const lease = 10 * time.Second

// Run runs the conformance suite against the outboxes newOutbox builds.
func Run(t *testing.T, newOutbox NewOutbox) {
	cases := []struct {
		name string
		run  func(t *testing.T, newOutbox NewOutbox)
	}{
		{"DueOrder", dueOrder},
		{"NotDueYet", notDueYet},
		{"Lease", leaseEnds},
		{"Retry", retry},
		{"Bound", bound},
		{"ExclusiveClaims", exclusive},
		{"Reorder", reorder},
		{"Drop", drop},
		{"ListAndReset", listReset},
		{"Target", target},
		{"PerEndpoint", perEndpoint},
		{"PerEndpointBacklog", perEndpointBacklog},
		{"IdleFirst", idleFirst},
		{"SlowLast", slowLast},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newOutbox)
		})
	}
}

func queued(id, event, endpoint, object string, due time.Time) webhooks.Queued {
	return webhooks.Queued{
		ID: id, EventID: event, Type: "thing.created", Endpoint: endpoint, Object: object,
		Body: []byte(`{"id":"` + event + `","bytes":"\u0000\n\"é"}`), Created: t0, Due: due, Faults: "delay 1s",
		Negative: webhooks.BadSignature, DropFirst: true, Session: "alpha",
	}
}

func add(t *testing.T, o webhooks.Outbox, reorder bool, ps ...webhooks.Queued) {
	t.Helper()
	if err := o.Add(ctx, ps, reorder); err != nil {
		t.Fatalf("Add %s: %v", ps[0].ID, err)
	}
}

func claim(t *testing.T, o webhooks.Outbox, now time.Time, max int) ([]webhooks.Queued, time.Time) {
	t.Helper()
	got, next, err := o.Claim(ctx, now, max, lease, webhooks.PerEndpoint{})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	for _, q := range got {
		if q.Token == "" {
			t.Fatalf("Claim returned %s without a token", q.ID)
		}
	}
	return got, next
}

func ids(qs []webhooks.Queued) []string {
	var out []string
	for _, q := range qs {
		out = append(out, q.ID)
	}
	return out
}

func length(t *testing.T, o webhooks.Outbox, want int) {
	t.Helper()
	n, err := o.Len(ctx)
	if err != nil || n != want {
		t.Fatalf("Len = %d, %v; want %d", n, err, want)
	}
}

// dueOrder: due deliveries are claimed earliest first, at most max, with
// every field as added; Finish removes them.
func dueOrder(t *testing.T, newOutbox NewOutbox) {
	o := newOutbox(t, 100)
	add(t, o, false, queued("d2", "e2", "shop", "", t0.Add(-time.Second)))
	add(t, o, false, queued("d1", "e1", "shop", "", t0.Add(-2*time.Second)))
	add(t, o, false, queued("d3", "e3", "shop", "", t0))
	got, _ := claim(t, o, t0, 2)
	if !slices.Equal(ids(got), []string{"d1", "d2"}) {
		t.Fatalf("claimed %v, want [d1 d2]", ids(got))
	}
	want := queued("d1", "e1", "shop", "", t0.Add(-2*time.Second))
	g := got[0]
	if g.EventID != want.EventID || g.Type != want.Type || g.Endpoint != want.Endpoint || string(g.Body) != string(want.Body) ||
		!g.Created.Equal(want.Created) || !g.Due.Equal(want.Due) || g.Faults != want.Faults || g.Negative != want.Negative ||
		!g.DropFirst || g.Attempts != 0 || g.Session != want.Session {
		t.Fatalf("claimed %+v, want the fields of %+v", g, want)
	}
	length(t, o, 3)
	for i := range got {
		if err := o.Finish(ctx, &got[i]); err != nil {
			t.Fatalf("Finish %s: %v", got[i].ID, err)
		}
	}
	if err := o.Finish(ctx, &got[0]); !errors.Is(err, webhooks.ErrLeaseLost) {
		t.Fatalf("second Finish = %v, want ErrLeaseLost", err)
	}
	length(t, o, 1)
	got, _ = claim(t, o, t0, 10)
	if !slices.Equal(ids(got), []string{"d3"}) {
		t.Fatalf("claimed %v, want [d3]", ids(got))
	}
}

// perEndpoint: a claim takes no more for an endpoint than its bound
// leaves room for; what it keeps back keeps its place, and is not the
// next due (it waits for its endpoint's attempts to end).
func perEndpoint(t *testing.T, newOutbox NewOutbox) {
	o := newOutbox(t, 100)
	for i, ep := range []string{"hang", "hang", "ok", "hang", "ok", "hang"} {
		id := fmt.Sprint("d", i+1)
		add(t, o, false, queued(id, "e"+id, ep, "", t0.Add(time.Duration(i-10)*time.Millisecond)))
	}
	got, next, err := o.Claim(ctx, t0, 10, lease, webhooks.PerEndpoint{Max: 2, Busy: map[string]int{"hang": 1, "gone": 5}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(got), []string{"d3", "d5", "d1"}) {
		t.Fatalf("claimed %v, want [d3 d5 d1] (two for ok, idle, first; one more for hang)", ids(got))
	}
	if !next.After(t0) || next.After(t0.Add(lease)) {
		t.Fatalf("next = %v, want in (%v, %v]: the deliveries kept back are not due next", next, t0, t0.Add(lease))
	}
	got, _ = claim(t, o, t0, 10)
	if !slices.Equal(ids(got), []string{"d2", "d4", "d6"}) {
		t.Fatalf("then claimed %v, want [d2 d4 d6] in their order", ids(got))
	}
	length(t, o, 6)
}

// perEndpointBacklog: a backlog kept back for one endpoint (its receiver
// hangs), longer than a page of any scan, neither hides another
// endpoint's deliveries nor moves: each endpoint's deliveries keep their
// order through claims, retries, finishes and an endpoint emptied and
// filled again, and Drop takes the backlog but what is claimed.
// (BenchClaim checks that the backlog costs the others' claims nothing.)
func perEndpointBacklog(t *testing.T, newOutbox NewOutbox) {
	const n = 600
	o := newOutbox(t, n+10)
	for i := range n {
		add(t, o, false, queued(fmt.Sprintf("h%03d", i), fmt.Sprint("eh", i), "hang", "", t0.Add(-time.Minute)))
	}
	for i := range 3 {
		add(t, o, false, queued(fmt.Sprint("ok", i+1), fmt.Sprint("eok", i+1), "ok", "", t0.Add(time.Duration(i-3)*time.Second)))
	}
	add(t, o, false, queued("later", "elater", "calm", "", t0.Add(12*time.Second)))
	held := webhooks.PerEndpoint{Max: 4, Busy: map[string]int{"hang": 4}}
	got, next, err := o.Claim(ctx, t0, 10, lease, held)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(got), []string{"ok1", "ok2", "ok3"}) {
		t.Fatalf("claimed %v, want [ok1 ok2 ok3] past hang's backlog", ids(got))
	}
	if !next.After(t0) || next.After(t0.Add(lease)) {
		t.Fatalf("next = %v, want in (%v, %v]: hang's backlog is kept back, not due next", next, t0, t0.Add(lease))
	}
	if err := o.Retry(ctx, &got[0], t0.Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 3; i++ {
		if err := o.Finish(ctx, &got[i]); err != nil {
			t.Fatal(err)
		}
	}
	if got, _, err = o.Claim(ctx, t0.Add(5*time.Second), 10, lease, held); err != nil || !slices.Equal(ids(got), []string{"ok1"}) {
		t.Fatalf("claimed %v, %v after ok1's retry was due, want [ok1]", ids(got), err)
	}
	if err := o.Finish(ctx, &got[0]); err != nil {
		t.Fatal(err)
	}
	// hang's receiver answers again: its backlog goes in its order.
	back, _, err := o.Claim(ctx, t0.Add(5*time.Second), 3, lease, webhooks.PerEndpoint{Max: 4})
	if err != nil || !slices.Equal(ids(back), []string{"h000", "h001", "h002"}) {
		t.Fatalf("claimed %v, %v once hang answered, want [h000 h001 h002]", ids(back), err)
	}
	// ok, emptied, gets a delivery again; hang is at its bound once more.
	add(t, o, false, queued("ok4", "eok4", "ok", "", t0.Add(5*time.Second)))
	if got, _, err = o.Claim(ctx, t0.Add(5*time.Second), 10, lease, held); err != nil || !slices.Equal(ids(got), []string{"ok4"}) {
		t.Fatalf("claimed %v, %v; want [ok4]", ids(got), err)
	}
	dropped, err := o.Drop(ctx, "hang")
	if err != nil || len(dropped) != n-3 {
		t.Fatalf("Drop(hang) = %d deliveries, %v; want %d (3 are claimed)", len(dropped), err, n-3)
	}
	length(t, o, 3+1+1)
	if got, _ = claim(t, o, t0.Add(12*time.Second), 10); !slices.Equal(ids(got), []string{"later"}) {
		t.Fatalf("claimed %v when later was due (the leases last), want [later]", ids(got))
	}
}

// idleFirst: with a bound, an endpoint with no attempt in flight goes
// before one with some, whatever their due times; then the rest, earliest
// first. Without a bound, due order alone.
func idleFirst(t *testing.T, newOutbox NewOutbox) {
	o := newOutbox(t, 100)
	add(t, o, false, queued("a1", "ea1", "a", "", t0.Add(-3*time.Second)))
	add(t, o, false, queued("a2", "ea2", "a", "", t0.Add(-2*time.Second)))
	add(t, o, false, queued("b1", "eb1", "b", "", t0.Add(-time.Second)))
	add(t, o, false, queued("c1", "ec1", "c", "", t0.Add(-4*time.Second)))
	per := webhooks.PerEndpoint{Max: 4, Busy: map[string]int{"a": 1, "c": 1}}
	got, _, err := o.Claim(ctx, t0, 1, lease, per)
	if err != nil || !slices.Equal(ids(got), []string{"b1"}) {
		t.Fatalf("claimed %v, %v; want [b1]: b has nothing in flight, a and c have", ids(got), err)
	}
	got, _, err = o.Claim(ctx, t0, 10, lease, per)
	if err != nil || !slices.Equal(ids(got), []string{"c1", "a1", "a2"}) {
		t.Fatalf("then claimed %v, %v; want [c1 a1 a2], earliest first", ids(got), err)
	}
}

// slowLast: an endpoint whose receiver let its last attempt time out
// (Slow) gives way to the others, as one with attempts in flight does,
// but its bound is unchanged: alone, it is claimed.
func slowLast(t *testing.T, newOutbox NewOutbox) {
	o := newOutbox(t, 100)
	add(t, o, false, queued("a1", "ea1", "a", "", t0.Add(-3*time.Second)))
	add(t, o, false, queued("a2", "ea2", "a", "", t0.Add(-2*time.Second)))
	add(t, o, false, queued("b1", "eb1", "b", "", t0.Add(-time.Second)))
	per := webhooks.PerEndpoint{Max: 1, Slow: map[string]bool{"a": true}}
	got, _, err := o.Claim(ctx, t0, 1, lease, per)
	if err != nil || !slices.Equal(ids(got), []string{"b1"}) {
		t.Fatalf("claimed %v, %v; want [b1]: a is slow", ids(got), err)
	}
	got, _, err = o.Claim(ctx, t0, 10, lease, per)
	if err != nil || !slices.Equal(ids(got), []string{"a1"}) {
		t.Fatalf("then claimed %v, %v; want [a1], its bound of 1", ids(got), err)
	}
}

// notDueYet: a delivery due later is not claimed, and Claim says when to
// look again: after now, no later than it is due.
func notDueYet(t *testing.T, newOutbox NewOutbox) {
	o := newOutbox(t, 100)
	due := t0.Add(time.Minute)
	add(t, o, false, queued("d1", "e1", "shop", "", due))
	got, next := claim(t, o, t0, 10)
	if len(got) != 0 {
		t.Fatalf("claimed %v before it was due", ids(got))
	}
	if !next.After(t0) || next.After(due) {
		t.Fatalf("next = %v, want in (%v, %v]", next, t0, due)
	}
	got, _ = claim(t, o, due, 10)
	if len(got) != 1 {
		t.Fatalf("claimed %v when due, want d1", ids(got))
	}
}

// leaseEnds: a claim is exclusive while its lease lasts; when it ends (the
// replica crashed) the delivery is claimed again, and the old claim can
// no longer finish or retry it.
func leaseEnds(t *testing.T, newOutbox NewOutbox) {
	o := newOutbox(t, 100)
	add(t, o, false, queued("d1", "e1", "shop", "", t0))
	first, _ := claim(t, o, t0, 10)
	if len(first) != 1 {
		t.Fatalf("claimed %v", ids(first))
	}
	if got, next := claim(t, o, t0.Add(lease/2), 10); len(got) != 0 || next.After(t0.Add(lease)) {
		t.Fatalf("during the lease: claimed %v, next %v; want none, next by the lease's end", ids(got), next)
	}
	again, _ := claim(t, o, t0.Add(lease), 10)
	if len(again) != 1 || again[0].Token == first[0].Token {
		t.Fatalf("after the lease: claimed %+v, want d1 with a new token", again)
	}
	if err := o.Finish(ctx, &first[0]); !errors.Is(err, webhooks.ErrLeaseLost) {
		t.Fatalf("Finish by the lost claim = %v, want ErrLeaseLost", err)
	}
	if err := o.Retry(ctx, &first[0], t0); !errors.Is(err, webhooks.ErrLeaseLost) {
		t.Fatalf("Retry by the lost claim = %v, want ErrLeaseLost", err)
	}
	length(t, o, 1)
	if err := o.Finish(ctx, &again[0]); err != nil {
		t.Fatal(err)
	}
	length(t, o, 0)
}

// retry: Retry keeps the attempt's outcome and makes the delivery due at
// the time given.
func retry(t *testing.T, newOutbox NewOutbox) {
	o := newOutbox(t, 100)
	add(t, o, false, queued("d1", "e1", "shop", "", t0))
	got, _ := claim(t, o, t0, 10)
	p := got[0]
	p.Attempts, p.LastStatus, p.LastError = 1, 500, "server said no"
	due := t0.Add(30 * time.Second)
	if err := o.Retry(ctx, &p, due); err != nil {
		t.Fatal(err)
	}
	if err := o.Retry(ctx, &p, due); !errors.Is(err, webhooks.ErrLeaseLost) {
		t.Fatalf("Retry of an unclaimed delivery = %v, want ErrLeaseLost", err)
	}
	if got, _ := claim(t, o, due.Add(-time.Microsecond), 10); len(got) != 0 {
		t.Fatalf("claimed %v before the retry was due", ids(got))
	}
	got, _ = claim(t, o, due, 10)
	if len(got) != 1 || got[0].Attempts != 1 || got[0].LastStatus != 500 || got[0].LastError != "server said no" || string(got[0].Body) != string(p.Body) {
		t.Fatalf("claimed %+v, want d1 after 1 attempt, 500", got)
	}
}

// bound: an Add that does not fit is refused whole with ErrFull, and
// what is claimed counts.
func bound(t *testing.T, newOutbox NewOutbox) {
	o := newOutbox(t, 3)
	add(t, o, false, queued("d1", "e1", "shop", "", t0), queued("d2", "e1", "shop", "", t0))
	claim(t, o, t0, 10)
	err := o.Add(ctx, []webhooks.Queued{queued("d3", "e2", "shop", "", t0), queued("d4", "e2", "shop", "", t0)}, false)
	if !errors.Is(err, webhooks.ErrFull) || !strings.Contains(err.Error(), "2 deliveries pending") {
		t.Fatalf("Add past the bound = %v, want ErrFull with 2 pending", err)
	}
	length(t, o, 2)
	add(t, o, false, queued("d5", "e3", "shop", "", t0))
	length(t, o, 3)
}

// exclusive: concurrent claims (replicas at once) never hand out one
// delivery twice.
func exclusive(t *testing.T, newOutbox NewOutbox) {
	const n = 200
	o := newOutbox(t, n)
	for i := range n {
		add(t, o, false, queued(fmt.Sprintf("d%03d", i), fmt.Sprintf("e%d", i), "shop", "", t0))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				got, _, err := o.Claim(ctx, t0, 7, lease, webhooks.PerEndpoint{})
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, q := range got {
					seen[q.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d deliveries claimed, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("%s claimed %d times", id, c)
		}
	}
}

// reorder: an event added with reorder goes before the earlier events of
// its object at its endpoint that wait for their first attempt; other
// objects, endpoints, and deliveries already tried keep their place.
func reorder(t *testing.T, newOutbox NewOutbox) {
	o := newOutbox(t, 100)
	add(t, o, false, queued("a-created", "e1", "shop", "pi_1", t0))
	add(t, o, false, queued("a-other", "e2", "shop", "pi_2", t0))
	add(t, o, false, queued("a-elsewhere", "e3", "crm", "pi_1", t0))
	// Due after the reordered event: it is behind already, not overtaken.
	add(t, o, false, queued("a-later", "e5", "shop", "pi_1", t0.Add(time.Minute)))
	add(t, o, true, queued("a-succeeded", "e4", "shop", "pi_1", t0))
	// Moved behind may mean due a moment later (Redis: a microsecond).
	got, _ := claim(t, o, t0.Add(time.Millisecond), 10)
	if slices.Contains(ids(got), "a-later") {
		t.Fatalf("claimed %v: a-later is due a minute on, and was not moved", ids(got))
	}
	for _, q := range got {
		if err := o.Finish(ctx, &q); err != nil {
			t.Fatal(err)
		}
	}
	later, _ := claim(t, o, t0.Add(time.Minute), 10)
	order := ids(got)
	got = append(got, later...)
	pos := func(id string) int { return slices.Index(order, id) }
	if pos("a-succeeded") > pos("a-created") {
		t.Fatalf("claimed %v: want a-succeeded before a-created", order)
	}
	if pos("a-other") > pos("a-succeeded") || pos("a-elsewhere") > pos("a-succeeded") {
		t.Fatalf("claimed %v: other objects and endpoints keep their place", order)
	}
	for _, q := range got {
		// The overtaken delivery's note names what happened to it, after
		// the faults it had; the others' notes are unchanged.
		want := "delay 1s"
		if q.ID == "a-created" {
			want = "delay 1s, " + webhooks.OvertakenBy("e4")
		}
		if q.Faults != want {
			t.Fatalf("%s faults %q, want %q", q.ID, q.Faults, want)
		}
	}
}

// drop: Drop removes an endpoint's unclaimed deliveries and returns them.
func drop(t *testing.T, newOutbox NewOutbox) {
	o := newOutbox(t, 100)
	add(t, o, false, queued("x1", "e1", "shop", "", t0))
	add(t, o, false, queued("x2", "e2", "shop", "", t0.Add(time.Second)))
	add(t, o, false, queued("y1", "e3", "crm", "", t0.Add(time.Second)))
	got, _ := claim(t, o, t0, 1)
	dropped, err := o.Drop(ctx, "shop")
	if err != nil || !slices.Equal(ids(dropped), []string{"x2"}) {
		t.Fatalf("Drop = %v, %v; want [x2] (x1 is claimed)", ids(dropped), err)
	}
	length(t, o, 2)
	if err := o.Finish(ctx, &got[0]); err != nil {
		t.Fatal(err)
	}
	rest, _ := claim(t, o, t0.Add(time.Second), 10)
	if !slices.Equal(ids(rest), []string{"y1"}) {
		t.Fatalf("left %v, want [y1]", ids(rest))
	}
}

// listReset: List shows what is pending and claimed; Reset empties the
// outbox and ends the claims.
func listReset(t *testing.T, newOutbox NewOutbox) {
	o := newOutbox(t, 100)
	add(t, o, false, queued("d1", "e1", "shop", "pi_1", t0), queued("d2", "e1", "shop", "pi_1", t0))
	add(t, o, false, queued("d3", "e2", "shop", "", t0.Add(time.Hour)))
	got, _ := claim(t, o, t0, 1)
	all, err := o.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l := ids(all)
	slices.Sort(l)
	if !slices.Equal(l, []string{"d1", "d2", "d3"}) {
		t.Fatalf("List = %v", l)
	}
	if err := o.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	length(t, o, 0)
	if err := o.Finish(ctx, &got[0]); !errors.Is(err, webhooks.ErrLeaseLost) {
		t.Fatalf("Finish after Reset = %v, want ErrLeaseLost", err)
	}
	if got, _ := claim(t, o, t0.Add(2*time.Hour), 10); len(got) != 0 {
		t.Fatalf("claimed %v after Reset", ids(got))
	}
	add(t, o, true, queued("d4", "e3", "shop", "pi_1", t0))
	length(t, o, 1)
}

// target: a delivery to an endpoint found at send time carries it (URL,
// secrets, source) through Claim, Retry and List, for whichever replica
// claims it; one to a configured endpoint carries none.
func target(t *testing.T, newOutbox NewOutbox) {
	o := newOutbox(t, 100)
	want := webhooks.Target{Name: "we_1", URL: "http://127.0.0.1:4242/webhook", Secrets: []string{"whsec_abc", "whsec_old"}, Source: "webhook_endpoint"}
	p := queued("d1", "e1", "we_1", "", t0)
	tg := want
	p.Target = &tg
	add(t, o, false, p, queued("d2", "e1", "shop", "", t0))
	check := func(step string, qs []webhooks.Queued) {
		t.Helper()
		for _, q := range qs {
			switch q.ID {
			case "d1":
				if q.Target == nil || q.Target.Name != want.Name || q.Target.URL != want.URL || q.Target.Source != want.Source || !slices.Equal(q.Target.Secrets, want.Secrets) {
					t.Fatalf("%s: d1's target = %+v, want %+v", step, q.Target, want)
				}
			case "d2":
				if q.Target != nil {
					t.Fatalf("%s: d2's target = %+v, want none", step, q.Target)
				}
			}
		}
	}
	got, _ := claim(t, o, t0, 10)
	if len(got) != 2 {
		t.Fatalf("claimed %v, want d1 and d2", ids(got))
	}
	check("Claim", got)
	for i := range got {
		got[i].Attempts, got[i].LastStatus = 1, 500
		if err := o.Retry(ctx, &got[i], t0.Add(time.Second)); err != nil {
			t.Fatalf("Retry %s: %v", got[i].ID, err)
		}
	}
	all, err := o.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("List", all)
	got, _ = claim(t, o, t0.Add(time.Second), 10)
	check("Claim after Retry", got)
}

// NewBenchOutbox builds a fresh, empty outbox for a benchmark.
type NewBenchOutbox func(b *testing.B, queue int) webhooks.Outbox

// BenchClaim measures one Claim (and the Retry that makes what it took
// due again) while an endpoint at its bound (its receiver hangs) holds a
// backlog of due deliveries, at sizes backlog=100 and backlog=10000, and
// a healthy endpoint has 4 due. A claim that walks the held-back backlog
// costs in proportion to it; one that skips it costs the same at both
// sizes.
func BenchClaim(b *testing.B, newOutbox NewBenchOutbox) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprint("backlog=", n), func(b *testing.B) {
			o := newOutbox(b, n+10)
			for i := range n {
				p := queued(fmt.Sprintf("h%05d", i), fmt.Sprintf("eh%d", i), "hang", "", t0.Add(-time.Minute))
				if err := o.Add(ctx, []webhooks.Queued{p}, false); err != nil {
					b.Fatal(err)
				}
			}
			for i := range 4 {
				p := queued(fmt.Sprintf("ok%d", i), fmt.Sprintf("eok%d", i), "ok", "", t0)
				if err := o.Add(ctx, []webhooks.Queued{p}, false); err != nil {
					b.Fatal(err)
				}
			}
			per := webhooks.PerEndpoint{Max: 4, Busy: map[string]int{"hang": 4}}
			b.ReportAllocs()
			for b.Loop() {
				got, _, err := o.Claim(ctx, t0, 8, lease, per)
				if err != nil || len(got) != 4 {
					b.Fatalf("claimed %v, %v; want the 4 of ok", ids(got), err)
				}
				b.StopTimer()
				for i := range got {
					if err := o.Retry(ctx, &got[i], t0); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
			}
		})
	}
}
