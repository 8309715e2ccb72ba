package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
	"time"
)

// Runtime is implemented by template data that lends seq, randomHex,
// randomInt, uuid and unix what they need from the server: its named
// counters, its randomness (seeded by --seed) and its clock. Template
// functions are bound when a file is loaded, long before there is a
// server, so each call of these is rewritten to take the template's data
// first (see passData), the way json takes it.
type Runtime interface {
	// NextCount increments the named counter and returns its value, 1 on
	// first use.
	NextCount(name string) (int64, error)
	// RandomFloat returns a uniform number in [0, 1).
	RandomFloat() float64
	// Time returns the time the answer is made at.
	Time() time.Time
}

// MaxRandomHex bounds randomHex's length, so that a template cannot ask
// for a megabyte of randomness per request.
const MaxRandomHex = 64

// dataFuncs are the functions whose calls get the template's data as a
// first argument; the user writes them without it.
var dataFuncs = map[string]bool{"seq": true, "randomHex": true, "randomInt": true, "uuid": true, "unix": true, "stored": true, "storedWhere": true, "remember": true}

// Resources is implemented by the template data of a route that names an
// OpenAPI operation: it reads the objects state by convention stores.
type Resources interface {
	// StoredResource returns the stored object of the resource (a
	// schema's x-resourceId: payment_intent) with id,
	// as the request's scope sees it, decoded; nil when there is none.
	StoredResource(resource, id string) (any, error)
	// StoredWhere returns the stored objects of the resource whose field
	// is value (the field itself, or its id when it is expanded), as
	// the request's scope sees them, decoded, oldest first.
	StoredWhere(resource, field, value string) ([]any, error)
}

// stored returns a stored object of an OpenAPI source's resources, by
// resource name and id (or an object with an id: a field expanded, as
// latest_charge with expand[]=latest_charge), decoded (numbers as
// written), or an empty object
// when there is none or the route names no operation, so that
// {{ (stored "payment_intent" .Request.Form.payment_intent).amount }}
// renders a missing value rather than failing.
func stored(data any, args ...any) (any, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("stored takes a resource and an id, got %d values", len(args))
	}
	resource, ok := args[0].(string)
	if !ok || resource == "" {
		return nil, fmt.Errorf("stored takes a resource name (a non-empty string: payment_intent), got %s", describeValue(args[0]))
	}
	id, _ := args[1].(string)
	if obj, ok := args[1].(map[string]any); ok { // an expanded field: its id
		id, _ = obj["id"].(string)
	}
	if r, ok := data.(Resources); ok && id != "" {
		v, err := r.StoredResource(resource, id)
		if err != nil || v != nil {
			return v, err
		}
	}
	return map[string]any{}, nil
}

// storedWhere returns the stored objects of an OpenAPI source's resource
// whose field is value, oldest first: {{ range storedWhere "refund"
// "payment_intent" .Request.Form.payment_intent }}. None when the route
// names no operation or value is empty.
func storedWhere(data any, args ...any) ([]any, error) {
	if len(args) != 3 {
		return nil, fmt.Errorf("storedWhere takes a resource, a field and a value, got %d values", len(args))
	}
	resource, ok := args[0].(string)
	field, fok := args[1].(string)
	if !ok || resource == "" || !fok || field == "" {
		return nil, fmt.Errorf("storedWhere takes a resource name and a field name (non-empty strings: refund, payment_intent), got %s and %s", describeValue(args[0]), describeValue(args[1]))
	}
	value, _ := toText(args[2])
	if r, ok := data.(Resources); ok && value != "" {
		return r.StoredWhere(resource, field, value)
	}
	return nil, nil
}

// toText is a value a template compares as text: a string as it is, a
// number as written, a form's first value; "" for anything else.
func toText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case int, int64, float64:
		return fmt.Sprint(x), true
	case []string:
		if len(x) > 0 {
			return x[0], true
		}
	}
	return "", false
}

// add returns the sum of integers (form strings, JSON numbers), as int
// reads them: {{ add .Item.amount_refunded (int .Request.Form.amount) }}.
// A missing value makes the sum missing, as int keeps it missing, so that
// a typed leaf writes null rather than a sum of what is not there.
func add(args ...any) (any, error) {
	var sum int64
	for _, a := range args {
		n, ok, err := integer("add", a)
		if !ok {
			return nil, err
		}
		if (n > 0 && sum > math.MaxInt64-n) || (n < 0 && sum < math.MinInt64-n) {
			return nil, errors.New("add: the sum passes the range of a 64-bit integer")
		}
		sum += n
	}
	return sum, nil
}

// sub returns a minus b, integers as add reads them (missing when either
// is).
func sub(a, b any) (any, error) {
	x, y, ok, err := operands("sub", a, b)
	if !ok {
		return nil, err
	}
	if (y < 0 && x > math.MaxInt64+y) || (y > 0 && x < math.MinInt64+y) {
		return nil, errors.New("sub: the difference passes the range of a 64-bit integer")
	}
	return x - y, nil
}

// mul returns a times b, integers as add reads them (missing when either
// is).
func mul(a, b any) (any, error) {
	x, y, ok, err := operands("mul", a, b)
	if !ok {
		return nil, err
	}
	r := x * y
	if x != 0 && (r/x != y || x == -1 && y == math.MinInt64 || y == -1 && x == math.MinInt64) {
		return nil, errors.New("mul: the product passes the range of a 64-bit integer")
	}
	return r, nil
}

// operands reads a and b of fn as integers: ok false when either is
// missing (err nil) or not an integer (err says so).
func operands(fn string, a, b any) (x, y int64, ok bool, err error) {
	if x, ok, err = integer(fn, a); ok {
		y, ok, err = integer(fn, b)
	}
	return x, y, ok, err
}

// sum adds up field of each object in list: {{ sum (storedWhere "refund"
// "payment_intent" $pi.id) "amount" }}; 0 for an empty list. An item
// without the field, or one that is not an integer, is an error.
func sum(list any, field string) (int64, error) {
	items, ok := list.([]any)
	if !ok && list != nil {
		return 0, fmt.Errorf("sum takes a list of objects (storedWhere's), got %s", describeValue(list))
	}
	var total any = int64(0)
	for i, it := range items {
		obj, _ := it.(map[string]any)
		n, ok, err := integer("sum", obj[field])
		if !ok {
			if err == nil {
				err = fmt.Errorf("sum: item %d has no %s", i, field)
			}
			return 0, err
		}
		var aerr error
		if total, aerr = add(total, n); aerr != nil {
			return 0, fmt.Errorf("sum: %w", aerr)
		}
	}
	return total.(int64), nil
}

// appendItem returns the list with v after its items, as Sprig's append:
// a new list, so that the list given stays as it was. A missing list is an
// empty one.
func appendItem(list any, v any) ([]any, error) {
	items, ok := list.([]any)
	if !ok && list != nil {
		return nil, fmt.Errorf("append takes a list (list's), got %s", describeValue(list))
	}
	return append(slices.Clip(items), v), nil
}

// dict returns the object of the key and value pairs, as Sprig's dict:
// {{ dict "id" .id "quantity" 1 }}.
func dict(pairs ...any) (map[string]any, error) {
	if len(pairs)%2 != 0 {
		return nil, fmt.Errorf("dict takes keys and values in pairs, got %d values", len(pairs))
	}
	out := make(map[string]any, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		k, ok := pairs[i].(string)
		if !ok {
			return nil, fmt.Errorf("dict: key %d is %s, not a string", i/2+1, describeValue(pairs[i]))
		}
		out[k] = pairs[i+1]
	}
	return out, nil
}

// omit returns v without the keys: a JSON object copied without them,
// or a list whose objects are copied without them (other items as they
// are), as Sprig's omit, which takes one object: {{ omit .Answer.data
// "secret" }}, a list of Stripe's webhook endpoints without the secret
// that only their create shows. A missing value stays missing.
func omit(v any, keys ...string) (any, error) {
	without := func(obj map[string]any) map[string]any {
		out := make(map[string]any, len(obj))
		for k, x := range obj {
			out[k] = x
		}
		for _, k := range keys {
			delete(out, k)
		}
		return out
	}
	switch v := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return without(v), nil
	case []any:
		out := make([]any, len(v))
		for i, it := range v {
			if obj, ok := it.(map[string]any); ok {
				it = without(obj)
			}
			out[i] = it
		}
		return out, nil
	}
	return nil, fmt.Errorf("omit takes an object or a list of objects, got %s", describeValue(v))
}

// integer reads an argument of fn as an integer: ok false when it is
// missing (err nil) or not an integer (err says so).
func integer(fn string, v any) (int64, bool, error) {
	i, err := toInt(v)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", fn, err)
	}
	n, ok := i.(int64)
	return n, ok, nil
}

// Memory is implemented by template data that keeps remember's values
// for the answer being made.
type Memory interface {
	// Remember returns the value kept under name, keeping v there first
	// when there is none.
	Remember(name string, v any) any
}

// remember returns the value first remembered under name while this
// answer is made, v on first use: one random id written in several
// places (the body, the override, the envelope, the save: entries) is
// the same id: {{ remember "charge" (print "ch_" (randomHex 24)) }}.
// Data that keeps nothing gives v.
func remember(data any, args ...any) (any, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("remember takes a name and a value, got %d values", len(args))
	}
	name, ok := args[0].(string)
	if !ok || name == "" {
		return nil, fmt.Errorf("remember takes a name (a non-empty string: charge), got %s", describeValue(args[0]))
	}
	if m, ok := data.(Memory); ok {
		return m.Remember(name, args[1]), nil
	}
	return args[1], nil
}

// seq returns the next value of a named counter: {{ seq "order" }}.
func seq(data any, args ...any) (int64, error) {
	if len(args) != 1 {
		return 0, fmt.Errorf("seq takes a counter name, got %d values", len(args))
	}
	name, ok := args[0].(string)
	if !ok || name == "" {
		return 0, fmt.Errorf("seq takes a counter name (a non-empty string), got %s", describeValue(args[0]))
	}
	rt, ok := data.(Runtime)
	if !ok {
		// A template called with {{ template "x" . }} has its own $.
		return 0, errors.New(`seq needs the request's data as $: call the template with {{ template "name" $ }}`)
	}
	return rt.NextCount(name)
}

// randomHex returns n random lowercase hexadecimal digits, from the
// server's randomness so that a seeded server repeats them.
func randomHex(data any, args ...any) (string, error) {
	if len(args) != 1 {
		return "", fmt.Errorf("randomHex takes a length, got %d values", len(args))
	}
	n, err := toInt(args[0])
	if err != nil || n == nil {
		return "", fmt.Errorf("randomHex takes a length, got %s", describeValue(args[0]))
	}
	size := n.(int64)
	if size < 1 || size > MaxRandomHex {
		return "", fmt.Errorf("randomHex %d: the length must be between 1 and %d", size, MaxRandomHex)
	}
	u := random(data)
	const digits = "0123456789abcdef"
	b := make([]byte, size)
	for i := range b {
		b[i] = digits[min(int(u()*16), 15)]
	}
	return string(b), nil
}

// random returns the server's source of uniform numbers in [0, 1) when
// data lends it, math/rand/v2's otherwise.
func random(data any) func() float64 {
	if rt, ok := data.(Runtime); ok {
		return rt.RandomFloat
	}
	return rand.Float64
}

// randomInt returns a uniform integer in [min, max]: {{ randomInt 1 6 }}.
func randomInt(data any, args ...any) (int64, error) {
	if len(args) != 2 {
		return 0, fmt.Errorf("randomInt takes a min and a max, got %d values", len(args))
	}
	var bounds [2]int64
	for i, a := range args {
		n, err := toInt(a)
		if err != nil || n == nil {
			return 0, fmt.Errorf("randomInt takes whole numbers, got %s", describeValue(a))
		}
		bounds[i] = n.(int64)
	}
	lo, hi := bounds[0], bounds[1]
	if hi < lo {
		return 0, fmt.Errorf("randomInt: max %d is below min %d", hi, lo)
	}
	// The span as a float loses the last digits past 2^53, which a mock's
	// dice do not miss. Unsigned, so that the span of the whole int64
	// range fits; the sum wraps back into [lo, hi].
	span := uint64(hi - lo)
	off := min(uint64(random(data)()*(float64(span)+1)), span)
	return lo + int64(off), nil
}

// uuid returns a random version 4 UUID, from the server's randomness so
// that a seeded server repeats it.
func uuid(data any, args ...any) (string, error) {
	if len(args) != 0 {
		return "", fmt.Errorf("uuid takes no values, got %d", len(args))
	}
	u := random(data)
	var b [16]byte
	for i := range b {
		b[i] = byte(u() * 256)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]), nil
}

// unixTime (unix in templates) returns the answer's time in seconds since 1970, as Stripe's
// created fields are: {{ unix }} is {{ .Now.Unix }}.
func unixTime(data any, args ...any) (int64, error) {
	if len(args) != 0 {
		return 0, fmt.Errorf("unix takes no values, got %d", len(args))
	}
	if rt, ok := data.(Runtime); ok {
		return rt.Time().Unix(), nil
	}
	return time.Now().Unix(), nil
}

// toInt turns a form or query string (or a JSON number) into an integer.
// A missing value stays missing, so that it renders empty, or null in a
// typed leaf; anything that is not an integer is an error.
func toInt(v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		i, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s is not an integer", describeValue(x))
		}
		return i, nil
	case []string: // url.Values' own form: the first value, as Get reads it
		if len(x) == 0 {
			return nil, nil
		}
		return toInt(x[0])
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		if f, err := x.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return int64(f), nil // 2e3 or 2000.0
		}
		return nil, fmt.Errorf("%s is not an integer", x)
	case bool:
		return nil, fmt.Errorf("%t is not an integer", x)
	}
	rv := reflect.ValueOf(v)
	switch {
	case rv.CanInt():
		return rv.Int(), nil
	case rv.CanUint() && rv.Uint() <= math.MaxInt64:
		return int64(rv.Uint()), nil
	case rv.CanFloat():
		if f := rv.Float(); f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return int64(f), nil
		}
	}
	return nil, fmt.Errorf("%s is not an integer", describeValue(v))
}

// toFloat turns a string or number into a finite float64.
func toFloat(v any) (any, error) {
	var f float64
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		var err error
		if f, err = strconv.ParseFloat(x, 64); err != nil {
			return nil, fmt.Errorf("%s is not a number", describeValue(x))
		}
	case []string:
		if len(x) == 0 {
			return nil, nil
		}
		return toFloat(x[0])
	case json.Number:
		var err error
		if f, err = x.Float64(); err != nil {
			return nil, fmt.Errorf("%s is not a number", x)
		}
	default:
		rv := reflect.ValueOf(v)
		switch {
		case rv.CanInt():
			f = float64(rv.Int())
		case rv.CanUint():
			f = float64(rv.Uint())
		case rv.CanFloat():
			f = rv.Float()
		default:
			return nil, fmt.Errorf("%s is not a number", describeValue(v))
		}
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%s is not a finite number", describeValue(v))
	}
	return f, nil
}

// toBool turns "true" or "false" (and strconv's 1, t, T, TRUE, True, 0, f,
// F, FALSE, False) into a boolean.
func toBool(v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool:
		return x, nil
	case string:
		b, err := strconv.ParseBool(x)
		if err != nil {
			return nil, fmt.Errorf("%s is not a boolean (want true or false)", describeValue(x))
		}
		return b, nil
	case []string:
		if len(x) == 0 {
			return nil, nil
		}
		return toBool(x[0])
	}
	return nil, fmt.Errorf("%s is not a boolean (want true or false)", describeValue(v))
}

// describeValue names a value in an error: strings quoted (and clipped),
// anything else with its type.
func describeValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "nothing"
	case string:
		if len(x) > 40 {
			x = x[:40] + "…"
		}
		return strconv.Quote(x)
	case json.Number:
		return string(x)
	}
	return fmt.Sprintf("%v (%T)", v, v)
}

// jsonLeaf ends the pipeline of a typed leaf: a string of a mapping body
// that is exactly one action. It hands back the value's JSON, which the
// leaf writes as it is, so that the value keeps its JSON type.
func jsonLeaf(data any, args ...any) (string, error) {
	if len(args) != 1 {
		return "", fmt.Errorf("jsonLeaf takes one value, got %d", len(args))
	}
	switch v := args[0].(type) {
	case nil:
		return "null", nil
	case string:
		return quoteJSON(v), nil
	case json.Number:
		// Only a JSON decoder makes one (.Request.JSON), and it checked
		// the number's syntax.
		return string(v), nil
	case bool:
		return strconv.FormatBool(v), nil
	case float64:
		return formatFloat(v)
	case float32:
		return formatFloat(float64(v))
	}
	rv := reflect.ValueOf(args[0])
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if rv.Type() == reflect.TypeFor[time.Duration]() {
			break // a duration reads as its text, 1.5s
		}
		return strconv.FormatInt(rv.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(rv.Uint(), 10), nil
	case reflect.Map, reflect.Slice, reflect.Array:
		return jsonOf(data, args[0])
	}
	// Anything else (a time) is the text text/template would print.
	return quoteJSON(fmt.Sprint(args[0])), nil
}

func quoteJSON(s string) string {
	var buf bytes.Buffer
	writeJSONString(&buf, s)
	return buf.String()
}

func formatFloat(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", fmt.Errorf("%v has no JSON form", f)
	}
	b, _ := json.Marshal(f) // finite: never fails; the shortest text, as encoding/json writes it
	return string(b), nil
}

// leafCmd is the pipeline step "| jsonLeaf $", taken from a parsed
// template so that it carries a tree for error messages.
var leafCmd = func() *parse.CommandNode {
	t := template.Must(template.New("").Funcs(TemplateFuncs).Parse("{{ . | jsonLeaf $ }}"))
	return t.Tree.Root.Nodes[0].(*parse.ActionNode).Pipe.Cmds[1]
}()

// dollar is the node "$", for the rewrite of dataFuncs.
var dollar = func() parse.Node {
	t := template.Must(template.New("").Funcs(TemplateFuncs).Parse("{{ jsonLeaf $ . }}"))
	return t.Tree.Root.Nodes[0].(*parse.ActionNode).Pipe.Cmds[0].Args[1]
}()

// makeTyped turns t, a template whose output is exactly one printing
// action, into a typed leaf: that action's pipeline ends in jsonLeaf
// instead of orEmpty. Before the action t may only set variables, in
// branches and loops too ('{{ $t := 0 }}{{ range .l }}{{ $t = add $t
// .n }}{{ end }}{{ $t }}' is a number), since they print nothing. It
// reports whether t had that shape.
func makeTyped(t *template.Template) bool {
	nodes := t.Tree.Root.Nodes
	if len(nodes) == 0 || !silent(nodes[:len(nodes)-1]) {
		return false
	}
	a, ok := nodes[len(nodes)-1].(*parse.ActionNode)
	if !ok || len(a.Pipe.Decl) > 0 {
		return false
	}
	cmds := a.Pipe.Cmds
	if cmds[len(cmds)-1] != orEmptyCmd {
		return false
	}
	cmds[len(cmds)-1] = leafCmd
	return true
}

// silent says whether nodes print nothing: actions that declare or
// assign variables (and the range's step check), and branches, loops and
// withs of only those.
func silent(nodes []parse.Node) bool {
	for _, n := range nodes {
		ok := false
		switch n := n.(type) {
		case *parse.TextNode:
			ok = len(n.Text) == 0
		case *parse.ActionNode:
			ok = len(n.Pipe.Decl) > 0 || n == stepAction
		case *parse.IfNode:
			ok = silentList(n.List) && silentList(n.ElseList)
		case *parse.RangeNode:
			ok = silentList(n.List) && silentList(n.ElseList)
		case *parse.WithNode:
			ok = silentList(n.List) && silentList(n.ElseList)
		}
		if !ok {
			return false
		}
	}
	return true
}

func silentList(l *parse.ListNode) bool { return l == nil || silent(l.Nodes) }

// funcArity is how many values the user passes to each function checked
// at load time.
var funcArity = map[string]int{"seq": 1, "randomHex": 1, "randomInt": 2, "uuid": 0, "unix": 0, "int": 1, "float": 1, "bool": 1, "stored": 2, "storedWhere": 3, "remember": 2, "append": 2, "sub": 2, "sum": 2, "mul": 2, "replace": 3, "hasPrefix": 2}

// checkCalls finds, at load time, the mistakes text/template would only
// report when a request comes: a wrong number of values for the functions
// above, a literal length out of randomHex's bounds, an empty counter
// name. The error reads like a text/template parse error, with the line.
func checkCalls(tree *parse.Tree, n parse.Node) error {
	var err error
	walkPipes(n, func(p *parse.PipeNode) {
		for i, c := range p.Cmds {
			id, ok := c.Args[0].(*parse.IdentifierNode)
			if !ok || err != nil {
				continue
			}
			want, checked := funcArity[id.Ident]
			if !checked {
				continue
			}
			got := len(c.Args) - 1
			if i > 0 {
				got++ // the piped value
			}
			fail := func(format string, args ...any) {
				loc, _ := tree.ErrorContext(c)
				err = fmt.Errorf("template: %s: %s", loc, fmt.Sprintf(format, args...))
			}
			if got != want {
				fail("%s takes %s, got %d", id.Ident, [...]string{"no values", "one value", "two values"}[want], got)
				continue
			}
			if len(c.Args) < 2 {
				continue
			}
			switch arg := c.Args[1].(type) {
			case *parse.NumberNode:
				if id.Ident == "randomHex" && (!arg.IsInt || arg.Int64 < 1 || arg.Int64 > MaxRandomHex) {
					fail("randomHex %s: the length must be between 1 and %d", arg.Text, MaxRandomHex)
				}
				if id.Ident == "seq" {
					fail("seq %s: the counter name must be a string, e.g. seq %q", arg.Text, "orders")
				}
			case *parse.StringNode:
				switch {
				case id.Ident == "seq" && strings.TrimSpace(arg.Text) == "":
					fail("seq %s: the counter name must not be empty", arg.Quoted)
				case id.Ident == "randomHex":
					fail("randomHex %s: the length must be a number", arg.Quoted)
				}
			}
		}
	})
	return err
}

// walkPipes calls f for every pipeline under n.
func walkPipes(n parse.Node, f func(*parse.PipeNode)) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n != nil {
			for _, c := range n.Nodes {
				walkPipes(c, f)
			}
		}
	case *parse.ActionNode:
		walkPipes(n.Pipe, f)
	case *parse.IfNode:
		walkPipes(n.Pipe, f)
		walkPipes(n.List, f)
		walkPipes(n.ElseList, f)
	case *parse.RangeNode:
		walkPipes(n.Pipe, f)
		walkPipes(n.List, f)
		walkPipes(n.ElseList, f)
	case *parse.WithNode:
		walkPipes(n.Pipe, f)
		walkPipes(n.List, f)
		walkPipes(n.ElseList, f)
	case *parse.TemplateNode:
		walkPipes(n.Pipe, f)
	case *parse.ChainNode:
		walkPipes(n.Node, f)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		f(n)
		for _, c := range n.Cmds {
			for _, a := range c.Args {
				walkPipes(a, f)
			}
		}
	}
}
