package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary be the mock that the harness starts:
// `stripesuite.test fake-mock ADDR PIDFILE [noheader]` serves fakeMock on
// ADDR over HTTPS after starting a child process (its pid in PIDFILE), so
// that the tests can see the harness stop the server's whole group.
func TestMain(m *testing.M) {
	if len(os.Args) >= 4 && os.Args[1] == "fake-mock" {
		os.Exit(serveFakeMock(os.Args[2], os.Args[3], len(os.Args) > 4 && os.Args[4] == "noheader"))
	}
	os.Exit(m.Run())
}

func serveFakeMock(addr, pidFile string, noHeader bool) int {
	child := exec.Command("sleep", "600")
	if err := child.Start(); err != nil {
		return 3
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(child.Process.Pid)), 0o644); err != nil {
		return 3
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return 3
	}
	srv := httptest.NewUnstartedServer(fakeMock(noHeader))
	srv.Listener.Close()
	srv.Listener = ln
	srv.StartTLS()
	select {} // until the harness stops the group
}

// fakeMock answers like stripe-mock for customers and like a mock that
// lacks the route for anything else.
func fakeMock(noHeader bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !noHeader {
			w.Header().Set("Stripe-Mock-Version", "master")
		}
		switch {
		case r.URL.Path == "/":
			w.Write([]byte("{}"))
		case strings.HasPrefix(r.URL.Path, "/v1/customers/"):
			w.Write([]byte(`{"object":"customer"}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"type":"invalid_request_error"},"message":"Unrecognized request URL (GET: ` + r.URL.Path + `)"}`))
		}
	})
}

// TestRun runs the harness over a small module whose tests connect the way
// stripe-go's do (testdata/fakesuite): against a server command it starts,
// against a server already listening, and against one without the
// version header, whose importing packages then run no test.
func TestRun(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	listening := httptest.NewTLSServer(fakeMock(false))
	t.Cleanup(listening.Close) // after the parallel subtests
	listeningPort := listening.Listener.Addr().(*net.TCPAddr).Port

	broken := map[string]string{
		"broken":    "Couldn't reach the other service.",
		"buildfail": "build failed: ",
	}
	tests := []struct {
		name      string
		command   bool // start self as fake-mock, else use listening
		noHeader  bool
		passed    []string
		failed    []string
		skipped   []string
		subtests  int               // passed
		broken    map[string]string // package → reason prefix
		missing   []string          // of the baseline below
		notRun    int               // of missing
		noWarning bool
	}{{
		name:    "server command",
		command: true,
		passed:  []string{"api TestPass", "api TestSubtests"}, failed: []string{"api TestFail"}, skipped: []string{"api TestSkip"},
		subtests: 2, broken: broken, missing: []string{"api TestFail", "broken TestNeverRuns"}, notRun: 1, noWarning: true,
	}, {
		name:   "port",
		passed: []string{"api TestPass", "api TestSubtests"}, failed: []string{"api TestFail"}, skipped: []string{"api TestSkip"},
		subtests: 2, broken: broken, missing: []string{"api TestFail", "broken TestNeverRuns"}, notRun: 1, noWarning: true,
	}, {
		name:    "no version header",
		command: true, noHeader: true,
		broken:  map[string]string{"api": "Your version of stripe-mock () is too old.", "broken": broken["broken"], "buildfail": broken["buildfail"]},
		missing: []string{"api TestFail", "api TestPass", "broken TestNeverRuns"}, notRun: 3,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			baseline := filepath.Join(dir, "baseline.passed")
			os.WriteFile(baseline, []byte("# an earlier run\napi TestPass\napi TestFail\nbroken TestNeverRuns\n"), 0o644)
			pidFile := filepath.Join(dir, "child.pid")
			cfg := config{
				dir:      filepath.Join("testdata", "fakesuite"),
				out:      filepath.Join(dir, "out"),
				baseline: baseline,
				timeout:  5 * time.Minute,
				ready:    time.Minute,
			}
			if tc.command {
				cfg.server = []string{self, "fake-mock", "{addr}", pidFile}
				if tc.noHeader {
					cfg.server = append(cfg.server, "noheader")
				}
			} else {
				cfg.port = listeningPort
			}
			var log strings.Builder
			res, err := run(context.Background(), cfg, &log)
			if err != nil {
				t.Fatalf("run: %v\n%s", err, log.String())
			}
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"passed", res.passed, tc.passed}, {"failed", res.failed, tc.failed}, {"skipped", res.skipped, tc.skipped}, {"missing", res.missing, tc.missing}} {
				if !slices.Equal(c.got, c.want) {
					t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
				}
			}
			if res.notRun != tc.notRun {
				t.Errorf("baseline tests that did not run = %d, want %d", res.notRun, tc.notRun)
			}
			if got := res.subtests["pass"]; got != tc.subtests {
				t.Errorf("subtests passed = %d, want %d", got, tc.subtests)
			}
			if len(tc.failed) > 0 {
				if got, want := res.reasons["api TestFail"], "status 404: Unrecognized request URL (GET: /v1/refunds/re_1)"; got != want {
					t.Errorf("reason of api TestFail = %q, want %q", got, want)
				}
			}
			if len(res.brokenPackages) != len(tc.broken) {
				t.Errorf("packages that failed without a failing test = %q, want %q", res.brokenPackages, tc.broken)
			}
			for pkg, want := range tc.broken {
				if got := res.brokenPackages[pkg]; !strings.HasPrefix(got, want) {
					t.Errorf("why %s failed = %q, want it to start with %q", pkg, got, want)
				}
			}
			if warned := strings.Contains(log.String(), "no Stripe-Mock-Version"); warned == tc.noWarning {
				t.Errorf("warned of a missing Stripe-Mock-Version: %v, want %v; printed:\n%s", warned, !tc.noWarning, log.String())
			}

			// The files say the same.
			for name, want := range map[string][]string{"passed.txt": tc.passed, "missing.txt": tc.missing} {
				b, err := os.ReadFile(filepath.Join(cfg.out, name))
				if err != nil {
					t.Fatal(err)
				}
				if got := strings.Fields(strings.ReplaceAll(string(b), " ", "_")); !slices.Equal(got, underscored(want)) {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			summary, err := os.ReadFile(filepath.Join(cfg.out, "summary.md"))
			if err != nil {
				t.Fatal(err)
			}
			wantLine := "stripe-go suite: passed " + strconv.Itoa(len(tc.passed)) + ", failed " + strconv.Itoa(len(tc.failed)) + ", skipped " + strconv.Itoa(len(tc.skipped)) + " of "
			if !strings.Contains(string(summary), wantLine) {
				t.Errorf("summary.md has no %q:\n%s", wantLine, summary)
			}

			if tc.command {
				waitGone(t, pidFile)
			}
		})
	}
}

// waitGone waits until the process whose pid is in pidFile, started by
// the server, has ended: the harness stops the server's process group.
func waitGone(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		// Gone, or a zombie waiting for init to reap it.
		if errors.Is(err, os.ErrNotExist) || (err == nil && strings.Contains(string(stat), ") Z ")) {
			return
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the server's child %d still runs 30s after the harness returned", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func underscored(l []string) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = strings.ReplaceAll(s, " ", "_")
	}
	return out
}

// TestAppendBounded checks that a test's output keeps its first lines
// and its last ones.
func TestAppendBounded(t *testing.T) {
	var lines []string
	for i := range 1000 {
		lines = appendBounded(lines, strconv.Itoa(i)+"\n", 10)
	}
	if want := []string{"0", "1", "2", "3", "4", "995", "996", "997", "998", "999"}; !slices.Equal(lines, want) {
		t.Errorf("kept %q, want %q", lines, want)
	}
}

// TestCountSources checks that exactly one server is asked for.
func TestCountSources(t *testing.T) {
	for _, tc := range []struct {
		cfg  config
		want int
	}{
		{config{}, 0},
		{config{port: 12112}, 1},
		{config{stripeMock: "v0.203.0"}, 1},
		{config{server: []string{"x"}}, 1},
		{config{port: 1, server: []string{"x"}}, 2},
	} {
		if got := countSources(tc.cfg); got != tc.want {
			t.Errorf("countSources(%+v) = %d, want %d", tc.cfg, got, tc.want)
		}
	}
}

func TestCompareKnown(t *testing.T) {
	t.Parallel()
	known := filepath.Join(t.TempDir(), "known.missing")
	if err := os.WriteFile(known, []byte("# gaps\ncharge TestA\nquote TestB\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	reg, err := compareKnown(known, []string{"charge TestA", "plan TestC"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(reg, []string{"plan TestC"}) || !strings.Contains(out.String(), "regression: plan TestC") || !strings.Contains(out.String(), "passes now, remove from the list: quote TestB") {
		t.Errorf("regressions %v, printed:\n%s", reg, out.String())
	}
	if reg, _ := compareKnown(known, []string{"charge TestA", "quote TestB"}, io.Discard); len(reg) != 0 {
		t.Errorf("known gaps only: regressions %v; want none", reg)
	}
}
