package scenarios

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// loadDeadline is how long loading one small broken file may take, even
// under -race on a loaded 2-core machine; the real cost is milliseconds,
// and what it guards against (a blow-up in nesting or aliases) takes
// minutes.
const loadDeadline = 30 * time.Second

// problem is one expected problem: at is "line:col", or "" where only
// line >= 1 and col >= 1 are required, and msg is a substring of the
// message.
type problem struct{ at, msg string }

// brokenCases has one case per file in testdata/broken. Files listed with
// no problems must load.
var brokenCases = []struct {
	file string
	want []problem
	// check inspects a set that loaded.
	check func(t *testing.T, set *Set)
}{
	{file: "truncated-flow-mapping.yaml", want: []problem{{"4:5", "did not find expected ',' or '}'"}}},
	{file: "truncated-block-mapping.yaml", want: []problem{{"7:9", `route "cut": respond.headers: want a mapping, got "Location"`}}},
	{file: "truncated-quoted-string.yaml", want: []problem{{"5:7", "found unexpected end of stream"}}},
	{file: "truncated-flow-list.yaml", want: []problem{{"4:5", "did not find expected ',' or ']'"}}},
	// yaml.v3 gives its reader's errors (encoding, control characters,
	// unknown anchors) no line; the loader finds the byte itself.
	{file: "truncated-mid-rune.yaml", want: []problem{{"3:15", "incomplete UTF-8 octet sequence"}}},
	{file: "tab-indent.yaml", want: []problem{{"7:1", "a tab character; YAML is indented with spaces only"}}},
	{file: "tab-after-dash.yaml", want: []problem{{"2:2", "a tab character; YAML is indented with spaces only"}}},
	{file: "list-for-mapping.yaml", want: []problem{
		{"4:11", `route "lists": when: want a mapping, got a list`},
		{"5:14", `route "lists": respond: want a mapping, got a list`},
	}},
	{file: "number-for-string.yaml", want: []problem{
		{"3:11", `route "numbers": path: must start with /`},
		{"4:23", `route "numbers": respond.fault: unknown fault "3" (want one of connection-reset`},
		{"7:22", `route "per": sequence.per: unknown request attribute "5"`},
	}},
	// A missing: takes the delay and fault of its route's response.
	{file: "missing-with-delay.yaml", want: []problem{
		{"1:17", `route "delete": missing.delay: is the route's`}, // where the merged delay is written
		{"8:31", `route "get": respond.missing.delay: is the route's`},
	}},
	{file: "mapping-for-status.yaml", want: []problem{{"5:15", `route "status": respond.status: want an integer, got a mapping`}}},
	{file: "routes-not-a-list.yaml", want: []problem{{"2:3", "routes: want a list of routes, got a mapping"}}},
	{file: "huge-numbers.yaml", want: []problem{
		{"4:15", `route "huge": priority: integer 99999999999 is out of range`},
		{"6:15", `route "huge": respond.status: want an integer, got 99999999999999999999999`},
		{"7:14", `route "huge": respond.delay: bad duration "99999999999h": more than 24h0m0s`},
	}},
	{file: "big-integer-body.yaml", check: func(t *testing.T, set *Set) {
		// 400 digits are past yaml.v3's int and float, but were written
		// as a number: they stay a JSON number, in the body and in the
		// condition alike.
		body := set.Routes()[0].Responses[0].Body
		if !json.Valid(body) || !strings.Contains(string(body), ":"+strings.Repeat("7", 400)) {
			t.Errorf("body %s: want valid JSON holding the 400 digits as a number", body)
		}
		want, _ := set.Routes()[0].When.Body.JSON.(map[string]any)
		if n, ok := want["n"].(json.Number); !ok || len(n) != 400 {
			t.Errorf("condition json.n = %#v, want a 400-digit json.Number", want["n"])
		}
	}},
	{file: "duplicate-keys.yaml", want: []problem{{"5:1", "routes: duplicate key (first at line 1)"}}},
	{file: "duplicate-keys-nested.yaml", want: []problem{
		{"5:5", `route "twice": respond: duplicate key (first at line 4)`},
		{"8:31", `route "body": respond.body.id: duplicate key (first at line 8)`},
	}},
	{file: "unknown-anchor.yaml", want: []problem{{"4:14", "unknown anchor 'nope' referenced"}}},
	{file: "nul-byte.yaml", want: []problem{{"3:13", "control characters are not allowed"}}},
	{file: "binary-garbage.yaml", want: []problem{{"1:1", "invalid leading UTF-8 octet"}}},
	{file: "invalid-utf8.yaml", want: []problem{{"4:26", "invalid trailing UTF-8 octet"}}},
	{file: "bom.yaml", check: func(t *testing.T, set *Set) {
		if r := set.Routes()[0]; r.Name != "bom" || r.Path != "/bom" || string(r.Responses[0].Body) != "hi" {
			t.Errorf("route %q %q body %q: the BOM leaked into the content", r.Name, r.Path, r.Responses[0].Body)
		}
	}},
	{file: "crlf.yaml", check: func(t *testing.T, set *Set) {
		r := set.Routes()[0]
		v, _ := r.Responses[0].Header("X-A")
		if r.Name != "crlf" || r.Path != "/crlf" || string(r.Responses[0].Body) != "hi" || v != "b" {
			t.Errorf("route %q %q body %q X-A %q: a \\r leaked into a value", r.Name, r.Path, r.Responses[0].Body, v)
		}
		if r.Pos.Line != 3 || r.Pos.Col != 5 {
			t.Errorf("route at %s, want line 3 col 5", r.Pos)
		}
	}},
	{file: "crlf-bad-duration.yaml", want: []problem{{"5:14", `route "crlf": respond.delay: bad duration "10": missing unit (write 10ms or 10s)`}}},
	{file: "crlf-syntax.yaml", want: []problem{{"4:5", "did not find expected ',' or ']'"}}},
	{file: "empty.yaml", want: []problem{{"1:1", "the file is empty: want a mapping with routes: (routes: [] for a file that serves none)"}}},
	{file: "comments-only.yaml", want: []problem{{"1:1", "the file is empty: want a mapping with routes: (routes: [] for a file that serves none)"}}},
	{file: "document-marker-only.yaml", want: []problem{{"2:1", "want a mapping, got null"}}},
	// A file that serves nothing says so with routes: []. What a write cut
	// short leaves (nothing, comments, a file that stops at or before its
	// routes: key) is refused, so that a reload in the middle of a save
	// keeps the last good routes rather than serve none of the file's.
	{file: "truncated-after-routes-key.yaml", want: []problem{{"3:8", "routes: is empty: want a list of routes (routes: [] for a file that serves none)"}}},
	{file: "truncated-before-routes-key.yaml", want: []problem{{"2:1", "no routes: (a scenario file needs routes, a fallback, an openapi: block, or some of them; routes: [] for a file that serves none)"}}},
	{file: "routes-empty-list.yaml", check: func(t *testing.T, set *Set) {
		if len(set.Files) != 1 || len(set.Files[0].Routes) != 0 {
			t.Errorf("files %d, want 1 with no routes", len(set.Files))
		}
	}},
}

func TestBrokenCorpus(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/broken/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no files in testdata/broken: %v", err)
	}
	covered := map[string]bool{}
	for _, tc := range brokenCases {
		if covered[tc.file] {
			t.Errorf("%s has two cases", tc.file)
		}
		covered[tc.file] = true
		t.Run(strings.TrimSuffix(tc.file, ".yaml"), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", "broken", tc.file)
			set := checkLoad(t, path, tc.want)
			if set != nil && tc.check != nil {
				tc.check(t, set)
			}
		})
	}
	for _, f := range files {
		if !covered[filepath.Base(f)] {
			t.Errorf("%s has no case in brokenCases", f)
		}
	}
}

// checkLoad loads path within loadDeadline and compares its problems with
// want: as many, in order, each naming path, a line and a column. It
// returns the set when want is empty.
func checkLoad(t *testing.T, path string, want []problem) *Set {
	t.Helper()
	start := time.Now()
	set, err := Load(path)
	if d := time.Since(start); d > loadDeadline {
		t.Errorf("Load took %s, want under %s", d, loadDeadline)
	}
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("Load: %v, want success", err)
		}
		return set
	}
	if err == nil {
		t.Fatalf("Load succeeded, want %d problem(s)", len(want))
	}
	got := Problems(err)
	for i, p := range got {
		if p.Pos.File != path || p.Pos.Line < 1 || p.Pos.Col < 1 || p.Msg == "" {
			t.Errorf("problem %q: want %s:line:col: message with line and col >= 1", p.Error(), path)
		}
		if i >= len(want) {
			t.Errorf("unexpected problem %q", p.Error())
			continue
		}
		w := want[i]
		if at := fmt.Sprintf("%d:%d", p.Pos.Line, p.Pos.Col); w.at != "" && at != w.at {
			t.Errorf("problem %q at %s, want %s", p.Error(), at, w.at)
		}
		if !strings.Contains(p.Msg, w.msg) {
			t.Errorf("problem %q, want a message containing %q", p.Error(), w.msg)
		}
	}
	for _, w := range want[min(len(got), len(want)):] {
		t.Errorf("missing problem at %s: %q (got %v)", w.at, w.msg, err)
	}
	return nil
}

// TestBrokenGenerated covers inputs too large or too regular to keep as
// files: deep nesting and long merge chains.
func TestBrokenGenerated(t *testing.T) {
	t.Parallel()
	nest := func(open, close, leaf string, n int) string {
		return strings.Repeat(open, n) + leaf + strings.Repeat(close, n)
	}
	var merges strings.Builder
	merges.WriteString("x-m0: &m0 { status: 201 }\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&merges, "x-m%d: &m%d { <<: *m%d }\n", i, i, i-1)
	}
	merges.WriteString("routes:\n  - name: merged\n    path: /m\n    respond: { <<: *m30 }\n")
	cases := []struct {
		name    string
		content string
		want    []problem
	}{
		{"5000 nested lists in a body",
			"routes:\n  - name: deep\n    path: /deep\n    respond:\n      body: " + nest("[", "]", "1", 5000) + "\n",
			[]problem{{"5:214", `route "deep": respond.body[0][0]`}}},
		{"5000 nested mappings in a JSON condition",
			"routes:\n  - name: deep\n    path: /deep\n    when:\n      body:\n        json: " + nest("{a: ", "}", "1", 5000) + "\n    respond: {}\n",
			[]problem{{"6:819", "nested more than 200 levels deep"}}},
		{"5000 nested mappings in a template body",
			"routes:\n  - name: deep\n    path: /deep\n    respond:\n      template: true\n      body: " + nest("{a: ", "}", "'{{ .Route }}'", 5000) + "\n",
			[]problem{{"6:817", "nested more than 200 levels deep"}}},
		{"5000 nested lists as routes",
			"routes: " + nest("[", "]", "1", 5000) + "\n",
			[]problem{{"1:10", "routes[0]: want a mapping, got a list"}}},
		{"5000 nested lists in an ignored x- field", "x-deep: " + nest("[", "]", "1", 5000) + "\nroutes: [{ path: /x, respond: {} }]\n", nil},
		{"20000 nested lists (beyond yaml.v3's own limit)",
			"x-deep: " + nest("[", "]", "1", 20000) + "\nroutes: [{ path: /x, respond: {} }]\n",
			[]problem{{"1:1", "exceeded max depth of 10000"}}},
		{"30 chained merge keys", merges.String(), []problem{{"11:19", "merge keys nest too deeply"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "gen.yaml")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			checkLoad(t, path, tc.want)
		})
	}
}

// TestBrokenTooLarge writes a 50 MB file (in a temporary directory; it is
// not part of the repository) and expects the size limit, not a parse.
func TestBrokenTooLarge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "huge.yaml")
	writeLarge(t, path, 50<<20)
	for _, p := range []string{path, dir} {
		start := time.Now()
		set, err := Load(p)
		if d := time.Since(start); d > loadDeadline {
			t.Errorf("Load(%s) took %s: the size check should come before reading", p, d)
		}
		probs := Problems(err)
		want := "the file is 52428800 bytes (50.0 MiB); a scenario file may be at most 16.0 MiB"
		if set != nil || len(probs) != 1 || probs[0].Pos.File != path || probs[0].Msg != want {
			t.Errorf("Load(%s) = %v, want one problem %s: %s", p, err, path, want)
		}
	}
}

// writeLarge writes size bytes of YAML comments, the shape of a log file
// saved with the wrong name.
func writeLarge(t testing.TB, path string, size int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	line := "# 2026-12-02T13:42:37Z level=INFO msg=request method=POST path=/payments status=201\n"
	for n := 0; n < size; n += len(line) {
		w.WriteString(line[:min(len(line), size-n)])
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBrokenSwappedBodyFile swaps a body file with a symbolic link to a
// file outside the scenario root, again and again, while loading: a load
// either reads the file inside or refuses the link, and never serves the
// outside file, whatever the timing between checking the path and reading
// it.
func TestBrokenSwappedBodyFile(t *testing.T) {
	// Not parallel: the swapping goroutine keeps a core busy, which would
	// slow the tests with deadlines around it on a 2-core machine.
	outside := write(t, map[string]string{"secret.txt": "SECRET"})
	dir := write(t, map[string]string{
		"s.yaml": "routes: [{ path: /x, respond: { bodyFile: f.txt } }]\n",
		"f.txt":  "inside",
	})
	swap := filepath.Join(dir, ".swap")
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), swap); err != nil {
		t.Skipf("cannot make symbolic links here: %v", err)
	}
	if err := exchange(t, swap, filepath.Join(dir, "f.txt")); err != nil {
		t.Skipf("cannot exchange names here: %v", err)
	}
	if err := exchange(t, swap, filepath.Join(dir, "f.txt")); err != nil {
		t.Fatal(err)
	}

	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := exchange(t, swap, filepath.Join(dir, "f.txt")); err != nil {
				done <- err
				return
			}
		}
	}()
	defer func() {
		close(stop)
		if err := <-done; err != nil {
			t.Errorf("exchange: %v", err)
		}
	}()

	var inside, refused int
	for i := 0; i < 1000; i++ {
		set, err := Load(dir)
		if err != nil {
			// A link swapped in while the open follows it can also fail
			// as a loop: refused all the same.
			if !strings.Contains(err.Error(), `bodyFile "f.txt" is outside the scenario root`) &&
				!strings.HasSuffix(err.Error(), `bodyFile "f.txt": `+syscall.ELOOP.Error()) {
				t.Fatalf("load %d: %v, want the body file or a refused link", i, err)
			}
			refused++
			continue
		}
		switch body := string(set.Routes()[0].Responses[0].Body); body {
		case "inside":
			inside++
		default:
			t.Fatalf("load %d read %q from outside the scenario root (%d good loads and %d refusals before)", i, body, inside, refused)
		}
	}
	t.Logf("%d loads read the file inside, %d refused the link", inside, refused)
}

// TestBrokenNotRegularFiles puts a named pipe, a socket and a directory
// where a scenario file or a body file is expected. Each is refused with
// its position, promptly: opening a named pipe for reading would otherwise
// wait for a writer forever.
func TestBrokenNotRegularFiles(t *testing.T) {
	t.Parallel()
	const bodyRoute = "routes:\n  - path: /x\n    respond: { bodyFile: %s }\n"
	cases := []struct {
		name string
		// make creates the special file at path.
		make func(t *testing.T, path string)
		// asBody names it as a bodyFile of s.yaml; otherwise it is a
		// scenario file of the directory, named b.yaml.
		asBody bool
		// at is the position the problem starts with, relative to the
		// directory, and want the end of its message.
		at, want string
	}{
		{"fifo scenario file", mkfifo, false, "b.yaml: ", "b.yaml: is a named pipe (FIFO), not a regular file"},
		{"fifo body file", mkfifo, true, "s.yaml:3:26: ", `bodyFile: bodyFile "b.txt" is a named pipe (FIFO), not a regular file`},
		{"socket scenario file", mksock, false, "b.yaml: ", "b.yaml: is a socket, not a regular file"},
		{"socket body file", mksock, true, "s.yaml:3:26: ", `bodyFile: bodyFile "b.txt" is a socket, not a regular file`},
		{"directory body file", mkdir, true, "s.yaml:3:26: ", `bodyFile: bodyFile "b.txt" is a directory`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := write(t, map[string]string{"s.yaml": fmt.Sprintf(bodyRoute, "ok.txt"), "ok.txt": "ok"})
			special := filepath.Join(dir, "b.yaml")
			if tc.asBody {
				special = filepath.Join(dir, "b.txt")
				if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(fmt.Sprintf(bodyRoute, "b.txt")), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tc.make(t, special)
			loaded := make(chan error, 1)
			go func() {
				_, err := Load(dir)
				loaded <- err
			}()
			select {
			case err := <-loaded:
				at := filepath.Join(dir, tc.at)
				if err == nil || !strings.HasPrefix(err.Error(), at) || !strings.HasSuffix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err = %v\nwant one problem %s…%s", err, at, tc.want)
				}
			case <-time.After(loadDeadline):
				// The goroutine stays blocked in open(2); the test binary
				// ends with the failure.
				t.Fatalf("Load still running after %s", loadDeadline)
			}
		})
	}
}

func mksock(t *testing.T, path string) {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Skipf("cannot make a unix socket here: %v", err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	t.Cleanup(func() { ln.Close() })
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
}
