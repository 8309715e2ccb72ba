package matcher

import (
	"net/http/httptest"
	"testing"

	"github.com/scenariomock/scenariomock/scenarios"
)

// fakeStates is a StateReader over a map by state name and path id
// (per: is the id here), counting its reads. It stands for the server's,
// which renders per: and reads the store.
type fakeStates struct {
	values map[string]string // by name + "/" + key; absent: Started
	fail   bool              // every read fails
	reads  int
}

func (f *fakeStates) ReadState(r *scenarios.Route, vars map[string]string) (string, string, bool) {
	f.reads++
	if f.fail {
		return vars["id"], "", false
	}
	key := vars["id"]
	v, ok := f.values[r.State.Name+"/"+key]
	if !ok {
		v = scenarios.StateStarted
	}
	return key, v, true
}

const orderStates = `
routes:
  - name: pending
    method: GET
    path: /orders/{id}
    when: { headers: { Accept: { equals: application/json } } }
    state: { name: order, per: '{{ .Request.Vars.id }}', is: Started }
    respond: { body: pending }
  - name: paid
    method: GET
    path: /orders/{id}
    state: { name: order, per: '{{ .Request.Vars.id }}', is: paid }
    respond: { body: paid }
  - name: pay
    method: POST
    path: /orders/{id}/pay
    state: { name: order, per: '{{ .Request.Vars.id }}', to: paid }
    respond: { body: ok }
`

// TestMatchByState: a route with is: matches only while its state has
// that value, per key; a route with to: only is not a condition.
func TestMatchByState(t *testing.T) {
	t.Parallel()
	tab := compile(t, orderStates)
	if !tab.States() {
		t.Fatal("States() = false for a table with is: conditions")
	}
	if compile(t, "routes: [{ path: /a, state: { name: x, to: y }, respond: {} }]").States() {
		t.Fatal("States() = true for a table whose only state: has no is:")
	}
	for _, tc := range []struct {
		name, method, path string
		values             map[string]string
		want               string // "" for no match
	}{
		{"unset is Started", "GET", "/orders/o1", nil, "pending"},
		{"moved", "GET", "/orders/o1", map[string]string{"order/o1": "paid"}, "paid"},
		{"another key is its own", "GET", "/orders/o2", map[string]string{"order/o1": "paid"}, "pending"},
		{"no route wants the value", "GET", "/orders/o1", map[string]string{"order/o1": "refunded"}, ""},
		{"to: alone is no condition", "POST", "/orders/o1/pay", map[string]string{"order/o1": "paid"}, "pay"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := httptest.NewRequest(tc.method, tc.path, nil)
			h.Header.Set("Accept", "application/json")
			in := NewRequest(h, nil)
			in.States = &fakeStates{values: tc.values}
			m, ok := tab.Match(in)
			switch {
			case tc.want == "" && ok:
				t.Fatalf("matched %s, want none", m.Route.Name)
			case tc.want != "" && (!ok || m.Route.Name != tc.want):
				t.Fatalf("matched %v (%v), want %s", m.Route, ok, tc.want)
			}
		})
	}
}

// TestStateReadLast: the state is read only for a route whose other
// conditions held, and a route whose read failed does not match.
func TestStateReadLast(t *testing.T) {
	t.Parallel()
	tab := compile(t, orderStates)
	h := httptest.NewRequest("GET", "/orders/o1", nil) // no Accept: pending's header fails first
	in := NewRequest(h, nil)
	fs := &fakeStates{values: map[string]string{"order/o1": "paid"}}
	in.States = fs
	if m, ok := tab.Match(in); !ok || m.Route.Name != "paid" {
		t.Fatalf("matched %v, %v; want paid", m.Route, ok)
	}
	if fs.reads != 1 {
		t.Fatalf("%d state reads, want 1 (pending's header failed before its state)", fs.reads)
	}
	in = NewRequest(httptest.NewRequest("GET", "/orders/o1", nil), nil)
	in.States = &fakeStates{fail: true}
	if m, ok := tab.Match(in); ok {
		t.Fatalf("matched %s with an unreadable state", m.Route.Name)
	}
	in = NewRequest(httptest.NewRequest("GET", "/orders/o1", nil), nil) // no reader: a table served without states
	if m, ok := tab.Match(in); ok {
		t.Fatalf("matched %s without a state reader", m.Route.Name)
	}
}

// TestExplainState: a state that is not what the route wants is a
// near-miss reason that names the state, its key, its value and the one
// wanted, and counts as a condition: a route whose header held and whose
// state failed ranks above one whose header failed.
func TestExplainState(t *testing.T) {
	t.Parallel()
	tab := compile(t, orderStates)
	h := httptest.NewRequest("GET", "/orders/o1", nil)
	h.Header.Set("Accept", "application/json")
	in := NewRequest(h, nil)
	in.States = &fakeStates{values: map[string]string{"order/o1": "refunded"}}
	if _, ok := tab.Match(in); ok {
		t.Fatal("matched")
	}
	near := tab.Explain(in)
	if len(near) < 2 {
		t.Fatalf("near misses = %+v", near)
	}
	if near[0].Route != "pending" || near[0].Reason != `state order ["o1"] is "refunded", want "Started"` {
		t.Errorf("first near miss = %+v", near[0])
	}
	if near[1].Route != "paid" || near[1].Reason != `state order ["o1"] is "refunded", want "paid"` {
		t.Errorf("second near miss = %+v", near[1])
	}
	keyless := compile(t, "routes: [{ name: list, path: /todo, state: { name: todo, is: one-item }, respond: {} }]")
	in = NewRequest(httptest.NewRequest("GET", "/todo", nil), nil)
	in.States = &fakeStates{}
	if near := keyless.Explain(in); len(near) != 1 || near[0].Reason != `state todo is "Started", want "one-item"` {
		t.Errorf("keyless near misses = %+v", near)
	}
	in.States = &fakeStates{fail: true}
	if near := keyless.Explain(in); len(near) != 1 || near[0].Reason != `state todo could not be read, want "one-item"` {
		t.Errorf("unreadable near misses = %+v", near)
	}
}
