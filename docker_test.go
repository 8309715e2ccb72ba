package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/internal/testport"
)

// TestDockerfilesAgree: Dockerfile.prebuilt is Dockerfile's runtime
// stage, but for where the binary comes from, so that the image the
// Docker test builds is the one users build.
func TestDockerfilesAgree(t *testing.T) {
	t.Parallel()
	runtime := func(file, copyLine string) []string {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		_, stage, ok := strings.Cut(string(b), "\nFROM scratch\n")
		if !ok {
			t.Fatalf("%s has no FROM scratch stage", file)
		}
		lines := strings.Split(strings.TrimSpace(stage), "\n")
		for i, l := range lines {
			if l == copyLine {
				lines[i] = "COPY <the binary> /scenariomock"
			}
		}
		return lines
	}
	main := runtime("Dockerfile", "COPY --from=build /out/scenariomock /scenariomock")
	prebuilt := runtime("Dockerfile.prebuilt", "COPY scenariomock /scenariomock")
	if strings.Join(main, "\n") != strings.Join(prebuilt, "\n") {
		t.Errorf("the runtime stages differ:\nDockerfile:\n%s\n\nDockerfile.prebuilt:\n%s", strings.Join(main, "\n"), strings.Join(prebuilt, "\n"))
	}
}

// dockerAvailable reports whether a Docker daemon answers. Where none
// does, the image test is skipped, unless SCENARIOMOCK_DOCKER_TEST=1 (set
// by .ci/run, which starts dockerd) makes that a failure.
func dockerAvailable(t *testing.T) {
	t.Helper()
	required := os.Getenv("SCENARIOMOCK_DOCKER_TEST") == "1"
	if _, err := exec.LookPath("docker"); err != nil {
		if required {
			t.Fatal("no docker: install it (apt-get install -y docker.io) and start dockerd")
		}
		t.Skip("no docker (apt-get install -y docker.io, then dockerd &; .ci/run does both)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "info").CombinedOutput(); err != nil {
		if required {
			t.Fatalf("docker info: %v\n%s", err, out)
		}
		t.Skip("no Docker daemon answers (start dockerd; .ci/run does)")
	}
}

// docker runs the docker client and returns its trimmed output.
func docker(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", args...)
	// The legacy builder: BuildKit's would need the buildx plugin, and
	// reads no registry either way for FROM scratch.
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("docker %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return strings.TrimSpace(out.String())
}

// TestDockerImage builds the image from the static binary the
// end-to-end tests share (Dockerfile.prebuilt; the Dockerfile's own build
// adds -trimpath and -ldflags="-s -w", which change no behaviour), runs it on a mounted directory, and checks what
// the README promises: healthy by its HEALTHCHECK, running as 65532,
// serving the mounted files, and reloading when one is replaced. The
// container shares the host's network and listens on 127.0.0.1 only, so
// every request stays on loopback.
func TestDockerImage(t *testing.T) {
	dockerAvailable(t)
	t.Parallel()
	ctxDir := t.TempDir()
	bin, err := os.ReadFile(binary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "scenariomock"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	demo, err := os.ReadFile("examples/payments-idempotency.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ctxDir, "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ctxDir, "examples", "payments-idempotency.yaml"), string(demo))
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	image := "scenariomock-test:" + hex.EncodeToString(b)
	start := time.Now()
	docker(t, "build", "-q", "-f", "Dockerfile.prebuilt", "-t", image, ctxDir)
	t.Logf("docker build: %s", time.Since(start))
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", image).Run() })

	// The mounted directory, readable by the image's user.
	mount := t.TempDir()
	if err := os.Chmod(mount, 0o755); err != nil {
		t.Fatal(err)
	}
	scenario := func(greeting string) string {
		return fmt.Sprintf("routes:\n  - { name: hello, method: GET, path: /hello, respond: { body: { greeting: %s } } }\n", greeting)
	}
	writeFile(t, filepath.Join(mount, "hello.yaml"), scenario("v1"))
	if err := os.Chmod(filepath.Join(mount, "hello.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := testport.Addr(t) // the container binds it by number
	id := docker(t, "run", "-d", "--network", "host", "-e", "SCENARIOMOCK_ADDR="+addr, "-v", mount+":/scenarios:ro", image)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := exec.Command("docker", "logs", id).CombinedOutput()
			t.Logf("container log:\n%s", out)
		}
		_ = exec.Command("docker", "rm", "-f", id).Run()
	})

	start = time.Now()
	// Healthy by its HEALTHCHECK (every 10s, after a 5s start period).
	deadline := time.Now().Add(2 * time.Minute)
	for {
		status := docker(t, "inspect", "-f", "{{.State.Health.Status}}", id)
		if status == "healthy" {
			break
		}
		if status == "unhealthy" || time.Now().After(deadline) {
			t.Fatalf("health %q, want healthy", status)
		}
		time.Sleep(500 * time.Millisecond)
	}

	t.Logf("healthy after %s", time.Since(start))
	// The process runs as 65532:65532.
	pid := docker(t, "inspect", "-f", "{{.State.Pid}}", id)
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) == 5 && (f[0] == "Uid:" || f[0] == "Gid:") && (f[1] != "65532" || f[2] != "65532") {
			t.Errorf("%s, want 65532", line)
		}
	}

	// It serves the mounted directory, and reloads when a file is
	// replaced as editors save (a new file renamed over the old).
	get := func() string {
		resp, err := http.Get("http://" + addr + "/hello")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(patience)
		for got := get(); !strings.Contains(got, want); got = get() {
			if time.Now().After(deadline) {
				t.Fatalf("GET /hello: %s, want %s", got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor(`"greeting":"v1"`)
	tmp := filepath.Join(mount, ".hello.yaml.swp")
	writeFile(t, tmp, scenario("v2"))
	if err := os.Chmod(tmp, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(mount, "hello.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor(`"greeting":"v2"`)
}
