package openapi

import (
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// The library's path parameter check finds the operation's path again in
// the request's (strips the base path, splits, matches each segment's
// expression) before it validates a value: 4 µs of a Stripe retrieve. The
// server has matched the path already and knows each variable's value, so
// the values are first validated against their schemas directly, through
// the same compiled schemas the library uses; only when one fails, or
// cannot be read that way, does the library's check run, for its
// violations.

// pathParam is one path parameter with a primitive schema.
type pathParam struct {
	name   string
	schema *base.SchemaProxy // built when a request first needs it
	check  *schemaCheck
}

// pathParamsOf lists item's path parameters, nil when one of them is not
// written simply (a style other than simple, or a schema-less one).
func pathParamsOf(item *v3.PathItem, op *v3.Operation) []pathParam {
	var out []pathParam
	for _, ps := range [][]*v3.Parameter{item.Parameters, op.Parameters} {
		for _, p := range ps {
			if p == nil || p.In != "path" {
				continue
			}
			if p.Schema == nil || (p.Style != "" && p.Style != "simple") {
				return nil
			}
			out = append(out, pathParam{name: p.Name, schema: p.Schema, check: new(schemaCheck)})
		}
	}
	return out
}

// pathValid says whether every path parameter's value in vars passes its
// schema; false when that cannot be told here (the library then checks).
// The caller holds the validating lock.
func (o *Operation) pathValid(vars map[string]string) bool {
	if vars == nil || len(o.pathParams) == 0 {
		return false
	}
	for i := range o.pathParams {
		p := &o.pathParams[i]
		raw, ok := vars[p.name]
		if !ok {
			return false
		}
		s := p.schema.Schema()
		if s == nil || len(s.Type) != 1 {
			return false
		}
		v, ok := coerceTo(raw, s) // typed as a form value is
		if !ok {
			return false
		}
		if !p.check.valid(o.api, s, v) {
			return false
		}
	}
	return true
}
