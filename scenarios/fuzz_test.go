package scenarios

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gorilla/mux"
)

// FuzzLoad feeds arbitrary bytes to LoadBytes. It must never panic. A set
// it accepts must be one the matcher can compile (matcher cannot be
// imported here, so its preconditions are checked directly); an error must
// consist of problems that point into the file and say something.
//
//	go test -run '^$' -fuzz '^FuzzLoad$' -fuzztime 3m ./scenarios
func FuzzLoad(f *testing.F) {
	// Only the small files of the corpora seed it: the fuzzer mutates and
	// minimizes what it is given, and every byte of a seed costs parse
	// time in every execution of every input derived from it. The large
	// ones (the examples, the big-number files) are loaded by their own
	// tests.
	for _, pattern := range []string{"testdata/invalid/*.yaml", "testdata/broken/*.yaml"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			if len(data) <= maxFuzzSeed {
				f.Add(data)
			}
		}
	}
	for _, s := range []string{
		"",
		"routes:\n",
		"routes: [{ path: /x, respond: {} }]",
		"routes: [{ path: /x, method: [GET, head], respond: { status: 201, body: { a: [1, 2.50, null, true] } } }]",
		"x-a: &a { status: 202 }\nroutes: [{ path: '/a/{id:[0-9]+}', respond: { <<: *a, template: true, body: '{{ .Request.Vars.id }}' } }]",
		"routes: [{ path: /s, sequence: { per: body.a.0, after: cycle }, responses: [{ delay: { min: 1ms, max: 2ms } }, { fault: connection-reset }] }]",
		"fallback: { status: 418, headers: { X-A: b }, delay: { median: 1ms, sigma: 0.5, max: 1s } }",
		"routes: [{ path: /q, when: { query: { a: { oneOf: [x, y] } }, headers: { X-B: { regex: '^a' } }, body: { json: { k: v }, contains: k } }, respond: {} }]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := LoadBytes("fuzz.yaml", data)
		if err != nil {
			if set != nil {
				t.Errorf("LoadBytes returned a set and an error: %v", err)
			}
			checkProblems(t, data, err)
		} else {
			checkSet(t, set)
		}
		// Loading is deterministic: the same bytes, the same answer. A
		// second load doubles the cost of an execution, so it is made for
		// one input in eight, chosen by content so that a failing input
		// is checked again when it is replayed or minimized.
		if crc32.ChecksumIEEE(data)%8 != 0 {
			return
		}
		set2, err2 := LoadBytes("fuzz.yaml", data)
		if fmt.Sprint(err) != fmt.Sprint(err2) {
			t.Errorf("two loads of the same bytes disagree:\n%v\n---\n%v", err, err2)
		}
		if set != nil && set2 != nil && set.Hash != set2.Hash {
			t.Errorf("two loads of the same bytes hash differently: %s, %s", set.Hash, set2.Hash)
		}
	})
}

// maxFuzzSeed is the size of the largest file FuzzLoad takes as a seed.
const maxFuzzSeed = 256

// checkProblems checks that every problem in err names fuzz.yaml, a line
// and a column inside the file, and a message.
func checkProblems(t *testing.T, data []byte, err error) {
	t.Helper()
	probs := Problems(err)
	if len(probs) == 0 {
		t.Fatalf("error %v holds no problems", err)
	}
	lines := yamlLines(data)
	for _, p := range probs {
		if p.Pos.File != "fuzz.yaml" {
			t.Errorf("problem %q: file %q, want fuzz.yaml", p.Error(), p.Pos.File)
		}
		// yaml.v3 places an empty node at the very end of a file that
		// does not end in a newline on the line after: one past the end is
		// tolerated, anything further points nowhere.
		if p.Pos.Line < 1 || p.Pos.Line > lines+1 {
			t.Errorf("problem %q: line %d is not a line of the %d-line file", p.Error(), p.Pos.Line, lines)
		}
		if p.Pos.Col < 1 {
			t.Errorf("problem %q: column %d, want >= 1", p.Error(), p.Pos.Col)
		}
		if strings.TrimSpace(p.Msg) == "" {
			t.Errorf("problem at %s has an empty message", p.Pos)
		}
	}
}

// yamlLines counts the lines of data as yaml.v3 does: \n, \r\n and a lone
// \r end a line, and so do NEL, LS and PS (YAML 1.1).
func yamlLines(data []byte) int {
	n := 1
	for i := 0; i < len(data); i++ {
		switch rest := data[i:]; {
		case rest[0] == '\n',
			rest[0] == '\r' && !bytes.HasPrefix(rest, []byte("\r\n")),
			bytes.HasPrefix(rest, []byte("\u0085")),
			bytes.HasPrefix(rest, []byte("\u2028")),
			bytes.HasPrefix(rest, []byte("\u2029")):
			n++
		}
	}
	return n
}

// checkSet checks what matcher.Compile and the server rely on.
func checkSet(t *testing.T, set *Set) {
	t.Helper()
	if set.Hash == "" {
		t.Error("a loaded set has no hash")
	}
	names := map[string]bool{}
	for i, r := range set.Routes() {
		if strings.TrimSpace(r.Name) == "" {
			t.Errorf("route %d (%s) has no name", i, r.Pos)
		}
		if names[r.Name] {
			t.Errorf("route name %q is not unique", r.Name)
		}
		names[r.Name] = true
		if !strings.HasPrefix(r.Path, "/") {
			t.Errorf("route %q: path %q does not start with /", r.Name, r.Path)
		}
		tpl, _, err := CompilePath(r.Path)
		if err != nil {
			t.Errorf("route %q: accepted path %q does not compile: %v", r.Name, r.Path, err)
		} else if !reflect.DeepEqual(tpl.Vars, r.Vars) {
			t.Errorf("route %q: Vars %q, CompilePath says %q", r.Name, r.Vars, tpl.Vars)
		} else if tpl.Regexp != nil && tpl.Regexp.NumSubexp() != len(tpl.Vars) {
			t.Errorf("route %q: path %q compiles to %s, %d groups for %d variables (the matcher would index out of range)", r.Name, r.Path, tpl.Regexp, tpl.Regexp.NumSubexp(), len(tpl.Vars))
		}
		if len(r.Responses) == 0 {
			t.Errorf("route %q has no response", r.Name)
		}
		if len(r.Responses) > 1 && r.Sequence == nil {
			t.Errorf("route %q has %d responses and no sequence", r.Name, len(r.Responses))
		}
		for j, resp := range r.Responses {
			if resp == nil {
				t.Errorf("route %q: response %d is nil", r.Name, j)
				continue
			}
			checkResponse(t, fmt.Sprintf("route %q response %d", r.Name, j), resp)
		}
		if s := r.Sequence; s != nil {
			if s.After != RepeatLast && s.After != Cycle {
				t.Errorf("route %q: sequence after %q", r.Name, s.After)
			}
			if s.Per != nil && s.Per.Kind == PathAttr && !contains(r.Vars, s.Per.Name) {
				t.Errorf("route %q: sequence per %s, which the path %q lacks", r.Name, s.Per, r.Path)
			}
		}
	}
	if set.Fallback != nil {
		checkResponse(t, "fallback", set.Fallback)
	}
}

func checkResponse(t *testing.T, what string, r *Response) {
	t.Helper()
	if r.Status < 200 || r.Status > 599 {
		t.Errorf("%s: status %d", what, r.Status)
	}
	if f := r.Fault; f != nil && (!contains(faults, string(f.Kind)) || !contains(faultStages, string(f.After)) || f.Chance < 0 || f.Chance > 1 || f.Kind == SlowBody && (f.Over <= 0 || f.Chunks < 1)) {
		t.Errorf("%s: fault %+v", what, *f)
	}
	if r.Delay.Min < 0 || r.Delay.Max < 0 || r.Delay.Fixed < 0 || r.Delay.Median < 0 || r.Delay.Fixed > maxDelay {
		t.Errorf("%s: delay %+v", what, r.Delay)
	}
}

// FuzzCompilePath feeds arbitrary templates to CompilePath. It must never
// panic; a template it accepts must be accepted by gorilla/mux too, without
// a panic, and both must agree on which paths match and what the variables
// bind.
//
//	go test -run '^$' -fuzz '^FuzzCompilePath$' -fuzztime 3m ./scenarios
func FuzzCompilePath(f *testing.F) {
	for _, tpl := range []string{
		"/", "/payments", "/payments/{id}", "/items/{n:[0-9]+}", "/files/{path:.+}",
		"/a/{x}/b/{y:[a-z]{2,3}}", "/v{version:[0-9]}/things", "/dots/{name}.json", "/a.b/{c}",
		"/{a}{b}", "/x/{y:(?:a|b)}", "/{u:[^/]*}/end", "/é/{ü}", "/{x:(a)}", "/{x", "/x}", "payments", "/{:a}", "/{a}/{a}",
		"/users/{id}/orders/{n}", "/pay_{id}.json/x", "/a//{b}/", "/{a:[^/]+}/{b}", "/\ufffd/{a}", "/{a}-{b}/c",
	} {
		f.Add(tpl)
	}
	f.Fuzz(func(t *testing.T, tpl string) {
		pt, off, err := CompilePath(tpl)
		if err != nil {
			if off < 0 || off > len(tpl) {
				t.Errorf("CompilePath(%q): offset %d outside the template", tpl, off)
			}
			if err.Error() == "" {
				t.Errorf("CompilePath(%q): empty error message", tpl)
			}
			return
		}
		if len(tpl) > maxOracleTemplate {
			return // compiled above; mux's answers are too slow to ask at this size
		}
		var route *mux.Route
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("CompilePath accepts %q but gorilla/mux panics on it: %v", tpl, p)
				}
			}()
			route = mux.NewRouter().Path(tpl)
		}()
		if err := route.GetError(); err != nil {
			t.Fatalf("CompilePath accepts %q but gorilla/mux rejects it: %v", tpl, err)
		}
		if pt.Regexp != nil {
			if n := pt.Regexp.NumSubexp(); n != len(pt.Vars) {
				t.Fatalf("%q: regexp %s has %d groups for %d variables %q (matching would index out of range)", tpl, pt.Regexp, n, len(pt.Vars), pt.Vars)
			}
		} else if len(pt.Vars) != 0 && pt.segs == nil {
			t.Fatalf("%q: variables %q but neither a regexp nor segments", tpl, pt.Vars)
		}
		segs, exact := LiteralPrefix(tpl)
		if lit := "/" + strings.Join(segs, "/"); !strings.HasPrefix(tpl, lit) || exact != (lit == tpl) || exact != pt.Literal() {
			t.Errorf("LiteralPrefix(%q) = %q, %v; Literal %v", tpl, segs, exact, pt.Literal())
		}
		for _, p := range derivedPaths(tpl) {
			agreesWithMux(t, tpl, pt, route, p)
		}
	})
}

// maxOracleTemplate is the longest template FuzzCompilePath checks
// against gorilla/mux. Asking mux about a 2.5 KB template takes half a
// second (its regexp over each derived path), and the fuzzer, once it
// kept a few such inputs, spent minutes on them: CI's 50,000 inputs took
// 267 s and could pass the 5 minute timeout. Real templates are far
// shorter; longer ones are still compiled.
const maxOracleTemplate = 256

// derivedPaths returns request paths made from a template: the template
// itself, each variable replaced by a few typical values, and near misses.
func derivedPaths(tpl string) []string {
	paths := []string{tpl, tpl + "/", "/", strings.TrimSuffix(tpl, "/"), tpl[:len(tpl)-1]}
	for _, v := range []string{"x", "42", "", "a/b", "X.Y", "-", "%2F", "é"} {
		var b strings.Builder
		level := 0
		for i := 0; i < len(tpl); i++ {
			switch c := tpl[i]; {
			case c == '{':
				if level == 0 {
					b.WriteString(v)
				}
				level++
			case c == '}':
				level--
			case level == 0:
				b.WriteByte(c)
			}
		}
		paths = append(paths, b.String())
	}
	return paths
}
