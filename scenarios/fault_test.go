package scenarios

import (
	"testing"
	"time"
)

// TestFaultForms: the short form is the long form with its defaults, and
// each field of the long form lands where the server reads it.
func TestFaultForms(t *testing.T) {
	t.Parallel()
	set, err := LoadBytes("s.yaml", []byte(`
routes:
  - { path: /short, respond: { fault: connection-reset } }
  - { path: /lost, method: POST, respond: { status: 201, body: { id: 1 }, fault: { kind: connection-reset, after: processing } } }
  - { path: /some, respond: { body: hi, fault: { kind: empty-response, chance: 0.2 } } }
  - { path: /partial, respond: { body: hello, fault: { kind: partial-body, bytes: 2 } } }
  - { path: /half, respond: { body: hello, fault: partial-body } }
  - { path: /slow, respond: { body: hello, fault: { kind: slow-body, over: 5s } } }
  - { path: /slow3, respond: { body: hello, fault: { kind: slow-body, over: 1s, chunks: 3, after: processing } } }
  - { path: /hang, respond: { fault: hang } }
  - { path: /never, respond: { fault: { kind: hang, chance: 0 } } }
  - { path: /tmpl, respond: { template: true, body: '{{ .Call }}', fault: partial-body } }
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Fault{
		"/short":   {Kind: ConnectionReset, After: AfterArrival, Chance: 1, Bytes: -1},
		"/lost":    {Kind: ConnectionReset, After: AfterProcessing, Chance: 1, Bytes: -1},
		"/some":    {Kind: EmptyResponse, After: AfterArrival, Chance: 0.2, Bytes: -1},
		"/partial": {Kind: PartialBody, After: AfterArrival, Chance: 1, Bytes: 2},
		"/half":    {Kind: PartialBody, After: AfterArrival, Chance: 1, Bytes: -1},
		"/slow":    {Kind: SlowBody, After: AfterArrival, Chance: 1, Bytes: -1, Over: 5 * time.Second, Chunks: DefaultSlowChunks},
		"/slow3":   {Kind: SlowBody, After: AfterProcessing, Chance: 1, Bytes: -1, Over: time.Second, Chunks: 3},
		"/hang":    {Kind: Hang, After: AfterArrival, Chance: 1, Bytes: -1},
		"/never":   {Kind: Hang, After: AfterArrival, Chance: 0, Bytes: -1},
		"/tmpl":    {Kind: PartialBody, After: AfterArrival, Chance: 1, Bytes: -1},
	}
	for _, r := range set.Routes() {
		f := r.Responses[0].Fault
		if f == nil {
			t.Errorf("%s: no fault", r.Path)
			continue
		}
		got := *f
		got.Pos = Pos{}
		if got != want[r.Path] {
			t.Errorf("%s: fault %+v, want %+v", r.Path, got, want[r.Path])
		}
	}
	if r := set.Routes()[1].Responses[0]; r.Status != 201 || string(r.Body) != `{"id":1}` {
		t.Errorf("a fault after processing keeps its answer: %d %s", r.Status, r.Body)
	}
}
