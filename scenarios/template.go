package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	"gopkg.in/yaml.v3"
)

// TemplateFuncs are the functions a response template may call, besides
// text/template's built-ins. The data a template sees is the server's
// business; these functions depend on nothing but their arguments.
var TemplateFuncs = template.FuncMap{
	// json encodes a value as JSON: {{ json .Request.JSON.items }}. Each
	// call is rewritten to jsonOf (see passData), so this one runs only
	// where a template is executed without that rewrite.
	"json": func(v any) (string, error) { return jsonOf(nil, v) },
	// jsonOf is json with the template's data first, from which it echoes
	// request JSON as it came.
	"jsonOf": jsonOf,
	// default returns def when v is empty or missing: {{ default "JPY" .Request.JSON.currency }}.
	"default": func(def, v any) any {
		if v == nil {
			return def
		}
		rv := reflect.ValueOf(v)
		if rv.IsZero() || ((rv.Kind() == reflect.Map || rv.Kind() == reflect.Slice) && rv.Len() == 0) {
			return def
		}
		return v
	},
	// ternary is yes when cond is true (as {{ if }} reads it: not false,
	// 0, nil or empty), else no, as Sprig's ternary: {{ ternary .Item.amount
	// 0 (eq .Item.capture_method "manual") }}, a number in a typed leaf,
	// where an {{ if }} could only write text.
	"ternary": func(yes, no, cond any) any {
		if truth, _ := template.IsTrue(cond); truth {
			return yes
		}
		return no
	},
	// orEmpty renders a missing (nil) value as nothing; every printing
	// action ends in it (see renderMissingEmpty).
	"orEmpty": func(v any) any {
		if v == nil {
			return ""
		}
		return v
	},
	// _step is the check boundTemplate puts at the start of every range
	// body: text/template has no cancellation, but it stops at a
	// function's error.
	"_step": func(v any) (string, error) {
		if b, ok := v.(Budget); ok {
			return "", b.Step()
		}
		return "", nil
	},
	"upper": strings.ToUpper,
	"lower": strings.ToLower,
	"trim":  strings.TrimSpace,
	// replace and hasPrefix are Sprig's, the string last so that it
	// pipes in: {{ .Item.success_url | replace "{CHECKOUT_SESSION_ID}" .Item.id }}.
	// A missing value is "", as a missing field renders.
	"replace":   func(old, new string, s any) string { return strings.ReplaceAll(textOf(s), old, new) },
	"hasPrefix": func(prefix string, s any) bool { return strings.HasPrefix(textOf(s), prefix) },
	// seq, randomHex, randomInt, uuid and unix take the template's data
	// first (see passData), which lends them the server's counters,
	// randomness and clock (Runtime).
	"seq":       seq,
	"randomHex": randomHex,
	"randomInt": randomInt,
	"uuid":      uuid,
	"unix":      unixTime,
	// stored reads an object an OpenAPI source stores (Resources), and
	// storedWhere those whose field has a value.
	"stored":      stored,
	"storedWhere": storedWhere,
	// remember keeps a value for the rest of the answer (Memory).
	"remember": remember,
	// add, sub, mul and sum do integer arithmetic on what int takes (a
	// form string, a stored number): {{ sub (int $pi.amount_received)
	// (sum $refunds "amount") }}, a number in a typed leaf.
	"add": add,
	"sub": sub,
	"mul": mul,
	"sum": sum,
	// omit copies an object, or each object of a list, without keys.
	"omit": omit,
	// list, append and dict build lists and objects, as Sprig's: a typed
	// leaf writes them as JSON ({{ $d := list }}{{ range … }}{{ $d =
	// append $d (dict "id" .id "quantity" (int .quantity)) }}{{ end }}{{ $d }}).
	"list":   func(v ...any) []any { return append([]any{}, v...) },
	"append": appendItem,
	"dict":   dict,
	// int, float and bool turn form and query strings into typed values,
	// which a typed leaf writes as JSON numbers and booleans.
	"int":   toInt,
	"float": toFloat,
	"bool":  toBool,
	// jsonLeaf ends every typed leaf (see makeTyped).
	"jsonLeaf": jsonLeaf,
}

// parseTemplate compiles text as a response template. The template's name
// is fixed, so that its errors parse unambiguously (a YAML key such as
// "a:0" in the name would read as a line number).
func parseTemplate(text string) (*template.Template, error) {
	t, err := template.New("t").Funcs(TemplateFuncs).Option("missingkey=zero").Parse(text)
	if err != nil {
		return nil, err
	}
	for _, tt := range t.Templates() {
		if tt.Tree == nil {
			continue
		}
		if tt.Name() != "t" {
			// A template that calls itself twice runs for 2^100000 calls;
			// refusing define and block is simpler than bounding them, and
			// a one-string response template has little use for them.
			loc, _ := tt.Tree.ErrorContext(tt.Tree.Root)
			return nil, fmt.Errorf("template: %s: a response template cannot define templates (%q)", loc, tt.Name())
		}
		if err := checkCalls(tt.Tree, tt.Tree.Root); err != nil {
			return nil, err
		}
		renderMissingEmpty(tt.Tree.Root)
		passData(tt.Tree.Root)
		if err := boundTemplate(tt.Tree, tt.Tree.Root); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// JSONSource is implemented by template data that holds a request's JSON:
// the body as received and the document decoded from it, in which a value
// given to json is looked up to be echoed as it came.
type JSONSource interface {
	RequestJSON() (body string, doc any)
}

// jsonOf encodes v as JSON without rewriting what it echoes. A JSON object
// decodes to a Go map, which has lost its key order, so an object or array
// that came from the request body is echoed from the body's own bytes
// (compacted): keys in the client's order, strings and numbers as written.
// Anything else is encoded by encoding/json, without its HTML escaping of
// <, > and &, which only serves JSON pasted into HTML.
func jsonOf(data any, args ...any) (string, error) {
	if len(args) != 1 {
		return "", fmt.Errorf("json takes one value, got %d", len(args)) // as the user wrote it, not jsonOf's count
	}
	v := args[0]
	if src, ok := data.(JSONSource); ok {
		if raw, ok := rawJSON(src, v); ok {
			return raw, nil
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// rawJSON finds v, an object or non-empty array of src's document, in the
// body it was decoded from, by walking body and document together. It
// compares by identity (the same map, the same slice), and checks what it
// found, so that a body with duplicate keys cannot echo the wrong member.
func rawJSON(src JSONSource, v any) (string, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map, reflect.Slice:
		if rv.Len() == 0 {
			return "", false // nothing to order
		}
	default:
		return "", false
	}
	body, doc := src.RequestJSON()
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	raw, err := findRaw(dec, doc, rv, 0)
	if err != nil || raw == nil {
		return "", false
	}
	var out bytes.Buffer
	if json.Compact(&out, raw) != nil {
		return "", false
	}
	return out.String(), true
}

// findRaw reads the value at dec's position, the encoding of node, and
// returns the bytes of the value identical to target within it, or nil.
// An error means the body and the document part ways (a duplicate key
// keeps only its last value) or the body is not JSON: give up then.
func findRaw(dec *json.Decoder, node any, target reflect.Value, depth int) (json.RawMessage, error) {
	if depth > maxDepth {
		return nil, errDiverged
	}
	if same(reflect.ValueOf(node), target) {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		// Of a key given twice the document kept the last value: the
		// first is read past here.
		var check any
		cd := json.NewDecoder(bytes.NewReader(raw))
		cd.UseNumber()
		if cd.Decode(&check) != nil || !reflect.DeepEqual(check, target.Interface()) {
			return nil, nil
		}
		return raw, nil
	}
	switch node := node.(type) {
	case map[string]any:
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return nil, errDiverged
		}
		for dec.More() {
			key, err := dec.Token()
			k, ok := key.(string)
			if err != nil || !ok {
				return nil, errDiverged
			}
			if raw, err := findRaw(dec, node[k], target, depth+1); raw != nil || err != nil {
				return raw, err
			}
		}
	case []any:
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			return nil, errDiverged
		}
		for i := 0; dec.More(); i++ {
			if i >= len(node) {
				return nil, errDiverged
			}
			if raw, err := findRaw(dec, node[i], target, depth+1); raw != nil || err != nil {
				return raw, err
			}
		}
	default:
		var skip json.RawMessage
		return nil, dec.Decode(&skip)
	}
	_, err := dec.Token() // the closing bracket
	return nil, err
}

var errDiverged = errors.New("the body and its document differ")

// same reports whether a and b are the same map, or the same slice.
func same(a, b reflect.Value) bool {
	if !a.IsValid() || a.Kind() != b.Kind() || a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Map:
		return a.UnsafePointer() == b.UnsafePointer()
	case reflect.Slice:
		return a.Len() == b.Len() && a.Len() > 0 && a.UnsafePointer() == b.UnsafePointer()
	}
	return false
}

// jsonOfArgs is the start of the command "jsonOf $", taken from a parsed
// template so that its nodes carry a tree for error messages.
var jsonOfArgs = func() []parse.Node {
	t := template.Must(template.New("").Funcs(TemplateFuncs).Parse("{{ jsonOf $ . }}"))
	return t.Tree.Root.Nodes[0].(*parse.ActionNode).Pipe.Cmds[0].Args[:2]
}()

// passData rewrites every call of json into jsonOf $, handing the function
// the template's data, which a template function cannot otherwise see and
// from which it finds the bytes a request value came from; calls of seq,
// randomHex and unix get $ as their first argument in the same way. A
// piped value (.x | json) is appended after the rewrite, so it stays the
// last argument.
func passData(n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n != nil {
			for _, c := range n.Nodes {
				passData(c)
			}
		}
	case *parse.ActionNode:
		passData(n.Pipe)
	case *parse.IfNode:
		passData(n.Pipe)
		passData(n.List)
		passData(n.ElseList)
	case *parse.RangeNode:
		passData(n.Pipe)
		passData(n.List)
		passData(n.ElseList)
	case *parse.WithNode:
		passData(n.Pipe)
		passData(n.List)
		passData(n.ElseList)
	case *parse.TemplateNode:
		passData(n.Pipe)
	case *parse.ChainNode:
		passData(n.Node)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, c := range n.Cmds {
			for _, a := range c.Args {
				passData(a)
			}
			id, ok := c.Args[0].(*parse.IdentifierNode)
			switch {
			case !ok:
			case id.Ident == "json":
				c.Args = append(jsonOfArgs[:2:2], c.Args[1:]...)
			case dataFuncs[id.Ident]:
				c.Args = append([]parse.Node{id, dollar}, c.Args[1:]...)
			}
		}
	}
}

// MaxRangeSteps bounds the range iterations of one render, nested ones
// included. A range over a literal larger than this could never finish
// and is refused when the file loads; any other range is cut off at run
// time by the Budget the render's data carries.
const MaxRangeSteps = 1_000_000

// Budget is what the data given to a template's Execute may implement to
// bound the render: Step is called at the start of every range iteration,
// and an error from it ends the render with that error (text/template
// keeps it in the chain, for errors.Is).
type Budget interface {
	Step() error
}

// ErrOutputLimit is the error a render ends with when its output would
// pass the limit of the writer it renders into (see JSONTemplate.Execute).
var ErrOutputLimit = errors.New("template output over the limit")

// stepAction is the action {{ _step $ }}: $ is the data given to Execute,
// since templates cannot be called with other data and $ cannot be
// redeclared (both are refused by boundTemplate).
var stepAction = func() *parse.ActionNode {
	t := template.Must(template.New("").Funcs(TemplateFuncs).Parse("{{ _step $ }}"))
	return t.Tree.Root.Nodes[0].(*parse.ActionNode)
}()

// boundTemplate puts stepAction first in every range body, refuses a
// range over an integer literal above MaxRangeSteps, and refuses what
// would escape the budget: calling a template and redeclaring $.
func boundTemplate(tree *parse.Tree, n parse.Node) error {
	fail := func(n parse.Node, format string, args ...any) error {
		loc, _ := tree.ErrorContext(n)
		return fmt.Errorf("template: %s: %s", loc, fmt.Sprintf(format, args...))
	}
	var pipe func(p *parse.PipeNode) error
	pipe = func(p *parse.PipeNode) error {
		if p == nil {
			return nil
		}
		for _, v := range p.Decl {
			if v.Ident[0] == "$" {
				return fail(p, "$ cannot be declared or assigned in a response template")
			}
		}
		for _, c := range p.Cmds {
			for _, a := range c.Args {
				if sub, ok := a.(*parse.PipeNode); ok {
					if err := pipe(sub); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	lists := func(ls ...*parse.ListNode) error {
		for _, l := range ls {
			if l == nil {
				continue
			}
			if err := boundTemplate(tree, l); err != nil {
				return err
			}
		}
		return nil
	}
	switch n := n.(type) {
	case *parse.ListNode:
		for _, c := range n.Nodes {
			if err := boundTemplate(tree, c); err != nil {
				return err
			}
		}
	case *parse.ActionNode:
		return pipe(n.Pipe)
	case *parse.TemplateNode:
		return fail(n, "a response template cannot call templates ({{template %q}})", n.Name)
	case *parse.IfNode:
		if err := pipe(n.Pipe); err != nil {
			return err
		}
		return lists(n.List, n.ElseList)
	case *parse.WithNode:
		if err := pipe(n.Pipe); err != nil {
			return err
		}
		return lists(n.List, n.ElseList)
	case *parse.RangeNode:
		if err := pipe(n.Pipe); err != nil {
			return err
		}
		if cmds := n.Pipe.Cmds; len(cmds) == 1 && len(cmds[0].Args) == 1 {
			if num, ok := cmds[0].Args[0].(*parse.NumberNode); ok && num.IsInt && num.Int64 > MaxRangeSteps {
				return fail(n, "range over %s can never finish: a render may take at most %d range steps", num.Text, MaxRangeSteps)
			}
		}
		if err := lists(n.List, n.ElseList); err != nil {
			return err
		}
		// After the walk, so that the step itself is not walked.
		n.List.Nodes = append([]parse.Node{stepAction}, n.List.Nodes...)
	}
	return nil
}

// orEmptyCmd is the pipeline step "| orEmpty", taken from a parsed
// template so that it carries a tree for error messages.
var orEmptyCmd = func() *parse.CommandNode {
	t := template.Must(template.New("").Funcs(TemplateFuncs).Parse("{{ . | orEmpty }}"))
	return t.Tree.Root.Nodes[0].(*parse.ActionNode).Pipe.Cmds[1]
}()

// renderMissingEmpty makes every printing action end in orEmpty, so that a
// missing value renders as nothing. text/template prints "<no value>" for a
// missing key of a map[string]any — the type of every JSON object — and
// missingkey=zero does not change that, because the zero value of an
// interface is nil. Actions that declare or assign variables print nothing
// and are left alone.
func renderMissingEmpty(n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n != nil {
			for _, c := range n.Nodes {
				renderMissingEmpty(c)
			}
		}
	case *parse.ActionNode:
		if len(n.Pipe.Decl) == 0 {
			n.Pipe.Cmds = append(n.Pipe.Cmds, orEmptyCmd)
		}
	case *parse.IfNode:
		renderMissingEmpty(n.List)
		renderMissingEmpty(n.ElseList)
	case *parse.RangeNode:
		renderMissingEmpty(n.List)
		renderMissingEmpty(n.ElseList)
	case *parse.WithNode:
		renderMissingEmpty(n.List)
		renderMissingEmpty(n.ElseList)
	}
}

var templateErrLine = regexp.MustCompile(`^template: t:(\d+):(?:\d+:)? ?(.*)$`)

// templateError reports a text/template parse error. In a literal block
// scalar (|) the template's lines are the file's, so the error gets the
// file line; in any other scalar, escapes and folding break that
// correspondence, so it gets the scalar's position and names the
// template's own line.
func (d *decoder) templateError(n *yaml.Node, field string, err error) {
	msg := err.Error()
	line, col := n.Line, n.Column
	if m := templateErrLine.FindStringSubmatch(msg); m != nil {
		tl, _ := strconv.Atoi(m[1])
		msg = m[2]
		switch {
		case n.Style&yaml.LiteralStyle != 0 && line+tl <= len(d.fileLines()):
			line, col = line+tl, d.lineStart(line+tl)
		case tl > 1:
			msg = fmt.Sprintf("line %d of the template: %s", tl, msg)
		}
	}
	d.errs = append(d.errs, &Error{Pos: Pos{File: d.file, Line: line, Col: col}, Msg: d.prefix + field + ": bad template: " + msg})
}

// JSONTemplate is a JSON document whose string leaves may be templates. It
// renders leaf by leaf, so a request value that holds quotes or newlines
// is always escaped and the body stays valid JSON. A leaf that is exactly
// one action is typed: it writes its value's JSON (a number, an object,
// null) rather than its text. It is immutable and safe for concurrent use.
type JSONTemplate struct {
	root jsonNode
}

type jsonNode struct {
	literal []byte             // pre-encoded value, when no template is inside
	tmpl    *template.Template // a string leaf that is a template
	typed   bool               // tmpl is one action ending in jsonLeaf: its output is JSON
	field   string             // where tmpl is, from the body: ".amount", "[0].id"
	object  bool
	keys    [][]byte // encoded member names of an object
	kids    []jsonNode
}

// LeafError is a string of a JSON template that failed to render.
type LeafError struct {
	// Field is the leaf's path from the body, as in ".amount" or
	// "[0].id"; empty for a body that is one string.
	Field string
	Err   error
}

func (e *LeafError) Error() string { return "body" + e.Field + ": " + e.Err.Error() }

func (e *LeafError) Unwrap() error { return e.Err }

// Execute renders the document with data into buf. A string leaf renders
// into a buffer of its own before it is escaped; when buf's owner bounds
// it, limit is the most buf may still take (negative for no limit), so
// that a leaf stops rendering with ErrOutputLimit once it alone would not
// fit. A leaf that fails gives a *LeafError.
func (t *JSONTemplate) Execute(buf *bytes.Buffer, data any, limit int) error {
	return t.root.execute(buf, data, limit)
}

// leafBuffer holds a rendered string leaf, up to max bytes.
type leafBuffer struct {
	strings.Builder
	max int
}

func (b *leafBuffer) Write(p []byte) (int, error) {
	if b.max >= 0 && b.Len()+len(p) > b.max {
		return 0, ErrOutputLimit
	}
	return b.Builder.Write(p)
}

var _ io.Writer = (*leafBuffer)(nil)

func (n *jsonNode) execute(buf *bytes.Buffer, data any, limit int) error {
	switch {
	case n.literal != nil:
		buf.Write(n.literal)
	case n.typed:
		if err := n.tmpl.Execute(buf, data); err != nil {
			return &LeafError{Field: n.field, Err: err}
		}
	case n.tmpl != nil:
		s := leafBuffer{max: -1}
		if limit >= 0 {
			s.max = max(limit-buf.Len(), 0)
		}
		if err := n.tmpl.Execute(&s, data); err != nil {
			return &LeafError{Field: n.field, Err: err}
		}
		writeJSONString(buf, s.String())
	case n.object:
		buf.WriteByte('{')
		for i := range n.kids {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.Write(n.keys[i])
			buf.WriteByte(':')
			if err := n.kids[i].execute(buf, data, limit); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		buf.WriteByte('[')
		for i := range n.kids {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := n.kids[i].execute(buf, data, limit); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	}
	return nil
}

// jsonTemplate builds a JSONTemplate from a mapping or list node.
func (d *decoder) jsonTemplate(n *yaml.Node, field string) (*JSONTemplate, bool) {
	root, ok := d.jsonTemplateNode(n, field, len(field), 0)
	if !ok {
		return nil, false
	}
	return &JSONTemplate{root: root}, true
}

// jsonTemplateNode builds the node for n at field; field[rel:] is its
// path from the body.
func (d *decoder) jsonTemplateNode(n *yaml.Node, field string, rel, depth int) (jsonNode, bool) {
	if depth > maxDepth {
		d.fail(n, field, "nested more than %d levels deep", maxDepth)
		return jsonNode{}, false
	}
	d.budget--
	if d.budget < 0 {
		return jsonNode{}, false
	}
	n = d.resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		out := jsonNode{object: true}
		for _, p := range d.pairsDepth(n, field, 0) {
			var key bytes.Buffer
			writeJSONString(&key, p.key.Value)
			kid, ok := d.jsonTemplateNode(p.val, join(field, p.key.Value), rel, depth+1)
			if !ok {
				return jsonNode{}, false
			}
			out.keys = append(out.keys, key.Bytes())
			out.kids = append(out.kids, kid)
		}
		return out, true
	case yaml.SequenceNode:
		out := jsonNode{}
		for i, e := range n.Content {
			kid, ok := d.jsonTemplateNode(e, field+"["+strconv.Itoa(i)+"]", rel, depth+1)
			if !ok {
				return jsonNode{}, false
			}
			out.kids = append(out.kids, kid)
		}
		return out, true
	case yaml.ScalarNode:
		if n.ShortTag() == "!!str" && strings.Contains(n.Value, "{{") {
			t, err := parseTemplate(n.Value)
			if err != nil {
				d.templateError(n, field, err)
				return jsonNode{}, false
			}
			return jsonNode{tmpl: t, typed: makeTyped(t), field: field[rel:]}, true
		}
		var buf bytes.Buffer
		if !d.encodeScalar(&buf, n, field) {
			return jsonNode{}, false
		}
		return jsonNode{literal: buf.Bytes()}, true
	}
	d.fail(n, field, "cannot be encoded as JSON")
	return jsonNode{}, false
}

// Templates returns the templates of the document's string leaves, in
// document order, for callers that inspect what a body reads.
func (t *JSONTemplate) Templates() []*template.Template {
	var out []*template.Template
	var walk func(n *jsonNode)
	walk = func(n *jsonNode) {
		if n.tmpl != nil {
			out = append(out, n.tmpl)
		}
		for i := range n.kids {
			walk(&n.kids[i])
		}
	}
	walk(&t.root)
	return out
}

// textOf is v as text: "" for nothing (a missing field), a string as it
// is, anything else as fmt prints it.
func textOf(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	return fmt.Sprint(v)
}
