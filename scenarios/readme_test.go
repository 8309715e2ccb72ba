package scenarios

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// wholeDocument tells a README snippet that is a scenario file of its own
// from a fragment of one (a when: block, a respond: block): its first key is
// one that only the top of a file has.
var wholeDocument = regexp.MustCompile(`^(name|defaults|collections|webhooks|fallback|cors|routes):`)

// namesSpec finds an openapi: block, whose spec a snippet does not come with.
var namesSpec = regexp.MustCompile(`(?m)^openapi:`)

// TestReadmeSnippetsLoad loads every YAML snippet of the README that is a
// whole scenario file, so that a reader who copies one gets a file that
// validate accepts. Snippets with an elided part ("...") and those that
// name an OpenAPI document (a file the snippet does not come with) are
// left out.
func TestReadmeSnippetsLoad(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	type snippet struct {
		line int // of the opening fence, 1-based
		text string
	}
	var snippets []snippet
	var cur *snippet
	indent := ""
	for i, line := range strings.Split(string(readme), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case cur == nil && trimmed == "```yaml":
			indent = line[:len(line)-len(trimmed)]
			cur = &snippet{line: i + 1}
		case cur != nil && strings.HasPrefix(trimmed, "```"):
			snippets = append(snippets, *cur)
			cur = nil
		case cur != nil:
			cur.text += strings.TrimPrefix(line, indent) + "\n"
		}
	}
	n := 0
	for _, s := range snippets {
		first := ""
		for _, l := range strings.Split(s.text, "\n") {
			if l != "" && !strings.HasPrefix(l, "#") {
				first = l
				break
			}
		}
		if !wholeDocument.MatchString(first) || strings.Contains(s.text, "...\n") || namesSpec.MatchString(s.text) {
			continue
		}
		n++
		dir := t.TempDir()
		p := filepath.Join(dir, "snippet.yaml")
		if err := os.WriteFile(p, []byte(s.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p); err != nil {
			t.Errorf("README.md:%d: the snippet does not load:\n%v", s.line, err)
		}
	}
	if n < 5 {
		t.Errorf("found %d whole scenario files among the README's %d YAML snippets; want at least 5", n, len(snippets))
	}
}
