package matcher

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// isForm reports whether a Content-Type names a URL-encoded form.
func isForm(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/x-www-form-urlencoded")
}

// IsForm reports whether the body is a URL-encoded form, by its
// Content-Type.
func (q *Request) IsForm() bool {
	return q.HTTP != nil && isForm(q.HTTP.Header.Get("Content-Type"))
}

// FormValues returns the fields of a form body by their keys as sent
// (metadata[order_id]), or nil when the body is not a form. Pairs that do
// not decode are left out, as url.ParseQuery leaves them.
func (q *Request) FormValues() url.Values {
	if !q.formParsed {
		q.formParsed = true
		if q.IsForm() {
			q.formValues, _ = url.ParseQuery(string(q.Body))
			if q.formValues == nil {
				q.formValues = url.Values{}
			}
		}
	}
	return q.formValues
}

// Form returns a form body as nested values, the way Stripe and Rails
// read bracket keys, or nil when the body is not a form:
//
//   - metadata[order_id]=7 is {"metadata": {"order_id": "7"}};
//   - a[]=x&a[]=y and a[0]=x&a[1]=y (stripe-go's arrays) are {"a": ["x",
//     "y"]}: an object whose keys are all indexes becomes a list in index
//     order, gaps closed; items[0][price]=p is a list of objects;
//   - a key given twice keeps its first value, as Query().Get reads it;
//     so does a key that is both a value and an object (a=1&a[b]=2).
//
// Every value is a string; the int, float and bool template functions
// make numbers and booleans of them.
func (q *Request) Form() map[string]any {
	if !q.nestedParsed {
		q.nestedParsed = true
		if q.IsForm() {
			q.nested = parseNested(string(q.Body))
		}
	}
	return q.nested
}

// maxFormDepth bounds the brackets of one key; a deeper key is kept whole,
// as a plain name.
const maxFormDepth = 32

// formObject is an object being built, with its keys in the order they
// came so that [] appends in order.
type formObject struct {
	keys []string
	vals map[string]any // string or *formObject
	next int            // the index [] appends at
}

func newFormObject() *formObject { return &formObject{vals: map[string]any{}} }

func (o *formObject) set(k string, v any) {
	o.keys = append(o.keys, k)
	o.vals[k] = v
	if i, ok := index(k); ok && i >= o.next {
		o.next = i + 1
	}
}

func parseNested(body string) map[string]any {
	root := newFormObject()
	for body != "" {
		var pair string
		pair, body, _ = strings.Cut(body, "&")
		if pair == "" || strings.Contains(pair, ";") {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			continue
		}
		val, err := url.QueryUnescape(v)
		if err != nil {
			continue
		}
		insert(root, splitKey(key), val)
	}
	return root.object()
}

// splitKey splits a[b][c] into a, b, c; [] is kept as an empty segment. A
// key that is not a name followed by bracketed segments is one plain name.
func splitKey(key string) []string {
	name, rest, found := strings.Cut(key, "[")
	if !found || name == "" {
		return []string{key}
	}
	segs := []string{name}
	rest = "[" + rest
	for rest != "" {
		if rest[0] != '[' || len(segs) > maxFormDepth {
			return []string{key}
		}
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return []string{key}
		}
		segs = append(segs, rest[1:end])
		rest = rest[end+1:]
	}
	return segs
}

// insert puts val at the path segs under o; the first value at a place
// wins.
func insert(o *formObject, segs []string, val string) {
	for i, seg := range segs {
		last := i == len(segs)-1
		if seg == "" && i > 0 { // []: a new element, or for a[][x] the last element while it has no x
			seg = strconv.Itoa(o.next)
			if !last && o.next > 0 {
				prev := strconv.Itoa(o.next - 1)
				if po, ok := o.vals[prev].(*formObject); ok {
					if _, taken := po.vals[segs[i+1]]; !taken && segs[i+1] != "" {
						seg = prev
					}
				}
			}
		}
		if last {
			if _, taken := o.vals[seg]; !taken {
				o.set(seg, val)
			}
			return
		}
		switch child := o.vals[seg].(type) {
		case *formObject:
			o = child
		case nil:
			c := newFormObject()
			o.set(seg, c)
			o = c
		default:
			return // already a value: the first wins
		}
	}
}

// index reports whether k is a list index: digits without a leading zero,
// small enough to sort as an int.
func index(k string) (int, bool) {
	if k == "" || len(k) > 9 || (k[0] == '0' && len(k) > 1) {
		return 0, false
	}
	n := 0
	for i := 0; i < len(k); i++ {
		if k[i] < '0' || k[i] > '9' {
			return 0, false
		}
		n = n*10 + int(k[i]-'0')
	}
	return n, true
}

// finish turns the objects built into map[string]any and []any.
func (o *formObject) finish() any {
	allIndexes := len(o.keys) > 0
	for _, k := range o.keys {
		if _, ok := index(k); !ok {
			allIndexes = false
			break
		}
	}
	if !allIndexes {
		return o.object()
	}
	keys := append([]string(nil), o.keys...)
	sort.Slice(keys, func(i, j int) bool {
		a, _ := index(keys[i])
		b, _ := index(keys[j])
		return a < b
	})
	list := make([]any, len(keys))
	for i, k := range keys {
		list[i] = o.value(k)
	}
	return list
}

// object is o as a map, whatever its keys: the form itself is always an
// object, even 0=a&1=b.
func (o *formObject) object() map[string]any {
	m := make(map[string]any, len(o.keys))
	for _, k := range o.keys {
		m[k] = o.value(k)
	}
	return m
}

func (o *formObject) value(k string) any {
	if c, ok := o.vals[k].(*formObject); ok {
		return c.finish()
	}
	return o.vals[k]
}
