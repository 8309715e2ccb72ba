package openapi

import (
	"math"
	"slices"
	"strconv"
	"strings"

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

// An integer path parameter has many spellings of one value: 7, 007, +7,
// 7.0 all pass `type: integer`, and Prism answers each. A stored object is
// kept under its id's canonical spelling (7), so that /orders/007 reads,
// updates and deletes order 7 rather than answering a 404 for an order
// that is there.

// canonicalVars returns vars with the values of integer path parameters
// written canonically; vars itself when none changes.
func (o *Operation) canonicalVars(vars map[string]string) map[string]string {
	o.intVarsOnce.Do(func() {
		for _, p := range o.pathParams {
			if s := p.schema.Schema(); s != nil && slices.Contains(s.Type, "integer") {
				o.intVars = append(o.intVars, p.name)
			}
		}
	})
	out, copied := vars, false
	for _, name := range o.intVars {
		raw, ok := vars[name]
		if !ok {
			continue
		}
		c, ok := canonicalInteger(raw)
		if !ok || c == raw {
			continue
		}
		if !copied {
			out, copied = make(map[string]string, len(vars)), true
			for k, v := range vars {
				out[k] = v
			}
		}
		out[name] = c
	}
	return out
}

// canonicalInteger writes s, an integer as a path may spell it (007, +7,
// 7.0, 7e0), as strconv writes it; false when s is not one.
func canonicalInteger(s string) (string, bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return strconv.FormatInt(n, 10), true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 || strings.ContainsAny(s, "xX") {
		return "", false
	}
	return strconv.FormatInt(int64(f), 10), true
}
