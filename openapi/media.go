package openapi

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// A response can declare several media types (a photo as image/png or
// text/plain; an error as application/problem+json). The answer is in the
// one the request's Accept header names, else the first JSON one, else
// the first declared, and its Content-Type says which.

// pickMedia returns the media type a response answers r in, and its
// name; nil when the response declares no content.
func pickMedia(resp *v3.Response, r *http.Request) (string, *v3.MediaType) {
	if resp == nil || resp.Content == nil || resp.Content.Len() == 0 {
		return "", nil
	}
	if r != nil {
		for _, accepted := range acceptable(r.Header.Values("Accept")) {
			for c := resp.Content.First(); c != nil; c = c.Next() {
				if mediaMatches(accepted, c.Key()) {
					return c.Key(), c.Value()
				}
			}
		}
	}
	for c := resp.Content.First(); c != nil; c = c.Next() {
		if isJSONMedia(c.Key()) {
			return c.Key(), c.Value()
		}
	}
	first := resp.Content.First()
	return first.Key(), first.Value()
}

// acceptable lists the media ranges of Accept headers, most preferred
// first as written (q-values are not weighed), without */*, which any
// answer satisfies.
func acceptable(headers []string) []string {
	var out []string
	for _, h := range headers {
		for _, part := range strings.Split(h, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err == nil && mt != "*/*" {
				out = append(out, mt)
			}
		}
	}
	return out
}

// mediaMatches says whether an accepted range (text/plain, image/*)
// covers a declared media type.
func mediaMatches(accepted, declared string) bool {
	d, _, err := mime.ParseMediaType(declared)
	if err != nil {
		return false
	}
	if accepted == d {
		return true
	}
	if typ, ok := strings.CutSuffix(accepted, "/*"); ok {
		return strings.HasPrefix(d, typ+"/")
	}
	return false
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
