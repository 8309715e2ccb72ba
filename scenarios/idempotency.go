package scenarios

import (
	"fmt"
	"net/textproto"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Idempotency makes a route behave like an idempotent API that honours an
// Idempotency-Key (draft-ietf-httpapi-idempotency-key-header, Stripe): the
// first request with a key runs the route and its answer is stored; a
// retry with the same key and fingerprint gets that answer again; the same
// key with another fingerprint, a key still in flight and a missing key
// get the errors below. The field names are part of the scenario format.
type Idempotency struct {
	Pos Pos
	// Key is where the key comes from, e.g. header.Idempotency-Key.
	Key *Attribute
	// Required makes a request without a key a 400; otherwise it runs the
	// route as if the route had no idempotency block.
	Required bool
	// Scope adds request values to the stored key, so that one client
	// never sees another's stored answer (e.g. header.Authorization,
	// which counts by the credential it carries: matcher.Credential).
	Scope []*Attribute
	// Group names the key space; routes with the same group share keys.
	// Empty means the route's methods and path template.
	Group string
	// TTL is how long a stored answer is kept (default 24h).
	TTL time.Duration
	// InFlight says what a request gets while the first with its key is
	// still running.
	InFlight InFlightMode
	// Store is the set of status classes whose answers are stored; other
	// answers release the key (default 2xx and 4xx).
	Store StatusClasses
	// ReplayHeader is set to "true" on every replay; empty disables it.
	ReplayHeader string
	// Fingerprint lists what must be equal for a retry to be the same
	// request (default: the body).
	Fingerprint []FingerprintPart
	// OnClientAbort says what happens to a claimed key when its client
	// leaves before the answer: the route completes and is stored, or the
	// key is released.
	OnClientAbort AbortMode
	// Missing, Invalid, Mismatch and Conflict override the four error
	// answers; nil means the built-in problem answers.
	Missing, Invalid, Mismatch, Conflict *Response
}

// InFlightMode is what a retry gets while the first request runs.
type InFlightMode string

// The in-flight modes.
const (
	// Conflict answers 409 with Retry-After.
	Conflict InFlightMode = "conflict"
	// Wait blocks until the first completes, then replays its answer.
	Wait InFlightMode = "wait"
)

// KeyEffect is what one response does to its request's claimed
// Idempotency-Key, in place of the route's store: rule.
type KeyEffect string

// The key effects.
const (
	// KeyByStatus follows the idempotency block's store: (the default).
	KeyByStatus KeyEffect = ""
	// KeyStore stores the answer under the key, whatever its status.
	KeyStore KeyEffect = "store"
	// KeyRelease stores nothing: the key is free again, as if the
	// request had never come, so a corrected retry with the same key
	// runs. Stripe treats a request that fails validation so ("no
	// idempotent result is saved because no API endpoint began
	// execution").
	KeyRelease KeyEffect = "release"
)

// AbortMode is what a claimed key does when its client leaves early.
type AbortMode string

// The abort modes.
const (
	// Complete runs the route to its end and stores the answer, as a real
	// server that has started the work does.
	Complete AbortMode = "complete"
	// Discard releases the key, as if the request never arrived.
	Discard AbortMode = "discard"
)

// StatusClasses is a set of status classes, bit n for nxx.
type StatusClasses uint8

// Has reports whether status falls in one of the classes.
func (c StatusClasses) Has(status int) bool {
	class := status / 100
	return class >= 1 && class <= 5 && c&(1<<class) != 0
}

// String lists the classes, as in "2xx, 4xx".
func (c StatusClasses) String() string {
	var out []string
	for class := 1; class <= 5; class++ {
		if c&(1<<class) != 0 {
			out = append(out, fmt.Sprintf("%dxx", class))
		}
	}
	return strings.Join(out, ", ")
}

// DefaultStore stores successes and client errors: a 5xx means the server
// did not finish, so the same key may try again (Stripe stores 5xx too;
// write store: all for that).
const DefaultStore StatusClasses = 1<<2 | 1<<4

// FingerprintPart is one thing a fingerprint covers: the whole body, the
// method or the path, or one request attribute.
type FingerprintPart struct {
	Whole string // "body", "method" or "path"; empty when Attr is set
	Attr  *Attribute
}

// String returns the part as written.
func (p FingerprintPart) String() string {
	if p.Attr != nil {
		return p.Attr.String()
	}
	return p.Whole
}

// Defaults of the idempotency block.
const (
	DefaultIdempotencyTTL = 24 * time.Hour
	DefaultReplayHeader   = "Idempotent-Replayed"
)

var (
	idempotencyFields = []string{"key", "required", "scope", "group", "ttl", "inFlight", "store", "replayHeader", "fingerprint", "onClientAbort", "errors"}
	idempotencyErrors = []string{"missing", "invalid", "mismatch", "inFlight"}
	inFlightModes     = []string{string(Conflict), string(Wait)}
	abortModes        = []string{string(Complete), string(Discard)}
	keyEffects        = []string{string(KeyStore), string(KeyRelease)}
	storeClasses      = []string{"1xx", "2xx", "3xx", "4xx", "5xx", "all"}
	wholeParts        = []string{"body", "method", "path"}
)

// isOff reports whether n opts out of an inherited block: `off` or false.
func isOff(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode {
		return false
	}
	return n.ShortTag() == "!!str" && n.Value == "off" || n.ShortTag() == "!!bool" && strings.EqualFold(n.Value, "false")
}

// idempotency decodes an idempotency block for a route whose path has the
// variables vars. It returns nil for `off` and on errors.
func (d *fileDecoder) idempotency(n *yaml.Node, field string, vars []string) *Idempotency {
	n = d.resolve(n)
	if isOff(n) {
		return nil
	}
	before := len(d.errs)
	fs, ok := d.fields(n, field, idempotencyFields...)
	if !ok {
		return nil
	}
	id := &Idempotency{
		Pos:           d.pos(n),
		TTL:           DefaultIdempotencyTTL,
		InFlight:      Conflict,
		Store:         DefaultStore,
		ReplayHeader:  DefaultReplayHeader,
		Fingerprint:   []FingerprintPart{{Whole: "body"}},
		OnClientAbort: Complete,
	}
	if vars == nil {
		// The defaults apply to routes with different paths.
		for _, name := range []string{"key", "scope", "fingerprint"} {
			if p, ok := fs[name]; ok {
				for _, e := range d.nodeList(p.val) {
					if e.Kind == yaml.ScalarNode && strings.HasPrefix(e.Value, string(PathAttr)+".") {
						d.fail(e, join(field, name), "defaults cannot name a path variable (%s); put the block on the route", e.Value)
						return nil
					}
				}
			}
		}
	}
	if p, ok := fs["key"]; ok {
		id.Key = d.attribute(p.val, join(field, "key"), vars)
	} else {
		d.fail(n, field, "key: is required, e.g. key: header.Idempotency-Key")
	}
	if p, ok := fs["required"]; ok {
		id.Required, _ = d.boolean(p.val, join(field, "required"))
	}
	if p, ok := fs["scope"]; ok {
		id.Scope = d.attributeList(p.val, join(field, "scope"), vars)
	}
	if p, ok := fs["group"]; ok {
		if g, ok := d.str(p.val, join(field, "group")); ok {
			if strings.TrimSpace(g) == "" {
				d.fail(d.resolve(p.val), join(field, "group"), "must not be empty (leave it out for the route's own key space)")
			}
			id.Group = g
		}
	}
	if p, ok := fs["ttl"]; ok {
		if ttl, ok := d.duration(p.val, join(field, "ttl")); ok {
			if ttl <= 0 {
				d.fail(d.resolve(p.val), join(field, "ttl"), "must be more than 0 (POST /__admin/idempotency/expire expires keys at once)")
			}
			id.TTL = ttl
		}
	}
	if p, ok := fs["inFlight"]; ok {
		id.InFlight = InFlightMode(d.choice(p.val, field, "inFlight", inFlightModes))
	}
	if p, ok := fs["onClientAbort"]; ok {
		id.OnClientAbort = AbortMode(d.choice(p.val, field, "onClientAbort", abortModes))
	}
	if p, ok := fs["store"]; ok {
		id.Store = d.store(p.val, join(field, "store"))
	}
	if p, ok := fs["replayHeader"]; ok {
		if h, ok := d.str(p.val, join(field, "replayHeader")); ok {
			if h != "" && !tokenRE.MatchString(h) {
				d.fail(d.resolve(p.val), join(field, "replayHeader"), "%q is not a valid header name", h)
			}
			id.ReplayHeader = textproto.CanonicalMIMEHeaderKey(h)
		}
	}
	if p, ok := fs["fingerprint"]; ok {
		id.Fingerprint = d.fingerprint(p.val, join(field, "fingerprint"), vars)
	}
	if p, ok := fs["errors"]; ok {
		d.idempotencyErrors(p.val, join(field, "errors"), vars, id)
	}
	if len(d.errs) > before {
		return nil
	}
	return id
}

// choice decodes a string that must be one of known.
func (d *fileDecoder) choice(n *yaml.Node, field, name string, known []string) string {
	s, ok := d.str(n, join(field, name))
	if !ok {
		return ""
	}
	if !contains(known, s) {
		d.unknown(d.resolve(n), field, name, s, known)
	}
	return s
}

// nodeList returns a list's elements, or a lone scalar as a list of one.
func (d *fileDecoder) nodeList(n *yaml.Node) []*yaml.Node {
	n = d.resolve(n)
	if n.Kind == yaml.SequenceNode {
		return n.Content
	}
	return []*yaml.Node{n}
}

func (d *fileDecoder) attributeList(n *yaml.Node, field string, vars []string) []*Attribute {
	var out []*Attribute
	for i, e := range d.nodeList(n) {
		if a := d.attribute(e, fmt.Sprintf("%s[%d]", field, i), vars); a != nil {
			out = append(out, a)
		}
	}
	return out
}

func (d *fileDecoder) store(n *yaml.Node, field string) StatusClasses {
	var c StatusClasses
	for i, e := range d.nodeList(n) {
		f := fmt.Sprintf("%s[%d]", field, i)
		s, ok := d.str(e, f)
		if !ok {
			continue
		}
		switch {
		case s == "all":
			c |= 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5
		case contains(storeClasses, s):
			c |= 1 << (s[0] - '0')
		default:
			d.unknown(d.resolve(e), field, "status class", s, storeClasses)
		}
	}
	return c
}

func (d *fileDecoder) fingerprint(n *yaml.Node, field string, vars []string) []FingerprintPart {
	var out []FingerprintPart
	for i, e := range d.nodeList(n) {
		f := fmt.Sprintf("%s[%d]", field, i)
		s, ok := d.str(e, f)
		if !ok {
			continue
		}
		if contains(wholeParts, s) {
			out = append(out, FingerprintPart{Whole: s})
			continue
		}
		if !strings.Contains(s, ".") {
			if sg := Suggest(s, wholeParts); sg != "" {
				d.fail(d.resolve(e), f, "unknown fingerprint part %q (did you mean %q?)", s, sg)
			} else {
				d.fail(d.resolve(e), f, "unknown fingerprint part %q (want body, method, path or a request attribute such as header.<name>)", s)
			}
			continue
		}
		if a := d.attribute(e, f, vars); a != nil {
			out = append(out, FingerprintPart{Attr: a})
		}
	}
	if len(out) == 0 && len(d.nodeList(n)) == 0 {
		d.fail(d.resolve(n), field, "the list is empty; leave fingerprint out for the default (the body)")
	}
	return out
}

func (d *fileDecoder) idempotencyErrors(n *yaml.Node, field string, vars []string, id *Idempotency) {
	fs, ok := d.fields(n, field, idempotencyErrors...)
	if !ok {
		return
	}
	for _, e := range []struct {
		name   string
		status int
		dst    **Response
	}{{"missing", 400, &id.Missing}, {"invalid", 400, &id.Invalid}, {"mismatch", 422, &id.Mismatch}, {"inFlight", 409, &id.Conflict}} {
		p, ok := fs[e.name]
		if !ok {
			continue
		}
		r := d.response(p.val, join(field, e.name), vars)
		if r == nil {
			continue
		}
		if r.Fault != nil {
			d.fail(d.resolve(p.val), join(field, e.name), "an idempotency error answer cannot be a fault")
		}
		if k := peekKey(d.resolve(p.val), "idempotency"); k != nil {
			d.fail(k, join(join(field, e.name), "idempotency"), "an idempotency error answer holds no key: nothing is claimed before it, and nothing stored")
		}
		if peekKey(d.resolve(p.val), "status") == nil {
			r.Status = e.status // the answer it overrides, unless it says otherwise
		}
		*e.dst = r
	}
}

// peekKey returns the value of a mapping's key, or nil.
func peekKey(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// defaultGroup is a route's own key space: its methods and path template,
// as in "POST /payments". Two routes with the same methods and template
// share keys, as the same endpoint of a real API would.
func defaultGroup(r *Route) string {
	m := "*"
	if len(r.Methods) > 0 {
		m = strings.Join(r.Methods, ",")
	}
	return m + " " + r.Path
}
