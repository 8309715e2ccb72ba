package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// The schema of the format lives in ../schema (package schema embeds it
// for `scenariomock schema`). These tests keep it and the loader from
// drifting apart: what the loader accepts, the schema accepts; what the
// schema refuses for a reason it can judge (an unknown field, a wrong
// type, a value outside an enum), the loader refuses too; and every field
// of the loader is in the schema, described.

const schemaFile = "../schema/scenario.schema.json"

// pendingInSchema names what the schema already describes but this loader
// does not accept yet, each with the work that adds it (a substring of a
// sample's id, such as "cors" or `"hang"`, → that work). A sample that
// hits one of them must pass the schema; the loader may refuse it, and
// once it accepts it the test says to remove the entry here, so that the
// list cannot outlive the work. Empty: the loader has caught up.
var pendingInSchema = map[string]string{}

func pendingFor(id string) string {
	for k, why := range pendingInSchema {
		if strings.Contains(id, k) {
			return why
		}
	}
	return ""
}

// schemaDoc is the schema file decoded, to walk its definitions.
type schemaDoc map[string]any

func readSchema(t *testing.T) (*jsonschema.Schema, schemaDoc) {
	return readSchemaAs(t, "")
}

// draft7 is how the YAML language server reads the schema: it validates
// with draft-07 rules whatever $schema says.
const draft7 = "http://json-schema.org/draft-07/schema#"

// readSchemaAs compiles the schema, as the dialect metaschema names if it
// is not "".
func readSchemaAs(t *testing.T, metaschema string) (*jsonschema.Schema, schemaDoc) {
	t.Helper()
	data, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", schemaFile, err)
	}
	if metaschema != "" {
		doc.(map[string]any)["$schema"] = metaschema
	}
	id, _ := doc.(map[string]any)["$id"].(string)
	c := jsonschema.NewCompiler()
	if err := c.AddResource(id, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(id) // checks the schema against the 2020-12 metaschema
	if err != nil {
		t.Fatalf("%s: %v", schemaFile, err)
	}
	var raw schemaDoc
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	return sch, raw
}

// yamlToJSON converts a scenario file as an editor's YAML language server
// sees it: YAML decoded into plain values (anchors, aliases and merge keys
// resolved; comments, the schema line among them, gone), as JSON.
func yamlToJSON(data []byte) (any, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

func validateYAML(sch *jsonschema.Schema, data []byte) error {
	v, err := yamlToJSON(data)
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

// TestSchemaAcceptsValidFiles validates every example, the starter that
// `scenariomock init` writes and every valid fixture against the schema;
// each must also load.
func TestSchemaAcceptsValidFiles(t *testing.T) {
	t.Parallel()
	sch, _ := readSchema(t)
	editor, _ := readSchemaAs(t, draft7)
	var files []string
	for _, pattern := range []string{"../examples/*.yaml", "../examples/ci/*.yaml", "../examples/webhooks/*.yaml", "../starter/*.yaml", "testdata/valid/*.yaml"} {
		found, err := filepath.Glob(pattern)
		if err != nil || len(found) == 0 {
			t.Fatalf("%s: no files (%v)", pattern, err)
		}
		files = append(files, found...)
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			if _, err := Load(f); err != nil {
				t.Fatalf("does not load: %v", err)
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := validateYAML(sch, data); err != nil {
				t.Errorf("loads, but the schema refuses it:\n%v", err)
			}
			if err := validateYAML(editor, data); err != nil {
				t.Errorf("loads, but the schema read with draft-07 rules (as editors do) refuses it:\n%v", err)
			}
		})
	}
}

// hosts put an object of each definition into a whole scenario file, so
// that a sample of one of its fields can be validated and loaded. The path
// has a variable, for samples that name path.id.
var hosts = map[string]func(v map[string]any) map[string]any{
	"":         func(v map[string]any) map[string]any { return v },
	"defaults": func(v map[string]any) map[string]any { return fileWith("defaults", v) },
	"cors":     func(v map[string]any) map[string]any { return fileWith("cors", v) },
	"seedItem": func(v map[string]any) map[string]any { return fileWith("collections", map[string]any{"c": []any{v}}) },
	"route":    withWebhooks(routeFile),
	// Events need an endpoint in the set.
	"webhooks": func(v map[string]any) map[string]any { return withDocument(fileWith("webhooks", v)) },
	"webhookEndpointSource": func(v map[string]any) map[string]any {
		return withDocument(fileWith("webhooks", map[string]any{"endpointsFrom": v}))
	},
	"webhookEndpoint": func(v map[string]any) map[string]any {
		return fileWith("webhooks", map[string]any{"endpoints": []any{v}})
	},
	"webhookRetry": func(v map[string]any) map[string]any {
		return fileWith("webhooks", map[string]any{"endpoints": []any{map[string]any{"name": "shop", "url": "http://127.0.0.1:4242/", "secret": "whsec_test_123", "retry": v}}})
	},
	"event": func(v map[string]any) map[string]any { return withEndpoint(routeWith("events", []any{v})) },
	"eventFault": func(v map[string]any) map[string]any {
		return withEndpoint(routeWith("events", []any{map[string]any{"type": "t", "fault": v}}))
	},
	"when": func(v map[string]any) map[string]any { return routeWith("when", v) },
	"tests": func(v map[string]any) map[string]any {
		return routeWith("when", map[string]any{"headers": map[string]any{"X-A": v}})
	},
	"bodyTests": func(v map[string]any) map[string]any { return routeWith("when", map[string]any{"body": v}) },
	"response": func(v map[string]any) map[string]any {
		f := routeWith("respond", v)
		_, wraps := v["envelope"]
		if _, overrides := v["override"]; wraps || overrides {
			// An envelope or override is laid on an operation's answer: its route names one
			// (which only openapi.Expand resolves).
			f["routes"].([]any)[0].(map[string]any)["operation"] = "showX"
		}
		return f
	},
	"delayRange": func(v map[string]any) map[string]any {
		return routeWith("respond", map[string]any{"delay": v})
	},
	// A body to cut, longer than the bytes example, for partial-body.
	"faultSpec": func(v map[string]any) map[string]any {
		return routeWith("respond", map[string]any{"fault": v, "body": sampleBody})
	},
	"sequence": func(v map[string]any) map[string]any {
		return routeFile(map[string]any{"path": "/x/{id}", "responses": []any{map[string]any{}}, "sequence": v})
	},
	"idempotencyBlock": func(v map[string]any) map[string]any { return routeWith("idempotency", v) },
	"routeState":       func(v map[string]any) map[string]any { return routeWith("state", v) },
	"idempotencyErrors": func(v map[string]any) map[string]any {
		return routeWith("idempotency", map[string]any{"key": "header.Idempotency-Key", "errors": v})
	},
	"itemRef": func(v map[string]any) map[string]any { return routeWith("respond", map[string]any{"load": v}) },
	"listRef": func(v map[string]any) map[string]any { return routeWith("respond", map[string]any{"list": v}) },
	"saveRef": func(v map[string]any) map[string]any {
		if _, ok := v["resource"]; ok {
			// A resource is its operation's document's: the route names
			// one (which only openapi.Expand resolves).
			f := routeWith("respond", map[string]any{"save": []any{v}})
			f["routes"].([]any)[0].(map[string]any)["operation"] = "showX"
			return f
		}
		f := routeWith("respond", map[string]any{"save": []any{v}, "body": map[string]any{"id": 1}})
		if _, ok := v["events"]; ok {
			f = withEndpoint(f) // the events need somewhere to go
		}
		return f
	},
}

// withDocument adds the openapi: block that an endpointsFrom: with a
// resource: needs (its document stores the objects; only openapi.Expand
// reads it).
func withDocument(f map[string]any) map[string]any {
	if src, ok := f["webhooks"].(map[string]any)["endpointsFrom"].(map[string]any); ok && src["resource"] != nil {
		f["openapi"] = map[string]any{"spec": "spec3.json"}
	}
	return f
}

// withEndpoint adds the webhooks: block that a file's events need.
func withEndpoint(f map[string]any) map[string]any {
	f["webhooks"] = map[string]any{"endpoints": []any{map[string]any{"name": "shop", "url": "http://127.0.0.1:4242/", "secret": "whsec_test_123"}}}
	return f
}

// withWebhooks gives host's file an endpoint when the route has events.
func withWebhooks(host func(map[string]any) map[string]any) func(map[string]any) map[string]any {
	return func(v map[string]any) map[string]any {
		f := host(v)
		if _, ok := v["events"]; ok {
			withEndpoint(f)
		}
		return f
	}
}

func fileWith(key string, v any) map[string]any {
	f := routeWith("", nil)
	f[key] = v
	return f
}

func routeWith(key string, v any) map[string]any {
	r := map[string]any{"path": "/x/{id}", "respond": map[string]any{}}
	if key != "" {
		r[key] = v
	}
	return routeFile(r)
}

func routeFile(r map[string]any) map[string]any { return map[string]any{"routes": []any{r}} }

// sampleBody is a static body longer than any bytes: a sample sends.
const sampleBody = "0123456789abcdef"

// bases are the fields an object of a definition needs besides the one
// sampled (its required fields are added from their examples); needs adds
// what one field needs next to it, a nil value removing a field, and
// valueNeeds what one value of a field needs: the cross-field rules the
// schema states with if/then (slow-body needs over; bytes goes only with
// partial-body, over and chunks only with slow-body; partial-body needs a
// body), which a sample must satisfy to be valid. The one rule the schema
// cannot state, that bytes: is less than a static body's length, is met
// by sampleBody.
var (
	bases = map[string]map[string]any{
		"":           {"routes": []any{map[string]any{"path": "/x", "respond": map[string]any{}}}},
		"route":      {"path": "/x/{id}", "respond": map[string]any{}},
		"delayRange": {"min": "1ms", "max": "24h"},
		"faultSpec":  {"kind": "connection-reset"},
		// Signing is stripe unless said: a secret is needed.
		"webhookEndpoint": {"secret": "whsec_test_123"},
		"saveRef":         {"collection": "c"},
		// One of collection: and resource: is required.
		"webhookEndpointSource": {"collection": "hooks"},
		// One of is: and to: is required.
		"routeState": {"to": "paid"},
	}
	needs = map[string]map[string]any{
		"route.responses":           {"respond": nil},
		"route.sequence":            {"respond": nil, "responses": []any{map[string]any{}}},
		"route.missing":             {"respond": map[string]any{"load": map[string]any{"collection": "c", "id": "x"}}},
		"route.refuse":              {"operation": "showX"},
		"route.cases":               {"operation": "showX"},
		"route.unknownIds":          {"operation": "showX"},
		"response.save":             {"body": map[string]any{"id": 1}},
		"saveRef.resource":          {"collection": nil, "body": map[string]any{"a": 1}},
		"saveRef.merge":             {"body": map[string]any{"a": 1}},
		"saveRef.events":            {"body": map[string]any{"a": 1}},
		"response.missing":          {"load": map[string]any{"collection": "c", "id": "x"}},
		"delayRange.median":         {"min": nil, "max": nil, "sigma": 0.5},
		"delayRange.sigma":          {"min": nil, "max": nil, "median": "1ms"},
		"response.fault":            {"body": sampleBody},
		"faultSpec.bytes":           {"kind": "partial-body"},
		"faultSpec.over":            {"kind": "slow-body"},
		"faultSpec.chunks":          {"kind": "slow-body", "over": "5s"},
		"faultSpec.rate":            {"kind": "bandwidth"},
		"faultSpec.latency":         {"kind": "latency"},
		"faultSpec.jitter":          {"kind": "latency", "latency": "1s"},
		"faultSpec.on":              {"kind": "latency", "latency": "1s"},
		"faultSpec.size":            {"kind": "slice"},
		"faultSpec.gap":             {"kind": "slice"},
		"webhookEndpoint.secretEnv": {"secret": nil},
		"webhooks.scope":            {"collection": "events"},

		// resource: takes the place of the base's collection:.
		"webhookEndpointSource.resource": {"collection": nil},
	}
	valueNeeds = map[string]map[string]any{
		`faultSpec.kind="slow-body"`:         {"over": "5s"},
		`faultSpec.kind="bandwidth"`:         {"rate": 1000},
		`faultSpec.kind="latency"`:           {"latency": "1s"},
		`faultSpec.kind="limit"`:             {"bytes": 10},
		`webhookEndpoint.signing="standard"`: {"secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
	}
)

// TestSchemaSamplesOfEveryField builds, for every field of every object in
// the schema, a file using that field with each of its examples and each
// value of its enum, and checks that both the schema and the loader accept
// it. A field without examples, or a definition without a host, fails the
// test: a new field cannot go untested.
func TestSchemaSamplesOfEveryField(t *testing.T) {
	t.Parallel()
	sch, doc := readSchema(t)
	defs := doc["$defs"].(map[string]any)
	objects := map[string]map[string]any{"": map[string]any(doc)}
	for name, d := range defs {
		if _, ok := d.(map[string]any)["properties"]; ok {
			objects[name] = d.(map[string]any)
		}
	}
	names := make([]string, 0, len(objects))
	for name := range objects {
		names = append(names, name)
	}
	sort.Strings(names)
	n := 0
	for _, name := range names {
		obj := objects[name]
		host, ok := hosts[name]
		if !ok {
			t.Errorf("$defs/%s: no host in schema_test.go to place a sample of it in a file", name)
			continue
		}
		props := obj["properties"].(map[string]any)
		for _, prop := range sortedKeys(props) {
			field := defName(name) + "." + prop
			values := samples(doc, props[prop].(map[string]any))
			if len(values) == 0 {
				t.Errorf("%s: no examples in the schema to test it with", field)
				continue
			}
			for _, v := range values {
				o := map[string]any{}
				for k, bv := range bases[name] {
					o[k] = bv
				}
				for _, req := range required(obj) {
					if _, ok := o[req]; !ok && req != prop {
						o[req] = samples(doc, props[req].(map[string]any))[0]
					}
				}
				for k, nv := range needs[field] {
					if nv == nil {
						delete(o, k)
					} else {
						o[k] = nv
					}
				}
				o[prop] = v
				j, _ := json.Marshal(v)
				id := field + "=" + string(j)
				for k, nv := range valueNeeds[id] {
					o[k] = nv
				}
				n++
				checkSample(t, sch, id, host(o))
			}
		}
	}
	t.Logf("%d samples", n)
}

func defName(name string) string {
	if name == "" {
		return "file"
	}
	return name
}

// checkSample validates and loads one generated file; data is JSON, which
// is YAML. It runs in a directory with the body file the bodyFile example
// names.
func checkSample(t *testing.T, sch *jsonschema.Schema, id string, file map[string]any) {
	t.Helper()
	data, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bodies"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bodies", "payment.json"), []byte(`{"id":"pay_1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// The openapi: example's files; Load only reads them (package openapi
	// compiles them).
	for _, f := range []string{"spec3.json", "fixtures3.json"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(`{}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := validateYAML(sch, data); err != nil {
		t.Errorf("%s: the schema refuses its own example:\n%s\n%v", id, data, err)
	}
	_, err = Load(path)
	why := pendingFor(id)
	switch {
	case err != nil && why == "":
		t.Errorf("%s: the loader refuses it:\n%s\n%v", id, data, err)
	case err == nil && why != "":
		t.Errorf("%s: the loader now accepts %s: remove it from pendingInSchema", id, why)
	case err != nil:
		t.Logf("%s: not in this loader yet (%s)", id, why)
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func required(obj map[string]any) []string {
	var out []string
	for _, r := range asList(obj["required"]) {
		out = append(out, r.(string))
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// ref returns the definition a node refers to, or nil.
func ref(doc schemaDoc, node map[string]any) map[string]any {
	r, ok := node["$ref"].(string)
	if !ok {
		return nil
	}
	d, _ := doc["$defs"].(map[string]any)[strings.TrimPrefix(r, "#/$defs/")].(map[string]any)
	return d
}

// samples returns the values to test a field with: its examples (or those
// of the definition it refers to, or that definition's smallest object),
// every value of the enums it allows, and its default.
func samples(doc schemaDoc, node map[string]any) []any {
	out := slices.Clone(asList(node["examples"]))
	if d := ref(doc, node); d != nil && len(out) == 0 {
		out = slices.Clone(asList(d["examples"]))
		if _, isObject := d["properties"]; len(out) == 0 && isObject {
			min := map[string]any{}
			props := d["properties"].(map[string]any)
			for _, req := range required(d) {
				min[req] = samples(doc, props[req].(map[string]any))[0]
			}
			out = append(out, min)
		}
	}
	more := enums(doc, node, 0)
	if def, ok := node["default"]; ok {
		more = append(more, def)
	}
	for _, e := range more {
		if !slices.ContainsFunc(out, func(o any) bool { return fmt.Sprint(o) == fmt.Sprint(e) }) {
			out = append(out, e)
		}
	}
	return out
}

// enums collects the enum values a node allows, through $ref, anyOf and
// oneOf (not into arrays or objects).
func enums(doc schemaDoc, node map[string]any, depth int) []any {
	if depth > 5 {
		return nil
	}
	out := slices.Clone(asList(node["enum"]))
	if d := ref(doc, node); d != nil {
		out = append(out, enums(doc, d, depth+1)...)
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		for _, b := range asList(node[k]) {
			out = append(out, enums(doc, b.(map[string]any), depth+1)...)
		}
	}
	return out
}

// TestSchemaAndLoaderRefuse checks mistakes a schema can judge: both the
// schema and the loader must refuse each file.
func TestSchemaAndLoaderRefuse(t *testing.T) {
	t.Parallel()
	sch, _ := readSchema(t)
	editor, _ := readSchemaAs(t, draft7)
	// editorMisses are the cases an editor does not flag: draft-07 has no
	// dependentRequired (the README says so).
	editorMisses := []string{"sequence with respond"}
	const route = "routes:\n  - path: /x/{id}\n"
	cases := []struct{ name, yaml string }{
		{"unknown file field", "rotes: []\n"},
		{"neither routes nor fallback", "name: x\n"},
		{"routes a mapping", "routes: { a: 1 }\n"},
		{"routes empty", "name: x\nroutes:\n"},
		{"unknown defaults field", "defaults: { header: {} }\n" + route + "    respond: {}\n"},
		{"defaults delay not a duration", "defaults: { delay: soon }\n" + route + "    respond: {}\n"},
		{"unknown route field", route + "    respnd: {}\n"},
		{"no path", "routes:\n  - respond: {}\n"},
		{"path without slash", "routes:\n  - path: payments\n    respond: {}\n"},
		{"path a number", "routes:\n  - path: 5\n    respond: {}\n"},
		{"method a mapping", route + "    method: { GET: true }\n    respond: {}\n"},
		{"method with a space", route + "    method: GET /x\n    respond: {}\n"},
		{"priority a string", route + "    priority: high\n    respond: {}\n"},
		{"respond and responses", route + "    respond: {}\n    responses: [{}]\n"},
		{"neither respond nor responses", route + "    name: x\n"},
		{"responses empty", route + "    responses: []\n"},
		{"responses a mapping", route + "    responses: { status: 200 }\n"},
		{"sequence with respond", route + "    respond: {}\n    sequence: { after: cycle }\n"},
		{"sequence after unknown", route + "    responses: [{}]\n    sequence: { after: loop }\n"},
		{"sequence per unknown attribute", route + "    responses: [{}]\n    sequence: { per: cookie.session }\n"},
		{"unknown sequence field", route + "    responses: [{}]\n    sequence: { by: path.id }\n"},
		{"unknown when field", route + "    when: { header: {} }\n    respond: {}\n"},
		{"condition a list", route + "    when: { headers: { X-A: [a, b] } }\n    respond: {}\n"},
		{"condition null", route + "    when: { query: { a: null } }\n    respond: {}\n"},
		{"condition empty", route + "    when: { query: { a: {} } }\n    respond: {}\n"},
		{"unknown condition", route + "    when: { query: { a: { equal: b } } }\n    respond: {}\n"},
		{"oneOf empty", route + "    when: { query: { a: { oneOf: [] } } }\n    respond: {}\n"},
		{"oneOf a string", route + "    when: { query: { a: { oneOf: b } } }\n    respond: {}\n"},
		{"present not a boolean", route + "    when: { headers: { X-A: { present: yes } } }\n    respond: {}\n"},
		{"bad header name in a condition", route + "    when: { headers: { 'X A': b } }\n    respond: {}\n"},
		{"body json a string", route + "    when: { body: { json: '{\"a\": 1}' } }\n    respond: {}\n"},
		{"body json and form", route + "    when: { body: { json: { a: 1 }, form: { a: b } } }\n    respond: {}\n"},
		{"body form empty", route + "    when: { body: { form: {} } }\n    respond: {}\n"},
		{"unknown body condition", route + "    when: { body: { jsn: { a: 1 } } }\n    respond: {}\n"},
		{"body condition empty", route + "    when: { body: {} }\n    respond: {}\n"},
		{"unknown response field", route + "    respond: { stauts: 200 }\n"},
		{"status a string", route + "    respond: { status: '201' }\n"},
		{"status out of range", route + "    respond: { status: 700 }\n"},
		{"status below 200", route + "    respond: { status: 100 }\n"},
		{"bad response header name", route + "    respond: { headers: { 'Bad Header': x } }\n"},
		{"header value a mapping", route + "    respond: { headers: { X-A: { b: c } } }\n"},
		{"header value an empty list", route + "    respond: { headers: { X-A: [] } }\n"},
		{"body and bodyFile", route + "    respond: { body: a, bodyFile: b.txt }\n"},
		{"bodyFile a list", route + "    respond: { bodyFile: [a] }\n"},
		{"template not a boolean", route + "    respond: { template: yes }\n"},
		{"delay without a unit", route + "    respond: { delay: 3 }\n"},
		{"delay a word", route + "    respond: { delay: soon }\n"},
		{"delay negative", route + "    respond: { delay: -1s }\n"},
		{"delay min alone", route + "    respond: { delay: { min: 1s } }\n"},
		{"delay median without sigma", route + "    respond: { delay: { median: 1s } }\n"},
		{"delay sigma without median", route + "    respond: { delay: { sigma: 1, min: 1s, max: 2s } }\n"},
		{"delay median with min", route + "    respond: { delay: { median: 1s, sigma: 1, min: 1s } }\n"},
		{"delay sigma too large", route + "    respond: { delay: { median: 1s, sigma: 11 } }\n"},
		{"delay sigma a string", route + "    respond: { delay: { median: 1s, sigma: wide } }\n"},
		{"unknown delay field", route + "    respond: { delay: { mean: 1s } }\n"},
		{"unknown fault", route + "    respond: { fault: explode }\n"},
		{"fault a number", route + "    respond: { fault: 1 }\n"},
		{"slow-body written alone", route + "    respond: { body: abc, fault: slow-body }\n"},
		{"slow-body without over", route + "    respond: { body: abc, fault: { kind: slow-body, chunks: 2 } }\n"},
		{"slow-body over 0", route + "    respond: { body: abc, fault: { kind: slow-body, over: 0s } }\n"},
		{"slow-body over a number", route + "    respond: { body: abc, fault: { kind: slow-body, over: 0 } }\n"},
		{"slow-body chunks 0", route + "    respond: { body: abc, fault: { kind: slow-body, over: 1s, chunks: 0 } }\n"},
		{"slow-body chunks too many", route + "    respond: { body: abc, fault: { kind: slow-body, over: 1s, chunks: 10001 } }\n"},
		{"fault without kind", route + "    respond: { fault: { chance: 0.5 } }\n"},
		{"unknown fault field", route + "    respond: { fault: { kind: hang, after: arrival, within: 1s } }\n"},
		{"fault after unknown", route + "    respond: { fault: { kind: hang, after: response } }\n"},
		{"fault chance above 1", route + "    respond: { fault: { kind: hang, chance: 1.5 } }\n"},
		{"fault chance a percentage", route + "    respond: { fault: { kind: hang, chance: 10% } }\n"},
		{"bytes on another kind", route + "    respond: { body: abc, fault: { kind: malformed-chunk, bytes: 1 } }\n"},
		{"bytes negative", route + "    respond: { body: abc, fault: { kind: partial-body, bytes: -1 } }\n"},
		{"over on another kind", route + "    respond: { body: abc, fault: { kind: partial-body, over: 1s } }\n"},
		{"chunks on another kind", route + "    respond: { fault: { kind: hang, chunks: 2 } }\n"},
		{"partial-body without a body", route + "    respond: { status: 201, fault: partial-body }\n"},
		{"partial-body long form without a body", route + "    respond: { fault: { kind: partial-body, bytes: 1 } }\n"},
		{"load and list", route + "    respond: { load: { collection: c, id: x }, list: { collection: c } }\n"},
		{"load and delete", route + "    respond: { load: { collection: c, id: x }, delete: { collection: c, id: x } }\n"},
		{"load without id", route + "    respond: { load: { collection: c } }\n"},
		{"save without collection", route + "    respond: { body: {}, save: { id: x } }\n"},
		{"list with id", route + "    respond: { list: { collection: c, id: x } }\n"},
		{"list paged not a boolean", route + "    respond: { list: { collection: c, paged: yes } }\n"},
		{"scope part unknown", route + "    respond: { list: { collection: c, scope: [credential, query.account] } }\n"},
		{"scope header without a name", route + "    respond: { list: { collection: c, scope: [header.] } }\n"},
		{"event when without json", "webhooks: { collection: events }\n" + route + "    respond: {}\n    events: [{ type: a.b, when: { status: ok } }]\n"},
		{"scope word unknown", route + "    respond: { list: { collection: c, scope: account } }\n"},
		{"bad collection name", route + "    respond: { list: { collection: 'a b' } }\n"},
		{"unknown item field", route + "    respond: { load: { collection: c, id: x, key: y } }\n"},
		{"idempotency on", route + "    respond: {}\n    idempotency: on\n"},
		{"idempotency without key", route + "    respond: {}\n    idempotency: { required: true }\n"},
		{"idempotency key not an attribute", route + "    respond: {}\n    idempotency: { key: Idempotency-Key }\n"},
		{"unknown idempotency field", route + "    respond: {}\n    idempotency: { key: header.K, ttl: 1h, expires: 1h }\n"},
		{"idempotency required not a boolean", route + "    respond: {}\n    idempotency: { key: header.K, required: yes }\n"},
		{"idempotency inFlight unknown", route + "    respond: {}\n    idempotency: { key: header.K, inFlight: queue }\n"},
		{"idempotency onClientAbort unknown", route + "    respond: {}\n    idempotency: { key: header.K, onClientAbort: abort }\n"},
		{"idempotency store unknown", route + "    respond: {}\n    idempotency: { key: header.K, store: [2xx, 6xx] }\n"},
		{"idempotency ttl not a duration", route + "    respond: {}\n    idempotency: { key: header.K, ttl: 1 day }\n"},
		{"idempotency scope not an attribute", route + "    respond: {}\n    idempotency: { key: header.K, scope: [Authorization] }\n"},
		{"idempotency fingerprint unknown", route + "    respond: {}\n    idempotency: { key: header.K, fingerprint: [bodyy] }\n"},
		{"idempotency fingerprint empty", route + "    respond: {}\n    idempotency: { key: header.K, fingerprint: [] }\n"},
		{"idempotency replayHeader not a name", route + "    respond: {}\n    idempotency: { key: header.K, replayHeader: 'Bad Header' }\n"},
		{"idempotency unknown error", route + "    respond: {}\n    idempotency: { key: header.K, errors: { conflict: {} } }\n"},
		{"idempotency error response unknown field", route + "    respond: {}\n    idempotency: { key: header.K, errors: { missing: { stats: 400 } } }\n"},
		{"collections a list", "collections: [a]\n" + route + "    respond: {}\n"},
		{"collection not a list", "collections: { c: { id: a } }\n" + route + "    respond: {}\n"},
		{"seed item without id", "collections: { c: [{ name: a }] }\n" + route + "    respond: {}\n"},
		{"seed item not a mapping", "collections: { c: [a] }\n" + route + "    respond: {}\n"},
		{"seed item id a list", "collections: { c: [{ id: [a] }] }\n" + route + "    respond: {}\n"},
		{"bad collection name in seeds", "collections: { 'a b': [] }\n" + route + "    respond: {}\n"},
		{"unknown fallback field", "fallback: { stauts: 404 }\n"},
		{"cors without origins", "cors: { credentials: true }\n" + route + "    respond: {}\n"},
		{"cors origins empty", "cors: { origins: [] }\n" + route + "    respond: {}\n"},
		{"cors origin without scheme", "cors: { origins: [localhost:3000] }\n" + route + "    respond: {}\n"},
		{"cors origin with a path", "cors: { origins: ['http://localhost:3000/'] }\n" + route + "    respond: {}\n"},
		{"cors origins a mapping", "cors: { origins: { a: b } }\n" + route + "    respond: {}\n"},
		{"unknown cors field", "cors: { origins: '*', origin: '*' }\n" + route + "    respond: {}\n"},
		{"cors method with a space", "cors: { origins: '*', methods: [GET POST] }\n" + route + "    respond: {}\n"},
		{"cors header not a name", "cors: { origins: '*', headers: ['X A'] }\n" + route + "    respond: {}\n"},
		{"cors exposeHeaders star", "cors: { origins: '*', exposeHeaders: ['*'] }\n" + route + "    respond: {}\n"},
		{"cors maxAge in plain seconds", "cors: { origins: '*', maxAge: 600 }\n" + route + "    respond: {}\n"},
		{"cors credentials not a boolean", "cors: { origins: '*', credentials: yes }\n" + route + "    respond: {}\n"},
		{"cors a list", "cors: ['*']\n" + route + "    respond: {}\n"},
		{"route missing unknown field", route + "    respond: { load: { collection: c, id: x } }\n    missing: { stauts: 404 }\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := validateYAML(sch, []byte(tc.yaml)); err == nil {
				t.Errorf("the schema accepts\n%s", tc.yaml)
			}
			err := validateYAML(editor, []byte(tc.yaml))
			if missed := slices.Contains(editorMisses, tc.name); (err == nil) != missed {
				t.Errorf("read with draft-07 rules, as editors do, the schema refuses it: %v; want %v (editorMisses)", err != nil, !missed)
			}
			if _, err := LoadBytes("s.yaml", []byte(tc.yaml)); err == nil {
				t.Errorf("the loader accepts\n%s", tc.yaml)
			}
		})
	}
}

// TestSchemaKnowsEveryField compares the loader's lists of fields and
// values with the schema's, so that a field added to the loader shows up
// in editors, and a field in the schema is one the loader knows (or is in
// pendingInSchema). Every field must have a description.
func TestSchemaKnowsEveryField(t *testing.T) {
	t.Parallel()
	_, doc := readSchema(t)
	defs := doc["$defs"].(map[string]any)
	def := func(name string) map[string]any {
		if name == "" {
			return doc
		}
		return defs[name].(map[string]any)
	}
	props := func(name string) []string { return sortedKeys(def(name)["properties"].(map[string]any)) }
	enumOf := func(node map[string]any) []string {
		var out []string
		for _, e := range enums(doc, node, 0) {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	prop := func(defName, p string) map[string]any {
		return def(defName)["properties"].(map[string]any)[p].(map[string]any)
	}
	for _, c := range []struct {
		what   string
		loader []string
		schema []string
	}{
		{"file fields", fileFields, props("")},
		{"defaults fields", defaultsFields, props("defaults")},
		{"route fields", routeFields, props("route")},
		{"when fields", whenFields, props("when")},
		{"condition tests", conditionKinds, props("tests")},
		{"body conditions", bodyKinds, props("bodyTests")},
		{"response fields", responseFields, props("response")},
		{"delay range fields", delayFields, props("delayRange")},
		{"sequence fields", sequenceFields, props("sequence")},
		{"sequence.after values", afterValues, enumOf(prop("sequence", "after"))},
		{"idempotency fields", idempotencyFields, props("idempotencyBlock")},
		{"idempotency errors", idempotencyErrors, props("idempotencyErrors")},
		{"idempotency inFlight values", inFlightModes, enumOf(prop("idempotencyBlock", "inFlight"))},
		{"idempotency onClientAbort values", abortModes, enumOf(prop("idempotencyBlock", "onClientAbort"))},
		{"idempotency store values", storeClasses, enumOf(def("statusClass"))},
		{"fingerprint parts", wholeParts, enumOf(def("fingerprintPart"))},
		{"faults", faults, enumOf(def("faultKind"))},
		// A kind alone is any but those that need a field: slow-body
		// (over), bandwidth (rate), latency (latency), limit (bytes).
		{"faults written alone", slices.DeleteFunc(slices.Clone(faults), func(k string) bool {
			return slices.Contains([]FaultKind{SlowBody, Bandwidth, Latency, Limit}, FaultKind(k))
		}), enumOf(asList(def("fault")["anyOf"])[0].(map[string]any))},
		{"fault fields", faultFields, props("faultSpec")},
		{"fault after values", faultStages, enumOf(prop("faultSpec", "after"))},
		{"cors fields", corsFields, props("cors")},
		{"webhooks fields", webhooksFields, props("webhooks")},
		{"webhook endpoint fields", endpointFields, props("webhookEndpoint")},
		{"webhook signings", signings, enumOf(prop("webhookEndpoint", "signing"))},
		{"webhook retry fields", retryFields, props("webhookRetry")},
		{"webhook endpoint source fields", sourceFields, props("webhookEndpointSource")},
		{"event fields", eventFields, props("event")},
		{"event faults", eventFaults, props("eventFault")},
		// itemRef lists its fields inline; keep these in step with it.
		{"save/load/delete fields", []string{"collection", "id", "scope"}, props("itemRef")},
		{"list fields", listFields, props("listRef")},
		{"state fields", stateFields, props("routeState")},
	} {
		for _, f := range c.loader {
			if !slices.Contains(c.schema, f) {
				t.Errorf("%s: the loader knows %q, the schema does not: add it to %s with a description", c.what, f, schemaFile)
			}
		}
		for _, f := range c.schema {
			if !slices.Contains(c.loader, f) && pendingFor(`"`+f+`"`) == "" && pendingFor(f) == "" {
				t.Errorf("%s: the schema has %q, the loader does not know it", c.what, f)
			}
		}
	}
	// Every field is described, on itself or on the definition it names.
	for _, name := range append([]string{""}, sortedKeys(defs)...) {
		ps, ok := def(name)["properties"].(map[string]any)
		if !ok {
			continue
		}
		for p, node := range ps {
			n := node.(map[string]any)
			if _, ok := n["description"]; ok {
				continue
			}
			if d := ref(doc, n); d != nil {
				if _, ok := d["description"]; ok {
					continue
				}
			}
			t.Errorf("%s.%s has no description", defName(name), p)
		}
	}
}
