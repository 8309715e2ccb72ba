package scenarios

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watcher notices changes to scenario files and the body files they read.
// It watches directories, not files, because editors save by renaming: vim
// moves the old file aside and writes a new one, many editors write a
// temporary file and rename it over the original, sed -i does the same,
// and Kubernetes swaps a ..data symlink. A file watch would follow the old
// inode and go quiet; a directory watch sees every one of these.
//
// Directories given as paths are watched recursively (new subdirectories
// are picked up); for a file given as a path its directory is watched and
// only events on that file count. A Watcher is used by one goroutine: Run.
type Watcher struct {
	paths    []string
	debounce time.Duration
	maxWait  time.Duration
	log      *slog.Logger
	fsw      *fsnotify.Watcher

	// The state below is touched only by NewWatcher and then Run.
	recursive map[string]bool // directories inside a directory path
	files     map[string]bool // files given as paths and body files, cleaned
	deps      []string
}

// NewWatcher starts watching paths. Call it before loading the scenarios
// the first time, so that an edit made during that load is not missed.
// debounce is how long changes must settle before a reload (tens of
// milliseconds absorb an editor's burst of events).
func NewWatcher(paths []string, debounce time.Duration, log *slog.Logger) (*Watcher, error) {
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	w := &Watcher{
		paths:    paths,
		debounce: debounce,
		maxWait:  10 * debounce,
		log:      log,
		fsw:      fsw,
	}
	if _, err := w.sync(); err != nil {
		fsw.Close()
		return nil, err
	}
	return w, nil
}

// Run watches until ctx ends. After each burst of relevant changes settles
// it calls reload, which returns the body files the scenarios now read, so
// that their directories are watched too. Run closes the watches before it
// returns; it returns nil when ctx ends.
func (w *Watcher) Run(ctx context.Context, deps []string, reload func() (deps []string)) error {
	defer w.fsw.Close()
	w.deps = deps
	added, err := w.sync()
	if err != nil {
		w.log.Warn("watch", "error", err)
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var first time.Time // first event of the pending burst; zero when none
	if added {
		// The body files' directories are watched only now: a change
		// made to one since the first load read it went unseen. Reload
		// to be sure (unchanged content is not reloaded).
		first = time.Now()
		timer.Reset(w.debounce)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return nil
			}
			if !w.relevant(ev) {
				continue
			}
			now := time.Now()
			if first.IsZero() {
				first = now
			}
			// Wait for the burst to settle, but not forever: a file
			// written without pause still reloads every maxWait.
			wait := min(w.debounce, first.Add(w.maxWait).Sub(now))
			timer.Reset(max(wait, 0))
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return nil
			}
			w.log.Warn("watch", "error", err)
			if errors.Is(err, fsnotify.ErrEventOverflow) && first.IsZero() {
				first = time.Now() // events were lost: reload to be sure
				timer.Reset(w.debounce)
			}
		case <-timer.C:
			first = time.Time{}
			// Watch new directories before reading them, so that a file
			// created in a new directory during the reload is seen.
			if _, err := w.sync(); err != nil {
				w.log.Warn("watch", "error", err)
			}
			w.deps = reload()
			added, err := w.sync()
			if err != nil {
				w.log.Warn("watch", "error", err)
			}
			if added {
				// A new body file's directory: a change made to it
				// while the reload read it went unseen.
				first = time.Now()
				timer.Reset(w.debounce)
			}
		}
	}
}

// relevant reports whether an event can change what Load reads. In a
// directory given as a path, any creation, removal or rename counts (new
// files, subdirectories, Kubernetes' ..data swap), and writes count for
// scenario files; the reload is skipped anyway when content is unchanged.
// Elsewhere only the named files and body files count.
func (w *Watcher) relevant(ev fsnotify.Event) bool {
	name := filepath.Clean(ev.Name)
	if w.files[name] {
		return true
	}
	base := filepath.Base(name)
	if strings.HasPrefix(base, "..") {
		return true // Kubernetes ConfigMap update
	}
	if !w.recursive[filepath.Dir(name)] && !w.recursive[name] {
		return false
	}
	if ev.Has(fsnotify.Create) || ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		return true
	}
	return isScenarioName(base)
}

// sync makes the watched directories those the paths and body files need:
// every directory below a directory path, the directory of each file path
// and of each body file. added reports that a directory is watched now
// that was not before.
func (w *Watcher) sync() (added bool, err error) {
	want := map[string]bool{}
	w.recursive = map[string]bool{}
	w.files = map[string]bool{}
	var errs []error
	for _, p := range w.paths {
		info, err := os.Stat(p)
		if err != nil {
			// Gone for now (a rename in progress): watch its directory so
			// that its return is seen.
			w.files[filepath.Clean(p)] = true
			want[filepath.Dir(filepath.Clean(p))] = true
			continue
		}
		if !info.IsDir() {
			w.files[filepath.Clean(p)] = true
			want[filepath.Dir(filepath.Clean(p))] = true
			continue
		}
		_, dirs, err := walk(p)
		errs = append(errs, err)
		for _, d := range dirs {
			d = filepath.Clean(d)
			want[d], w.recursive[d] = true, true
		}
	}
	for _, dep := range w.deps {
		w.files[filepath.Clean(dep)] = true
		want[filepath.Dir(filepath.Clean(dep))] = true
	}
	// fsnotify's own list is the truth: it drops a directory's watch when
	// the directory is deleted, and one deleted and made again needs a new
	// watch.
	watched := map[string]bool{}
	for _, d := range w.fsw.WatchList() {
		watched[d] = true
		if !want[d] {
			_ = w.fsw.Remove(d) // fails when the directory is gone, which is fine
		}
	}
	for d := range want {
		if watched[d] {
			continue
		}
		if err := w.fsw.Add(d); err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("watch %s: %w", d, err))
			}
			continue
		}
		added = true
	}
	return added, errors.Join(errs...)
}
