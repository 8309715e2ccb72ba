package scenarios

import (
	"fmt"
	"net/textproto"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// CORS is a file's cors: block: which browser origins may call its routes
// and read their answers. It applies to the routes of the file that
// writes it; the server decides what answers no route gives (preflights,
// 404s).
type CORS struct {
	Pos Pos
	// Origins are the allowed origins in lower case: "*" for any, an
	// exact origin (https://app.example.com), or a pattern in which each
	// * stands for any run of characters (http://localhost:*).
	Origins []string
	// Methods a preflight allows; empty means the method the preflight
	// asks for, whatever it is.
	Methods []string
	// Headers are the request headers a preflight allows, in canonical
	// form; empty, or "*", means those the preflight asks for.
	Headers []string
	// ExposeHeaders are response headers a page may read besides those
	// the server exposes by itself (every header the route sends,
	// Location, Retry-After, the replay header).
	ExposeHeaders []string
	// MaxAge is how long a browser may cache a preflight's answer; zero
	// sends no Access-Control-Max-Age (the browser's default, 5 s).
	MaxAge time.Duration
	// Credentials lets pages send cookies and Authorization
	// (fetch credentials: "include") and read the answers.
	Credentials bool
}

var corsFields = []string{"origins", "methods", "headers", "exposeHeaders", "maxAge", "credentials"}

// originRE is an origin as a browser serializes it (RFC 6454 §6.2):
// scheme://host with an optional :port, where our patterns may put *.
var originRE = regexp.MustCompile(`^[a-z][a-z0-9+.-]*://[a-z0-9*._~\-\[\]:%]+$`)

// cors decodes a file's cors: block.
func (d *fileDecoder) cors(n *yaml.Node) *CORS {
	fs, ok := d.fields(n, "cors", corsFields...)
	if !ok {
		return nil
	}
	c := &CORS{Pos: d.pos(d.resolve(n))}
	p, ok := fs["origins"]
	if !ok {
		d.fail(d.resolve(n), "cors", `origins: is required (a list such as ["http://localhost:3000"], or ["*"] for any origin)`)
	} else if list, ok := d.strList(p.val, "cors.origins"); ok {
		c.Origins = d.origins(p.val, list)
	}
	if p, ok := fs["methods"]; ok {
		if list, ok := d.strList(p.val, "cors.methods"); ok {
			for i, m := range list {
				m = strings.TrimSpace(m)
				// * and ANY (as a route's method: says it) mean any: the
				// preflight's own method is echoed.
				if m == "*" || m == "ANY" {
					c.Methods = nil
					break
				}
				if msg := checkMethod(m); msg != "" {
					d.fail(listItem(d.resolve(p.val), i), itemField("cors.methods", p.val, i), "%s", msg)
					continue
				}
				c.Methods = append(c.Methods, m)
			}
		}
	}
	if p, ok := fs["headers"]; ok {
		c.Headers = d.headerNames(p.val, "cors.headers", true)
	}
	if p, ok := fs["exposeHeaders"]; ok {
		c.ExposeHeaders = d.headerNames(p.val, "cors.exposeHeaders", false)
	}
	if p, ok := fs["maxAge"]; ok {
		if v, ok := d.duration(p.val, "cors.maxAge"); ok {
			if v%time.Second != 0 {
				d.fail(d.resolve(p.val), "cors.maxAge", "%s is not a whole number of seconds (Access-Control-Max-Age counts seconds)", v)
			} else {
				c.MaxAge = v
			}
		}
	}
	if p, ok := fs["credentials"]; ok {
		c.Credentials, _ = d.boolean(p.val, "cors.credentials")
	}
	return c
}

// origins checks each origin of the list decoded from n.
func (d *fileDecoder) origins(n *yaml.Node, list []string) []string {
	n = d.resolve(n)
	var out []string
	for i, o := range list {
		at, field := listItem(n, i), itemField("cors.origins", n, i)
		o = strings.TrimSpace(o)
		lower := strings.ToLower(o)
		switch {
		case o == "*" || lower == "null": // null: pages from file: URLs and sandboxed frames
		case originRE.MatchString(lower):
		case strings.Contains(lower, "://") && originRE.MatchString(strings.TrimRight(lower, "/")):
			d.fail(at, field, "%s: an origin has no path, not even /; write %s", strconv.Quote(o), strconv.Quote(strings.TrimRight(o, "/")))
			continue
		case strings.Contains(lower, "://"):
			d.fail(at, field, "%s is not an origin: want scheme://host[:port] with no path, query or fragment (http://localhost:3000)", strconv.Quote(o))
			continue
		default:
			d.fail(at, field, "%s is not an origin: it needs a scheme (write %s)", strconv.Quote(o), strconv.Quote("http://"+o))
			continue
		}
		out = append(out, lower)
	}
	if len(list) == 0 {
		d.fail(n, "cors.origins", `must not be empty (["*"] allows any origin)`)
	}
	return out
}

// headerNames reads a list of header names in canonical form; star says
// whether "*" (any) is allowed, which returns nil.
func (d *fileDecoder) headerNames(n *yaml.Node, field string, star bool) []string {
	list, ok := d.strList(n, field)
	if !ok {
		return nil
	}
	n = d.resolve(n)
	var out []string
	for i, h := range list {
		h = strings.TrimSpace(h)
		if h == "*" {
			if star {
				return nil
			}
			d.fail(listItem(n, i), itemField(field, n, i), `"*" is not needed: every header a route sends is exposed already; list only other names`)
			continue
		}
		if !tokenRE.MatchString(h) {
			d.fail(listItem(n, i), itemField(field, n, i), "%s is not a header name", strconv.Quote(h))
			continue
		}
		if c := textproto.CanonicalMIMEHeaderKey(h); !contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// listItem returns the node of item i of a list, or n itself when it is
// a single value written without a list.
func listItem(n *yaml.Node, i int) *yaml.Node {
	if n.Kind == yaml.SequenceNode && i < len(n.Content) {
		return n.Content[i]
	}
	return n
}

func itemField(field string, n *yaml.Node, i int) string {
	if n.Kind == yaml.SequenceNode {
		return fmt.Sprintf("%s[%d]", field, i)
	}
	return field
}

// AllowsOrigin reports whether origin (as a browser sends it) is among
// the patterns of an origins: list, which are in lower case.
func AllowsOrigin(patterns []string, origin string) bool {
	if len(origin) > 0 && hasUpper(origin) {
		origin = strings.ToLower(origin)
	}
	for _, p := range patterns {
		if p == "*" || p == origin || strings.IndexByte(p, '*') >= 0 && wildcard(p, origin) {
			return true
		}
	}
	return false
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

// wildcard matches s against p, in which each * stands for any run of
// characters.
func wildcard(p, s string) bool {
	parts := strings.Split(p, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}
