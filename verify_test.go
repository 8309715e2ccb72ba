package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/server"
	"github.com/scenariomock/scenariomock/state"
)

// shop is what the verify and requests tests serve.
const shop = `
routes:
  - { name: create payment, method: POST, path: /payments, respond: { status: 201 } }
  - { name: get payment, method: GET, path: '/payments/{id}', respond: { status: 200 } }
  - name: charge
    method: POST
    path: /charges
    idempotency: { key: header.Idempotency-Key }
    respond: { status: 201, body: { id: ch_1 } }
  - { name: refund, method: POST, path: '/payments/{id}/refunds', respond: { status: 200 } }
`

// serveShop runs the real server on shop, in this process, until the test
// ends, and returns its URL.
func serveShop(t *testing.T) string {
	t.Helper()
	url, _ := serveShopWith(t, "", false)
	return url
}

// serveShopWith is serveShop with an admin token and, if split, the admin
// API on a listener of its own, whose URL it returns too.
func serveShopWith(t *testing.T, token string, split bool) (url, adminURL string) {
	t.Helper()
	url, adminURL, _ = serveShopStoppable(t, token, split)
	return url, adminURL
}

// serveShopStoppable is serveShopWith that can also be stopped before the
// test ends (a second stop does nothing).
func serveShopStoppable(t *testing.T, token string, split bool) (url, adminURL string, stop func()) {
	t.Helper()
	return serveText(t, "shop.yaml", shop, token, split)
}

// serveText is serveShopStoppable for the scenarios text of file.
func serveText(t *testing.T, file, text, token string, split bool) (url, adminURL string, stop func()) {
	t.Helper()
	srv, err := server.New(server.Options{
		Load: func() (*scenarios.Set, error) {
			// A built-in example reads the files built in beside it
			// (the Stripe example's spec).
			set, err := loadExample(file, []byte(text))
			if err != nil {
				return nil, err
			}
			return set, openapi.Expand(set, openapi.Options{Cache: commandSpecs})
		},
		AdminToken: token,
	})
	if err != nil {
		t.Fatal(err)
	}
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	ln := listen()
	var adminLn net.Listener
	if split {
		adminLn = listen()
		adminURL = "http://" + adminLn.Addr().String()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeSplit(ctx, ln, adminLn) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return "http://" + ln.Addr().String(), adminURL, stop
}

func send(t *testing.T, method, url, body string, header ...string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// shopping sends six requests, each of which some filter below selects
// alone: 2 create payment (one with header, query and a nested body), 1
// get payment, 1 unmatched (a typo), 1 new and 1 replayed charge.
func shopping(t *testing.T, url string) {
	t.Helper()
	send(t, "POST", url+"/payments?mode=test", `{"amount": 9800, "customer": {"id": "cus_1"}}`, "X-Tenant", "t1", "Content-Type", "application/json")
	send(t, "POST", url+"/payments", `{"amount": 100}`, "Content-Type", "application/json")
	send(t, "GET", url+"/payments/p1", "")
	send(t, "GET", url+"/paymnts/p1", "")
	send(t, "POST", url+"/charges", `{}`, "Idempotency-Key", "k1")
	send(t, "POST", url+"/charges", `{}`, "Idempotency-Key", "k1")
}

// TestVerifyForm: --form selects by a form body's fields, as Stripe's
// SDKs send them; a JSON body is no form.
func TestVerifyForm(t *testing.T) {
	t.Parallel()
	url := serveShop(t)
	send(t, "POST", url+"/payments", "amount=500&metadata%5Border%5D=o1", "Content-Type", "application/x-www-form-urlencoded")
	send(t, "POST", url+"/payments", `{"amount": 500}`, "Content-Type", "application/json")
	for _, args := range [][]string{
		{"--form", "amount=500", "--form", "metadata[order]=o1", "--count", "1"},
		{"--form", "amount=500", "--route", "create payment", "--count", "1"},
		{"--form", "amount=501", "--none"},
		{"--body", "amount=500", "--count", "1"},
	} {
		if out, errOut, err := runCmd(t, append([]string{"verify", "--addr", url}, args...)...); err != nil {
			t.Errorf("verify %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
	}
	if _, errOut, err := runCmd(t, "verify", "--addr", url, "--form", "amount"); err == nil || !strings.Contains(err.Error(), `--form "amount": want name=value`) {
		t.Errorf("--form amount: %v %s", err, errOut)
	}
}

// unreachable returns an address nothing listens on.
func unreachable(t *testing.T) string {
	t.Helper()
	// Port 1, where nothing listens: a port listened on and closed here
	// is the kernel's to give again, to a test running at once (as
	// upstream's TestForwardErrors found); ports handed out for :0 are
	// never below 1024.
	return "127.0.0.1:1"
}

func TestVerify(t *testing.T) {
	t.Parallel()
	url := serveShop(t)
	shopping(t, url)
	cases := []struct {
		name string
		args []string
		code int
		// out and errOut must each contain every string listed.
		out, errOut []string
	}{
		{name: "count holds", args: []string{"--route", "create payment", "--count", "2"},
			out: []string{`ok: 2 requests matched, want exactly 2 requests; filters: route="create payment"`}},
		{name: "count fails, too many", args: []string{"--route", "create payment", "--count", "1"}, code: 1,
			errOut: []string{"verify failed: want exactly 1 request, found 2", `filters: route="create payment"`,
				"matching requests (2):", "ID  ", "METHOD", "/payments?mode=test", "create payment"}},
		{name: "at least fails, shows what came", args: []string{"--route", "create payment", "--at-least", "3"}, code: 1,
			errOut: []string{"want at least 3 requests, found 2", "the newest requests received, of 6 (any):", "/paymnts/p1", "(no route)", "replayed"}},
		{name: "at most holds", args: []string{"--method", "GET", "--at-most", "2"}, out: []string{"want at most 2 requests"}},
		{name: "at most fails", args: []string{"--method", "POST", "--at-most", "3"}, code: 1, errOut: []string{"want at most 3 requests, found 4"}},
		{name: "range holds", args: []string{"--route", "create payment", "--at-least", "1", "--at-most", "2"}, out: []string{"want from 1 to 2 requests"}},
		{name: "none holds", args: []string{"--route", "refund", "--none"}, out: []string{"0 requests matched, want exactly 0"}},
		{name: "a misspelt route is refused", args: []string{"--route", "creat payment", "--none"}, code: 2,
			errOut: []string{`route="creat payment": no route has that name`, `did you mean "create payment"?`}},
		{name: "none fails", args: []string{"--route", "get payment", "--none"}, code: 1, errOut: []string{"want exactly 0 requests, found 1", "/payments/p1"}},
		{name: "default is at least one", args: []string{"--route", "refund"}, code: 1,
			errOut: []string{"want at least 1 request, found 0", "matching requests: none", "the newest requests received"}},
		{name: "no unmatched fails", args: []string{"--no-unmatched"}, code: 1,
			errOut: []string{"verify failed: 1 request matched no route, want none", "/paymnts/p1", "near misses:", "GET /paymnts/p1"}},
		{name: "no unmatched since", args: []string{"--no-unmatched", "--since", time.Now().Add(time.Hour).Format(time.RFC3339)}, out: []string{"ok: every request matched a route"}},
		{name: "no unmatched and a count", args: []string{"--no-unmatched", "--route", "charge", "--count", "2"}, code: 1,
			out: []string{"ok: 2 requests matched"}, errOut: []string{"1 request matched no route"}},

		// Each filter flag reaches the server: each selects its own subset.
		{name: "--method", args: []string{"--method", "GET", "--count", "2"}},
		{name: "--path exact", args: []string{"--path", "/payments", "--count", "2"}},
		{name: "--path glob", args: []string{"--path", "/payments/*", "--count", "1"}},
		{name: "--status", args: []string{"--status", "201", "--count", "4"}},
		{name: "--status class", args: []string{"--status", "4xx", "--count", "1"}},
		{name: "--header", args: []string{"--header", "X-Tenant=t1", "--count", "1"}},
		{name: "--query", args: []string{"--query", "mode=test", "--count", "1"}},
		{name: "--body", args: []string{"--body", "amount=100", "--count", "1"}},
		{name: "--body nested, twice", args: []string{"--body", "customer.id=cus_1", "--body", "amount=9800", "--count", "1"}},
		{name: "--idempotency", args: []string{"--idempotency", "replayed", "--count", "1"}},
		{name: "--matched", args: []string{"--matched", "false", "--count", "1"}},
		{name: "--since a time", args: []string{"--since", time.Now().Add(-time.Hour).Format(time.RFC3339), "--count", "6"}},
		{name: "--since a future time", args: []string{"--since", time.Now().Add(time.Hour).Format(time.RFC3339), "--none"}},

		// Usage errors, before or from the server.
		{name: "count and none", args: []string{"--count", "1", "--none"}, code: 2, errOut: []string{"--none goes with no other count flag"}},
		{name: "count and at least", args: []string{"--count", "1", "--at-least", "1"}, code: 2, errOut: []string{"--count goes with neither"}},
		{name: "empty range", args: []string{"--at-least", "3", "--at-most", "1"}, code: 2, errOut: []string{"--at-least 3 is more than --at-most 1"}},
		{name: "negative count", args: []string{"--count", "-1"}, code: 2, errOut: []string{"--count -1: want 0 or more"}},
		{name: "bad header", args: []string{"--header", "X-Tenant"}, code: 2, errOut: []string{`--header "X-Tenant": want name=value`}},
		{name: "bad matched", args: []string{"--matched", "maybe"}, code: 2, errOut: []string{`--matched "maybe": want true or false`}},
		{name: "no unmatched and matched", args: []string{"--no-unmatched", "--matched", "true"}, code: 2, errOut: []string{"--no-unmatched goes without --matched"}},
		{name: "filter refused by the server", args: []string{"--status", "abc"}, code: 2, errOut: []string{"400 Bad Request", "status"}},
		{name: "argument", args: []string{"extra"}, code: 2, errOut: []string{"unknown command"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			cmd := newRootCmd(&out, &errOut)
			cmd.SetArgs(append([]string{"verify", "--addr", url}, tc.args...))
			err := cmd.ExecuteContext(context.Background())
			code := report(&errOut, err)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out.String(), errOut.String())
			}
			for _, s := range tc.out {
				if !strings.Contains(out.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, out.String())
				}
			}
			for _, s := range tc.errOut {
				if !strings.Contains(errOut.String(), s) {
					t.Errorf("stderr lacks %q:\n%s", s, errOut.String())
				}
			}
		})
	}
}

// TestVerifySinceID: --since takes an entry ID, as requests --json shows
// it.
func TestVerifySinceID(t *testing.T) {
	t.Parallel()
	url := serveShop(t)
	shopping(t, url)
	out, _, err := runCmd(t, "requests", "--addr", url, "--json", "--limit", "3")
	if err != nil {
		t.Fatal(err)
	}
	var e state.Entry
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &e); err != nil {
		t.Fatal(err)
	}
	// The oldest of the newest three: after it come two.
	if out, errOut, err := runCmd(t, "verify", "--addr", url, "--since", strconv.FormatInt(e.ID, 10), "--count", "2"); err != nil {
		t.Errorf("verify --since %d: %v\n%s%s", e.ID, err, out, errOut)
	}
}

// TestVerifyExitCodes runs the binary, for the codes main exits with and
// the variables it reads.
func TestVerifyExitCodes(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	url := serveShop(t)
	shopping(t, url)
	// A server that wants a token, with its admin API on a port of its
	// own.
	guarded, guardedAdmin := serveShopWith(t, "s3cret", true)
	shopping(t, guarded)
	down := unreachable(t)
	for _, tc := range []struct {
		name   string
		env    []string
		args   []string
		code   int
		stderr string
	}{
		{name: "holds", args: []string{"verify", "--addr", url, "--route", "charge", "--count", "2"}, code: 0},
		{name: "fails", args: []string{"verify", "--addr", url, "--route", "charge", "--count", "1"}, code: 1, stderr: "verify failed"},
		{name: "usage", args: []string{"verify", "--addr", url, "--count", "1", "--none"}, code: 2, stderr: "Run 'scenariomock --help'"},
		{name: "connection refused", args: []string{"verify", "--addr", down}, code: 4, stderr: "connection refused"},
		{name: "requests, connection refused", args: []string{"requests", "--addr", down}, code: 4, stderr: "is `scenariomock serve` running at that address?"},
		// The admin or dashboard URL pasted as the address: the same server.
		{name: "admin URL as --addr", args: []string{"verify", "--addr", url + "/__admin", "--route", "charge", "--count", "2"}, code: 0},
		{name: "dashboard URL as --addr", args: []string{"verify", "--addr", url + "/__admin/ui/", "--route", "charge", "--count", "2"}, code: 0},
		{name: "admin URL as --admin-addr", args: []string{"verify", "--admin-addr", guardedAdmin + "/__admin/", "--admin-token", "s3cret", "--route", "charge", "--count", "2"}, code: 0},
		{name: "address from the environment", env: []string{"SCENARIOMOCK_ADDR=" + url}, args: []string{"verify", "--route", "charge", "--count", "2"}, code: 0},
		{name: "no token", args: []string{"verify", "--admin-addr", guardedAdmin}, code: 2, stderr: "401 Unauthorized"},
		{name: "wrong token", args: []string{"verify", "--admin-addr", guardedAdmin, "--admin-token", "guess"}, code: 2, stderr: "401 Unauthorized"},
		{name: "token flag", args: []string{"verify", "--admin-addr", guardedAdmin, "--admin-token", "s3cret", "--route", "charge", "--count", "2"}, code: 0},
		{name: "token and admin address from the environment", env: []string{"SCENARIOMOCK_ADMIN_TOKEN=s3cret", "SCENARIOMOCK_ADMIN_ADDR=" + guardedAdmin},
			args: []string{"verify", "--route", "charge", "--count", "2"}, code: 0},
		{name: "requests with the token", env: []string{"SCENARIOMOCK_ADMIN_TOKEN=s3cret"}, args: []string{"requests", "--admin-addr", guardedAdmin, "--route", "charge"}, code: 0},
		// The scenario port of a serve with --admin-addr is a wrong
		// address, a usage error as a wrong token is: not exit 1, which
		// a CI step reads as "the requests were not as expected".
		{name: "no admin API at --addr", args: []string{"verify", "--addr", guarded, "--admin-token", "s3cret"}, code: 2, stderr: "give the same --admin-addr here"},
		{name: "requests, no admin API at --addr", args: []string{"requests", "--addr", guarded}, code: 2, stderr: "give the same --admin-addr here"},
		{name: "health, no admin API at --addr", args: []string{"health", "--addr", strings.TrimPrefix(guarded, "http://")}, code: 4, stderr: "give the same --admin-addr here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, bin, tc.env, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit code %d, want %d; stderr %q, want it to contain %q\nstdout: %s", code, tc.code, stderr, tc.stderr, stdout)
			}
		})
	}
}

func TestRouteCompletion(t *testing.T) {
	t.Parallel()
	url := serveShop(t)
	out, _, err := runCmd(t, "__complete", "verify", "--addr", url, "--route", "c")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "create payment\tPOST /payments\n") || !strings.Contains(out, "charge\tPOST /charges\n") || strings.Contains(out, "get payment") {
		t.Errorf("completions of %q:\n%s", "c", out)
	}
	out, _, err = runCmd(t, "__complete", "requests", "--addr", url, "--route", "")
	if err != nil || strings.Count(out, "payment\t") != 2 {
		t.Errorf("requests --route completions: %v\n%s", err, out)
	}
	// No server: no names, and no wait longer than the completion's own.
	out, _, err = runCmd(t, "__complete", "verify", "--addr", unreachable(t), "--route", "")
	if err != nil || strings.Contains(out, "payment") || !strings.Contains(out, ":4") {
		t.Errorf("completions without a server: %v\n%s", err, out)
	}
}

func TestFormatMs(t *testing.T) {
	t.Parallel()
	for ms, want := range map[float64]string{0: "0s", 0.035: "35µs", 0.0004: "0s", 1.44: "1.4ms", 12.3: "12ms", 10012: "10.01s"} {
		if got := formatMs(ms); got != want {
			t.Errorf("formatMs(%v) = %q, want %q", ms, got, want)
		}
	}
}

// TestCIExampleValidates: the scenarios of examples/ci, which run.sh
// serves, load (.ci/run also runs the job itself).
func TestCIExampleValidates(t *testing.T) {
	t.Parallel()
	out, errOut, err := runCmd(t, "validate", "examples/ci/payments.yaml")
	if err != nil || out != "ok: 1 file, 3 routes\n" {
		t.Errorf("validate examples/ci/payments.yaml: %v %q %s", err, out, errOut)
	}
	data, err := os.ReadFile("examples/ci/verify/checks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if checks, err := parseChecks("examples/ci/verify/checks.yaml", data, ""); err != nil || len(checks) != 7 {
		t.Errorf("examples/ci/verify/checks.yaml: %d checks, %v", len(checks), err)
	}
}

// TestVerifySession: verify --session counts the requests of one test
// session alone, whether they carried it as a header or a path prefix,
// and so does a check file's session key.
func TestVerifySession(t *testing.T) {
	t.Parallel()
	url := serveShop(t)
	send(t, "POST", url+"/payments", "")
	send(t, "POST", url+"/payments", "", server.SessionHeader, "checkout")
	send(t, "POST", url+"/__session/checkout/payments", "")
	send(t, "POST", url+"/__session/refunds/payments", "")
	for _, args := range [][]string{
		{"--session", "checkout", "--route", "create payment", "--path", "/payments", "--count", "2"},
		{"--session", "refunds", "--count", "1"},
		{"--session", "nobody", "--none"},
		{"--route", "create payment", "--count", "4"},
	} {
		if out, errOut, err := runCmd(t, append([]string{"verify", "--addr", url}, args...)...); err != nil {
			t.Errorf("verify %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
	}
	if out, errOut, err := runCmd(t, "verify", "--addr", url, "--session", "checkout", "--count", "3"); err == nil || !strings.Contains(out+errOut, `session="checkout"`) {
		t.Errorf("verify --session checkout --count 3: %v, %s%s; want a failure naming the session", err, out, errOut)
	}
	checks := t.TempDir() + "/checks.yaml"
	if err := os.WriteFile(checks, []byte("checks:\n  - {name: checkout paid, session: checkout, count: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := runCmd(t, "verify", "--addr", url, "--file", checks); err != nil {
		t.Errorf("verify --file with session: %v\n%s%s", err, out, errOut)
	}
}

// TestVerifyRouteNames runs the binary: a route name that no route has,
// nor had while the journal kept its requests, is a usage error (exit 2,
// the near names said) rather than a count of 0 that --none, --count 0 or
// --at-most pass; a route that exists and was never called, a runtime
// stub's included, counts 0; a removed stub's requests still count.
func TestVerifyRouteNames(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	url := serveShop(t)
	shopping(t, url)
	add := func(doc string) string {
		t.Helper()
		resp, err := http.Post(url+"/__admin/scenarios", "application/yaml", strings.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ ID string }
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST /__admin/scenarios: %d %v", resp.StatusCode, err)
		}
		return out.ID
	}
	add("routes:\n  - {name: declined, method: POST, path: /declined, respond: {status: 402}}\n")
	add("session: alpha\nroutes:\n  - {name: alpha only, method: GET, path: /alpha, respond: {status: 200}}\n")
	gone := add("routes:\n  - {name: teapot, method: GET, path: /teapot, respond: {status: 418}}\n")
	send(t, "GET", url+"/teapot", "")
	send(t, "DELETE", url+"/__admin/scenarios/"+gone, "")
	dir := t.TempDir()
	checks := filepath.Join(dir, "checks.yaml")
	if err := os.WriteFile(checks, []byte("checks:\n  - {name: typo, route: chrage, at-most: 1}\n  - {name: fine, route: charge, count: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(dir, "verify.xml")
	for _, tc := range []struct {
		name string
		args []string
		code int
		// stderr must contain each.
		stderr []string
	}{
		{name: "typo with --none", args: []string{"verify", "--route", "creat payment", "--none"}, code: 2,
			stderr: []string{`Bad filter route="creat payment": no route has that name, and no request in the journal was answered by one; did you mean "create payment"?`}},
		{name: "typo with --count 0", args: []string{"verify", "--route", "Charge ", "--count", "0"}, code: 2, stderr: []string{`did you mean "charge"?`}},
		{name: "typo with --at-most", args: []string{"verify", "--route", "get paymnt", "--at-most", "1"}, code: 2, stderr: []string{`did you mean "get payment"?`}},
		{name: "nothing near: the names", args: []string{"verify", "--route", "xyzzy", "--none"}, code: 2, stderr: []string{`the routes are "`, `"declined"`, `"alpha only"`, `"create payment"`}},
		{name: "requests too", args: []string{"requests", "--route", "creat payment"}, code: 2, stderr: []string{"no route has that name"}},
		{name: "a file's route never called", args: []string{"verify", "--route", "refund", "--none"}},
		{name: "a runtime stub never called", args: []string{"verify", "--route", "declined", "--count", "0"}},
		{name: "a session's stub never called", args: []string{"verify", "--route", "alpha only", "--none"}},
		{name: "a removed stub's requests", args: []string{"verify", "--route", "teapot", "--count", "1"}},
		{name: "a file's typo is an error of its check", args: []string{"verify", "--file", checks, "--junit", report}, code: 2,
			stderr: []string{`route="chrage": no route has that name`, `did you mean "charge"?`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, bin, nil, append(tc.args, "--addr", url)...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			for _, s := range tc.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
		})
	}
	doc := readJUnit(t, report)
	if len(doc.Suites) != 1 || len(doc.Suites[0].Cases) != 2 {
		t.Fatalf("report: %+v", doc)
	}
	if c := doc.Suites[0].Cases[0]; c.Error == nil || !strings.Contains(c.Error.Message, "no route has that name") {
		t.Errorf("the misspelt check: %+v, want an error naming the route", c)
	}
	if c := doc.Suites[0].Cases[1]; c.Error != nil || c.Failure != nil {
		t.Errorf("the good check: %+v, want it passed", c)
	}
}

// orders pays per order id: a second payment of one order is a 409 that
// moves nothing.
const orders = `
routes:
  - name: pay
    method: POST
    path: /orders/{id}/pay
    state: { name: order, per: '{{ .Request.Vars.id }}', is: Started, to: paid }
    respond: { body: paying }
  - name: pay again
    method: POST
    path: /orders/{id}/pay
    state: { name: order, per: '{{ .Request.Vars.id }}', is: paid }
    respond: { status: 409, body: already paid }
`

// TestVerifyState: --state and --state-key (and state:, state-key: in a
// --file) assert that order ord_7 was paid exactly once; the failure
// names the filters; a misspelt state name is a usage error.
func TestVerifyState(t *testing.T) {
	t.Parallel()
	url, _, _ := serveText(t, "orders.yaml", orders, "", false)
	for _, p := range []string{"/orders/ord_7/pay", "/orders/ord_7/pay", "/orders/ord_8/pay"} {
		send(t, "POST", url+p, "")
	}
	for _, args := range [][]string{
		{"--state", "order=paid", "--state-key", "ord_7", "--count", "1"},
		{"--state", "order=paid", "--count", "2"},
		{"--state-key", "ord_8", "--count", "1"},
		{"--route", "pay again", "--state", "order=paid", "--none"},
	} {
		if out, errOut, err := runCmd(t, append([]string{"verify", "--addr", url}, args...)...); err != nil {
			t.Errorf("verify %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
	}
	out, errOut, err := runCmd(t, "verify", "--addr", url, "--state", "order=paid", "--state-key", "ord_7", "--count", "2")
	if err == nil || !strings.Contains(out+errOut, `state.order="paid" stateKey="ord_7"`) {
		t.Errorf("a count of 2: %v\n%s%s, want a failure that names the state filters", err, out, errOut)
	}
	_, errOut, err = runCmd(t, "verify", "--addr", url, "--state", "ordr=paid", "--none")
	if err == nil || !strings.Contains(errOut+err.Error(), `did you mean "order"?`) {
		t.Errorf("--state ordr=paid: %v %s, want did you mean order", err, errOut)
	}
	checks := filepath.Join(t.TempDir(), "checks.yaml")
	if err := os.WriteFile(checks, []byte("checks:\n  - {name: ord_7 paid once, state: order=paid, state-key: ord_7, count: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := runCmd(t, "verify", "--addr", url, "--file", checks); err != nil {
		t.Errorf("verify --file: %v\n%s%s", err, out, errOut)
	}
}
