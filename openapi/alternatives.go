package openapi

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pb33f/jsonschema/v6"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
	"github.com/pb33f/libopenapi/datamodel/high/base"
)

// A value that fails a oneOf or anyOf fails every one of its
// alternatives, and the validator reports each alternative's failures: a
// cat with 12 lives was told it lacks a dog's goodBoy, is not a dog, lacks
// a fish's fins and is not a fish, beside the one thing wrong with it. A
// refusal names the failures of the closest alternative only, and which
// it is: the one with the fewest failures among those whose const or enum
// properties (a kind: cat) the value does not contradict, the first of
// equals, unless a discriminator names one. Nested alternatives are narrowed the same way, inside out.

// closest returns the failures of f to show: those of each oneOf's and
// anyOf's closest alternative and those outside any, in f's order, with
// the note that says which alternative, by failure (nil when f has no
// alternatives to choose among).
func closest(f []*liberrors.SchemaValidationFailure, prefer func(keyword, instance string) (int, string)) ([]*liberrors.SchemaValidationFailure, map[*liberrors.SchemaValidationFailure]string) {
	if len(f) < 2 || f[0].OriginalJsonSchemaError == nil {
		return f, nil
	}
	p := pruner{prefer: prefer}
	kept := p.walk(*f[0].OriginalJsonSchemaError.DetailedOutput())
	if !p.chose {
		return f, nil
	}
	notes := make(map[string]string, len(kept))
	for _, l := range kept {
		notes[l.key] = l.note
	}
	var out []*liberrors.SchemaValidationFailure
	noted := map[*liberrors.SchemaValidationFailure]string{}
	for _, x := range f {
		note, ok := notes[x.KeywordLocation+"\x00"+strings.Join(x.InstancePath, "\x00")]
		if !ok && p.dropped[x.KeywordLocation] {
			continue // an alternative not chosen
		}
		if note != "" {
			noted[x] = note
		}
		out = append(out, x)
	}
	if len(out) == 0 {
		return f, nil // matched none of the output: show it all
	}
	return out, noted
}

// pruner walks a validator's detailed output, keeping the failures of
// each alternation's closest alternative.
type pruner struct {
	// prefer, when set, names the alternative a discriminator picks.
	prefer func(keyword, instance string) (int, string)
	// schema, when set, is the schema validated against, whose $refs
	// name alternatives the output does not (refName): the validator
	// compiles an answer's schema with its $refs inlined.
	schema *base.Schema
	chose  bool
	// dropped holds the keyword locations of failures not shown.
	dropped map[string]bool
}

// leaf is a failure kept: its keyword and instance locations, and the
// note naming the alternatives it was chosen in, outermost first.
type leaf struct {
	key, keyword, note string
	instance           []string
	message            string
}

func (p *pruner) walk(u jsonschema.OutputUnit) []leaf {
	if branches := alternation(u); branches != nil {
		return p.choose(u, branches)
	}
	var out []leaf
	if u.Error != nil && len(u.Errors) == 0 {
		inst := helpers.ConvertStringLocationToPathSegments(u.InstanceLocation)
		out = append(out, leaf{key: u.KeywordLocation + "\x00" + strings.Join(inst, "\x00"), keyword: u.KeywordLocation, instance: inst, message: u.Error.String()})
	}
	for _, c := range u.Errors {
		out = append(out, p.walk(c)...)
	}
	return out
}

// alternation returns the alternative index of each of u's children when
// u is a oneOf or anyOf that failed in two or more of them, else nil.
func alternation(u jsonschema.OutputUnit) []int {
	kw := path.Base(u.KeywordLocation)
	if kw != "oneOf" && kw != "anyOf" || len(u.Errors) < 2 {
		return nil
	}
	out := make([]int, len(u.Errors))
	for i, c := range u.Errors {
		rest, ok := strings.CutPrefix(c.KeywordLocation, u.KeywordLocation+"/")
		if !ok {
			return nil
		}
		n, err := strconv.Atoi(strings.SplitN(rest, "/", 2)[0])
		if err != nil {
			return nil
		}
		out[i] = n
	}
	return out
}

// choose keeps the failures of u's closest alternative.
func (p *pruner) choose(u jsonschema.OutputUnit, branches []int) []leaf {
	p.chose = true
	at := helpers.ConvertStringLocationToPathSegments(u.InstanceLocation)
	best, tied := -1, false
	var bestScore [2]int
	kept := make([][]leaf, len(u.Errors))
	for i, c := range u.Errors {
		kept[i] = p.walk(c)
		s := score(kept[i], at)
		switch {
		case best < 0 || s[0] < bestScore[0] || s[0] == bestScore[0] && s[1] < bestScore[1]:
			best, bestScore, tied = i, s, false
		case s == bestScore:
			tied = true
		}
	}
	names := make([]string, len(u.Errors))
	for i, c := range u.Errors {
		names[i] = alternativeName(u.KeywordLocation, branches[i], c)
		if p.schema != nil && names[i] == fmt.Sprintf("alternative %d", branches[i]+1) {
			if n := refName(p.schema, u.KeywordLocation, branches[i]); n != "" {
				names[i] = n
			}
		}
	}
	kw := path.Base(u.KeywordLocation)
	why := "the closest of"
	if tied {
		why = "the first of the equally close"
	}
	if p.prefer != nil {
		if n, because := p.prefer(u.KeywordLocation, u.InstanceLocation); n >= 0 {
			if i := slices.Index(branches, n); i >= 0 {
				best, why = i, because
			}
		}
	}
	note := fmt.Sprintf("as %s, %s %s %s", names[best], why, kw, strings.Join(names, ", "))
	if p.dropped == nil {
		p.dropped = map[string]bool{}
	}
	for i := range u.Errors {
		if i == best {
			continue
		}
		for _, l := range kept[i] {
			p.dropped[l.keyword] = true
		}
	}
	out := kept[best]
	for i := range out {
		if out[i].note == "" {
			out[i].note = note
		} else {
			out[i].note = note + "; " + out[i].note
		}
	}
	return out
}

// score ranks an alternative's failures for a value at instance location
// at, lower better: first whether the value is of another kind (its
// type, const or enum, or a property's const or enum, says it is not this
// alternative: Stripe's anyOf of an object and "" given "abc" is wrong as
// either, and is told so as the first), then how many things are wrong (each missing property
// counts).
func score(ls []leaf, at []string) [2]int {
	var s [2]int
	for _, l := range ls {
		kw := path.Base(l.keyword)
		switch {
		case (kw == "const" || kw == "enum") && len(l.instance) <= len(at)+1,
			kw == "type" && len(l.instance) == len(at):
			s[0] = 1
		}
		if m := quotedNames.FindAllString(l.message, -1); strings.HasPrefix(l.message, "missing propert") && len(m) > 0 {
			s[1] += len(m)
		} else {
			s[1]++
		}
	}
	return s
}

var quotedNames = regexp.MustCompile(`'[^']*'`)

// alternativeName names alternative n of the oneOf or anyOf at keyword
// location kw from its output c: the name of the schema it refers to
// (Cat for #/components/schemas/Cat), else "alternative n+1".
func alternativeName(kw string, n int, c jsonschema.OutputUnit) string {
	rest := strings.TrimPrefix(c.KeywordLocation, fmt.Sprintf("%s/%d", kw, n))
	if after, ok := strings.CutPrefix(rest, "/$ref"); ok {
		if target, ok := strings.CutSuffix(c.AbsoluteKeywordLocation, after); ok {
			if _, frag, ok := strings.Cut(target, "#"); ok && frag != "" {
				return strings.ReplaceAll(strings.ReplaceAll(path.Base(frag), "~1", "/"), "~0", "~")
			}
		}
	}
	return fmt.Sprintf("alternative %d", n+1)
}

// refName names alternative n of the oneOf or anyOf at keyword location
// kw within s by the schema its $ref names (Cat for
// #/components/schemas/Cat), "" when it has none or kw leads where
// refName does not follow (through properties, items and
// allOf/anyOf/oneOf branches).
func refName(s *base.Schema, kw string, n int) string {
	segs := strings.Split(strings.TrimPrefix(kw, "/"), "/")
	if len(segs) == 0 {
		return ""
	}
	group := segs[len(segs)-1]
	for i := 0; i < len(segs)-1 && s != nil; i++ {
		var next *base.SchemaProxy
		switch seg := segs[i]; seg {
		case "properties":
			if i++; i < len(segs) && s.Properties != nil {
				next = s.Properties.GetOrZero(strings.ReplaceAll(strings.ReplaceAll(segs[i], "~1", "/"), "~0", "~"))
			}
		case "items":
			if s.Items != nil && s.Items.IsA() {
				next = s.Items.A
			}
		case "allOf", "anyOf", "oneOf":
			i++
			if i < len(segs) {
				if k, err := strconv.Atoi(segs[i]); err == nil {
					next = alternativeOf(s, seg, k)
				}
			}
		}
		if next == nil {
			return ""
		}
		s = next.Schema()
	}
	if s == nil {
		return ""
	}
	if sp := alternativeOf(s, group, n); sp != nil && sp.IsReference() {
		ref := sp.GetReference()
		if _, frag, ok := strings.Cut(ref, "#"); ok && frag != "" {
			ref = frag
		}
		return strings.ReplaceAll(strings.ReplaceAll(path.Base(ref), "~1", "/"), "~0", "~")
	}
	return ""
}

// alternativeOf returns alternative k of s's allOf, anyOf or oneOf (group), nil
// when it has none.
func alternativeOf(s *base.Schema, group string, k int) *base.SchemaProxy {
	var g []*base.SchemaProxy
	switch group {
	case "allOf":
		g = s.AllOf
	case "anyOf":
		g = s.AnyOf
	case "oneOf":
		g = s.OneOf
	}
	if k < 0 || k >= len(g) {
		return nil
	}
	return g[k]
}
