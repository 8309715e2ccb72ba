package main

import (
	"fmt"
	"path/filepath"
	"regexp"

	"github.com/spf13/pflag"

	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/upstream"
)

// openapiOptions are serve's flags for OpenAPI documents as a scenario
// source.
type openapiOptions struct {
	spec       string // --openapi
	fixtures   string // --openapi-fixtures
	validate   string // --openapi-validate
	unknownIDs string // --unknown-ids
	errors     string // --openapi-errors
	scope      string // --openapi-scope
	references string // --openapi-references
	existing   string // --openapi-existing-ids
	proxy      string // --openapi-proxy
	dynamic    bool   // --dynamic
}

func (o *openapiOptions) flags(f *pflag.FlagSet) {
	f.StringVar(&o.spec, "openapi", "", "serve an OpenAPI 3.0/3.1 document (JSON or YAML): a route per operation, validating requests and generating answers; YAML routes in the paths given take priority")
	f.StringVar(&o.fixtures, "openapi-fixtures", "", "a fixtures file for --openapi ({\"resources\": {\"customer\": {...}}}, as Stripe's fixtures3.json), answered for a schema's resource")
	f.StringVar(&o.validate, "openapi-validate", "enforce", "what --openapi does with a request that breaks the spec: enforce (a 400 problem listing each violation), report (serve it, log the violations) or off")
	f.StringVar(&o.errors, "openapi-errors", "problem", "the shape of --openapi's answer to a refused request: problem (RFC 9457, each violation with a JSON Pointer) or stripe (Stripe's error object)")
	f.StringVar(&o.scope, "openapi-scope", "none", "whose the resources --openapi stores are: none (one set for every client) or credential (each API key's own, from Bearer or Basic auth)")
	f.StringVar(&o.references, "openapi-references", "check", "what --openapi does with a body naming a stored object by an id not stored (Stripe's customer=cus_1): check (a 400, Stripe's resource_missing) or off (take it)")
	f.StringVar(&o.existing, "openapi-existing-ids", "", "a regular expression of the ids --openapi's references check takes as there without being created, e.g. '^(pm_card_|tok_)[A-Za-z0-9_]+$' for Stripe's test payment methods")
	f.StringVar(&o.proxy, "openapi-proxy", "", "forward every --openapi operation to this upstream (Prism's proxy mode), checking the request before and the upstream's answer after: under --openapi-validate enforce an answer that breaks the spec is a 502 problem listing how, under report it is passed through with sl-violations")
	f.BoolVar(&o.dynamic, "dynamic", false, "draw every OpenAPI answer afresh from its schema (Prism's mock -d): formats, bounds, enums, array sizes and optional properties drawn, no examples or fixtures; repeatable under --seed; turns on each openapi: block's dynamic (a request's Prefer: dynamic=false still turns it off)")
	f.StringVar(&o.unknownIDs, "unknown-ids", "", "what generated routes answer for an id never created: 404 (the spec's not-found answer) or generate (an object with that id, as stripe-mock does); overrides each openapi: block's unknownIds")
}

func (o *openapiOptions) check() error {
	switch o.validate {
	case "enforce", "report", "off":
	default:
		return fmt.Errorf("--openapi-validate %q: want enforce, report or off", o.validate)
	}
	switch o.errors {
	case "problem", "stripe":
	default:
		return fmt.Errorf("--openapi-errors %q: want problem or stripe", o.errors)
	}
	switch o.scope {
	case "none", "credential":
	default:
		return fmt.Errorf("--openapi-scope %q: want none or credential", o.scope)
	}
	switch o.unknownIDs {
	case "", "404", "generate":
	default:
		return fmt.Errorf("--unknown-ids %q: want 404 or generate", o.unknownIDs)
	}
	switch o.references {
	case "check", "off":
	default:
		return fmt.Errorf("--openapi-references %q: want check or off", o.references)
	}
	if _, err := regexp.Compile(o.existing); err != nil {
		return fmt.Errorf("--openapi-existing-ids: %v", err)
	}
	if o.fixtures != "" && o.spec == "" {
		return fmt.Errorf("--openapi-fixtures needs --openapi")
	}
	if o.proxy != "" {
		if o.spec == "" {
			return fmt.Errorf("--openapi-proxy needs --openapi")
		}
		if _, err := upstream.ParseURL(o.proxy); err != nil { // as --proxy-unmatched's
			return fmt.Errorf("--openapi-proxy %q: want the upstream's base URL: %w", o.proxy, err)
		}
	}
	return nil
}

// expand returns the openapi.Options for these flags.
func (o *openapiOptions) expand(cache *openapi.Cache) openapi.Options {
	opts := openapi.Options{UnknownIDs: o.unknownIDs, Dynamic: o.dynamic, Cache: cache}
	if o.spec != "" {
		src := openapi.FileSource(o.spec, o.fixtures)
		src.Validate, src.Errors = o.validate, o.errors
		src.Scope.Credential = o.scope == "credential"
		src.References = o.references
		if o.existing != "" {
			src.ExistingIDs = regexp.MustCompile(o.existing) // check compiled it
		}
		if o.proxy != "" {
			src.Proxy = &scenarios.Proxy{Pos: src.Pos, URL: o.proxy}
		}
		opts.Extra = []*scenarios.OpenAPISource{src}
	}
	return opts
}

// commandSpecs keeps the specs validate and routes compile. Each command
// compiles once per run; the tests, which run commands in one process,
// compile Stripe's spec once for all of them (0.4 s, and ten times that
// under -race on a loaded machine).
var commandSpecs = openapi.NewCache()

// emptyScenario is the set --openapi serves alone, with no paths.
var emptyScenario = []byte("routes: []\n")

// loadWithOpenAPI loads the scenarios as load does and adds the routes of
// their openapi: blocks and of --openapi.
func loadWithOpenAPI(load func() (*scenarios.Set, error), opts openapi.Options) func() (*scenarios.Set, error) {
	return func() (*scenarios.Set, error) {
		set, err := load()
		if err != nil {
			return nil, err
		}
		if err := openapi.Expand(set, opts); err != nil {
			return nil, err
		}
		dropSpecPlaceholder(set)
		return set, nil
	}
}

// dropSpecPlaceholder takes out of set the empty scenario file that a spec
// served alone is loaded around (emptyScenario, named after the spec), once
// the spec's own routes follow under the same name: listed, it would count
// one document as two files (validate's "ok: 2 files", a second entry with
// 0 routes in GET /__admin/scenarios).
func dropSpecPlaceholder(set *scenarios.Set) {
	if len(set.Files) < 2 {
		return
	}
	f := set.Files[0]
	if len(f.Routes) > 0 || f.Name != "" || f.CORS != nil || f.OpenAPI != nil || f.Webhooks != nil || f.Session != "" || f.Runtime != "" {
		return
	}
	for _, g := range set.Files[1:] {
		if g.Path == f.Path {
			set.Files = set.Files[1:]
			return
		}
	}
}

// specDir is what the watcher watches for --openapi served alone.
func specDir(spec string) string { return filepath.Dir(spec) }
