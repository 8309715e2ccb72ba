package openapi

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
)

// A form body carries only strings: amount=2000, card[exp_month]=12,
// tiers[0][up_to]=inf. Before the body is validated, and before its values
// are reflected into an answer, each value is given the type its schema
// says, walking the schema as libopenapi models it (properties,
// additionalProperties, items, and the branches of anyOf, oneOf and
// allOf). The JSON Schema validation itself stays the library's
// (libopenapi-validator's schema validator); this only decides what a
// string means.
//
// libopenapi-validator's own form conversion does this for properties, but
// not inside a map (currency_options[eur][unit_amount], an
// additionalProperties schema), not through the branches of an anyOf
// (card is anyOf an object and a token string; returned_at anyOf an
// integer and ""), and not for a list sent with indexes
// (tipping[usd][fixed_amounts][0]=100): those stayed strings, or maps, and
// failed as "got string, want integer".

// schemaCheck validates values against one schema, compiled by the
// library when first needed and kept, so that a valid value costs the
// JSON Schema validation alone. libopenapi-validator's own entry point
// (ValidateSchemaObjectWithVersion) hashes the whole schema to find its
// compiled form on every call: for Stripe's customer create, a third of
// the body's validation. Only a value that fails goes to it, for the
// violations it reports. It is safe for concurrent use.
type schemaCheck struct {
	once     sync.Once
	compiled *schema_validation.CompiledValidationSchema
	ready    atomic.Bool // compiled is set (valid has run once)
}

// valid says whether v passes s. False also when s did not compile: the
// library then says why. The caller holds the validating lock: the
// first call compiles s.
func (c *schemaCheck) valid(a *api, s *base.Schema, v any) bool {
	c.once.Do(func() {
		c.compiled, _ = schema_validation.CompileSchemaForValidation(s, schema_validation.SchemaValidationPurposeGeneric, a.options, a.version)
		c.ready.Store(true)
	})
	return c.compiledValid(v)
}

// compiledValid says whether v passes the schema valid compiled; false
// when it has not compiled one yet. It needs no lock: a compiled schema
// is only read.
func (c *schemaCheck) compiledValid(v any) bool {
	return c.ready.Load() && c.compiled != nil && c.compiled.CompiledSchema != nil && c.compiled.CompiledSchema.Validate(v) == nil
}

// checkSchema checks v against s: through c, and when that fails through
// the library, for its violations.
func (a *api) checkSchema(c *schemaCheck, s *base.Schema, v any) (bool, []*liberrors.ValidationError) {
	if c.valid(a, s, v) {
		return true, nil
	}
	return a.schemas.ValidateSchemaObjectWithVersion(s, v, a.version)
}

// formSchema returns the schema of the operation's form request body, or
// nil when it has none or the request is not a form.
func (o *Operation) formSchema(r *http.Request) *base.Schema {
	if o.op.RequestBody == nil || o.op.RequestBody.Content == nil {
		return nil
	}
	if !strings.HasPrefix(header(r, "Content-Type"), "application/x-www-form-urlencoded") {
		return nil
	}
	return o.formMediaSchema()
}

// untypedFormSchema is the schema a body without a Content-Type is
// checked against, as the form it stands for, when the operation takes a
// form, as Stripe reads one: so a create sent without parameters
// (stripe-go and stripe-node send no body then) is told which one is
// missing, and a read whose form schema requires nothing costs no
// request-body check. Nil when the operation takes no form.
func (o *Operation) untypedFormSchema(r *http.Request) *base.Schema {
	if o.op.RequestBody == nil || o.op.RequestBody.Content == nil || header(r, "Content-Type") != "" {
		return nil
	}
	return o.formMediaSchema()
}

// formMediaSchema is the schema of the operation's form media type, nil
// when it has none.
func (o *Operation) formMediaSchema() *base.Schema {
	mt, ok := o.op.RequestBody.Content.Get("application/x-www-form-urlencoded")
	if !ok || mt == nil || mt.Schema == nil {
		return nil
	}
	return mt.Schema.Schema()
}

// formValues reads a form body into nested values typed by schema.
func formValues(body []byte, schema *base.Schema) (map[string]any, error) {
	v, err := parseForm(string(body))
	if err != nil {
		return nil, err
	}
	if c, ok := coerce(v, schema).(map[string]any); ok {
		return c, nil
	}
	return v, nil
}

// maxCoerceHops bounds the allOf, anyOf and oneOf branches coerce follows
// for one value, so that a schema that is its own branch (B: allOf [B,
// …]) ends rather than recursing until the stack overflows, which killed
// the server, and branches that fan out end too. Each object's property
// and each list item has its own. Stripe's deepest (a tier's up_to, an
// anyOf of an enum and an integer) take a few.
const maxCoerceHops = 64

// hop spends one of a value's branch hops, and says whether there was
// one.
func hop(left *int) bool {
	if *left <= 0 {
		return false
	}
	*left--
	return true
}

// coerce is coerceIn with a value's allowance of branch hops.
func coerce(v any, s *base.Schema) any {
	left := maxCoerceHops
	return coerceIn(v, s, &left)
}

// coerceTo is coerceToIn with a value's allowance of branch hops.
func coerceTo(v any, s *base.Schema) (any, bool) {
	left := maxCoerceHops
	return coerceToIn(v, s, &left)
}

// coerceIn gives v (strings, maps and lists from a form) the types schema
// says, in place: the maps and lists are the caller's own, fresh from
// unflatten, so an object or a list is typed where it is rather than
// copied (a third of a Stripe create's form allocations); what it cannot place is returned as it was, for the validator to
// report, except under a schema marked x-stripeBypassValidation (Stripe's
// "a token, or a dictionary" parameters, typed string in the spec:
// external_account), whose value is handed to the validator as the string
// libopenapi-validator's own form conversion made of it, as stripe-mock
// does not validate such a parameter either. Each branch of an allOf,
// anyOf or oneOf it follows spends one of left.
func coerceIn(v any, s *base.Schema, left *int) any {
	if s == nil {
		return v
	}
	c := coerceSchema(v, s, left)
	if _, isStr := c.(string); !isStr && bypassesValidation(s) && len(s.Type) > 0 && s.Type[0] == "string" {
		if _, ok := coerceToIn(c, s, left); !ok {
			return fmt.Sprintf("%v", c)
		}
	}
	return c
}

// bypassesValidation says whether Stripe's spec marks s as not validated.
func bypassesValidation(s *base.Schema) bool {
	if s.Extensions == nil {
		return false
	}
	n, ok := s.Extensions.Get("x-stripeBypassValidation")
	return ok && n != nil && n.Value == "true"
}

func coerceSchema(v any, s *base.Schema, left *int) any {
	for _, p := range s.AllOf {
		if !hop(left) {
			return v
		}
		v = coerceIn(v, p.Schema(), left)
	}
	if c, ok := coerceToIn(v, s, left); ok {
		return c
	}
	for _, branches := range [][]*base.SchemaProxy{s.AnyOf, s.OneOf} {
		for _, p := range branches {
			if b := p.Schema(); b != nil && hop(left) {
				if c, ok := coerceToIn(v, b, left); ok {
					return c
				}
			}
		}
	}
	return v
}

// coerceToIn converts v to one of the types s itself declares (an object
// with properties and no type counts as an object), and says whether it
// fits: a string that is not among a string schema's enum does not fit, so
// that anyOf [{enum: [inf]}, {type: integer}] takes 1000 as an integer.
func coerceToIn(v any, s *base.Schema, left *int) (any, bool) {
	types := s.Type
	if len(types) == 0 {
		switch {
		case s.Properties != nil || s.AdditionalProperties != nil:
			types = []string{"object"}
		case s.Items != nil:
			types = []string{"array"}
		case len(s.AnyOf)+len(s.OneOf) > 0:
			if b := discriminated(s, v, nil); b != nil && hop(left) {
				return coerceSchema(v, b, left), true
			}
			for _, branches := range [][]*base.SchemaProxy{s.AnyOf, s.OneOf} {
				for _, p := range branches {
					if b := p.Schema(); b != nil && hop(left) {
						if c, ok := coerceToIn(v, b, left); ok {
							return c, true
						}
					}
				}
			}
			return nil, false
		case len(s.AllOf) > 0: // an object made of parts (a menu item's own fields and its base's)
			if _, ok := v.(map[string]any); ok {
				for _, p := range s.AllOf {
					if !hop(left) {
						break
					}
					v = coerceIn(v, p.Schema(), left)
				}
				return v, true
			}
			return nil, false
		}
	}
	str, isStr := v.(string)
	for _, t := range types {
		switch t {
		case "integer":
			if isStr {
				if n, err := strconv.ParseInt(str, 10, 64); err == nil {
					return n, true
				}
			}
		case "number":
			if isStr {
				if f, err := strconv.ParseFloat(str, 64); err == nil {
					return f, true
				}
			}
		case "boolean":
			if isStr {
				if b, err := strconv.ParseBool(str); err == nil {
					return b, true
				}
			}
		case "string":
			if isStr && inEnum(str, s) {
				return v, true // v, not str boxed again
			}
		case "object":
			if m, ok := v.(map[string]any); ok {
				// Each property has an allowance of its own, in the
				// caller's counter, given back as it was after: a
				// counter declared here (coerce's) moved to the heap,
				// two allocations of a Stripe create.
				saved := *left
				for k, e := range m {
					*left = maxCoerceHops
					// A string that stays one is where it was: most
					// of a form's values, whose assignment was a
					// quarter of coerce's work.
					if c := coerceIn(e, propertySchema(s, k), left); !sameString(c, e) {
						m[k] = c
					}
				}
				*left = saved
				return m, true
			}
		case "array":
			if l, ok := listOf(v); ok {
				item := itemSchema(s)
				saved := *left // each item's own allowance, as a property's
				for i, e := range l {
					*left = maxCoerceHops
					l[i] = coerceIn(e, item, left)
				}
				*left = saved
				return l, true
			}
		}
	}
	return nil, false
}

// sameString says whether a and b are the same string.
func sameString(a, b any) bool {
	as, ok := a.(string)
	if !ok {
		return false
	}
	bs, ok := b.(string)
	return ok && as == bs
}

// inEnum says whether a string schema without an enum, or with str in its
// enum, takes str.
func inEnum(str string, s *base.Schema) bool {
	if len(s.Enum) == 0 {
		return true
	}
	for _, e := range s.Enum {
		if e != nil && e.Value == str {
			return true
		}
	}
	return false
}

// listOf reads a list as a form sends one: a[]=x&a[]=y (a list already),
// or a[0]=x&a[1]=y (a map whose keys are all indexes, in index order).
func listOf(v any) ([]any, bool) {
	switch l := v.(type) {
	case []any:
		return l, true
	case map[string]any:
		idx := make([]int, 0, len(l))
		for k := range l {
			n, err := strconv.Atoi(k)
			if err != nil || n < 0 {
				return nil, false
			}
			idx = append(idx, n)
		}
		sort.Ints(idx)
		out := make([]any, len(idx))
		for i, n := range idx {
			out[i] = l[strconv.Itoa(n)]
		}
		return out, true
	}
	return nil, false
}

// propertySchema is the schema of an object's property k: its own, else
// additionalProperties' (a map's values).
func propertySchema(s *base.Schema, k string) *base.Schema {
	if s.Properties != nil {
		if p, ok := s.Properties.Get(k); ok && p != nil {
			return p.Schema()
		}
	}
	if ap := s.AdditionalProperties; ap != nil && ap.IsA() && ap.A != nil {
		return ap.A.Schema()
	}
	return nil
}

// itemSchema is the schema of an array's items.
func itemSchema(s *base.Schema) *base.Schema {
	if s.Items != nil && s.Items.IsA() && s.Items.A != nil {
		return s.Items.A.Schema()
	}
	return nil
}
