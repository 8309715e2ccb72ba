package record

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/scenariomock/scenariomock/internal/contentcoding"
)

// Exchange is one request forwarded to the upstream and its answer.
type Exchange struct {
	Method string
	// Path is the request's path as sent (escaped), RawQuery its query.
	Path          string
	RawQuery      string
	RequestHeader http.Header
	RequestBody   []byte
	Status        int
	// Header and Body are the upstream's answer as sent: Body still in
	// its Content-Encoding.
	Header  http.Header
	Body    []byte
	Latency time.Duration
}

// Options says what a recording writes.
type Options struct {
	// Name is the scenario file's name: field and file name (default
	// "recorded").
	Name string
	// Upstream is the upstream's base URL; its absolute URLs in bodies and
	// headers become MockURL.
	Upstream string
	MockURL  string
	// Headers are the request headers written (in a comment above each
	// response, redacted when they look like credentials); no other
	// request header is written.
	Headers []string
	// Latency writes each answer's upstream latency as its delay:.
	Latency bool
	// SequencePer, when set (header.Idempotency-Key), writes sequence: {
	// per: ... } on every route with a responses: list, so that each key
	// replays the sequence from its start; the list is then the answers
	// one key got, the key that made the most calls (for a header. or
	// query. attribute; for others, every answer in order).
	SequencePer string
	// MaxBody bounds a recorded body, decoded (default 10 MiB); an
	// exchange over it is skipped and counted.
	MaxBody int
	// MaxExchanges bounds what a Recorder keeps (default 10,000).
	MaxExchanges int
	// InlineLimit is the largest text body written inline (default 64
	// KiB); larger ones go to body files.
	InlineLimit int
}

func (o *Options) setDefaults() {
	if o.Name == "" {
		o.Name = "recorded"
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 10 << 20
	}
	if o.MaxExchanges <= 0 {
		o.MaxExchanges = 10000
	}
	if o.InlineLimit <= 0 {
		o.InlineLimit = 64 << 10
	}
	o.Upstream = strings.TrimSuffix(o.Upstream, "/")
	o.MockURL = strings.TrimSuffix(o.MockURL, "/")
}

// Recorder collects exchanges. It is safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex // guards opts, ex and skipped
	writing sync.Mutex // held by Write from its snapshot to its last rename
	opts    Options
	ex      []Exchange
	skipped int
}

// New returns an empty Recorder.
func New(o Options) *Recorder {
	o.setDefaults()
	return &Recorder{opts: o}
}

// Add keeps a copy of x. Past Options.MaxExchanges, with a body over
// Options.MaxBody, or with a status a scenario cannot answer with (below
// 200, as a 101, or above 599; Render leaves them out), x is counted as
// skipped instead.
func (r *Recorder) Add(x Exchange) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ex) >= r.opts.MaxExchanges || len(x.Body) > r.opts.MaxBody || len(x.RequestBody) > r.opts.MaxBody || !servable(x.Status) {
		r.skipped++
		return
	}
	x.RequestHeader = x.RequestHeader.Clone()
	x.Header = x.Header.Clone()
	x.RequestBody = bytes.Clone(x.RequestBody)
	x.Body = bytes.Clone(x.Body)
	r.ex = append(r.ex, x)
}

// servable reports whether a scenario can answer with status: a final
// answer (1xx are informational, the client's transport consumes 100 and
// 103, and a 101 switches protocols, which a canned answer cannot).
func servable(status int) bool { return status >= 200 && status <= 599 }

// SetMockURL sets the address the upstream's absolute URLs are rewritten
// to (Options.MockURL): the mock's, known once its listener is bound (a
// port of 0 picks one).
func (r *Recorder) SetMockURL(u string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.opts.MockURL = strings.TrimSuffix(u, "/")
}

// Len returns how many exchanges the Recorder holds.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ex)
}

// Skip counts an exchange that was not handed to Add as skipped: its
// answer, too large to hold, was streamed, or there was no upstream
// answer to record (the upstream unreachable or too slow).
func (r *Recorder) Skip() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.skipped++
}

// Skipped returns how many exchanges Add did not keep, and Skip counted.
func (r *Recorder) Skipped() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skipped
}

// Write renders what was recorded and writes it into dir: the scenario
// file and its body files. Nothing is written when Render fails. It
// returns the paths written.
func (r *Recorder) Write(dir string) ([]string, error) {
	// Writes go one at a time, in the order of their snapshots: two that
	// overlapped (POST /__admin/recording twice, or with shutdown) could
	// otherwise rename the older recording over the newer one.
	r.writing.Lock()
	defer r.writing.Unlock()
	r.mu.Lock()
	ex, opts := slices.Clone(r.ex), r.opts
	r.mu.Unlock()
	files, err := Render(ex, opts)
	if err != nil {
		return nil, err
	}
	return WriteFiles(dir, files)
}

// CheckDir makes dir if needed and checks that files can be written in
// it, so that a recording fails at start rather than when it stops.
func CheckDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("recording directory: %w", err)
	}
	f, err := os.CreateTemp(dir, ".record-check-*")
	if err != nil {
		return fmt.Errorf("recording directory %s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// WriteFiles writes files (relative names) under dir, each through a
// temporary file renamed into place.
func WriteFiles(dir string, files map[string][]byte) ([]string, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	var written []string
	for _, name := range names {
		full := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return written, err
		}
		tmp, err := os.CreateTemp(filepath.Dir(full), ".record-*")
		if err != nil {
			return written, err
		}
		_, werr := tmp.Write(files[name])
		cerr := tmp.Close()
		if werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = os.Rename(tmp.Name(), full)
		}
		if werr != nil {
			os.Remove(tmp.Name())
			return written, fmt.Errorf("write %s: %w", full, werr)
		}
		written = append(written, full)
	}
	return written, nil
}

// Capture keeps up to a limit of what is read through it, to record a
// body that streams to the client. It is not safe for concurrent use.
type Capture struct {
	rc        io.ReadCloser
	buf       bytes.Buffer
	limit     int
	truncated bool
}

// NewCapture returns rc teed into a buffer of at most limit bytes.
func NewCapture(rc io.ReadCloser, limit int) *Capture { return &Capture{rc: rc, limit: limit} }

func (c *Capture) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	if n > 0 && !c.truncated {
		if c.buf.Len()+n > c.limit {
			c.truncated = true
			c.buf = bytes.Buffer{}
		} else {
			c.buf.Write(p[:n])
		}
	}
	return n, err
}

// Close closes the underlying body.
func (c *Capture) Close() error { return c.rc.Close() }

// Bytes returns what was read, and false when it passed the limit (then
// the exchange must not be recorded: its body would be wrong).
func (c *Capture) Bytes() ([]byte, bool) { return c.buf.Bytes(), !c.truncated }

// redacted replaces every credential that Render writes.
const redacted = "REDACTED"

// route is one method, path template and query and the exchanges it
// answered.
type route struct {
	method, path string
	vars         int
	// query is the query the route's requests sent, as conditions: each
	// parameter sent once, but those named like credentials and the
	// sequence's own (Options.SequencePer); nil for none.
	query url.Values
	// rng is the Range header its requests sent, a condition, for an
	// answer to that range only (206, 416); "" for none. ifRange is their
	// If-Range, a condition with it: the part answers a copy of that
	// version only.
	rng, ifRange string
	ex           []*Exchange
}

// conds is how many conditions the route's when: holds.
func (rt *route) conds() int {
	n := len(rt.query)
	if rt.rng != "" {
		n++
	}
	if rt.ifRange != "" {
		n++
	}
	return n
}

// rangeOf returns the Range header x's answer is to, and its If-Range, as
// conditions: for a 206 or a 416, answers to that range only, which a
// plain GET must not get back (a 200 to a Range the upstream ignored is
// the full answer and answers any), and, with If-Range, to a client whose
// copy is that version only (RFC 9110 §13.1.5: to another validator the
// upstream sends the whole answer, a 200; a part would be spliced into
// the wrong copy). "" for none, and for a value YAML cannot hold (not
// UTF-8).
func rangeOf(x *Exchange) (rng, ifRange string) {
	if x.Status != http.StatusPartialContent && x.Status != http.StatusRequestedRangeNotSatisfiable {
		return "", ""
	}
	rng, ifRange = x.RequestHeader.Get("Range"), x.RequestHeader.Get("If-Range")
	if rng == "" || !utf8.ValidString(rng) {
		return "", ""
	}
	if !utf8.ValidString(ifRange) {
		ifRange = ""
	}
	return rng, ifRange
}

// conditions returns the parameters of raw a route's when: tests: those
// sent once, not named like a credential, nor per (query.<name>, the
// parameter a sequence is kept per), which every call changes. A
// parameter a scenario file cannot name is no condition either: an empty
// name or YAML's merge key << (the loader refuses them), or a name or
// value that is not UTF-8 (?q=%ff; YAML cannot hold it, and the whole
// recording would fail to encode).
func conditions(raw, per string) url.Values {
	q, err := url.ParseQuery(raw)
	if err != nil || len(q) == 0 {
		return nil
	}
	seq, isQuery := strings.CutPrefix(per, "query.")
	out := url.Values{}
	for name, vs := range q {
		if len(vs) != 1 || name == "" || name == "<<" || !utf8.ValidString(name) || !utf8.ValidString(vs[0]) {
			continue
		}
		if !isSecretName(name) && (!isQuery || name != seq) {
			out[name] = vs
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Render returns the files of a recording: "<name>.yaml" and the body
// files it names under "bodies/". It fails, returning nothing, when a file
// would contain a credential value seen in the traffic.
func Render(exchanges []Exchange, o Options) (map[string][]byte, error) {
	o.setDefaults()
	secrets := map[string]string{} // value -> where it was seen
	var routes []*route
	byKey := map[string]*route{}
	all := map[string][]*Exchange{} // method and path → its calls, in order
	for i := range exchanges {
		x := &exchanges[i]
		collectSecrets(x, secrets)
		if !servable(x.Status) { // Recorder.Add counts them as skipped
			continue
		}
		// A route's path is matched against a request's decoded path (as
		// url.URL.Path has it): /files/My%20Doc.pdf is the route
		// /files/My Doc.pdf; written as sent, it answered nothing.
		p, err := url.PathUnescape(x.Path)
		if err != nil {
			p = x.Path
		}
		path, vars := Template(p)
		// Calls with another query are another route, which answers
		// that query only (as WireMock records its stubs): ?limit=3 and
		// ?limit=5 replay their own answers in any order, where one
		// sequence replayed them in the order recorded.
		query := conditions(x.RawQuery, o.SequencePer)
		// A part of the answer (206) or a range refused (416) answers
		// that Range only: without the condition, a plain GET of the
		// path served back got the part.
		rng, ifRange := rangeOf(x)
		key := x.Method + " " + path + "?" + query.Encode()
		if rng != "" {
			key += " Range: " + rng
		}
		if ifRange != "" {
			key += " If-Range: " + ifRange
		}
		rt := byKey[key]
		if rt == nil {
			rt = &route{method: x.Method, path: path, vars: vars, query: query, rng: rng, ifRange: ifRange}
			byKey[key] = rt
			routes = append(routes, rt)
		}
		rt.ex = append(rt.ex, x)
		if rng == "" {
			all[x.Method+" "+path] = append(all[x.Method+" "+path], x)
		}
	}
	// A path whose every call had a query also gets a route without
	// conditions, last of its routes, answering its calls in the order
	// recorded (as one sequence did before queries were conditions): a
	// query never recorded (a cache-buster, a timestamp) is answered, not
	// a 404.
	for i, n := 0, len(routes); i < n; i++ {
		k := routes[i].method + " " + routes[i].path
		if exs, ok := all[k]; ok && byKey[k+"?"] == nil {
			rt := &route{method: routes[i].method, path: routes[i].path, vars: routes[i].vars, ex: exs}
			byKey[k+"?"] = rt
			routes = append(routes, rt)
		}
	}
	// Literal paths before templated ones, so that /items/new is tried
	// before /items/{id}, and of one path, routes with more query
	// conditions first, so that the call without a query (which answers
	// any) comes last; otherwise in the order first seen. The routes of
	// one path sort by the rank of its first call: a comparison that
	// ordered them only against each other would not be a strict weak
	// order, and a route of another path between them would keep the
	// call without a query first, answering every query.
	rank := map[string]int{} // method and path → the index of its first route
	for i, rt := range routes {
		if _, ok := rank[rt.method+" "+rt.path]; !ok {
			rank[rt.method+" "+rt.path] = i
		}
	}
	slices.SortStableFunc(routes, func(a, b *route) int {
		if a.vars != b.vars {
			return a.vars - b.vars
		}
		if ra, rb := rank[a.method+" "+a.path], rank[b.method+" "+b.path]; ra != rb {
			return ra - rb
		}
		return b.conds() - a.conds()
	})

	w := &writer{opts: o, files: map[string][]byte{}, slugs: map[string]int{}, bodies: map[[32]byte]string{}}
	var list []*yaml.Node
	for _, rt := range routes {
		n, err := w.route(rt)
		if err != nil {
			return nil, err
		}
		list = append(list, n)
	}
	doc := mapping(
		"name", str(o.Name),
		"routes", &yaml.Node{Kind: yaml.SequenceNode, Content: list},
	)
	doc.HeadComment = "Recorded by scenariomock record"
	if o.Upstream != "" {
		doc.HeadComment += " from " + o.Upstream
	}
	doc.HeadComment += ".\nEdit freely: each route answers its recorded responses in order, then repeats the last."
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode the recording: %w", err)
	}
	enc.Close()
	file := o.Name + ".yaml"
	w.files[file] = buf.Bytes()
	if err := checkSecrets(w.files, secrets); err != nil {
		return nil, err
	}
	return w.files, nil
}

type writer struct {
	opts   Options
	files  map[string][]byte
	slugs  map[string]int // body file names used, for numbering
	bodies map[[32]byte]string
}

func (w *writer) route(rt *route) (*yaml.Node, error) {
	var resps []*yaml.Node
	var prev []byte
	same := true
	exs := rt.ex
	if w.opts.SequencePer != "" {
		exs = keySeries(exs, w.opts.SequencePer, rt.path)
	}
	for _, x := range exs {
		n, err := w.response(rt, x)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", x.Method, x.Path, err)
		}
		// Identical answers (comments aside) collapse into one respond:.
		var b bytes.Buffer
		c := *n
		c.HeadComment = ""
		_ = yaml.NewEncoder(&b).Encode(&c)
		if prev != nil && !bytes.Equal(prev, b.Bytes()) {
			same = false
		}
		prev = b.Bytes()
		resps = append(resps, n)
	}
	name := rt.method + " " + rt.path
	var when []any
	if len(rt.query) > 0 {
		name += "?" + rt.query.Encode()
		var conds []any
		for _, k := range slices.Sorted(maps.Keys(rt.query)) {
			conds = append(conds, k, str(rt.query.Get(k)))
		}
		when = append(when, "query", mapping(conds...))
	}
	if rt.rng != "" {
		name += " Range: " + rt.rng
		hs := []any{"Range", str(rt.rng)}
		if rt.ifRange != "" {
			name += " If-Range: " + rt.ifRange
			hs = append(hs, "If-Range", str(rt.ifRange))
		}
		when = append(when, "headers", mapping(hs...))
	}
	kv := []any{"name", str(name), "method", str(rt.method), "path", str(rt.path)}
	if when != nil {
		kv = append(kv, "when", mapping(when...))
	}
	if same {
		kv = append(kv, "respond", resps[0])
	} else {
		kv = append(kv, "responses", &yaml.Node{Kind: yaml.SequenceNode, Content: resps})
		if w.opts.SequencePer != "" && hasAttribute(rt.path, w.opts.SequencePer) {
			kv = append(kv, "sequence", mapping("per", str(w.opts.SequencePer)))
		}
	}
	return mapping(kv...), nil
}

// keySeries returns what one key of the attribute per (header.<Name>,
// query.<name>, or path.<variable> of tmpl, the route's path) saw, in
// order: the calls of the key that made the most (the first such,
// requests without the attribute being one key), so that a sequence per
// key, which every key walks from its start, replays a series that
// happened: a first answer, then its retries'. The other keys' answers are
// not written. For another kind of attribute it returns exs as they came.
func keySeries(exs []*Exchange, per, tmpl string) []*Exchange {
	kind, name, _ := strings.Cut(per, ".")
	var key func(x *Exchange) string
	switch kind {
	case "header":
		key = func(x *Exchange) string { return x.RequestHeader.Get(name) }
	case "query":
		key = func(x *Exchange) string { q, _ := url.ParseQuery(x.RawQuery); return q.Get(name) }
	case "path":
		// The variable's segment of each call's path, as Render
		// templated it (decoded).
		i := slices.Index(strings.Split(tmpl, "/"), "{"+name+"}")
		if i < 0 {
			return exs
		}
		key = func(x *Exchange) string {
			p, err := url.PathUnescape(x.Path)
			if err != nil {
				p = x.Path
			}
			if segs := strings.Split(p, "/"); i < len(segs) {
				return segs[i]
			}
			return ""
		}
	default:
		return exs
	}
	series := map[string][]*Exchange{}
	var longest string
	for _, x := range exs {
		k := key(x)
		series[k] = append(series[k], x)
		if len(series[k]) > len(series[longest]) {
			longest = k
		}
	}
	return series[longest]
}

// CheckSequencePer checks the attribute a recording keeps its sequences
// per (Options.SequencePer) as the loader will: a kind a scenario file
// names (header, query, path, body, form) and a name after the dot, so
// that a misspelt one fails at start rather than the recording when it is
// served. "" is none.
func CheckSequencePer(per string) error {
	if per == "" {
		return nil
	}
	kind, name, _ := strings.Cut(per, ".")
	switch kind {
	case "header", "query", "path", "body", "form":
	default:
		return fmt.Errorf("%q: unknown request attribute %q: want header.<name>, query.<name>, path.<variable>, body.<field> or form.<field>, e.g. header.Idempotency-Key", per, kind)
	}
	if name == "" || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Contains(name, "..") {
		return fmt.Errorf("%q needs a name after the dot, e.g. header.Idempotency-Key", per)
	}
	return nil
}

// hasAttribute reports whether a route of path can keep a sequence per
// the attribute per: a path. attribute only on a path with that variable
// (the loader refuses sequence: { per: path.id } on /status).
func hasAttribute(path, per string) bool {
	name, ok := strings.CutPrefix(per, "path.")
	return !ok || strings.Contains(path, "{"+name+"}")
}

// dropped are response headers that a recording does not keep: hop-by-hop
// fields (RFC 9110 §7.6.1) and those the mock computes itself.
var dropped = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Transfer-Encoding": true,
	"Te": true, "Trailer": true, "Upgrade": true, "Proxy-Authenticate": true,
	"Content-Length": true, "Date": true,
}

func (w *writer) response(rt *route, x *Exchange) (*yaml.Node, error) {
	body := x.Body
	hdr := x.Header.Clone()
	if hdr == nil {
		hdr = http.Header{}
	}
	for _, v := range hdr.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			hdr.Del(strings.TrimSpace(f))
		}
	}
	var note string
	if x.Status == http.StatusNoContent || x.Status == http.StatusNotModified {
		body = nil
	}
	if enc := hdr.Get("Content-Encoding"); enc != "" && len(body) == 0 {
		// No body to decode (a HEAD's, a 304's): the coding names the
		// GET's, which the recording stores decoded. Kept, a 304 would
		// relabel a cache's plain copy.
		hdr.Del("Content-Encoding")
	} else if enc != "" {
		dec, err := contentcoding.Decode(enc, body, w.opts.MaxBody)
		if err != nil {
			note = "kept encoded: " + err.Error()
		} else {
			body = dec
			hdr.Del("Content-Encoding")
		}
	}
	ct := hdr.Get("Content-Type")
	textual := utf8.Valid(body) && !bytes.ContainsRune(body, 0) && note == ""
	if textual {
		body = w.rewrite(body)
	}

	// A HEAD's length is the GET's, which a replayed HEAD must declare
	// too (the mock keeps a length set on an answer without a body); not
	// when the coding it measured was dropped above.
	keepLength := x.Method == http.MethodHead && len(body) == 0 && x.Header.Get("Content-Encoding") == ""
	kv := []any{"status", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(x.Status)}}
	if hn := w.headers(hdr, keepLength); hn != nil {
		kv = append(kv, "headers", hn)
	}
	switch {
	case len(body) == 0:
	case textual && len(body) <= w.opts.InlineLimit && isJSON(ct, body):
		n, err := jsonNode(body)
		if err != nil {
			return nil, err
		}
		if duplicateKeys(n) || hugeNumber(n) {
			// A YAML mapping may not hold a key twice, nor a body a
			// number past float64 (1e400): the loader would refuse the
			// whole recording. JSON that does (valid, if unwise) is
			// kept as the string it was, redacted.
			var buf bytes.Buffer
			writeJSON(&buf, n)
			n = str(buf.String())
			n.Style = yaml.DoubleQuotedStyle
		}
		kv = append(kv, "body", n)
	case textual && len(body) <= w.opts.InlineLimit:
		s := str(string(body))
		switch {
		// Scenario files may hold no tab, even in a block scalar (see
		// scenarios' indentation check): a quoted string escapes it.
		// Leading blank lines do not survive a block scalar either.
		case bytes.ContainsAny(body, "\t\r") || body[0] == '\n':
			s.Style = yaml.DoubleQuotedStyle
		case bytes.Contains(body, []byte("\n")):
			s.Style = yaml.LiteralStyle
		}
		kv = append(kv, "body", s)
	default:
		if textual && isJSON(ct, body) {
			if red, err := redactJSON(body); err == nil {
				body = red
			}
		}
		// The same bytes are one file, so that identical answers stay
		// identical and collapse into one respond:.
		sum := sha256.Sum256(body)
		name, ok := w.bodies[sum]
		if !ok {
			name = w.bodyName(rt, ct)
			w.bodies[sum] = name
			w.files[name] = body
		}
		kv = append(kv, "bodyFile", str(name))
	}
	if w.opts.Latency && x.Latency > 0 {
		d := x.Latency.Round(time.Millisecond)
		if d == 0 {
			d = time.Millisecond
		}
		kv = append(kv, "delay", str(d.String()))
	}
	n := mapping(kv...)
	n.HeadComment = w.comment(x, note)
	return n, nil
}

func (w *writer) comment(x *Exchange, note string) string {
	line := x.Method + " " + x.Path
	if x.RawQuery != "" {
		line += "?" + redactQuery(x.RawQuery)
	}
	for _, name := range w.opts.Headers {
		for _, v := range x.RequestHeader.Values(name) {
			if isSecretName(name) {
				v = redacted
			}
			line += "\n" + textproto.CanonicalMIMEHeaderKey(name) + ": " + oneLine(v)
		}
	}
	if note != "" {
		line += "\n" + note
	}
	return line
}

func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

func (w *writer) rewrite(b []byte) []byte {
	if w.opts.Upstream == "" || w.opts.MockURL == "" {
		return b
	}
	b = bytes.ReplaceAll(b, []byte(w.opts.Upstream), []byte(w.opts.MockURL))
	// JSON may escape a URL's slashes (PHP's json_encode does by
	// default): "http:\/\/upstream\/v1" is the same URL.
	if up := strings.ReplaceAll(w.opts.Upstream, "/", `\/`); up != w.opts.Upstream {
		b = bytes.ReplaceAll(b, []byte(up), []byte(strings.ReplaceAll(w.opts.MockURL, "/", `\/`)))
	}
	return b
}

// headers returns the answer's header fields to write, those a
// recording keeps; keepLength keeps Content-Length too.
func (w *writer) headers(h http.Header, keepLength bool) *yaml.Node {
	names := make([]string, 0, len(h))
	for k := range h {
		ck := textproto.CanonicalMIMEHeaderKey(k)
		if !dropped[ck] || keepLength && ck == "Content-Length" {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range names {
		ck := textproto.CanonicalMIMEHeaderKey(k)
		var vals []*yaml.Node
		for _, v := range h[k] {
			switch {
			case ck == "Set-Cookie":
				v = redactSetCookie(v)
			case isSecretName(ck):
				v = redacted
			default:
				v = string(w.rewrite([]byte(v)))
			}
			vals = append(vals, str(v))
		}
		if len(vals) == 0 {
			continue
		}
		val := vals[0]
		if len(vals) > 1 {
			val = &yaml.Node{Kind: yaml.SequenceNode, Content: vals}
		}
		n.Content = append(n.Content, str(ck), val)
	}
	return n
}

func (w *writer) bodyName(rt *route, ct string) string {
	slug := strings.ToLower(rt.method) + slugRe.ReplaceAllString(strings.ReplaceAll(rt.path, "{", ""), "-")
	slug = strings.Trim(slug, "-")
	ext := ".bin"
	if mt, _, err := mime.ParseMediaType(ct); err == nil {
		if exts, _ := mime.ExtensionsByType(mt); len(exts) > 0 {
			ext = exts[0]
			slices.Sort(exts)
			for _, e := range []string{".json", ".png", ".jpg", ".html", ".txt", ".pdf", ".xml"} {
				if slices.Contains(exts, e) {
					ext = e
					break
				}
			}
		}
	}
	w.slugs[slug]++
	return fmt.Sprintf("bodies/%s-%d%s", slug, w.slugs[slug], ext)
}

var slugRe = regexp.MustCompile(`[^a-z0-9]+`)

func isJSON(ct string, body []byte) bool {
	mt, _, _ := mime.ParseMediaType(ct)
	t := bytes.TrimSpace(body)
	if len(t) == 0 || (t[0] != '{' && t[0] != '[') {
		return false
	}
	return (mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "") && json.Valid(t)
}

// Template turns a request path into a route path: numeric and id-like
// segments become {id}, {id2}, and so on. It returns the number of
// variables.
func Template(p string) (string, int) {
	segs := strings.Split(p, "/")
	n := 0
	for i, s := range segs {
		if s == "" {
			continue
		}
		if isIDLike(s) {
			n++
			if n == 1 {
				segs[i] = "{id}"
			} else {
				segs[i] = "{id" + strconv.Itoa(n) + "}"
			}
		}
	}
	if p == "" {
		return "/", 0
	}
	return strings.Join(segs, "/"), n
}

var uuidRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// isIDLike reports whether a path segment names one resource: digits, a
// UUID, or a token of letters and digits that is long or has a
// separator (ch_3MqL..., pay_demo_0001); v1 and oauth2 stay literal. A
// segment that would not be a literal route path ({, }) is one too.
func isIDLike(s string) bool {
	if strings.ContainsAny(s, "{}") {
		return true
	}
	digits, letters := 0, 0
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letters++
		case c == '_' || c == '-' || c == '.' || c == '%':
		default:
			return false
		}
	}
	switch {
	case digits == len(s):
		return true
	case uuidRe.MatchString(s):
		return true
	case digits > 0 && letters > 0:
		return len(s) >= 10 || strings.ContainsAny(s, "_-")
	}
	return false
}

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// mapping builds a mapping node from key, value pairs; a value is a
// *yaml.Node.
func mapping(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(kv); i += 2 {
		n.Content = append(n.Content, str(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return n
}
