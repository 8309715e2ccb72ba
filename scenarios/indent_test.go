package scenarios

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDiagnoseIndentAnyLine runs the indentation diagnosis on every line of
// every test file, with every message it explains: whatever the lines, it
// must answer a line of the file and never panic.
func TestDiagnoseIndentAnyLine(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/*/*.yaml")
	if len(files) == 0 {
		t.Fatal("no test files")
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := splitLines(data)
		for line := 0; line <= len(lines)+1; line++ {
			for msg := range indentMessages {
				at, col, plain, ok := diagnoseIndent(lines, line, msg)
				if ok && (at < 1 || at > line || col < 1 || plain == "") {
					t.Errorf("%s line %d: diagnosis at %d:%d %q", path, line, at, col, plain)
				}
			}
		}
	}
}
