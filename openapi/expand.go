package openapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/pb33f/libopenapi/datamodel/high/base"
)

// expand[] (Stripe's expandable fields): a field that holds an id, whose
// schema is anyOf the id and a resource (x-resourceId: customer), answers
// the stored resource instead when the request asks expand[]=customer and
// the resource was created here. An id nothing stored answers stays an
// id, as it would against an account that has no such object.

// noteCollection records where a create operation stores its resource.
func (a *api) noteCollection(o *Operation) {
	if o.kind != opCreate || strings.Contains(o.collection, "{") {
		return
	}
	resp, _ := o.response(o.status)
	if _, schema := mediaOf(resp); schema != nil {
		if id := resourceID(schema); id != "" {
			if a.collections == nil {
				a.collections = map[string]string{}
			}
			if _, seen := a.collections[id]; !seen {
				a.collections[id] = o.collection
			}
		}
	}
}

// expandFields lists the fields a request asks to expand: expand[]=a
// (or expand[0]=a) in the query or the form body.
func expandFields(r *http.Request, q url.Values, in map[string]any) []string {
	var out []string
	for k, vs := range q {
		if k == "expand[]" || strings.HasPrefix(k, "expand[") {
			out = append(out, vs...)
		}
	}
	if l, ok := listOf(in["expand"]); ok {
		for _, v := range l {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// expandStored replaces the ids of body's expandable fields named by
// fields with the stored objects they name. It returns body unchanged
// when there is nothing to expand.
func (o *Operation) expandStored(ctx context.Context, x Exchange, fields []string, body []byte) ([]byte, error) {
	if len(fields) == 0 || len(o.api.collections) == 0 {
		return body, nil
	}
	resp, _ := o.response(o.status)
	_, schema := mediaOf(resp)
	if schema == nil || schema.Properties == nil {
		return body, nil
	}
	obj, ok := decodeObject(body)
	if !ok {
		return body, nil
	}
	changed := false
	for _, f := range fields {
		id, ok := obj[f].(string)
		if !ok || id == "" {
			continue
		}
		p, ok := schema.Properties.Get(f)
		if !ok || p == nil {
			continue
		}
		path := o.api.expandable(p.Schema())
		if path == "" {
			continue
		}
		stored, found, err := x.Store.Load(ctx, o.api.storeName(x.Request, path), id)
		if err != nil {
			return nil, err
		}
		if found {
			obj[f] = json.RawMessage(stored)
			changed = true
		}
	}
	if !changed {
		return body, nil
	}
	return json.Marshal(obj)
}

// expandable returns the collection path of the resource an expandable
// field's schema offers (one of its anyOf branches), or "".
func (a *api) expandable(s *base.Schema) string {
	if s == nil {
		return ""
	}
	for _, p := range s.AnyOf {
		if b := p.Schema(); b != nil {
			if path := a.collections[resourceID(b)]; path != "" {
				return path
			}
		}
	}
	return ""
}
