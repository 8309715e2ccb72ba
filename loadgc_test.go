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

// TestRelaxGC checks that the first load runs with the collector off up
// to its bound, that restore puts back what was there, and that GOGC or
// GOMEMLIMIT set by the user is left alone. Not parallel: the settings
// are the process's.
func TestRelaxGC(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, 20<<20) // 16 bytes of heap a byte: past minLoadHeap
	if err := os.WriteFile(filepath.Join(dir, "routes.yaml"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	percent, limit := gcPercent(), debug.SetMemoryLimit(-1)

	for _, tc := range []struct {
		name      string
		paths     []string
		wantLimit int64
	}{
		{"small", []string{"testdata-that-does-not-exist", ""}, minLoadHeap},
		{"large", []string{dir}, loadHeapPerByte * int64(len(big))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			restore := relaxGC(tc.paths)
			if p := gcPercent(); p != -1 {
				t.Errorf("GOGC during the load = %d, want -1 (off)", p)
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
