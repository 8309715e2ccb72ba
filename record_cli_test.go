package main

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"

	"github.com/scenariomock/scenariomock/internal/testport"
)

// The credentials the recording test's client sends: none may reach the
// files written.
const (
	recToken  = "sk_test_51RecordE2eToken0000abcd"
	recCookie = "sess_9e8d7c6b5a4f3e2d"
	recQuery  = "qk_live_1a2b3c4d5e6f7a8b"
	recCard   = "4000056655665556"
	recAPIKey = "ak_e2e_0f1e2d3c4b5a"
)

// recordingUpstream is a real upstream on loopback that answers with
// compressed bodies (gzip, br, deflate, zstd), absolute URLs of its own, a
// binary file, a cookie and an empty 204, and counts what it received.
func recordingUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	logo := make([]byte, 4000)
	r := rand.New(rand.NewPCG(7, 9))
	for i := range logo {
		logo[i] = byte(r.Uint32())
	}
	copy(logo, "\x89PNG\r\n\x1a\n")
	var calls atomic.Int64
	var up *httptest.Server
	up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		p := r.URL.Path
		var body []byte
		ct, enc, status := "application/json", "", http.StatusOK
		switch {
		case r.Method == http.MethodGet && strings.HasPrefix(p, "/v1/customers/"):
			id := strings.TrimPrefix(p, "/v1/customers/")
			body = fmt.Appendf(nil, `{"id":"cus_%s","object":"customer","url":"%s/v1/customers/%s","balance":12.5,"nested":{"a":[1,2,{}],"b":null},"note":"two\nlines"}`, id, up.URL, id)
			enc = "gzip"
		case r.Method == http.MethodGet && strings.HasPrefix(p, "/v1/charges/"):
			body = fmt.Appendf(nil, `{"id":%q,"amount":100,"currency":"jpy"}`, strings.TrimPrefix(p, "/v1/charges/"))
			enc = "br"
		case r.Method == http.MethodPost && p == "/v1/charges":
			body = fmt.Appendf(nil, `{"id":"ch_%d","amount":2000,"receipt_url":"%s/receipts/%d"}`, n, up.URL, n)
			enc, status = "br", http.StatusCreated
			w.Header().Set("Set-Cookie", "session="+recCookie+"; Path=/; HttpOnly")
		case p == "/files/logo.png":
			body, ct = logo, "image/png"
		case p == "/health":
			body, ct, enc = []byte("ok\nall good\n"), "text/plain; charset=utf-8", "gzip"
		case strings.HasPrefix(p, "/v1/events/"):
			body, ct = fmt.Appendf(nil, "event %s\n", strings.TrimPrefix(p, "/v1/events/")), "text/plain"
			enc = []string{"deflate", "zstd"}[n%2]
		case r.Method == http.MethodDelete:
			ct, status = "", http.StatusNoContent
		default:
			body, ct, status = []byte("no"), "text/plain", http.StatusNotFound
		}
		if ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		if enc != "" {
			body = encodeBody(t, enc, body)
			w.Header().Set("Content-Encoding", enc)
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(up.Close)
	return up
}

func encodeBody(t *testing.T, enc string, b []byte) []byte {
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
		zw, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		w = zw
	}
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

func decodeBody(t *testing.T, enc string, b []byte) []byte {
	t.Helper()
	var r io.Reader
	var err error
	switch enc {
	case "":
		return b
	case "gzip":
		r, err = gzip.NewReader(bytes.NewReader(b))
	case "br":
		r = brotli.NewReader(bytes.NewReader(b))
	case "deflate":
		r, err = zlib.NewReader(bytes.NewReader(b))
	case "zstd":
		var d *zstd.Decoder
		d, err = zstd.NewReader(bytes.NewReader(b))
		if err == nil {
			defer d.Close()
			r = d
		}
	default:
		t.Fatalf("encoding %q", enc)
	}
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decode %s: %v", enc, err)
	}
	return out
}

// recordedCall is one request of the recording test's client.
type recordedCall struct{ method, path, body string }

// recordedCalls are the 50 exchanges recorded: gzip, br, deflate and
// zstd bodies, JSON, text, binary and empty answers, repeated calls to
// one template (a sequence), and credentials in the header, a cookie, the
// query and a JSON body.
func recordedCalls() []recordedCall {
	var cs []recordedCall
	for i := 1; i <= 10; i++ {
		cs = append(cs,
			recordedCall{"GET", fmt.Sprintf("/v1/customers/%d", 100+i), ""},
			recordedCall{"GET", fmt.Sprintf("/v1/charges/ch_3MqLx%04d", i), ""},
			recordedCall{"POST", "/v1/charges?api_key=" + recQuery + "&limit=3",
				fmt.Sprintf(`{"amount":2000,"card":{"number":"%s","cvc":"123"},"n":%d}`, recCard, i)})
	}
	for i := 1; i <= 5; i++ {
		cs = append(cs,
			recordedCall{"GET", "/files/logo.png", ""},
			recordedCall{"GET", "/health", ""},
			recordedCall{"GET", fmt.Sprintf("/v1/events/evt_%08d", i), ""},
			recordedCall{"DELETE", fmt.Sprintf("/v1/customers/%d", i), ""})
	}
	return cs
}

// liveAnswer is what a client got, its body decoded.
type liveAnswer struct {
	status           int
	contentType, enc string
	setCookie        string
	body             []byte
}

func callOnce(t *testing.T, client *http.Client, base string, c recordedCall) liveAnswer {
	t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequest(c.method, base+c.path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+recToken)
	req.Header.Set("Cookie", "sid="+recCookie)
	req.Header.Set("X-Api-Key", recAPIKey)
	req.Header.Set("X-Client", "record-e2e")
	req.Header.Set("Accept-Encoding", "gzip, br, deflate, zstd")
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	enc := resp.Header.Get("Content-Encoding")
	return liveAnswer{resp.StatusCode, resp.Header.Get("Content-Type"), enc, resp.Header.Get("Set-Cookie"), decodeBody(t, enc, b)}
}

// TestRecordCommandServesTheSameAnswers is the recording proxy as a user
// runs it: `scenariomock record --target` in front of a real upstream on
// loopback, 50 exchanges with gzip, br, deflate and zstd bodies through
// it, Ctrl-C (SIGINT) writes the files; they hold none of the credentials
// sent, pass validate, and `scenariomock serve` of them, on the address
// the recording named, gives every call the liveAnswer it got live: the same
// status and Content-Type, the body decoded (no Content-Encoding), the
// upstream's URLs now the mock's, the cookie's value redacted.
func TestRecordCommandServesTheSameAnswers(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	up := recordingUpstream(t)
	out := filepath.Join(t.TempDir(), "recorded")
	rec := exec.Command(bin, "record", "--target", up.URL, "--out", out, "--addr", "127.0.0.1:0",
		"--record-headers", "X-Client,Authorization")
	addr, recLogs := startedCmd(t, rec)
	mock := "http://" + addr
	// The client takes what it is sent, as sent: bodies stay encoded.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	calls := recordedCalls()
	if len(calls) != 50 {
		t.Fatalf("%d calls, want 50", len(calls))
	}
	var live []liveAnswer
	encodings := map[string]int{}
	for _, c := range calls {
		a := callOnce(t, client, mock, c)
		live = append(live, a)
		encodings[a.enc]++
	}
	if encodings["gzip"] != 15 || encodings["br"] != 20 || encodings["deflate"]+encodings["zstd"] != 5 {
		t.Fatalf("encodings passed through: %v", encodings)
	}
	// CI's proof that traffic reached the upstream, or that none did.
	if _, stderr, err := runCmd(t, "verify", "--addr", addr, "--proxied", "--count", "50"); err != nil {
		t.Errorf("verify --proxied --count 50: %v\n%s", err, stderr)
	}
	if _, _, err := runCmd(t, "verify", "--addr", addr, "--proxied", "--none"); err == nil {
		t.Error("verify --proxied --none passed while 50 requests were proxied")
	}
	stopped(t, rec, recLogs, syscall.SIGINT)
	if !strings.Contains(recLogs.String(), "recording written") {
		t.Fatalf("no recording written:\n%s", recLogs)
	}

	// No credential sent is in any file written.
	var files []string
	_ = filepath.Walk(out, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			files = append(files, path)
		}
		return nil
	})
	if len(files) < 2 {
		t.Fatalf("files written: %v", files)
	}
	var text []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{recToken, recCookie, recQuery, recCard, recAPIKey} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds the credential %q", f, secret)
			}
		}
		if filepath.Ext(f) == ".yaml" {
			text = b
			if _, rest, _ := bytes.Cut(b, []byte("\nname:")); bytes.Contains(rest, []byte(up.URL)) {
				t.Errorf("%s still names the upstream %s", f, up.URL)
			}
		}
	}
	// Request headers: only those listed, credentials redacted.
	for _, want := range []string{"X-Client: record-e2e", "Authorization: REDACTED"} {
		if !bytes.Contains(text, []byte(want)) {
			t.Errorf("the recording lacks the listed request header %q", want)
		}
	}
	for _, unlisted := range []string{"# X-Api-Key", "# Accept-Encoding", "# User-Agent", "# Cookie"} {
		if bytes.Contains(text, []byte(unlisted)) {
			t.Errorf("the recording holds %q, a request header not listed", unlisted)
		}
	}
	if t.Failed() {
		t.Fatalf("recording:\n%s", text)
	}
	if stdout, stderr, err := runCmd(t, "validate", out); err != nil {
		t.Fatalf("validate: %v\n%s%s\n%s", err, stdout, stderr, text)
	}

	// Serve the recording where it was recorded: its URLs name that address.
	srv := exec.Command(bin, "serve", "--addr", addr, "--watch=false", out)
	addr2, srvLogs := startedCmd(t, srv)
	if addr2 != addr {
		t.Fatalf("served on %s, recorded on %s", addr2, addr)
	}
	for i, c := range calls {
		got := callOnce(t, client, mock, c)
		want := live[i]
		name := fmt.Sprintf("call %d, %s %s", i+1, c.method, c.path)
		if got.enc != "" {
			t.Errorf("%s: served with Content-Encoding %q: bodies are stored decoded", name, got.enc)
		}
		if got.status != want.status || got.contentType != want.contentType {
			t.Errorf("%s: %d %q, live %d %q", name, got.status, got.contentType, want.status, want.contentType)
			continue
		}
		wantBody := bytes.ReplaceAll(want.body, []byte(up.URL), []byte(mock))
		if strings.Contains(want.contentType, "json") {
			if !sameJSON(got.body, wantBody) {
				t.Errorf("%s: body\n%s\nwant\n%s", name, got.body, wantBody)
			}
		} else if !bytes.Equal(got.body, wantBody) {
			t.Errorf("%s: body %q, want %q", name, got.body, wantBody)
		}
		if want.setCookie != "" && got.setCookie != "session=REDACTED; Path=/; HttpOnly" {
			t.Errorf("%s: Set-Cookie %q, want its value redacted", name, got.setCookie)
		}
	}
	if t.Failed() {
		t.Logf("recording:\n%s", text)
	}
	if _, stderr, err := runCmd(t, "verify", "--addr", addr, "--proxied", "--none"); err != nil {
		t.Errorf("serving the recording, verify --proxied --none: %v\n%s", err, stderr)
	}
	stopped(t, srv, srvLogs, syscall.SIGINT)
}

// sameJSON reports whether a and b hold the same JSON value, numbers
// compared as written.
func sameJSON(a, b []byte) bool {
	var va, vb any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&va) != nil || db.Decode(&vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// TestProxyBadInputAtStart: what issue 17 calls bad input stops the
// command at start, with an error that says what and where: a recording
// directory that cannot be written (exit 2, the flag named), a route or
// --target that proxies to the mock's own address (exit 1, the route's
// file:line:col), a proxy URL that is not http(s) (exit 1, file:line:col).
func TestProxyBadInputAtStart(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	self := testport.Addr(t) // the commands below listen there
	loop := filepath.Join(dir, "loop.yaml")
	if err := os.WriteFile(loop, []byte("routes:\n  - name: self\n    path: /x\n    respond: { proxy: \"http://"+self+"\" }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ftp := filepath.Join(dir, "ftp.yaml")
	if err := os.WriteFile(ftp, []byte("routes:\n  - { name: files, path: /f, respond: { proxy: ftp://files.example.test } }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"serve --record unwritable", []string{"serve", "--addr", "127.0.0.1:0", "--proxy-unmatched", "http://127.0.0.1:1", "--record", filepath.Join(file, "sub")}, 2,
			"--record " + filepath.Join(file, "sub")},
		{"record --out unwritable", []string{"record", "--addr", "127.0.0.1:0", "--target", "http://127.0.0.1:1", "--out", filepath.Join(file, "sub")}, 2,
			"--out " + filepath.Join(file, "sub")},
		{"a route proxies to the mock", []string{"serve", "--addr", self, loop}, 1, loop + ":4:"},
		{"record --target is the mock", []string{"record", "--addr", self, "--target", "http://" + self, "--out", filepath.Join(dir, "rec")}, 1,
			"is this mock's own address"},
		{"a proxy URL that is not http", []string{"validate", ftp}, 1, ftp + ":2:"},
		// The recording would not load: refused before it is made.
		{"record --record-sequence-per misspelt", []string{"record", "--addr", "127.0.0.1:0", "--target", "http://127.0.0.1:1", "--out", filepath.Join(dir, "rec2"), "--record-sequence-per", "headers.Idempotency-Key"}, 2,
			`unknown request attribute "headers"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != tc.code || !strings.Contains(stderr.String(), tc.want) {
					t.Errorf("%v: exit %v, stderr %q; want exit %d and %q", tc.args, err, stderr.String(), tc.code, tc.want)
				}
			case <-time.After(patience):
				_ = cmd.Process.Kill()
				<-done // stderr is written until the process is waited for
				t.Fatalf("%v did not stop at start:\n%s", tc.args, stderr.String())
			}
		})
	}
}

// TestRecordRefusesScenarioFlags checks that record, which forwards every
// request, refuses the flags that would have scenarios answer some of them
// unrecorded, and says what does that.
func TestRecordRefusesScenarioFlags(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	for _, flag := range []string{"--example=stripe", "--openapi=spec.yaml"} {
		out, err := exec.Command(bin, "record", "--target", "http://127.0.0.1:1", "--out", t.TempDir(), flag).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "record serves no scenarios") || !strings.Contains(string(out), "--proxy-unmatched URL --record DIR") {
			t.Errorf("record %s: %v\n%s\nwant exit 2 saying record serves no scenarios and naming serve --proxy-unmatched --record", flag, err, out)
		}
	}
	// A path, as serve takes one, is refused the same way (before, as
	// `unknown command "mocks/"`).
	out, err := exec.Command(bin, "record", "--target", "http://127.0.0.1:1", "--out", t.TempDir(), "mocks/").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), `record takes no paths ("mocks/")`) || !strings.Contains(string(out), "--proxy-unmatched URL --record DIR") {
		t.Errorf("record mocks/: %v\n%s\nwant exit 2 saying record takes no paths and naming serve --proxy-unmatched --record", err, out)
	}
	// Its help lists no flag about the scenarios it does not serve.
	help, err := exec.Command(bin, "record", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("record --help: %v\n%s", err, help)
	}
	for _, flag := range []string{"--example", "--openapi", "--openapi-fixtures", "--dynamic", "--unknown-ids", "--watch", "--debounce"} {
		if strings.Contains(string(help), "  "+flag+" ") {
			t.Errorf("record --help lists %s, which record refuses or ignores:\n%s", flag, help)
		}
	}
	if !strings.Contains(string(help), "--target") {
		t.Errorf("record --help does not list --target:\n%s", help)
	}
}

// TestRecordCtrlCRecordsForwardsInFlight: Ctrl-C ends a recording session,
// and a request forwarded just before it is part of that session: record
// waits for its upstream's answer (within --shutdown-timeout), gives it to
// the client and writes it into the recording. It was cut at once, the
// client's connection closed without an answer, and the recording counted
// it as skipped. --shutdown-wait-delays=false keeps the old way.
func TestRecordCtrlCRecordsForwardsInFlight(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	for _, tc := range []struct {
		name  string
		flags []string
		wait  bool // the forward in flight is waited for and recorded
	}{
		{name: "default", wait: true},
		{name: "no wait", flags: []string{"--shutdown-wait-delays=false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			arrived := make(chan struct{}, 1)
			release := make(chan struct{})
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				arrived <- struct{}{}
				select {
				case <-release:
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, `{"id":"late_1"}`)
				case <-r.Context().Done():
				}
			}))
			t.Cleanup(up.Close)
			out := filepath.Join(t.TempDir(), "recorded")
			args := append([]string{"record", "--target", up.URL, "--out", out, "--addr", "127.0.0.1:0", "--shutdown-timeout", patience.String()}, tc.flags...)
			rec := exec.Command(bin, args...)
			addr, logs := startedCmd(t, rec)
			type answer struct {
				status int
				body   string
				err    error
			}
			got := make(chan answer, 1)
			go func() {
				resp, err := http.Get("http://" + addr + "/v1/late")
				if err != nil {
					got <- answer{err: err}
					return
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				got <- answer{resp.StatusCode, string(b), err}
			}()
			select {
			case <-arrived:
			case <-time.After(patience):
				t.Fatal("the request never reached the upstream")
			}
			if err := rec.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(patience)
			for !strings.Contains(logs.String(), "shutting down") {
				if time.Now().After(deadline) {
					t.Fatalf("no shutdown %s after SIGINT:\n%s", patience, logs)
				}
				time.Sleep(10 * time.Millisecond)
			}
			close(release)
			a := <-got
			exited(t, rec, logs, syscall.SIGINT)
			text, _ := os.ReadFile(filepath.Join(out, "recorded.yaml"))
			if tc.wait {
				if a.err != nil || a.status != 200 || a.body != `{"id":"late_1"}` {
					t.Errorf("the request in flight at Ctrl-C: %d %q %v; want the upstream's answer", a.status, a.body, a.err)
				}
				if !bytes.Contains(text, []byte("late_1")) || !strings.Contains(logs.String(), "skipped=0") {
					t.Errorf("the answer is not recorded:\n%s\n%s", text, logs)
				}
				return
			}
			if a.err == nil {
				t.Errorf("with --shutdown-wait-delays=false, the request in flight got an answer: %d %q", a.status, a.body)
			}
			if bytes.Contains(text, []byte("late_1")) || !strings.Contains(logs.String(), "skipped=1") {
				t.Errorf("with --shutdown-wait-delays=false, the cut forward is recorded or not counted as skipped:\n%s\n%s", text, logs)
			}
		})
	}
}
