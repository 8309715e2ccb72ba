package server

import (
	"os"
	"strings"
	"testing"
)

// TestStatesReadmeExample serves the README's route states example as it
// is written there and replays its walk-through.
func TestStatesReadmeExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n### Route states\n")
	if !ok {
		t.Fatal("README.md has no ### Route states section")
	}
	_, rest, ok := strings.Cut(section, "```yaml\n")
	yaml, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("the Route states section has no yaml block")
	}
	_, hs, _ := serveYAML(t, Options{}, yaml)
	h := hs.URL
	for _, step := range []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/orders/ord_1", 200, `{"id":"ord_1","status":"pending"}`},
		{"POST", "/orders/ord_1/pay", 200, `{"id":"ord_1","status":"paid"}`},
		{"GET", "/orders/ord_1", 200, `{"id":"ord_1","status":"paid"}`},
		{"GET", "/orders/ord_2", 200, `{"id":"ord_2","status":"pending"}`},
		{"POST", "/orders/ord_1/pay", 409, `{"error":"order already paid"}`},
	} {
		if r := do(t, step.method, h+step.path, ""); r.status != step.status || r.body != step.body {
			t.Fatalf("%s %s = %d %s, want %d %s (as the README says)", step.method, step.path, r.status, r.body, step.status, step.body)
		}
	}
}
