package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"
)

// TestServeForwardTo serves the Stripe example with --forward-to, as a
// developer runs stripe listen --forward-to beside their app: the
// receiver gets the events of what the client did, signed with the
// secret the mock printed, and verify finds the deliveries by the
// endpoint's name; trigger sends one no route made. The events carry the API version asked for (the
// Stripe example's own, not stripe-go v85's). A file edit keeps the
// endpoint.
func TestServeForwardTo(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	const apiVersion = "2025-11-17.clover"
	var mu sync.Mutex
	var events []map[string]any
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("app") != "shop" { // the URL's query, as given
			http.Error(w, "no ?app=shop", http.StatusBadRequest)
			return
		}
		body, _ := io.ReadAll(r.Body)
		ev, err := webhook.ConstructEventWithOptions(body, r.Header.Get("Stripe-Signature"), defaultForwardSecret, webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})
		if err != nil || ev.APIVersion != apiVersion {
			http.Error(w, fmt.Sprintf("%v, api_version %q", err, ev.APIVersion), http.StatusBadRequest)
			return
		}
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		mu.Lock()
		events = append(events, m)
		mu.Unlock()
	}))
	defer recv.Close()
	received := func(typ, id string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range events {
			obj, _ := ev["data"].(map[string]any)["object"].(map[string]any)
			if ev["type"] == typ && obj["id"] == id {
				return true
			}
		}
		return false
	}
	dir := t.TempDir()
	stripeFile := filepath.Join(dir, "stripe.yaml")
	out, err := exec.Command(bin, "examples", "stripe").Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stripeFile, out, 0o644); err != nil {
		t.Fatal(err)
	}
	_, addr, logs := started(t, bin, "--forward-to", recv.URL+"/webhook?app=shop", "--forward-api-version", apiVersion, stripeFile)
	if !strings.Contains(logs.String(), "secret="+defaultForwardSecret) {
		t.Errorf("the start does not print the signing secret:\n%s", logs)
	}
	create := func() string {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/customers", strings.NewReader(url.Values{"email": {"jenny@example.com"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("sk_test_forward", "")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var c struct{ ID string }
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || resp.StatusCode != 200 || c.ID == "" {
			t.Fatalf("create a customer: %d %v", resp.StatusCode, err)
		}
		return c.ID
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(patience); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %s\n%s", what, patience, logs)
			}
		}
	}
	id := create()
	waitFor("customer.created of "+id+" at the receiver, signed", func() bool { return received("customer.created", id) })
	if _, stderr, err := runCmd(t, "verify", "--addr", addr, "--webhook", forwardEndpoint, "--type", "customer.created", "--delivered", "--count", "1", "--within", "30s"); err != nil {
		t.Errorf("verify --webhook %s: %v\n%s", forwardEndpoint, err, stderr)
	}
	// trigger sends an event no route made, as stripe trigger does: the
	// fixture of a subscription, with the id sent, to the receiver too,
	// and kept for the API key named.
	printed, stderr, err := runCmd(t, "trigger", "--addr", addr, "customer.subscription.trial_will_end",
		"--object", `{"id": "sub_trial_1"}`, "--header", "Authorization=Bearer sk_test_forward")
	if err != nil {
		t.Fatalf("trigger: %v\n%s", err, stderr)
	}
	var ev struct {
		ID   string
		Data struct{ Object map[string]any }
	}
	if err := json.Unmarshal([]byte(printed), &ev); err != nil || ev.Data.Object["object"] != "subscription" || ev.Data.Object["id"] != "sub_trial_1" {
		t.Fatalf("trigger printed %s (%v); want the event, its object the subscription fixture with the id sent", out, err)
	}
	waitFor("the triggered event at the receiver", func() bool { return received("customer.subscription.trial_will_end", "sub_trial_1") })
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/events/"+ev.ID, nil)
	req.SetBasicAuth("sk_test_forward", "")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("GET /v1/events/%s with the key named: %v %v", ev.ID, resp, err)
	} else {
		resp.Body.Close()
	}
	if _, _, err := runCmd(t, "trigger", "--addr", addr, "x.y", "--object", "[1]"); err == nil || !strings.Contains(err.Error(), "--object \"[1]\": want a JSON object") {
		t.Errorf("trigger --object [1]: %v; want a usage error", err)
	}

	// An edit of the file reloads it; the endpoint is laid on the new set.
	edited := strings.Replace(string(out), "description: Stripe's whole API", "description: Stripe's whole API, edited,", 1)
	if edited == string(out) {
		t.Fatal("the edit changed nothing")
	}
	if err := os.WriteFile(stripeFile, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("the reload of the edit", func() bool { return strings.Count(logs.String(), "msg=reloaded") > 0 })
	id = create()
	waitFor("customer.created of "+id+" after the reload", func() bool { return received("customer.created", id) })
}

// TestServeForwardToMistakes: a flag that cannot make an endpoint stops
// serve at once with why, and a file endpoint of the same name is a load
// error naming both.
func TestServeForwardToMistakes(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--forward-to", "ftp://127.0.0.1/hooks"}, `--forward-to "ftp://127.0.0.1/hooks": want the receiver's http:// or https:// URL`},
		{[]string{"--forward-to", "http://127.0.0.1:1/hooks", "--forward-signing", "hmac"}, `--forward-signing "hmac": want stripe, standard or none`},
		{[]string{"--forward-to", "http://127.0.0.1:1/hooks", "--forward-signing", "standard", "--forward-secret", "s3cret"}, `scenariomock: --forward-secret: a standard secret is "whsec_" and base64`},
		{[]string{"--forward-to", "http://127.0.0.1:1/hooks", "--forward-secret", ""}, "scenariomock: --forward-secret: must not be empty\n"},
	} {
		out, err := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, tc.args...)...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("serve %v: %v %s; want exit 2 and %q", tc.args, err, out, tc.want)
		}
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "hooks.yaml")
	const clash = "webhooks:\n  endpoints:\n    - { name: forward-to, url: 'http://127.0.0.1:1/x', secret: whsec_x }\nroutes: []\n"
	if err := os.WriteFile(file, []byte(clash), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--forward-to", "http://127.0.0.1:1/hooks", file).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `endpoint "forward-to" is defined twice (first at `+file+":3:") {
		t.Errorf("a file endpoint named forward-to: %v %s; want a load error naming both", err, out)
	}
}
