package adminclient_test

import (
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/scenariomock/scenariomock/adminclient"
)

// TestStates sets, reads, lists and resets route states, a session's
// among them, against a real server.
func TestStates(t *testing.T) {
	t.Parallel()
	url, c, _ := serve(t, `
routes:
  - { name: list, method: GET, path: /todo, state: { name: todo, is: one-item }, respond: { body: '["milk"]' } }
`)
	if _, err := c.AddScenarios(ctx(t), []byte("session: alpha\nroutes:\n  - { name: list, method: GET, path: /todo, state: { name: todo, is: one-item }, respond: { body: alpha } }\n")); err != nil {
		t.Fatal(err)
	}
	if err := c.SetState(ctx(t), adminclient.StateRef{Name: "todo", Session: "alpha"}, "one-item"); err != nil {
		t.Fatal(err)
	}
	if v, err := c.State(ctx(t), adminclient.StateRef{Name: "todo"}); err != nil || v != "Started" {
		t.Fatalf("State(todo) = %q, %v; want Started (alpha's is its own)", v, err)
	}
	req, _ := http.NewRequest("GET", url+"/todo", nil)
	req.Header.Set("X-Scenariomock-Session", "alpha")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "alpha" {
		t.Fatalf("alpha's GET /todo = %d %q", resp.StatusCode, body)
	}
	states, err := c.States(ctx(t))
	if err != nil || len(states) != 1 || states[0] != (adminclient.State{Session: "alpha", Name: "todo", Value: "one-item"}) {
		t.Fatalf("States = %+v, %v", states, err)
	}
	var se *adminclient.StatusError
	if err := c.SetState(ctx(t), adminclient.StateRef{Name: "tood"}, "x"); !errors.As(err, &se) || se.StatusCode != 404 {
		t.Fatalf("SetState of a misspelt name = %v, want a 404", err)
	}
	if err := c.ResetStates(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if states, _ := c.States(ctx(t)); len(states) != 0 {
		t.Fatalf("States after ResetStates = %+v", states)
	}
}
