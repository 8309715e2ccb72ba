package openapi

import (
	"net/http"
	"slices"
	"strings"

	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// The security requirements of an operation are alternatives: the request
// passes when one of them does, and the validator tries them in the
// order written. Stripe writes basic before bearer, so every request of
// a client that sends Bearer (stripe-go, stripe-node) first failed the
// basic check, which formats an error each time (3 µs of a create's
// 15 µs of validation). The outcome does not depend on the order, so the
// check is given the operation with the requirements that use the
// request's HTTP scheme first.

// schemeItem is libItem with the requirements using an HTTP
// authentication scheme first; scheme is its name in lower case
// ("bearer").
type schemeItem struct {
	scheme string
	item   *v3.PathItem
}

// bySchemeItems returns libItem's variants, one per HTTP authentication
// scheme, whose operation lists the requirements using that scheme
// first; nil when reordering changes nothing (one requirement, or the
// scheme's already first).
func bySchemeItems(libItem *v3.PathItem, method string, op *v3.Operation, doc *v3.Document) []schemeItem {
	reqs := op.Security
	if reqs == nil && doc != nil {
		reqs = doc.Security
	}
	if len(reqs) < 2 || doc == nil || doc.Components == nil || doc.Components.SecuritySchemes == nil {
		return nil
	}
	schemeOf := func(r *base.SecurityRequirement) string {
		if r == nil || r.Requirements == nil || r.Requirements.Len() != 1 {
			return "" // none, or several that must all pass
		}
		s := doc.Components.SecuritySchemes.GetOrZero(r.Requirements.First().Key())
		if s == nil || !strings.EqualFold(s.Type, "http") {
			return ""
		}
		return strings.ToLower(s.Scheme)
	}
	var out []schemeItem
	for i, r := range reqs {
		scheme := schemeOf(r)
		if scheme == "" || i == 0 || slices.ContainsFunc(out, func(s schemeItem) bool { return s.scheme == scheme }) {
			continue
		}
		first := make([]*base.SecurityRequirement, 0, len(reqs))
		for _, q := range reqs {
			if schemeOf(q) == scheme {
				first = append(first, q)
			}
		}
		for _, q := range reqs {
			if schemeOf(q) != scheme {
				first = append(first, q)
			}
		}
		o := *operationOf(libItem, method)
		o.Security = first
		out = append(out, schemeItem{scheme, withOperation(libItem, method, &o)})
	}
	return out
}

// securityItem is the path item to check r's security against: the
// variant for r's Authorization scheme, else libItem.
func (o *Operation) securityItem(r *http.Request) *v3.PathItem {
	if o.bySchemeItem != nil {
		auth := header(r, "Authorization")
		if scheme, _, ok := strings.Cut(auth, " "); ok {
			// The scheme's name is case-insensitive (ToLower allocated
			// for every "Bearer").
			for _, s := range o.bySchemeItem {
				if strings.EqualFold(scheme, s.scheme) {
					return s.item
				}
			}
		}
	}
	return o.libItem
}
