//go:build unix

package openapi_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
)

// TestRefFilesHeldToTheSpecDirectory checks the files a $ref names before
// the library opens them: a link inside the spec's directory to a file
// outside it is refused (it served the outside file's example), and so is
// a named pipe, inside or outside (it blocked the load for good, SIGTERM
// included), each at the $ref's line and column and promptly.
func TestRefFilesHeldToTheSpecDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret.yaml"), []byte("Secret: {type: object, properties: {s: {type: string, example: TOPSECRET}}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "secret.yaml"), filepath.Join(sub, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(sub, "pipe.yaml"), filepath.Join(dir, "pipe.yaml")} {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ name, ref, want string }{
		{"link out", "./link.yaml#/Secret", "sub/link.yaml, a link to " + filepath.Join(dir, "secret.yaml") + ", outside the spec's directory"},
		{"pipe inside", "./pipe.yaml#/x", "sub/pipe.yaml, which is not a regular file"},
		{"pipe outside", "../pipe.yaml#/x", "outside the spec's directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := filepath.Join(sub, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			doc := "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get:\n      responses:\n        '200':\n          description: ok\n          content:\n            application/json:\n              schema: {$ref: \"" + tc.ref + "\"}\n"
			if err := os.WriteFile(spec, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				set, err := scenarios.LoadBytes("x.yaml", []byte("routes: []\n"))
				if err == nil {
					err = openapi.Expand(set, openapi.Options{Extra: []*scenarios.OpenAPISource{openapi.FileSource(spec, "")}})
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), spec+":11:24: ") {
					t.Fatalf("Expand: %v\nwant an error at %s:11:24 saying %q", err, spec, tc.want)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("Expand still running after 30 s: it opened the named pipe")
			}
		})
	}
}
