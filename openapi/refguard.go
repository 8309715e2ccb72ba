package openapi

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pb33f/go-yaml"
	"github.com/scenariomock/scenariomock/scenarios"
)

// checkRefFiles checks, before the library reads them, the files the
// spec's $refs name, and the files theirs name in turn: each must be a
// regular file inside root once symbolic links are resolved. The library
// opens what a $ref names while it builds the model: a named pipe there
// blocked the load for good (SIGTERM included), and a link inside the
// directory read a file outside it. The $refs are found as specs write
// them, JSON ("$ref": "x.yaml#/A") or YAML ($ref: x.yaml, '$ref': "x");
// after the model is built, compileSource still holds every file the
// library did read to root. Each is held to maxSpecDepth, as the spec is.
func checkRefFiles(spec string, data []byte, root, realRoot string) error {
	if abs, err := filepath.Abs(spec); err == nil {
		spec = abs
	}
	seen := map[string]bool{}
	type file struct {
		path string
		data []byte
	}
	queue := []file{{spec, data}}
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		for _, ref := range fileRefs(f.data) {
			target := ref.path
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(f.path), filepath.FromSlash(target))
			}
			target = filepath.Clean(target)
			if seen[target] {
				continue
			}
			seen[target] = true
			fi, err := os.Stat(target)
			if err != nil {
				continue // missing: the library says where
			}
			real, err := filepath.EvalSymlinks(target)
			if err != nil {
				continue
			}
			pos := scenarios.Pos{File: f.path, Line: ref.line, Col: ref.col}
			if outside(realRoot, real) {
				return &scenarios.Error{Pos: pos, Msg: readsOutside(target, real, root)}
			}
			if !fi.Mode().IsRegular() {
				return &scenarios.Error{Pos: pos, Msg: fmt.Sprintf("openapi: a $ref reads %s, which is not a regular file", target)}
			}
			if fi.Size() > scenarios.MaxBodyFileSize {
				return &scenarios.Error{Pos: pos, Msg: fmt.Sprintf("openapi: a $ref reads %s, larger than %d bytes", target, scenarios.MaxBodyFileSize)}
			}
			b, err := os.ReadFile(target)
			if err != nil {
				continue
			}
			var n yaml.Node // not YAML (an x-codeSamples source): read as text
			if yaml.Unmarshal(b, &n) == nil {
				if d := deeperThan(&n, maxSpecDepth); d != nil {
					return &scenarios.Error{Pos: scenarios.Pos{File: target, Line: d.Line, Col: d.Column},
						Msg: fmt.Sprintf("openapi: the document nests more than %d levels deep here", maxSpecDepth)}
				}
			}
			queue = append(queue, file{target, b})
		}
	}
	return nil
}

// realPath is path with symbolic links resolved, or path itself when they
// cannot be.
func realPath(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return path
}

// readsOutside says that a $ref reads path, real once links are
// resolved, outside the spec's directory root.
func readsOutside(path, real, root string) string {
	where := real
	if real != path {
		where = path + ", a link to " + real
	}
	return fmt.Sprintf("openapi: a $ref reads %s, outside the spec's directory %s", where, root)
}

// outside says whether path is not below root (both absolute, links
// resolved).
func outside(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// fileRef is a $ref to another file: the file part of its value, and
// where the $ref is.
type fileRef struct {
	path      string
	line, col int
}

// fileRefs lists the $refs of data that name a local file: not those
// within the document (#/…) nor remote ones (https://…), which are not
// read from the disk.
func fileRefs(data []byte) []fileRef {
	var out []fileRef
	line, lineStart, counted := 1, 0, 0
	for i := 0; ; {
		j := bytes.Index(data[i:], []byte("$ref"))
		if j < 0 {
			return out
		}
		at := i + j
		i = at + len("$ref")
		k := i
		if k < len(data) && (data[k] == '"' || data[k] == '\'') {
			k++
		}
		for k < len(data) && (data[k] == ' ' || data[k] == '\t') {
			k++
		}
		if k >= len(data) || data[k] != ':' {
			continue
		}
		k++
		for k < len(data) && (data[k] == ' ' || data[k] == '\t') {
			k++
		}
		if k < len(data) && (data[k] == '"' || data[k] == '\'') {
			k++
		}
		end := k
		for end < len(data) && !strings.ContainsRune("\"'#\r\n,}] \t", rune(data[end])) {
			end++
		}
		value := string(data[k:end])
		if value == "" || strings.Contains(value, "://") {
			continue
		}
		for ; counted < at; counted++ {
			if data[counted] == '\n' {
				line, lineStart = line+1, counted+1
			}
		}
		out = append(out, fileRef{path: value, line: line, col: at - lineStart + 1})
	}
}
