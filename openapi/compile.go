package openapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/pb33f/go-yaml"
	"github.com/pb33f/libopenapi"
	"github.com/pb33f/libopenapi-validator/cache"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi-validator/parameters"
	"github.com/pb33f/libopenapi-validator/requests"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/pb33f/libopenapi/index"

	"github.com/scenariomock/scenariomock/scenarios"
)

// Priority is the priority of every generated route: 0, a YAML route's
// default. Generated routes join the set after every scenario file
// (Set.Extend), and equal priorities keep file order, so a YAML route of
// priority 0 or more that matches the same request answers it, while one
// of negative priority, a catch-all such as the Stripe example's
// "Unrecognized request URL" 404, answers only what no operation does.
// (With the lowest priority, as before, such a catch-all shadowed every
// generated route.)
const Priority = 0

// Options are what Expand applies to every source.
type Options struct {
	// Extra are sources named outside the scenario files (serve
	// --openapi); their files are read by Expand and added to the set's
	// deps.
	Extra []*scenarios.OpenAPISource
	// UnknownIDs, when set ("404" or "generate"), overrides every
	// source's unknownIds.
	UnknownIDs string
	// Dynamic, when set, makes every source's answers dynamic (serve
	// --dynamic, Prism's mock -d), whatever its dynamic: says.
	Dynamic bool
	// Cache keeps compiled documents across loads; nil compiles each time.
	Cache *Cache
}

// FileSource returns a source for the spec at path with the defaults of
// an openapi: block (validate enforce, state on), as serve --openapi names
// it. Its files are read by Expand.
func FileSource(spec, fixtures string) *scenarios.OpenAPISource {
	return &scenarios.OpenAPISource{Spec: spec, Fixtures: fixtures, Validate: "enforce", State: true, UnknownIDs: "404", Errors: "problem", References: "check",
		Pos: scenarios.Pos{File: spec, Line: 1, Col: 1}}
}

// Expand compiles the openapi: blocks of set and opts.Extra, and adds
// their routes to set, one generated file per source. It must be called
// on a set fresh from scenarios.Load, before it is shared. Every problem
// is returned, joined, with the file:line:col it is at. A source compiled
// gives back its SpecData and FixturesData (set to nil): nothing reads
// them again.
func Expand(set *scenarios.Set, opts Options) error {
	var errs []error
	ops := map[string]*Operation{}
	sources := set.OpenAPISources()
	for _, src := range sources {
		if err := expandOne(set, src, opts, false, ops); err != nil {
			errs = append(errs, err)
		}
	}
	for _, src := range opts.Extra {
		if err := expandOne(set, src, opts, true, ops); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		errs = append(errs, linkOperations(set, ops))
	}
	return errors.Join(errs...)
}

// linkOperations gives each route written in YAML that names an operation
// (operation: PostCustomers) that operation, so that the server validates
// and answers it as the generated route would, with the route's own
// conditions, delay, fault, events and patch. The route must have the
// operation's method and path, whose variables the operation reads.
func linkOperations(set *scenarios.Set, ops map[string]*Operation) error {
	var errs []error
	for _, r := range set.Routes() {
		if r.ScopeOf != nil && r.ScopeOf.Operation == nil {
			if err := linkScopeOf(r, ops); err != nil {
				errs = append(errs, err)
			}
		}
		if r.OperationName == "" || r.Operation != nil {
			continue
		}
		op := ops[r.OperationName]
		switch {
		case op == nil && len(ops) == 0:
			errs = append(errs, &scenarios.Error{Pos: r.OperationPos, Msg: fmt.Sprintf("route %q: operation %q: the set serves no OpenAPI document (add an openapi: block, or --openapi)", r.Name, r.OperationName)})
		case op == nil:
			errs = append(errs, &scenarios.Error{Pos: r.OperationPos, Msg: fmt.Sprintf("route %q: operation %q: no operation has this operationId%s", r.Name, r.OperationName, closestOperation(r.OperationName, ops))})
		case r.ScopeOf != nil && len(r.Methods) == 1 && r.Methods[0] == op.Method && r.PathShape() != op.Path && !slices.Equal(sortedVars(r.Vars), pathVars(op.Path)):
			errs = append(errs, &scenarios.Error{Pos: r.PathPos, Msg: fmt.Sprintf("route %q: path: a path of its own (scopeOf:) has the variables of operation %q's, %s (%s)", r.Name, r.OperationName, op.Path, op.Pos)})
		case (r.PathShape() != op.Path && r.ScopeOf == nil) || len(r.Methods) != 1 || r.Methods[0] != op.Method:
			errs = append(errs, &scenarios.Error{Pos: r.OperationPos, Msg: fmt.Sprintf("route %q: operation %q is %s %s (%s); give the route that method and path", r.Name, r.OperationName, op.Method, op.Path, op.Pos)})
		case len(r.Refuse) > 0 && !op.actsOnStored() && op.kind != opCreate:
			errs = append(errs, &scenarios.Error{Pos: r.Refuse[0].Pos, Msg: fmt.Sprintf("route %q: refuse: operation %q lists, so no refusal could answer; refuse: goes with a create (when: holds:) or a read, update, delete or action on a stored object", r.Name, r.OperationName)})
		case op.kind == opCreate && slices.ContainsFunc(r.Refuse, func(rf *scenarios.Refusal) bool { return rf.Item != nil }):
			i := slices.IndexFunc(r.Refuse, func(rf *scenarios.Refusal) bool { return rf.Item != nil })
			errs = append(errs, &scenarios.Error{Pos: r.Refuse[i].Pos, Msg: fmt.Sprintf("route %q: refuse[%d]: when: item: tests the stored object the operation acts on, and %q creates one, so item: could not hold; test the request (and stored objects) with when: { holds: '{{ … }}' }", r.Name, i, r.OperationName)})
		case r.Template != nil && beyondSegment(r) != "":
			errs = append(errs, &scenarios.Error{Pos: r.PathPos, Msg: fmt.Sprintf("route %q: path: %s; narrow it within one non-empty segment, or the route answers paths that are not the operation's", r.Name, beyondSegment(r))})
		case r.CreateUnknown && op.kind != opUpdate && op.kind != opAction:
			errs = append(errs, &scenarios.Error{Pos: r.CreateUnknownPos, Msg: fmt.Sprintf("route %q: unknownIds: create goes with an operation that updates or acts on a stored object; %q does not (it reads, creates, lists or deletes, or nothing in the spec creates what its path names)", r.Name, r.OperationName)})
		case r.CreateUnknown && !op.api.state:
			errs = append(errs, &scenarios.Error{Pos: r.CreateUnknownPos, Msg: fmt.Sprintf("route %q: unknownIds: create needs the spec's state, which its openapi: block turns off (state: off)", r.Name)})
		case len(r.Cases) > 0 && !op.actsOnStored():
			errs = append(errs, &scenarios.Error{Pos: r.Cases[0].Pos, Msg: fmt.Sprintf("route %q: cases: operation %q acts on no stored object (it creates or lists), so no case could hold; cases: goes with a read, update, delete or action on one", r.Name, r.OperationName)})
		default:
			if err := unknownResources(r, op); err != nil {
				errs = append(errs, err)
				continue
			}
			r.Operation = op
		}
	}
	return errors.Join(errs...)
}

// linkScopeOf gives r's scopeOf: an operation of the document that
// stores its resource: r's own operation's, or else the first by
// operationId of the set's documents that stores it.
func linkScopeOf(r *scenarios.Route, ops map[string]*Operation) error {
	so := r.ScopeOf
	var found, other *Operation
	if op := ops[r.OperationName]; op != nil {
		other = op
		if op.api.state && op.api.collections[so.Resource] != "" {
			found = op
		}
	} else {
		for _, id := range slices.Sorted(maps.Keys(ops)) {
			op := ops[id]
			if other == nil {
				other = op
			}
			if op.api.state && op.api.collections[so.Resource] != "" {
				found = op
				break
			}
		}
	}
	var msg string
	switch {
	case found != nil:
		so.Operation = found
		return nil
	case other == nil:
		msg = "the set serves no OpenAPI document (add an openapi: block, or --openapi)"
	default:
		msg = noResource(other.api)
	}
	return &scenarios.Error{Pos: so.Pos, Msg: fmt.Sprintf("route %q: scopeOf: resource %q: %s", r.Name, so.Resource, msg)}
}

// noResource says why a resource a route names is not one document a
// stores: it keeps no state, stores none, or others (which it lists).
func noResource(a *api) string {
	switch {
	case !a.state:
		return "the document keeps no state (its openapi: block has state: off)"
	case len(a.collections) == 0:
		return "no create of the document makes a resource its schema names (x-resourceId)"
	}
	return "the document stores no such resource; name one a create of the document makes (" + knownResources(a) + ")"
}

// sortedVars returns the names sorted.
func sortedVars(vars []string) []string { return slices.Sorted(slices.Values(vars)) }

// pathVars returns the variables of an OpenAPI path ({name}), sorted.
func pathVars(path string) []string {
	var out []string
	for rest := path; ; {
		i := strings.Index(rest, "{")
		if i < 0 {
			break
		}
		j := strings.Index(rest[i:], "}")
		if j < 0 {
			break
		}
		out = append(out, rest[i+1:i+j])
		rest = rest[i+j+1:]
	}
	return slices.Sorted(slices.Values(out))
}

// unknownResources reports the save: entries of r's responses whose
// resource: names none that op's document keeps (a schema's
// x-resourceId that a create of it stores), each at its position.
func unknownResources(r *scenarios.Route, op *Operation) error {
	var errs []error
	for _, resp := range r.Responses {
		for _, ref := range resp.Also {
			if ref.Resource == "" || op.api.state && (op.api.collections[ref.Resource] != "" || len(op.api.nested[ref.Resource]) > 0) {
				continue
			}
			errs = append(errs, &scenarios.Error{Pos: ref.Pos, Msg: fmt.Sprintf("route %q: save: resource %q: %s", r.Name, ref.Resource, noResource(op.api))})
		}
	}
	return errors.Join(errs...)
}

// knownResources lists the resources a's creates store, sorted, a few
// of them.
func knownResources(a *api) string {
	names := slices.Sorted(maps.Keys(a.collections))
	if len(names) > 8 {
		return strings.Join(names[:8], ", ") + ", …"
	}
	return strings.Join(names, ", ")
}

// closestOperation suggests the operationId that differs from name only
// in case, if there is one.
func closestOperation(name string, ops map[string]*Operation) string {
	for n := range ops {
		if strings.EqualFold(n, name) {
			return fmt.Sprintf(" (did you mean %q?)", n)
		}
	}
	return ""
}

func expandOne(set *scenarios.Set, src *scenarios.OpenAPISource, opts Options, extra bool, ops map[string]*Operation) error {
	orig := src
	var deps []string
	var contents [][]byte
	if extra {
		s := *src
		var err error
		if s.SpecData, err = readFile(s.Spec); err != nil {
			return &scenarios.Error{Pos: src.Pos, Msg: "--openapi: " + err.Error()}
		}
		deps, contents = append(deps, s.Spec), append(contents, s.SpecData)
		if s.Fixtures != "" {
			if s.FixturesData, err = readFile(s.Fixtures); err != nil {
				return &scenarios.Error{Pos: scenarios.Pos{File: s.Fixtures, Line: 1, Col: 1}, Msg: "fixtures: " + err.Error()}
			}
			deps, contents = append(deps, s.Fixtures), append(contents, s.FixturesData)
		}
		src = &s
	}
	if opts.UnknownIDs != "" {
		s := *src
		s.UnknownIDs = opts.UnknownIDs
		src = &s
	}
	if opts.Dynamic && !src.Dynamic {
		s := *src
		s.Dynamic = true
		src = &s
	}
	c, err := opts.Cache.compile(src)
	if err != nil {
		return err
	}
	// Compiled, the document's bytes are not read again: the set's hash
	// was taken when it loaded, and the routes hold what the model keeps.
	// Released, they are not live while the set serves (Stripe's spec
	// decompressed is 8 MB).
	if !extra { // an extra source's data is the copy above, dropped with it
		orig.SpecData, orig.FixturesData = nil, nil
	}
	for _, r := range c.routes {
		if _, seen := ops[r.Name]; !seen {
			ops[r.Name] = r.Operation.(*Operation)
		}
	}
	deps = append(deps, c.siblings...)
	contents = append(contents, c.siblingData...)
	routes := make([]*scenarios.Route, len(c.routes))
	for i, r := range c.routes {
		cp := *r // the cache's route is shared by every load
		withDefaults(&cp, src)
		routes[i] = &cp
	}
	f := &scenarios.File{Path: src.Spec, Name: c.title, Routes: routes}
	return set.Extend(f, deps, contents)
}

// readFile reads a file an --openapi flag names.
func readFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > scenarios.MaxBodyFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, scenarios.MaxBodyFileSize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	// A gzip file (Stripe's spec3.json.gz) is read decompressed, as an
	// openapi: block reads it.
	if data, err = scenarios.Decompress(data); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

// Cache keeps compiled documents by the hash of everything they were
// compiled from (the spec, its sibling files, the fixtures and the
// block's settings). It is safe for concurrent use.
type Cache struct {
	mu      sync.Mutex // guards entries
	entries map[string]*compiled
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{entries: map[string]*compiled{}} }

// compiled is one document made into routes; immutable.
type compiled struct {
	key    string
	title  string
	routes []*scenarios.Route
	// siblings are the files beside the spec that its $refs read, and
	// siblingData their contents when compiled.
	siblings    []string
	siblingData [][]byte
}

func sourceKey(src *scenarios.OpenAPISource) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%v\x00%s\x00%s\x00%s\x00%s\x00%v\x00%d\x00%v\x00", src.Spec, src.Fixtures, src.Validate, src.State, src.UnknownIDs, src.Errors, src.Scope.String(), src.References, src.ExistingIDs, len(src.SpecData), src.Dynamic)
	h.Write(src.SpecData)
	h.Write(src.FixturesData)
	// The defaults are part of the routes.
	for _, hd := range src.Headers {
		fmt.Fprintf(h, "\x00%s: %s", hd.Name, hd.Value)
	}
	fmt.Fprintf(h, "\x00%s\x00%v", src.Delay, src.Idempotency != nil)
	if src.Idempotency != nil {
		b, _ := json.Marshal(src.Idempotency.Pos)
		h.Write(b)
	}
	if src.Lock != nil {
		b, _ := json.Marshal(src.Lock.Pos)
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// compile returns the compiled document of src, from the cache when
// nothing it was compiled from changed.
func (c *Cache) compile(src *scenarios.OpenAPISource) (*compiled, error) {
	key := sourceKey(src)
	if c != nil {
		c.mu.Lock()
		old := c.entries[src.Spec]
		c.mu.Unlock()
		if old != nil && old.key == key && siblingsUnchanged(old) {
			return old, nil
		}
	}
	out, err := compileSource(src, key)
	if err != nil {
		return nil, err
	}
	out.key = key
	if c != nil {
		c.mu.Lock()
		c.entries[src.Spec] = out
		c.mu.Unlock()
	}
	return out, nil
}

func siblingsUnchanged(c *compiled) bool {
	for i, p := range c.siblings {
		data, err := os.ReadFile(p)
		if err != nil || string(data) != string(c.siblingData[i]) {
			return false
		}
	}
	return true
}

// api is what the operations of one document share. It is immutable once
// compiled, apart from the validators' schema caches, which are safe for
// concurrent use.
type api struct {
	spec     string
	model    *v3.Document
	params   parameters.ParameterValidator
	bodies   requests.RequestBodyValidator
	schemas  schema_validation.SchemaValidator // form bodies, once typed (coerce.go)
	vopts    []config.Option                   // the validators' options, for multipart bodies (multipart.go)
	options  *config.ValidationOptions         // the validators' options, for schemaCheck
	fixtures map[string]json.RawMessage        // by resource name
	decoded  sync.Map                          // fixtures decoded, by resource name (fixtureNamed)
	// answerOpts are the options an upstream's answer is checked with
	// (CheckAnswer): formats asserted, as Prism's proxy mode asserts them,
	// with a schema cache of their own, since the library's cache key
	// does not say whether a compiled schema asserts them.
	answerOpts *config.ValidationOptions
	// freeForms caches freeFormProperties, by schema; patterned the
	// placeholder of a string schema with a pattern (drawn from it once).
	freeForms, patterned sync.Map
	// nullablesBy caches nullables, by the pair of schemas.
	nullablesBy sync.Map
	validate    string
	errors      string // "problem" or "stripe"
	state       bool
	generate    bool // unknownIds: generate
	dynamic     bool // dynamic: true, answers drawn afresh (dynamic.go)
	// references is whether a body's ids of stored resources are
	// checked (references: check), existing the ids taken to exist
	// without being stored (existingIds:; nil none).
	references bool
	existing   *regexp.Regexp
	version    float32
	// collections maps a resource (a schema's x-resourceId: customer) to
	// the path its create operation stores it under (/v1/customers), for
	// expand[]. It is filled while the document compiles.
	collections map[string]string
	// nested maps a resource that only creates below another resource
	// make (Stripe's payment_source: POST /v1/customers/{customer}/sources,
	// /cards, /bank_accounts) to those creates' paths, whose one variable
	// names the parent, for storedWhere (StoredResources).
	nested map[string][]string
	// scope keeps each API key's resources apart (scope: credential),
	// and within it each value of its headers.
	scope scenarios.Scope
	// binary is the body of a generated binary answer (a PDF): empty,
	// or with errors: stripe, stripe-mock's "Stripe binary response",
	// which stripe-go's suite compares against.
	binary string
	// validating guards the validators. They compile a schema the first
	// time a request needs it, and to compile it they render it, which
	// writes to the document's shared model (a DynamicValue's inline and
	// renderCtx, libopenapi v0.43.1): two requests compiling at once race
	// (go test -race, ten concurrent creates of the Stripe example). A
	// compiled schema is cached and not rendered again, but a check
	// cannot tell beforehand whether it will compile, so every check of
	// the document takes the lock.
	validating sync.Mutex
}

var lineCol = regexp.MustCompile(`(?:\[(\d+):(\d+)\])|(?:line (\d+)(?:, col(?:umn)? (\d+))?)|(?:at L(\d+)\.C(\d+))`)

// specError places a library error in the spec: at the [line:col] or
// "line N" it mentions, else at the document's start.
func specError(file string, err error) error {
	var out []error
	for _, msg := range strings.Split(err.Error(), "\n") {
		msg = strings.TrimSpace(msg)
		if msg == "" {
			continue
		}
		pos := scenarios.Pos{File: file, Line: 1, Col: 1}
		if m := lineCol.FindStringSubmatch(msg); m != nil {
			l, c := m[1], m[2]
			if l == "" {
				l, c = m[3], m[4]
			}
			if l == "" { // go-yaml's "at L3.C7"
				l, c = m[5], m[6]
			}
			pos.Line, _ = strconv.Atoi(l)
			if c != "" {
				pos.Col, _ = strconv.Atoi(c)
			}
		}
		if m := unresolved.FindStringSubmatch(msg); m != nil {
			msg = refSentence(m[1], file)
			if m[1] == "#" {
				msg = `$ref "#" names the whole document, not a schema or other object; point it at one, such as #/components/schemas/Pet`
			}
		}
		out = append(out, &scenarios.Error{Pos: pos, Msg: "openapi: " + yamlSentence(msg)})
	}
	return errors.Join(out...)
}

// unresolved is libopenapi's build error for a $ref within the document
// that names nothing: "cannot resolve reference `#`, it's missing:
// $.['#'] [12:24]".
var unresolved = regexp.MustCompile("cannot resolve reference `(#[^`]*)`, it's missing")

func compileSource(src *scenarios.OpenAPISource, key string) (*compiled, error) {
	dir := filepath.Dir(src.Spec)
	cfg := &datamodel.DocumentConfiguration{
		// Stripe's schemas refer to each other through anyOf and arrays
		// (a charge's refunds, a refund's charge); they are fine to
		// serve, only not to expand forever.
		IgnorePolymorphicCircularReferences: true,
		IgnoreArrayCircularReferences:       true,
		BasePath:                            dir,
		SpecFilePath:                        filepath.Base(src.Spec),
		AllowFileReferences:                 true,
		Logger:                              slog.New(slog.DiscardHandler), // its problems come back as errors
		// The index's diagnostic metadata (every description, summary,
		// enum and inline schema path) serves linters; nothing here reads
		// it. On Stripe's spec it is 9 MB of the live heap and 15 MB of
		// the load's allocations.
		SkipMetadataCollection: true,
	}
	root, _ := filepath.Abs(dir)
	realRoot := realPath(root)
	if err := checkRefFiles(src.Spec, src.SpecData, root, realRoot); err != nil {
		return nil, err
	}
	doc, err := libopenapi.NewDocumentWithConfiguration(src.SpecData, cfg)
	if err != nil {
		return nil, specError(src.Spec, err)
	}
	if info := doc.GetSpecInfo(); info != nil {
		if n := deeperThan(info.RootNode, maxSpecDepth); n != nil {
			return nil, &scenarios.Error{Pos: scenarios.Pos{File: src.Spec, Line: n.Line, Col: n.Column},
				Msg: fmt.Sprintf("openapi: the document nests more than %d levels deep here", maxSpecDepth)}
		}
	}
	if v := doc.GetVersion(); !strings.HasPrefix(v, "3.") {
		return nil, &scenarios.Error{Pos: scenarios.Pos{File: src.Spec, Line: 1, Col: 1},
			Msg: fmt.Sprintf("openapi: version %q is not supported; want an OpenAPI 3.0 or 3.1 document", v)}
	}
	m, buildErr := doc.BuildV3Model()
	out := &compiled{}
	// The files the $refs read, beside the spec: watched and hashed as
	// body files are, and held to the spec's directory.
	specAbs, _ := filepath.Abs(src.Spec)
	if rx := doc.GetRolodex(); rx != nil {
		seen := map[string]bool{specAbs: true}
		for _, ix := range rx.GetIndexes() {
			p := ix.GetSpecAbsolutePath()
			if p == "" || seen[p] || !filepath.IsAbs(p) {
				continue
			}
			seen[p] = true
			if real := realPath(p); outside(realRoot, real) {
				pos, found := refTo(rx, p, src.Spec)
				if !found {
					pos = scenarios.Pos{File: src.Spec, Line: 1, Col: 1}
				}
				return nil, &scenarios.Error{Pos: pos, Msg: readsOutside(p, real, root)}
			}
			data, err := os.ReadFile(p)
			if err != nil {
				continue // not a file the spec read (the rolodex's root)
			}
			out.siblings = append(out.siblings, p)
			out.siblingData = append(out.siblingData, data)
		}
	}
	// A sibling that does not parse, or a $ref to a component a sibling
	// lacks, fails the build: said where it is written, not at the root's
	// first line. A sibling that does not parse comes first: the $refs
	// into it then resolve to nothing too.
	if errs := siblingProblems(src.Spec, out.siblings, out.siblingData); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if errs := refProblems(doc.GetRolodex(), src.Spec); len(errs) > 0 {
		return nil, errors.Join(errs...) // where each $ref is written, also when the model built
	}
	if errs := scalarRefProblems(doc.GetRolodex(), src.Spec); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if buildErr != nil {
		if e := componentProblem(doc.GetRolodex(), src.Spec, buildErr); e != nil {
			return nil, e
		}
		return nil, specError(src.Spec, buildErr)
	}
	if m == nil {
		return nil, &scenarios.Error{Pos: scenarios.Pos{File: src.Spec, Line: 1, Col: 1}, Msg: "openapi: the document has no model"}
	}
	if m.Model.Info != nil {
		out.title = m.Model.Info.Title
	}
	// The document's own hold on the spec's bytes and root node (8 MB
	// for Stripe's) is not needed once the model is built and the
	// rolodex read: the model keeps the nodes it was built from, and the
	// index its own root. Whether a 3.1 document writes 3.0's nullable
	// is read from the nodes before.
	nullable := !strings.HasPrefix(m.Model.Version, "3.0") && writesNullable(doc.GetRolodex(), doc.GetSpecInfo())
	doc.Release()
	a := &api{spec: src.Spec, model: &m.Model, validate: src.Validate, errors: src.Errors, state: src.State, generate: src.UnknownIDs == "generate", scope: src.Scope,
		references: src.References != "off", existing: src.ExistingIDs, dynamic: src.Dynamic}
	if a.validate == "" {
		a.validate = "enforce"
	}
	if a.errors == "stripe" {
		a.binary = "Stripe binary response"
	}
	a.version = 3.0
	validated := &m.Model // the document as the validators read it
	if !strings.HasPrefix(m.Model.Version, "3.0") {
		a.version = 3.1 // 3.1 and 3.2 share JSON Schema 2020-12
		if nullable {
			// A 3.1 document that still writes 3.0's nullable: true (Svix's,
			// 624 times) means null is taken there. libopenapi-validator
			// refuses the keyword in 3.1 as a schema it cannot compile, so
			// that every body of such a schema was a 400. Its 3.0 reading
			// of a schema turns nullable into a "null" type and a boolean
			// exclusiveMinimum into a number, and leaves 3.1's type arrays,
			// const and examples as they are.
			a.version = 3.0
			v := m.Model
			v.Version = "3.0.3"
			validated = &v
		}
	}
	// The validators compile a schema when a request first needs it and
	// keep it: their own constructor (validator.NewValidator) compiles
	// every schema of the document up front, which for Stripe's spec took
	// minutes and gigabytes.
	// The regex cache keeps the path parameters' segment expressions, which
	// the parameter validator otherwise compiles on every request (a third
	// of a retrieve's validation on Stripe's spec).
	vopts := []config.Option{config.WithSchemaCache(cache.NewDefaultCache()), config.WithURLEncodedBodyValidation(), config.WithRegexCache(&sync.Map{})}
	a.vopts = vopts
	a.options = config.NewValidationOptions(vopts...)
	a.answerOpts = config.NewValidationOptions(config.WithSchemaCache(cache.NewDefaultCache()), config.WithRegexCache(&sync.Map{}), config.WithFormatAssertions())
	if nullable {
		// The parameter validator reads the version from the index, not
		// from the model: without the OpenAPI keywords it takes nullable
		// as JSON Schema takes an unknown keyword (a query's value is
		// never null).
		a.params = parameters.NewParameterValidator(validated, append(slices.Clip(vopts), config.WithoutOpenAPIMode())...)
	} else {
		a.params = parameters.NewParameterValidator(validated, vopts...)
	}
	a.bodies = requests.NewRequestBodyValidator(validated, vopts...)
	a.schemas = schema_validation.NewSchemaValidator(vopts...)
	if len(src.FixturesData) > 0 {
		var fx struct {
			Resources map[string]json.RawMessage `json:"resources"`
		}
		if err := json.Unmarshal(src.FixturesData, &fx); err != nil {
			return nil, &scenarios.Error{Pos: scenarios.Pos{File: src.Fixtures, Line: 1, Col: 1}, Msg: "fixtures: " + err.Error()}
		}
		a.fixtures = fx.Resources
		if a.fixtures == nil { // keyed by component name at the top
			_ = json.Unmarshal(src.FixturesData, &a.fixtures)
		}
	}
	if m.Model.Paths == nil || m.Model.Paths.PathItems == nil {
		return out, nil
	}
	var errs []error
	named := map[string]*scenarios.Route{}
	for pp := m.Model.Paths.PathItems.First(); pp != nil; pp = pp.Next() {
		path, item := pp.Key(), pp.Value()
		for op := item.GetOperations().First(); op != nil; op = op.Next() {
			r, err := a.route(path, item, strings.ToUpper(op.Key()), op.Value(), src, key)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if first := named[r.Name]; first != nil {
				// Routes, overrides and the journal name an operation by
				// its operationId: a second one would hide the first.
				errs = append(errs, &scenarios.Error{Pos: r.Pos, Msg: fmt.Sprintf("openapi: operationId %q of %s %s is also that of %s %s (%s); an operationId names one operation in the document", r.Name, r.Methods[0], r.Path, first.Methods[0], first.Path, first.Pos)})
				continue
			}
			named[r.Name] = r
			out.routes = append(out.routes, r)
			a.noteCollection(r.Operation.(*Operation))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	ops := make([]*Operation, len(out.routes))
	for i, r := range out.routes {
		ops[i] = r.Operation.(*Operation)
	}
	markActions(ops)
	markKeys(ops)
	onlyCollections(out.routes)
	for _, o := range ops {
		o.nameStores()
	}
	// A literal segment wins over a template (OpenAPI: "when matching
	// URLs, concrete (non-templated) paths would be matched before their
	// templated counterparts"), as /v1/customers/search over
	// /v1/customers/{customer}.
	sort.SliceStable(out.routes, func(i, j int) bool {
		return strings.Count(out.routes[i].Path, "{") < strings.Count(out.routes[j].Path, "{")
	})
	return out, nil
}

// onlyCollections keeps state by convention to the paths where the spec
// has a collection, a POST that creates: /orders/{orderId} reads what POST
// /orders made, while /menu-item-images/{menuItemId}, which nothing
// creates, answers from the spec (before, a read there could only be a
// 404, since no request could ever store what it reads).
func onlyCollections(routes []*scenarios.Route) {
	created := map[string]bool{}
	for _, r := range routes {
		if o := r.Operation.(*Operation); o.kind == opCreate {
			created[o.collection] = true
		}
	}
	markSearches(routes, created)
	markNested(routes, created)
	markUnder(routes, created)
	for _, r := range routes {
		o := r.Operation.(*Operation)
		if o.kind != opCreate && !created[o.collection] && o.nested == nil {
			o.kind = opNone
		}
	}
}

// fileOf names the file a node of the document was read from: the spec,
// or the sibling file a $ref led to (paths/orders.yaml, for an operation
// whose path item is a $ref), written as the spec's path is (relative
// when it is), so that a line number points into the file it counts in.
func fileOf(spec string, idx *index.SpecIndex) string {
	if idx == nil {
		return spec
	}
	p := idx.GetSpecAbsolutePath()
	if p == "" || !filepath.IsAbs(p) {
		return spec
	}
	if abs, err := filepath.Abs(spec); err != nil || p == abs {
		return spec
	}
	return relTo(spec, p)
}

// changes reports whether a method changes something, so that the
// defaults' idempotency applies to it.
func changes(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

func (a *api) route(path string, item *v3.PathItem, method string, op *v3.Operation, src *scenarios.OpenAPISource, key string) (*scenarios.Route, error) {
	pos := scenarios.Pos{File: src.Spec, Line: 1, Col: 1}
	if low := op.GoLow(); low != nil && low.KeyNode != nil {
		pos.Line, pos.Col = low.KeyNode.Line, low.KeyNode.Column
		pos.File = fileOf(src.Spec, low.GetIndex())
	}
	tpl, _, err := scenarios.CompilePath(path)
	if err != nil {
		return nil, &scenarios.Error{Pos: pos, Msg: fmt.Sprintf("openapi: path %q: %v", path, err)}
	}
	name := op.OperationId
	if name == "" {
		name = method + " " + path
	}
	o, err := a.operation(path, item, method, op, pos)
	if err != nil {
		return nil, err
	}
	o.Name = name
	resp := &scenarios.Response{Pos: pos, Status: o.status, Delay: src.Delay}
	if src.Proxy != nil {
		// The upstream answers, with its own headers (Prism's proxy
		// mode); the operation checks the request and that answer.
		resp.Proxy = src.Proxy
	} else {
		resp.Headers = append(resp.Headers, src.Headers...)
		if _, set := resp.Header("Content-Type"); !set {
			resp.Headers = append(resp.Headers, scenarios.Header{Name: "Content-Type", Value: "application/json"})
		}
	}
	r := &scenarios.Route{
		Pos: pos, PathPos: pos, Name: name, Named: true,
		Methods: []string{method}, Path: path, Template: tpl, Vars: tpl.Vars,
		Priority:  Priority,
		Responses: []*scenarios.Response{resp},
		Operation: o,
	}
	withDefaults(r, src)
	sum := sha256.Sum256([]byte(key + "\x00" + name))
	r.Identity = name + "@" + hex.EncodeToString(sum[:8])
	return r, nil
}

// withDefaults gives a generated route the defaults: of src's file that
// the compiled document does not hold: its idempotency: and lock:
// blocks. Expand lays them on every load, the cache's routes too, so
// that an edit of them reaches the routes though the spec is unchanged.
func withDefaults(r *scenarios.Route, src *scenarios.OpenAPISource) {
	r.Lock, r.Idempotency = src.Lock, nil
	if method := r.Methods[0]; changes(method) && src.Idempotency != nil {
		// Each operation has its own key space, as a YAML route's is
		// its method and path: a key used on one operation is a new
		// request on another (the defaults' block has no group, and
		// with one shared, a key reused on another operation with the
		// same body was answered with the first operation's answer).
		id := *src.Idempotency
		if id.Group == "" {
			id.Group = method + " " + r.Path
		}
		r.Idempotency = &id
	}
}

// beyondSegment says which variable of a route's path, narrowed, may take
// what its operation's never does ("" when none).
func beyondSegment(r *scenarios.Route) string {
	name, takes := r.Template.BeyondSegment()
	if name == "" {
		return ""
	}
	return fmt.Sprintf("variable {%s} may take %s, which the operation's {%s} never does", name, takes, name)
}

// maxSpecDepth bounds how deep a spec's mappings and sequences nest.
// The YAML parser takes 10,000 levels, but a schema nested 9,000 deep
// (items in items) took 10 s and 600 MB to load, and its first request
// body's validation grew past 4 GB (the JSON Schema compiler's work grows
// with the square of the depth). Stripe's spec nests 26 levels.
const maxSpecDepth = 256

// deeperThan returns the first node, in the file's order, under n that is nested
// more than limit levels deep, or nil. Aliases are not followed: the
// parser bounds their expansion.
func deeperThan(n *yaml.Node, limit int) *yaml.Node {
	type level struct {
		n     *yaml.Node
		depth int
	}
	if n == nil {
		return nil
	}
	stack := []level{{n, 0}}
	for len(stack) > 0 {
		l := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if l.depth > limit {
			return l.n
		}
		d := l.depth
		if l.n.Kind == yaml.MappingNode || l.n.Kind == yaml.SequenceNode {
			d++
		}
		for i := len(l.n.Content) - 1; i >= 0; i-- { // the first in the file first
			stack = append(stack, level{l.n.Content[i], d})
		}
	}
	return nil
}

// writesNullable says whether the document, or a file its $refs read,
// has a mapping with a nullable key (3.0's keyword, which 3.1 dropped).
func writesNullable(rx *index.Rolodex, info *datamodel.SpecInfo) bool {
	var roots []*yaml.Node
	if info != nil {
		roots = append(roots, info.RootNode)
	}
	if rx != nil {
		for _, ix := range rx.GetIndexes() {
			roots = append(roots, ix.GetRootNode())
		}
	}
	for _, n := range roots {
		stack := []*yaml.Node{n}
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if n == nil {
				continue
			}
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == "nullable" && n.Content[i+1].Kind == yaml.ScalarNode {
						return true
					}
				}
			}
			stack = append(stack, n.Content...)
		}
	}
	return false
}
