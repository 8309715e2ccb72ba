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

// relaxMinBytes is the size of scenario files from which relaxGC turns
// the collector off: below it a set loads in milliseconds at any pace.
const relaxMinBytes = 1 << 20

// smallLoadGCPercent is the collector's pace while a small set loads. What
// such a load can still make large is an OpenAPI document it names, whose
// load keeps most of what it allocates (Stripe's: 97 of 117 MB): at
// GOGC=100 the parse runs past its last collection and peaks at the
// whole, while at 50 the collector keeps up. Measured on Stripe's spec
// (`serve --example stripe`, VmHWM at health, median of 5): 155.7 MB with
// the collector off, 154.0 at 100, 141.6 at 50 for 90 ms more CPU, 140.4
// at 30 for 110.
const smallLoadGCPercent = 50

// relaxGC sets the garbage collector's pace for the first load of the
// scenario files at paths, and returns what puts it back as it was.
//
// A large set (relaxMinBytes of YAML or more) loads with the collector off
// until the heap reaches a bound. At GOGC=100 a load of 100,000 routes
// collected some 25 times and spent a fifth of its CPU marking a heap
// that only grows: a load allocates what it keeps, and parsing garbage.
// The bound is minLoadHeap, or loadHeapPerByte per byte of the files for
// a larger set, so that a load never runs into it and the collector runs
// as rarely as the heap allows; the peak is what the load reaches at the
// default pace.
//
// A small set loads at smallLoadGCPercent, for the OpenAPI documents it
// may name. GOGC or GOMEMLIMIT in the environment is the user's choice:
// then nothing changes.
func relaxGC(paths []string) (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	size := filesSize(paths)
	if size < relaxMinBytes {
		percent := debug.SetGCPercent(smallLoadGCPercent)
		return func() { debug.SetGCPercent(percent) }
	}
	limit := max(int64(minLoadHeap), loadHeapPerByte*size)
	percent := debug.SetGCPercent(-1)
	before := debug.SetMemoryLimit(limit)
	return func() {
		debug.SetMemoryLimit(before)
		debug.SetGCPercent(percent)
	}
}

// filesSize is the size of the scenario files at paths: a file named,
// and the *.yaml and *.yml files below a directory named, as the loader
// reads them (an OpenAPI document beside them is not a scenario file).
// It only estimates: whatever cannot be read counts for nothing.
func filesSize(paths []string) int64 {
	var n int64
	for _, p := range paths {
		_ = filepath.WalkDir(p, func(path string, e fs.DirEntry, err error) error {
			if err != nil || !e.Type().IsRegular() {
				return nil
			}
			if ext := filepath.Ext(path); path != p && ext != ".yaml" && ext != ".yml" {
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
