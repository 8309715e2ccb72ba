package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// CheckAnswer checks an answer the operation did not make itself, a real
// upstream's on a route that proxies to one (Prism's proxy mode): that
// its status is among the operation's responses (its code, its range
// such as 4XX, or default), that its Content-Type is among that
// response's media types, and that a JSON body fits the media type's
// schema. The violations are the answer's (Violation.OfAnswer); none when
// it keeps the contract or the mode is off. A response that declares no
// content takes any body, as does a media type without a schema or one
// that is not JSON (XML, text, binary: not checked, as in requests).
func (o *Operation) CheckAnswer(status int, h http.Header, body []byte) []Violation {
	if o.api.validate == "off" {
		return nil
	}
	resp, _ := o.response(status)
	if resp == nil {
		return []Violation{{In: "status", Detail: fmt.Sprintf("%d is not among the responses of operation %s (%s)", status, o.Name, declaredCodes(o.op)), answer: true}}
	}
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
	ok, errs := o.api.schemas.ValidateSchemaObjectWithVersion(schema, v, o.api.version)
	o.api.validating.Unlock()
	if ok {
		return nil
	}
	var out []Violation
	for _, e := range errs {
		if len(e.SchemaValidationErrors) == 0 {
			detail := e.Message
			if e.Reason != "" && e.Reason != e.Message {
				detail += ": " + e.Reason
			}
			out = append(out, Violation{In: "body", Detail: detail, answer: true})
			continue
		}
		for _, f := range e.SchemaValidationErrors {
			out = append(out, Violation{In: "body", Pointer: pointer(f.InstancePath), Detail: f.Reason, answer: true})
		}
	}
	if len(out) == 0 { // invalid, and the library said nothing more
		out = append(out, Violation{In: "body", Detail: "does not match the response's schema", answer: true})
	}
	return out
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

// declaredCodes lists the codes of op's responses, default included, for
// a message.
func declaredCodes(op *v3.Operation) string {
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
	if len(codes) == 0 {
		return "it declares none"
	}
	return "it declares " + strings.Join(codes, ", ")
}
