package openapi

import (
	"net/url"
	"strings"

	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// Query parameters in deepObject style (Stripe's expand, metadata, and
// lists of objects such as a credit-note preview's lines) arrive as
// bracketed keys, the way a form body does: lines[0][amount]=100,
// lines[0][tax_rates][0]=txr_1, expand[0]=customer. libopenapi-validator
// reads a deepObject as one level of properties, and validates a list's
// raw values one by one against its items, so lines[0][amount]=100 came
// back as "got number, want object" and the request was refused. Such a
// parameter is read here instead, like a form body (unflatten, then
// coerce by its schema), and the value is validated by the library's
// schema validator; the library keeps the other parameters.

// deepParam is a deepObject query parameter that Check reads itself.
type deepParam struct {
	name     string
	schema   *base.SchemaProxy // built when a request first needs it
	required bool
	check    *schemaCheck
}

// splitQuery returns the path item the library validates the operation's
// parameters with (the operation's own, without its deepObject query
// parameters), those parameters, and where the item's other parameters
// are (path, query, header, cookie). Without deepObject parameters, the
// item is item itself.
func splitQuery(item *v3.PathItem, op *v3.Operation, method string) (*v3.PathItem, []deepParam, map[string]bool) {
	var deep []deepParam
	kinds := map[string]bool{}
	keep := func(params []*v3.Parameter) []*v3.Parameter {
		var kept []*v3.Parameter
		for _, p := range params {
			if p != nil && p.In == "query" && p.Style == "deepObject" && p.Schema != nil {
				deep = append(deep, deepParam{name: p.Name, schema: p.Schema, required: p.Required != nil && *p.Required, check: new(schemaCheck)})
				continue
			}
			if p != nil {
				kinds[p.In] = true
			}
			kept = append(kept, p)
		}
		return kept
	}
	pathParams, opParams := keep(item.Parameters), keep(op.Parameters)
	if len(deep) == 0 {
		return item, nil, kinds
	}
	// Shallow copies: only the parameter lists differ; the parameters,
	// schemas and everything else are the document's own.
	o := *op
	o.Parameters = opParams
	it := withOperation(item, method, &o)
	it.Parameters = pathParams
	return it, deep, kinds
}

// withOperation is a shallow copy of item whose operation for method is
// op.
func withOperation(item *v3.PathItem, method string, op *v3.Operation) *v3.PathItem {
	it := *item
	if f := operationField(&it, method); f != nil {
		*f = op
	}
	return &it
}

// operationOf is item's operation for method.
func operationOf(item *v3.PathItem, method string) *v3.Operation {
	if f := operationField(item, method); f != nil {
		return *f
	}
	return nil
}

// operationField is the field of item that holds method's operation.
func operationField(item *v3.PathItem, method string) **v3.Operation {
	switch method {
	case "GET":
		return &item.Get
	case "PUT":
		return &item.Put
	case "POST":
		return &item.Post
	case "DELETE":
		return &item.Delete
	case "OPTIONS":
		return &item.Options
	case "HEAD":
		return &item.Head
	case "PATCH":
		return &item.Patch
	case "TRACE":
		return &item.Trace
	}
	return nil
}

// checkDeep validates the deepObject query parameters of q.
func (o *Operation) checkDeep(q url.Values) []Violation {
	if len(o.deep) == 0 {
		return nil
	}
	var out []Violation
	for i := range o.deep {
		p := &o.deep[i]
		var sub url.Values
		for k, vs := range q {
			if k == p.name || (strings.HasPrefix(k, p.name) && k[len(p.name)] == '[') {
				if sub == nil {
					sub = url.Values{}
				}
				sub[k] = vs
			}
		}
		if sub == nil {
			if p.required {
				out = append(out, Violation{In: "query", Name: p.name, Detail: "Query parameter '" + p.name + "' is missing"})
			}
			continue
		}
		schema := p.schema.Schema()
		v := coerce(unflatten(sub)[p.name], schema)
		if v == nil || schema == nil {
			continue // a[]= with nothing: nothing to check
		}
		ok, errs := o.api.checkSchema(p.check, schema, v)
		if ok {
			continue
		}
		for _, e := range errs {
			if len(e.SchemaValidationErrors) == 0 {
				detail := e.Message
				if e.Reason != "" && e.Reason != e.Message {
					detail += ": " + e.Reason
				}
				out = append(out, Violation{In: "query", Name: p.name, Detail: detail})
				continue
			}
			for _, f := range e.SchemaValidationErrors {
				out = append(out, Violation{In: "query", Name: formKey(append([]string{p.name}, f.InstancePath...)), Detail: f.Reason})
			}
		}
	}
	return out
}
