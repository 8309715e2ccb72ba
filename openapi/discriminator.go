package openapi

import (
	"path"

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
func discriminated(s *base.Schema, v any) *base.Schema {
	var found *base.Schema
	// A bound, for a document whose branches name each other.
	for range maxDiscriminatorDepth {
		b := branch(s, v)
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
// level down.
func branch(s *base.Schema, v any) *base.Schema {
	if s == nil || s.Discriminator == nil || s.Discriminator.PropertyName == "" {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	val, ok := m[s.Discriminator.PropertyName].(string)
	if !ok {
		return nil
	}
	var mapped string // the mapping's reference for val, if any
	if s.Discriminator.Mapping != nil {
		mapped, _ = s.Discriminator.Mapping.Get(val)
	}
	for _, group := range [][]*base.SchemaProxy{s.OneOf, s.AnyOf} {
		for _, p := range group {
			if mapped != "" && p.IsReference() && (p.GetReference() == mapped || path.Base(p.GetReference()) == path.Base(mapped)) {
				return p.Schema()
			}
			b := p.Schema()
			if names(propertyOf(b, s.Discriminator.PropertyName, 0), val) {
				return b
			}
			// Without a mapping, the value is the branch schema's name.
			if mapped == "" && p.IsReference() && path.Base(p.GetReference()) == val {
				return b
			}
		}
	}
	return nil
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
