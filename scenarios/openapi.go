package scenarios

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// OpenAPISource is a file's openapi: block: an OpenAPI document whose
// operations become routes of the set. The loader reads the files it names
// (within the scenario root, like a bodyFile) so that they count in the
// set's Hash and are watched; package openapi compiles them.
type OpenAPISource struct {
	Pos Pos // the openapi: key
	// Spec is the document's path as the loader opened it, and SpecData
	// its content; Fixtures and FixturesData the same for the optional
	// fixtures file (nil data without one).
	Spec, Fixtures         string
	SpecData, FixturesData []byte
	// Validate is "enforce", "report" or "off" ("enforce" when not
	// written); State is whether generated routes keep resources (true when
	// not written); UnknownIDs is "404" or "generate" ("404").
	Validate   string
	State      bool
	UnknownIDs string
	// Errors is the shape of a refusal: "problem" (RFC 9457, the default)
	// or "stripe" (Stripe's error object).
	Errors string
	// Scope is whose the stored resources are: everyone's (the zero
	// Scope) or each API key's own (the key read from Bearer or Basic
	// auth, so one key's customers are not another's), and within it
	// each value of the scope's headers (Stripe-Account).
	Scope Scope
	// References is whether a create's or update's body may name a
	// stored resource that is not there (Stripe's customer=cus_1 on a
	// payment intent): "check" (the default) refuses it as Stripe does,
	// "off" accepts it. ExistingIDs matches the ids that exist without
	// being created (Stripe's test payment methods, pm_card_visa), which
	// a check accepts; nil when none do.
	References  string
	ExistingIDs *regexp.Regexp
	// Headers, Delay and Idempotency are the file's defaults:, which apply
	// to the generated routes as to the file's own (Idempotency to the
	// operations that change something: POST, PUT, PATCH and DELETE).
	Headers     []Header
	Delay       Delay
	Idempotency *Idempotency
	// Lock is the file's defaults: lock: (its wait and timeout answer),
	// for the generated routes that lock the object they write.
	Lock *Lock
	// Proxy, when set, has every generated route answer with what this
	// upstream answers (Prism's proxy mode): the operation checks the
	// request before it is forwarded and the upstream's answer after.
	Proxy *Proxy
	// Dynamic draws every answer afresh from its schema, no example or
	// fixture (Prism's mock -d); false when not written.
	Dynamic bool
}

var (
	openapiFields  = []string{"spec", "fixtures", "validate", "state", "unknownIds", "errors", "scope", "references", "existingIds", "proxy", "dynamic"}
	referenceModes = []string{"check", "off"}
	errorShapes    = []string{"problem", "stripe"}
	validateModes  = []string{"enforce", "report", "off"}
	unknownIDModes = []string{"404", "generate"}
)

func (d *fileDecoder) openapi(key, n *yaml.Node) *OpenAPISource {
	src := &OpenAPISource{Pos: d.pos(key), Validate: "enforce", State: true, UnknownIDs: "404", Errors: "problem", References: "check",
		Headers: d.defaults.headers, Delay: d.defaults.delay, Idempotency: d.defaults.idempotency, Lock: d.defaults.lock}
	fs, ok := d.fields(n, "openapi", openapiFields...)
	if !ok {
		return nil
	}
	read := func(field string) (string, []byte, bool) {
		p, ok := fs[field]
		if !ok {
			return "", nil, false
		}
		rel, ok := d.str(p.val, "openapi."+field)
		if !ok {
			return "", nil, false
		}
		data, msg, err := d.readBody(rel)
		if err != nil {
			d.fail(p.val, "openapi."+field, "%s", strings.Replace(msg, "bodyFile", "file", 1))
			return "", nil, false
		}
		if data, err = gunzip(data, MaxBodyFileSize); err != nil {
			d.fail(p.val, "openapi."+field, "file %q: %v", rel, err)
			return "", nil, false
		}
		return filepath.Join(filepath.Dir(d.file), rel), data, true
	}
	if _, ok := fs["spec"]; !ok {
		d.fail(n, "openapi", "spec: is required (the OpenAPI document, relative to this file)")
		return nil
	}
	var okSpec bool
	if src.Spec, src.SpecData, okSpec = read("spec"); !okSpec {
		return nil
	}
	src.Fixtures, src.FixturesData, _ = read("fixtures")
	if p, ok := fs["validate"]; ok {
		src.Validate, _ = d.oneOfWord(p.val, "openapi.validate", validateModes)
	}
	if p, ok := fs["state"]; ok {
		src.State, _ = d.onOff(p.val, "openapi.state")
	}
	if p, ok := fs["unknownIds"]; ok {
		src.UnknownIDs, _ = d.oneOfWord(p.val, "openapi.unknownIds", unknownIDModes)
	}
	if p, ok := fs["errors"]; ok {
		src.Errors, _ = d.oneOfWord(p.val, "openapi.errors", errorShapes)
	}
	if p, ok := fs["scope"]; ok {
		src.Scope = d.scope(p.val, "openapi.scope")
	}
	if p, ok := fs["references"]; ok {
		src.References, _ = d.oneOfWord(p.val, "openapi.references", referenceModes)
	}
	if p, ok := fs["existingIds"]; ok {
		src.ExistingIDs, _ = d.regex(p.val, "openapi.existingIds")
	}
	if p, ok := fs["proxy"]; ok {
		src.Proxy = d.proxy(p.val, "openapi.proxy")
	}
	if p, ok := fs["dynamic"]; ok {
		src.Dynamic, _ = d.onOff(p.val, "openapi.dynamic")
	}
	return src
}

// Decompress returns a spec or fixtures file's data as an openapi: block
// reads it: decompressed when it is gzip (spec3.json.gz), at most
// MaxBodyFileSize bytes; else data itself.
func Decompress(data []byte) ([]byte, error) { return gunzip(data, MaxBodyFileSize) }

// gunzip returns data decompressed when it is gzip (a spec kept
// compressed, as the Stripe example's spec3.json.gz), else data itself.
// The answer is allocated once, at the size the gzip trailer gives, and is
// at most limit bytes.
func gunzip(data []byte, limit int64) ([]byte, error) {
	if len(data) < 18 || data[0] != 0x1f || data[1] != 0x8b {
		return data, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not gzip: %w", err)
	}
	// ISIZE, the size of the last member modulo 2^32: a hint only.
	hint := int64(binary.LittleEndian.Uint32(data[len(data)-4:]))
	out := bytes.NewBuffer(make([]byte, 0, min(hint, limit)+bytes.MinRead))
	n, err := out.ReadFrom(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	if n > limit {
		return nil, fmt.Errorf("decompresses to more than %s", size(limit))
	}
	return out.Bytes(), nil
}

// oneOfWord reads a string that must be one of words.
func (d *decoder) oneOfWord(n *yaml.Node, field string, words []string) (string, bool) {
	s, ok := d.str(n, field)
	if !ok {
		return "", false
	}
	for _, w := range words {
		if s == w {
			return s, true
		}
	}
	d.fail(d.resolve(n), field, "want one of %s, got %q", strings.Join(words, ", "), s)
	return "", false
}

// onOff reads on/off (YAML 1.1 would read them as booleans; yaml.v3
// reads them as strings) or true/false.
func (d *decoder) onOff(n *yaml.Node, field string) (bool, bool) {
	n = d.resolve(n)
	switch n.Value {
	case "on", "true":
		return true, true
	case "off", "false":
		return false, true
	}
	d.fail(n, field, "want on or off, got %s", describe(n))
	return false, false
}

// OpenAPISources returns the openapi: blocks of s, in file order.
func (s *Set) OpenAPISources() []*OpenAPISource {
	var out []*OpenAPISource
	for _, f := range s.Files {
		if f.OpenAPI != nil {
			out = append(out, f.OpenAPI)
		}
	}
	return out
}

// Extend adds f, routes compiled from another source (an OpenAPI
// document), to s after its own files, and deps, the files that source
// read beyond the ones Load read for it, with their contents, to s.Deps
// and s.Hash, so that Hash, Rehash and the watcher treat them as body
// files. A route of f named like a route of s is left out: the route
// written in YAML takes its place. Extend must be called before s is
// shared; a Set is immutable once in use.
func (s *Set) Extend(f *File, deps []string, contents [][]byte) error {
	if len(deps) != len(contents) {
		return errors.New("scenarios: Extend: deps and contents differ in length")
	}
	if len(deps) > 0 && s.hash == nil {
		return fmt.Errorf("scenarios: Extend: the set was not made by Load")
	}
	names := map[string]bool{}
	for _, r := range s.Routes() {
		names[r.Name] = true
	}
	kept := f.Routes[:0:0]
	for _, r := range f.Routes {
		if !names[r.Name] {
			names[r.Name] = true
			kept = append(kept, r)
		}
	}
	f.Routes = kept
	s.Files = append(s.Files, f)
	for i, dep := range deps {
		s.Deps = append(s.Deps, dep)
		s.hash.body(dep, contents[i])
	}
	if s.hash != nil {
		s.Hash = s.hash.sum()
	}
	return nil
}
