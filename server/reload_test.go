package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"
)

// live is a server with a real watcher on real files, wired as main wires
// them.
type live struct {
	dir  string
	s    *Server
	url  string
	logs *syncBuffer
}

func startLive(t *testing.T, files map[string]string, paths func(dir string) []string) *live {
	t.Helper()
	return startLiveOpts(t, Options{}, files, paths)
}

// startLiveOpts is startLive with options, such as a test clock.
func startLiveOpts(t *testing.T, opts Options, files map[string]string, paths func(dir string) []string) *live {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		writeFile(t, filepath.Join(dir, name), content)
	}
	ps := paths(dir)
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	w, err := scenarios.NewWatcher(ps, 20*time.Millisecond, log)
	if err != nil {
		t.Fatal(err)
	}
	opts.Load, opts.Logger = func() (*scenarios.Set, error) { return scenarios.Load(ps...) }, log
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Run(ctx, s.Deps(), func() []string { _ = s.Reload(); return s.Deps() })
	}()
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		hs.Close()
		cancel()
		<-done
	})
	return &live{dir: dir, s: s, url: hs.URL, logs: logs}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func route(path, body string) string {
	return fmt.Sprintf("routes:\n  - name: r%s\n    path: %s\n    respond: { body: %q }\n", strings.ReplaceAll(path, "/", "-"), path, body)
}

// serves waits until GET path answers body.
func (l *live) serves(t *testing.T, path, body string) {
	t.Helper()
	eventually(t, patience, func() string {
		r, err := doCtx(context.Background(), "GET", l.url+path, "")
		if err != nil {
			return err.Error()
		}
		if r.status != 200 || r.body != body {
			return fmt.Sprintf("GET %s = %d %q, want 200 %q", path, r.status, r.body, body)
		}
		return ""
	})
}

func (l *live) missing(t *testing.T, path string) {
	t.Helper()
	eventually(t, patience, func() string {
		if r := do(t, "GET", l.url+path, ""); r.status != 404 {
			return fmt.Sprintf("GET %s = %d, want 404", path, r.status)
		}
		return ""
	})
}

func TestReloadEditorSaves(t *testing.T) {
	t.Parallel()
	saves := []struct {
		name string
		save func(t *testing.T, path, content string)
	}{
		{"in-place write", func(t *testing.T, path, content string) { writeFile(t, path, content) }},
		{"atomic rename", func(t *testing.T, path, content string) {
			tmp := filepath.Join(filepath.Dir(path), ".s.yaml.tmp123")
			writeFile(t, tmp, content)
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"vim backup and replace", func(t *testing.T, path, content string) {
			// vim with backupcopy=no: move the file aside, write anew, drop the backup.
			if err := os.Rename(path, path+"~"); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(filepath.Dir(path), "4913"), "")
			os.Remove(filepath.Join(filepath.Dir(path), "4913"))
			writeFile(t, path, content)
			os.Remove(path + "~")
		}},
		{"sed -i", func(t *testing.T, path, content string) {
			tmp := filepath.Join(filepath.Dir(path), "sedAb12Cd")
			writeFile(t, tmp, content)
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, as := range []string{"file", "directory"} {
		for _, sv := range saves {
			t.Run(as+"/"+sv.name, func(t *testing.T) {
				t.Parallel()
				l := startLive(t, map[string]string{"s.yaml": route("/x", "v1")}, func(dir string) []string {
					if as == "file" {
						return []string{filepath.Join(dir, "s.yaml")}
					}
					return []string{dir}
				})
				l.serves(t, "/x", "v1")
				for i := 2; i <= 4; i++ {
					sv.save(t, filepath.Join(l.dir, "s.yaml"), route("/x", fmt.Sprintf("v%d", i)))
					l.serves(t, "/x", fmt.Sprintf("v%d", i))
				}
			})
		}
	}
}

func TestReloadInvalidEditKeepsServing(t *testing.T) {
	t.Parallel()
	l := startLive(t, map[string]string{"s.yaml": route("/x", "good")}, func(dir string) []string { return []string{dir} })
	path := filepath.Join(l.dir, "s.yaml")
	writeFile(t, path, "routes:\n  - name: broken\n    path: /x\n    respond: { body: oops, delay: 10 }\n")
	eventually(t, patience, func() string {
		var st struct {
			Version    int
			LastReload struct {
				OK     bool
				Error  string
				Errors []string
			}
		}
		if err := json.Unmarshal([]byte(do(t, "GET", l.url+"/__admin/scenarios", "").body), &st); err != nil {
			return err.Error()
		}
		want := path + `:4:35: route "broken": respond.delay: bad duration "10": missing unit (write 10ms or 10s)`
		if st.LastReload.OK || len(st.LastReload.Errors) != 1 || st.LastReload.Errors[0] != want {
			return fmt.Sprintf("admin lastReload = %+v, want the error %q", st.LastReload, want)
		}
		if summary := "1 problem; the last good scenarios (version 1) keep serving"; st.LastReload.Error != summary {
			return fmt.Sprintf("admin lastReload.error = %q, want %q", st.LastReload.Error, summary)
		}
		if st.Version != 1 {
			return fmt.Sprintf("version %d, want 1 (the failed reload must not count)", st.Version)
		}
		return ""
	})
	l.serves(t, "/x", "good")
	// The admin API shows a failed reload a moment before its log lines
	// are written.
	eventually(t, patience, func() string {
		if !strings.Contains(l.logs.String(), `bad duration \"10\"`) {
			return "the error with its position is not in the log:\n" + l.logs.String()
		}
		return ""
	})
	// Half-written YAML, then the fix.
	writeFile(t, path, "routes:\n  - name: [unclosed\n")
	eventually(t, patience, func() string {
		if !strings.Contains(do(t, "GET", l.url+"/__admin/scenarios", "").body, "s.yaml:2:") {
			return "syntax error not reported"
		}
		return ""
	})
	l.serves(t, "/x", "good")
	writeFile(t, path, route("/x", "fixed"))
	l.serves(t, "/x", "fixed")
	if st := do(t, "GET", l.url+"/__admin/scenarios", "").json(t)["lastReload"].(map[string]any); st["ok"] != true || st["error"] != nil {
		t.Errorf("after the fix lastReload = %v", st)
	}
}

func TestReloadDirectoryAddRemove(t *testing.T) {
	t.Parallel()
	l := startLive(t, map[string]string{"a.yaml": route("/a", "A")}, func(dir string) []string { return []string{dir} })
	l.serves(t, "/a", "A")
	writeFile(t, filepath.Join(l.dir, "b.yaml"), route("/b", "B"))
	l.serves(t, "/b", "B")
	writeFile(t, filepath.Join(l.dir, "nested", "deeper", "c.yml"), route("/c", "C"))
	l.serves(t, "/c", "C")
	writeFile(t, filepath.Join(l.dir, "nested", "deeper", "d.yaml"), route("/d", "D")) // a watch was added for the new directory
	l.serves(t, "/d", "D")
	if err := os.Remove(filepath.Join(l.dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	l.missing(t, "/b")
	if err := os.RemoveAll(filepath.Join(l.dir, "nested")); err != nil {
		t.Fatal(err)
	}
	l.missing(t, "/c")
	l.serves(t, "/a", "A")
	// A directory deleted and made again needs a new watch.
	writeFile(t, filepath.Join(l.dir, "nested", "e.yaml"), route("/e", "E"))
	l.serves(t, "/e", "E")
	writeFile(t, filepath.Join(l.dir, "nested", "e.yaml"), route("/e", "E2"))
	l.serves(t, "/e", "E2")
}

func TestReloadBodyFile(t *testing.T) {
	t.Parallel()
	l := startLive(t, map[string]string{
		"s.yaml":          "routes: [{ path: /f, respond: { bodyFile: bodies/f.json } }]",
		"bodies/f.json":   `{"v":1}`,
		"unrelated/x.txt": "",
	}, func(dir string) []string { return []string{filepath.Join(dir, "s.yaml")} })
	l.serves(t, "/f", `{"v":1}`)
	writeFile(t, filepath.Join(l.dir, "bodies", "f.json"), `{"v":2}`)
	l.serves(t, "/f", `{"v":2}`)
}

func TestReloadKeepsStateOfUnchangedRoutes(t *testing.T) {
	t.Parallel()
	seq := func(name, first string) string {
		return fmt.Sprintf("  - name: %s\n    path: /%s\n    responses: [{ body: %q }, { body: later }]\n", name, name, first)
	}
	l := startLive(t, map[string]string{"s.yaml": "routes:\n" + seq("kept", "first") + seq("edited", "first")},
		func(dir string) []string { return []string{dir} })
	do(t, "GET", l.url+"/kept", "")
	do(t, "GET", l.url+"/edited", "")
	writeFile(t, filepath.Join(l.dir, "s.yaml"), "# moved down a line\nroutes:\n"+seq("kept", "first")+seq("edited", "new first")+route("/marker", "m")[len("routes:\n"):])
	l.serves(t, "/marker", "m")
	if r := do(t, "GET", l.url+"/kept", ""); r.body != "later" {
		t.Errorf("unchanged route restarted its sequence: %q", r.body)
	}
	if r := do(t, "GET", l.url+"/edited", ""); r.body != "new first" {
		t.Errorf("edited route kept its old position: %q", r.body)
	}
}

// TestReloadInFlight checks that a request finishes on the snapshot it
// started with, and that requests running while the file is rewritten
// again and again all get a correct answer.
func TestReloadInFlight(t *testing.T) {
	t.Parallel()
	slow := func(v string) string {
		return fmt.Sprintf("routes:\n  - { path: /slow, respond: { body: %q, delay: 300ms } }\n  - { path: /fast, respond: { body: %q } }\n", v, v)
	}
	clock := &testClock{scale: 1, began: make(chan struct{}, 1)}
	l := startLiveOpts(t, Options{Clock: clock}, map[string]string{"s.yaml": slow("v0")}, func(dir string) []string { return []string{dir} })
	inflight := make(chan string, 1)
	go func() { inflight <- do(t, "GET", l.url+"/slow", "").body }()
	inDelay(t, clock) // had it not loaded its snapshot yet, v1 would be the right answer
	writeFile(t, filepath.Join(l.dir, "s.yaml"), slow("v1"))
	l.serves(t, "/fast", "v1")
	if got := <-inflight; got != "v0" {
		t.Errorf("in-flight request answered %q, want v0 from the snapshot it started on", got)
	}

	valid := map[string]bool{"v1": true, "final": true} // every body a correct answer can have
	for i := 2; i < 30; i++ {
		valid[fmt.Sprintf("v%d", i)] = true
	}
	var stop atomic.Bool
	var bad atomic.Int64
	var served atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Go(func() {
			for !stop.Load() {
				r, err := doCtx(context.Background(), "GET", l.url+"/fast", "")
				if err != nil || r.status != 200 || !valid[r.body] {
					if bad.Add(1) <= 3 {
						t.Logf("bad answer: %v %d %q", err, r.status, r.body)
					}
					continue
				}
				served.Add(1)
			}
		})
	}
	for i := 2; i < 30; i++ {
		content := slow(fmt.Sprintf("v%d", i))
		if i%3 == 0 {
			content = "routes: [ {{ broken" // invalid edits are mixed in
		}
		writeFile(t, filepath.Join(l.dir, "s.yaml"), content)
		time.Sleep(15 * time.Millisecond)
	}
	writeFile(t, filepath.Join(l.dir, "s.yaml"), slow("final"))
	l.serves(t, "/fast", "final")
	stop.Store(true)
	wg.Wait()
	if bad.Load() != 0 || served.Load() == 0 {
		t.Errorf("%d failed or wrong answers, %d good, while reloading", bad.Load(), served.Load())
	}
}
