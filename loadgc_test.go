package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// gcPercent reads the collector's GOGC setting without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// TestRelaxGC checks that the first load of a large set runs with the
// collector off up to its bound, that of a small one (an OpenAPI document
// beside it not counting) at the tighter pace, that restore puts back
// what was there, and that GOGC or GOMEMLIMIT set by the user is left
// alone. Not parallel: the settings are the process's.
func TestRelaxGC(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, 20<<20) // 16 bytes of heap a byte: past minLoadHeap
	if err := os.WriteFile(filepath.Join(dir, "routes.yaml"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	withSpec := t.TempDir()
	for name, size := range map[string]int{"stripe.yaml": 100, "spec3.json": 8 << 20} {
		if err := os.WriteFile(filepath.Join(withSpec, name), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	percent, limit := gcPercent(), debug.SetMemoryLimit(-1)

	for _, tc := range []struct {
		name        string
		paths       []string
		wantPercent int
		wantLimit   int64
	}{
		{"none", []string{"testdata-that-does-not-exist", ""}, smallLoadGCPercent, limit},
		{"small beside a spec", []string{withSpec}, smallLoadGCPercent, limit},
		{"spec named", []string{filepath.Join(withSpec, "spec3.json")}, -1, minLoadHeap},
		{"large", []string{dir}, -1, loadHeapPerByte * int64(len(big))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			restore := relaxGC(tc.paths)
			if p := gcPercent(); p != tc.wantPercent {
				t.Errorf("GOGC during the load = %d, want %d", p, tc.wantPercent)
			}
			if got := debug.SetMemoryLimit(-1); got != tc.wantLimit {
				t.Errorf("memory limit during the load = %d, want %d", got, tc.wantLimit)
			}
			restore()
			if p, l := gcPercent(), debug.SetMemoryLimit(-1); p != percent || l != limit {
				t.Errorf("after restore: GOGC %d, limit %d; want %d, %d as before", p, l, percent, limit)
			}
		})
	}

	t.Run("user's GOGC", func(t *testing.T) {
		t.Setenv("GOGC", "50")
		restore := relaxGC([]string{dir})
		defer restore()
		if p, l := gcPercent(), debug.SetMemoryLimit(-1); p != percent || l != limit {
			t.Errorf("with GOGC set: GOGC %d, limit %d; want %d, %d unchanged", p, l, percent, limit)
		}
	})
}
