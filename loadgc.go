package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
)

// loadHeapPerByte is how many bytes of heap a byte of scenario files
// may take while it loads: a set of 100,000 routes (14 MB of YAML) peaks
// at some 10 times its size, the part that outlives the load included.
const loadHeapPerByte = 16

// minLoadHeap is the heap a first load may grow to before the collector
// runs: a little under the peak that 100,000 routes reach anyway with
// the collector's default pace.
const minLoadHeap = 256 << 20

// relaxGC lets the first load of the scenario files at paths run with
// the garbage collector off until the heap reaches a bound, and returns
// what puts the collector back as it was. At GOGC=100 a load of 100,000
// routes collected some 25 times and spent a fifth of its CPU marking a
// heap that only grows: a load allocates what it keeps, and parsing
// garbage. The bound is minLoadHeap, or loadHeapPerByte per byte of the
// files for a larger set, so that a load never runs into it and the
// collector runs as rarely as the heap allows; the peak is what the load
// reaches at the default pace. GOGC or GOMEMLIMIT in the environment is
// the user's choice: then nothing changes.
func relaxGC(paths []string) (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := max(int64(minLoadHeap), loadHeapPerByte*filesSize(paths))
	percent := debug.SetGCPercent(-1)
	before := debug.SetMemoryLimit(limit)
	return func() {
		debug.SetMemoryLimit(before)
		debug.SetGCPercent(percent)
	}
}

// filesSize is the size of the regular files at paths and below them.
// It only estimates: whatever cannot be read counts for nothing.
func filesSize(paths []string) int64 {
	var n int64
	for _, p := range paths {
		_ = filepath.WalkDir(p, func(_ string, e fs.DirEntry, err error) error {
			if err != nil || !e.Type().IsRegular() {
				return nil
			}
			if info, err := e.Info(); err == nil {
				n += info.Size()
			}
			return nil
		})
	}
	return n
}
