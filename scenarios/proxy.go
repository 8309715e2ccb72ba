package scenarios

import (
	"errors"
	"fmt"
	"net/textproto"
	"net/url"
	"strings"

	"gopkg.in/yaml.v3"
)

// proxy decodes a response's proxy: block. The URL is checked here, where
// its position is known, the way package upstream checks it again when
// the server builds the route's target.
func (d *fileDecoder) proxy(n *yaml.Node, field string) *Proxy {
	before := len(d.errs)
	n = d.resolve(n)
	p := &Proxy{Pos: d.pos(n)}
	if n.Kind == yaml.ScalarNode {
		// proxy: https://sandbox.example.test, the short form.
		p.URL, _ = d.str(n, field)
		d.proxyURL(n, field, p.URL)
		if len(d.errs) > before {
			return nil
		}
		return p
	}
	fs, ok := d.fields(n, field, proxyFields...)
	if !ok {
		return nil
	}
	u, ok := fs["url"]
	if !ok {
		d.fail(n, field, "url: is required (the upstream, e.g. url: https://sandbox.example.test)")
		return nil
	}
	if s, ok := d.str(u.val, join(field, "url")); ok {
		p.URL = s
		d.proxyURL(d.resolve(u.val), join(field, "url"), s)
	}
	if t, ok := fs["timeout"]; ok {
		if v, ok := d.duration(t.val, join(field, "timeout")); ok {
			if v <= 0 {
				d.fail(d.resolve(t.val), join(field, "timeout"), "timeout must be more than 0")
			}
			p.Timeout = v
		}
	}
	if h, ok := fs["headers"]; ok {
		d.proxyHeaders(h.val, join(field, "headers"), p)
	}
	if len(d.errs) > before {
		return nil
	}
	return p
}

// proxyURL checks that s is an absolute http(s) URL with a host, no
// credentials, no query and no fragment.
func (d *fileDecoder) proxyURL(n *yaml.Node, field, s string) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		d.fail(n, field, "not a URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		d.fail(n, field, "%q is not an http:// or https:// URL", s)
	case u.Hostname() == "":
		d.fail(n, field, "%q has no host", s)
	case u.User != nil:
		d.fail(n, field, "the URL carries credentials: set them with headers: { set: { Authorization: ... } } instead")
	case u.RawQuery != "" || u.Fragment != "":
		d.fail(n, field, "%q has a query or fragment: want a base URL", s)
	}
}

// proxyHeaders decodes headers: { set: {Name: value}, remove: [Name] }.
func (d *fileDecoder) proxyHeaders(n *yaml.Node, field string, p *Proxy) {
	fs, ok := d.fields(n, field, proxyHeaders...)
	if !ok {
		return
	}
	if s, ok := fs["set"]; ok {
		ps, ok := d.pairs(s.val, join(field, "set"))
		for _, kv := range ps {
			if !ok {
				break
			}
			f := join(join(field, "set"), kv.key.Value)
			name := textproto.CanonicalMIMEHeaderKey(kv.key.Value)
			if !tokenRE.MatchString(kv.key.Value) {
				d.fail(kv.key, f, "%q is not a header name", kv.key.Value)
				continue
			}
			switch name {
			case "Host", "Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization":
				d.fail(kv.key, f, "%s is not forwarded (hop-by-hop, or set by the proxy)", name)
				continue
			}
			v, ok := d.str(kv.val, f)
			if !ok {
				continue
			}
			if strings.ContainsAny(v, "\r\n\x00") {
				d.fail(d.resolve(kv.val), f, "a header value has no line break or NUL")
				continue
			}
			p.Set = append(p.Set, Header{Name: name, Value: v})
		}
	}
	if r, ok := fs["remove"]; ok {
		names, ok := d.strList(r.val, join(field, "remove"))
		if ok {
			for _, name := range names {
				if !tokenRE.MatchString(name) {
					d.fail(d.resolve(r.val), join(field, "remove"), "%q is not a header name", name)
					continue
				}
				p.Remove = append(p.Remove, textproto.CanonicalMIMEHeaderKey(name))
			}
		}
	}
}

// proxyAlone checks that a proxied response says nothing the upstream's
// answer replaces, and that its fault can be made from that answer.
func (d *fileDecoder) proxyAlone(fs map[string]pair, field string, r *Response) {
	for _, name := range []string{"status", "headers", "body", "bodyFile", "template", "save", "load", "list", "delete", "missing", "envelope", "override"} {
		if p, ok := fs[name]; ok {
			d.fail(p.key, join(field, name), "does not go with proxy: (the upstream's answer is passed through)")
		}
	}
	// The file's default headers are for canned answers: the upstream's
	// own headers are passed through as sent.
	r.Headers = nil
	if f := r.Fault; f != nil && f.After == AfterArrival && f.SendsAnswer() {
		if p, ok := fs["fault"]; ok {
			d.fail(d.resolve(p.val), join(field, "fault"), "%s at arrival sends part of an answer the upstream never gave: write after: processing", f.Kind)
		}
	}
}

// ParseFault reads one fault as a response's fault: field is written (a
// kind, or a mapping of kind, after, chance, ...; JSON is YAML), for the
// admin API's runtime faults. Its errors name the field and the position
// in src.
func ParseFault(src []byte) (*Fault, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("fault: %w", err)
	}
	if len(doc.Content) == 0 {
		return nil, errors.New("fault: is empty; want a kind or { kind: ..., after: ..., chance: ... }")
	}
	d := &fileDecoder{decoder: decoder{file: "fault", budget: nodeBudget, src: src}}
	f := d.fault(doc.Content[0], "fault")
	if err := joinErrors(d.errs); err != nil {
		return nil, err
	}
	return f, nil
}
