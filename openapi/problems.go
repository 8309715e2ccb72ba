package openapi

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pb33f/go-yaml"
	"github.com/pb33f/libopenapi/index"

	"github.com/scenariomock/scenariomock/scenarios"
)

// Bad input in a document split across files is reported where it is
// written: the file, line and column of the $ref that cannot be
// resolved, or of the YAML that does not parse, with a sentence that says
// what is wrong. libopenapi alone does not: it places a broken $ref of a
// sibling file at that line of the root document, says nothing at all of a
// broken $ref two files deep (the document builds without it), and reads
// a sibling file that is not YAML as a string (so that a $ref to a code
// sample works), which silently drops the operations of a path file with
// a syntax error.

// refProblems lists the $refs of every file of the document that cannot
// be resolved.
func refProblems(rx *index.Rolodex, spec string) []error {
	if rx == nil {
		return nil
	}
	var out []error
	for _, ix := range allIndexes(rx) {
		file := fileOf(spec, ix)
		for _, e := range ix.GetReferenceIndexErrors() {
			var ie *index.IndexingError
			if !errors.As(e, &ie) || ie.Node == nil {
				continue
			}
			ref := refValue(ie.Node)
			if ref == "" {
				continue
			}
			pos := scenarios.Pos{File: file, Line: ie.Node.Line, Col: ie.Node.Column}
			out = append(out, &scenarios.Error{Pos: pos, Msg: "openapi: " + refSentence(ref, ix.GetSpecAbsolutePath())})
		}
	}
	return out
}

// scalarRefProblems lists the $refs within a file that resolve to a
// plain value (#/x-name: a string), which no $ref of a document may name:
// the library builds it as an empty schema, so that a typo answered null
// and validated nothing. A 3.1 schema may be true or false, and a $ref
// under an x- extension, or to another file (a code sample), may read
// text: those are left alone.
func scalarRefProblems(rx *index.Rolodex, spec string) []error {
	if rx == nil {
		return nil
	}
	var out []error
	for _, ix := range allIndexes(rx) {
		targets := map[string]*yaml.Node{}
		for _, rm := range ix.GetMappedReferencesSequenced() {
			if r := rm.Reference; r != nil && r.Node != nil {
				targets[rm.FullDefinition] = r.Node
			}
		}
		for _, r := range ix.GetRawReferencesSequenced() {
			file, _, _ := strings.Cut(r.RawRef, "#")
			if file != "" || r.IsExtensionRef || r.Node == nil {
				continue
			}
			t := targets[r.FullDefinition]
			if t == nil || t.Kind != yaml.ScalarNode || t.Value == "true" || t.Value == "false" {
				continue
			}
			pos := scenarios.Pos{File: fileOf(spec, ix), Line: r.Node.Line, Col: r.Node.Column}
			out = append(out, &scenarios.Error{Pos: pos, Msg: fmt.Sprintf("openapi: $ref %q names the plain value %q (line %d), not a schema or other object; point it at one, such as #/components/schemas/Pet", r.RawRef, t.Value, t.Line)})
		}
	}
	return out
}

// refValue is the target of a $ref mapping node.
func refValue(n *yaml.Node) string {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "$ref" {
			return n.Content[i+1].Value
		}
	}
	return ""
}

// refSentence says why ref, written in the file at from, resolves to
// nothing.
func refSentence(ref, from string) string {
	file, fragment, _ := strings.Cut(ref, "#")
	switch {
	case strings.HasPrefix(file, "http://") || strings.HasPrefix(file, "https://"):
		return fmt.Sprintf("$ref %q is remote: remote references are not fetched; save the file beside the spec and refer to it by a relative path", ref)
	case file != "":
		target := filepath.Join(filepath.Dir(from), filepath.FromSlash(file))
		if _, err := os.Stat(target); err != nil {
			return fmt.Sprintf("$ref %q: there is no file %s", ref, target)
		}
		return fmt.Sprintf("$ref %q: %s has nothing at #%s", ref, file, fragment)
	}
	return fmt.Sprintf("$ref %q: %s has nothing at #%s", ref, filepath.Base(from), fragment)
}

// missingComponent is libopenapi's build error for a $ref whose file has
// nothing at its fragment: "component `#/Pet` does not exist in the
// specification".
var missingComponent = regexp.MustCompile("component `(#[^`]*)` does not exist")

// componentProblem places a missing component where the $ref to it is
// written, which the build's error does not say; nil when err is not
// that error or no $ref of a file names the component.
func componentProblem(rx *index.Rolodex, spec string, err error) error {
	m := missingComponent.FindStringSubmatch(err.Error())
	if m == nil || rx == nil {
		return nil
	}
	for _, ix := range allIndexes(rx) {
		for _, r := range ix.GetRawReferencesSequenced() {
			file, fragment, _ := strings.Cut(r.RawRef, "#")
			if file == "" || "#"+fragment != m[1] || r.Node == nil {
				continue // a $ref within its own file resolves, or refProblems says it does not
			}
			pos := scenarios.Pos{File: fileOf(spec, ix), Line: r.Node.Line, Col: r.Node.Column}
			return &scenarios.Error{Pos: pos, Msg: "openapi: " + refSentence(r.RawRef, ix.GetSpecAbsolutePath())}
		}
	}
	return nil
}

// allIndexes is the root document's index and those of the files its
// $refs read (GetIndexes lists only the latter).
func allIndexes(rx *index.Rolodex) []*index.SpecIndex {
	out := rx.GetIndexes()
	if root := rx.GetRootIndex(); root != nil && !slices.Contains(out, root) {
		out = append([]*index.SpecIndex{root}, out...)
	}
	return out
}

// refTo finds where a $ref that reads the file at abs is written.
func refTo(rx *index.Rolodex, abs, spec string) (scenarios.Pos, bool) {
	for _, ix := range allIndexes(rx) {
		for _, r := range ix.GetRawReferencesSequenced() {
			file, _, _ := strings.Cut(r.FullDefinition, "#")
			if file == abs && r.Node != nil {
				return scenarios.Pos{File: fileOf(spec, ix), Line: r.Node.Line, Col: r.Node.Column}, true
			}
		}
	}
	return scenarios.Pos{}, false
}

// yamlPos reads go-yaml's "at L3.C7" position.
var yamlPos = regexp.MustCompile(`at L(\d+)\.C(\d+)`)

// siblingProblems lists the sibling files written as YAML or JSON that do
// not parse.
func siblingProblems(spec string, siblings []string, data [][]byte) []error {
	var out []error
	for i, p := range siblings {
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
		default:
			continue // a code sample, a Markdown description: read as text
		}
		var n yaml.Node
		err := yaml.Unmarshal(data[i], &n)
		if err == nil {
			continue
		}
		pos := scenarios.Pos{File: relTo(spec, p), Line: 1, Col: 1}
		msg := err.Error()
		if m := yamlPos.FindStringSubmatch(msg); m != nil {
			pos.Line, _ = strconv.Atoi(m[1])
			pos.Col, _ = strconv.Atoi(m[2])
		}
		out = append(out, &scenarios.Error{Pos: pos, Msg: "openapi: " + yamlSentence(msg)})
	}
	return out
}

// yamlSentence says a go-yaml error plainly: "go-yaml load error in
// parser (while parsing a flow sequence) at L28.C12-L30.C9: did not find
// expected ',' or ']'" (the position is the error's file:line:col) becomes
// "the file does not parse as YAML: did not find expected ',' or ']'".
// Other messages are returned as they are.
func yamlSentence(msg string) string {
	m := yamlPos.FindStringIndex(msg)
	if m == nil || !strings.Contains(msg, "go-yaml") {
		return msg
	}
	if j := strings.Index(msg[m[1]:], ": "); j >= 0 {
		return "the file does not parse as YAML: " + msg[m[1]+j+2:]
	}
	return msg
}

// relTo writes the absolute path p as the spec's path is written
// (relative to where the spec was named from, when it lies below it).
func relTo(spec, p string) string {
	abs, err := filepath.Abs(spec)
	if err != nil {
		return p
	}
	rel, err := filepath.Rel(filepath.Dir(abs), p)
	if err != nil || strings.HasPrefix(rel, "..") {
		return p
	}
	return filepath.Join(filepath.Dir(spec), rel)
}
