package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAdminScenarios(t *testing.T) {
	t.Parallel()
	s, hs, _ := newTestServer(t, Options{Source: "test"}, demoFile)
	key := []string{"Idempotency-Key", "k", "Content-Type", "application/json"}
	do(t, "POST", hs.URL+"/payments", "{}", key...)
	do(t, "POST", hs.URL+"/payments", "{}", key...)

	r := do(t, "GET", hs.URL+"/__admin/scenarios", "")
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %v", r.status, r.header)
	}
	doc := r.json(t)
	if doc["version"] != float64(1) || doc["source"] != "test" || doc["loadedAt"] == "" {
		t.Errorf("header fields: %v", doc)
	}
	lr := doc["lastReload"].(map[string]any)
	if lr["ok"] != true || lr["error"] != nil || len(lr["errors"].([]any)) != 0 {
		t.Errorf("lastReload = %v", lr)
	}
	files := doc["files"].([]any)
	if len(files) != 1 || files[0].(map[string]any)["path"] != demoFile || files[0].(map[string]any)["routes"] != float64(s.Routes()) {
		t.Errorf("files = %v", files)
	}
	routes := doc["routes"].([]any)
	var names []string
	for _, x := range routes {
		names = append(names, x.(map[string]any)["name"].(string))
	}
	wantOrder := "payment without key,payment key reused with another body,payment in progress,payment created,payment found,payment not found,transfer without key,transfer created"
	if strings.Join(names, ",") != wantOrder {
		t.Errorf("routes in match order = %v", names)
	}
	created := routes[3].(map[string]any)
	if created["hits"] != float64(2) || created["keys"] != float64(1) || created["source"] != demoFile+":65:5" {
		t.Errorf("payment created = %v", created)
	}
	seq := created["sequence"].(map[string]any)
	if seq["per"] != "header.Idempotency-Key" || seq["after"] != "repeat-last" {
		t.Errorf("sequence = %v", seq)
	}
	if w := created["when"].([]any); len(w) != 1 || w[0] != "header Idempotency-Key present" {
		t.Errorf("when = %v", w)
	}
	transfer := routes[7].(map[string]any)["responses"].([]any)[0].(map[string]any)
	if transfer["delay"] != "10s" || transfer["status"] != float64(201) {
		t.Errorf("transfer created responses[0] = %v", transfer)
	}
}

func TestAdminResetAndErrors(t *testing.T) {
	t.Parallel()
	_, hs, _ := newTestServer(t, Options{}, demoFile)
	key := []string{"Idempotency-Key", "k"}
	do(t, "POST", hs.URL+"/payments", "{}", key...)
	if r := do(t, "POST", hs.URL+"/payments", "{}", key...); r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatal("setup: second call is not a replay")
	}
	if r := do(t, "POST", hs.URL+"/__admin/reset?route=payment+created", ""); r.status != 200 || r.json(t)["reset"] != float64(1) {
		t.Errorf("reset one route: %d %s", r.status, r.body)
	}
	if r := do(t, "POST", hs.URL+"/payments", "{}", key...); r.header.Get("Idempotent-Replayed") != "" {
		t.Error("after reset the key was still remembered")
	}
	if r := do(t, "POST", hs.URL+"/__admin/reset", ""); r.status != 200 || r.json(t)["reset"] != float64(8) {
		t.Errorf("reset all: %d %s", r.status, r.body)
	}
	cases := []struct {
		method, path string
		status       int
	}{
		{"POST", "/__admin/reset?route=nope", 404},
		{"GET", "/__admin/nothing-here", 404},
		{"GET", "/__admin", 404},
		{"DELETE", "/__admin/scenarios", 405},
		{"GET", "/__admin/reset", 405},
	}
	for _, c := range cases {
		r := do(t, c.method, hs.URL+c.path, "")
		if r.status != c.status || r.header.Get("Content-Type") != "application/problem+json" || r.json(t)["status"] != float64(c.status) {
			t.Errorf("%s %s: %d %s %s", c.method, c.path, r.status, r.header.Get("Content-Type"), r.body)
		}
		if want := map[string]string{"/__admin/scenarios": "GET", "/__admin/reset": "POST"}[c.path]; c.status == 405 && r.header.Get("Allow") != want {
			t.Errorf("%s %s: Allow = %q, want %q", c.method, c.path, r.header.Get("Allow"), want)
		}
	}
	if r := do(t, "GET", hs.URL+"/__admin/health", ""); r.status != 200 || r.json(t)["status"] != "ok" {
		t.Errorf("health: %d %s", r.status, r.body)
	}
}

// TestAdminUnmatched: a CI job asserts that nothing unmocked was called.
func TestAdminUnmatched(t *testing.T) {
	t.Parallel()
	_, hs, _ := newTestServer(t, Options{}, demoFile)
	unmatched := func() any { return do(t, "GET", hs.URL+"/__admin/scenarios", "").json(t)["unmatched"] }
	if n := unmatched(); n != float64(0) {
		t.Fatalf("unmatched at start = %v", n)
	}
	do(t, "GET", hs.URL+"/payments/pay_demo_0001", "") // matched
	do(t, "GET", hs.URL+"/refunds", "")
	do(t, "DELETE", hs.URL+"/payments", "")
	if n := unmatched(); n != float64(2) {
		t.Errorf("unmatched = %v, want 2", n)
	}
	do(t, "POST", hs.URL+"/__admin/reset", "")
	if n := unmatched(); n != float64(0) {
		t.Errorf("unmatched after reset = %v, want 0", n)
	}
}

func TestAdminReload(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.yaml")
	writeFile(t, path, route("/x", "one"))
	_, hs, _ := newTestServer(t, Options{}, path)
	writeFile(t, path, route("/x", "two"))
	if r := do(t, "POST", hs.URL+"/__admin/reload", ""); r.status != 200 || r.json(t)["version"] != float64(2) {
		t.Errorf("reload: %d %s", r.status, r.body)
	}
	if r := do(t, "POST", hs.URL+"/__admin/reload", ""); r.json(t)["version"] != float64(2) {
		t.Errorf("a reload of unchanged files must not make a new version: %s", r.body)
	}
	if r := do(t, "GET", hs.URL+"/x", ""); r.body != "two" {
		t.Errorf("after reload: %q", r.body)
	}
	if err := os.WriteFile(path, []byte("routes: [{ path: /x, respnd: {} }]"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := do(t, "POST", hs.URL+"/__admin/reload", "")
	errs, _ := r.json(t)["errors"].([]any)
	if r.status != 422 || len(errs) != 1 || !strings.Contains(errs[0].(string), `s.yaml:1:22: routes[0]: unknown field "respnd" (did you mean "respond"?)`) {
		t.Errorf("invalid reload: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", hs.URL+"/x", ""); r.body != "two" {
		t.Errorf("the old scenarios stopped serving: %q", r.body)
	}
}
