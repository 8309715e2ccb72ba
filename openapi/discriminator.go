package openapi

import (
	"path"
	"strings"

	"github.com/pb33f/libopenapi/datamodel/high/base"
)

// A oneOf (or anyOf) with a discriminator says which branch a value is by
// one of its properties (a menu item's category: beverage or dessert).
// The request's value of that property picks the branch its form fields
// are typed by, and the branch an answer is generated from, so that a
// dessert is not typed, or answered, as the first branch, a beverage.

// discriminated returns the branch of s that v's discriminator property
// names, or nil when s has no discriminator or v does not say. A branch
// that is a oneOf with a discriminator of its own (a cat, which is a
// house cat or a big cat by catKind) is followed to the branch v names
// there, so that a big cat is not typed, or answered, as a house cat.
// With a (nil: oneOf and anyOf only), a base that its subtypes extend
// through allOf is followed to the subtype its mapping names.
func discriminated(s *base.Schema, v any, a *api) *base.Schema {
	var found *base.Schema
	// A bound, for a document whose branches name each other.
	for range maxDiscriminatorDepth {
		b := branch(s, v, a)
		if b == nil {
			break
		}
		found, s = b, b
	}
	return found
}

// maxDiscriminatorDepth bounds how many discriminators discriminated
// follows; no document nests them near so deep.
const maxDiscriminatorDepth = 8

// branch is the branch of s that v's discriminator property names, one
// level down: an alternative of its oneOf or anyOf, or, for a base that
// its subtypes extend through allOf, the subtype its mapping names.
func branch(s *base.Schema, v any, a *api) *base.Schema {
	group, i := branchAt(s, v)
	if group != nil {
		return group[i].Schema()
	}
	if a == nil || s == nil || s.Discriminator == nil || s.Discriminator.Mapping == nil || len(s.OneOf)+len(s.AnyOf) > 0 {
		return nil
	}
	m, _ := v.(map[string]any)
	val, _ := m[s.Discriminator.PropertyName].(string)
	if ref, ok := s.Discriminator.Mapping.Get(val); ok && val != "" {
		return a.component(ref)
	}
	return nil
}

// subtype returns the subtype a base schema is answered as, and the
// value of its discriminator property: the first its mapping names, for a
// base with no oneOf or anyOf (OpenAPI 3.0's allOf inheritance); nil for
// any other schema.
func (a *api) subtype(s *base.Schema) (*base.Schema, string) {
	if s.Discriminator == nil || s.Discriminator.PropertyName == "" || s.Discriminator.Mapping == nil || len(s.OneOf)+len(s.AnyOf) > 0 {
		return nil, ""
	}
	first := s.Discriminator.Mapping.First()
	if first == nil {
		return nil, ""
	}
	if sub := a.component(first.Value()); sub != nil && sub != s {
		return sub, first.Key()
	}
	return nil, ""
}

// component returns the schema a discriminator mapping names: a
// reference to the document's components (#/components/schemas/Cat) or a
// component's bare name (Cat); nil for anything else.
func (a *api) component(ref string) *base.Schema {
	name, ok := strings.CutPrefix(ref, "#/components/schemas/")
	if !ok && strings.ContainsAny(ref, "#/") {
		return nil
	}
	if !ok {
		name = ref
	}
	if a.model == nil || a.model.Components == nil || a.model.Components.Schemas == nil {
		return nil
	}
	p, ok := a.model.Components.Schemas.Get(name)
	if !ok || p == nil {
		return nil
	}
	return p.Schema()
}

// branchAt is branch as its place: s's oneOf or anyOf, and the index in
// it; nil when v's discriminator property names none.
func branchAt(s *base.Schema, v any) ([]*base.SchemaProxy, int) {
	if s == nil || s.Discriminator == nil || s.Discriminator.PropertyName == "" {
		return nil, 0
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, 0
	}
	val, ok := m[s.Discriminator.PropertyName].(string)
	if !ok {
		return nil, 0
	}
	var mapped string // the mapping's reference for val, if any
	if s.Discriminator.Mapping != nil {
		mapped, _ = s.Discriminator.Mapping.Get(val)
	}
	for _, group := range [][]*base.SchemaProxy{s.OneOf, s.AnyOf} {
		for i, p := range group {
			if mapped != "" && p.IsReference() && (p.GetReference() == mapped || path.Base(p.GetReference()) == path.Base(mapped)) {
				return group, i
			}
			if names(propertyOf(p.Schema(), s.Discriminator.PropertyName, 0), val) {
				return group, i
			}
			// Without a mapping, the value is the branch schema's name.
			if mapped == "" && p.IsReference() && path.Base(p.GetReference()) == val {
				return group, i
			}
		}
	}
	return nil, 0
}

// discriminatorPick returns, for a refusal of value v against the body
// schema s (closest, alternatives.go), the alternative of s's own oneOf or
// anyOf that v's discriminator property names, so that a dog missing its
// goodBoy is told so as a Dog, not as the alternative it is nearest by
// count. It answers -1 for any other alternation, else the index and why, or when v does not say.
func discriminatorPick(s *base.Schema, v any) func(keyword, instance string) (int, string) {
	group, i := branchAt(s, v)
	if group == nil {
		return nil
	}
	kw := "/oneOf"
	if len(s.OneOf) == 0 || &group[0] != &s.OneOf[0] {
		kw = "/anyOf"
	}
	why := "which " + s.Discriminator.PropertyName + " names, of"
	return func(keyword, instance string) (int, string) {
		if instance != "" || strings.ReplaceAll(keyword, "/$ref", "") != kw {
			return -1, ""
		}
		return i, why
	}
}

// names says whether a property's schema admits only val, by const or a
// one-value enum.
func names(s *base.Schema, val string) bool {
	if s == nil {
		return false
	}
	if s.Const != nil {
		return s.Const.Value == val
	}
	return len(s.Enum) == 1 && s.Enum[0] != nil && s.Enum[0].Value == val
}

// constBranch is the alternative of s's oneOf or anyOf (one level down)
// that patch, a route's body, names and v, the answer made so far (an
// example, a fixture, the first alternative's values), is not: the first,
// in the document's order, whose own property admits only the value patch
// gives it (Stripe's object: card) where v's is another. Without a
// discriminator this is how a route says which alternative it answers.
// nil when patch names none that v is not.
func constBranch(s *base.Schema, patch map[string]any, v any) *base.Schema {
	if s == nil || len(patch) == 0 || len(s.OneOf)+len(s.AnyOf) == 0 {
		return nil
	}
	cur, _ := v.(map[string]any)
	for _, group := range [][]*base.SchemaProxy{s.OneOf, s.AnyOf} {
		for _, p := range group {
			b := p.Schema()
			if b == nil || b.Properties == nil {
				continue
			}
			for k, pv := range patch {
				val, ok := pv.(string)
				if !ok || val == "" || cur != nil && cur[k] == val {
					continue
				}
				if prop, ok := b.Properties.Get(k); ok && prop != nil && names(prop.Schema(), val) {
					return b
				}
			}
		}
	}
	return nil
}
