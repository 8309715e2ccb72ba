package openapi

import (
	"encoding/base64"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// Dynamic answers are Prism's dynamic mode (prism mock -d, which draws
// with json-schema-faker): each answer is drawn afresh from its schema,
// where a static answer is the example, the fixture or the same values
// every time. A document's dynamic: true (or serve --dynamic) makes every
// answer dynamic; a request's Prefer: dynamic=true or dynamic=false (or
// __dynamic=) says so for itself. Examples and fixtures are not used, as
// Prism ignores them under -d, except that Prefer: example= still names
// the example to answer (Prism's first choice too). What happens to the
// drawn value after is what happens to a static one: the request's values
// are reflected, the path's id goes into id, and a create stores it.
//
// The draws come from Exchange.Rand, which serve --seed seeds, so that
// the same requests in the same order get the same answers.

// maxDynamicDraws bounds the draws of one dynamic answer: a drawn value
// that its schema refuses (a oneOf whose branches overlap, so that a
// value fits two; an allOf whose parts bound one property twice; a
// pattern Go's regexp reads differently) is drawn again, and after
// maxDynamicDraws the static answer is given instead.
const maxDynamicDraws = 4

// preferDynamic reads Prism's per-request dynamic choice: Prefer:
// dynamic=true or dynamic=false, or the __dynamic query parameter; said
// is false when the request does not say.
func preferDynamic(r *http.Request, q url.Values) (on, said bool) {
	for _, v := range r.Header["Prefer"] {
		for _, part := range strings.Split(v, ",") {
			part, _, _ = strings.Cut(part, ";")
			k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
			if strings.EqualFold(strings.TrimSpace(k), "dynamic") {
				b, err := strconv.ParseBool(strings.Trim(val, `" `))
				if err == nil {
					return b, true // of one given twice only the first counts (RFC 7240)
				}
			}
		}
	}
	if d := q.Get("__dynamic"); d != "" {
		if b, err := strconv.ParseBool(d); err == nil {
			return b, true
		}
	}
	return false, false
}

// dynamic says whether the answer to r is drawn (dynamic mode): as the
// request prefers, else as the document's dynamic: setting says.
func (o *Operation) dynamic(r *http.Request) bool {
	if r != nil && (header(r, "Prefer") != "" || strings.Contains(r.URL.RawQuery, "__dynamic")) {
		if on, said := preferDynamic(r, r.URL.Query()); said {
			return on
		}
	}
	return o.api.dynamic
}

// drawAnswer draws the value of a dynamic answer from schema, the schema
// of the media type name of resp, the response for status. A draw its
// schema refuses, as an answer is checked (CheckAnswer's body check), is
// drawn again; ok is false when none of maxDynamicDraws fits, and the
// caller answers the static value.
func (o *Operation) drawAnswer(r *http.Request, resp *v3.Response, status int, name string, schema *base.Schema, rnd func() float64) (v any, ok bool) {
	rnd = randOr(rnd)
	h := http.Header{"Content-Type": {name}}
	for range maxDynamicDraws {
		v = faker{api: o.api, rnd: rnd}.value(schema, 0)
		b, err := marshal(v)
		if err != nil {
			continue
		}
		if vs := o.answerContent(r, resp, status, h, b); len(vs) == 0 || uncheckable(vs) {
			return v, true
		}
	}
	return nil, false
}

// randOr is rnd, or math/rand's own source when there is none.
func randOr(rnd func() float64) func() float64 {
	if rnd == nil {
		return rand.Float64
	}
	return rnd
}

// uncheckable says whether vs say that the schema itself could not be
// compiled to check the answer (an ECMA pattern such as a lookahead,
// which Go's regexp, and so libopenapi-validator, does not read): the
// draw is answered unchecked, as a static answer is.
func uncheckable(vs []Violation) bool {
	return len(vs) == 1 && strings.Contains(vs[0].Detail, "failed schema compilation")
}

// faker draws values from schemas, as json-schema-faker does for Prism:
// formats, bounds, lengths and enums kept, optional properties present
// half the time, arrays of minItems to maxItems items, an alternative of
// oneOf and anyOf picked at random. A faker is used for one answer: its
// first value call sets the budget the answer's values share (as
// generator's).
type faker struct {
	api  *api
	rnd  func() float64
	left *int // values the answer may still make; set by the first call
	hops int  // allOf, anyOf and oneOf followed since the last level
	// extending: the schema is an allOf member or the subtype its
	// discriminator picked (see generator.extending).
	extending bool
	// require are the properties an enclosing allOf requires, which one
	// of its parts may declare without requiring them itself.
	require []string
}

// nullChance is how often a value that may be null is. maxDeeper is how
// many levels past maxDepth a draw goes to make what is required there
// (and no more: a value that may be null is null, an alternative is a
// plain one where there is one, a list is as short as allowed).
const (
	nullChance = 0.2
	maxDeeper  = 4
)

// intn draws an integer in [0, n).
func (f faker) intn(n int) int {
	if n <= 1 {
		return 0
	}
	return min(int(f.rnd()*float64(n)), n-1)
}

func (f faker) value(s *base.Schema, depth int) any {
	if f.left == nil {
		n := maxGenerated
		f.left = &n
	}
	if s == nil || *f.left <= 0 || f.hops > maxHops {
		return nil
	}
	*f.left--
	composed, nested := f, f
	composed.hops++
	nested.hops, nested.require = 0, nil
	if s.Const != nil {
		return nodeValue(s.Const)
	}
	if len(s.Enum) > 0 {
		return nodeValue(s.Enum[f.intn(len(s.Enum))])
	}
	// Null where the schema says so beside a type (3.0's nullable, 3.1's
	// "null" among the types): a nullable on an anyOf alone is not null
	// to every validator (see excuse).
	deep := depth >= maxDepth
	if (s.Nullable != nil && *s.Nullable && (len(s.Type) > 0 || len(s.AllOf) > 0) || hasType(s, "null")) && (deep || f.rnd() < nullChance) {
		return nil // past maxDepth, null ends what may end there
	}
	if depth >= maxDepth+maxDeeper {
		return nil
	}
	if !f.extending {
		if sub, name := f.subtype(s); sub != nil {
			ext := composed
			ext.extending = true
			v := ext.value(sub, depth)
			if obj, ok := v.(map[string]any); ok {
				obj[s.Discriminator.PropertyName] = name
			}
			return v
		}
	}
	f.extending, composed.extending, nested.extending = false, false, false
	if len(s.AllOf) > 0 {
		merged := map[string]any{}
		ext := composed
		ext.extending = true
		ext.require = append(slices.Clip(f.require), requiredOf(s, 0)...)
		var other any
		for _, p := range s.AllOf {
			switch v := ext.value(p.Schema(), depth).(type) {
			case map[string]any:
				for k, e := range v {
					merged[k] = e
				}
			case nil:
			default:
				other = v // allOf of plain values: the last one drawn
			}
		}
		if len(merged) == 0 && other != nil {
			return other
		}
		return f.object(s, depth, merged)
	}
	for _, alts := range [][]*base.SchemaProxy{s.OneOf, s.AnyOf} {
		if len(alts) == 0 {
			continue
		}
		p := alts[f.intn(len(alts))]
		if deep {
			// Past maxDepth a plain alternative, where there is one:
			// Stripe's expandable fields are an id or the object.
			for _, alt := range alts {
				if scalar(alt.Schema()) {
					p = alt
					break
				}
			}
		}
		v := composed.value(p.Schema(), depth)
		if obj, ok := v.(map[string]any); ok && s.Discriminator != nil && s.Discriminator.PropertyName != "" {
			if name := discriminatorValue(s, p); name != "" {
				obj[s.Discriminator.PropertyName] = name
			}
		}
		return v
	}
	var types []string
	for _, t := range s.Type {
		if t != "null" {
			types = append(types, t)
		}
	}
	typ := ""
	if len(types) > 0 {
		typ = types[f.intn(len(types))]
	} else if s.Properties != nil {
		typ = "object"
	}
	switch typ {
	case "object":
		return f.object(s, depth, map[string]any{})
	case "array":
		return f.array(s, depth)
	case "integer":
		if s.Format == "unix-time" && s.Minimum == nil && s.Maximum == nil { // Stripe's times, within ten years of epoch
			return epoch.Unix() + int64(f.intn(10*365*24*3600))
		}
		return f.number(s, true)
	case "number":
		return f.number(s, false)
	case "boolean":
		return f.rnd() < 0.5
	case "string":
		return f.str(s)
	}
	return nil
}

// subtype is api.subtype with the subtype drawn from the mapping.
func (f faker) subtype(s *base.Schema) (*base.Schema, string) {
	if s.Discriminator == nil || s.Discriminator.PropertyName == "" || s.Discriminator.Mapping == nil || len(s.OneOf)+len(s.AnyOf) > 0 {
		return nil, ""
	}
	n := s.Discriminator.Mapping.Len()
	if n == 0 {
		return nil, ""
	}
	i, pick := f.intn(n), s.Discriminator.Mapping.First()
	for ; i > 0 && pick.Next() != nil; i-- {
		pick = pick.Next()
	}
	if sub := f.api.component(pick.Value()); sub != nil && sub != s {
		return sub, pick.Key()
	}
	return f.api.subtype(s)
}

// discriminatorValue is the value of s's discriminator property that
// names the alternative p: its mapping's key for p's $ref, else (without
// a mapping) the name of the component p refers to; "" when neither says.
func discriminatorValue(s *base.Schema, p *base.SchemaProxy) string {
	if !p.IsReference() {
		return ""
	}
	ref := p.GetReference()
	name := ref[strings.LastIndex(ref, "/")+1:]
	if m := s.Discriminator.Mapping; m != nil && m.Len() > 0 {
		for e := m.First(); e != nil; e = e.Next() {
			v := e.Value()
			if v == ref || v == name || v[strings.LastIndex(v, "/")+1:] == name {
				return e.Key()
			}
		}
		return ""
	}
	return name
}

// object draws the properties of s into obj: the required ones always
// (never a writeOnly one: an answer does not carry it), the others half
// the time, more of them when minProperties asks, and values for
// additionalProperties of a map that declares none.
func (f faker) object(s *base.Schema, depth int, obj map[string]any) any {
	nested := f
	nested.hops, nested.require, nested.extending = 0, nil, false
	required := append(slices.Clip(s.Required), f.require...)
	var skipped []string
	if s.Properties != nil {
		for p := s.Properties.First(); p != nil && *f.left > 0; p = p.Next() {
			*f.left--
			ps := p.Value().Schema()
			isRequired := slices.Contains(required, p.Key())
			if writeOnly(ps) {
				continue
			}
			if _, done := obj[p.Key()]; done && !isRequired {
				continue // an allOf part drew it
			}
			// Past maxDepth only what is required, so that a draw ends.
			if !isRequired && (depth >= maxDepth || f.rnd() < 0.5) {
				skipped = append(skipped, p.Key())
				continue
			}
			obj[p.Key()] = nested.value(ps, depth+1)
		}
	}
	if s.MinProperties != nil && depth < maxDepth {
		for _, k := range skipped {
			if int64(len(obj)) >= *s.MinProperties {
				break
			}
			ps, _ := s.Properties.Get(k)
			obj[k] = nested.value(ps.Schema(), depth+1)
		}
	}
	if ap := s.AdditionalProperties; ap != nil && ap.IsA() && ap.A != nil && (s.Properties == nil || s.Properties.Len() == 0) && depth < maxDepth {
		n := f.intn(3)
		if s.MinProperties != nil {
			n = max(n, int(min(*s.MinProperties, 16)))
		}
		if s.MaxProperties != nil {
			n = min(n, int(*s.MaxProperties))
		}
		for i := range n {
			obj[fmt.Sprintf("%s%d", words[f.intn(len(words))], i+1)] = nested.value(ap.A.Schema(), depth+1)
		}
	}
	listed(obj)
	return obj
}

// array draws minItems to maxItems items (up to four more than
// minItems, one to four when neither is given), distinct ones when
// uniqueItems says so.
func (f faker) array(s *base.Schema, depth int) any {
	if s.Items == nil || s.Items.A == nil || depth >= maxDepth && (s.MinItems == nil || *s.MinItems <= 0) {
		return []any{}
	}
	lo, hi := int64(0), int64(-1)
	if s.MinItems != nil {
		lo = max(*s.MinItems, 0)
	}
	if s.MaxItems != nil {
		hi = *s.MaxItems
	}
	if lo > 64 {
		return generator{api: f.api}.value(s, depth) // as the static answer
	}
	if hi < 0 || hi > lo+4 {
		hi = lo + 4
	}
	if s.MinItems == nil && hi >= 1 {
		lo = 1
	}
	if hi < lo || depth >= maxDepth {
		hi = lo // past maxDepth as few as allowed
	}
	n := int(lo) + f.intn(int(hi-lo)+1)
	nested := f
	nested.hops, nested.require, nested.extending = 0, nil, false
	items := s.Items.A.Schema()
	out := make([]any, 0, n)
	unique := s.UniqueItems != nil && *s.UniqueItems
	var seen map[string]bool
	if unique {
		seen = map[string]bool{}
	}
	for tries := 0; len(out) < n && tries < 4*n && *f.left > 0; tries++ {
		v := nested.value(items, depth+1)
		if unique {
			b, _ := marshal(v)
			if seen[string(b)] {
				continue
			}
			seen[string(b)] = true
		}
		out = append(out, v)
	}
	return out
}

// bounds are the limits a numeric schema sets: minimum and maximum, or
// the exclusive ones (3.1's numbers, or 3.0's flags on the others).
func bounds(s *base.Schema) (lo float64, loEx bool, hi float64, hiEx bool) {
	lo, hi = math.Inf(-1), math.Inf(1)
	if s.Minimum != nil {
		lo = *s.Minimum
	}
	if em := s.ExclusiveMinimum; em != nil {
		if em.IsA() {
			loEx = em.A && s.Minimum != nil // 3.0: a flag on minimum
		} else if em.B >= lo {
			lo, loEx = em.B, true
		}
	}
	if s.Maximum != nil {
		hi = *s.Maximum
	}
	if em := s.ExclusiveMaximum; em != nil {
		if em.IsA() {
			hiEx = em.A && s.Maximum != nil
		} else if em.B <= hi {
			hi, hiEx = em.B, true
		}
	}
	return lo, loEx, hi, hiEx
}

// maxDrawn bounds the numbers drawn, where a schema leaves them open or
// allows more than a float64 counts exactly.
const maxDrawn = 1 << 53

// number draws a number its bounds and multipleOf allow: from a range of
// a thousand where a bound is open, to two decimals for a number; the
// static value (number) when the bounds leave none to draw.
func (f faker) number(s *base.Schema, integer bool) any {
	static := func() any {
		if integer {
			return int64(number(s, true))
		}
		return number(s, false)
	}
	lo, loEx, hi, hiEx := bounds(s)
	switch {
	case math.IsInf(lo, 0) && math.IsInf(hi, 0):
		lo, hi = 0, 1000
	case math.IsInf(lo, 0):
		lo = min(0, hi-1000)
	case math.IsInf(hi, 0):
		hi = max(1000, lo+1000)
	}
	lo, hi = max(lo, -maxDrawn), min(hi, maxDrawn)
	above := func(n float64) bool { return n > lo || !loEx && n == lo }
	below := func(n float64) bool { return n < hi || !hiEx && n == hi }
	if m := s.MultipleOf; m != nil && *m > 0 {
		kLo, kHi := math.Ceil(lo / *m), math.Floor(hi / *m)
		if !above(kLo * *m) {
			kLo++
		}
		if !below(kHi * *m) {
			kHi--
		}
		if kLo > kHi || kHi-kLo > maxDrawn {
			return static()
		}
		k := kLo + math.Floor(f.rnd()*(kHi-kLo+1))
		v := roundLike(math.Min(k, kHi)**m, *m)
		if !above(v) || !below(v) || integer && v != math.Trunc(v) {
			return static()
		}
		if integer {
			return int64(v)
		}
		return v
	}
	if integer {
		if loEx && lo == math.Floor(lo) {
			lo++
		}
		if hiEx && hi == math.Floor(hi) {
			hi--
		}
		lo, hi = math.Ceil(lo), math.Floor(hi)
		if lo > hi {
			return static()
		}
		return int64(lo + math.Min(math.Floor(f.rnd()*(hi-lo+1)), hi-lo))
	}
	v := math.Round((lo+f.rnd()*(hi-lo))*100) / 100
	if !above(v) || !below(v) {
		v = lo + (hi-lo)/2
	}
	if !above(v) || !below(v) {
		return static()
	}
	return v
}

// roundLike rounds v to the decimals of m, so that a multiple of 0.1 is
// 0.3, not 0.30000000000000004.
func roundLike(v, m float64) float64 {
	fm := strconv.FormatFloat(m, 'f', -1, 64)
	i := strings.IndexByte(fm, '.')
	if i < 0 {
		return math.Round(v)
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', len(fm)-i-1, 64), 64)
	return r
}

// words are what drawn strings are made of.
var words = []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"}

// str draws a string: by its format, else from its pattern, else words
// within minLength and maxLength.
func (f faker) str(s *base.Schema) any {
	if v, ok := f.formatted(s.Format); ok {
		return v
	}
	if s.Pattern != "" {
		return f.patterned(s)
	}
	lo, hi := int64(0), int64(-1)
	if s.MinLength != nil {
		lo = max(*s.MinLength, 0)
	}
	if s.MaxLength != nil {
		hi = *s.MaxLength
	}
	if lo > 4096 {
		return placeholderString(s)
	}
	if s.MinLength == nil {
		lo = 3
	}
	if hi < 0 || hi > lo+24 {
		hi = lo + 24
	}
	lo = min(lo, hi)
	n := int(lo) + f.intn(int(hi-lo)+1)
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[f.intn(len(words))])
	}
	out := []byte(b.String()[:n])
	if n > 0 && out[n-1] == ' ' {
		out[n-1] = 'x' // a string that ends in a space reads as cut short
	}
	return string(out)
}

// epoch is where drawn times start; they fall within ten years of it.
var epoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// formatted draws a string of a format (or Stripe's unix-time, an
// integer); ok is false for a format it does not know.
func (f faker) formatted(format string) (any, bool) {
	t := epoch.Add(time.Duration(f.rnd()*10*365*24) * time.Hour).Add(time.Duration(f.intn(3600)) * time.Second)
	word := func() string { return words[f.intn(len(words))] }
	switch format {
	case "date-time":
		return t.Format(time.RFC3339), true
	case "date":
		return t.Format(time.DateOnly), true
	case "time":
		return t.Format("15:04:05Z"), true
	case "email":
		return fmt.Sprintf("%s.%s%d@example.com", word(), word(), f.intn(100)), true
	case "uuid":
		return randomUUID(f.rnd), true
	case "uri", "url":
		return fmt.Sprintf("https://%s.example.com/%s/%d", word(), word(), f.intn(1000)), true
	case "uri-reference":
		return fmt.Sprintf("/%s/%d", word(), f.intn(1000)), true
	case "hostname":
		return fmt.Sprintf("%s%d.example.com", word(), f.intn(100)), true
	case "ipv4":
		return fmt.Sprintf("%d.%d.%d.%d", 1+f.intn(223), f.intn(256), f.intn(256), 1+f.intn(254)), true
	case "ipv6":
		g := make([]string, 8)
		for i := range g {
			g[i] = strconv.FormatInt(int64(f.intn(1<<16)), 16)
		}
		return strings.Join(g, ":"), true
	case "byte":
		b := make([]byte, 4+f.intn(12))
		for i := range b {
			b[i] = byte(f.intn(256))
		}
		return base64.StdEncoding.EncodeToString(b), true
	case "duration":
		return fmt.Sprintf("P%dD", 1+f.intn(30)), true
	case "unix-time":
		return t.Unix(), true
	}
	return nil, false
}

// patterned draws a string that s's pattern matches, within its lengths;
// where Go's regexp does not read the pattern (an ECMA lookahead) or no
// draw fits, the schema's example, else the static value.
func (f faker) patterned(s *base.Schema) any {
	if re, err := syntax.Parse(s.Pattern, syntax.Perl); err == nil {
		if p, err := regexp.Compile(s.Pattern); err == nil {
			re = re.Simplify()
			for range 4 {
				var b strings.Builder
				budget := maxDrawSteps
				drawRegexp(&b, re, f.rnd, 1+f.intn(8), &budget)
				v := b.String()
				n := int64(utf8.RuneCountInString(v)) // JSON Schema counts characters
				if p.MatchString(v) && (s.MinLength == nil || n >= *s.MinLength) && (s.MaxLength == nil || n <= *s.MaxLength) {
					return v
				}
			}
		}
	}
	if len(s.Examples) > 0 {
		return nodeValue(s.Examples[0])
	}
	if s.Example != nil {
		return nodeValue(s.Example)
	}
	if s.Default != nil {
		return nodeValue(s.Default)
	}
	return generator{api: f.api}.value(s, 0)
}
