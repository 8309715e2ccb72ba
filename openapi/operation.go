package openapi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"

	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/scenariomock/scenariomock/scenarios"
)

// Operation is one operation of a document, compiled: what a generated
// route validates and answers with. It is immutable and safe for
// concurrent use.
type Operation struct {
	api    *api
	Name   string // the route's name: the operationId, or "METHOD path"
	Method string
	Path   string // the spec's path template
	Pos    scenarios.Pos
	item   *v3.PathItem
	op     *v3.Operation
	status int // the first 2xx response's code (200 when none)
	// kind and collection say what the operation does to stored
	// resources (see classify); idVar is the path variable naming the
	// resource.
	kind       opKind
	collection string
	idVar      string
	// keyVar is the path variable that names one of the collection's
	// items in its read (issue_number in GitHub's /repos/{owner}/{repo}/
	// issues/{issue_number}), also on the create and list of that
	// collection (markKeys); shape.key is the field it names.
	keyVar string
	// storeKey and tombKey are the stored collection's name and its
	// tombstones' when no request changes them (nameStores), else "".
	storeKey, tombKey string
	// nested is set on a list of items made elsewhere, nested below a
	// stored resource (markNested).
	nested *nestedList
	// under is set on a create below a stored resource (markUnder): the
	// parent's collection and the path's variable that names it.
	under *parentRef
	// deletedAs, on a read whose answer may be the deleted object a
	// DELETE of the same path answers, is that DELETE: it answers a read
	// of an id that was deleted (markActions).
	deletedAs *Operation
	// shape is what its schema says of lists and ids (shape.go), learnt
	// on first use: building every operation's schemas at load would cost
	// Stripe's 594 operations 6 MB that most runs never need.
	shape     shape
	shapeOnce sync.Once
	// libItem is the path item the library validates parameters with,
	// without the deepObject query parameters in deep (query.go).
	libItem *v3.PathItem
	deep    []deepParam
	// paramKinds says where libItem's parameters are (path, query,
	// header, cookie), so that Check calls only the validators with
	// something to check.
	paramKinds map[string]bool
	form       schemaCheck // the form body's schema
	// bySchemeItem is libItem with the security requirements of an HTTP
	// scheme first, by scheme (security.go).
	bySchemeItem []schemeItem
	// pathParams are the path parameters, checked against the values the
	// server matched (pathparams.go).
	pathParams []pathParam
	// intVars are the path parameters of integer schemas, whose values
	// name stored objects canonically (canonicalVars), learnt on first use.
	intVars     []string
	intVarsOnce sync.Once
	// statusResp is the response of status, which every answer of a
	// create, read or update looks up; its media type and schema are
	// learnt on first use (ordered maps allocate as they are walked,
	// and Itoa did on every lookup: eight allocations a create).
	statusResp   *v3.Response
	statusMedia  *v3.MediaType
	statusSchema *base.Schema
	statusOnce   sync.Once
}

func (a *api) operation(path string, item *v3.PathItem, method string, op *v3.Operation, pos scenarios.Pos) (*Operation, error) {
	o := &Operation{api: a, Method: method, Path: path, Pos: pos, item: item, op: op, status: http.StatusOK}
	if op.Responses != nil && op.Responses.Codes != nil {
		best := 0
		for c := op.Responses.Codes.First(); c != nil; c = c.Next() {
			n, err := strconv.Atoi(c.Key())
			if err == nil && n >= 200 && n < 300 && (best == 0 || n < best) {
				best = n
			}
		}
		if best != 0 {
			o.status = best
		}
	}
	o.statusResp, _ = o.response(o.status)
	o.classify()
	o.libItem, o.deep, o.paramKinds = splitQuery(item, op, method)
	o.bySchemeItem = bySchemeItems(o.libItem, method, op, a.model)
	o.pathParams = pathParamsOf(item, op)
	return o, nil
}

// Violation is one way a request breaks its operation's contract.
type Violation struct {
	// In is where: "path", "query", "header", "cookie", "body" or
	// "security"; Name the parameter or field (a form key as sent,
	// metadata[order]); Pointer a JSON Pointer into the body ("" when not
	// about the body).
	In      string `json:"in"`
	Name    string `json:"name,omitempty"`
	Pointer string `json:"pointer,omitempty"`
	Detail  string `json:"detail"`
	// value is a form field's value as sent, for Stripe's "Invalid
	// integer: 20.00".
	value string
	// unsupported marks a Content-Type the operation does not take: the
	// problem answer is then a 415, as Prism answers it. untyped marks a
	// request without one, which CheckValues words by whether it has a
	// body.
	unsupported, untyped bool
	takes                string // the media types the operation takes, for untyped
	// notAcceptable marks an Accept that refuses every media type of the
	// answer: the problem answer is then a 406, as Prism answers it,
	// unless something else is wrong with the request too (Prism
	// validates before it negotiates).
	notAcceptable bool
	// message is Stripe's own words for it, when it has them ("This
	// property cannot be expanded (foo).").
	message string
	// answer marks a violation of the answer (CheckAnswer), not the
	// request's: In is then "status", "header" or "body".
	answer bool
}

// Mode is what a failed check does: "enforce" refuses the request,
// "report" serves it and records the violations, "off" skips checks.
func (o *Operation) Mode() string { return o.api.validate }

// Errors is the shape of the operation's refusals: "stripe" (Stripe's
// error object) or "problem" (RFC 9457). It is safe for concurrent use.
func (o *Operation) Errors() string { return o.api.errors }

// Check validates a request (whose body the server has read into body)
// against the operation: parameters, the body, security. It returns the
// violations, none when the request is valid or the mode is off.
func (o *Operation) Check(r *http.Request, body []byte) []Violation {
	vs, _ := o.CheckValues(r, body)
	return vs
}

// CheckValues is Check, and also returns the request's form body as the
// check read it (nested and typed by its schema), nil when it read none:
// given to Respond in Exchange.Values, the body is not parsed twice.
func (o *Operation) CheckValues(r *http.Request, body []byte) (vs []Violation, values map[string]any) {
	return o.CheckMatched(r, body, nil)
}

// CheckMatched is CheckValues for a request whose path the server has
// matched to the operation: vars are its path variables, which are then
// checked against their schemas without finding the path again.
func (o *Operation) CheckMatched(r *http.Request, body []byte, vars map[string]string) (vs []Violation, values map[string]any) {
	if o.api.validate == "off" {
		return nil, nil
	}
	// The parameter validators read the URL and the headers, never the
	// body: they get the request as it is. Each runs only when the
	// operation has parameters of its kind (paramKinds); security always.
	var errs []*liberrors.ValidationError
	o.api.validating.Lock()
	defer o.api.validating.Unlock()
	p := o.api.params
	for _, c := range [...]struct {
		in    string
		check func(*http.Request, *v3.PathItem, string) (bool, []*liberrors.ValidationError)
	}{
		{"path", p.ValidatePathParamsWithPathItem},
		{"query", p.ValidateQueryParamsWithPathItem},
		{"header", p.ValidateHeaderParamsWithPathItem},
		{"cookie", p.ValidateCookieParamsWithPathItem},
		{"", p.ValidateSecurityWithPathItem},
	} {
		if c.in != "" && !o.paramKinds[c.in] {
			continue
		}
		if c.in == "path" && o.pathValid(vars) {
			continue
		}
		item := o.libItem
		if c.in == "" {
			item = o.securityItem(r)
		}
		if ok, e := c.check(r, item, o.Path); !ok {
			errs = append(errs, e...)
		}
	}
	// prefer is the alternative of the body's oneOf its discriminator
	// names, for a refusal (alternatives.go); worked out only for one.
	var prefer func(keyword, instance string) (int, string)
	var deep []Violation
	if len(o.deep) > 0 {
		deep = o.checkDeep(r.URL.Query())
	}
	if ms := o.multipartSchema(r); ms != nil && len(body) > 0 {
		req := r.Clone(r.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		e, err := o.checkMultipart(req, body, ms)
		if err != nil {
			out := []Violation{{In: "body", Detail: "the multipart body does not parse: " + err.Error()}}
			return append(append(out, deep...), violationsOf(errs, nil)...), nil
		}
		errs = append(errs, e...)
	} else if fs := cmp.Or(o.formSchema(r), o.untypedFormSchema(r)); fs != nil {
		// A form body is typed by its schema first (coerce.go), then
		// validated as the JSON it stands for.
		v, passed, err := o.readForm(body, fs)
		if err != nil {
			out := []Violation{{In: "body", Detail: "the form body does not parse: " + err.Error()}}
			return append(append(out, deep...), violationsOf(errs, nil)...), nil
		}
		values = v
		if !passed {
			if ok, e := o.api.checkSchema(&o.form, fs, v); !ok {
				for _, ve := range e {
					ve.ValidationType = helpers.RequestBodyValidation
				}
				errs = append(errs, e...)
				prefer = discriminatorPick(fs, v)
			}
		}
	} else if o.op.RequestBody != nil {
		if isJSONMedia(header(r, "Content-Type")) && jsonDeeperThan(body, maxBodyDepth) {
			out := []Violation{{In: "body", Detail: fmt.Sprintf("the body nests more than %d levels deep", maxBodyDepth)}}
			return append(append(out, deep...), violationsOf(errs, nil)...), nil
		}
		if isJSONMedia(header(r, "Content-Type")) && len(bytes.TrimSpace(body)) == 0 {
			body = nil // white space alone is no JSON value: an empty body, not null
		}
		req := r.Clone(r.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		if ok, e := o.api.bodies.ValidateRequestBodyWithPathItem(req, o.item, o.Path); !ok {
			var v any
			if s := o.bodySchema(r); s != nil && isJSONMedia(header(r, "Content-Type")) && json.Unmarshal(body, &v) == nil {
				prefer = discriminatorPick(s, v)
				e = excuseNulls(e, v, s)
			}
			errs = append(errs, e...)
		}
	}
	out := append(append(append(deep, violationsOf(errs, prefer)...), o.preferenceViolation(r)...), o.expandViolations(r, values)...)
	// Stripe's API, and stripe-mock, answer JSON whatever Accept says:
	// with errors: stripe a client's Accept is no reason to refuse.
	if len(r.Header["Accept"]) > 0 && o.api.errors != "stripe" {
		code := 0
		if header(r, "Prefer") != "" || strings.Contains(r.URL.RawQuery, "__") {
			code, _, _ = preferred(r, r.URL.Query())
		}
		out = append(out, o.notAcceptable(r, code)...)
	}
	slices.SortStableFunc(out, func(a, b Violation) int { return strings.Compare(a.In, b.In) })
	out = bound(out)
	for i := range out {
		if v := &out[i]; v.untyped && len(body) > 0 {
			v.In, v.Name, v.unsupported = "header", "Content-Type", true
			v.Detail = "the request's body has no Content-Type; the operation takes " + v.takes
		}
	}
	if len(out) > 0 {
		// The value as sent, for Stripe's "Invalid integer: abc": a form
		// field's, or a query parameter's (created[gt]=abc).
		var form url.Values
		if strings.HasPrefix(header(r, "Content-Type"), "application/x-www-form-urlencoded") || header(r, "Content-Type") == "" {
			form, _ = url.ParseQuery(string(body))
		}
		q := r.URL.Query()
		for i := range out {
			switch v := &out[i]; {
			case v.Name == "":
			case v.In == "body" && form != nil:
				v.value = form.Get(v.Name)
			case v.In == "query":
				v.value = q.Get(v.Name)
			}
		}
	}
	return out, values
}

// readForm is formValues(body, fs), and whether the values pass the
// form's schema as compiled (false when it is not compiled yet). Its
// caller holds the validating lock, which readForm lets go of meanwhile:
// reading and typing a form only read the model, as Respond does, and a
// compiled schema is only read, so that this part (half of a Stripe
// create's check) does not keep the document's other requests waiting.
// Compiling the schema (for the first body) and saying why a body fails
// are done under the lock, by checkSchema.
func (o *Operation) readForm(body []byte, fs *base.Schema) (values map[string]any, passed bool, err error) {
	o.api.validating.Unlock()
	defer o.api.validating.Lock()
	values, err = formValues(body, fs)
	return values, err == nil && o.form.compiledValid(values), err
}

// maxBodyDepth bounds how deep a JSON body may nest before it is
// validated, and maxViolations how many violations one refusal lists. A
// schema that refers to itself (a tree node's child) makes every level of
// a deep body a violation whose path is as long as its depth: a 38 KB
// body nested 2,000 deep took 18 s and answered 40 MB. No API's requests
// nest near 128 levels (Stripe's, 5); a form key's brackets
// (a[b][c]) are held to it too (parseForm).
const (
	maxBodyDepth  = 128
	maxViolations = 100
)

// bound keeps at most maxViolations of vs, the last of them saying how
// many more there were.
func bound(vs []Violation) []Violation {
	if len(vs) <= maxViolations {
		return vs
	}
	last := vs[maxViolations-1]
	more := len(vs) - maxViolations + 1
	return append(vs[:maxViolations-1], Violation{In: last.In, Detail: fmt.Sprintf("and %d more violations", more), answer: last.answer})
}

// jsonDeeperThan says whether the JSON text b has arrays and objects
// nested more than limit deep. It reads brackets outside strings only: b
// need not be valid, which the validation says.
func jsonDeeperThan(b []byte, limit int) bool {
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > limit {
				return true
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return false
}

// violationsOf turns the library's errors into violations.
func violationsOf(errs []*liberrors.ValidationError, prefer func(keyword, instance string) (int, string)) []Violation {
	var out []Violation
	for _, e := range errs {
		// libopenapi-validator refuses a decoded form value holding a
		// reserved character ("jenny@example.com") when the encoding does
		// not allowReserved; allowReserved is about how a value is
		// written, and a form body percent-encodes them, so the value
		// is fine.
		if e.ValidationType == helpers.URLEncodedValidation && e.ValidationSubType == helpers.ReservedValues {
			continue
		}
		p := prefer
		if e.ValidationType != helpers.RequestBodyValidation {
			p = nil // the body's discriminator says nothing of a parameter
		}
		out = append(out, violations(e, p)...)
	}
	return out
}

// violations turns one library error into one violation per schema
// failure (or one for the error).
func violations(e *liberrors.ValidationError, prefer func(keyword, instance string) (int, string)) []Violation {
	in := e.ValidationType
	switch in {
	case helpers.ParameterValidation:
		in = strings.TrimPrefix(e.ValidationSubType, "")
	case helpers.RequestBodyValidation, helpers.URLEncodedValidation:
		in = "body"
	}
	switch {
	case strings.Contains(in, "query"):
		in = "query"
	case strings.Contains(in, "path"):
		in = "path"
	case strings.Contains(in, "header"):
		in = "header"
	case strings.Contains(in, "cookie"):
		in = "cookie"
	case strings.Contains(in, "security"):
		in = "security"
	}
	detail := e.Message
	if e.Reason != "" && e.Reason != e.Message {
		detail += ": " + e.Reason
	}
	if v, ok := bodyPresence(e); ok {
		return []Violation{v}
	}
	if len(e.SchemaValidationErrors) == 0 {
		return []Violation{{In: in, Name: e.ParameterName, Detail: detail}}
	}
	var out []Violation
	failures, notes := closest(e.SchemaValidationErrors, prefer)
	for _, f := range failures {
		v := Violation{In: in, Name: e.ParameterName, Detail: f.Reason}
		if note := notes[f]; note != "" {
			v.Detail += " (" + note + ")"
		}
		if in == "body" {
			v.Pointer = pointer(f.InstancePath)
			if v.Name == "" && len(f.InstancePath) > 0 {
				v.Name = formKey(f.InstancePath)
			}
		}
		out = append(out, v)
	}
	return out
}

// bodyPresence says in a plain sentence the library's errors about the
// body's presence and media type, which name neither what the operation
// takes nor, for an empty body, what is wrong (a POST without a body was
// told its "content type" of nothing "does not exist ... it's an unknown
// type").
func bodyPresence(e *liberrors.ValidationError) (Violation, bool) {
	op, _ := e.Context.(*v3.Operation)
	switch {
	case e.ValidationSubType == helpers.RequestBodyContentType && op != nil && op.RequestBody != nil:
		takes := mediaTypes(op)
		ct := ""
		if m := unknownContentType.FindStringSubmatch(e.Message); m != nil {
			ct = m[1]
		}
		if ct == "" {
			return Violation{In: "body", untyped: true, takes: takes, Detail: "the operation requires a body (" + takes + "); the request has none"}, true
		}
		return Violation{In: "header", Name: "Content-Type", unsupported: true,
			Detail: fmt.Sprintf("%s is not a media type the operation takes (%s)", ct, takes)}, true
	case e.ValidationType == helpers.RequestBodyValidation && strings.Contains(e.Message, " request body is empty for "):
		return Violation{In: "body", Detail: "the operation requires a body; the request's is empty"}, true
	}
	return Violation{}, false
}

var unknownContentType = regexp.MustCompile(`content type '([^']*)' does not exist`)

// mediaTypes lists the media types an operation's body may be in.
func mediaTypes(op *v3.Operation) string {
	var names []string
	for c := op.RequestBody.Content.First(); c != nil; c = c.Next() {
		names = append(names, c.Key())
	}
	return strings.Join(names, ", ")
}

// pointer writes an instance path as a JSON Pointer (RFC 6901) into the
// body, with "#" for the document as RFC 9457's examples do.
func pointer(path []string) string {
	var b strings.Builder
	b.WriteString("#")
	for _, p := range path {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// formKey writes an instance path as the form key that sets it:
// shipping[address][line1].
func formKey(path []string) string {
	if len(path) == 0 {
		return ""
	}
	s := path[0]
	for _, p := range path[1:] {
		s += "[" + p + "]"
	}
	return s
}

// Refusal is the answer to a refused request: its status, content type
// and body, in the shape the source's errors: says.
func Refusal(o *Operation, vs []Violation) (int, string, []byte) {
	if o.api.errors == "stripe" {
		status, b := stripeError(vs)
		return status, "application/json", b
	}
	status, b := Problem(o, vs)
	return status, "application/problem+json", b
}

var (
	missingProperty    = regexp.MustCompile(`missing propert(?:y|ies) '([^']+)'`)
	unknownProperties  = regexp.MustCompile(`(?i)additional propert(?:y|ies) ('[^']+'(?:, *'[^']+')*) not allowed`)
	quotedPropertyName = regexp.MustCompile(`'([^']+)'`)
)

// stripeError is Stripe's error object for the first violation, as
// Stripe reports one problem at a time.
func stripeError(vs []Violation) (int, []byte) {
	v := vs[0]
	e := map[string]any{"type": "invalid_request_error"}
	status := http.StatusBadRequest
	switch {
	case v.message != "":
		e["message"], e["param"] = v.message, v.Name
	case v.In == "security":
		status = http.StatusUnauthorized
		e["message"] = "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY')."
	case missingProperty.MatchString(v.Detail):
		param := missingProperty.FindStringSubmatch(v.Detail)[1]
		if v.Name != "" {
			param = v.Name + "[" + param + "]"
		}
		e["code"], e["param"] = "parameter_missing", param
		e["message"] = "Missing required param: " + param + "."
	case unknownProperties.MatchString(v.Detail):
		// Stripe's words for a parameter it does not take (a typo):
		// "Received unknown parameter: foo", the first named as param.
		var params []string
		for _, m := range quotedPropertyName.FindAllStringSubmatch(unknownProperties.FindStringSubmatch(v.Detail)[1], -1) {
			p := m[1]
			if v.Name != "" {
				p = v.Name + "[" + p + "]"
			}
			params = append(params, p)
		}
		e["code"], e["param"] = "parameter_unknown", params[0]
		e["message"] = "Received unknown parameter: " + params[0]
		if len(params) > 1 {
			e["message"] = "Received unknown parameters: " + strings.Join(params, ", ")
		}
	case strings.HasSuffix(v.Detail, "want integer") || strings.Contains(v.Detail, "is not a valid integer"):
		e["code"], e["param"] = "parameter_invalid_integer", v.Name
		e["message"] = "Invalid integer: " + v.value
	case v.Name == "":
		e["code"] = "parameter_invalid"
		e["message"] = strings.ToUpper(v.Detail[:1]) + v.Detail[1:] + "."
	default:
		e["code"], e["param"] = "parameter_invalid", v.Name
		e["message"] = "Invalid " + v.Name + ": " + v.Detail
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return status, b
}

// Problem is the RFC 9457 answer for a refused request; each violation
// is in errors, as RFC 9457's own example puts them.
func Problem(o *Operation, vs []Violation) (int, []byte) {
	status := http.StatusBadRequest
	if !slices.ContainsFunc(vs, func(v Violation) bool { return !v.notAcceptable }) {
		status = http.StatusNotAcceptable
	}
	for _, v := range vs {
		switch {
		case v.In == "security":
			status = http.StatusUnauthorized
		case v.unsupported && status == http.StatusBadRequest:
			status = http.StatusUnsupportedMediaType
		}
	}
	details := make([]string, len(vs))
	for i, v := range vs {
		where := v.In
		if v.Name != "" {
			where += " " + v.Name
		}
		details[i] = where + ": " + v.Detail
	}
	b, _ := json.Marshal(struct {
		Type      string      `json:"type"`
		Title     string      `json:"title"`
		Status    int         `json:"status"`
		Detail    string      `json:"detail"`
		Operation string      `json:"operation"`
		Errors    []Violation `json:"errors"`
	}{"about:blank", http.StatusText(status), status,
		fmt.Sprintf("The request does not match %s %s (%s): %s.", o.Method, o.Path, o.Pos, strings.Join(details, "; ")),
		o.op.OperationId, vs})
	return status, b
}

// Respond is in respond.go.
var _ = context.Background

// schemaOf returns the schema of a response's JSON media type, and the
// media type.
// mediaOf is the package's mediaOf, remembered for the operation's own
// response (statusResp).
func (o *Operation) mediaOf(resp *v3.Response) (*v3.MediaType, *base.Schema) {
	if resp == nil || resp != o.statusResp {
		return mediaOf(resp)
	}
	o.statusOnce.Do(func() { o.statusMedia, o.statusSchema = mediaOf(resp) })
	return o.statusMedia, o.statusSchema
}

func mediaOf(resp *v3.Response) (*v3.MediaType, *base.Schema) {
	if resp == nil || resp.Content == nil {
		return nil, nil
	}
	for c := resp.Content.First(); c != nil; c = c.Next() {
		if strings.Contains(c.Key(), "json") || c.Key() == "*/*" {
			mt := c.Value()
			if mt.Schema != nil {
				return mt, mt.Schema.Schema()
			}
			return mt, nil
		}
	}
	return nil, nil
}

// ViolationsHeader is the sl-violations header Prism sends with an answer
// to a request that breaks its operation (a JSON array of {location,
// severity, code, message}, location as ["request", "body", "pet",
// "name"]), so that tooling written against Prism reads ours. code is
// set where Prism's is a status (401 for security, 415 for a Content-Type
// the operation does not take, 406 for an Accept it cannot meet). The
// value is ASCII, as a header must be: other characters are JSON's
// \u escapes.
func ViolationsHeader(vs []Violation) string {
	type diagnostic struct {
		Location []string `json:"location"`
		Severity string   `json:"severity"`
		Code     int      `json:"code,omitempty"`
		Message  string   `json:"message"`
	}
	out := make([]diagnostic, len(vs))
	for i, v := range vs {
		d := diagnostic{Location: []string{"request", v.In}, Severity: "Error", Message: v.Detail}
		if v.answer {
			d.Location[0] = "response"
		}
		switch {
		case v.In == "security":
			d.Location, d.Code = []string{"request"}, http.StatusUnauthorized
		case v.unsupported:
			d.Code = http.StatusUnsupportedMediaType
		case v.notAcceptable:
			d.Code = http.StatusNotAcceptable
		}
		switch {
		case v.Pointer != "":
			for _, seg := range strings.Split(strings.TrimPrefix(strings.TrimPrefix(v.Pointer, "#"), "/"), "/") {
				if seg != "" {
					d.Location = append(d.Location, strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~"))
				}
			}
		case v.Name != "" && v.In != "security":
			d.Location = append(d.Location, v.Name)
		}
		out[i] = d
	}
	b, _ := json.Marshal(out)
	var s strings.Builder
	for _, r := range string(b) {
		if r < 0x20 || r > 0x7e {
			if r > 0xffff {
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(&s, `\u%04x\u%04x`, r1, r2)
				continue
			}
			fmt.Fprintf(&s, `\u%04x`, r)
			continue
		}
		s.WriteRune(r)
	}
	return s.String()
}
