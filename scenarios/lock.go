package scenarios

import (
	"strings"
	"text/template"
	"time"

	"gopkg.in/yaml.v3"
)

// Lock is a route's lock: block: the objects its requests act on. Two
// requests that name one object (whatever their routes) run one at a
// time, from before the answer is made to after its effects are stored,
// on every replica of a shared store: a refund reads what the payment
// received and what its refunds returned so far only once the refund
// before it stored its own, as Stripe answers (it locks an object while a
// request acts on it, and answers 429 lock_timeout to a request that
// waited too long).
//
//	lock: '{{ .Request.Form.payment_intent }}'                # one name
//	lock: ['{{ .Request.Form.payment_intent }}', '{{ .Request.Form.charge }}']
//	lock: { names: [...], wait: 5s, timeout: { status: 429, body: ... } }
//	defaults: { lock: { wait: 2s, timeout: ... } }            # every route of the file
//
// A route that names an operation which writes a stored object (an
// update, an action, a delete) locks that object's id unless its lock:
// names others (lock: [] locks nothing).
type Lock struct {
	Pos Pos
	// Names render each the name of an object the request acts on; one
	// that renders nothing names none. Own says they were written: an
	// empty list then locks nothing, where a route without names: locks
	// its operation's object, if any.
	Names []*template.Template
	Own   bool
	// Wait is how long a request waits for an object another holds;
	// DefaultLockWait when 0.
	Wait time.Duration
	// Timeout is the answer once the wait ran out; nil for a 429
	// problem.
	Timeout *Response
}

// DefaultLockWait is how long a request waits for an object another
// request holds, unless a lock: block says.
const DefaultLockWait = 2 * time.Second

// MaxLockWait bounds a lock's wait: a request waits no longer than a
// client's patience, and a reload never waits on a lock.
const MaxLockWait = time.Minute

var lockFields = []string{"names", "wait", "timeout"}

// lock decodes a lock: block (a name, a list of names, or a mapping) on
// top of the file's defaults (base, nil for none); field is its path.
func (d *fileDecoder) lock(n *yaml.Node, field string, base *Lock, defaults bool) *Lock {
	l := &Lock{Pos: d.pos(d.resolve(n))}
	if base != nil {
		l.Wait, l.Timeout = base.Wait, base.Timeout
	}
	v := d.resolve(n)
	switch {
	case v.Kind == yaml.MappingNode:
		known := lockFields
		if defaults {
			known = lockFields[1:] // names are a route's
		}
		fs, ok := d.fields(n, field, known...)
		if !ok {
			return nil
		}
		if p, ok := fs["names"]; ok {
			l.Names, l.Own = d.lockNames(p.val, join(field, "names")), true
		}
		if p, ok := fs["wait"]; ok {
			if w, ok := d.duration(p.val, join(field, "wait")); ok {
				if w <= 0 || w > MaxLockWait {
					d.fail(d.resolve(p.val), join(field, "wait"), "want more than 0 and at most %s, got %s", MaxLockWait, w)
				}
				l.Wait = w
			}
		}
		if p, ok := fs["timeout"]; ok {
			f := join(field, "timeout")
			if r := d.response(p.val, f, nil); r != nil {
				if r.Fault != nil {
					d.fail(d.resolve(p.val), f, "the answer to a request that waited too long cannot be a fault")
				}
				if peekKey(d.resolve(p.val), "status") == nil {
					r.Status = 429 // Stripe's lock_timeout, unless it says otherwise
				}
				l.Timeout = r
			}
		}
	case defaults:
		d.fail(v, field, "want a mapping of wait: and timeout: (the names are each route's lock:), got %s", describe(v))
		return nil
	default:
		l.Names, l.Own = d.lockNames(n, field), true
	}
	return l
}

// lockNames decodes a name or a list of names, each a template.
func (d *fileDecoder) lockNames(n *yaml.Node, field string) []*template.Template {
	v := d.resolve(n)
	items := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		items = v.Content
	}
	names := []*template.Template{}
	for _, it := range items {
		text, ok := d.str(it, field)
		if !ok {
			continue
		}
		if strings.TrimSpace(text) == "" {
			d.fail(d.resolve(it), field, "a name must not be empty; want the object the request acts on, e.g. '{{ .Request.Form.payment_intent }}'")
			continue
		}
		t, err := parseTemplate(text)
		if err != nil {
			d.templateError(d.resolve(it), field, err)
			continue
		}
		names = append(names, t)
	}
	return names
}
