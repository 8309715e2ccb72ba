package adminclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/scenariomock/scenariomock/state"
)

// Client calls one scenariomock server's admin API. It is safe for
// concurrent use.
type Client struct {
	base  *url.URL // scheme and host, and a path prefix when behind a proxy
	token string
	http  *http.Client
	// pageSize is how many routes Routes asks for at once: the server's
	// largest page, smaller in tests.
	pageSize int
}

// Option configures a Client.
type Option func(*Client)

// WithToken sends token as "Authorization: Bearer <token>" on every
// call, for a server started with an admin token.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient makes the client use hc (timeouts, transport) instead of
// http.DefaultClient.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// New returns a client of the server at addr: a URL such as
// http://127.0.0.1:8080, or host:port. An unspecified host (0.0.0.0, ::,
// or none: ":8080") is the server listening on every interface, and is
// asked on loopback.
func New(addr string, opts ...Option) (*Client, error) {
	base, err := ParseAddr(addr)
	if err != nil {
		return nil, err
	}
	c := &Client{base: base, http: http.DefaultClient, pageSize: 10000}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// ParseAddr reads a server address as New does. A trailing /__admin or
// /__admin/ui (the admin API's URL or the dashboard's) is dropped.
func ParseAddr(addr string) (*url.URL, error) {
	s := strings.TrimSpace(addr)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("address %q: %w", addr, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("address %q: want http:// or https://", addr)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("address %q: want only a scheme, a host, a port and an optional path prefix", addr)
	}
	host, port := ReachableHost(u.Hostname()), u.Port()
	if port == "" && strings.HasSuffix(u.Host, ":") {
		return nil, fmt.Errorf("address %q: empty port", addr)
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("address %q: bad port %q", addr, port)
		}
		u.Host = net.JoinHostPort(host, port)
	} else {
		u.Host = host
	}
	// The admin API's own URL or the dashboard's, pasted as the address,
	// names the same server: its /__admin or /__admin/ui is not a prefix.
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/__admin/ui"), "/__admin")
	return u, nil
}

// ReachableHost is the host to ask a server listening on host: an
// unspecified host (0.0.0.0, ::, or none, as in ":8080") is the server
// listening on every interface, asked on loopback; any other is itself.
func ReachableHost(host string) string {
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return "127.0.0.1"
	}
	return host
}

// URL is the server's base URL, as the client asks it.
func (c *Client) URL() string { return c.base.String() }

// ErrUnreachable is wrapped by the errors of calls that got no HTTP
// answer at all: nothing listens at the address, or the connection broke.
var ErrUnreachable = errors.New("no server answered")

// StatusError is an admin call answered with a status other than the one
// expected, usually an RFC 9457 problem (a bad filter is a 400 naming
// the parameter; a missing or wrong token a 401).
type StatusError struct {
	Method, URL string
	StatusCode  int
	// Title and Detail come from the problem body; Detail is the start of
	// the body when it was not a problem.
	Title, Detail string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s %s: %d %s", e.Method, e.URL, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	switch e.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		if e.Detail == "" {
			msg += " (give the server's admin token: --admin-token or SCENARIOMOCK_ADMIN_TOKEN)"
		}
	case http.StatusNotFound:
		if e.Title == "" {
			msg += " (is a scenariomock server listening there?)"
		}
	}
	return msg
}

// do sends one admin call and decodes a JSON answer into out (nil: none
// expected).
func (c *Client) do(ctx context.Context, method, path string, q url.Values, out any) error {
	return c.doBody(ctx, method, path, q, nil, nil, out)
}

// doBody is do with a request body (nil for none) and its headers.
func (c *Client) doBody(ctx context.Context, method, path string, q url.Values, header http.Header, body io.Reader, out any) error {
	resp, u, err := c.send(ctx, method, path, q, header, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return statusError(method, u, resp)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode the answer: %w", method, u, err)
	}
	return nil
}

func (c *Client) send(ctx context.Context, method, path string, q url.Values, header http.Header, body io.Reader) (*http.Response, string, error) {
	u := *c.base
	u.Path += path
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, "", err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, "", fmt.Errorf("%s %s: %w: %w", method, u.Redacted(), ErrUnreachable, unwrapURLError(err))
	}
	return resp, u.Redacted(), nil
}

// unwrapURLError drops url.Error's "Get "…":" prefix, which the caller's
// message already has.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func statusError(method, u string, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &StatusError{Method: method, URL: u, StatusCode: resp.StatusCode}
	var p struct {
		Title  string   `json:"title"`
		Detail string   `json:"detail"`
		Errors []string `json:"errors"`
	}
	if strings.Contains(resp.Header.Get("Content-Type"), "json") && json.Unmarshal(body, &p) == nil && p.Title != "" {
		e.Title, e.Detail = p.Title, p.Detail
		if len(p.Errors) > 0 {
			// The errors are the reasons of the sentence before them:
			// "The event was not sent: no webhook endpoints are defined…".
			d := e.Detail
			if d == "" {
				d = e.Title
			}
			e.Detail = strings.TrimSuffix(d, ".") + ": " + strings.Join(p.Errors, "; ")
		}
	} else if s := strings.TrimSpace(string(body)); s != "" {
		if len(s) > 200 {
			s = s[:200] + "…"
		}
		e.Detail = s
	}
	return e
}

// Filter selects journal entries. Every field set must hold (AND); the
// zero Filter selects every entry. The server checks the values: a bad
// one is a StatusError 400 naming the parameter.
type Filter struct {
	Route string // the name of the route that answered
	// Session keeps the requests of one test session (the header
	// X-Scenariomock-Session or the path prefix /__session/NAME/).
	Session string
	Method  string // POST
	// Path is exact (/v1/payments) or a glob: * is one segment's
	// characters, ** anything (/v1/payments/*).
	Path string
	// Status is 201, or a class: 4xx.
	Status string
	// Headers, Query and Body are conditions by name: a header's value,
	// a query parameter's, and a value at a dotted path into a JSON body
	// ("amount", "customer.id", "items.0.sku").
	Headers, Query, Body map[string]string
	// Form is a URL-encoded form body's fields (Stripe's), by their keys
	// as sent: "amount", "metadata[order_id]".
	Form map[string]string
	// States are route states the request moved, by name: the state it
	// moved each to ({"order": "paid"}); the journal records one move a
	// request, so more than one name matches nothing.
	States map[string]string
	// StateKey is the per: key of the state the request moved (ord_7).
	StateKey string
	// Idempotency is the idempotency outcome: new, replayed, mismatch,
	// in-flight, missing-key or invalid-key.
	Idempotency string
	// Matched is "true" (a route answered) or "false" (none did), or ""
	// for either.
	Matched string
	// Proxied is "true" (an upstream was asked: a proxy: route or
	// --proxy-unmatched) or "false", or "" for both.
	Proxied string
	// Violating is "true" (the request, or the upstream's answer to it,
	// broke its OpenAPI operation: the entry has violations) or
	// "false", or "" for both.
	Violating string
	// Since is an RFC 3339 time or an entry ID: entries after it.
	Since string
	// Limit keeps the newest Limit entries that match (default 1000 on
	// the server, at most 10000). Count ignores it.
	Limit int
}

// Values is f as the admin API's query parameters.
func (f Filter) Values() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("route", f.Route)
	set("session", f.Session)
	set("method", f.Method)
	set("path", f.Path)
	set("status", f.Status)
	set("stateKey", f.StateKey)
	set("idempotency", f.Idempotency)
	set("matched", f.Matched)
	set("proxied", f.Proxied)
	set("violating", f.Violating)
	set("since", f.Since)
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	for prefix, m := range map[string]map[string]string{"header.": f.Headers, "query.": f.Query, "form.": f.Form, "body.": f.Body, "state.": f.States} {
		for k, v := range m {
			q.Set(prefix+k, v)
		}
	}
	return q
}

// String is f as its query string, with keys sorted: "route=create+payment&status=201".
func (f Filter) String() string {
	q := f.Values()
	q.Del("limit")
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.Quote(q.Get(k))
	}
	return strings.Join(parts, " ")
}

// Requests returns the newest entries that match f (at most f.Limit, or
// the server's default of 1000), oldest first, and how many matched in
// all before the limit.
func (c *Client) Requests(ctx context.Context, f Filter) (entries []state.Entry, total int, err error) {
	var out struct {
		Requests []state.Entry `json:"requests"`
		Total    int           `json:"total"`
	}
	if err := c.do(ctx, http.MethodGet, "/__admin/requests", f.Values(), &out); err != nil {
		return nil, 0, err
	}
	return out.Requests, out.Total, nil
}

// Count returns how many entries kept match f.
func (c *Client) Count(ctx context.Context, f Filter) (int, error) {
	q := f.Values()
	q.Del("limit")
	var out struct {
		Count *int `json:"count"`
	}
	if err := c.do(ctx, http.MethodGet, "/__admin/requests/count", q, &out); err != nil {
		return 0, err
	}
	if out.Count == nil {
		return 0, fmt.Errorf("GET %s/__admin/requests/count: the answer has no count", c.base)
	}
	return *out.Count, nil
}

// Clear empties the journal.
func (c *Client) Clear(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "/__admin/requests", nil, nil)
}

// Reset forgets all the server's runtime state: sequence positions,
// idempotency keys, collections (seeded again), counters, route states,
// the journal.
func (c *Client) Reset(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/__admin/reset", nil, nil)
}

// Route is one route the server serves, as GET /__admin/scenarios lists
// it.
type Route struct {
	Order   int      `json:"order"` // 1 for the first route tried
	Name    string   `json:"name"`
	Methods []string `json:"methods"` // none: any method
	Path    string   `json:"path"`
	Source  string   `json:"source"` // file:line:col
	When    []string `json:"when"`
	Hits    int64    `json:"hits"`
}

// Routes lists every route served, in match order, reading as many pages
// as there are.
func (c *Client) Routes(ctx context.Context) ([]Route, error) {
	var all []Route
	for {
		var page struct {
			Routes []Route `json:"routes"`
			Page   struct {
				Total int `json:"total"`
			} `json:"page"`
		}
		q := url.Values{"offset": {strconv.Itoa(len(all))}, "limit": {strconv.Itoa(c.pageSize)}}
		if err := c.do(ctx, http.MethodGet, "/__admin/scenarios", q, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Routes...)
		if len(page.Routes) == 0 || len(all) >= page.Page.Total {
			return all, nil
		}
	}
}

// ErrStreamEnded is returned by Stream when the server ended the stream
// (it shut down) before ctx ended.
var ErrStreamEnded = errors.New("the server ended the stream")

// Stream calls fn with each entry that matches f as the server records
// it, from the entries after the one with ID after: 0 replays every entry
// kept, then goes live; -1 starts with the entries recorded from now on.
// It returns when ctx ends (nil), when fn returns an error (that error),
// or when the stream breaks (ErrStreamEnded, or an error wrapping
// ErrUnreachable). f.Limit is ignored.
func (c *Client) Stream(ctx context.Context, f Filter, after int64, fn func(state.Entry) error) error {
	q := f.Values()
	q.Del("limit")
	if after >= 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	resp, u, err := c.send(ctx, http.MethodGet, "/__admin/requests/stream", q, http.Header{"Accept": {"text/event-stream"}}, nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return statusError(http.MethodGet, u, resp)
	}
	// The server sends a keep-alive comment every 15s: a stream silent
	// for three of them is a server that froze, or a network gone.
	idle := &idleBody{r: resp.Body}
	idle.timer = time.AfterFunc(streamIdle, func() { idle.silent.Store(true); resp.Body.Close() })
	defer idle.timer.Stop()
	err = readEvents(idle, fn)
	if ctx.Err() != nil {
		return nil
	}
	if idle.silent.Load() {
		return fmt.Errorf("GET %s: %w: nothing, not even a keep-alive, for %s", u, ErrUnreachable, streamIdle)
	}
	if err == nil {
		return fmt.Errorf("GET %s: %w", u, ErrStreamEnded)
	}
	return err
}

// readEvents reads text/event-stream (the WHATWG HTML spec's event
// stream format) and calls fn with the data of each "request" event.
func readEvents(r io.Reader, fn func(state.Entry) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20) // an entry's body may be 64 KiB of escapes
	var event string
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "": // dispatch
			if data.Len() > 0 && (event == "" || event == "request") {
				var e state.Entry
				if err := json.Unmarshal(data.Bytes(), &e); err != nil {
					return fmt.Errorf("decode a streamed entry: %w", err)
				}
				if err := fn(e); err != nil {
					return err
				}
			}
			event = ""
			data.Reset()
		case strings.HasPrefix(line, ":"): // a comment: keep-alive
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				event = value
			case "data":
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.WriteString(value)
			}
		}
	}
	return sc.Err()
}

// streamIdle is how long Stream waits for a byte before it gives up on the
// server: three of its keep-alive periods.
var streamIdle = 45 * time.Second

// idleBody is a stream's body whose every read pushes back its timer.
type idleBody struct {
	r      io.Reader
	timer  *time.Timer
	silent atomic.Bool
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		b.timer.Reset(streamIdle)
	}
	return n, err
}
