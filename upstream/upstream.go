package upstream

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultTimeout is how long an upstream may take to answer, and then
// to send each further piece of its body, when a route gives no timeout.
const DefaultTimeout = 30 * time.Second

// Target is where one route forwards to, parsed and checked at load. A
// Target is immutable and safe for concurrent use.
type Target struct {
	url     *url.URL
	timeout time.Duration
	set     []header // canonical names, applied after remove
	remove  []string // canonical names
}

type header struct{ name, value string }

// Config is a route's proxy: block as written.
type Config struct {
	// URL is the upstream's base: http or https, a host, and an optional
	// base path that request paths are appended to.
	URL string
	// Timeout bounds the wait for the upstream's answer and for each
	// further piece of its body; zero means DefaultTimeout.
	Timeout time.Duration
	// Set headers replace the request's own; Remove names headers not
	// forwarded.
	Set    map[string]string
	Remove []string
}

// ParseURL checks that raw is an absolute http or https URL with a host
// and no query or fragment, the only upstreams a route may name.
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("not a URL: %w", err)
	}
	switch u.Scheme {
	case "http", "https":
	case "":
		return nil, fmt.Errorf("%q has no scheme: want http:// or https://", raw)
	default:
		return nil, fmt.Errorf("scheme %q is not supported: want http or https", u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("%q has no host", raw)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%q carries credentials in the URL: set an Authorization header instead", Redacted(u))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%q has a query or fragment: want a base URL", raw)
	}
	return u, nil
}

// PointsAt reports whether raw, an upstream's URL, addresses the listener
// at addr: the same port, and a host that reaches that listener without a
// DNS lookup (its IP; localhost or a loopback IP when it listens on
// loopback or on every address; any address of this machine when it
// listens on every address). A name that would need resolving is not
// looked up, so a loop through one is caught only when a request comes
// back (Looped).
func PointsAt(raw string, addr net.Addr) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	ta, ok := addr.(*net.TCPAddr)
	if !ok {
		return false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if port != strconv.Itoa(ta.Port) {
		return false
	}
	host := strings.ToLower(u.Hostname())
	every := ta.IP == nil || ta.IP.IsUnspecified()
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return every || ta.IP.IsLoopback()
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return false
	case !every:
		return ip.Equal(ta.IP)
	case ip.IsLoopback() || ip.IsUnspecified():
		return true
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// Redacted returns u as text without its password, for messages.
func Redacted(u *url.URL) string { return u.Redacted() }

// NewTarget checks c and returns the Target it describes.
func NewTarget(c Config) (*Target, error) {
	u, err := ParseURL(c.URL)
	if err != nil {
		return nil, err
	}
	if c.Timeout < 0 {
		return nil, fmt.Errorf("timeout %s is negative", c.Timeout)
	}
	t := &Target{url: u, timeout: c.Timeout}
	if t.timeout == 0 {
		t.timeout = DefaultTimeout
	}
	for _, name := range c.Remove {
		if !validHeaderName(name) {
			return nil, fmt.Errorf("remove: %q is not a header name", name)
		}
		t.remove = append(t.remove, textproto.CanonicalMIMEHeaderKey(name))
	}
	for name, v := range c.Set {
		if !validHeaderName(name) {
			return nil, fmt.Errorf("set: %q is not a header name", name)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("set: the value of %s has a line break or NUL", name)
		}
		cn := textproto.CanonicalMIMEHeaderKey(name)
		if isHopByHop(cn) || cn == "Host" {
			return nil, fmt.Errorf("set: %s is not forwarded (hop-by-hop or set by the proxy)", cn)
		}
		t.set = append(t.set, header{cn, v})
	}
	return t, nil
}

// URL returns the upstream's base URL as text.
func (t *Target) URL() string { return t.url.String() }

// Timeout returns the route's timeout.
func (t *Target) Timeout() time.Duration { return t.timeout }

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}

// hopByHop are the connection-specific fields of RFC 9110 §7.6.1, and
// the de facto ones (Proxy-Connection, Keep-Alive) that proxies drop too.
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func isHopByHop(canonical string) bool {
	for _, h := range hopByHop {
		if h == canonical {
			return true
		}
	}
	return false
}

// removeHopByHop deletes the hop-by-hop fields of h, those named in its
// Connection field first.
func removeHopByHop(h http.Header) {
	for name := range connectionOptions(h) {
		delete(h, textproto.CanonicalMIMEHeaderKey(name))
	}
	for _, name := range hopByHop {
		delete(h, name) // canonical already
	}
}

// connectionOptions yields the names h's Connection field lists, trimmed,
// empty ones left out.
func connectionOptions(h http.Header) iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, v := range h["Connection"] {
			for name := range strings.SplitSeq(v, ",") {
				if name = textproto.TrimString(name); name != "" && !yield(name) {
					return
				}
			}
		}
	}
}

// MaxHeaderBytes bounds an upstream's answer's head (status line and
// header fields); a larger one is a 502.
const MaxHeaderBytes = 1 << 20

// Options configures a Proxy.
type Options struct {
	// MaxIdleConns bounds the idle connections kept over all upstreams
	// (default 512); MaxIdleConnsPerHost per upstream (default 256). The
	// per-host bound must cover the client connections that are forwarded
	// at once: past it, every answer closes a connection and the next
	// request dials one (the load harness's 32 connections measured 0.24
	// of direct with 16, from churning TCP connections).
	MaxIdleConns        int
	MaxIdleConnsPerHost int
	// IdleConnTimeout closes connections idle this long (default 90s).
	IdleConnTimeout time.Duration
	// DialTimeout bounds connecting, TLS included (default 10s; a
	// route's shorter timeout still applies).
	DialTimeout time.Duration
	// ID names this mock in the Via entry that detects loops; default a
	// random one. Replicas that proxy to each other need distinct IDs.
	ID string
	// TLSInsecure skips verifying the upstream's certificate, for test
	// upstreams with self-signed certificates.
	TLSInsecure bool
}

// Proxy forwards requests to upstreams. It is safe for concurrent use; its
// owner calls Close, which closes its idle connections.
type Proxy struct {
	transport *http.Transport
	via       string // "1.1 scenariomock-<id>"
	closed    atomic.Bool
	inFlight  sync.WaitGroup
}

// New returns a Proxy with its own transport. The transport ignores the
// environment's HTTP_PROXY settings: a mock forwards where its file says.
func New(o Options) *Proxy {
	if o.MaxIdleConns <= 0 {
		o.MaxIdleConns = 512
	}
	if o.MaxIdleConnsPerHost <= 0 {
		o.MaxIdleConnsPerHost = 256
	}
	if o.IdleConnTimeout <= 0 {
		o.IdleConnTimeout = 90 * time.Second
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.ID == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		o.ID = hex.EncodeToString(b[:])
	}
	d := &net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		MaxIdleConns:          o.MaxIdleConns,
		MaxIdleConnsPerHost:   o.MaxIdleConnsPerHost,
		IdleConnTimeout:       o.IdleConnTimeout,
		TLSHandshakeTimeout:   o.DialTimeout,
		ExpectContinueTimeout: time.Second,
		// The upstream's Content-Encoding is passed through as sent; the
		// transport must not ask for gzip and decode it behind our back.
		DisableCompression: true,
		ForceAttemptHTTP2:  true,
		// An answer's head is held, passed on and journaled whole: as
		// much as a request's may be (net/http's DefaultMaxHeaderBytes),
		// not the transport's 10 MB, which the journal kept per entry.
		MaxResponseHeaderBytes: MaxHeaderBytes,
	}
	if o.TLSInsecure {
		tr.TLSClientConfig = insecureTLS()
	}
	return &Proxy{transport: tr, via: "1.1 scenariomock-" + o.ID}
}

// Close stops new forwards and closes idle connections. Forwards in
// flight end with their requests' contexts (the server's shutdown).
func (p *Proxy) Close() {
	p.closed.Store(true)
	p.transport.CloseIdleConnections()
}

// Looped reports whether r already passed through this mock as a
// forwarded request: the upstream was the mock itself.
func (p *Proxy) Looped(r *http.Request) bool {
	for _, v := range r.Header["Via"] {
		for e := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(e) == p.via {
				return true
			}
		}
	}
	return false
}

// Response is an upstream's answer, its body still on the connection.
// The caller reads or closes Body exactly once (WriteTo or Discard).
type Response struct {
	Status int
	// Header is the upstream's, less hop-by-hop fields.
	Header http.Header
	Body   io.ReadCloser
	// ContentLength is the body's length as the upstream declared it, -1
	// when it did not (a chunked or close-delimited body).
	ContentLength int64
	// Trailer is the upstream's trailer: the fields it declared, their
	// values (and any undeclared ones) filled in once Body reached EOF.
	Trailer http.Header
	// Latency is the time from sending the request to the answer's
	// headers.
	Latency time.Duration
	// Upstream is the URL the request went to, for the journal.
	Upstream string
}

// forwarding is what one forward needs, in one allocation: the outbound
// request, its URL, the values of the headers the proxy sets, the
// watchdog and the answer handed back.
type forwarding struct {
	resp Response
	body watchedBody
	dog  watchdog
	url  url.URL
	req  http.Request
	// vals hold X-Forwarded-Proto and -Host (and -For without a prior
	// value), each the one value of its header.
	vals [3]string
}

// Do forwards r to t and returns the upstream's answer once its headers
// arrive. r's body, if any, is streamed to the upstream. The error, if
// any, is an *Error. Body reads after Do keep the route's timeout: each
// read must get data within it.
func (p *Proxy) Do(r *http.Request, t *Target) (*Response, error) {
	var body io.ReadCloser
	if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		// The transport closes a request body it was given; the server
		// owns the incoming one, so hand it a wrapper that does not.
		body = io.NopCloser(r.Body)
	}
	return p.do(r.Context(), r, body, r.ContentLength, nil, t)
}

// DoBody is Do for a request whose body the caller has read already
// (body, nil for none), under ctx rather than r's context. The transport
// may send it again on a fresh connection when a kept-alive one turns out
// closed by the upstream, as it does for a request without a body (for a
// method that is not idempotent, only with an Idempotency-Key, as
// net/http decides).
func (p *Proxy) DoBody(ctx context.Context, r *http.Request, body []byte, t *Target) (*Response, error) {
	if len(body) == 0 {
		return p.do(ctx, r, nil, 0, nil, t)
	}
	return p.do(ctx, r, io.NopCloser(bytes.NewReader(body)), int64(len(body)), body, t)
}

func (p *Proxy) do(parent context.Context, r *http.Request, body io.ReadCloser, length int64, again []byte, t *Target) (*Response, error) {
	f := &forwarding{}
	t.resolve(&f.url, r.URL)
	target := f.url.String()
	if p.closed.Load() {
		return nil, &Error{Upstream: target, Status: http.StatusBadGateway, Cause: "the proxy is shut down", Err: errClosed}
	}
	if p.Looped(r) {
		return nil, &Error{Upstream: target, Status: http.StatusLoopDetected, Cause: "the request came back through this mock: the upstream is the mock itself", Err: ErrLoop}
	}
	if proto := upgradeAsked(r.Header); proto != "" {
		return nil, &Error{Upstream: target, Status: http.StatusNotImplemented, Err: ErrUpgrade,
			Cause: "the request asks to switch to " + proto + " (Upgrade), which the proxy does not tunnel: it forwards HTTP requests and their answers only"}
	}
	ctx, cancel := context.WithCancel(parent)
	w := &f.dog
	w.start(t.timeout, cancel)
	out := p.outbound(ctx, f, r, t, body, length, again)
	start := time.Now()
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		fired := w.stop()
		cancel()
		return nil, classify(target, t.timeout, fired, parent.Err(), err)
	}
	latency := time.Since(start)
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// Upgrade is hop-by-hop and was not sent: an upstream that
		// switches anyway would hold the client's answer until the
		// timeout, waiting for the other protocol's first bytes.
		w.stop()
		resp.Body.Close()
		cancel()
		return nil, &Error{Upstream: target, Status: http.StatusBadGateway, Err: ErrUpgrade,
			Cause: "it switched protocols (101) though no upgrade was forwarded"}
	}
	w.reset()
	removeHopByHop(resp.Header)
	f.body = watchedBody{rc: resp.Body, w: w, cancel: cancel, parent: parent, upstream: target, timeout: t.timeout}
	f.resp = Response{
		Status:        resp.StatusCode,
		Header:        resp.Header,
		Body:          &f.body,
		ContentLength: resp.ContentLength,
		Trailer:       resp.Trailer,
		Latency:       latency,
		Upstream:      target,
	}
	return &f.resp, nil
}

// resolve sets u to the URL a request for in goes to: the target's base
// path joined with the request's path, the request's query kept.
func (t *Target) resolve(u *url.URL, in *url.URL) {
	*u = *t.url
	u.Path = joinPath(t.url.Path, in.Path)
	if in.RawPath != "" || t.url.RawPath != "" {
		u.RawPath = joinPath(t.url.EscapedPath(), in.EscapedPath())
	}
	u.RawQuery = in.RawQuery
}

func joinPath(a, b string) string {
	switch {
	case a == "" || a == "/":
		if b == "" {
			return "/"
		}
		return b
	case b == "" || b == "/":
		return a
	}
	return strings.TrimSuffix(a, "/") + "/" + strings.TrimPrefix(b, "/")
}

// noUserAgent keeps net/http from adding Go's own User-Agent to a request
// that had none. Shared: the transport only reads header values.
var noUserAgent = []string{""}

func (p *Proxy) outbound(ctx context.Context, f *forwarding, r *http.Request, t *Target, body io.ReadCloser, length int64, again []byte) *http.Request {
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	removeHopByHop(h)
	for _, name := range t.remove {
		delete(h, name)
	}
	for _, hv := range t.set {
		h[hv.name] = []string{hv.value}
	}
	// The values set here are slices of f.vals, full ones so that an
	// append elsewhere copies rather than writes into the next.
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if prior := h["X-Forwarded-For"]; len(prior) > 0 {
			h["X-Forwarded-For"] = []string{strings.Join(prior, ", ") + ", " + ip}
		} else {
			f.vals[2] = ip
			h["X-Forwarded-For"] = f.vals[2:3:3]
		}
	}
	f.vals[0] = "http"
	if r.TLS != nil {
		f.vals[0] = "https"
	}
	f.vals[1] = r.Host
	h["X-Forwarded-Proto"] = f.vals[0:1:1]
	h["X-Forwarded-Host"] = f.vals[1:2:2]
	h["Via"] = append(h["Via"], p.via) // a clone's values: appending copies
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = noUserAgent // net/http would add Go's own
	}
	f.req = http.Request{
		Method:        r.Method,
		URL:           &f.url,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          body,
		ContentLength: length,
		Host:          f.url.Host,
	}
	if body == nil {
		f.req.ContentLength = 0
	}
	if again != nil {
		f.req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(again)), nil }
	}
	return f.req.WithContext(ctx)
}

// WriteTo writes the answer to w: status, headers, then the body as it
// arrives, flushed after each piece when the length is not known in
// advance (event streams, chunked answers). It closes Body. An error after
// the headers are written means the client got a cut answer.
func (resp *Response) WriteTo(w http.ResponseWriter) (int64, error) {
	return resp.StreamTo(w, 0)
}

// StreamTo is WriteTo with a write deadline per piece: each write to w
// must end within window of its start, and none is set while the next
// piece is awaited from the upstream (that wait has the upstream's own
// timeout). So a client that stops reading is dropped, and an answer that
// streams steadily for longer than window is not cut. A window of 0 leaves
// w's deadline as it is.
func (resp *Response) StreamTo(w http.ResponseWriter, window time.Duration) (int64, error) {
	defer resp.Body.Close()
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = vs
	}
	flush := resp.Header.Get("Content-Length") == ""
	// The trailers declared are declared again before the head (Trailer
	// itself is hop-by-hop and was dropped), so that the client expects
	// them. An HTTP/2 upstream may declare a length too; over HTTP/1.1 a
	// body of known length carries no trailers, so the length is dropped
	// and the body chunked (HTTP/2 clients need no length either).
	trailers := false
	for k := range resp.Trailer {
		if forwardableTrailer(k) {
			h.Add("Trailer", k)
			trailers = true
		}
	}
	if trailers && !flush {
		delete(h, "Content-Length")
	}
	w.WriteHeader(resp.Status)
	rc := http.NewResponseController(w)
	buf := bufPool.Get().(*[]byte)
	defer bufPool.Put(buf)
	var n int64
	for {
		if window > 0 {
			_ = rc.SetWriteDeadline(time.Time{})
		}
		m, rerr := resp.Body.Read(*buf)
		if m > 0 {
			if window > 0 {
				_ = rc.SetWriteDeadline(time.Now().Add(window))
			}
			k, werr := w.Write((*buf)[:m])
			n += int64(k)
			if werr != nil {
				return n, werr
			}
			if flush {
				_ = rc.Flush()
			}
		}
		if rerr == io.EOF {
			// The transport fills resp.Trailer at EOF, and only then;
			// net/http sends what is set here after the body (declared
			// names as they are, others with http.TrailerPrefix).
			copyTrailer(h, resp.Trailer)
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// Trailers returns the upstream's trailer fields that may be passed on,
// a copy, once Body reached EOF (the transport fills them then); nil for
// none. For an answer held whole before it is written, whose trailers are
// declared and set by its writer.
func (resp *Response) Trailers() http.Header {
	var out http.Header
	for k, vs := range resp.Trailer {
		if len(vs) > 0 && forwardableTrailer(k) {
			if out == nil {
				out = http.Header{}
			}
			out[textproto.CanonicalMIMEHeaderKey(k)] = append([]string(nil), vs...)
		}
	}
	return out
}

// forwardableTrailer reports whether the trailer field k may be passed on:
// not a hop-by-hop field nor one that frames the message (RFC 9110 §6.5.1).
func forwardableTrailer(k string) bool {
	k = textproto.CanonicalMIMEHeaderKey(k)
	return !isHopByHop(k) && k != "Content-Length" && k != "Host" && k != "Content-Encoding" && k != "Content-Type" && k != "Content-Range"
}

// copyTrailer sets the upstream's trailer fields in h, the header of the
// answer being written, after its body.
func copyTrailer(h, trailer http.Header) {
	if len(trailer) == 0 {
		return
	}
	declared := map[string]bool{}
	for _, k := range h.Values("Trailer") {
		declared[k] = true
	}
	for k, vs := range trailer {
		if len(vs) == 0 || !forwardableTrailer(k) {
			continue
		}
		if declared[k] {
			h[k] = vs
		} else {
			h[http.TrailerPrefix+k] = vs
		}
	}
}

// Discard closes the answer unread: a fault threw it away.
func (resp *Response) Discard() { _ = resp.Body.Close() }

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// watchdog cancels a forward when no progress was made for timeout.
type watchdog struct {
	t      *time.Timer
	d      time.Duration
	cancel context.CancelFunc
	fired  atomic.Bool
}

func (w *watchdog) start(d time.Duration, cancel context.CancelFunc) {
	w.d, w.cancel = d, cancel
	w.t = time.AfterFunc(d, w.fire)
}

func (w *watchdog) fire() { w.fired.Store(true); w.cancel() }

func (w *watchdog) reset() { w.t.Reset(w.d) }

// stop stops the timer and reports whether it had fired.
func (w *watchdog) stop() bool { w.t.Stop(); return w.fired.Load() }

// watchedBody resets the watchdog on each read with data and turns a read
// cut by it, or by the end of the caller's context, into an *Error.
type watchedBody struct {
	rc     io.ReadCloser
	w      *watchdog
	cancel context.CancelFunc
	// parent is the caller's context: a read it cut is the client gone,
	// as classify says of the wait for the head, not the upstream's fault.
	parent   context.Context
	upstream string
	timeout  time.Duration
	once     sync.Once
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.w.reset()
	}
	if err != nil && err != io.EOF {
		if b.w.fired.Load() {
			return n, &Error{Upstream: b.upstream, Status: http.StatusGatewayTimeout, Timeout: true,
				Cause: fmt.Sprintf("the body stalled for %s", b.timeout), Err: err}
		}
		if b.parent.Err() != nil {
			return n, &Error{Upstream: b.upstream, Status: http.StatusBadGateway, ClientGone: true,
				Cause: "the client left while the answer was read", Err: err}
		}
		return n, &Error{Upstream: b.upstream, Status: http.StatusBadGateway, Cause: "reading the body: " + cause(err), Err: err}
	}
	return n, err
}

func (b *watchedBody) Close() error {
	var err error
	b.once.Do(func() {
		b.w.stop()
		err = b.rc.Close()
		b.cancel()
	})
	return err
}

// ErrLoop is wrapped by the *Error of a request that came back through the
// mock that forwarded it.
var ErrLoop = errors.New("proxy loop")

var errClosed = errors.New("proxy closed")

// ErrUpgrade is wrapped by the *Error of a request that asks to switch
// protocols (a WebSocket handshake), answered 501 without forwarding, and
// of an upstream that switched unasked, a 502.
var ErrUpgrade = errors.New("protocol upgrade not tunnelled")

// upgradeAsked returns the protocols r's header asks to switch to (its
// Upgrade field, with Connection naming it), "" for none. An offer of
// h2c alone is not one: a server may ignore it and answer in HTTP/1.1
// (curl --http2 sends it on http:// URLs), as the upstream then does.
func upgradeAsked(h http.Header) string {
	up := h["Upgrade"]
	if len(up) == 0 {
		return ""
	}
	named := false
	for name := range connectionOptions(h) {
		if strings.EqualFold(name, "upgrade") {
			named = true
			break
		}
	}
	if !named {
		return ""
	}
	var protos []string
	for _, v := range up {
		for p := range strings.SplitSeq(v, ",") {
			if p = textproto.TrimString(p); p != "" && !strings.EqualFold(p, "h2c") {
				protos = append(protos, p)
			}
		}
	}
	return strings.Join(protos, ", ")
}

// Error is a forward that failed. Status is what the server answers: 502
// for an unreachable upstream or a broken answer, 504 for one that took
// longer than the route's timeout, 508 for a loop. It is safe to show:
// Upstream carries no credentials.
type Error struct {
	Upstream string
	Status   int
	// Timeout reports that the route's timeout ran out.
	Timeout bool
	// ClientGone reports that the client left first; nothing is answered.
	ClientGone bool
	Cause      string
	Err        error
}

func (e *Error) Error() string { return "upstream " + e.Upstream + ": " + e.Cause }
func (e *Error) Unwrap() error { return e.Err }

// Title is the problem's title for e's status.
func (e *Error) Title() string {
	switch e.Status {
	case http.StatusGatewayTimeout:
		return "The upstream did not answer in time"
	case http.StatusLoopDetected:
		return "Proxy loop"
	case http.StatusNotImplemented:
		return "The proxy does not tunnel protocol upgrades"
	}
	return "The upstream could not be reached"
}

func classify(target string, timeout time.Duration, fired bool, clientErr, err error) *Error {
	switch {
	case fired:
		return &Error{Upstream: target, Status: http.StatusGatewayTimeout, Timeout: true,
			Cause: fmt.Sprintf("no answer within %s", timeout), Err: err}
	case clientErr != nil:
		return &Error{Upstream: target, Status: http.StatusBadGateway, ClientGone: true,
			Cause: "the client left before the upstream answered", Err: err}
	}
	return &Error{Upstream: target, Status: http.StatusBadGateway, Cause: cause(err), Err: err}
}

// cause says in a few words why a round trip failed.
func cause(err error) string {
	var dns *net.DNSError
	var op *net.OpError
	var cert *tls.CertificateVerificationError
	switch {
	case errors.As(err, &cert):
		// A self-signed test sandbox, most often: say what accepts it.
		return "its TLS certificate is not trusted (" + cert.Err.Error() + "); --proxy-insecure accepts a self-signed test upstream"
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "no such host " + dns.Name
		}
		return "resolving " + dns.Name + ": " + dns.Err
	case errors.As(err, &op) && op.Op == "dial":
		if op.Timeout() {
			return "connecting timed out"
		}
		msg := op.Err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		return "connecting: " + msg
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection closed before a complete answer"
	}
	return err.Error()
}

func insecureTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true} //nolint:gosec // asked for: test upstreams with self-signed certificates
}
