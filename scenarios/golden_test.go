package scenarios

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestInvalidGolden loads each file in testdata/invalid and compares every
// problem reported, as file:line:col: message, with the file's .golden.
func TestInvalidGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			_, err := Load(path)
			if err == nil {
				t.Fatalf("Load(%s) succeeded, want errors", path)
			}
			var got strings.Builder
			for _, p := range Problems(err) {
				got.WriteString(p.Error() + "\n")
			}
			golden := strings.TrimSuffix(path, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./scenarios -run Golden -update)", err)
			}
			if got.String() != string(want) {
				t.Errorf("problems differ from %s\n--- got\n%s--- want\n%s", golden, got.String(), want)
			}
		})
	}
}
