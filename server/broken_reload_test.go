package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"
)

// reloadState is the part of GET /__admin/scenarios these tests read.
type reloadState struct {
	Version    int64
	LastReload struct {
		At     time.Time
		OK     bool
		Errors []string
	}
}

func (l *live) state() (reloadState, error) {
	var st reloadState
	r, err := doCtx(context.Background(), "GET", l.url+"/__admin/scenarios", "")
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal([]byte(r.body), &st); err != nil {
		return st, fmt.Errorf("admin body %q: %v", r.body, err)
	}
	return st, nil
}

// reloaded waits for a reload attempted at or after since whose outcome
// check accepts ("" means accepted), and returns the state.
func (l *live) reloaded(t *testing.T, since time.Time, check func(st reloadState) string) reloadState {
	t.Helper()
	var st reloadState
	eventually(t, patience, func() string {
		var err error
		if st, err = l.state(); err != nil {
			return err.Error()
		}
		if st.LastReload.At.Before(since) {
			return fmt.Sprintf("no reload since %s (last at %s)", since, st.LastReload.At)
		}
		return check(st)
	})
	return st
}

// answers checks that GET path answers 200 body now, without waiting.
func (l *live) answers(t *testing.T, path, body string) {
	t.Helper()
	if r := do(t, "GET", l.url+path, ""); r.status != 200 || r.body != body {
		t.Errorf("GET %s = %d %q, want 200 %q from the last good scenarios", path, r.status, r.body, body)
	}
}

// TestBrokenReloadKeepsServing writes every broken file of the loader's
// corpus (and a generated deep nesting) over a good scenario file under a
// live watcher. After each, the good route must still answer, and the
// admin API must show the failed reload with exactly the problems Load
// reports, each as file:line:col.
func TestBrokenReloadKeepsServing(t *testing.T) {
	t.Parallel()
	l := startLive(t, map[string]string{"s.yaml": route("/x", "good")}, func(dir string) []string { return []string{dir} })
	l.serves(t, "/x", "good")
	path := filepath.Join(l.dir, "s.yaml")
	positioned := regexp.MustCompile(`^` + regexp.QuoteMeta(path) + `:[1-9][0-9]*:[1-9][0-9]*: .`)

	type edit struct{ name, content string }
	var edits []edit
	files, err := filepath.Glob("../scenarios/testdata/broken/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no broken corpus: %v", err)
	}
	for _, f := range files {
		if _, err := scenarios.Load(f); err == nil {
			continue // a file of the corpus that must load (BOM, CRLF): not an edit that breaks
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		edits = append(edits, edit{strings.TrimSuffix(filepath.Base(f), ".yaml"), string(data)})
	}
	edits = append(edits, edit{"5000 nested lists", "routes:\n  - path: /x\n    respond:\n      body: " +
		strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n"})

	for _, e := range edits {
		// Not parallel: the edits are successive saves of one file.
		t.Run(e.name, func(t *testing.T) {
			before := time.Now()
			writeFile(t, path, e.content)
			_, loadErr := scenarios.Load(path)
			var want []string
			for _, p := range scenarios.Problems(loadErr) {
				want = append(want, p.Error())
			}
			if len(want) == 0 {
				t.Fatalf("%s loads; it is meant to be broken", e.name)
			}
			st := l.reloaded(t, before, func(st reloadState) string {
				if st.LastReload.OK || !slices.Equal(st.LastReload.Errors, want) {
					return fmt.Sprintf("lastReload ok=%v errors=%q, want the failure %q", st.LastReload.OK, st.LastReload.Errors, want)
				}
				return ""
			})
			for _, e := range st.LastReload.Errors {
				if !positioned.MatchString(e) {
					t.Errorf("error %q does not start with %s:line:col", e, path)
				}
			}
			if st.Version != 1 {
				t.Errorf("version %d, want 1: a failed reload must not count", st.Version)
			}
			l.answers(t, "/x", "good")
		})
	}

	// A file saved with CRLF line endings is fine: it loads and serves.
	before := time.Now()
	writeFile(t, path, strings.ReplaceAll(route("/x", "crlf"), "\n", "\r\n"))
	l.reloaded(t, before, func(st reloadState) string {
		if !st.LastReload.OK || st.Version != 2 {
			return fmt.Sprintf("after the CRLF save: ok=%v version %d errors %q, want ok and version 2", st.LastReload.OK, st.Version, st.LastReload.Errors)
		}
		return ""
	})
	l.answers(t, "/x", "crlf")
}

// TestBrokenReloadSymlinkLoops puts symbolic link loops in the watched
// directory. Each gives a clear error or is ignored; the good route keeps
// answering either way, and once the loop is gone reloads succeed again.
func TestBrokenReloadSymlinkLoops(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// links maps a link name to its target, created in this order.
		links [][2]string
		// wantErrs are substrings the failed reload's errors must hold,
		// in order; none means the links are ignored.
		wantErrs []string
	}{
		{"file loop", [][2]string{{"a.yaml", "b.yaml"}, {"b.yaml", "a.yaml"}},
			[]string{"a.yaml: " + syscall.ELOOP.Error(), "b.yaml: " + syscall.ELOOP.Error()}},
		{"self loop", [][2]string{{"self.yaml", "self.yaml"}}, []string{"self.yaml: " + syscall.ELOOP.Error()}},
		{"directory loop", [][2]string{{"loop", "."}}, nil},
		{"directory loop named .yaml", [][2]string{{"loop.yaml", "."}}, []string{"loop.yaml: is a directory, not a scenario file"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := startLive(t, map[string]string{"s.yaml": route("/x", "good")}, func(dir string) []string { return []string{dir} })
			l.serves(t, "/x", "good")
			before := time.Now()
			for _, link := range tc.links {
				if err := os.Symlink(link[1], filepath.Join(l.dir, link[0])); err != nil {
					t.Skipf("cannot make symbolic links here: %v", err)
				}
			}
			if len(tc.wantErrs) > 0 {
				l.reloaded(t, before, func(st reloadState) string {
					if st.LastReload.OK || len(st.LastReload.Errors) != len(tc.wantErrs) {
						return fmt.Sprintf("ok=%v errors=%q, want %d errors: %q", st.LastReload.OK, st.LastReload.Errors, len(tc.wantErrs), tc.wantErrs)
					}
					for i, w := range tc.wantErrs {
						if e := st.LastReload.Errors[i]; !strings.HasPrefix(e, l.dir) || !strings.HasSuffix(e, w) {
							return fmt.Sprintf("error %q, want %s/…%s", e, l.dir, w)
						}
					}
					return ""
				})
				l.answers(t, "/x", "good")
				before = time.Now()
				for _, link := range tc.links {
					if err := os.Remove(filepath.Join(l.dir, link[0])); err != nil {
						t.Fatal(err)
					}
				}
				l.reloaded(t, before, func(st reloadState) string {
					if !st.LastReload.OK {
						return fmt.Sprintf("with the loop gone: errors %q, want a good reload", st.LastReload.Errors)
					}
					return ""
				})
			}
			// The watcher still works (and ignored loops stay ignored).
			st, err := l.state()
			if err != nil {
				t.Fatal(err)
			}
			before = time.Now()
			writeFile(t, filepath.Join(l.dir, "s.yaml"), route("/x", "v2"))
			l.reloaded(t, before, func(now reloadState) string {
				if !now.LastReload.OK || now.Version != st.Version+1 {
					return fmt.Sprintf("ok=%v version=%d errors=%q, want a good reload to version %d", now.LastReload.OK, now.Version, now.LastReload.Errors, st.Version+1)
				}
				return ""
			})
			l.answers(t, "/x", "v2")
		})
	}
}

// TestBrokenReloadFileDeletedMidReload writes and deletes a second file
// again and again while requests are served, so that reloads find it
// listed and then gone, or half written. No request may fail or get a
// wrong answer, and the end state must be right.
func TestBrokenReloadFileDeletedMidReload(t *testing.T) {
	t.Parallel()
	l := startLive(t, map[string]string{"a.yaml": route("/x", "good")}, func(dir string) []string { return []string{dir} })
	l.serves(t, "/x", "good")
	b := filepath.Join(l.dir, "b.yaml")

	var stop atomic.Bool
	var bad, served atomic.Int64
	var wg sync.WaitGroup
	report := func(format string, args ...any) {
		if bad.Add(1) <= 5 {
			t.Logf(format, args...)
		}
	}
	for i := 0; i < 4; i++ {
		wg.Go(func() {
			for !stop.Load() {
				r, err := doCtx(context.Background(), "GET", l.url+"/x", "")
				if err != nil || r.status != 200 || r.body != "good" {
					report("GET /x: %v %d %q", err, r.status, r.body)
					continue
				}
				// /b comes and goes: it is there or it is a clean 404.
				r, err = doCtx(context.Background(), "GET", l.url+"/b", "")
				if err != nil || !(r.status == 200 && (r.body == "B" || r.body == "B-final") || r.status == 404 && strings.Contains(r.body, `"status":404`)) {
					report("GET /b: %v %d %q", err, r.status, r.body)
					continue
				}
				served.Add(1)
			}
		})
	}
	for i := 0; i < 60; i++ {
		writeFile(t, b, route("/b", "B"))
		time.Sleep(time.Duration(i%7) * 5 * time.Millisecond) // vary the phase against the 20ms debounce
		if err := os.Remove(b); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(i%5) * 4 * time.Millisecond)
	}
	writeFile(t, b, route("/b", "B-final"))
	l.serves(t, "/b", "B-final")
	stop.Store(true)
	wg.Wait()
	if bad.Load() != 0 || served.Load() == 0 {
		t.Errorf("%d failed or wrong answers, %d good, while a file came and went", bad.Load(), served.Load())
	}
	before := time.Now()
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	l.reloaded(t, before, func(st reloadState) string {
		if !st.LastReload.OK {
			return fmt.Sprintf("after the last deletion: errors %q, want a good reload", st.LastReload.Errors)
		}
		return ""
	})
	l.missing(t, "/b")
	l.answers(t, "/x", "good")
}

// TestBrokenReloadHugeFile drops a 50 MB file into the watched directory.
// It is written under a dot name (which Load skips) and renamed into
// place, as a copy tool or a deployment does, so that no reload reads it
// half written. The reload must fail on the size limit, not parse it.
func TestBrokenReloadHugeFile(t *testing.T) {
	t.Parallel()
	l := startLive(t, map[string]string{"s.yaml": route("/x", "good")}, func(dir string) []string { return []string{dir} })
	l.serves(t, "/x", "good")
	tmp, big := filepath.Join(l.dir, ".big.yaml.part"), filepath.Join(l.dir, "big.yaml")
	f, err := os.Create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	line := strings.Repeat("#", 79) + "\n"
	for n := 0; n < 50<<20; n += len(line) {
		w.WriteString(line)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if err := os.Rename(tmp, big); err != nil {
		t.Fatal(err)
	}
	want := big + ": the file is 52428800 bytes (50.0 MiB); a scenario file may be at most 16.0 MiB"
	st := l.reloaded(t, before, func(st reloadState) string {
		if st.LastReload.OK || !slices.Equal(st.LastReload.Errors, []string{want}) {
			return fmt.Sprintf("ok=%v errors=%q, want [%q]", st.LastReload.OK, st.LastReload.Errors, want)
		}
		return ""
	})
	if st.Version != 1 {
		t.Errorf("version %d, want 1", st.Version)
	}
	l.answers(t, "/x", "good")
	before = time.Now()
	if err := os.Remove(big); err != nil {
		t.Fatal(err)
	}
	l.reloaded(t, before, func(st reloadState) string {
		if !st.LastReload.OK {
			return fmt.Sprintf("with the big file gone: errors %q, want a good reload", st.LastReload.Errors)
		}
		return ""
	})
	l.answers(t, "/x", "good")
}
