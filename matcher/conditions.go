package matcher

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/scenariomock/scenariomock/scenarios"
)

// A failure explains why one check of a route failed, for the near-miss
// report. Checks return the zero failure when they pass; building the text
// is left to explain, so that the matching path allocates nothing.
type failure struct {
	kind  string // "header", "query", "body", "form"
	name  string
	cond  *scenarios.Condition
	got   []string
	found bool
	json  string // for body JSON failures: the path and what differed
	// For form failures: whether the body is a form, and its
	// Content-Type, to say why a field is absent.
	isForm      bool
	contentType string
}

// testValues checks a condition against the values of a header or query
// parameter; a multi-valued field passes when any value does.
func testValues(c *scenarios.Condition, vals []string) bool {
	if len(vals) == 0 {
		return c.Presence == scenarios.Absent
	}
	switch c.Presence {
	case scenarios.Absent:
		return false
	case scenarios.Present:
		if c.Equals == nil && c.Contains == nil && c.Regex == nil && c.OneOf == nil {
			return true
		}
	}
	for _, v := range vals {
		if c.Test(v) {
			return true
		}
	}
	return false
}

func (f failure) String() string {
	if f.json != "" {
		return f.json
	}
	subject := f.kind + " " + f.name
	if f.kind == "body" {
		subject = "body"
	}
	if !f.found {
		if f.kind == "form" && !f.isForm {
			if f.contentType == "" {
				return subject + " is absent (the body is not a form: no Content-Type, want application/x-www-form-urlencoded)"
			}
			return fmt.Sprintf("%s is absent (the body is not a form: Content-Type is %s, want application/x-www-form-urlencoded)", subject, quoteValues([]string{f.contentType}))
		}
		return subject + " is absent"
	}
	got := quoteValues(f.got)
	if f.cond.Presence == scenarios.Absent {
		return fmt.Sprintf("%s is present (%s), want absent", subject, got)
	}
	return fmt.Sprintf("%s is %s, want %s", subject, got, f.cond.String())
}

const maxShown = 60

func quoteValues(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		if len(v) > maxShown {
			v = v[:maxShown] + "…"
		}
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}

// testBody checks a body condition: the raw tests, then the partial JSON,
// then the form's fields.
func testBody(b *scenarios.BodyCondition, in *Request) (failure, bool) {
	if c := b.Raw; c != nil {
		ok := (c.Equals == nil || bytes.Equal(in.Body, []byte(*c.Equals))) &&
			(c.Contains == nil || bytes.Contains(in.Body, []byte(*c.Contains))) &&
			(c.Regex == nil || c.Regex.Match(in.Body))
		if !ok {
			return failure{kind: "body", cond: c, got: []string{string(in.Body)}, found: len(in.Body) > 0}, false
		}
	}
	if b.HasJSON {
		doc, err := in.JSON()
		if err != nil {
			if len(in.Body) == 0 {
				return failure{json: "body is empty, want JSON"}, false
			}
			return failure{json: "body is not JSON (" + err.Error() + ")"}, false
		}
		if why, ok := matchJSON(b.JSON, doc, "json"); !ok {
			return failure{json: "body " + why}, false
		}
	}
	if len(b.Form) > 0 {
		form := in.FormValues() // nil when the body is not a form: every field is absent
		for i := range b.Form {
			c := &b.Form[i]
			vals := form[c.Name]
			if !testValues(&c.Cond, vals) {
				return failure{kind: "form", name: c.Name, cond: &c.Cond, got: vals, found: len(vals) > 0,
					isForm: form != nil, contentType: in.HTTP.Header.Get("Content-Type")}, false
			}
		}
	}
	return failure{}, true
}

// matchJSON reports whether got contains want: every key of a wanted
// object is in got with a matching value, every element of a wanted array
// matches some element of got, scalars are equal (numbers by value).
func matchJSON(want, got any, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s is %s, want an object", path, short(got)), false
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys) // deterministic explanations
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("%s.%s is absent, want %s", path, k, short(w[k])), false
			}
			if why, ok := matchJSON(w[k], gv, path+"."+k); !ok {
				return why, false
			}
		}
		return "", true
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("%s is %s, want an array", path, short(got)), false
		}
		for i, we := range w {
			found := false
			for _, ge := range g {
				if _, ok := matchJSON(we, ge, path); ok {
					found = true
					break
				}
			}
			if !found {
				return fmt.Sprintf("%s has no element matching %s (want[%d])", path, short(we), i), false
			}
		}
		return "", true
	case json.Number:
		g, ok := got.(json.Number)
		if !ok || !sameNumber(w, g) {
			return fmt.Sprintf("%s is %s, want %s", path, short(got), w), false
		}
		return "", true
	}
	if want != got {
		return fmt.Sprintf("%s is %s, want %s", path, short(got), short(want)), false
	}
	return "", true
}

func sameNumber(a, b json.Number) bool {
	if a == b {
		return true
	}
	if ai, err := a.Int64(); err == nil {
		if bi, err := b.Int64(); err == nil {
			return ai == bi
		}
	}
	af, aerr := a.Float64()
	bf, berr := b.Float64()
	return aerr == nil && berr == nil && af == bf
}

func short(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > maxShown {
		return string(b[:maxShown]) + "…"
	}
	return string(b)
}
