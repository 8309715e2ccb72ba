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
// is left to text, so that the matching path allocates nothing and a miss
// describes only the few routes it shows.
type failure struct {
	kind  string // "header", "query", "body", "form", "state"
	name  string
	cond  *scenarios.Condition
	got   []string
	found bool
	// For a body whose JSON part failed: the condition and the request, to
	// say what differed when the failure is shown.
	body *scenarios.BodyCondition
	in   *Request
	// For form failures: whether the body is a form, and its
	// Content-Type, to say why a field is absent.
	isForm      bool
	contentType string
	// For a state that failed: the key its per: rendered and the value
	// the route wants.
	stateKey, stateWant string
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
		if c.Equals == nil && c.Contains == nil && c.Regex == nil && c.NotRegex == nil && c.OneOf == nil {
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

func (f failure) String() string { return f.text(false) }

// text describes the failure. With redact, the value a condition wants is
// replaced by [redacted] where the header, query parameter or JSON key it
// tests looks like a secret (see SecretName): the report is answered to
// whoever sent the request, who may be guessing a token.
func (f failure) text(redact bool) string {
	if f.kind == "state" {
		return f.stateText()
	}
	if f.body != nil {
		doc, err := f.in.JSON()
		switch {
		case err != nil && len(f.in.Body) == 0:
			return "body is empty, want JSON"
		case err != nil:
			return "body is not JSON (" + err.Error() + ")"
		}
		why, _ := matchJSON(f.body.JSON, doc, "json", redact)
		return "body " + why
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
	if redact && f.kind != "body" && SecretName(f.name) {
		return fmt.Sprintf("%s is %s, want %s", subject, got, redacted)
	}
	return fmt.Sprintf("%s is %s, want %s", subject, got, f.cond.String())
}

// stateText describes a state condition that failed: `state order
// ["ord_1"] is "paid", want "Started"`.
func (f failure) stateText() string {
	subject := "state " + f.name
	if f.stateKey != "" {
		subject += " [" + quoteValues([]string{f.stateKey}) + "]"
	}
	if !f.found {
		return subject + " could not be read, want " + strconv.Quote(f.stateWant)
	}
	return fmt.Sprintf("%s is %s, want %s", subject, quoteValues(f.got), strconv.Quote(f.stateWant))
}

// redacted stands for a wanted value that a report does not show.
const redacted = "[redacted]"

// secretWords are the parts of a header, query parameter or JSON key name
// that mark its value as a secret.
var secretWords = []string{"auth", "cookie", "token", "key", "secret", "passw", "credential", "session", "signature"}

// SecretName reports whether a header, query parameter or JSON key name
// looks like it holds a secret (Authorization, Cookie, Proxy-Authorization,
// X-Api-Key, access_token, password…), whose wanted value a redacted
// near-miss report does not show.
func SecretName(name string) bool {
	lower := strings.ToLower(name)
	if isIdempotencyKey(lower) {
		return false
	}
	for _, w := range secretWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// isIdempotencyKey reports whether a lower-case name is an idempotency key's
// (Idempotency-Key, X-Idempotency-Key, idempotency_key, idempotencyKey):
// the client's retry token, no credential, which the near-miss report of a
// route that wants one value (a demo's magic key) shows, as a recording
// keeps it.
func isIdempotencyKey(lower string) bool {
	var b strings.Builder
	for _, c := range lower {
		if c >= 'a' && c <= 'z' {
			b.WriteRune(c)
		}
	}
	return strings.HasSuffix(b.String(), "idempotencykey")
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

// MaxBodyScan is how much of a body the raw contains and regex tests read:
// the first 64 KiB. A body is read whole (up to --max-body), and a regex over
// megabytes costs seconds of CPU; what a scenario tells apart is near the
// start. equals stays exact whatever the size, as it compares the lengths
// first. JSON conditions parse the whole body, once per request.
const MaxBodyScan = 64 << 10

// Outcomes of a body condition, as the per-request cache keeps them.
const (
	bodyOK = iota
	bodyRawFailed
	bodyJSONFailed
	bodyFormFailed
)

// testBody checks a body condition: the raw tests, then the partial JSON,
// then the form's fields.
func testBody(b *scenarios.BodyCondition, in *Request) int {
	in.evals++
	if c := b.Raw; c != nil {
		scan := in.Body[:min(len(in.Body), MaxBodyScan)]
		ok := (c.Equals == nil || bytes.Equal(in.Body, []byte(*c.Equals))) &&
			(c.Contains == nil || bytes.Contains(scan, []byte(*c.Contains))) &&
			(c.Regex == nil || c.Regex.Match(scan))
		if !ok {
			return bodyRawFailed
		}
	}
	if b.HasJSON {
		doc, err := in.JSON()
		if err != nil {
			return bodyJSONFailed
		}
		if _, ok := matchJSON(b.JSON, doc, "json", false); !ok {
			return bodyJSONFailed
		}
	}
	if len(b.Form) > 0 {
		if _, ok := formFailure(b, in); !ok {
			return bodyFormFailed
		}
	}
	return bodyOK
}

// formFailure tests the form fields of b and describes the first that fails.
func formFailure(b *scenarios.BodyCondition, in *Request) (failure, bool) {
	form := in.FormValues() // nil when the body is not a form: every field is absent
	for i := range b.Form {
		c := &b.Form[i]
		vals := form[c.Name]
		if !testValues(&c.Cond, vals) {
			return failure{kind: "form", name: c.Name, cond: &c.Cond, got: vals, found: len(vals) > 0,
				isForm: form != nil, contentType: in.HTTP.Header.Get("Content-Type")}, false
		}
	}
	return failure{}, true
}

// bodyFailure describes a body condition that failed.
func bodyFailure(b *scenarios.BodyCondition, in *Request, outcome int) failure {
	switch outcome {
	case bodyJSONFailed:
		return failure{kind: "body", body: b, in: in}
	case bodyFormFailed:
		f, _ := formFailure(b, in)
		return f
	}
	// Only the first maxShown bytes are shown: a copy of the whole body
	// would cost as much as the body.
	got := string(in.Body[:min(len(in.Body), maxShown+1)])
	return failure{kind: "body", cond: b.Raw, got: []string{got}, found: len(in.Body) > 0}
}

// ContainsJSON reports whether got (decoded with json.Number) contains
// want as a body's json: condition does (matchJSON).
func ContainsJSON(want, got any) bool {
	_, ok := matchJSON(want, got, "", false)
	return ok
}

// matchJSON reports whether got contains want: every key of a wanted
// object is in got with a matching value, every element of a wanted array
// matches some element of got, scalars are equal (numbers by value).
func matchJSON(want, got any, path string, redact bool) (string, bool) {
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
				return fmt.Sprintf("%s.%s is absent, want %s", path, k, wanted(short(w[k]), path+"."+k, redact)), false
			}
			if why, ok := matchJSON(w[k], gv, path+"."+k, redact); !ok {
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
				if _, ok := matchJSON(we, ge, path, redact); ok {
					found = true
					break
				}
			}
			if !found {
				return fmt.Sprintf("%s has no element matching %s (want[%d])", path, wanted(short(we), path, redact), i), false
			}
		}
		return "", true
	case json.Number:
		g, ok := got.(json.Number)
		if !ok || !sameNumber(w, g) {
			return fmt.Sprintf("%s is %s, want %s", path, short(got), wanted(w.String(), path, redact)), false
		}
		return "", true
	}
	if want != got {
		return fmt.Sprintf("%s is %s, want %s", path, short(got), wanted(short(want), path, redact)), false
	}
	return "", true
}

// wanted is the wanted value of a JSON leaf as a report shows it.
func wanted(v, path string, redact bool) string {
	if redact && SecretName(path[strings.LastIndexByte(path, '.')+1:]) {
		return redacted
	}
	return v
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
