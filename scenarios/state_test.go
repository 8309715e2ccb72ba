package scenarios

import (
	"strings"
	"testing"
)

// TestRouteState loads the state: forms and checks what they become.
func TestRouteState(t *testing.T) {
	t.Parallel()
	set, err := LoadBytes("states.yaml", []byte(`
routes:
  - name: pending
    method: GET
    path: /orders/{id}
    state: { name: order, per: '{{ .Request.Vars.id }}', is: Started }
    respond: { body: pending }
  - name: pay
    method: POST
    path: /orders/{id}/pay
    state: { name: order, per: '{{ .Request.Vars.id }}', to: paid }
    respond: { body: ok }
  - name: plain
    path: /a
    respond: { body: ok }
`))
	if err != nil {
		t.Fatal(err)
	}
	rs := set.Routes()
	got := rs[0].State
	if got == nil || got.Name != "order" || got.Per == nil || got.Is != StateStarted || got.To != "" || got.IsPos.Line != 6 {
		t.Fatalf("pending's state = %+v", got)
	}
	var b strings.Builder
	if err := got.Per.Execute(&b, map[string]any{"Request": map[string]any{"Vars": map[string]string{"id": "o1"}}}); err != nil || b.String() != "o1" {
		t.Fatalf("per renders %q, %v", b.String(), err)
	}
	if st := rs[1].State; st == nil || st.Is != "" || st.To != "paid" {
		t.Fatalf("pay's state = %+v", st)
	}
	if rs[2].State != nil {
		t.Fatalf("a route without state: has %+v", rs[2].State)
	}
}

// TestRouteStateDescribe: what listings show of a state: block.
func TestRouteStateDescribe(t *testing.T) {
	t.Parallel()
	set, err := LoadBytes("states.yaml", []byte(`
routes:
  - { path: '/a/{id}', state: { name: order, per: '{{ .Request.Vars.id }}', is: Started, to: paid }, respond: {} }
  - { path: /b, state: { name: todo, to: one-item }, respond: {} }
`))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{`state order [{{ .Request.Vars.id }}] is "Started", to "paid"`, `state todo to "one-item"`} {
		if got := set.Routes()[i].State.Describe(); got != want {
			t.Errorf("route %d: Describe() = %s, want %s", i, got, want)
		}
	}
}
