package server

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestProblemTypesDocumented: each built-in problem type has its row in
// the README's "Problem types" table, under the anchor its URI's fragment
// names, with its status and title, so that a type URI dereferences to
// what it means.
func TestProblemTypesDocumented(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, pt := range builtinProblemTypes {
		frag, ok := strings.CutPrefix(pt.uri, problemTypes)
		if !ok || frag == "" || seen[frag] {
			t.Errorf("type %q: want a fragment of its own after %s", pt.uri, problemTypes)
			continue
		}
		seen[frag] = true
		row := fmt.Sprintf("| <a id=%q></a>`%s` | %d | %s |", frag, frag, pt.status, pt.title)
		if !strings.Contains(string(readme), row) {
			t.Errorf("README.md has no row %s", row)
		}
	}
}
