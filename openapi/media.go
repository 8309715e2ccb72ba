package openapi

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// A response can declare several media types (a photo as image/png or
// text/plain; an error as application/problem+json). The answer is in the
// one the request's Accept header prefers (RFC 9110 12.5.1: the highest
// q-value of the most specific range that covers it; q=0 refuses it),
// else the first JSON one, else the first declared, and its Content-Type
// says which. When Accept refuses every media type a response has, the
// request is refused with a 406 (notAcceptable), as Prism refuses it;
// with validate: report or off, or errors: stripe, it gets the first JSON
// one.

// pickMedia returns the media type a response answers r in, and its
// name; nil when the response declares no content.
func pickMedia(resp *v3.Response, r *http.Request) (string, *v3.MediaType) {
	if resp == nil || resp.Content == nil || resp.Content.Len() == 0 {
		return "", nil
	}
	if r != nil {
		if name, mt, ok := negotiate(resp, r.Header["Accept"]); ok && mt != nil {
			return name, mt
		}
	}
	// FromOldest, unlike First and Next, allocates no pair per step:
	// three allocations of every create, which picks its media type
	// three times.
	var firstName string
	var first *v3.MediaType
	seen := false
	for name, mt := range resp.Content.FromOldest() {
		if isJSONMedia(name) {
			return name, mt
		}
		if !seen {
			firstName, first, seen = name, mt, true
		}
	}
	return firstName, first
}

// mediaRange is one media range of an Accept header.
type mediaRange struct {
	typ, sub string // "*" for a wildcard
	q        float64
}

// negotiate returns the declared media type of resp that the Accept
// headers prefer; ok is false when they refuse every one. With no Accept
// (or none that parses as a media range) any is acceptable: ok with a nil
// media type, for pickMedia's default. Of equally preferred media types
// the one a more specific range names wins, then the one named earlier
// in Accept, then a JSON one, then the first the spec declares.
func negotiate(resp *v3.Response, accept []string) (string, *v3.MediaType, bool) {
	ranges := acceptable(accept)
	if len(ranges) == 0 {
		return "", nil, true
	}
	var (
		best  *v3.MediaType
		name  string
		score [4]float64 // q, specificity, -position in Accept, JSON
	)
	for c := resp.Content.First(); c != nil; c = c.Next() {
		q, specificity, at := quality(ranges, c.Key())
		if q <= 0 {
			continue
		}
		s := [4]float64{q, float64(specificity), -float64(at), 0}
		if isJSONMedia(c.Key()) {
			s[3] = 1
		}
		if best == nil || greater(s, score) {
			best, name, score = c.Value(), c.Key(), s
		}
	}
	if best == nil {
		return "", nil, false
	}
	return name, best, true
}

// greater compares scores field by field.
func greater(a, b [4]float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}

// acceptable parses Accept headers into their media ranges; what does not
// parse as type/subtype is left out. A q-value that does not parse counts
// as 1, as a range without one does.
func acceptable(headers []string) []mediaRange {
	var out []mediaRange
	for _, h := range headers {
		for _, part := range strings.Split(h, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			typ, sub, ok := strings.Cut(mt, "/")
			if !ok || typ == "" || sub == "" || (typ == "*" && sub != "*") {
				continue
			}
			q := 1.0
			if v, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f <= 1 {
					q = f
				}
			}
			out = append(out, mediaRange{typ, sub, q})
		}
	}
	return out
}

// quality is the q-value ranges give a declared media type, that of the
// most specific range covering it (text/csv over text/* over */*: its
// specificity, 2, 1 or 0) and where that range is in ranges; q is 0 when
// none covers it. A declared wildcard (*/*, image/*) is covered by any
// range it overlaps, and application/problem+json by application/json.
func quality(ranges []mediaRange, declared string) (q float64, specificity, at int) {
	d, _, err := mime.ParseMediaType(declared)
	if err != nil {
		return 0, 0, 0
	}
	typ, sub, _ := strings.Cut(d, "/")
	specificity = -1
	for i, r := range ranges {
		s := 0
		switch {
		case r.typ == "*":
		case r.typ != typ && typ != "*":
			continue
		case r.sub == "*":
			s = 1
		case r.sub == "json" && strings.HasSuffix(sub, "+json"):
			// application/json covers a JSON of a structured suffix
			// (RFC 6839): a problem+json error is what a client that
			// accepts JSON reads, and most send nothing else.
			s = 1
		case r.sub != sub && sub != "*":
			continue
		default:
			s = 2
		}
		if s > specificity {
			q, specificity, at = r.q, s, i
		}
	}
	return q, specificity, at
}

// notAcceptable is the violation of a request whose Accept refuses every
// media type of the answer it would get (the success, or the one Prefer:
// code= names); nil when there is none, or the answer has no content
// (a 204 is acceptable to any Accept, as Prism takes it).
func (o *Operation) notAcceptable(r *http.Request, code int) []Violation {
	accept := r.Header["Accept"]
	if len(accept) == 0 {
		return nil
	}
	resp, status := o.response(code)
	if resp == nil || resp.Content == nil || resp.Content.Len() == 0 {
		return nil
	}
	if _, _, ok := negotiate(resp, accept); ok {
		return nil
	}
	var names []string
	for c := resp.Content.First(); c != nil; c = c.Next() {
		names = append(names, c.Key())
	}
	return []Violation{{In: "header", Name: "Accept", notAcceptable: true,
		Detail: fmt.Sprintf("%s accepts none of the media types of the %d answer (%s)", strings.Join(accept, ", "), status, strings.Join(names, ", "))}}
}

// isJSONMedia says whether answers in a media type are JSON:
// application/json, application/problem+json, */*.
func isJSONMedia(name string) bool {
	return strings.Contains(name, "json") || name == "*/*"
}

// contentType is the Content-Type of an answer with status to r: the
// media type pickMedia chose, or, for an answer the spec does not
// declare (the 404 of an id never created), a problem.
func (o *Operation) contentType(status int, r *http.Request) string {
	resp, _ := o.response(status)
	name, _ := pickMedia(resp, r)
	switch {
	case name == "" && status >= 400:
		return "application/problem+json"
	case name == "" || name == "*/*":
		return "application/json"
	case strings.Contains(name, "*"):
		return "application/octet-stream"
	}
	return name
}

// textBody is the answer in a media type that is not JSON: its example
// as written, else a string generated from its schema; binary content
// (format: binary or byte, contentMediaType, contentEncoding) has nothing
// to generate and answers a.binary (empty, or with errors: stripe,
// stripe-mock's placeholder).
func (a *api) textBody(mt *v3.MediaType, example string) []byte {
	v := a.instance(mt, nil, example) // an example, when it has one
	if v == nil && mt.Schema != nil {
		s := mt.Schema.Schema()
		if s == nil || s.Format == "binary" || s.Format == "byte" || s.ContentMediaType != "" || s.ContentEncoding != "" {
			if a.binary == "" {
				return nil
			}
			return []byte(a.binary)
		}
		v = generator{api: a}.value(s, 0)
	}
	switch t := v.(type) {
	case nil:
		return nil
	case string:
		return []byte(t)
	case float64, int, int64, bool:
		return []byte(fmt.Sprint(t))
	}
	b, _ := json.Marshal(v)
	return b
}

// fillProblem sets an RFC 9457 problem's status and title to the
// answer's, where the generated object has those members.
func fillProblem(name string, obj map[string]any, status int) {
	if !strings.Contains(name, "problem+json") {
		return
	}
	if _, ok := obj["status"]; ok {
		obj["status"] = status
	}
	if _, ok := obj["title"]; ok && http.StatusText(status) != "" {
		obj["title"] = http.StatusText(status)
	}
}
