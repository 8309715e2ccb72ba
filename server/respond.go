package server

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/scenarios"
)

// prepared is a response made ready to write: static headers with their
// value slices built, the Content-Length computed once. Prepared responses
// belong to a snapshot and are never changed.
type prepared struct {
	src    *scenarios.Response
	status int
	// header is a slice, not a map, so that copying it touches a few
	// contiguous cache lines; the value slices are shared and read-only.
	header []headerValue
	body   []byte
	// templates are the headers rendered per request.
	templates []scenarios.Header
	templated bool
	// missing answers a load or delete that finds nothing (nil: a 404
	// problem).
	missing *prepared
}

type headerValue struct {
	name  string
	value []string
}

func prepare(r *scenarios.Response) *prepared {
	p := &prepared{src: r, status: r.Status, body: r.Body}
	for _, h := range r.Headers {
		if h.Template != nil {
			p.templates = append(p.templates, h)
			continue
		}
		if n := len(p.header); n > 0 && p.header[n-1].name == h.Name {
			p.header[n-1].value = append(p.header[n-1].value, h.Value) // a list: one line per value
			continue
		}
		p.header = append(p.header, headerValue{h.Name, []string{h.Value}})
	}
	if r.Missing != nil {
		p.missing = prepare(r.Missing)
	}
	if _, set := r.Header("Content-Type"); !set && (r.Op == scenarios.OpLoad || r.Op != "" && r.Status != http.StatusNoContent && len(r.Body) == 0 && r.BodyTemplate == nil && r.JSONTemplate == nil) {
		p.header = append(p.header, headerValue{"Content-Type", []string{"application/json"}}) // the stored item
	}
	// A collection operation's body is known only per request.
	p.templated = r.BodyTemplate != nil || r.JSONTemplate != nil || len(p.templates) > 0 || r.Op != ""
	if !p.templated {
		p.header = append(p.header, headerValue{"Content-Length", []string{strconv.Itoa(len(r.Body))}})
	}
	return p
}

// templateData is what a response template sees. Its fields are part of
// the scenario format (documented in the README).
type templateData struct {
	Request templateRequest
	Route   string
	// Call is the 1-based number of this call: of the route, or of its key
	// when the sequence is per key.
	Call int64
	Now  time.Time
	// Item is the item load: or delete: found, and Items the items list:
	// found, parsed from JSON (numbers as written).
	Item  any
	Items []any
	// HasMore says whether a paged list: has items past this page.
	HasMore bool
	// Response is the answer just rendered; only save's id sees it.
	Response *templateResponse

	// What the collection operation found, as stored: the answer of a
	// load, list or delete without a body of its own.
	item       []byte
	items      [][]byte
	collection string
	id         string
}

type templateRequest struct {
	Method  string
	Path    string
	Host    string
	Vars    map[string]string
	Query   url.Values
	Headers http.Header
	Body    string
	// JSON is the body parsed as JSON when it is an object, otherwise an
	// empty object, so that .Request.JSON.field renders empty rather than
	// failing for a body that is missing or not an object.
	JSON map[string]any
}

// RequestJSON hands the json template function the body and the document
// parsed from it, so that it echoes request JSON as it came
// (scenarios.JSONSource).
func (d *templateData) RequestJSON() (string, any) { return d.Request.Body, d.Request.JSON }

func newTemplateData(in *matcher.Request, m matcher.Match, call int64, now time.Time) *templateData {
	parsed, _ := in.JSON()
	doc, ok := parsed.(map[string]any)
	if !ok {
		doc = map[string]any{}
	}
	route := ""
	if m.Route != nil {
		route = m.Route.Name
	}
	return &templateData{
		Request: templateRequest{
			Method:  in.HTTP.Method,
			Path:    in.HTTP.URL.Path,
			Host:    in.HTTP.Host,
			Vars:    m.Vars,
			Query:   in.Query(),
			Headers: in.HTTP.Header,
			Body:    string(in.Body),
			JSON:    doc,
		},
		Route: route,
		Call:  call + 1,
		Now:   now,
	}
}

// write sends the response. A template that fails to render becomes a 500
// problem naming the template's error, before anything is written.
func (p *prepared) write(w http.ResponseWriter, data func() *templateData) error {
	h := w.Header()
	for _, hv := range p.header {
		h[hv.name] = hv.value
	}
	body := p.body
	if p.templated {
		d := data()
		for i, t := range p.templates {
			var b strings.Builder
			if err := t.Template.Execute(&b, d); err != nil {
				return fmt.Errorf("%w: header %s: %s", errTemplate, t.Name, templateMessage(err))
			}
			v := strings.Map(func(r rune) rune {
				if r < ' ' && r != '\t' || r == 0x7f {
					return ' ' // a request value must not split the header
				}
				return r
			}, b.String())
			if i > 0 && p.templates[i-1].Name == t.Name {
				h[t.Name] = append(h[t.Name], v) // a list (its values are adjacent): one line per value
			} else {
				h[t.Name] = []string{v}
			}
		}
		var buf bytes.Buffer
		switch {
		case p.src.JSONTemplate != nil:
			if err := p.src.JSONTemplate.Execute(&buf, d); err != nil {
				return fmt.Errorf("%w: body: %s", errTemplate, templateMessage(err))
			}
			body = buf.Bytes()
		case p.src.BodyTemplate != nil:
			if err := p.src.BodyTemplate.Execute(&buf, d); err != nil {
				return fmt.Errorf("%w: body: %s", errTemplate, templateMessage(err))
			}
			body = buf.Bytes()
		case len(p.body) > 0: // a body of its own
		case p.src.Op == scenarios.OpList:
			body = joinItems(d.items)
		case p.src.Op == scenarios.OpLoad || p.src.Op == scenarios.OpDelete && p.status != http.StatusNoContent:
			body = d.item
		}
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	w.WriteHeader(p.status)
	_, _ = w.Write(body) // a client that went away is not an error of ours
	return nil
}

// templateMessage strips text/template's own naming from an execution
// error ("template: t:1:16: executing \"t\" at <.x>: ..." becomes
// "at <.x>: ..."), since the route and field already say which template.
func templateMessage(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, `executing "t" `); i >= 0 {
		return msg[i+len(`executing "t" `):]
	}
	return strings.TrimPrefix(msg, "template: ")
}

// pickDelay draws a delay; u returns uniform numbers in [0, 1).
func pickDelay(d scenarios.Delay, u func() float64) time.Duration {
	switch d.Kind {
	case scenarios.Fixed:
		return d.Fixed
	case scenarios.Uniform:
		return d.Min + time.Duration(u()*float64(d.Max-d.Min))
	case scenarios.LogNormal:
		// Box–Muller: 1-u is in (0, 1], so the logarithm is finite.
		z := math.Sqrt(-2*math.Log(1-u())) * math.Cos(2*math.Pi*u())
		v := float64(d.Median) * math.Exp(d.Sigma*z)
		limit := float64(24 * time.Hour)
		if d.Max > 0 {
			limit = float64(d.Max)
		}
		return time.Duration(math.Min(v, limit))
	}
	return 0
}

// fault fails the connection instead of answering. The request was
// matched and counted, so a fault after a delay is the "processed, but the
// answer was lost" case.
func fault(w http.ResponseWriter, f scenarios.Fault) error {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return fmt.Errorf("fault %s: %w", f, err)
	}
	defer conn.Close()
	switch f {
	case scenarios.ConnectionReset:
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close sends RST instead of FIN
		}
	case scenarios.MalformedChunk:
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nzz\r\n{\"partial\r\n")
		_ = buf.Flush()
	case scenarios.RandomData:
		junk := make([]byte, 512)
		for i := range junk {
			junk[i] = byte(rand.Uint32())
		}
		_, _ = buf.Write(junk)
		_ = buf.Flush()
	}
	return nil
}
