package record_test

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"

	"github.com/scenariomock/scenariomock/record"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/server"
	"github.com/scenariomock/scenariomock/upstream"
)

// The credentials the client sends; none may reach the recording.
const (
	apiToken   = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"
	queryKey   = "qk_live_9f8e7d6c5b4a"
	cardNumber = "4242424242424242"
	sessionID  = "sess_0a1b2c3d4e5f"
)

var logo = func() []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 3000)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	copy(b, "\x89PNG\r\n\x1a\n")
	return b
}()

// answer is the upstream's plain answer to r; base is the origin its
// absolute URLs name and redact whether the card field is redacted (leaf
// by leaf, keeping its shape), so that the test can say what the recording
// must serve.
func answer(r *http.Request, n int, base string, redact bool) (status int, ct string, body []byte) {
	card := any(map[string]any{"brand": "visa", "last4": "4242"})
	if redact {
		card = map[string]any{"brand": "REDACTED", "last4": "REDACTED"}
	}
	js := func(v any) []byte { b, _ := json.Marshal(v); return b }
	p := r.URL.Path
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/v1/customers/"):
		id := strings.TrimPrefix(p, "/v1/customers/")
		return 200, "application/json", []byte(fmt.Sprintf(`{"id":"cus_%s","object":"customer","url":"%s/v1/customers/%s","balance":12.50,"big":12345678901234567890,"nested":{"a":[1,2,{}],"b":null,"t":true},"tags":[],"note":"line1\nline2 <&>"}`, id, base, id))
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/v1/charges/"):
		return 200, "application/json; charset=utf-8", js(map[string]any{"id": strings.TrimPrefix(p, "/v1/charges/"), "amount": 100 * n, "card": card})
	case r.Method == http.MethodPost && p == "/v1/charges":
		return 201, "application/json", js(map[string]any{"id": fmt.Sprintf("ch_%d", n), "amount": 2000, "card": card, "receipt": base + "/receipts/" + fmt.Sprint(n)})
	case p == "/files/logo.png":
		return 200, "image/png", logo
	case p == "/health":
		return 200, "text/plain; charset=utf-8", []byte("ok\nall good\n")
	case strings.HasPrefix(p, "/v1/events/"):
		return 200, "text/plain", []byte(fmt.Sprintf("event %d\n", n))
	case r.Method == http.MethodDelete:
		return 204, "", nil
	}
	return 404, "text/plain", []byte("no")
}

func encode(enc string, b []byte) []byte {
	var buf bytes.Buffer
	var w io.WriteCloser
	switch enc {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "br":
		w = brotli.NewWriter(&buf)
	case "deflate":
		w = zlib.NewWriter(&buf)
	case "zstd":
		w, _ = zstd.NewWriter(&buf)
	}
	_, _ = w.Write(b)
	w.Close()
	return buf.Bytes()
}

// call is one request of the test's client.
type call struct {
	method, path string
	body         string
}

func calls() []call {
	var cs []call
	for i := 1; i <= 10; i++ {
		cs = append(cs, call{"GET", fmt.Sprintf("/v1/customers/%d", 100+i), ""})     // gzip
		cs = append(cs, call{"GET", fmt.Sprintf("/v1/charges/ch_3MqLx%04d", i), ""}) // br
		cs = append(cs, call{"POST", "/v1/charges?api_key=" + queryKey + "&limit=3",
			fmt.Sprintf(`{"amount":2000,"card":{"number":"%s","cvc":"123"},"n":%d}`, cardNumber, i)})
	}
	for i := 1; i <= 5; i++ {
		cs = append(cs, call{"GET", "/files/logo.png", ""})
		cs = append(cs, call{"GET", "/health", ""})
		cs = append(cs, call{"GET", fmt.Sprintf("/v1/events/evt_%08d", i), ""}) // deflate and zstd
		cs = append(cs, call{"DELETE", fmt.Sprintf("/v1/customers/%d", i), ""})
	}
	return cs
}

func request(t *testing.T, base string, c call) *http.Request {
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequest(c.method, base+c.path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apiToken)
	req.Header.Set("Cookie", "sid="+sessionID)
	req.Header.Set("X-Client", "record-test")
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// TestRecordServeSameAnswers records 50 exchanges through the proxy,
// compressed bodies included, loads the files with scenarios.Load, serves
// them with the real server and checks the same requests get the same
// answers (URLs rewritten, credentials redacted), and that no credential
// sent reached the files.
func TestRecordServeSameAnswers(t *testing.T) {
	var seen atomic.Int64
	var upURL string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(seen.Add(1))
		_, _ = io.Copy(io.Discard, r.Body)
		status, ct, body := answer(r, n, upURL, false)
		if ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		enc := ""
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/customers/") && r.Method == "GET":
			enc = "gzip"
		case strings.HasPrefix(r.URL.Path, "/v1/charges"):
			enc = "br"
		case strings.HasPrefix(r.URL.Path, "/v1/events/"):
			enc = []string{"deflate", "zstd"}[n%2]
		}
		if r.Method == http.MethodPost {
			w.Header().Set("Set-Cookie", "session="+sessionID+"x; Path=/; HttpOnly")
		}
		if enc != "" {
			body = encode(enc, body)
			w.Header().Set("Content-Encoding", enc)
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	defer up.Close()
	upURL = up.URL

	// The mock's listener exists before the recording, for its address.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mockURL := "http://" + ln.Addr().String()

	rec := record.New(record.Options{Upstream: up.URL, MockURL: mockURL, Headers: []string{"X-Client", "Authorization"}})
	p := upstream.New(upstream.Options{})
	defer p.Close()
	target, err := upstream.NewTarget(upstream.Config{URL: up.URL})
	if err != nil {
		t.Fatal(err)
	}
	// The recording proxy, as the server's produce and commit will be.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqBody := record.NewCapture(r.Body, 1<<20)
		r.Body = reqBody
		resp, err := p.Do(r, target)
		if err != nil {
			http.Error(w, err.Error(), err.(*upstream.Error).Status)
			return
		}
		respBody := record.NewCapture(resp.Body, 1<<20)
		resp.Body = respBody
		status, hdr := resp.Status, resp.Header.Clone()
		if _, err := resp.WriteTo(w); err != nil {
			return
		}
		rb, ok1 := reqBody.Bytes()
		sb, ok2 := respBody.Bytes()
		if ok1 && ok2 {
			rec.Add(record.Exchange{Method: r.Method, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery,
				RequestHeader: r.Header, RequestBody: rb, Status: status, Header: hdr, Body: sb, Latency: resp.Latency})
		}
	}))
	defer proxy.Close()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	cs := calls()
	if len(cs) != 50 {
		t.Fatalf("%d calls, want 50", len(cs))
	}
	for _, c := range cs {
		resp, err := client.Do(request(t, proxy.URL, c))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	dir := t.TempDir()
	if err := record.CheckDir(dir); err != nil {
		t.Fatal(err)
	}
	written, err := rec.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(dir, "recorded.yaml")
	// The files carry none of the credentials sent.
	for _, f := range written {
		b, _ := os.ReadFile(f)
		for _, secret := range []string{apiToken, queryKey, cardNumber, sessionID} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s contains the credential %q", f, secret)
			}
		}
		// The head comment says where the recording came from; nothing
		// else may name the upstream.
		if _, rest, _ := bytes.Cut(b, []byte("\nname:")); bytes.Contains(rest, []byte(up.URL)) {
			t.Errorf("%s still names the upstream %s", f, up.URL)
		}
	}
	text, _ := os.ReadFile(main)
	if os.Getenv("RECORD_DUMP") != "" {
		t.Logf("recording:\n%s", text)
	}
	if t.Failed() {
		t.Fatalf("recording:\n%s", text)
	}

	set, err := scenarios.Load(main)
	if err != nil {
		t.Fatalf("scenarios.Load: %v\n%s", err, text)
	}
	wantRoutes := map[string]int{ // path template -> responses
		"GET /v1/customers/{id}":    10,
		"GET /v1/charges/{id}":      10,
		"POST /v1/charges":          10,
		"GET /files/logo.png":       1, // identical answers collapse
		"GET /health":               1,
		"GET /v1/events/{id}":       5,
		"DELETE /v1/customers/{id}": 1,
	}
	got := map[string]int{}
	for _, r := range set.Routes() {
		got[strings.Join(r.Methods, ",")+" "+r.Path] = len(r.Responses)
	}
	if !reflect.DeepEqual(got, wantRoutes) {
		t.Errorf("routes = %v, want %v\n%s", got, wantRoutes, text)
	}

	srv, err := server.New(server.Options{Load: func() (*scenarios.Set, error) { return scenarios.Load(main) }, JournalSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()

	for i, c := range cs {
		req := request(t, mockURL, c)
		wantStatus, wantCT, wantBody := answer(req, i+1, mockURL, true)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		name := c.method + " " + c.path
		if resp.StatusCode != wantStatus {
			t.Errorf("%s: status %d, want %d (%s)", name, resp.StatusCode, wantStatus, body)
			continue
		}
		if ce := resp.Header.Get("Content-Encoding"); ce != "" {
			t.Errorf("%s: Content-Encoding %q served: the body was stored decoded", name, ce)
		}
		if wantCT != "" && resp.Header.Get("Content-Type") != wantCT {
			t.Errorf("%s: Content-Type %q, want %q", name, resp.Header.Get("Content-Type"), wantCT)
		}
		if strings.Contains(wantCT, "json") {
			var g, w any
			gd, wd := json.NewDecoder(bytes.NewReader(body)), json.NewDecoder(bytes.NewReader(wantBody))
			gd.UseNumber()
			wd.UseNumber()
			if err := gd.Decode(&g); err != nil {
				t.Errorf("%s: body %s: %v", name, body, err)
				continue
			}
			_ = wd.Decode(&w)
			if !reflect.DeepEqual(g, w) {
				t.Errorf("%s: body\n%s\nwant\n%s", name, body, wantBody)
			}
		} else if !bytes.Equal(body, wantBody) {
			t.Errorf("%s: body %q, want %q", name, body, wantBody)
		}
		if c.method == http.MethodPost {
			if sc := resp.Header.Get("Set-Cookie"); sc != "session=REDACTED; Path=/; HttpOnly" {
				t.Errorf("%s: Set-Cookie %q, want its value redacted", name, sc)
			}
		}
	}
}

// TestRefusesLeakedCredential: an upstream that echoes the token in an
// innocent-looking field makes Render refuse, and nothing is written.
func TestRefusesLeakedCredential(t *testing.T) {
	t.Parallel()
	x := record.Exchange{
		Method: "GET", Path: "/v1/me",
		RequestHeader: http.Header{"Authorization": {"Bearer " + apiToken}},
		Status:        200,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          []byte(`{"echo":"` + apiToken + `"}`),
	}
	rec := record.New(record.Options{})
	rec.Add(x)
	dir := t.TempDir()
	_, err := rec.Write(dir)
	if err == nil || !strings.Contains(err.Error(), "refusing to write recorded.yaml") || !strings.Contains(err.Error(), "request header Authorization of GET /v1/me") {
		t.Fatalf("Write = %v, want a refusal naming where the credential was seen", err)
	}
	if strings.Contains(err.Error(), apiToken) {
		t.Error("the refusal prints the credential")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("%d files written after a refusal", len(entries))
	}
}

func TestRenderShape(t *testing.T) {
	t.Parallel()
	ex := []record.Exchange{
		{Method: "GET", Path: "/items/new", Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"form":true}`)},
		{Method: "GET", Path: "/items/42", RawQuery: "token=abcdefgh&page=2", Status: 200,
			Header: http.Header{"Content-Type": {"application/json"}, "X-Api-Key": {"whatever"}, "Date": {"Mon"}},
			Body:   []byte(`{"id":42,"secret_key":"xyz","price":9.90}`), Latency: 123456789},
	}
	files, err := record.Render(ex, record.Options{Latency: true})
	if err != nil {
		t.Fatal(err)
	}
	got := string(files["recorded.yaml"])
	for _, want := range []string{
		"path: /items/new", "path: /items/{id}", "delay: 123ms", "price: 9.90",
		"secret_key: REDACTED", "X-Api-Key: REDACTED", "# GET /items/42?token=REDACTED&page=2",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("recording lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Date") || strings.Contains(got, "abcdefgh") {
		t.Errorf("recording keeps Date or the query token:\n%s", got)
	}
	if strings.Index(got, "/items/new") > strings.Index(got, "/items/{id}") {
		t.Errorf("the literal route must come before the templated one:\n%s", got)
	}
	if _, err := scenarios.LoadBytes("recorded.yaml", files["recorded.yaml"]); err != nil {
		t.Errorf("does not load: %v\n%s", err, got)
	}
}

func TestTemplate(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"/v1/customers/123":                             "/v1/customers/{id}",
		"/v1/customers/cus_9s6XKzkNRiz8i3/cards/card_1": "/v1/customers/{id}/cards/{id2}",
		"/v1/payments/pay_demo_0001":                    "/v1/payments/{id}",
		"/orders/3f2504e0-4f89-11d3-9a0c-0305e82c3301":  "/orders/{id}",
		"/oauth2/token":                                 "/oauth2/token",
		"/v2/items/new":                                 "/v2/items/new",
		"/":                                             "/",
	}
	for in, want := range cases {
		if got, _ := record.Template(in); got != want {
			t.Errorf("Template(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckDirNotWritable(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := record.CheckDir(filepath.Join(f, "sub")); err == nil {
		t.Error("CheckDir accepted a directory under a regular file")
	}
}

// TestTextBodiesRoundTrip: every text body, however awkward for YAML,
// loads back byte for byte.
func TestTextBodiesRoundTrip(t *testing.T) {
	t.Parallel()
	bodies := []string{
		"a\r\nb\r\n", "trailing\n\n\n", "  leading spaces\nx", "tab\there\n", "no newline",
		"\ttab first\n", "# not a comment\n", "{{ not a template }}", "ends with space \nnext", "- a\n- b\n",
		"key: value\n", "true", "123", "null", "\u00e9t\u00e9 \u2603\n", "[not json", "\n\nleading newlines", " ",
	}
	var ex []record.Exchange
	for i, b := range bodies {
		ex = append(ex, record.Exchange{Method: "GET", Path: fmt.Sprintf("/t/%d", i), Status: 200,
			Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte(b)})
	}
	for i, b := range bodies {
		js, _ := json.Marshal(map[string]string{"s": b})
		ex = append(ex, record.Exchange{Method: "GET", Path: fmt.Sprintf("/t/%d", i), Status: 200,
			Header: http.Header{"Content-Type": {"application/json"}}, Body: js})
	}
	files, err := record.Render(ex, record.Options{})
	if err != nil {
		t.Fatal(err)
	}
	set, err := scenarios.LoadBytes("recorded.yaml", files["recorded.yaml"])
	if err != nil {
		t.Fatalf("%v\n%s", err, files["recorded.yaml"])
	}
	rs := set.Routes()[0].Responses
	if len(rs) != 2*len(bodies) {
		t.Fatalf("%d responses, want %d", len(rs), 2*len(bodies))
	}
	for i, r := range rs[:len(bodies)] {
		if string(r.Body) != bodies[i] {
			t.Errorf("body %d = %q, want %q", i, r.Body, bodies[i])
		}
	}
	for i, r := range rs[len(bodies):] {
		var got map[string]string
		if err := json.Unmarshal(r.Body, &got); err != nil || got["s"] != bodies[i] {
			t.Errorf("JSON body %d = %s, want the string %q", i, r.Body, bodies[i])
		}
	}
}

func TestSequencePer(t *testing.T) {
	t.Parallel()
	var ex []record.Exchange
	for i := range 2 {
		ex = append(ex, record.Exchange{Method: "POST", Path: "/payments", Status: 200 + i})
	}
	files, err := record.Render(ex, record.Options{SequencePer: "header.Idempotency-Key"})
	if err != nil {
		t.Fatal(err)
	}
	set, err := scenarios.LoadBytes("recorded.yaml", files["recorded.yaml"])
	if err != nil {
		t.Fatalf("%v\n%s", err, files["recorded.yaml"])
	}
	r := set.Routes()[0]
	if r.Sequence == nil || r.Sequence.Per == nil || len(r.Responses) != 2 || r.Responses[1].Status != 201 {
		t.Errorf("route = %+v, want two responses in a sequence per Idempotency-Key\n%s", r, files["recorded.yaml"])
	}
}

// TestRecorderConcurrent adds from many goroutines while writing; -race
// checks the Recorder's lock, and the bound counts what it dropped.
func TestRecorderConcurrent(t *testing.T) {
	t.Parallel()
	rec := record.New(record.Options{MaxExchanges: 100})
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 50 {
				rec.Add(record.Exchange{Method: "GET", Path: fmt.Sprintf("/g%d/%d", g, i), Status: 200,
					Header: http.Header{"Content-Type": {"text/plain"}}, Body: fmt.Appendf(nil, "%d %d", g, i)})
			}
		}()
	}
	dir := t.TempDir()
	if _, err := rec.Write(dir); err != nil {
		t.Error(err)
	}
	for range 4 {
		<-done
	}
	if rec.Skipped() != 100 {
		t.Errorf("skipped %d, want 100 past MaxExchanges", rec.Skipped())
	}
	if _, err := rec.Write(dir); err != nil {
		t.Fatal(err)
	}
	set, err := scenarios.Load(filepath.Join(dir, "recorded.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range set.Routes() {
		n += len(r.Responses)
	}
	if n != 100 {
		t.Errorf("%d responses written, want 100", n)
	}
}

// TestSequencePerKeySeries: with a sequence per key, the responses are
// the series of the key that made the most calls (by header or query),
// in the order it made them.
func TestSequencePerKeySeries(t *testing.T) {
	t.Parallel()
	for _, per := range []string{"header.Idempotency-Key", "query.order"} {
		ex := func(key string, status int) record.Exchange {
			if per == "query.order" {
				return record.Exchange{Method: "POST", Path: "/payments", RawQuery: "order=" + key, Status: status}
			}
			return record.Exchange{Method: "POST", Path: "/payments", Status: status, RequestHeader: http.Header{"Idempotency-Key": {key}}}
		}
		files, err := record.Render([]record.Exchange{ex("a", 201), ex("b", 202), ex("c", 203), ex("b", 204), ex("b", 205)}, record.Options{SequencePer: per})
		if err != nil {
			t.Fatal(err)
		}
		set, err := scenarios.LoadBytes("recorded.yaml", files["recorded.yaml"])
		if err != nil {
			t.Fatalf("%v\n%s", err, files["recorded.yaml"])
		}
		var got []int
		for _, r := range set.Routes()[0].Responses {
			got = append(got, r.Status)
		}
		if !reflect.DeepEqual(got, []int{202, 204, 205}) {
			t.Errorf("per %s: statuses %v, want b's 202, 204, 205\n%s", per, got, files["recorded.yaml"])
		}
	}
}

// TestQueryIsPartOfTheRoute: calls of one path with other queries are
// routes of their own, with the query as conditions, so that a replay
// answers each query its own answer in any order; the call without a
// query answers the rest. A credential-named parameter is no condition
// (its value is not written). Before, the four calls were one sequence,
// and ?limit=5 first got the answer recorded for ?limit=3.
func TestQueryIsPartOfTheRoute(t *testing.T) {
	t.Parallel()
	files, err := record.Render([]record.Exchange{
		textCall("/v1/list", "", "all"), textCall("/v1/list", "limit=3&api_key="+queryKey, "three"), textCall("/v1/list", "limit=5", "five"), textCall("/v1/list", "api_key="+queryKey+"&limit=3", "three"),
	}, record.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(files["recorded.yaml"], []byte(queryKey)) {
		t.Fatalf("the recording names the credential:\n%s", files["recorded.yaml"])
	}
	replayed(t, files["recorded.yaml"], [][2]string{{"/v1/list?limit=5", "five"}, {"/v1/list?limit=3", "three"}, {"/v1/list", "all"}, {"/v1/list?limit=9", "all"}, {"/v1/list?limit=5", "five"}})
}

// textCall is a recorded GET of path?query answered 200 with body as
// text/plain.
func textCall(path, query, body string) record.Exchange {
	return record.Exchange{Method: "GET", Path: path, RawQuery: query, Status: 200,
		Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte(body)}
}

// replayed serves the recording text and checks that each GET of a
// target (a path and query) answers 200 with the body given beside it, in
// order.
func replayed(t *testing.T, text []byte, calls [][2]string) {
	t.Helper()
	srv, err := server.New(server.Options{Load: func() (*scenarios.Set, error) { return scenarios.LoadBytes("recorded.yaml", text) }, JournalSize: -1})
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	for _, c := range calls {
		resp, err := http.Get(hs.URL + c[0])
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != c[1] {
			t.Errorf("GET %s: %d %q, want %q\n%s", c[0], resp.StatusCode, b, c[1], text)
		}
	}
}

// TestQueryRouteAfterAnotherPath: a call with a query is answered by its
// own route even when a call of another path came between it and the
// call without a query. Before, the routes of one path were ordered only
// against each other, so the sort left GET /v1/list (no query) before
// GET /v1/list?limit=3 and it answered every query.
func TestQueryRouteAfterAnotherPath(t *testing.T) {
	t.Parallel()
	files, err := record.Render([]record.Exchange{
		textCall("/v1/list", "", "all"), textCall("/v1/other", "", "other"), textCall("/v1/list", "limit=3", "three"),
	}, record.Options{})
	if err != nil {
		t.Fatal(err)
	}
	replayed(t, files["recorded.yaml"], [][2]string{{"/v1/list?limit=3", "three"}, {"/v1/list", "all"}, {"/v1/other", "other"}})
}

// TestQueriesAFileCannotName: a query parameter that a scenario file
// cannot name as a condition (an empty name, YAML's merge key, a name or
// value that is not UTF-8) is no condition, and the recording is written
// and loads. Before, ?q=%ff failed the whole recording ("cannot marshal
// invalid UTF-8"), and ?=x and ?<<=1 wrote one the loader refused.
func TestQueriesAFileCannotName(t *testing.T) {
	t.Parallel()
	for _, query := range []string{"=x", "q=%ff", "%ff=1", "<<=1"} {
		files, err := record.Render([]record.Exchange{{Method: "GET", Path: "/v1/list", RawQuery: query, Status: 200,
			Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("listed")}}, record.Options{})
		if err != nil {
			t.Errorf("?%s: %v", query, err)
			continue
		}
		text := files["recorded.yaml"]
		srv, err := server.New(server.Options{Load: func() (*scenarios.Set, error) { return scenarios.LoadBytes("recorded.yaml", text) }, JournalSize: -1})
		if err != nil {
			t.Errorf("?%s: %v\n%s", query, err, text)
			continue
		}
		hs := httptest.NewServer(srv)
		resp, err := http.Get(hs.URL + "/v1/list?" + query)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		hs.Close()
		if string(b) != "listed" {
			t.Errorf("GET /v1/list?%s: %d %q, want the recorded answer", query, resp.StatusCode, b)
		}
	}
}

// TestQueryNeverRecordedIsAnswered: a path whose every call had a query
// (a cache-buster) also gets a route without conditions, after the
// others, answering a query never recorded with the calls' answers in
// order, as one sequence did before queries were conditions; a recorded
// query still gets its own answer.
func TestQueryNeverRecordedIsAnswered(t *testing.T) {
	t.Parallel()
	files, err := record.Render([]record.Exchange{textCall("/v1/feed", "_=1", "first"), textCall("/v1/feed", "_=2", "second")}, record.Options{})
	if err != nil {
		t.Fatal(err)
	}
	replayed(t, files["recorded.yaml"], [][2]string{{"/v1/feed?_=2", "second"}, {"/v1/feed?_=9", "first"}, {"/v1/feed?_=10", "second"}, {"/v1/feed", "second"}, {"/v1/feed?_=1", "first"}})
}

// TestWritesKeepTheNewest: writes that overlap, each after an exchange of
// its own, leave on disk the recording of every exchange: a write that
// took the older snapshot never renames its file over the newer one's.
func TestWritesKeepTheNewest(t *testing.T) {
	t.Parallel()
	rec := record.New(record.Options{Upstream: "http://upstream.test"})
	dir := t.TempDir()
	const rounds, writers = 10, 8
	for round := range rounds {
		done := make(chan error, writers)
		for i := range writers {
			go func() {
				rec.Add(record.Exchange{Method: "GET", Path: fmt.Sprintf("/r%d/w%d", round, i), Status: 200,
					Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"ok":true}`)})
				_, err := rec.Write(dir)
				done <- err
			}()
		}
		for range writers {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		text, err := os.ReadFile(filepath.Join(dir, "recorded.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for r := range round + 1 {
			for i := range writers {
				if p := fmt.Sprintf("path: /r%d/w%d\n", r, i); !bytes.Contains(text, []byte(p)) {
					t.Fatalf("round %d: the recording on disk lacks %s: an older write replaced a newer one", round, p)
				}
			}
		}
	}
}

// TestRewritesEscapedURLs: an upstream URL in a JSON body whose slashes
// are escaped (http:\/\/host\/path, as PHP's json_encode writes it) is
// rewritten to the mock's, as a plain one is.
func TestRewritesEscapedURLs(t *testing.T) {
	t.Parallel()
	rec := record.New(record.Options{Upstream: "http://upstream.test:9000", MockURL: "http://127.0.0.1:8080"})
	rec.Add(record.Exchange{Method: "GET", Path: "/v1/items", Status: 200,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   []byte(`{"next":"http:\/\/upstream.test:9000\/v1\/items?page=2","self":"http://upstream.test:9000/v1/items"}`)})
	dir := t.TempDir()
	if _, err := rec.Write(dir); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(dir, "recorded.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"next: http://127.0.0.1:8080/v1/items?page=2\n", "self: http://127.0.0.1:8080/v1/items\n"} {
		if !bytes.Contains(text, []byte(want)) {
			t.Errorf("the recording lacks %q:\n%s", want, text)
		}
	}
}

// TestRecorderCountsInformationalAsSkipped: an answer with a status no
// scenario can serve (1xx: a 101 an upstream switched protocols with)
// is counted as skipped, as the recording's skipped reports it, rather
// than held and then silently left out by Render.
func TestRecorderCountsInformationalAsSkipped(t *testing.T) {
	t.Parallel()
	rec := record.New(record.Options{})
	for _, st := range []int{http.StatusSwitchingProtocols, http.StatusEarlyHints, http.StatusOK} {
		rec.Add(record.Exchange{Method: "GET", Path: fmt.Sprintf("/s%d", st), Status: st,
			Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("ok")})
	}
	if rec.Skipped() != 2 || rec.Len() != 1 {
		t.Errorf("skipped %d, held %d; want 2 skipped (101, 103), 1 held", rec.Skipped(), rec.Len())
	}
	dir := t.TempDir()
	if _, err := rec.Write(dir); err != nil {
		t.Fatal(err)
	}
	set, err := scenarios.Load(filepath.Join(dir, "recorded.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if rs := set.Routes(); len(rs) != 1 || rs[0].Path != "/s200" {
		t.Errorf("routes %+v, want GET /s200 only", rs)
	}
}
