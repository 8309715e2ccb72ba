package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func runCmd(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := newRootCmd(&out, &errb)
	cmd.SetArgs(args)
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

func TestValidate(t *testing.T) {
	t.Parallel()
	out, _, err := runCmd(t, "validate", "examples/payments-idempotency.yaml")
	if err != nil || out != "ok: 1 file, 8 routes\n" {
		t.Errorf("validate examples: %v %q", err, out)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("routes:\n  - path: /x\n    respond: { status: 2000, delay: 3 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runCmd(t, "validate", dir)
	if !errors.Is(err, errReported) {
		t.Errorf("err = %v, want errReported (exit 1)", err)
	}
	want := bad + ":3:24: routes[0]: respond.status: status 2000 is not between 200 and 599\n" +
		bad + ":3:37: routes[0]: respond.delay: bad duration \"3\": missing unit (write 3ms or 3s)\n" +
		"2 problems in 1 file\n"
	if stderr != want {
		t.Errorf("stderr =\n%s\nwant\n%s", stderr, want)
	}
}

// TestRoutesOpenAPI lists a spec's generated routes as serve --openapi
// serves them: alone, and after the YAML routes of a path given.
func TestRoutesOpenAPI(t *testing.T) {
	t.Parallel()
	spec := filepath.Join("openapi", "testdata", "petstore", "openapi.yaml")
	out, _, err := runCmd(t, "routes", "--openapi", spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1  listPets ", "createPet", "4  deletePet ", "DELETE  /pets/{petId}", spec + ":71:5"} { // 71: deletePet
		if !strings.Contains(out, want) {
			t.Errorf("routes --openapi: no %q in\n%s", want, out)
		}
	}
	dir := t.TempDir()
	yaml := filepath.Join(dir, "mine.yaml")
	if err := os.WriteFile(yaml, []byte("routes:\n  - {name: mine, method: GET, path: /health, respond: {status: 204}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = runCmd(t, "routes", "--openapi", spec, yaml)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "1  mine ") || !strings.Contains(out, "5  deletePet ") {
		t.Errorf("routes --openapi with a path: want the YAML route first and the 4 operations after it:\n%s", out)
	}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	out, _, err := runCmd(t, "routes")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 9 {
		t.Fatalf("%d lines, want a header and 8 routes:\n%s", len(lines), out)
	}
	for i, want := range map[int]string{
		0: `^#\s+NAME\s+METHOD\s+PATH\s+WHEN\s+RESPONDS\s+SOURCE$`,
		1: `^1\s+payment without key\s+POST\s+/payments\s+header Idempotency-Key absent\s+400\s+examples/payments-idempotency.yaml:19:5$`,
		8: `^8\s+transfer created\s+POST\s+/transfers\s+header Idempotency-Key present\s+201 after 10s → 201 \(per header.Idempotency-Key\)\s+examples/payments-idempotency.yaml:\d+:5$`,
	} {
		if !regexp.MustCompile(want).MatchString(lines[i]) {
			t.Errorf("line %d = %q, want it to match %s", i, lines[i], want)
		}
	}
}

// TestExamples checks that every example file is built in under its name,
// loads, and is what routes --example lists; and that a name that is not
// one, or a name with a path, is a usage error that lists the names.
func TestExamples(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("examples/*.yaml")
	if err != nil || len(files) < 2 {
		t.Fatalf("examples: %v %v", files, err)
	}
	names := exampleNames()
	if len(names) != len(files) || !slices.Contains(names, demoExample) || !slices.Contains(names, "payments-stateful") {
		t.Fatalf("built-in examples %v, files %v", names, files)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			onDisk, _, err := runCmd(t, "routes", f)
			if err != nil {
				t.Fatal(err)
			}
			builtIn, _, err := runCmd(t, "routes", "--example", name)
			if err != nil || builtIn != onDisk || !strings.Contains(builtIn, f+":") {
				t.Errorf("routes --example %s: %v\n%s\nwant\n%s", name, err, builtIn, onDisk)
			}
		})
	}
	if out, _, err := runCmd(t, "routes"); err != nil || !strings.Contains(out, "examples/payments-idempotency.yaml:") {
		t.Errorf("routes without a path lists the demo: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"routes", "--example", "nope"},
		{"routes", "--example", "../examples/payments-stateful"},
		{"routes", "--example", "*"},
		{"serve", "--addr", "127.0.0.1:0", "--example", "payments-stateful.yaml"},
	} {
		_, _, err := runCmd(t, args...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), "the built-in examples are "+strings.Join(names, ", ")) {
			t.Errorf("%v: %v, want a usage error listing %v", args, err, names)
		}
	}
	for _, args := range [][]string{
		{"routes", "--example", "payments-stateful", "examples/payments-idempotency.yaml"},
		{"serve", "--addr", "127.0.0.1:0", "--example", demoExample, "examples/"},
	} {
		_, _, err := runCmd(t, args...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), "give one or the other") {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

func TestByteSize(t *testing.T) {
	t.Parallel()
	cases := map[string]int64{"10MiB": 10 << 20, "512KB": 512000, "1048576": 1 << 20, "2 GiB": 2 << 30, "64k": 64 << 10}
	for in, want := range cases {
		var b byteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, b, err, want)
		}
	}
	for _, in := range []string{"", "-1", "ten", "0", "99999999999GiB"} {
		var b byteSize
		if err := b.Set(in); err == nil {
			t.Errorf("Set(%q) accepted %d", in, b)
		}
	}
	if b := byteSize(10 << 20); b.String() != "10MiB" {
		t.Errorf("String() = %s", b.String())
	}
}

func TestApplyEnv(t *testing.T) {
	t.Setenv("SCENARIOMOCK_ADDR", "0.0.0.0:9999")
	t.Setenv("SCENARIOMOCK_MAX_BODY", "1KiB")
	t.Setenv("SCENARIOMOCK_WATCH", "false")
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "")
	watch := fs.Bool("watch", true, "")
	var mb byteSize
	fs.Var(&mb, "max-body", "")
	if err := fs.Parse([]string{"--watch=true"}); err != nil {
		t.Fatal(err)
	}
	if err := applyEnv(fs); err != nil {
		t.Fatal(err)
	}
	if *addr != "0.0.0.0:9999" || mb != 1024 || !*watch {
		t.Errorf("addr=%s max-body=%d watch=%v; want the environment, except where a flag was given", *addr, mb, *watch)
	}
	t.Setenv("SCENARIOMOCK_MAX_BODY", "lots")
	fs2 := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs2.Var(&mb, "max-body", "")
	if err := applyEnv(fs2); err == nil || !strings.Contains(err.Error(), "SCENARIOMOCK_MAX_BODY") {
		t.Errorf("err = %v, want one naming the variable", err)
	}
}

var built struct {
	once sync.Once
	dir  string
	err  error
	out  []byte
}

// TestMain removes the binary the end-to-end tests share.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// binary builds scenariomock once for all the end-to-end tests: under
// -race on a loaded machine each build takes many seconds.
func binary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "scenariomock-test"); built.err != nil {
			return
		}
		// Static (no cgo), as the image's binary must be: the image test
		// copies this one, and .ci/run builds everything else with
		// CGO_ENABLED=0 too, so that one set of compiled packages serves
		// all its builds.
		build := exec.Command("go", "build", "-o", filepath.Join(built.dir, "scenariomock"), ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		built.out, built.err = build.CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return filepath.Join(built.dir, "scenariomock")
}

// patience is how long a test waits for something that takes
// milliseconds: generous, because the CI machine is a loaded 2-core box
// running these tests under -race, and waiting costs nothing when the
// condition holds early.
const patience = 30 * time.Second

// syncLog collects a server's log lines while the test reads them.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
	// eof is closed when the process's stderr has been read to its end:
	// only then does the log hold the last lines, since cmd.Wait closes
	// the pipe, and drops what is unread, as soon as the process exits.
	eof chan struct{}
}

func newSyncLog() *syncLog { return &syncLog{eof: make(chan struct{})} }

func (l *syncLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(line + "\n")
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// started runs `scenariomock serve args...` and returns the address from
// its ready line.
func started(t *testing.T, bin string, args ...string) (*exec.Cmd, string, *syncLog) {
	t.Helper()
	return startedEnv(t, bin, nil, args...)
}

// startedEnv is started with the variables env added to the environment.
func startedEnv(t *testing.T, bin string, env []string, args ...string) (*exec.Cmd, string, *syncLog) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	addr, logs := startedCmd(t, cmd)
	return cmd, addr, logs
}

// startedCmd starts cmd, a scenariomock command that logs a ready line
// (serve, record), and returns the address that line names and the
// command's log, which a goroutine reads to its end. The process is
// killed when the test ends; stopped ends it gracefully.
func startedCmd(t *testing.T, cmd *exec.Cmd) (string, *syncLog) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	logs := newSyncLog()
	ready := make(chan string, 1)
	go func() {
		defer close(logs.eof)
		sc := bufio.NewScanner(stderr)
		addrRE := regexp.MustCompile(`msg=ready addr=(\S+)`)
		for sc.Scan() {
			logs.add(sc.Text())
			if m := addrRE.FindStringSubmatch(sc.Text()); m != nil {
				ready <- m[1]
			}
		}
		close(ready)
	}()
	select {
	case addr, ok := <-ready:
		if !ok {
			t.Fatalf("exited before ready:\n%s", logs)
		}
		return addr, logs
	case <-time.After(patience):
		t.Fatalf("no ready line:\n%s", logs)
	}
	return "", nil
}

// stopped sends sig to a command startedCmd started and waits for it to
// exit 0, having read its log to the end first: Wait closes the pipe and
// would drop the last lines, which are the ones that say what shutdown
// did.
func stopped(t *testing.T, cmd *exec.Cmd, logs *syncLog, sig os.Signal) {
	t.Helper()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	exited(t, cmd, logs, sig)
}

// exited waits for cmd, already sent sig, to exit 0. A second signal,
// sent once the first has begun the shutdown, would find Go's default
// handling back and kill the process.
func exited(t *testing.T, cmd *exec.Cmd, logs *syncLog, sig os.Signal) {
	t.Helper()
	select {
	case <-logs.eof:
	case <-time.After(patience):
		t.Fatalf("stderr still open %s after %v:\n%s", patience, sig, logs)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after %v: %v\n%s", sig, err, logs)
		}
	case <-time.After(patience):
		t.Fatalf("did not stop on %v:\n%s", sig, logs)
	}
}

func TestEndToEnd(t *testing.T) {
	t.Parallel()
	bin := binary(t)

	t.Run("journal flags", func(t *testing.T) {
		_, addr, _ := started(t, bin, "--journal-body-limit", "4B")
		resp, err := http.Post("http://"+addr+"/payments", "application/json", strings.NewReader(`{"amount":1}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		resp, err = http.Get("http://" + addr + "/__admin/requests")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), `"body": "{\"am"`) || !strings.Contains(string(body), `"bodyTruncated": true`) {
			t.Errorf("--journal-body-limit 4B: %s", body)
		}
		_, off, _ := started(t, bin, "--journal-size", "0")
		resp, err = http.Get("http://" + off + "/__admin/requests")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("--journal-size 0: GET /__admin/requests answered %d, want 404 (off)", resp.StatusCode)
		}
		// Credentials are redacted unless --journal-secrets keep.
		for _, keep := range []bool{false, true} {
			args := []string{}
			if keep {
				args = append(args, "--journal-secrets", "keep")
			}
			_, addr, _ := started(t, bin, args...)
			req, _ := http.NewRequest("GET", "http://"+addr+"/payments", nil)
			req.Header.Set("Authorization", "Bearer sk_test_secret")
			if resp, err = http.DefaultClient.Do(req); err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp, err = http.Get("http://" + addr + "/__admin/requests"); err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if shown := strings.Contains(string(body), "sk_test_secret"); shown != keep || !keep && !strings.Contains(string(body), "Bearer redacted:") {
				t.Errorf("--journal-secrets keep=%v: %s", keep, body)
			}
		}
	})

	t.Run("built-in example", func(t *testing.T) {
		_, addr, logs := started(t, bin, "--example", "payments-stateful")
		if !strings.Contains(logs.String(), "built-in example examples/payments-stateful.yaml") {
			t.Errorf("ready line does not name the example:\n%s", logs)
		}
		resp, err := http.Get("http://" + addr + "/payments")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "[]" {
			t.Errorf("GET /payments: %d %s", resp.StatusCode, body)
		}
	})

	t.Run("built-in demo, health, SIGTERM", func(t *testing.T) {
		cmd, addr, _ := started(t, bin)
		resp, err := http.Get("http://" + addr + "/payments/pay_demo_0001")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%v %v", err, resp)
		}
		resp.Body.Close()
		if out, err := exec.Command(bin, "health", "--addr", addr, "--timeout", patience.String()).CombinedOutput(); err != nil || !strings.Contains(string(out), `"status": "ok"`) {
			t.Errorf("health: %v %s", err, out)
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("exit after SIGTERM: %v, want 0", err)
			}
		case <-time.After(patience):
			t.Errorf("still running %s after SIGTERM", patience)
		}
		if out, err := exec.Command(bin, "health", "--addr", addr, "--timeout", "500ms").CombinedOutput(); err == nil {
			t.Errorf("health of a stopped server succeeded: %s", out)
		}
	})

	t.Run("admin API on its own port, token from the environment", func(t *testing.T) {
		const token = "e2e-admin-token"
		_, addr, logs := startedEnv(t, bin, []string{"SCENARIOMOCK_ADMIN_TOKEN=" + token}, "--admin-addr", "127.0.0.1:0")
		m := regexp.MustCompile(`msg=ready addr=\S+ admin_addr=(\S+)`).FindStringSubmatch(logs.String())
		if m == nil {
			t.Fatalf("the ready line does not name the admin address:\n%s", logs)
		}
		admin := m[1]
		get := func(url string, header ...string) (int, string) {
			t.Helper()
			req, err := http.NewRequest("GET", url, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(header) == 2 {
				req.Header.Set(header[0], header[1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body)
		}
		if code, body := get("http://" + addr + "/__admin/health"); code != 404 || !strings.Contains(body, "No route matches") {
			t.Errorf("GET /__admin/health on --addr: %d %s, want the scenarios' 404", code, body)
		}
		if code, body := get("http://" + admin + "/__admin/health"); code != 200 {
			t.Errorf("GET /__admin/health on --admin-addr: %d %s", code, body)
		}
		if code, body := get("http://" + admin + "/__admin/scenarios"); code != 401 {
			t.Errorf("GET /__admin/scenarios without the token: %d %s, want 401", code, body)
		}
		if code, body := get("http://"+admin+"/__admin/scenarios", "Authorization", "Bearer "+token); code != 200 {
			t.Errorf("GET /__admin/scenarios with the token: %d %s, want 200", code, body)
		}
		health := exec.Command(bin, "health", "--timeout", patience.String())
		health.Env = append(os.Environ(), "SCENARIOMOCK_ADDR="+addr, "SCENARIOMOCK_ADMIN_ADDR="+admin)
		if out, err := health.CombinedOutput(); err != nil || !strings.Contains(string(out), `"status": "ok"`) {
			t.Errorf("health with SCENARIOMOCK_ADMIN_ADDR: %v %s", err, out)
		}
		if strings.Contains(logs.String(), token) {
			t.Errorf("the token is in the log:\n%s", logs)
		}
	})

	t.Run("hot reload and a broken edit", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "s.yaml")
		write := func(s string) {
			if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("routes: [{ path: /v, respond: { body: one } }]\n")
		cmd, addr, logs := started(t, bin, dir)
		defer cmd.Process.Signal(syscall.SIGINT)
		get := func() string {
			resp, err := http.Get("http://" + addr + "/v")
			if err != nil {
				return err.Error()
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return string(b)
		}
		wait := func(want string) {
			t.Helper()
			deadline := time.Now().Add(patience)
			for get() != want {
				if time.Now().After(deadline) {
					t.Fatalf("GET /v = %q, want %q\n%s", get(), want, logs)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		wait("one")
		write("routes: [{ path: /v, respond: { body: two } }]\n")
		wait("two")
		write("routes: [{ path: /v, respond: { body: three, delay: 1 } }]\n")
		// Check only once the broken edit was read, not after a fixed time.
		deadline := time.Now().Add(patience)
		for !strings.Contains(logs.String(), "reload failed") {
			if time.Now().After(deadline) {
				t.Fatalf("the broken edit was not reported:\n%s", logs)
			}
			time.Sleep(10 * time.Millisecond)
		}
		wait("two")
		write("routes: [{ path: /v, respond: { body: four } }]\n")
		wait("four")
	})

	t.Run("invalid scenarios at start exit 1", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "s.yaml")
		if err := os.WriteFile(path, []byte("routes: [{ path: /v, respnd: {} }]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", path).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("err = %v, want exit 1", err)
		}
		if !strings.Contains(string(out), path+`:1:22: routes[0]: unknown field "respnd" (did you mean "respond"?)`) {
			t.Errorf("output:\n%s", out)
		}
		out, err = exec.Command(bin, "validate", path).CombinedOutput()
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "1 problem in 1 file") {
			t.Errorf("validate: %v\n%s", err, out)
		}
	})
}

func TestScenariosFromEnvironment(t *testing.T) {
	t.Setenv("SCENARIOMOCK_SCENARIOS", "examples/payments-idempotency.yaml")
	if out, _, err := runCmd(t, "validate"); err != nil || out != "ok: 1 file, 8 routes\n" {
		t.Errorf("validate with SCENARIOMOCK_SCENARIOS: %v %q", err, out)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "one.yaml"), []byte("routes: [{ name: only, path: /one, respond: {} }]"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SCENARIOMOCK_SCENARIOS", dir)
	if out, _, err := runCmd(t, "routes"); err != nil || !strings.Contains(out, "only") || strings.Contains(out, "payment") {
		t.Errorf("routes with SCENARIOMOCK_SCENARIOS: %v\n%s", err, out)
	}
	t.Setenv("SCENARIOMOCK_SCENARIOS", "")
	if _, _, err := runCmd(t, "validate"); err == nil {
		t.Error("validate with no paths at all succeeded")
	}
}

// TestExplainFlag checks --explain and SCENARIOMOCK_EXPLAIN on the serve
// command's own flags: the default, the environment, the flag winning, and
// a clear error for a mode that does not exist.
func TestExplainFlag(t *testing.T) {
	mode := func(args []string) (string, error) {
		fs := newServeCmd(io.Discard).Flags()
		if err := fs.Parse(args); err != nil {
			return "", err
		}
		if err := applyEnv(fs); err != nil {
			return "", err
		}
		return fs.Lookup("explain").Value.String(), nil
	}
	if got, err := mode(nil); got != "redacted" || err != nil {
		t.Errorf("default = %q, %v; want redacted", got, err)
	}
	t.Setenv("SCENARIOMOCK_EXPLAIN", "off")
	if got, err := mode(nil); got != "off" || err != nil {
		t.Errorf("with SCENARIOMOCK_EXPLAIN=off: %q, %v", got, err)
	}
	if got, err := mode([]string{"--explain=full"}); got != "full" || err != nil {
		t.Errorf("with --explain=full and SCENARIOMOCK_EXPLAIN=off: %q, %v; want the flag", got, err)
	}
	t.Setenv("SCENARIOMOCK_EXPLAIN", "verbose")
	if _, err := mode(nil); err == nil || !strings.Contains(err.Error(), "want full, redacted or off") {
		t.Errorf("SCENARIOMOCK_EXPLAIN=verbose: err = %v", err)
	}
}

// TestValidateNamedPipes runs validate on directories holding a named pipe
// as a scenario file and as a body file: it must report each with its
// position and return, where opening the pipe used to wait for a writer
// forever.
func TestValidateNamedPipes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"a.yaml":   "routes:\n  - path: /a\n    respond: { bodyFile: pipe.txt }\n",
		"ok.yaml":  "routes: [{ path: /ok, respond: { status: 204 } }]\n",
		"pipe.txt": "",
		"b.yaml":   "",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if strings.HasPrefix(name, "pipe") || name == "b.yaml" {
			mkfifo(t, p)
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		stderr string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		_, stderr, err := runCmd(t, "validate", dir)
		done <- result{stderr, err}
	}()
	select {
	case r := <-done:
		if !errors.Is(r.err, errReported) {
			t.Errorf("err = %v, want errReported (exit 1)", r.err)
		}
		for _, want := range []string{
			filepath.Join(dir, "a.yaml") + `:3:26: `,
			`bodyFile "pipe.txt" is a named pipe (FIFO), not a regular file` + "\n",
			filepath.Join(dir, "b.yaml") + ": is a named pipe (FIFO), not a regular file\n",
			"2 problems in 2 files\n",
		} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr =\n%s\nwant it to hold %q", r.stderr, want)
			}
		}
	case <-time.After(30 * time.Second):
		// The goroutine is stuck in open(2); the test binary ends with
		// the failure.
		t.Fatal("validate still running after 30s")
	}
}

// TestExitCodes runs the binary into each documented exit code.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	dir := t.TempDir()
	invalid := filepath.Join(dir, "invalid.yaml")
	if err := os.WriteFile(invalid, []byte("routes: [{ path: /v, respnd: {} }]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { taken.Close() }) // the subtests run after this function returns
	// Servers that are up but unhealthy, held for the subtests: a port
	// merely closed might be taken again by another test's server.
	hangUp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hangUp.Close() })
	go func() { // ends when hangUp is closed
		for {
			c, err := hangUp.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	sick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "starting", http.StatusServiceUnavailable)
	}))
	t.Cleanup(sick.Close)
	sickAddr := strings.TrimPrefix(sick.URL, "http://")

	cases := []struct {
		name string
		env  []string // SCENARIOMOCK_* variables for this run; the test's own are removed
		args []string
		code int
		// stderr must contain this, and, unless "", stdout (want) too.
		stderr, stdout string
	}{
		{name: "valid scenarios", args: []string{"validate", "examples/payments-idempotency.yaml"}, code: 0, stdout: "ok: 1 file, 8 routes"},
		{name: "unknown example", args: []string{"serve", "--addr", "127.0.0.1:0", "--example", "nope"}, code: 2, stderr: "the built-in examples are orders-states, payments-idempotency, payments-stateful, stripe"},
		{name: "example and a path", args: []string{"routes", "--example", "payments-stateful", "examples/"}, code: 2, stderr: "give one or the other; the built-in examples are orders-states, payments"},
		{name: "unknown example, from the environment", env: []string{"SCENARIOMOCK_EXAMPLE=nope"}, args: []string{"serve", "--addr", "127.0.0.1:0"}, code: 2, stderr: `--example "nope"`},
		{name: "version", args: []string{"--version"}, code: 0, stdout: "scenariomock "},
		{name: "invalid scenarios, validate", args: []string{"validate", invalid}, code: 1, stderr: `unknown field "respnd"`},
		{name: "invalid scenarios, serve", args: []string{"serve", "--addr", "127.0.0.1:0", invalid}, code: 1, stderr: `unknown field "respnd"`},
		{name: "invalid scenarios, routes", args: []string{"routes", invalid}, code: 1, stderr: "1 problem in 1 file"},
		{name: "missing file", args: []string{"validate", filepath.Join(dir, "nope.yaml")}, code: 1, stderr: "nope.yaml"},
		{name: "unknown command", args: []string{"srve"}, code: 2, stderr: `unknown command "srve"`},
		{name: "unknown flag", args: []string{"serve", "--adr", "127.0.0.1:0"}, code: 2, stderr: "unknown flag: --adr"},
		{name: "bad flag value", args: []string{"serve", "--max-body", "lots"}, code: 2, stderr: "want a positive size"},
		{name: "bad environment variable", env: []string{"SCENARIOMOCK_MAX_BODY=lots"}, args: []string{"serve"}, code: 2, stderr: "SCENARIOMOCK_MAX_BODY"},
		{name: "negative journal size", args: []string{"serve", "--addr", "127.0.0.1:0", "--journal-size", "-1"}, code: 2, stderr: "--journal-size -1"},
		{name: "bad journal secrets", args: []string{"serve", "--addr", "127.0.0.1:0", "--journal-secrets", "hide"}, code: 2, stderr: `invalid argument "hide" for "--journal-secrets" flag: want redact or keep`},
		{name: "zero time scale", args: []string{"serve", "--addr", "127.0.0.1:0", "--time-scale", "0"}, code: 2, stderr: "--time-scale 0: want a factor above 0"},
		{name: "zero webhook queue", args: []string{"serve", "--addr", "127.0.0.1:0", "--webhook-queue", "0"}, code: 2, stderr: "--webhook-queue 0"},
		{name: "bad log level", args: []string{"serve", "--addr", "127.0.0.1:0", "--log-level", "verbose"}, code: 2, stderr: `--log-level "verbose"`},
		{name: "validate without paths", args: []string{"validate"}, code: 2, stderr: "validate needs files or directories"},
		{name: "health with an argument", args: []string{"health", "extra"}, code: 2, stderr: "unknown command"},
		{name: "health, bad address", args: []string{"health", "--addr", "nonsense"}, code: 2, stderr: `--addr "nonsense"`},
		{name: "port in use", args: []string{"serve", "--addr", taken.Addr().String()}, code: 3, stderr: "address already in use; another process listens there (another scenariomock?): stop it, or choose another port with --addr"},
		{name: "admin port in use", args: []string{"serve", "--addr", "127.0.0.1:0", "--admin-addr", taken.Addr().String()}, code: 3, stderr: "--admin-addr: listen tcp " + taken.Addr().String()},
		{name: "admin address malformed", args: []string{"serve", "--addr", "127.0.0.1:0", "--admin-addr", "nonsense"}, code: 3, stderr: "--admin-addr: listen tcp: address nonsense"},
		{name: "admin token with a space", env: []string{"SCENARIOMOCK_ADMIN_TOKEN=two words"}, args: []string{"serve", "--addr", "127.0.0.1:0"}, code: 2, stderr: `--admin-token (or SCENARIOMOCK_ADMIN_TOKEN): byte 4 is " "`},
		{name: "port in use, from the environment", env: []string{"SCENARIOMOCK_ADDR=" + taken.Addr().String()}, args: []string{"serve"}, code: 3, stderr: "address already in use"},
		{name: "unhealthy: nothing listens", args: []string{"health", "--addr", "127.0.0.1:1"}, code: 4, stderr: "connection refused (is `scenariomock serve` running at that address?)"},
		{name: "unhealthy: connection closed", args: []string{"health", "--addr", hangUp.Addr().String()}, code: 4, stderr: "unhealthy"},
		{name: "unhealthy: not 200", args: []string{"health", "--addr", sickAddr}, code: 4, stderr: "503 Service Unavailable"},
		{name: "unhealthy, address from the environment", env: []string{"SCENARIOMOCK_ADDR=" + sickAddr}, args: []string{"health"}, code: 4, stderr: sickAddr},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, bin, tc.env, tc.args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr %q, want it to contain %q", stderr, tc.stderr)
			}
			if !strings.Contains(stdout, tc.stdout) {
				t.Errorf("stdout %q, want it to contain %q", stdout, tc.stdout)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "4e785266c1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6"
	cases := []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no build information", nil, "(devel)"},
		{"go install module@v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"built from a clean checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "false")}, "revision " + rev},
		{"built from a modified checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "true")}, "revision " + rev + ", modified"},
		{"pseudo-version and revision", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261202223625-4e785266c1c2+dirty"}, Settings: vcs(rev, "true")},
			"v0.0.0-20261202223625-4e785266c1c2+dirty (revision " + rev + ", modified)"},
		{"-buildvcs=false", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "(devel)"},
	}
	for _, tc := range cases {
		if got := version(tc.info, tc.info != nil); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestSeedFlag: two servers started with the same --seed create the same
// payment id for the same first request; a third without it does not.
func TestSeedFlag(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	firstID := func(args ...string) string {
		_, addr, logs := started(t, bin, append([]string{"--example", "payments-stateful"}, args...)...)
		req, _ := http.NewRequest("POST", "http://"+addr+"/payments", strings.NewReader(`{"amount":1,"currency":"EUR"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "seed-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST: %v\n%s", err, logs)
		}
		defer resp.Body.Close()
		var v struct{ ID string }
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != 201 {
			t.Fatalf("POST: %d %v", resp.StatusCode, err)
		}
		return v.ID
	}
	a, b, c := firstID("--seed", "11"), firstID("--seed=11"), firstID()
	if a != b || a == "" {
		t.Errorf("--seed 11 twice gave ids %q and %q", a, b)
	}
	if c == a {
		t.Errorf("without --seed the id %q repeats the seeded one", c)
	}
}

// runCLI runs the binary with args, the environment's SCENARIOMOCK_*
// variables replaced by env, and returns its exit code and output. A run
// that should have ended but serves instead is killed, and fails the
// test, after a minute.
func runCLI(t *testing.T, bin string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envPrefix) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}
