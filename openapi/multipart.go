package openapi

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"

	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/requests"
	"github.com/pb33f/libopenapi/datamodel/high/base"
)

// A multipart/form-data body (an upload with its fields: a menu item's
// name, price and photo) is read as a form's: each field's value typed by
// the schema (coerce.go), then validated by libopenapi-validator as a
// request body, so that readOnly properties the schema requires (an id
// the server makes) are not asked of the request. Without this the
// validator had no decoder for the media type and let any multipart body
// through, and no field was reflected into the answer.

// multipartSchema returns the schema of the operation's multipart body,
// or nil when it has none or the request is not multipart.
func (o *Operation) multipartSchema(r *http.Request) *base.Schema {
	if o.op.RequestBody == nil || o.op.RequestBody.Content == nil {
		return nil
	}
	ct := header(r, "Content-Type")
	// Parsed only when it may be multipart: every form create parsed
	// its Content-Type here (an allocation and a map).
	if t := strings.TrimSpace(ct); len(t) < len("multipart/") || !strings.EqualFold(t[:len("multipart/")], "multipart/") {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "multipart/form-data" {
		return nil
	}
	m, ok := o.op.RequestBody.Content.Get(mt)
	if !ok || m == nil || m.Schema == nil {
		return nil
	}
	return m.Schema.Schema()
}

// multipartValues reads a multipart body's fields (a file's content as
// its value) into nested values typed by schema.
func multipartValues(r *http.Request, body []byte, schema *base.Schema) (map[string]any, error) {
	_, params, err := mime.ParseMediaType(header(r, "Content-Type"))
	if err != nil {
		return nil, err
	}
	if params["boundary"] == "" {
		return nil, errors.New("the Content-Type has no boundary")
	}
	vals := url.Values{}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(part) // bounded: the server read the body under its limit
		if err != nil {
			return nil, err
		}
		vals.Add(part.FormName(), string(b))
	}
	v := unflatten(vals)
	if c, ok := coerce(v, schema).(map[string]any); ok {
		return c, nil
	}
	return v, nil
}

// checkMultipart validates a multipart body against schema.
func (o *Operation) checkMultipart(req *http.Request, body []byte, schema *base.Schema) ([]*liberrors.ValidationError, error) {
	v, err := multipartValues(req, body, schema)
	if err != nil {
		return nil, err
	}
	required := o.op.RequestBody.Required != nil && *o.op.RequestBody.Required
	_, errs := requests.ValidateRequestSchema(&requests.ValidateRequestSchemaInput{
		Request: req, Schema: schema, Version: o.api.version, Options: o.api.vopts,
		BodyRequired: required, DecodedValue: v, RawBody: body, ValueDecoded: true,
	})
	return errs, nil
}
