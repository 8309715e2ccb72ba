package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/server"
	"github.com/scenariomock/scenariomock/webhooks"
)

func TestVerifyWebhooks(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.WriteHeader(http.StatusInternalServerError) // 500, 500, then 200
		}
	}))
	t.Cleanup(shop.Close)
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(broken.Close)
	yaml := fmt.Sprintf(`
webhooks:
  endpoints:
    - { name: shop, url: '%s', secret: whsec_test_123, retry: { schedule: [1s, 1s, 1s] } }
    - { name: broken, url: '%s', secret: whsec_test_123, retry: { schedule: [1s] } }
routes:
  - name: create
    method: POST
    path: /v1/payment_intents
    respond: { status: 200, body: { id: pi_1, object: payment_intent } }
    events:
      - { type: payment_intent.created, endpoints: shop }
      - { type: payment_intent.created, endpoints: broken }
  - name: cancel
    method: POST
    path: /v1/payment_intents/{id}/cancel
    respond: { status: 200, body: { id: pi_1, object: payment_intent } }
    events: [{ type: payment_intent.canceled }]
`, shop.URL, broken.URL)
	srv, err := server.New(server.Options{
		Load:     func() (*scenarios.Set, error) { return scenarios.LoadBytes("hooks.yaml", []byte(yaml)) },
		Webhooks: webhooks.Options{TimeScale: 0.001},
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	url := "http://" + ln.Addr().String()
	send(t, "POST", url+"/v1/payment_intents", `{}`)
	for _, tc := range []struct {
		name        string
		args        []string
		code        int
		out, errOut []string
	}{
		{name: "delivered within three attempts", args: []string{"--webhook", "shop", "--type", "payment_intent.created", "--delivered", "--attempts-at-most", "3", "--within", "30s"},
			out: []string{`ok: 1 webhook delivery matched, want at least 1 delivery; filters: webhook="shop" type="payment_intent.created" outcome="delivered" attempts<=3`}},
		{name: "but not within two", args: []string{"--webhook", "shop", "--delivered", "--attempts-at-most", "2"}, code: 1,
			errOut: []string{"1 with more than 2 attempts", "attempts=3"}},
		{name: "the broken endpoint fails", args: []string{"--webhook", "broken", "--undelivered", "--count", "1", "--within", "30s"},
			out: []string{"ok: 1 webhook delivery matched"}},
		{name: "undelivered none fails", args: []string{"--webhook", "broken", "--undelivered", "--none"}, code: 1,
			errOut: []string{"want exactly 0 webhook deliveries, found 1", "status=500"}},
		// Too few delivered: the report says what became of the others.
		{name: "delivered fails, saying why", args: []string{"--webhook", "broken", "--delivered"}, code: 1,
			errOut: []string{"want at least 1 webhook delivery, found 0", `without outcome="delivered", 1 delivery matched:`, "status=500"}},
		{name: "delivered and undelivered", args: []string{"--delivered", "--undelivered"}, code: 2, errOut: []string{"exclude each other"}},
		{name: "with --file", args: []string{"--webhook", "shop", "--file", "checks.yaml"}, code: 2, errOut: []string{"--webhook and its flags go without --file and --no-unmatched"}},
		// A misspelt endpoint matches nothing: a --none check with it
		// would pass whatever was delivered, so it is refused.
		{name: "a misspelt endpoint", args: []string{"--webhook", "brokn", "--undelivered", "--none"}, code: 2,
			errOut: []string{`endpoint="brokn": no webhook endpoint has that name, and none did; its endpoints are shop, broken`}},
		// So is a misspelt event type.
		{name: "a misspelt type", args: []string{"--type", "payment_intent.cretaed", "--none"}, code: 2,
			errOut: []string{`type="payment_intent.cretaed": no route sends events of that type, and no delivery had one; did you mean "payment_intent.created"?`}},
		{name: "a type a route sends, never sent", args: []string{"--type", "payment_intent.canceled", "--none"},
			out: []string{"ok: 0 webhook deliveries matched"}},
	} {
		var out, errOut bytes.Buffer
		cmd := newRootCmd(&out, &errOut)
		cmd.SetArgs(append([]string{"verify", "--addr", url}, tc.args...))
		code := report(&errOut, cmd.ExecuteContext(context.Background()))
		if code != tc.code {
			t.Errorf("%s: exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", tc.name, code, tc.code, out.String(), errOut.String())
		}
		for _, s := range tc.out {
			if !strings.Contains(out.String(), s) {
				t.Errorf("%s: stdout lacks %q:\n%s", tc.name, s, out.String())
			}
		}
		for _, s := range tc.errOut {
			if !strings.Contains(errOut.String(), s) {
				t.Errorf("%s: stderr lacks %q:\n%s", tc.name, s, errOut.String())
			}
		}
	}
	// --junit and --json report a webhook check as they report a check of
	// requests: the failure with its summary and its report, valid JUnit.
	dir := t.TempDir()
	file := filepath.Join(dir, "hooks.xml")
	out, errOut, err := runCmd(t, "verify", "--addr", url, "--webhook", "broken", "--undelivered", "--none", "--junit", file)
	if report(&bytes.Buffer{}, err) != 1 || !strings.Contains(errOut, "want exactly 0 webhook deliveries, found 1") {
		t.Errorf("verify --junit: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	doc := readJUnit(t, file)
	if doc.Tests != 1 || doc.Failures != 1 || len(doc.Suites) != 1 || len(doc.Suites[0].Cases) != 1 {
		t.Fatalf("report: %+v", doc)
	}
	c := doc.Suites[0].Cases[0]
	if want := `webhook="broken" outcome="undelivered": exactly 0 webhook deliveries`; c.Name != want {
		t.Errorf("testcase %q, want %q", c.Name, want)
	}
	if c.Failure == nil || c.Failure.Message != "want exactly 0 webhook deliveries, found 1" || !strings.Contains(c.Failure.Text, "status=500") {
		t.Errorf("failure: %+v", c.Failure)
	}
	out, _, err = runCmd(t, "verify", "--addr", url, "--webhook", "shop", "--delivered", "--count", "1", "--json")
	if report(&bytes.Buffer{}, err) != 0 {
		t.Errorf("verify --json: %v\n%s", err, out)
	}
	var res struct {
		OK     bool
		Checks []struct{ Name, Kind, Filters, Want, Summary string }
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !res.OK || len(res.Checks) != 1 || res.Checks[0].Kind != "webhook" || res.Checks[0].Filters != `webhook="shop" outcome="delivered"` ||
		res.Checks[0].Summary != "1 webhook delivery matched, want exactly 1 delivery" {
		t.Errorf("verify --json: %s", out)
	}
	// A session's events: --session counts its deliveries alone.
	send(t, "POST", url+"/__session/alpha/v1/payment_intents", `{}`)
	for _, tc := range []struct {
		args []string
		out  string
	}{
		{[]string{"--webhook", "shop", "--session", "alpha", "--count", "1", "--within", "30s"},
			`ok: 1 webhook delivery matched, want exactly 1 delivery; filters: webhook="shop" session="alpha"`},
		{[]string{"--webhook", "shop", "--session", "beta", "--none"}, `ok: 0 webhook deliveries matched`},
		{[]string{"--webhook", "shop", "--count", "2", "--within", "30s"}, `ok: 2 webhook deliveries matched`},
	} {
		out, errOut, err := runCmd(t, append([]string{"verify", "--addr", url}, tc.args...)...)
		if err != nil || !strings.Contains(out, tc.out) {
			t.Errorf("verify %v: %v\nstdout:\n%s\nstderr:\n%s\nwant %q", tc.args, err, out, errOut, tc.out)
		}
	}
	// In a --file, webhook checks go beside checks of requests, into one
	// JUnit report.
	checks := filepath.Join(dir, "checks.yaml")
	if err := os.WriteFile(checks, []byte(`checks:
  - { name: shop delivered, webhook: shop, delivered: true, attempts-at-most: 3, within: 30s }
  - { name: alpha's, webhook: shop, session: alpha, count: 1, within: 30s }
  - { name: broken never fails, webhook: broken, undelivered: true, none: true }
  - { name: two intents, method: POST, path: /v1/payment_intents, count: 2 }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(dir, "file.xml")
	out, errOut, err = runCmd(t, "verify", "--addr", url, "--file", checks, "--junit", file)
	if report(&bytes.Buffer{}, err) != 1 || !strings.Contains(errOut, "want exactly 0 webhook deliveries, found 2") {
		t.Errorf("verify --file: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	doc = readJUnit(t, file)
	if doc.Tests != 4 || doc.Failures != 1 || doc.Errors != 0 {
		t.Errorf("report: %+v", doc)
	}
	for _, c := range doc.Suites[0].Cases {
		if (c.Failure != nil) != (c.Name == "broken never fails") {
			t.Errorf("testcase %q: failure %+v", c.Name, c.Failure)
		}
	}
	if err := os.WriteFile(checks, []byte("checks:\n  - { webhook: shop, route: create, since: '1' }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = runCmd(t, "verify", "--addr", url, "--file", checks)
	if want := "checks.yaml:2:5: checks[0]: a webhook check (webhook) takes name, session, the count keys and webhook, type, delivered, undelivered, attempts-at-most, within, not route, since"; report(&bytes.Buffer{}, err) != 2 || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a webhook check with request keys: %v, want exit 2 and %q", err, want)
	}
}

// TestVerifyWebhookAfterRedelivery: an event whose delivery failed and
// whose redelivery was accepted is delivered, as a CI job that
// redelivers it expects: verify --undelivered --none passes, and
// --delivered counts it once. The failed delivery kept counting as
// undelivered, so the check failed whatever became of the event.
func TestVerifyWebhookAfterRedelivery(t *testing.T) {
	t.Parallel()
	var accept atomic.Bool
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !accept.Load() {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(shop.Close)
	yaml := fmt.Sprintf(`
webhooks:
  endpoints:
    - { name: shop, url: '%s', secret: whsec_test_123, retry: { schedule: [] } }
routes:
  - name: create
    method: POST
    path: /v1/payment_intents
    respond: { status: 200, body: { id: pi_1, object: payment_intent } }
    events: [{ type: payment_intent.created }]
`, shop.URL)
	srv, err := server.New(server.Options{
		Load: func() (*scenarios.Set, error) { return scenarios.LoadBytes("hooks.yaml", []byte(yaml)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	url := "http://" + ln.Addr().String()
	send(t, "POST", url+"/v1/payment_intents", `{}`)
	var failed struct {
		Deliveries []webhooks.Delivery `json:"deliveries"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(failed.Deliveries) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no failed delivery within 30s")
		}
		time.Sleep(10 * time.Millisecond)
		resp, err := http.Get(url + "/__admin/webhooks?endpoint=shop&outcome=failed")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&failed)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	accept.Store(true)
	send(t, "POST", url+"/__admin/webhooks/"+failed.Deliveries[0].EventID+"/redeliver", "")
	for _, tc := range []struct {
		args []string
		out  string
	}{
		{[]string{"--webhook", "shop", "--delivered", "--count", "1", "--within", "30s"}, "ok: 1 webhook delivery matched"},
		{[]string{"--webhook", "shop", "--undelivered", "--none"}, "ok: 0 webhook deliveries matched"},
		{[]string{"--type", "payment_intent.created", "--undelivered", "--none"}, "ok: 0 webhook deliveries matched"},
	} {
		out, errOut, err := runCmd(t, append([]string{"verify", "--addr", url}, tc.args...)...)
		if err != nil || !strings.Contains(out, tc.out) {
			t.Errorf("verify %v: %v\nstdout:\n%s\nstderr:\n%s\nwant %q", tc.args, err, out, errOut, tc.out)
		}
	}
}
