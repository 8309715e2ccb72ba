package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/schema"
)

// TestSchemaCommand: `scenariomock schema` prints the schema file of the
// repository byte for byte.
func TestSchemaCommand(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile("schema/scenario.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := runCmd(t, "schema")
	if err != nil || out != string(want) {
		t.Errorf("schema: %v; output differs from schema/scenario.schema.json (%d bytes, want %d)", err, len(out), len(want))
	}
	if !json.Valid([]byte(out)) {
		t.Error("schema prints invalid JSON")
	}
}

// TestFilesDeclareSchema: every example, and the starter init writes, starts
// with the line that points editors at the schema.
func TestFilesDeclareSchema(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range append(files, "starter/scenarios.yaml", "examples/ci/payments.yaml") {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if first, _, _ := strings.Cut(string(data), "\n"); first != schema.Modeline {
			t.Errorf("%s starts with %q, want %q", f, first, schema.Modeline)
		}
	}
}

// TestInit: init writes the starter, which validates; a second init
// refuses to overwrite it (exit 1) and leaves it as it is; --force
// overwrites. Without a directory, it writes into the current one (run
// as a user runs it, through the binary, since the test cannot change
// its own directory while running in parallel).
func TestInit(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "new", "mocks")
	file := filepath.Join(dir, "scenarios.yaml")
	out, _, err := runCmd(t, "init", dir)
	if err != nil || !strings.Contains(out, "wrote "+file) {
		t.Fatalf("init: %v %q", err, out)
	}
	if data, err := os.ReadFile(file); err != nil || string(data) != string(starter) {
		t.Fatalf("init wrote %q, %v", data, err)
	}
	if out, stderr, err := runCmd(t, "validate", dir); err != nil || !strings.HasPrefix(out, "ok: 1 file, ") {
		t.Errorf("validate the starter: %v %s%s", err, out, stderr)
	}

	const edited = "# mine\nroutes: []\n"
	if err := os.WriteFile(file, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = runCmd(t, "init", dir)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitFailure || !strings.Contains(err.Error(), file+" already exists") || !strings.Contains(err.Error(), "--force") {
		t.Errorf("init over an existing file: %v, want exit 1 naming the file and --force", err)
	}
	if data, _ := os.ReadFile(file); string(data) != edited {
		t.Errorf("init without --force changed the file: %q", data)
	}
	if _, _, err := runCmd(t, "init", "--force", dir); err != nil {
		t.Errorf("init --force: %v", err)
	}
	if data, _ := os.ReadFile(file); string(data) != string(starter) {
		t.Errorf("init --force did not write the starter: %q", data)
	}

	bin := binary(t)
	cwd := t.TempDir()
	cmd := exec.Command(bin, "init")
	cmd.Dir = cwd
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("init in the current directory: %v\n%s", err, out)
	}
	cmd = exec.Command(bin, "validate", ".")
	cmd.Dir = cwd
	if out, err := cmd.CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "ok: 1 file") {
		t.Errorf("validate .: %v %s", err, out)
	}
	cmd = exec.Command(bin, "init")
	cmd.Dir = cwd
	out2, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitFailure || !strings.Contains(string(out2), "scenarios.yaml already exists") {
		t.Errorf("second init: %v %s, want exit 1", err, out2)
	}
}

// TestExamplesCommand: examples lists every built-in example with its
// purpose, prints one byte for byte, and refuses an unknown name with the
// list of names.
func TestExamplesCommand(t *testing.T) {
	t.Parallel()
	out, _, err := runCmd(t, "examples")
	if err != nil {
		t.Fatal(err)
	}
	names := exampleNames()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(names) {
		t.Fatalf("%d lines for %d examples:\n%s", len(lines), len(names), out)
	}
	for i, name := range names {
		if !regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `\s+\S.{20,}$`).MatchString(lines[i]) {
			t.Errorf("line %q, want %s and its purpose (the file's description:)", lines[i], name)
		}
		want, err := os.ReadFile("examples/" + name + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		if got, _, err := runCmd(t, "examples", name); err != nil || got != string(want) {
			t.Errorf("examples %s: %v; output differs from the file", name, err)
		}
	}
	_, _, err = runCmd(t, "examples", "nope")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), `examples "nope": no such example; the built-in examples are `+strings.Join(names, ", ")) {
		t.Errorf("examples nope: %v", err)
	}
	if _, _, err := runCmd(t, "examples", "a", "b"); err == nil {
		t.Error("examples with two names succeeded")
	}
}

// TestCompletion: cobra's completion command writes a script for each
// shell, and example names complete for --example and examples.
func TestCompletion(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		out, _, err := runCmd(t, "completion", shell)
		if err != nil || len(out) < 500 || !strings.Contains(out, "scenariomock") {
			t.Errorf("completion %s: %v, %d bytes", shell, err, len(out))
		}
	}
	all := strings.Join(exampleNames(), "\n") + "\n"
	for _, tc := range []struct {
		args []string
		want string // the names offered, one a line
	}{
		{[]string{"serve", "--example", ""}, all},
		{[]string{"routes", "--example", "payments-s"}, "payments-stateful\n"},
		{[]string{"examples", "st"}, "stripe\n"},
		{[]string{"examples", ""}, all},
		{[]string{"examples", "stripe", ""}, ""},
	} {
		out, _, err := runCmd(t, append([]string{"__complete"}, tc.args...)...)
		names, directive, _ := strings.Cut(out, ":")
		if err != nil || names != tc.want || !strings.HasPrefix(directive, "4") { // 4: no file completion
			t.Errorf("complete %q: %v %q, want %q", tc.args, err, out, tc.want)
		}
	}
}

// TestBuildInHealth: the ready line and GET /__admin/health carry the
// version --version prints.
func TestBuildInHealth(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	build := strings.TrimSuffix(strings.TrimPrefix(string(out), "scenariomock "), "\n")
	if build == "" || build == string(out) {
		t.Fatalf("--version printed %q", out)
	}
	_, addr, logs := started(t, bin)
	if !strings.Contains(logs.String(), "build=") || !strings.Contains(logs.String(), build) {
		t.Errorf("ready line without build %q:\n%s", build, logs)
	}
	resp, err := http.Get("http://" + addr + "/__admin/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var h map[string]any
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if h["build"] != build || h["status"] != "ok" || h["version"] != float64(1) || h["routes"] != float64(8) {
		t.Errorf("health %s, want build %q with status, version and routes", body, build)
	}
}

// TestStarterServes: the starter's headline features work as its comments
// say, over the real server: a retry with the same key replays the
// order, the order is stored, a lost- key loses the first answer and its
// retry gets it.
func TestStarterServes(t *testing.T) {
	t.Parallel()
	url, _, _ := serveText(t, starterName, string(starter), "", false)
	post := func(key, body string) (int, map[string]any, error) {
		req, _ := http.NewRequest("POST", url+"/orders", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer t")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out, nil
	}
	code, first, err := post("k1", `{"amount": 100}`)
	if err != nil || code != 201 || first["amount"] != float64(100) {
		t.Fatalf("create: %d %v %v", code, first, err)
	}
	if code, again, err := post("k1", `{"amount": 100}`); err != nil || code != 201 || again["id"] != first["id"] {
		t.Errorf("retry: %d %v %v, want the replay of %v", code, again, err, first["id"])
	}
	if code, _, err := post("k1", `{"amount": 200}`); err != nil || code != 422 {
		t.Errorf("same key, another body: %d %v, want 422", code, err)
	}
	resp, err := http.Get(url + "/orders/" + first["id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("get the order: %d", resp.StatusCode)
	}
	if _, _, err := post("lost-1", `{"amount": 5}`); err == nil {
		t.Error("lost-1: an answer came, want the connection reset")
	}
	code, replay, err := post("lost-1", `{"amount": 5}`)
	if err != nil || code != 201 || replay["amount"] != float64(5) {
		t.Errorf("lost-1 retry: %d %v %v, want the stored 201", code, replay, err)
	}
	if out, errOut, err := runCmd(t, "verify", "--addr", url, "--route", "create order, answer lost", "--idempotency", "replayed", "--count", "1"); err != nil {
		t.Errorf("%v %s%s", err, out, errOut)
	}
}
