package scenarios

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// watching runs a Watcher on paths and counts its reloads.
type watching struct {
	reloads atomic.Int64
	stop    func()
}

func watch(t *testing.T, debounce time.Duration, paths ...string) *watching {
	t.Helper()
	w, err := NewWatcher(paths, debounce, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ws := &watching{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Run(ctx, nil, func() []string { ws.reloads.Add(1); return nil })
	}()
	ws.stop = func() { cancel(); <-done }
	t.Cleanup(ws.stop)
	return ws
}

// patience is how long a test waits for something that takes
// milliseconds: generous, because the CI machine is a loaded 2-core box
// running these tests under -race, and waiting costs nothing when the
// condition holds early.
const patience = 30 * time.Second

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(patience); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", patience, what)
		}
	}
}

func TestWatcherDebouncesABurst(t *testing.T) {
	t.Parallel()
	dir := write(t, map[string]string{"s.yaml": "routes: []"})
	// The debounce is long so that a loaded machine, pausing the writer
	// between two writes, still fits the burst inside one.
	const debounce = time.Second
	ws := watch(t, debounce, dir)
	start := time.Now()
	for i := 0; i < 20; i++ { // an editor's burst, well inside one debounce
		if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte("routes: []\n# "+string(rune('a'+i))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	burst := time.Since(start)
	waitFor(t, "no reload after the burst", func() bool { return ws.reloads.Load() >= 1 })
	time.Sleep(2 * debounce) // would a second, late reload come?
	if n := ws.reloads.Load(); n != 1 {
		t.Errorf("%d reloads for one burst of 20 writes in %s, want 1", n, burst)
	}
}

func TestWatcherIgnoresUnrelatedWrites(t *testing.T) {
	t.Parallel()
	dir := write(t, map[string]string{"s.yaml": "routes: []", "notes.txt": "", ".s.yaml.swp": ""})
	other := write(t, map[string]string{"x.yaml": "", "unrelated.yaml": ""})
	ws := watch(t, 20*time.Millisecond, dir, filepath.Join(other, "x.yaml"))
	// Writes to files that are not scenarios, and to a sibling of a file
	// named by path, are not changes.
	for _, p := range []string{filepath.Join(dir, "notes.txt"), filepath.Join(dir, ".s.yaml.swp"), filepath.Join(other, "unrelated.yaml")} {
		if err := os.WriteFile(p, []byte("typing"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if n := ws.reloads.Load(); n != 0 {
		t.Errorf("%d reloads for writes to non-scenario files, want 0", n)
	}
	if err := os.WriteFile(filepath.Join(other, "x.yaml"), []byte("routes: []"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a write to a file named by path did not reload", func() bool { return ws.reloads.Load() == 1 })
}

func TestWatcherFollowsNewDirectories(t *testing.T) {
	t.Parallel()
	dir := write(t, map[string]string{"s.yaml": "routes: []"})
	ws := watch(t, 20*time.Millisecond, dir)
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "creating a directory did not reload", func() bool { return ws.reloads.Load() >= 1 })
	n := ws.reloads.Load()
	time.Sleep(50 * time.Millisecond)
	if err := os.WriteFile(filepath.Join(dir, "a", "b", "new.yaml"), []byte("routes: []"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a file in a new nested directory was not seen", func() bool { return ws.reloads.Load() > n })
}

// TestWatcherStops checks that Run returns promptly when its context ends
// and leaves no goroutine behind (fsnotify's reader included).
func TestWatcherStops(t *testing.T) {
	dir := write(t, map[string]string{"s.yaml": "routes: []"})
	before := runtime.NumGoroutine()
	ws := watch(t, 20*time.Millisecond, dir)
	start := time.Now()
	ws.stop()
	if el := time.Since(start); el > 10*time.Second { // promptly, on a loaded machine
		t.Errorf("Run took %s to return", el)
	}
	waitFor(t, "goroutines left after the watcher stopped", func() bool { return runtime.NumGoroutine() <= before })
}
