package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
)

// download puts module@version into the module cache with `go mod
// download` (from GOPROXY, the Go module proxy) and returns its directory
// there. It runs in dir, outside any module, so that no go.mod is touched.
func download(ctx context.Context, module, version, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	// On an error go mod download -json still prints the module, with Error.
	var m struct{ Dir, Error string }
	if jerr := json.Unmarshal(stdout, &m); jerr != nil || m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %v %s %s", module, version, err, m.Error, bytes.TrimSpace(stderr.Bytes()))
	}
	return m.Dir, nil
}

// installStripeMock runs `go install github.com/stripe/stripe-mock@version`
// into gobin and returns the binary's path. Built from source, it calls
// itself "master" in its Stripe-Mock-Version header.
func installStripeMock(ctx context.Context, version, gobin string, w io.Writer) (string, error) {
	fmt.Fprintf(w, "installing github.com/stripe/stripe-mock@%s into %s\n", version, gobin)
	cmd := exec.CommandContext(ctx, "go", "install", "github.com/stripe/stripe-mock@"+version)
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOWORK=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install github.com/stripe/stripe-mock@%s: %v\n%s", version, err, out)
	}
	return filepath.Join(gobin, "stripe-mock"), nil
}

// copyTree copies the regular files and directories under src to dst,
// writable by their owner (the module cache's copies are read-only, and go
// test may add go.sum lines).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil // the module cache holds no links; a -dir might
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return copyFile(path, target, info.Mode().Perm()|0o600)
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
