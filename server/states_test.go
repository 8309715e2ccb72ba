package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
)

// todoStates is WireMock's to-do list scenario: GET /todo answers [] until
// POST /todo ran, then the item.
const todoStates = `
routes:
  - name: empty list
    method: GET
    path: /todo
    state: { name: todo, is: Started }
    respond: { body: [] }
  - name: add item
    method: POST
    path: /todo
    state: { name: todo, to: one-item }
    respond: { status: 201 }
  - name: one item
    method: GET
    path: /todo
    state: { name: todo, is: one-item }
    respond: { body: ["buy milk"] }
`

// orderStates keeps one state per order id: an order is pending until
// it is paid, and a second payment of it is refused.
const orderStates = `
routes:
  - name: pending
    method: GET
    path: /orders/{id}
    state: { name: order, per: '{{ .Request.Vars.id }}', is: Started }
    respond: { template: true, body: '{{ .Request.Vars.id }} pending' }
  - name: paid
    method: GET
    path: /orders/{id}
    state: { name: order, per: '{{ .Request.Vars.id }}', is: paid }
    respond: { template: true, body: '{{ .Request.Vars.id }} paid' }
  - name: pay
    method: POST
    path: /orders/{id}/pay
    state: { name: order, per: '{{ .Request.Vars.id }}', is: Started, to: paid }
    respond: { body: paying }
  - name: pay again
    method: POST
    path: /orders/{id}/pay
    state: { name: order, per: '{{ .Request.Vars.id }}', is: paid }
    respond: { status: 409, body: already paid }
`

// payAtOnce sends a payment of path to each of bases at once and
// returns their answers, "status body", sorted.
func payAtOnce(t *testing.T, path string, bases ...string) []string {
	t.Helper()
	var wg sync.WaitGroup
	got := make([]string, len(bases))
	for i, base := range bases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := doCtx(t.Context(), "POST", base+path, "")
			if err != nil {
				t.Error(err)
			}
			got[i] = fmt.Sprint(r.status, " ", r.body)
		}()
	}
	wg.Wait()
	slices.Sort(got)
	return got
}

// payFirst sends a payment to url in the background, with headers, and
// returns the channel its answer comes on: the payment a test holds in
// its delay (with the state's lock) while it sends others.
func payFirst(t *testing.T, url string, headers ...string) <-chan response {
	first := make(chan response, 1)
	go func() {
		r, err := doCtx(t.Context(), "POST", url, "", headers...)
		if err != nil {
			t.Error(err)
		}
		first <- r
	}()
	return first
}

// TestStateMatchAndMove: the route answers while its state is is:, and
// its answer moves the state; the journal entry and the log line say so.
func TestStateMatchAndMove(t *testing.T) {
	t.Parallel()
	_, hs, logs := serveYAML(t, Options{}, todoStates)
	wantBody(t, hs.URL+"/todo", 200, "[]")
	wantBody(t, hs.URL+"/todo", 200, "[]") // reading moves nothing
	if r := do(t, "POST", hs.URL+"/todo", ""); r.status != 201 {
		t.Fatalf("POST /todo = %d %s", r.status, r.body)
	}
	wantBody(t, hs.URL+"/todo", 200, `["buy milk"]`)

	entries := journalOldestFirst(t, hs.URL)
	var moved []*state.StateMove
	for _, e := range entries {
		moved = append(moved, e.State)
	}
	if len(moved) != 4 || moved[0] != nil || moved[1] != nil || moved[3] != nil ||
		moved[2] == nil || *moved[2] != (state.StateMove{Name: "todo", To: "one-item"}) {
		t.Fatalf("journal states = %+v", moved)
	}
	if !strings.Contains(logs.String(), `"state":"todo -> one-item"`) {
		t.Fatalf("no state in the log line:\n%s", logs)
	}
}

// journalOldestFirst returns every entry of GET /__admin/requests,
// oldest first.
func journalOldestFirst(t *testing.T, base string) []state.Entry {
	t.Helper()
	out := journalEntries(t, base)
	slices.SortFunc(out, func(a, b state.Entry) int { return int(a.ID - b.ID) })
	return out
}

// TestStatePerKey: each order id has its own state.
func TestStatePerKey(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, orderStates)
	wantBody(t, hs.URL+"/orders/o1", 200, "o1 pending")
	if r := do(t, "POST", hs.URL+"/orders/o1/pay", ""); r.status != 200 || r.body != "paying" {
		t.Fatalf("pay o1 = %d %s", r.status, r.body)
	}
	wantBody(t, hs.URL+"/orders/o1", 200, "o1 paid")
	wantBody(t, hs.URL+"/orders/o2", 200, "o2 pending")
	if r := do(t, "POST", hs.URL+"/orders/o1/pay", ""); r.status != 409 || r.body != "already paid" {
		t.Fatalf("pay o1 again = %d %s", r.status, r.body)
	}
	if e := journalOldestFirst(t, hs.URL); e[1].State == nil || *e[1].State != (state.StateMove{Name: "order", Key: "o1", From: "Started", To: "paid"}) {
		t.Fatalf("the payment's journal state = %+v", e[1].State)
	}
}

// TestStateNearMiss: a request whose route's state is not the one it
// wants is a 404 whose near misses say which state has which value.
func TestStateNearMiss(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - name: refund
    method: POST
    path: /orders/{id}/refund
    state: { name: order, per: '{{ .Request.Vars.id }}', is: paid, to: refunded }
    respond: { body: refunded }
`)
	r := do(t, "POST", hs.URL+"/orders/o7/refund", "")
	if r.status != 404 || !strings.Contains(r.body, `"reason":"state order [\"o7\"] is \"Started\", want \"paid\""`) {
		t.Fatalf("refund of an unpaid order = %d %s", r.status, r.body)
	}
}

// TestStateSessions: the states of one session's routes are its own, and
// those of the file's routes are every other request's.
func TestStateSessions(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, todoStates)
	for _, session := range []string{"alpha", "beta"} {
		postDoc(t, hs.URL, "session: "+session+"\n"+todoStates)
	}
	if r := do(t, "POST", hs.URL+"/todo", "", SessionHeader, "alpha"); r.status != 201 {
		t.Fatalf("alpha's POST = %d %s", r.status, r.body)
	}
	wantBody(t, hs.URL+"/todo", 200, `["buy milk"]`, SessionHeader, "alpha")
	wantBody(t, hs.URL+"/__session/beta/todo", 200, "[]")
	wantBody(t, hs.URL+"/todo", 200, "[]")
	r := do(t, "GET", hs.URL+"/__admin/states", "")
	if !strings.Contains(r.body, `"session": "alpha"`) || strings.Contains(r.body, `"session": "beta"`) {
		t.Fatalf("GET /__admin/states = %s", r.body)
	}
	// A session's state is set with ?session=.
	if r := do(t, "PUT", hs.URL+"/__admin/states/todo?session=beta", `{"value":"one-item"}`, "Content-Type", "application/json"); r.status != 200 {
		t.Fatalf("PUT beta's state = %d %s", r.status, r.body)
	}
	wantBody(t, hs.URL+"/__session/beta/todo", 200, `["buy milk"]`)
	wantBody(t, hs.URL+"/todo", 200, "[]")
}

// TestStateAdmin: GET, PUT and DELETE of /__admin/states, and POST
// /__admin/reset, which sets every state back to Started.
func TestStateAdmin(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, orderStates+`
  - name: list
    method: GET
    path: /todo
    state: { name: todo, is: Started }
    respond: { body: [] }
`)
	if r := do(t, "GET", hs.URL+"/__admin/scenarios", ""); !strings.Contains(r.body, `"state": "state order [{{ .Request.Vars.id }}] is \"Started\", to \"paid\""`) {
		t.Fatalf("GET /__admin/scenarios shows no route's state: %s", r.body)
	}
	base := hs.URL + "/__admin/states"
	r := do(t, "GET", base, "")
	if r.status != 200 || !strings.Contains(r.body, `"states": []`) || !strings.Contains(r.body, `"names": [
    "order",
    "todo"
  ]`) {
		t.Fatalf("GET %s = %d %s", base, r.status, r.body)
	}
	if r := do(t, "GET", base+"/order?key=o1", ""); r.status != 200 || r.json(t)["value"] != "Started" {
		t.Fatalf("GET an unset state = %d %s", r.status, r.body)
	}
	if r := do(t, "PUT", base+"/order?key=o1", `{"value":"paid"}`, "Content-Type", "application/json"); r.status != 200 || r.json(t)["value"] != "paid" {
		t.Fatalf("PUT = %d %s", r.status, r.body)
	}
	wantBody(t, hs.URL+"/orders/o1", 200, "o1 paid")
	wantBody(t, hs.URL+"/orders/o2", 200, "o2 pending")
	if r := do(t, "GET", base, ""); !strings.Contains(r.body, `"name": "order",
      "key": "o1",
      "value": "paid"`) {
		t.Fatalf("GET after PUT = %s", r.body)
	}
	for _, tc := range []struct {
		name, method, url, body string
		status                  int
		has                     string
	}{
		{"a misspelt name", "PUT", base + "/ordr?key=o1", `{"value":"paid"}`, 404, `did you mean \"order\"?`},
		{"no value", "PUT", base + "/order?key=o1", `{}`, 400, "want a value"},
		{"an unknown field", "PUT", base + "/order?key=o1", `{"state":"paid"}`, 400, "unknown field"},
		{"a parameter it does not read", "DELETE", base + "?key=o1", "", 400, "takes only ?session="},
		{"a wrong method", "POST", base + "/order", "", 405, "GET, PUT, DELETE"},
	} {
		if r := do(t, tc.method, tc.url, tc.body, "Content-Type", "application/json"); r.status != tc.status || !strings.Contains(r.body, tc.has) {
			t.Errorf("%s: %s %s = %d %s, want %d with %q", tc.name, tc.method, tc.url, r.status, r.body, tc.status, tc.has)
		}
	}
	if r := do(t, "DELETE", base+"/order?key=o1", ""); r.status != 200 || !strings.Contains(r.body, `"reset": 1`) {
		t.Fatalf("DELETE one = %d %s", r.status, r.body)
	}
	wantBody(t, hs.URL+"/orders/o1", 200, "o1 pending")
	do(t, "POST", hs.URL+"/orders/o1/pay", "")
	do(t, "POST", hs.URL+"/orders/o2/pay", "")
	if r := do(t, "DELETE", base+"/order", ""); !strings.Contains(r.body, `"reset": 2`) {
		t.Fatalf("DELETE a name = %d %s", r.status, r.body)
	}
	do(t, "POST", hs.URL+"/orders/o3/pay", "")
	wantBody(t, hs.URL+"/orders/o3", 200, "o3 paid")
	if r := do(t, "POST", hs.URL+"/__admin/reset", ""); r.status != 200 {
		t.Fatalf("reset = %d %s", r.status, r.body)
	}
	wantBody(t, hs.URL+"/orders/o3", 200, "o3 pending")
}

// TestStateKeptByReload: a reload, even one that changes the routes that
// use a state, keeps the states.
func TestStateKeptByReload(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(todoStates), 0o644); err != nil {
		t.Fatal(err)
	}
	s, hs, _ := newTestServer(t, Options{}, path)
	do(t, "POST", hs.URL+"/todo", "")
	changed := strings.Replace(todoStates, `["buy milk"]`, `["buy bread"]`, 1)
	if err := os.WriteFile(path, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	wantBody(t, hs.URL+"/todo", 200, `["buy bread"]`)
}

// TestStateIdempotentReplay: a replay of an Idempotency-Key answers the
// stored answer and moves the state no more; a released answer moves
// none.
func TestStateIdempotentReplay(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - name: pay
    method: POST
    path: /orders/{id}/pay
    idempotency: { key: header.Idempotency-Key }
    state: { name: order, per: '{{ .Request.Vars.id }}', to: paid }
    responses:
      - { status: 200, body: paid }
      - { status: 500, body: try again }
    sequence: { per: header.X-Fail }
`)
	pay := func(key string, headers ...string) response {
		return do(t, "POST", hs.URL+"/orders/o1/pay", "", append([]string{"Idempotency-Key", key}, headers...)...)
	}
	if r := pay("k1"); r.status != 200 {
		t.Fatalf("pay = %d %s", r.status, r.body)
	}
	admin := hs.URL + "/__admin/states/order?key=o1"
	if r := do(t, "PUT", admin, `{"value":"Started"}`, "Content-Type", "application/json"); r.status != 200 {
		t.Fatalf("PUT = %d %s", r.status, r.body)
	}
	if r := pay("k1"); r.status != 200 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay = %d %v %s", r.status, r.header, r.body)
	}
	if v := do(t, "GET", admin, "").json(t)["value"]; v != "Started" {
		t.Fatalf("state after a replay = %v, want Started (not moved again)", v)
	}
	entries := journalOldestFirst(t, hs.URL)
	if last := entries[len(entries)-1]; last.State != nil {
		t.Fatalf("the replay's journal entry moved %+v", last.State)
	}
	// A 500 is not stored under the key (the default store: rule), so it
	// is released: its route's effects, the state's move too, do not
	// happen.
	pay("k2", "X-Fail", "1") // the first call of X-Fail 1: a 200, which moves it
	do(t, "PUT", admin, `{"value":"Started"}`, "Content-Type", "application/json")
	if r := pay("k3", "X-Fail", "1"); r.status != 500 {
		t.Fatalf("second call of X-Fail 1 = %d %s", r.status, r.body)
	}
	if v := do(t, "GET", admin, "").json(t)["value"]; v != "Started" {
		t.Fatalf("state after a released answer = %v, want Started", v)
	}
}

// TestStateFaults: a fault after processing moves the state (the request
// was processed; only its answer is lost), one at arrival does not.
func TestStateFaults(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - name: lost answer
    method: POST
    path: /a
    state: { name: a, to: done }
    respond: { body: ok, fault: { kind: connection-reset, after: processing } }
  - name: refused
    method: POST
    path: /b
    state: { name: b, to: done }
    respond: { body: ok, fault: { kind: connection-reset, after: arrival } }
  - name: read
    method: GET
    path: /{name}
    respond: { body: x }
`)
	for _, p := range []string{"/a", "/b"} {
		if _, err := doCtx(t.Context(), "POST", hs.URL+p, ""); err == nil {
			t.Fatalf("POST %s: no connection error", p)
		}
	}
	for name, want := range map[string]string{"a": "done", "b": "Started"} {
		if v := do(t, "GET", hs.URL+"/__admin/states/"+name, "").json(t)["value"]; v != want {
			t.Errorf("state %s = %v, want %s", name, v, want)
		}
	}
}

// TestStateTransitionsSerialized: two payments of one order at once are
// answered one after the other, the second seeing what the first left:
// the route with is: and to: holds its state's lock from its read to its
// move. Without the lock both would read Started and answer "paying".
func TestStateTransitionsSerialized(t *testing.T) {
	t.Parallel()
	yaml := strings.Replace(orderStates, "respond: { body: paying }", "respond: { body: paying, delay: 300ms }\n    lock: { wait: 30s }", 1)
	_, hs, _ := serveYAML(t, Options{}, yaml)
	bodies := payAtOnce(t, "/orders/o1/pay", hs.URL, hs.URL)
	if want := []string{"200 paying", "409 already paid"}; !slices.Equal(bodies, want) {
		t.Fatalf("two payments at once = %q, want %q", bodies, want)
	}
}

// TestLocksState: a route locks its state when it reads and moves it,
// unless its lock: is [].
func TestLocksState(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		state, lock string
		want        bool
	}{
		{"{ name: s, is: a, to: b }", "", true},
		{"{ name: s, is: a, to: b }", "lock: { wait: 5s }", true},
		{"{ name: s, is: a, to: b }", "lock: '{{ .Request.Vars.id }}'", true},
		{"{ name: s, is: a, to: b }", "lock: []", false},
		{"{ name: s, is: a }", "", false},
		{"{ name: s, to: b }", "", false},
	} {
		set, err := scenarios.LoadBytes("s.yaml", []byte(fmt.Sprintf("routes:\n  - path: /x/{id}\n    state: %s\n    %s\n    respond: {}\n", tc.state, tc.lock)))
		if err != nil {
			t.Fatal(err)
		}
		if got := locksState(set.Routes()[0]); got != tc.want {
			t.Errorf("state: %s %s: locksState = %v, want %v", tc.state, tc.lock, got, tc.want)
		}
	}
}

// TestStateRetryReplays: a retry of a payment whose state moved matches
// the route of the new state; with one idempotency group for both, its
// key replays the first answer instead of that route's own.
func TestStateRetryReplays(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - name: pay
    method: POST
    path: /orders/{id}/pay
    idempotency: { key: header.Idempotency-Key, group: payments }
    state: { name: order, per: '{{ .Request.Vars.id }}', is: Started, to: paid }
    respond: { body: paying }
  - name: pay again
    method: POST
    path: /orders/{id}/pay
    idempotency: { key: header.Idempotency-Key, group: payments }
    state: { name: order, per: '{{ .Request.Vars.id }}', is: paid }
    respond: { status: 409, body: already paid }
`)
	pay := func(key string) response {
		return do(t, "POST", hs.URL+"/orders/o1/pay", "", "Idempotency-Key", key)
	}
	if r := pay("k1"); r.status != 200 || r.body != "paying" {
		t.Fatalf("pay = %d %s", r.status, r.body)
	}
	if r := pay("k1"); r.status != 200 || r.body != "paying" || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("its retry = %d %s %v, want the first answer replayed", r.status, r.body, r.header)
	}
	if r := pay("k2"); r.status != 409 {
		t.Fatalf("another payment = %d %s, want 409", r.status, r.body)
	}
}

// countingStore counts the reads of route states.
type countingStore struct {
	state.Store
	gets *atomic.Int64
}

func (c countingStore) States() state.States { return countingStates{c.Store.States(), c.gets} }

type countingStates struct {
	state.States
	gets *atomic.Int64
}

func (c countingStates) Get(ctx context.Context, k state.StateKey) (string, error) {
	c.gets.Add(1)
	return c.States.Get(ctx, k)
}

// TestStateReadOnce: a request that several routes of one state are
// tried for reads the state once, and a miss's near-miss report reads it
// no more.
func TestStateReadOnce(t *testing.T) {
	t.Parallel()
	gets := new(atomic.Int64)
	_, hs, _ := serveYAML(t, Options{State: countingStore{state.NewMemory(state.Options{}), gets}}, `
routes:
  - { name: a, method: GET, path: '/orders/{id}', state: { name: order, per: '{{ .Request.Vars.id }}', is: a }, respond: { body: a } }
  - { name: b, method: GET, path: '/orders/{id}', state: { name: order, per: '{{ .Request.Vars.id }}', is: b }, respond: { body: b } }
  - { name: started, method: GET, path: '/orders/{id}', state: { name: order, per: '{{ .Request.Vars.id }}', is: Started }, respond: { body: started } }
  - { name: other, method: GET, path: '/other/{id}', state: { name: order, per: '{{ .Request.Vars.id }}', is: a }, respond: { body: a } }
`)
	wantBody(t, hs.URL+"/orders/o1", 200, "started")
	if n := gets.Load(); n != 1 {
		t.Fatalf("%d reads of the state for one request, want 1", n)
	}
	if r := do(t, "GET", hs.URL+"/other/o1", ""); r.status != 404 || !strings.Contains(r.body, `is \"Started\", want \"a\"`) {
		t.Fatalf("miss = %d %s", r.status, r.body)
	}
	if n := gets.Load(); n != 2 {
		t.Fatalf("%d reads after a miss, want 2 (one more: its match; the report reads none)", n)
	}
}

// TestStateLockTimeout: a request that waits longer than the route's
// lock: wait: for a state another request holds (in its delay) gets a
// 429 problem that names the state, and changes nothing; the holder then
// answers and moves it.
func TestStateLockTimeout(t *testing.T) {
	t.Parallel()
	clock := newGateClock()
	yaml := strings.Replace(orderStates, "respond: { body: paying }", "respond: { body: paying, delay: 1s }\n    lock: { wait: 50ms }", 1)
	_, hs, _ := serveYAML(t, Options{Clock: clock}, yaml)
	first := payFirst(t, hs.URL+"/orders/o1/pay")
	clock.waitBegan(t, 1) // the first holds the state in its delay
	r := do(t, "POST", hs.URL+"/orders/o1/pay", "")
	if r.status != 429 || r.header.Get("Retry-After") != "1" || !strings.Contains(r.body, `route state order [\"o1\"] for longer than 50ms`) ||
		!strings.Contains(r.body, `"type":"https://github.com/scenariomock/scenariomock#route-state-locked","title":"Route state locked","status":429`) {
		t.Fatalf("the second payment = %d %v %s", r.status, r.header, r.body)
	}
	close(clock.gate)
	if r := <-first; r.status != 200 || r.body != "paying" {
		t.Fatalf("the first payment = %d %s", r.status, r.body)
	}
	wantBody(t, hs.URL+"/orders/o1", 200, "o1 paid")
}

// TestStateMovesTheKeyItMatched: the move goes to the key the route
// matched on (and locked), not to one its per: renders again in commit:
// a per: with seq renders 1 when matching and would render 2 there.
func TestStateMovesTheKeyItMatched(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - name: take
    method: POST
    path: /tickets
    state: { name: ticket, per: 't{{ seq "tickets" }}', is: Started, to: taken }
    respond: { body: taken }
`)
	if r := do(t, "POST", hs.URL+"/tickets", ""); r.status != 200 {
		t.Fatalf("take = %d %s", r.status, r.body)
	}
	if e := journalOldestFirst(t, hs.URL); e[0].State == nil || *e[0].State != (state.StateMove{Name: "ticket", Key: "t1", From: "Started", To: "taken"}) {
		t.Fatalf("the journal's state = %+v, want t1 moved (the key read when matching)", e[0].State)
	}
	if r := do(t, "GET", hs.URL+"/__admin/states/ticket?key=t1", ""); r.status != 200 || !strings.Contains(r.body, `"taken"`) {
		t.Fatalf("GET ticket t1 = %d %s, want taken", r.status, r.body)
	}
}

// TestStatesMisspeltNameFilter: GET /__admin/states?name= with a name no
// route has and nothing set under it is a 400 problem with the name it
// likely misspells, as a route= filter of the journal is; before, it was
// an empty list, so a check that nothing moved passed whatever happened.
// A name a route has lists its states, none yet included.
func TestStatesMisspeltNameFilter(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, todoStates)
	r := do(t, "GET", hs.URL+"/__admin/states?name=tood", "")
	if r.status != 400 || r.header.Get("Content-Type") != "application/problem+json" || !strings.Contains(r.body, `did you mean \"todo\"?`) {
		t.Errorf("?name=tood: %d %s, want a 400 problem with did you mean \"todo\"?", r.status, r.body)
	}
	if r := do(t, "GET", hs.URL+"/__admin/states?name=todo", ""); r.status != 200 || !strings.Contains(r.body, `"states": []`) && !strings.Contains(r.body, `"states":[]`) {
		t.Errorf("?name=todo: %d %s, want 200 and no state set yet", r.status, r.body)
	}
	do(t, "POST", hs.URL+"/todo", "")
	if r := do(t, "GET", hs.URL+"/__admin/states?name=todo", ""); r.status != 200 || !strings.Contains(r.body, "one-item") {
		t.Errorf("?name=todo after the POST: %d %s, want the state one-item", r.status, r.body)
	}
}

// TestStateAdminPages: GET /__admin/states counts the states set
// (total) and, with ?offset= and ?limit=, answers a page of them, as the
// dashboard polls it; without them it lists every one.
func TestStateAdminPages(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, orderStates)
	for _, id := range []string{"o1", "o2", "o3"} {
		if r := do(t, "POST", hs.URL+"/orders/"+id+"/pay", ""); r.status != 200 {
			t.Fatalf("pay %s = %d %s", id, r.status, r.body)
		}
	}
	keys := func(query string) string {
		t.Helper()
		r := do(t, "GET", hs.URL+"/__admin/states"+query, "")
		var got struct {
			States []struct{ Key string } `json:"states"`
			Total  int                    `json:"total"`
		}
		if r.status != 200 || json.Unmarshal([]byte(r.body), &got) != nil {
			t.Fatalf("GET /__admin/states%s = %d %s", query, r.status, r.body)
		}
		out := fmt.Sprint(got.Total)
		for _, s := range got.States {
			out += " " + s.Key
		}
		return out
	}
	for query, want := range map[string]string{
		"":                  "3 o1 o2 o3",
		"?limit=2":          "3 o1 o2",
		"?offset=2&limit=2": "3 o3",
		"?offset=5":         "3",
	} {
		if got := keys(query); got != want {
			t.Errorf("GET /__admin/states%s: total and keys %q, want %q", query, got, want)
		}
	}
	if r := do(t, "GET", hs.URL+"/__admin/states?limit=x", ""); r.status != 400 {
		t.Errorf("?limit=x = %d %s, want 400", r.status, r.body)
	}
}
