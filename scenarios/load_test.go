package scenarios

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
)

// write creates files (name → content) in a new temporary directory.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func loadOne(t *testing.T, yaml string) *Set {
	t.Helper()
	dir := write(t, map[string]string{"s.yaml": yaml})
	set, err := Load(filepath.Join(dir, "s.yaml"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return set
}

func TestExamplesLoad(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("../examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no examples found")
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestConditions(t *testing.T) {
	t.Parallel()
	set := loadOne(t, `
routes:
  - path: /c
    when:
      headers:
        idempotency-key: { present: true, regex: "^[a-z0-9-]+$" }
        X-Mode: live
        X-Gone: { absent: true }
        X-Not-Gone: { absent: false }
        X-Alt: { oneOf: [a, 2, true] }
        X-Has: { contains: abc }
      query:
        page: "1"
      body:
        json: { currency: JPY, items: [{ sku: A }] }
        contains: JPY
    respond: { status: 200 }
`)
	w := set.Routes()[0].When
	names := []string{}
	for _, h := range w.Headers {
		names = append(names, h.Name)
	}
	if want := []string{"Idempotency-Key", "X-Mode", "X-Gone", "X-Not-Gone", "X-Alt", "X-Has"}; !reflect.DeepEqual(names, want) {
		t.Errorf("header names = %v, want %v (canonical, in file order)", names, want)
	}
	got := w.Describe()
	want := []string{
		`header Idempotency-Key present and matches /^[a-z0-9-]+$/`,
		`header X-Mode = "live"`,
		`header X-Gone absent`,
		`header X-Not-Gone present`,
		`header X-Alt one of ["a", "2", "true"]`,
		`header X-Has contains "abc"`,
		`query page = "1"`,
		`body contains "JPY"`,
		`body json {"currency":"JPY","items":[{"sku":"A"}]}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Describe() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestResponses(t *testing.T) {
	t.Parallel()
	dir := write(t, map[string]string{
		"s.yaml": `
defaults:
  headers: { X-Mock: yes, Content-Type: text/plain }
  delay: 50ms
routes:
  - name: json body keeps key order
    path: /json
    respond:
      status: 201
      headers: { X-Mock: overridden }
      body: { zeta: 1, alpha: [true, null, 1.50, "x"], mid: { b: 2, a: 1 } }
  - name: text body
    path: /text
    respond: { body: "hello", delay: 0s }
  - name: html sniffed
    path: /html
    respond:
      headers: {}
      body: "<html><body>hi</body></html>"
  - name: file body
    path: /file
    respond:
      bodyFile: bodies/pay.json
  - name: ranges
    path: /ranges
    responses:
      - delay: { min: 100ms, max: 2s }
      - delay: { median: 200ms, sigma: 0.5, max: 3s }
      - delay: 1.5s
`,
		"bodies/pay.json": `{"id":"pay_1"}`,
	})
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	rs := set.Routes()
	j := rs[0].Responses[0]
	if got, want := string(j.Body), `{"zeta":1,"alpha":[true,null,1.50,"x"],"mid":{"b":2,"a":1}}`; got != want {
		t.Errorf("json body = %s, want %s", got, want)
	}
	if v, _ := j.Header("X-Mock"); v != "overridden" {
		t.Errorf("X-Mock = %q, want the response's own value over the default", v)
	}
	if v, _ := j.Header("Content-Type"); v != "text/plain" {
		t.Errorf("Content-Type = %q: a default Content-Type is kept even for a JSON body", v)
	}
	if j.Delay != (Delay{Kind: Fixed, Fixed: 50 * time.Millisecond}) {
		t.Errorf("delay = %v, want the default 50ms", j.Delay)
	}
	if d := rs[1].Responses[0].Delay; d.Kind != NoDelay {
		t.Errorf("delay: 0s should override the default, got %v", d)
	}
	if v, _ := rs[3].Responses[0].Header("Content-Type"); v != "text/plain" {
		t.Errorf("file body Content-Type = %q, want the default text/plain", v)
	}
	if got := string(rs[3].Responses[0].Body); got != `{"id":"pay_1"}` {
		t.Errorf("bodyFile body = %q", got)
	}
	want := []Delay{
		{Kind: Uniform, Min: 100 * time.Millisecond, Max: 2 * time.Second},
		{Kind: LogNormal, Median: 200 * time.Millisecond, Sigma: 0.5, Max: 3 * time.Second},
		{Kind: Fixed, Fixed: 1500 * time.Millisecond},
	}
	for i, w := range want {
		if got := rs[4].Responses[i].Delay; got != w {
			t.Errorf("responses[%d].delay = %+v, want %+v", i, got, w)
		}
	}
	if len(set.Deps) != 1 || !strings.HasSuffix(set.Deps[0], filepath.Join("bodies", "pay.json")) {
		t.Errorf("Deps = %v, want the body file", set.Deps)
	}
}

func TestContentTypeGuess(t *testing.T) {
	t.Parallel()
	set := loadOne(t, `
routes:
  - { path: /a, respond: { body: { a: 1 } } }
  - { path: /b, respond: { body: '{"a": 1}' } }
  - { path: /c, respond: { body: "plain words" } }
  - { path: /d, respond: { body: "<html><p>x</p></html>" } }
  - { path: /e, respond: { status: 200 } }
  - { path: /f, respond: { body: [1, 2] } }
`)
	want := []string{"application/json", "application/json", "text/plain; charset=utf-8", "text/html; charset=utf-8", "", "application/json"}
	for i, r := range set.Routes() {
		got, _ := r.Responses[0].Header("Content-Type")
		if got != want[i] {
			t.Errorf("%s: Content-Type = %q, want %q", r.Path, got, want[i])
		}
	}
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	t.Parallel()
	set := loadOne(t, `
x-common: &ok { status: 201, headers: { X-A: "1" }, body: { id: 1 } }
routes:
  - path: /merge
    respond:
      <<: *ok
      status: 202
  - path: /alias
    respond: *ok
`)
	merged, alias := set.Routes()[0].Responses[0], set.Routes()[1].Responses[0]
	if merged.Status != 202 || alias.Status != 201 {
		t.Errorf("statuses = %d, %d; want 202 (explicit key beats merge) and 201", merged.Status, alias.Status)
	}
	for _, r := range []*Response{merged, alias} {
		if v, _ := r.Header("X-A"); v != "1" || string(r.Body) != `{"id":1}` {
			t.Errorf("merged fields missing: X-A=%q body=%s", v, r.Body)
		}
	}
}

func TestMethodsAndNames(t *testing.T) {
	t.Parallel()
	set := loadOne(t, `
routes:
  - { path: /a, method: [GET, HEAD], respond: {} }
  - { path: /a, method: ANY, respond: {} }
  - { path: /a, method: [GET, HEAD], respond: {} }
  - { path: /b, respond: {} }
  - { name: "GET,HEAD /a #3", path: /c, respond: {} }
`)
	var got []string
	for _, r := range set.Routes() {
		got = append(got, r.Name+"|"+strings.Join(r.Methods, ","))
	}
	want := []string{"GET,HEAD /a|GET,HEAD", "* /a|", "GET,HEAD /a #2|GET,HEAD", "* /b|", "GET,HEAD /a #3|"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("names|methods = %v, want %v", got, want)
	}
}

func TestSequenceAttributes(t *testing.T) {
	t.Parallel()
	set := loadOne(t, `
routes:
  - path: /orders/{orderId}
    sequence: { per: path.orderId, after: cycle }
    responses: [{ status: 500 }, { status: 200 }]
  - path: /h
    sequence: { per: header.idempotency-key }
    responses: [{ status: 500 }]
  - path: /b
    sequence: { per: body.customer.id }
    responses: [{ status: 500 }]
  - path: /g
    responses: [{ status: 500 }]
`)
	rs := set.Routes()
	cases := []struct {
		seq  Sequence
		text string
	}{
		{Sequence{Per: &Attribute{Kind: PathAttr, Name: "orderId"}, After: Cycle}, "path.orderId"},
		{Sequence{Per: &Attribute{Kind: HeaderAttr, Name: "Idempotency-Key"}, After: RepeatLast}, "header.Idempotency-Key"},
		{Sequence{Per: &Attribute{Kind: BodyAttr, Path: []string{"customer", "id"}}, After: RepeatLast}, "body.customer.id"},
	}
	for i, c := range cases {
		if !reflect.DeepEqual(*rs[i].Sequence, c.seq) {
			t.Errorf("route %d: sequence = %+v, want %+v", i, *rs[i].Sequence, c.seq)
		}
		if got := rs[i].Sequence.Per.String(); got != c.text {
			t.Errorf("route %d: per = %q, want %q", i, got, c.text)
		}
	}
	if s := rs[3].Sequence; s == nil || s.Per != nil || s.After != RepeatLast {
		t.Errorf("responses: without sequence: should be one shared repeat-last sequence, got %+v", s)
	}
}

func TestDirectoryOrderAndSkips(t *testing.T) {
	t.Parallel()
	dir := write(t, map[string]string{
		"b.yaml":              "routes: [{ path: /b, respond: {} }]",
		"a.yml":               "routes: [{ path: /a, respond: {} }]",
		"sub/c.yaml":          "routes: [{ path: /c, respond: {} }]",
		".hidden.yaml":        "not: [valid",
		".git/x.yaml":         "not: [valid",
		"..2026_12_02/x.yaml": "not: [valid",
		"notes.txt":           "ignored",
		"a.yaml.swp":          "ignored",
	})
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range set.Routes() {
		got = append(got, r.Path)
	}
	if want := []string{"/a", "/b", "/c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("route order = %v, want %v (lexical by path, dot files skipped)", got, want)
	}
}

func TestIdentity(t *testing.T) {
	t.Parallel()
	a := loadOne(t, "routes:\n  - { name: x, path: /x, respond: { status: 200 } }\n  - { name: y, path: /y, respond: { status: 200 } }\n")
	moved := loadOne(t, "# a comment moves everything down\nroutes:\n  - { name: y, path: /y, respond: { status: 200 } }\n  - { name: x, path: /x, respond: { status: 200 } }\n")
	edited := loadOne(t, "routes:\n  - { name: x, path: /x, respond: { status: 201 } }\n")
	if a.Routes()[0].Identity != moved.Routes()[1].Identity {
		t.Error("moving a route changed its identity")
	}
	if a.Routes()[0].Identity == edited.Routes()[0].Identity {
		t.Error("editing a route kept its identity")
	}
	if a.Hash == moved.Hash {
		t.Error("different content, same hash")
	}
}

func TestBodyFileSymlinkEscape(t *testing.T) {
	t.Parallel()
	outside := write(t, map[string]string{"secret.json": "{}"})
	dir := write(t, map[string]string{"s.yaml": "routes: [{ path: /x, respond: { bodyFile: link.json } }]"})
	if err := os.Symlink(filepath.Join(outside, "secret.json"), filepath.Join(dir, "link.json")); err != nil {
		t.Skip(err)
	}
	_, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), "outside the scenario root") || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("err = %v, want an escape through a symbolic link", err)
	}
}

func TestTwoFallbacks(t *testing.T) {
	t.Parallel()
	dir := write(t, map[string]string{
		"a.yaml": "fallback: { status: 418 }",
		"b.yaml": "fallback: { status: 404 }\nroutes: []",
	})
	_, err := Load(dir)
	want := filepath.Join(dir, "b.yaml") + ":1:1: a second fallback (the first is at " + filepath.Join(dir, "a.yaml") + ":1:1); only one file may define it"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

func TestEmptyDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), "no *.yaml or *.yml files") {
		t.Fatalf("err = %v", err)
	}
}

func TestBillionLaughs(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	b.WriteString("routes: [{ path: /x, respond: { body: *a9 } }]\n")
	dir := write(t, map[string]string{"s.yaml": b.String()})
	_, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), "too many nodes") {
		t.Fatalf("err = %v, want the node budget to stop the expansion", err)
	}
}

// TestPathTemplatesAgreeWithMux checks that CompilePath accepts and matches
// exactly what a gorilla/mux route with the same template does.
func TestPathTemplatesAgreeWithMux(t *testing.T) {
	t.Parallel()
	templates := []struct {
		tpl      string
		segments bool // matched a segment at a time, without a regexp
	}{
		{"/payments", false}, {"/payments/{id}", true}, {"/items/{n:[0-9]+}", false}, {"/files/{path:.+}", false},
		{"/a/{x}/b/{y:[a-z]{2,3}}", false}, {"/v{version:[0-9]}/things", false}, {"/dots/{name}.json", true}, {"/a.b/{c}", true},
		{"/users/{id}/orders/{n}", true}, {"/users/{id}/orders/7", true}, {"/{a}", true}, {"/pay_{id}/x", true},
		{"/a//{b}/", true}, {"/{a:[^/]+}/{b}", false}, {"/{a}-{b}/c", false}, {"/{a}{b}", false}, {"/\ufffd/{a}", false},
	}
	paths := []string{
		"/payments", "/payments/", "/payments/pay_1", "/payments/a/b", "/items/42", "/items/x",
		"/files/a/b/c.txt", "/a/1/b/xy", "/a/1/b/xyzw", "/v2/things", "/dots/report.json",
		"/dots/.json", "/dots/a.json.json", "/dots/x.jso", "/a.b/x", "/aXb/x", "/", "", "//", "payments/x",
		"/users/u1/orders/7", "/users//orders/7", "/users/u1/orders/7/", "/users/u1/orders", "/users/u\n1/orders/7",
		"/x", "/x-y-z/c", "/xy", "/pay_/x", "/pay_1/x", "/pay_1/x/", "/a//b/", "/a/b/", "/a//b", "/a///",
		"/\ufffd/x", "/\xff/x", "/users/\xff/orders/7",
	}
	for _, c := range templates {
		tpl := c.tpl
		pt, _, err := CompilePath(tpl)
		if err != nil {
			t.Fatalf("CompilePath(%q): %v", tpl, err)
		}
		if got := pt.segs != nil && pt.Regexp == nil; got != c.segments {
			t.Errorf("CompilePath(%q): matched a segment at a time %v, want %v (regexp %v)", tpl, got, c.segments, pt.Regexp)
		}
		route := mux.NewRouter().Path(tpl)
		if err := route.GetError(); err != nil {
			t.Fatalf("mux rejects %q: %v", tpl, err)
		}
		for _, p := range paths {
			agreesWithMux(t, tpl, pt, route, p)
		}
	}
}

func TestLiteralPrefix(t *testing.T) {
	t.Parallel()
	cases := []struct {
		tpl   string
		segs  []string
		exact bool
	}{
		{"/", []string{""}, true},
		{"/payments", []string{"payments"}, true},
		{"/payments/", []string{"payments", ""}, true},
		{"/payments/{id}", []string{"payments"}, false},
		{"/a/b{c}/d", []string{"a"}, false},
		{"/{x:a/b}/c", nil, false},
		{"/a/{x:[0-9]{2}}/b", []string{"a"}, false},
	}
	for _, c := range cases {
		segs, exact := LiteralPrefix(c.tpl)
		if !reflect.DeepEqual(segs, c.segs) || exact != c.exact {
			t.Errorf("LiteralPrefix(%q) = %q, %v; want %q, %v", c.tpl, segs, exact, c.segs, c.exact)
		}
	}
}

// TestMethodTypoRuleSparesRegistered checks the claim in checkMethod's
// comment: no registered method is one edit from a common one, so the typo
// rule refuses none of them.
func TestMethodTypoRuleSparesRegistered(t *testing.T) {
	t.Parallel()
	for _, m := range append(append([]string{}, commonMethods...), registeredMethods...) {
		if msg := checkMethod(m); msg != "" {
			t.Errorf("checkMethod(%q) = %q, want accepted", m, msg)
		}
	}
	for _, m := range []string{"PURGE", "M-SEARCH", "NOTIFY", "SUBSCRIBE", "X"} {
		if msg := checkMethod(m); msg != "" {
			t.Errorf("extension method %q refused: %s", m, msg)
		}
	}
}

// TestLinksInsideTheRoot keeps what os.Root alone would refuse: absolute
// links and links through ".." that land inside the root, as in a
// Kubernetes ConfigMap mount (s.yaml → ..data/s.yaml, ..data → ..v1). A
// scenario file linked from outside the directory is refused.
func TestLinksInsideTheRoot(t *testing.T) {
	t.Parallel()
	dir := write(t, map[string]string{
		"..v1/s.yaml":    "routes: [{ path: /x, respond: { bodyFile: abs.json } }, { path: /y, respond: { bodyFile: up.json } }]",
		"..v1/body.json": `{"ok":true}`,
	})
	links := [][2]string{
		{"..v1", filepath.Join(dir, "..data")},
		{filepath.Join("..data", "s.yaml"), filepath.Join(dir, "s.yaml")},
		{filepath.Join(dir, "..data", "body.json"), filepath.Join(dir, "abs.json")},
		{filepath.Join("..data", "..", "..v1", "body.json"), filepath.Join(dir, "up.json")},
	}
	for _, l := range links {
		if err := os.Symlink(l[0], l[1]); err != nil {
			t.Skip(err)
		}
	}
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range set.Routes() {
		if got := string(r.Responses[0].Body); got != `{"ok":true}` {
			t.Errorf("%s: body %q", r.Path, got)
		}
	}

	outside := write(t, map[string]string{"o.yaml": "routes: [{ path: /o, respond: { status: 200 } }]"})
	if err := os.Symlink(filepath.Join(outside, "o.yaml"), filepath.Join(dir, "o.yaml")); err != nil {
		t.Fatal(err)
	}
	_, err = Load(dir)
	want := filepath.Join(dir, "o.yaml") + ": a symbolic link to a file outside the scenario root " + strconv.Quote(dir)
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	// Named on its own, the same link is the user's choice.
	if _, err := Load(filepath.Join(dir, "o.yaml")); err != nil {
		t.Errorf("the link named as a file: %v", err)
	}
}

// TestHash checks that Hash, which reads without parsing, agrees with the
// Hash of the set Load builds, and changes with every file a load reads.
func TestHash(t *testing.T) {
	t.Parallel()
	dir := write(t, map[string]string{
		"a.yaml":      "routes: [{ path: /a, respond: { bodyFile: body.json } }, { path: /b, respond: { bodyFile: sub/b.txt } }]",
		"sub/b.yaml":  "routes: [{ path: /c, respond: { bodyFile: b.txt } }]",
		"sub/b.txt":   "b",
		"body.json":   "{}",
		"notes.txt":   "not read by a load",
		".hidden.yml": "skipped: [",
	})
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	unchanged := func(t *testing.T, want bool) {
		t.Helper()
		h, err := set.Rehash()
		if err != nil {
			t.Fatal(err)
		}
		if (h == set.Hash) != want {
			t.Errorf("Rehash equal to the set's Hash: %v, want %v", h == set.Hash, want)
		}
		// Unchanged, Hash must be what Load gives; changed, it need only
		// differ (the body files a new load reads may be others).
		if again, err := Load(dir); want && err == nil && again.Hash != h {
			t.Errorf("Hash %s, but Load now gives %s", h, again.Hash)
		}
	}
	unchanged(t, true)
	if h, err := Hash([]string{filepath.Join(dir, "sub", "b.yaml")}, nil); err != nil || h == set.Hash {
		t.Errorf("Hash of one file = %s, %v; want another hash", h, err)
	}

	for _, edit := range []struct{ name, path, content string }{
		{"unread file", "notes.txt", "edited"},
		{"hidden file", ".hidden.yml", "edited"},
	} {
		writeAt(t, filepath.Join(dir, edit.path), edit.content)
		t.Run(edit.name, func(t *testing.T) { unchanged(t, true) })
	}
	for _, edit := range []struct{ name, path, content string }{
		{"body file", "sub/b.txt", "B"},
		{"scenario file", "sub/b.yaml", "routes: [{ path: /c, respond: { status: 204 } }]"},
		{"new scenario file", "sub/c.yml", "routes: []"},
	} {
		t.Run(edit.name, func(t *testing.T) {
			writeAt(t, filepath.Join(dir, edit.path), edit.content)
			unchanged(t, false)
			var err error
			if set, err = Load(dir); err != nil {
				t.Fatal(err)
			}
			unchanged(t, true)
		})
	}

	// Hash parses nothing: a syntax error is only content.
	writeAt(t, filepath.Join(dir, "a.yaml"), "routes: [")
	if _, err := Hash([]string{dir}, set.Deps); err != nil {
		t.Errorf("Hash of a broken file: %v, want a hash", err)
	}
	if err := os.Remove(filepath.Join(dir, "body.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := Hash([]string{dir}, set.Deps); err == nil {
		t.Error("Hash with a body file gone: no error")
	}

	mem, err := LoadBytes("demo.yaml", []byte("routes: []"))
	if err != nil {
		t.Fatal(err)
	}
	if h, err := mem.Rehash(); err != nil || h != mem.Hash {
		t.Errorf("Rehash of an in-memory set = %s, %v; want its own hash %s", h, err, mem.Hash)
	}
}

func writeAt(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDecodeInChunks loads large files in slices of routes and whole, and
// wants the very same set or the very same problems.
func TestDecodeInChunks(t *testing.T) {
	t.Parallel()
	routes := strings.TrimPrefix(benchRoutesYAML(1200), "routes:\n")
	var flow []string // the one-line routes, as the items of a flow list
	for _, line := range strings.Split(routes, "\n") {
		if item, ok := strings.CutPrefix(line, "  - {"); ok {
			flow = append(flow, "  {"+item)
		}
	}
	cases := []struct {
		name    string
		content string
		// chunked says whether the file is decoded in slices; those that
		// are not must still load as they always did.
		chunked bool
	}{
		{"plain", "name: big\ndefaults: { headers: { X-D: d } }\nroutes:\n" + routes + "fallback: { status: 418 }\n", true},
		{"comments between items", "routes: # all of them\n\n" + strings.ReplaceAll(routes, "\n  - { name: item 1", "\n# a comment\n\n  - { name: item 1") + "# trailing\n", true},
		{"indentless list", "routes:\n" + strings.ReplaceAll(strings.ReplaceAll(routes, "\n    ", "\n  "), "\n  - ", "\n- ")[2:] + "fallback: { status: 404 }\n", true},
		{"problems in items", "routes:\n" + strings.Replace(strings.Replace(routes, "status: 202", "status: 2020", 1), "path: /items/1102,", "path: items/1102, tpyo: 1,", 1), true},
		// A syntax error falls back the same way; its case is left out
		// because locating the error in a file this size takes half a
		// minute under -race.
		{"quoted string across an item line", "routes:\n" + strings.Replace(routes, "body: { n: 1102, tags: [a, b] }", "body: \"a\n  - b\"", 1), false},
		{"anchors", "defaults: &d { headers: { X-D: d } }\nroutes:\n" + routes, false},
		{"flow list", "routes: [\n" + strings.Join(flow, ",\n") + "\n]\n", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(write(t, map[string]string{"big.yaml": tc.content}), "big.yaml")
			sl := newLoader()
			sl.loadPath(path)
			inSlices, errSlices := sl.finish()
			sl.close()
			if (sl.sliced == 1) != tc.chunked {
				t.Errorf("decoded in slices: %v, want %v", sl.sliced == 1, tc.chunked)
			}
			l := newLoader()
			l.whole = true
			l.loadPath(path)
			whole, errWhole := l.finish()
			l.close()
			if fmt.Sprint(errSlices) != fmt.Sprint(errWhole) {
				t.Fatalf("in slices: %v\nwhole: %v", errSlices, errWhole)
			}
			if errWhole == nil && !reflect.DeepEqual(inSlices, whole) {
				for i, r := range whole.Routes() {
					if s := inSlices.Routes()[i]; !reflect.DeepEqual(r, s) {
						t.Fatalf("route %d: in slices %+v\nwhole %+v", i, s, r)
					}
				}
				t.Fatalf("the sets differ: files %v fallback %v hash %v deps %v", reflect.DeepEqual(inSlices.Files, whole.Files), reflect.DeepEqual(inSlices.Fallback, whole.Fallback), inSlices.Hash == whole.Hash, reflect.DeepEqual(inSlices.Deps, whole.Deps))
			}
			if !strings.Contains(tc.name, "problems") && errWhole != nil {
				t.Fatalf("want a set: %v", errWhole)
			}
			if tc.chunked && errWhole == nil && len(whole.Routes()) != 1200 {
				t.Errorf("%d routes, want 1200", len(whole.Routes()))
			}
		})
	}
}

func TestUnmatched(t *testing.T) {
	t.Parallel()
	set := loadOne(t, `
routes:
  - { name: a, path: /a, respond: {} }
  - { name: catch-all, path: '/{p:.*}', priority: -1, unmatched: true, respond: { status: 404 } }
  - { name: b, path: /b, unmatched: false, respond: {} }
`)
	for i, want := range []bool{false, true, false} {
		if r := set.Routes()[i]; r.Unmatched != want {
			t.Errorf("%s: Unmatched = %v, want %v", r.Name, r.Unmatched, want)
		}
	}
	_, err := LoadBytes("u.yaml", []byte("routes:\n  - { path: /a, unmatched: sometimes, respond: {} }\n"))
	if err == nil || !strings.Contains(err.Error(), "u.yaml:2:") || !strings.Contains(err.Error(), "unmatched") {
		t.Errorf("unmatched: sometimes: %v", err)
	}
}
