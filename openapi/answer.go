package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/pb33f/jsonschema/v6"
	"github.com/pb33f/libopenapi-validator/config"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
	"github.com/pb33f/libopenapi-validator/responses"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/scenariomock/scenariomock/internal/contentcoding"
)

// CheckAnswer checks an answer the operation did not make itself, a real
// upstream's on a route that proxies to one (Prism's proxy mode): that
// its status is among the operation's responses (its code, its range
// such as 4XX, or default), that the headers that response declares are
// there when required and fit their schemas (answerHeaders), that its
// Content-Type is among that response's media types, and that a JSON
// body fits the media type's schema, read as an answer's (writeOnly
// properties not required, formats asserted). The violations are the answer's
// (Violation.OfAnswer); none when it keeps the contract or the mode is
// off. A response that declares no content takes any body, as does a
// media type without a schema or one that is not JSON (XML, text,
// binary: not checked, as in requests). r is the request answered: the
// answer to a HEAD has no body, and may leave out its Content-Type (RFC
// 9110 §9.3.2), so its content is not checked.
func (o *Operation) CheckAnswer(r *http.Request, status int, h http.Header, body []byte) []Violation {
	if o.api.validate == "off" {
		return nil
	}
	resp, _ := o.response(status)
	if resp == nil {
		declared := "it declares none"
		if codes := declaredCodes(o.op); len(codes) > 0 {
			declared = "it declares " + strings.Join(codes, ", ")
		}
		return []Violation{{In: "status", Detail: fmt.Sprintf("%d is not among the responses of operation %s (%s)", status, o.Name, declared), answer: true}}
	}
	vs := o.answerHeaders(r, resp, status, h)
	if r.Method == http.MethodHead {
		return vs
	}
	// A list whose every item breaks the contract is told in at most
	// maxViolations, as a request is.
	return bound(append(vs, o.answerContent(r, resp, status, h, body)...))
}

// answerHeaders checks an answer's headers against those resp, the
// response its status chose, declares: a required one must be there, and
// each one there must fit its schema (formats asserted: a format: uuid
// X-Request-Id that is no UUID is a violation). libopenapi-validator
// checks them; its violations are named by the header as the spec
// writes it and listed in the spec's order. Content-Type is the
// content's to check (OpenAPI says a declared one is ignored).
func (o *Operation) answerHeaders(r *http.Request, resp *v3.Response, status int, h http.Header) []Violation {
	if resp.Headers == nil || resp.Headers.Len() == 0 {
		return nil
	}
	o.api.validating.Lock()
	ok, errs := responses.ValidateResponseHeaders(r, &http.Response{StatusCode: status, Header: h}, resp.Headers, o.Path, strconv.Itoa(status), config.WithExistingOpts(o.api.answerOpts))
	o.api.validating.Unlock()
	if ok {
		return nil
	}
	byName := map[string][]Violation{}
	for _, e := range errs {
		name := strings.ToLower(e.ParameterName)
		if name == "" { // a missing header, named in its failure only
			if len(e.SchemaValidationErrors) > 0 {
				name = strings.ToLower(e.SchemaValidationErrors[0].FieldName)
			}
			byName[name] = append(byName[name], Violation{In: "header", Detail: fmt.Sprintf("missing; the %d response requires it", status), answer: true})
			continue
		}
		value := strings.Join(h.Values(name), ", ")
		if len(value) > 80 {
			value = value[:80] + "…"
		}
		if len(e.SchemaValidationErrors) == 0 {
			byName[name] = append(byName[name], Violation{In: "header", Detail: fmt.Sprintf("%q: %s", value, e.Reason), answer: true})
			continue
		}
		for _, f := range e.SchemaValidationErrors {
			detail := f.Reason
			if len(f.InstancePath) > 0 {
				detail = "item " + strings.Join(f.InstancePath, "/") + ": " + detail
			}
			if !strings.Contains(detail, "'"+value+"'") { // a format's failure quotes it
				detail = fmt.Sprintf("%q: %s", value, detail)
			}
			byName[name] = append(byName[name], Violation{In: "header", Detail: detail, answer: true})
		}
	}
	var out []Violation
	for d := resp.Headers.First(); d != nil; d = d.Next() {
		for _, v := range byName[strings.ToLower(d.Key())] {
			v.Name = d.Key()
			out = append(out, v)
		}
	}
	return out
}

// answerContent checks an answer's Content-Type and body against resp,
// the response its status chose.
func (o *Operation) answerContent(r *http.Request, resp *v3.Response, status int, h http.Header, body []byte) []Violation {
	if resp.Content == nil || resp.Content.Len() == 0 {
		return nil
	}
	ct := h.Get("Content-Type")
	media, _, err := mime.ParseMediaType(ct)
	if err != nil {
		media = ""
	}
	var mt *v3.MediaType
	var takes []string
	for c := resp.Content.First(); c != nil; c = c.Next() {
		takes = append(takes, c.Key())
		if mt == nil && mediaMatches(c.Key(), media) {
			mt = c.Value()
		}
	}
	if mt == nil {
		if ct == "" {
			ct = "none"
		} else {
			ct = strconv.Quote(ct)
		}
		return []Violation{{In: "header", Name: "Content-Type", Detail: fmt.Sprintf("Content-Type %s is not among the media types of the %d response (%s)", ct, status, strings.Join(takes, ", ")), answer: true}}
	}
	if mt.Schema == nil || !isJSONMedia(media) {
		return nil
	}
	schema := mt.Schema.Schema()
	if schema == nil {
		return nil
	}
	if enc := h.Get("Content-Encoding"); enc != "" {
		// The proxy passes the upstream's encoding through to a client
		// that asked for it (Accept-Encoding: gzip, as most send): the
		// body is checked as it decodes.
		dec, err := contentcoding.Decode(enc, body, maxAnswerDecoded)
		if err != nil {
			return []Violation{{In: "header", Name: "Content-Encoding", Detail: "the body does not decode: " + err.Error(), answer: true}}
		}
		body = dec
	}
	if jsonDeeperThan(body, maxBodyDepth) {
		return []Violation{{In: "body", Detail: fmt.Sprintf("the body nests more than %d levels deep", maxBodyDepth), answer: true}}
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		if err == nil {
			err = fmt.Errorf("more than one JSON value")
		}
		return []Violation{{In: "body", Detail: fmt.Sprintf("the %s body is not JSON: %v", media, err), answer: true}}
	}
	o.api.validating.Lock()
	var ok bool
	var errs []*liberrors.ValidationError
	if v == nil { // JSON's null, which the library's answer check takes for no body
		ok, errs = o.api.schemas.ValidateSchemaObjectWithVersion(schema, v, o.api.version)
	} else {
		// Checked as an answer: a required writeOnly property is
		// required of requests only (OpenAPI's "relevant scope", Prism's
		// output context), and formats are asserted (answerOpts).
		ok, errs = responses.ValidateResponseSchema(&responses.ValidateResponseSchemaInput{
			Request:  r,
			Response: &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(bytes.NewReader(body))},
			Schema:   schema, Version: o.api.version, Options: []config.Option{config.WithExistingOpts(o.api.answerOpts)},
			DecodedValue: v, RawBody: body, ValueDecoded: true,
		})
	}
	o.api.validating.Unlock()
	if ok {
		return nil
	}
	if len(errs) > 0 && len(errs[0].SchemaValidationErrors) > 0 {
		if root := errs[0].SchemaValidationErrors[0].OriginalJsonSchemaError; root != nil {
			kept, excused := excuse(*root.DetailedOutput(), v, schema)
			if excused {
				return nil
			}
			// A oneOf or anyOf that fails is told as its closest
			// alternative, as a request's is (alternatives.go).
			p := pruner{prefer: discriminatorPick(schema, v), schema: schema}
			var out []Violation
			for _, l := range p.walk(kept) {
				detail := l.message
				if l.note != "" {
					detail += " (" + l.note + ")"
				}
				out = append(out, Violation{In: "body", Pointer: pointer(l.instance), Detail: detail, answer: true})
			}
			if len(out) > 0 {
				return out
			}
		}
	}
	var out []Violation
	for _, e := range errs {
		for _, x := range violations(e, nil) {
			x.In, x.answer = "body", true
			out = append(out, x)
		}
	}
	if len(out) == 0 { // invalid, and the library said nothing more
		out = append(out, Violation{In: "body", Detail: "does not match the response's schema", answer: true})
	}
	return out
}

// maxAnswerDecoded bounds an encoded answer's body as it decodes for its
// check, as --max-body (10 MiB by default) bounds it before: past it the
// answer is a violation, not a check that may take gigabytes (a gzip
// bomb of 11 KB is 11 MB of JSON) and ten times that in decoded values.
const maxAnswerDecoded = 10 << 20

// excuse returns u, a node of the validator's detailed output (one node
// per failure, its causes below it, as alternatives.go reads it for
// requests), without the failures that a null the schema allows explains,
// and whether that explains it all (excused). OpenAPI 3.0 documents put
// nullable on an anyOf or oneOf (Stripe's customer of a payment intent is
// "anyOf: [string, customer], nullable: true", and null when there is
// none), which libopenapi-validator turns into JSON Schema only beside a
// type or an allOf; each alternative then fails on the null, and with it
// whatever alternative holds it (Stripe's customer read, anyOf a customer
// and a deleted one). So a failure is excused at a null where the schema
// path says nullable (nullableAt); an anyOf or oneOf with one excused
// alternative holds (a oneOf that failed because several held has no
// causes, and stands); anything else is excused when each of its causes
// is, and keeps those that are not.
func excuse(u jsonschema.OutputUnit, v any, schema *base.Schema) (jsonschema.OutputUnit, bool) {
	at := helpers.ConvertStringLocationToPathSegments(u.InstanceLocation)
	if isNull(v, at) && nullableAt(schema, at) {
		return u, true
	}
	if len(u.Errors) == 0 {
		return u, false
	}
	kw := path.Base(u.KeywordLocation)
	alternatives := kw == "anyOf" || kw == "oneOf"
	kept := make([]jsonschema.OutputUnit, 0, len(u.Errors))
	for _, c := range u.Errors {
		c, excused := excuse(c, v, schema)
		if excused {
			if alternatives {
				return u, true
			}
			continue
		}
		kept = append(kept, c)
	}
	u.Errors = kept
	return u, len(kept) == 0
}

// isNull says whether the value at path within v is JSON's null.
func isNull(v any, path []string) bool {
	for _, seg := range path {
		switch t := v.(type) {
		case map[string]any:
			v = t[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(t) {
				return false
			}
			v = t[i]
		default:
			return false
		}
	}
	return v == nil
}

// nullableAt says whether the schema at path within s (through
// properties, array items and allOf/anyOf/oneOf branches) is marked
// nullable: true. OpenAPI 3.0 documents put it on an anyOf too (Stripe's
// customer of a payment intent is "anyOf: [string, customer], nullable:
// true", and null when there is none), where the JSON Schema validator
// reads it only beside a type; so a null there is forgiven.
func nullableAt(s *base.Schema, path []string) bool {
	for _, seg := range path {
		if s == nil {
			return false
		}
		if _, err := strconv.Atoi(seg); err == nil {
			if it := itemsOf(s, 0); it != nil {
				s = it
				continue
			}
		}
		s = propertyOf(s, seg, 0)
	}
	return s != nil && s.Nullable != nil && *s.Nullable
}

// itemsOf returns the schema of the items of an array s, looking through
// allOf, oneOf and anyOf.
func itemsOf(s *base.Schema, depth int) *base.Schema {
	if s == nil || depth > 4 {
		return nil
	}
	if s.Items != nil && s.Items.IsA() && s.Items.A != nil {
		return s.Items.A.Schema()
	}
	for _, group := range [][]*base.SchemaProxy{s.AllOf, s.OneOf, s.AnyOf} {
		for _, sp := range group {
			if it := itemsOf(sp.Schema(), depth+1); it != nil {
				return it
			}
		}
	}
	return nil
}

// OfAnswer says whether v is about an answer (CheckAnswer) rather than
// the request.
func (v Violation) OfAnswer() bool { return v.answer }

// mediaMatches says whether a declared media type (application/json,
// application/*, */*) takes media, a Content-Type's type without its
// parameters.
func mediaMatches(declared, media string) bool {
	declared = strings.ToLower(strings.TrimSpace(declared))
	if i := strings.IndexByte(declared, ';'); i >= 0 {
		declared = strings.TrimSpace(declared[:i])
	}
	media = strings.ToLower(media)
	switch {
	case declared == "*/*":
		return true
	case media == "":
		return false
	case strings.HasSuffix(declared, "/*"):
		return strings.HasPrefix(media, strings.TrimSuffix(declared, "*"))
	}
	return declared == media
}

// declaredCodes lists the codes of op's responses, and default when it
// has one, for a message.
func declaredCodes(op *v3.Operation) []string {
	var codes []string
	if op.Responses != nil {
		if op.Responses.Codes != nil {
			for c := op.Responses.Codes.First(); c != nil; c = c.Next() {
				codes = append(codes, c.Key())
			}
		}
		if op.Responses.Default != nil {
			codes = append(codes, "default")
		}
	}
	return codes
}

// excuseNulls drops from a request body's errors the failures at a null
// that the body's schema s marks nullable (nullableAt), and an error
// left with none. OpenAPI 3.0 documents put nullable beside a oneOf
// (GitHub's milestone of an issue is "oneOf: [string, integer],
// nullable: true", and null takes the milestone away), which
// libopenapi-validator turns into JSON Schema only beside a type: every
// alternative refused the null, and a valid request was a 400. Answers
// are excused the same way (excuse).
func excuseNulls(errs []*liberrors.ValidationError, v any, s *base.Schema) []*liberrors.ValidationError {
	out := errs[:0:0]
	for _, e := range errs {
		if len(e.SchemaValidationErrors) == 0 {
			out = append(out, e)
			continue
		}
		kept := make([]*liberrors.SchemaValidationFailure, 0, len(e.SchemaValidationErrors))
		for _, f := range e.SchemaValidationErrors {
			if !isNull(v, f.InstancePath) || !nullableAt(s, f.InstancePath) {
				kept = append(kept, f)
			}
		}
		if len(kept) == 0 {
			continue
		}
		e.SchemaValidationErrors = kept
		out = append(out, e)
	}
	return out
}
