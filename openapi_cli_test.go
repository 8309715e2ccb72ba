package main

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeOpenAPI runs serve --openapi on a spec alone: its operations
// answer, an edit of the spec is served once the watcher sees it, a broken
// edit keeps the last good set, and --seed repeats the ids it makes.
func TestServeOpenAPI(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	dir := t.TempDir()
	for _, f := range []string{"openapi.yaml", "schemas.yaml"} {
		b, err := os.ReadFile(filepath.Join("openapi", "testdata", "petstore", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := filepath.Join(dir, "openapi.yaml")
	_, addr, logs := started(t, bin, "--openapi", spec, "--debounce", "10ms", "--seed", "3")
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatalf("GET %s: %v\n%s", path, err, logs)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/pets"); code != 200 || !strings.Contains(body, `"object":"list"`) {
		t.Fatalf("GET /pets: %d %s", code, body)
	}
	// The admin API lists the document once (before, also the empty
	// scenario file it is loaded around, with 0 routes).
	if code, body := get("/__admin/scenarios?limit=0"); code != 200 || strings.Count(body, `"path": "`+spec+`"`) != 1 {
		t.Errorf("GET /__admin/scenarios: %d %s; want the spec listed once among the files", code, body)
	}
	if code, _ := get("/owners"); code != 404 {
		t.Fatalf("GET /owners before the edit: %d; want 404", code)
	}
	orig, _ := os.ReadFile(spec)
	broken := strings.Replace(string(orig), "paths:\n", "paths:\n  /owners: [\n", 1)
	if err := os.WriteFile(spec, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(logs.String(), "reload failed") }, "the broken edit's reload to fail", logs)
	if !strings.Contains(logs.String(), "openapi.yaml:") {
		t.Errorf("the reload error does not name the spec's file:line:col:\n%s", logs)
	}
	if code, _ := get("/pets"); code != 200 {
		t.Fatalf("GET /pets after a broken edit: %d; want the last good set", code)
	}
	owners := strings.Replace(string(orig), "paths:\n", `paths:
  /owners:
    get:
      operationId: listOwners
      responses:
        "200":
          description: owners
          content:
            application/json:
              schema: {type: array, items: {type: string, example: ada}}
`, 1)
	if err := os.WriteFile(spec, []byte(owners), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { code, _ := get("/owners"); return code == 200 }, "GET /owners to be served after the edit", logs)
	if _, body := get("/owners"); body != `["ada"]` {
		t.Errorf("GET /owners: %s; want the schema's example in a list", body)
	}
}

func waitFor(t *testing.T, cond func() bool, what string, logs *syncLog) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s:\n%s", what, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestValidateOpenAPI: validate --openapi checks a spec alone, as serve
// --openapi serves it, and names a broken one's file:line:col (before,
// the flag was unknown to validate).
func TestValidateOpenAPI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, f := range []string{"openapi.yaml", "schemas.yaml"} {
		b, err := os.ReadFile(filepath.Join("openapi", "testdata", "petstore", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "openapi.yaml" {
			if err := os.WriteFile(filepath.Join(dir, "dup.yaml"), []byte(strings.Replace(string(b), "operationId: showPet", "operationId: listPets", 1)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// One document is one file, though it $refs another (before, the
	// empty scenario file it is loaded around counted too: "2 files").
	if out, _, err := runCmd(t, "validate", "--openapi", filepath.Join(dir, "openapi.yaml")); err != nil || out != "ok: 1 file, 4 routes\n" {
		t.Errorf("validate --openapi of the petstore: %q, %v; want ok: 1 file with its 4 operations", out, err)
	}
	_, stderr, err := runCmd(t, "validate", "--openapi", filepath.Join(dir, "dup.yaml"))
	if err == nil || !strings.Contains(stderr, "dup.yaml:") || !strings.Contains(stderr, `operationId "listPets"`) {
		t.Errorf("validate --openapi of a spec with a duplicate operationId: %v\n%s; want the problem at dup.yaml:line:col", err, stderr)
	}
}

// TestServeOpenAPIReferences: serve --openapi checks a body's references
// by default, --openapi-existing-ids names ids taken as there, and
// --openapi-references off takes any; a bad value is refused before
// serving.
func TestServeOpenAPIReferences(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	spec := filepath.Join("openapi", "testdata", "refs", "openapi.yaml")
	order := func(addr, customer string) int {
		resp, err := http.Post("http://"+addr+"/orders", "application/json", strings.NewReader(`{"customer":"`+customer+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	_, checked, _ := started(t, bin, "--openapi", spec, "--openapi-existing-ids", "^cus_test_")
	if nope, test := order(checked, "cus_nope"), order(checked, "cus_test_1"); nope != 400 || test != 200 {
		t.Errorf("checked: cus_nope %d, cus_test_1 %d; want 400, 200", nope, test)
	}
	_, off, _ := started(t, bin, "--openapi", spec, "--openapi-references", "off")
	if nope := order(off, "cus_nope"); nope != 200 {
		t.Errorf("--openapi-references off: cus_nope %d; want 200", nope)
	}
	for _, args := range [][]string{{"--openapi-references", "maybe"}, {"--openapi-existing-ids", "(cus"}} {
		if _, stderr, err := runCmd(t, append([]string{"serve", "--openapi", spec}, args...)...); err == nil || !strings.Contains(err.Error()+stderr, args[0]) {
			t.Errorf("%v: %v %s; want an error naming %s", args, err, stderr, args[0])
		}
	}
}

// TestServeOpenAPIProxy: --openapi-proxy forwards every operation to the
// upstream and checks its answers (Prism's proxy mode), verify --violating
// counts those that broke the contract, and a URL that is not one is
// refused before the server starts.
func TestServeOpenAPIProxy(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/pets/good" {
			_, _ = io.WriteString(w, `{"id":"good","name":"Rex","age":3}`)
			return
		}
		_, _ = io.WriteString(w, `{"id":"bad"}`)
	}))
	defer up.Close()
	spec := filepath.Join("openapi", "testdata", "petstore", "openapi.yaml")
	_, addr, logs := started(t, bin, "--openapi", spec, "--openapi-proxy", up.URL)
	for path, want := range map[string]int{"/pets/good": 200, "/pets/bad": 502} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatalf("GET %s: %v\n%s", path, err, logs)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || want == 502 && !strings.Contains(string(b), "response body #: missing properties 'name', 'age'") {
			t.Errorf("GET %s: %d %s; want %d", path, resp.StatusCode, b, want)
		}
	}
	// In CI: verify --violating counts the exchanges that broke the
	// contract (here the upstream's answer to /pets/bad).
	if _, stderr, err := runCmd(t, "verify", "--addr", addr, "--violating", "--count", "1", "--path", "/pets/bad"); err != nil {
		t.Errorf("verify --violating --count 1: %v\n%s", err, stderr)
	}
	if _, _, err := runCmd(t, "verify", "--addr", addr, "--violating", "--none"); err == nil {
		t.Error("verify --violating --none passed after an answer broke its operation")
	}
	if _, stderr, err := runCmd(t, "verify", "--addr", addr, "--violating", "--none", "--path", "/pets/good"); err != nil {
		t.Errorf("verify --violating --none of the good answer: %v\n%s", err, stderr)
	}
	out, err := exec.Command(bin, "serve", "--openapi", spec, "--openapi-proxy", "ftp://x").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), `--openapi-proxy "ftp://x": want the upstream's base URL`) {
		t.Errorf("a bad --openapi-proxy: %v %s; want exit 2 and why", err, out)
	}
}

// TestServeOpenAPIDynamic: serve --openapi --dynamic draws every answer
// afresh (Prism's mock -d), the same ones again under the same --seed; a
// file's openapi: block says dynamic: on for itself, a request's Prefer:
// dynamic=false answers the example; a bad value is refused at its line.
func TestServeOpenAPIDynamic(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	spec, err := filepath.Abs(filepath.Join("openapi", "testdata", "dynamic", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	get := func(addr string, header ...string) string {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+addr+"/samples", nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET /samples: %d %s", resp.StatusCode, b)
		}
		return string(b)
	}
	const fixed = `{"email":"fixed@example.com"}`
	_, static, _ := started(t, bin, "--openapi", spec)
	if got := get(static); got != fixed {
		t.Errorf("serve --openapi: %s; want the example, %s", got, fixed)
	}
	_, a, _ := started(t, bin, "--openapi", spec, "--dynamic", "--seed", "5")
	_, b, _ := started(t, bin, "--openapi", spec, "--dynamic", "--seed", "5")
	a1, a2, b1, b2 := get(a), get(a), get(b), get(b)
	if a1 == fixed || a1 == a2 {
		t.Errorf("--dynamic answered %s, then %s; want two fresh draws", a1, a2)
	}
	if a1 != b1 || a2 != b2 {
		t.Errorf("--dynamic --seed 5 answered %s, %s, then again %s, %s; want the same", a1, a2, b1, b2)
	}
	if got := get(a, "Prefer", "dynamic=false"); got != fixed {
		t.Errorf("--dynamic, Prefer: dynamic=false: %s; want the example", got)
	}

	dir := t.TempDir()
	file := func(dynamic string) string {
		return "openapi:\n  spec: openapi.yaml\n  dynamic: " + dynamic + "\nroutes: []\n"
	}
	data, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"openapi.yaml": string(data), "api.yaml": file("on")} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, d, _ := started(t, bin, filepath.Join(dir, "api.yaml"))
	if d1, d2 := get(d), get(d); d1 == fixed || d1 == d2 {
		t.Errorf("dynamic: on answered %s, then %s; want two fresh draws", d1, d2)
	}
	if err := os.WriteFile(filepath.Join(dir, "api.yaml"), []byte(file("maybe")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runCmd(t, "validate", filepath.Join(dir, "api.yaml"))
	if err == nil || !strings.Contains(stderr, "api.yaml:3:12") || !strings.Contains(stderr, "openapi.dynamic") {
		t.Errorf("dynamic: maybe: %v\n%s; want it refused at api.yaml:3:12", err, stderr)
	}
}
