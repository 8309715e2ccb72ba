package scenarios

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestLoadFS loads a file of an fs.FS (the built-in examples) whose
// bodyFile: and openapi: files are beside it in the same FS, the spec
// gzip-compressed and read decompressed; a file outside the FS's tree,
// or not in it, is refused at its position.
func TestLoadFS(t *testing.T) {
	t.Parallel()
	spec := []byte("openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\n")
	fsys := fstest.MapFS{
		"examples/shop.yaml": {Data: []byte(`openapi: { spec: shop/spec.yaml.gz }
routes:
  - { path: /logo, respond: { bodyFile: shop/logo.txt } }
`)},
		"examples/shop/spec.yaml.gz": {Data: gzipped(t, spec)},
		"examples/shop/logo.txt":     {Data: []byte("logo")},
		"examples/bad.yaml": {Data: []byte(`routes:
  - { path: /a, respond: { bodyFile: ../../secret } }
  - { path: /b, respond: { bodyFile: nothere.txt } }
`)},
	}
	set, err := LoadFS(fsys, "examples/shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := set.OpenAPISources()
	if len(src) != 1 || !bytes.Equal(src[0].SpecData, spec) {
		t.Fatalf("spec %q; want the decompressed document", src[0].SpecData)
	}
	if r := set.Routes()[0]; string(r.Responses[0].Body) != "logo" {
		t.Errorf("bodyFile %q", r.Responses[0].Body)
	}
	if len(set.Deps) != 0 {
		t.Errorf("deps %v; the built-in files cannot change", set.Deps)
	}
	_, err = LoadFS(fsys, "examples/bad.yaml")
	for _, want := range []string{`examples/bad.yaml:2:38: routes[0]: respond.bodyFile: bodyFile "../../secret" is outside the built-in files`,
		`examples/bad.yaml:3:38: routes[1]: respond.bodyFile: bodyFile "nothere.txt": no such file among the built-in files (looked for examples/nothere.txt)`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v; want %s", err, want)
		}
	}
}

// TestGunzip: a gzip file is read decompressed, within the limit; more
// than the limit, or a broken stream, is an error; anything else passes
// as it is.
func TestGunzip(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte("stripe "), 1000)
	if got, err := gunzip(gzipped(t, data), int64(len(data))); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("at the limit: %d bytes, %v", len(got), err)
	}
	if _, err := gunzip(gzipped(t, data), int64(len(data))-1); err == nil || !strings.Contains(err.Error(), "decompresses to more than") {
		t.Errorf("past the limit: %v", err)
	}
	broken := gzipped(t, data)
	broken = broken[:len(broken)/2]
	if _, err := gunzip(broken, 1<<20); err == nil {
		t.Error("a truncated stream was read")
	}
	if got, err := gunzip(data, 10); err != nil || !bytes.Equal(got, data) {
		t.Errorf("not gzip: %v", err)
	}
}

// TestLoadWithBuiltin: a file a scenario names that is not beside it is
// read from the built-in files under the same name (a copy of the Stripe
// example serves the spec built in); one beside it wins; without built-in
// files it is the usual error.
func TestLoadWithBuiltin(t *testing.T) {
	t.Parallel()
	builtin := fstest.MapFS{"shop/spec.yaml.gz": {Data: gzipped(t, []byte("openapi: 3.1.0\ninfo: {title: built in, version: '1'}\npaths: {}\n"))}}
	dir := t.TempDir()
	file := filepath.Join(dir, "shop.yaml")
	if err := os.WriteFile(file, []byte("openapi: { spec: shop/spec.yaml.gz }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := LoadWith(builtin, file)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(set.OpenAPISources()[0].SpecData); !strings.Contains(got, "built in") {
		t.Errorf("spec %q; want the built-in one", got)
	}
	if h, err := set.Rehash(); err != nil || h != set.Hash {
		t.Errorf("rehash %s, %v; want the load's %s: a built-in file is no dep", h, err, set.Hash)
	}
	if _, err := Load(file); err == nil || !strings.Contains(err.Error(), `file "shop/spec.yaml.gz": no such file`) {
		t.Errorf("without built-in files: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "shop"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "shop", "spec.yaml.gz"), []byte("openapi: 3.1.0\ninfo: {title: beside, version: '1'}\npaths: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err = LoadWith(builtin, file)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(set.OpenAPISources()[0].SpecData); !strings.Contains(got, "beside") {
		t.Errorf("spec %q; want the one beside the file", got)
	}
}
