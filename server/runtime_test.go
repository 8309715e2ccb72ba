package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/internal/redistest"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/state/redis"
	"github.com/scenariomock/scenariomock/webhooks"
)

const yamlType = "application/yaml"

// postDoc posts a runtime document and returns its id, failing unless
// the answer is 201.
func postDoc(t *testing.T, base, doc string) (string, map[string]any) {
	t.Helper()
	r := do(t, "POST", base+"/__admin/scenarios", doc, "Content-Type", yamlType)
	if r.status != 201 {
		t.Fatalf("POST /__admin/scenarios: %d %s", r.status, r.body)
	}
	v := r.json(t)
	id, _ := v["id"].(string)
	if id == "" || r.header.Get("Location") != "/__admin/scenarios/"+id {
		t.Fatalf("POST answer %s, Location %q: want an id and its Location", r.body, r.header.Get("Location"))
	}
	return id, v
}

func wantBody(t *testing.T, url string, status int, body string, headers ...string) {
	t.Helper()
	if r := do(t, "GET", url, "", headers...); r.status != status || r.body != body {
		t.Fatalf("GET %s %v: %d %q, want %d %q", url, headers, r.status, r.body, status, body)
	}
}

// TestRuntimeDocuments adds routes over the admin API on top of a file:
// at equal priority they win, a file reload keeps them, and removing them
// (one, or all) brings the file's answers back.
func TestRuntimeDocuments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "s.yaml")
	write := func(body string) {
		t.Helper()
		content := fmt.Sprintf(`
routes:
  - {name: pay, method: GET, path: /pay, respond: {status: 200, body: %q}}
  - {name: other, method: GET, path: /other, respond: {status: 200, body: %q}}
`, body, body)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("file v1")
	s, hs, _ := newTestServer(t, Options{Load: func() (*scenarios.Set, error) { return scenarios.Load(path) }})
	base := hs.URL

	id, answer := postDoc(t, base, `
routes:
  - {name: stub pay, method: GET, path: /pay, respond: {status: 402, body: "declined"}}
  - {method: POST, path: /refunds, respond: {status: 201, body: "refunded"}}
`)
	if got := fmt.Sprint(answer["routes"]); got != "[stub pay POST /refunds]" {
		t.Fatalf("routes of the answer = %s, want the document's two", got)
	}
	wantBody(t, base+"/pay", 402, "declined")
	if r := do(t, "POST", base+"/refunds", ""); r.status != 201 || r.body != "refunded" {
		t.Fatalf("POST /refunds: %d %q", r.status, r.body)
	}
	wantBody(t, base+"/other", 200, "file v1")

	// A second document is newer: it wins over the first.
	id2, _ := postDoc(t, base, `{"routes": [{"name": "json pay", "method": "GET", "path": "/pay", "respond": {"status": 200, "body": "json"}}]}`)
	wantBody(t, base+"/pay", 200, "json")

	// The listing, and one document as posted.
	list := do(t, "GET", base+"/__admin/scenarios?runtime=true", "")
	if !strings.Contains(list.body, id) || !strings.Contains(list.body, id2) || strings.Index(list.body, id) > strings.Index(list.body, id2) {
		t.Fatalf("runtime listing %s: want %s then %s", list.body, id, id2)
	}
	if st := do(t, "GET", base+"/__admin/scenarios", "").json(t); len(st["runtime"].([]any)) != 2 {
		t.Fatalf("GET /__admin/scenarios runtime = %v", st["runtime"])
	}
	wantBody(t, base+"/__admin/scenarios/"+id2, 200, `{"routes": [{"name": "json pay", "method": "GET", "path": "/pay", "respond": {"status": 200, "body": "json"}}]}`)
	// Each in its own type: a JSON document as JSON (before, as YAML).
	for doc, want := range map[string]string{id: yamlType, id2: "application/json"} {
		if ct := do(t, "GET", base+"/__admin/scenarios/"+doc, "").header.Get("Content-Type"); ct != want {
			t.Errorf("GET /__admin/scenarios/%s: Content-Type %q, want %q", doc, ct, want)
		}
	}

	// A file reload keeps them.
	write("file v2")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	wantBody(t, base+"/pay", 200, "json")
	wantBody(t, base+"/other", 200, "file v2")

	if r := do(t, "DELETE", base+"/__admin/scenarios/"+id2, ""); r.status != 200 {
		t.Fatalf("DELETE %s: %d %s", id2, r.status, r.body)
	}
	wantBody(t, base+"/pay", 402, "declined")
	if r := do(t, "DELETE", base+"/__admin/scenarios/"+id2, ""); r.status != 404 {
		t.Fatalf("DELETE %s again: %d %s, want 404", id2, r.status, r.body)
	}
	if r := do(t, "DELETE", base+"/__admin/scenarios", ""); r.status != 400 || !strings.Contains(r.body, "runtime=true") {
		t.Fatalf("DELETE without runtime=true: %d %s, want 400", r.status, r.body)
	}
	wantBody(t, base+"/pay", 402, "declined")
	if r := do(t, "DELETE", base+"/__admin/scenarios?runtime=true", ""); r.status != 200 || r.json(t)["removed"] != float64(1) {
		t.Fatalf("DELETE ?runtime=true: %d %s", r.status, r.body)
	}
	wantBody(t, base+"/pay", 200, "file v2")
	if r := do(t, "POST", base+"/refunds", ""); r.status != 404 {
		t.Fatalf("POST /refunds after removal: %d, want 404", r.status)
	}
}

// TestRuntimeDocumentRefused: what a file would be refused for, a posted
// document is too, with every problem at its line:col in the document,
// and nothing is added; so are documents too large, clashing names, and
// calls the admin API refuses anyway.
func TestRuntimeDocumentRefused(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{AdminToken: "s3cret-token-for-tests"}, `
routes:
  - {name: pay, method: GET, path: /pay, respond: {status: 200, body: "file"}}
`)
	base := hs.URL
	auth := []string{"Authorization", "Bearer s3cret-token-for-tests", "Content-Type", yamlType}
	cases := []struct {
		name, doc string
		status    int
		want      []string // in the body
	}{
		{"two problems", "routes:\n  - path: /x\n    respond: {status: 99}\n  - method: GET\n    path: /y{\n    respond: {status: 200}\n", 400,
			[]string{`posted:3:`, `posted:5:`}},
		{"syntax", "routes: [\n", 400, []string{`posted:`}},
		{"name taken by a file", "routes:\n  - {name: pay, method: GET, path: /pay2, respond: {status: 200}}\n", 400,
			[]string{`posted:2:`, `duplicate route name`}},
		{"body file", "routes:\n  - {method: GET, path: /f, respond: {status: 200, bodyFile: /etc/passwd}}\n", 400, []string{`posted:2:`, `bodyFile is not available in a runtime document`}},
		{"operation", "routes:\n  - {method: POST, path: /v1/customers, operation: PostCustomers}\n", 400, []string{`posted:2:`, `operation: not available in a runtime document`}},
		{"empty", "", 400, []string{"Send a scenario document"}},
		{"too large", "routes: []\n#" + strings.Repeat("x", MaxDocumentSize), 413, []string{"at most"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, "POST", base+"/__admin/scenarios", tc.doc, auth...)
			if r.status != tc.status {
				t.Fatalf("%d %s, want %d", r.status, r.body, tc.status)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.body, w) {
					t.Errorf("body %s lacks %q", r.body, w)
				}
			}
		})
	}
	if r := do(t, "GET", base+"/__admin/scenarios?runtime=true", "", auth...); r.body != "{\n  \"runtime\": []\n}\n" {
		t.Fatalf("after refusals: %s, want no documents", r.body)
	}
	doc := "routes:\n  - {method: GET, path: /z, respond: {status: 200}}\n"
	if r := do(t, "POST", base+"/__admin/scenarios", doc, "Content-Type", yamlType); r.status != 401 {
		t.Fatalf("without the token: %d, want 401", r.status)
	}
	if r := do(t, "POST", base+"/__admin/scenarios", doc, "Authorization", "Bearer s3cret-token-for-tests", "Content-Type", "text/plain"); r.status != 403 {
		t.Fatalf("as text/plain (a cross-site form can send it): %d, want 403", r.status)
	}
	if r := do(t, "POST", base+"/__admin/scenarios", doc, append(auth, "Origin", "https://evil.example")...); r.status != 403 {
		t.Fatalf("from another origin: %d, want 403", r.status)
	}
}

// TestSessions: documents of two sessions on one path answer only their
// session's requests (by header or path prefix), the file answers the
// rest, and the journal counts each session's requests apart.
func TestSessions(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - name: pay
    method: GET
    path: /pay/{id}
    respond: {status: 200, body: "file"}
`)
	base := hs.URL
	for _, name := range []string{"alpha", "beta"} {
		postDoc(t, base, fmt.Sprintf(`
session: %s
routes:
  - name: pay
    method: GET
    path: /pay/{id}
    responses:
      - {status: 200, template: true, body: "%s {{ .Request.Vars.id }} first"}
      - {status: 200, body: "%s then"}
`, name, name, name))
	}
	wantBody(t, base+"/pay/1", 200, "file")
	wantBody(t, base+"/pay/1", 200, "alpha 1 first", SessionHeader, "alpha")
	wantBody(t, base+"/__session/beta/pay/2", 200, "beta 2 first")
	// Each session's sequence is its own.
	wantBody(t, base+"/__session/alpha/pay/3", 200, "alpha then")
	wantBody(t, base+"/pay/4", 200, "beta then", SessionHeader, "beta")
	wantBody(t, base+"/pay/5", 200, "file", SessionHeader, "gamma")
	// Another session's routes are no near miss of a request.
	if r := do(t, "GET", base+"/nothing", "", SessionHeader, "gamma"); r.status != 404 || strings.Contains(r.body, "alpha") {
		t.Fatalf("miss: %d %s", r.status, r.body)
	}
	count := func(q string) string {
		return do(t, "GET", base+"/__admin/requests/count?"+q, "").body
	}
	if got := count("session=alpha"); !strings.Contains(got, `"count": 2`) {
		t.Fatalf("alpha's requests: %s, want 2", got)
	}
	if got := count("session=beta&path=/pay/2"); !strings.Contains(got, `"count": 1`) {
		t.Fatalf("beta's request to /pay/2 (the path without its prefix): %s, want 1", got)
	}
	// Names are unique per session: the same name in one session twice
	// is refused.
	r := do(t, "POST", base+"/__admin/scenarios", "session: alpha\nroutes:\n  - {name: pay, method: GET, path: /x, respond: {status: 200}}\n", "Content-Type", yamlType)
	if r.status != 400 || !strings.Contains(r.body, "duplicate route name") {
		t.Fatalf("a second pay in alpha: %d %s", r.status, r.body)
	}
	r = do(t, "POST", base+"/__admin/scenarios", "session: 'a b'\nroutes: []\n", "Content-Type", yamlType)
	if r.status != 400 || !strings.Contains(r.body, "posted:1:10") {
		t.Fatalf("a bad session name: %d %s", r.status, r.body)
	}
}

// TestRemovedDocumentForgetsItsKeys: the idempotency keys of a removed
// runtime document are forgotten with it, so that the next test adding the
// same stub with the same Idempotency-Key gets a fresh answer, not the
// last test's replay; keys of a group a file's route also uses stay.
func TestRemovedDocumentForgetsItsKeys(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - name: file charge
    method: POST
    path: /file/charges
    idempotency: { key: header.Idempotency-Key }
    respond: { status: 201, template: true, body: { id: 'ch_{{ .Call }}' } }
`)
	base := hs.URL
	stub := `
%s
routes:
  - name: charge
    method: POST
    path: /charges
    idempotency: { key: header.Idempotency-Key }
    respond: { status: 201, template: true, body: { id: 'ch_{{ randomHex 8 }}' } }
`
	shared := `
routes:
  - name: file charge, stubbed
    method: POST
    path: /file/charges
    idempotency: { key: header.Idempotency-Key }
    respond: { status: 201, body: { id: stubbed } }
`
	charge := func(path, session, key string) response {
		t.Helper()
		h := []string{"Idempotency-Key", key, "Content-Type", "application/json"}
		if session != "" {
			h = append(h, SessionHeader, session)
		}
		r := do(t, "POST", base+path, `{"amount":1}`, h...)
		if r.status != 201 {
			t.Fatalf("POST %s (session %q, key %s): %d %s", path, session, key, r.status, r.body)
		}
		return r
	}
	for _, session := range []string{"alpha", ""} {
		first := ""
		for run := range 2 { // a test, then the same test again
			head := ""
			if session != "" {
				head = "session: " + session
			}
			id, _ := postDoc(t, base, strings.Replace(stub, "%s", head, 1))
			r := charge("/charges", session, "k1")
			if run == 0 {
				first = r.body
			} else if r.body == first || r.header.Get("Idempotent-Replayed") != "" {
				t.Errorf("session %q, the stub added again: %s (replayed %q), the first test's answer", session, r.body, r.header.Get("Idempotent-Replayed"))
			}
			if again := charge("/charges", session, "k1"); again.body != r.body {
				t.Errorf("session %q: a retry within the test got %s, want the replay of %s", session, again.body, r.body)
			}
			if d := do(t, "DELETE", base+"/__admin/scenarios/"+id, ""); d.status != 200 {
				t.Fatalf("DELETE: %d %s", d.status, d.body)
			}
		}
	}
	// A stub over a file's route shares the file route's keys: they stay.
	fromFile := charge("/file/charges", "", "k2")
	id, _ := postDoc(t, base, shared)
	if r := charge("/file/charges", "", "k2"); r.body != fromFile.body {
		t.Errorf("the stub over the file's route: %s, want the file's stored answer %s", r.body, fromFile.body)
	}
	if d := do(t, "DELETE", base+"/__admin/scenarios/"+id, ""); d.status != 200 {
		t.Fatalf("DELETE: %d %s", d.status, d.body)
	}
	if r := charge("/file/charges", "", "k2"); r.body != fromFile.body || r.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the file's route after the stub went: %s, want its stored answer %s replayed", r.body, fromFile.body)
	}
}

// TestScopedLookingClearsAreRefused: a call that changes state refuses a
// query parameter it does not read (a 400 problem, nothing changed),
// rather than ignoring it and acting on everything: one parallel test's
// reset?session=alpha would otherwise empty every session's journal and
// sequences.
func TestScopedLookingClearsAreRefused(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - name: pay
    method: GET
    path: /pay
    responses: [{status: 200, body: first}, {status: 200, body: then}]
`)
	base := hs.URL
	postDoc(t, base, "session: alpha\nroutes:\n  - {name: own, method: GET, path: /own, respond: {status: 200, body: own}}\n")
	wantBody(t, base+"/pay", 200, "first", SessionHeader, "beta")
	r := do(t, "POST", base+"/__admin/faults", `{"route": "pay", "fault": {"kind": "latency", "latency": "1ms"}}`, "Content-Type", "application/json")
	if r.status != 201 {
		t.Fatalf("POST /__admin/faults = %d %s", r.status, r.body)
	}
	for _, tc := range []struct{ method, path, detail string }{
		{"POST", "/__admin/reset?session=alpha", "POST /__admin/reset takes only ?route=: it does not read ?session=, and without it would act on everything, not on what ?session= names. Nothing was changed."},
		{"DELETE", "/__admin/requests?session=alpha", "DELETE /__admin/requests takes no query parameters: it does not read ?session=,"},
		{"DELETE", "/__admin/faults?route=pay", "DELETE /__admin/faults takes no query parameters: it does not read ?route=,"},
		{"DELETE", "/__admin/scenarios?runtime=true&session=alpha", "DELETE /__admin/scenarios takes only ?runtime=: it does not read ?session=,"},
		{"DELETE", "/__admin/idempotency?group=x", "DELETE /__admin/idempotency takes no query parameters"},
		{"POST", "/__admin/idempotency/expire?keys=k1", "POST /__admin/idempotency/expire takes only ?group=, ?key=: it does not read ?keys=,"},
		{"DELETE", "/__admin/collections?name=x", "DELETE /__admin/collections takes no query parameters"},
	} {
		r := do(t, tc.method, base+tc.path, "")
		if r.status != 400 || r.header.Get("Content-Type") != "application/problem+json" || !strings.Contains(r.body, tc.detail) {
			t.Errorf("%s %s = %d %s %s, want a 400 problem saying %q", tc.method, tc.path, r.status, r.header.Get("Content-Type"), r.body, tc.detail)
		}
	}
	// Nothing was changed: the sequence goes on, the journal, the
	// document and the fault are there.
	wantBody(t, base+"/pay", 200, "then", SessionHeader, "beta")
	wantBody(t, base+"/own", 200, "own", SessionHeader, "alpha")
	if got := do(t, "GET", base+"/__admin/requests/count", "").body; !strings.Contains(got, `"count": 3`) {
		t.Errorf("the journal after the refused calls: %s, want 3 requests", got)
	}
	if got := do(t, "GET", base+"/__admin/faults", "").body; !strings.Contains(got, `"pay"`) {
		t.Errorf("the faults after the refused calls: %s", got)
	}
	// The parameters these calls do read still work.
	if r := do(t, "POST", base+"/__admin/reset?route=pay", ""); r.status != 200 {
		t.Errorf("reset?route=pay = %d %s", r.status, r.body)
	}
	wantBody(t, base+"/pay", 200, "first", SessionHeader, "beta")
}

// TestRuntimeDocumentsReplicas: two replicas on one real redis-server
// share runtime documents: what one adds the other serves, what the other
// removes the first stops serving, and a replica started later serves
// what is there.
func TestRuntimeDocumentsReplicas(t *testing.T) {
	rs := redistest.Start(t)
	open := func() Options {
		st, err := redis.Open(context.Background(), rs.URL(), redis.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return Options{State: st}
	}
	file := "routes:\n  - {name: pay, method: GET, path: /pay, respond: {status: 200, body: file}}\n"
	_, a, _ := serveYAMLRunning(t, open(), file)
	_, b, _ := serveYAMLRunning(t, open(), file)
	id, _ := postDoc(t, a, "routes:\n  - {name: stub, method: GET, path: /pay, respond: {status: 202, body: stub}}\n")
	wantBody(t, a+"/pay", 202, "stub") // at once on the replica that took the POST
	eventually(t, patience, func() string {
		if r := do(t, "GET", b+"/pay", ""); r.body != "stub" {
			return "replica b answers " + r.body
		}
		return ""
	})
	_, c, _ := serveYAMLRunning(t, open(), file)
	wantBody(t, c+"/pay", 202, "stub")
	if r := do(t, "DELETE", b+"/__admin/scenarios/"+id, ""); r.status != 200 {
		t.Fatalf("DELETE on b: %d %s", r.status, r.body)
	}
	wantBody(t, b+"/pay", 200, "file")
	eventually(t, patience, func() string {
		if r := do(t, "GET", a+"/pay", ""); r.body != "file" {
			return "replica a answers " + r.body
		}
		return ""
	})
}

// TestRuntimeDocumentsReplicasAnswerWhenAllServe: a change of the runtime
// documents over one replica is answered once every replica serves it, so
// that a test behind a load balancer that adds a stub and sends its
// request at once gets the stub from either replica. Before, the other
// replica answered the request without the stub in about 1 of 40 tries
// (it reloads when Redis's message reaches it). A replica that stopped
// announcing without leaving (killed) delays a change by replicaWait at
// most, and one whose time ran out not at all.
func TestRuntimeDocumentsReplicasAnswerWhenAllServe(t *testing.T) {
	rs := redistest.Start(t)
	open := func() *redis.Store {
		st, err := redis.Open(context.Background(), rs.URL(), redis.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	file := "routes:\n  - {name: pay, method: GET, path: /pay, respond: {status: 200, body: file}}\n"
	_, a, _ := serveYAMLRunning(t, Options{State: open()}, file)
	_, b, logs := serveYAMLRunning(t, Options{State: open()}, file)
	for i := range 100 {
		body := fmt.Sprintf("stub %d", i)
		id, _ := postDoc(t, a, fmt.Sprintf("routes:\n  - {name: stub, method: GET, path: /pay, respond: {status: 202, body: %q}}\n", body))
		wantBody(t, b+"/pay", 202, body)
		if r := do(t, "DELETE", a+"/__admin/scenarios/"+id, ""); r.status != 200 {
			t.Fatalf("DELETE on a: %d %s", r.status, r.body)
		}
		wantBody(t, b+"/pay", 200, "file")
	}

	// A replica that announced an old version and then died.
	reps := open().Documents().(state.Replicas)
	if err := reps.Serving(context.Background(), "killed", 0, time.Minute); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	postDoc(t, b, "routes:\n  - {name: late, method: GET, path: /late, respond: {status: 200, body: late}}\n")
	if waited := time.Since(start); waited < replicaWait {
		t.Errorf("the POST answered after %v with a replica behind; want it to wait for it up to %v", waited, replicaWait)
	}
	if !strings.Contains(logs.String(), "not every replica serves the change yet") {
		t.Errorf("no warning of the replica behind:\n%s", logs)
	}
	wantBody(t, a+"/late", 200, "late")
	// Its time runs out: the next change does not wait for it.
	if err := reps.Serving(context.Background(), "killed", 0, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if r := do(t, "DELETE", b+"/__admin/scenarios?runtime=true", ""); r.status != 200 {
		t.Fatalf("DELETE all on b: %d %s", r.status, r.body)
	}
	if waited := time.Since(start); waited >= replicaWait {
		t.Errorf("the DELETE waited %v for a replica whose time ran out", waited)
	}
	if r := do(t, "GET", a+"/late", ""); r.status != 404 {
		t.Errorf("GET /late on a after the DELETE on b: %d %s, want 404", r.status, r.body)
	}
}

// TestRuntimeDocumentsAndBrokenFiles: a file edit that takes a runtime
// route's name fails the reload (at the file's line, the documents keep
// serving), and a document posted while the files are broken is laid on
// the last good files.
func TestRuntimeDocumentsAndBrokenFiles(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.yaml")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("routes:\n  - {name: pay, method: GET, path: /pay, respond: {status: 200, body: file}}\n")
	s, hs, _ := newTestServer(t, Options{Load: func() (*scenarios.Set, error) { return scenarios.Load(path) }})
	base := hs.URL
	postDoc(t, base, "routes:\n  - {name: stub, method: GET, path: /stub, respond: {status: 200, body: stub}}\n")

	write("routes:\n  - {name: pay, method: GET, path: /pay, respond: {status: 200, body: file}}\n  - {name: stub, method: GET, path: /other, respond: {status: 200}}\n")
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), path+":3:5") || !strings.Contains(err.Error(), "duplicate route name") {
		t.Fatalf("Reload with a name a runtime route has: %v, want the duplicate at the file's line", err)
	}
	wantBody(t, base+"/stub", 200, "stub")

	write("routes:\n  - {name: pay, method: GET, path: /pay, respond: {status: 200, body: file v2}\n") // unbalanced
	if err := s.Reload(); err == nil {
		t.Fatal("Reload of a broken file succeeded")
	}
	postDoc(t, base, "routes:\n  - {name: late, method: GET, path: /late, respond: {status: 200, body: late}}\n")
	wantBody(t, base+"/late", 200, "late")
	wantBody(t, base+"/stub", 200, "stub")
	wantBody(t, base+"/pay", 200, "file")
	if st := do(t, "GET", base+"/__admin/scenarios", "").json(t); st["lastReload"].(map[string]any)["ok"] != false {
		t.Fatalf("lastReload after a POST over broken files: %v, want the file error still shown", st["lastReload"])
	}
	write("routes:\n  - {name: pay, method: GET, path: /pay, respond: {status: 200, body: fixed}}\n")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	wantBody(t, base+"/pay", 200, "fixed")
	wantBody(t, base+"/late", 200, "late")
}

// TestRuntimeDocumentEventsToFileEndpoints: a runtime document's events
// go to the webhook endpoints the files define (as a WireMock user's
// runtime stub would call back the app the suite already configured),
// without repeating their URL and secret; an endpoint no file or document
// defines is refused at its line in the posted document, and so is an
// event with nowhere to go. Before, any event of a document without a
// webhooks: block of its own was refused.
func TestRuntimeDocumentEventsToFileEndpoints(t *testing.T) {
	t.Parallel()
	rc := newHookReceiver(t, "whsec_test_123")
	_, base, _ := serveYAMLRunning(t, Options{Webhooks: webhooks.Options{TimeScale: 0.001}}, fmt.Sprintf(`
webhooks:
  endpoints:
    - { name: app, url: %s, secret: whsec_test_123 }
routes:
  - { name: file route, method: GET, path: /ok, respond: { status: 200 } }
`, rc.URL))
	postDoc(t, base, `
routes:
  - name: charge
    method: POST
    path: /v1/charges
    respond: { status: 200, body: { id: ch_1, object: charge } }
    events:
      - type: charge.succeeded
  - name: refund
    method: POST
    path: /v1/refunds
    respond: { status: 200, body: { id: re_1, object: refund } }
    events:
      - { type: charge.refunded, endpoints: [app] }
`)
	do(t, "POST", base+"/v1/charges", `{}`)
	do(t, "POST", base+"/v1/refunds", `{}`)
	eventually(t, patience, func() string {
		var types []string
		for _, ev := range rc.got() {
			types = append(types, ev["type"].(string))
		}
		slices.Sort(types)
		if strings.Join(types, ",") != "charge.refunded,charge.succeeded" {
			return fmt.Sprintf("the app got %v, want charge.succeeded and charge.refunded", types)
		}
		return ""
	})
	r := do(t, "POST", base+"/__admin/scenarios", "routes:\n  - name: x\n    path: /x\n    respond: { status: 200 }\n    events:\n      - { type: a.b, endpoints: [shop] }\n", "Content-Type", yamlType)
	if r.status != 400 || !strings.Contains(r.body, `posted:6:9`) || !strings.Contains(r.body, `no webhook endpoint \"shop\"`) {
		t.Errorf("an endpoint nobody defines: %d %s, want 400 at posted:6:9", r.status, r.body)
	}

	// With no endpoint anywhere, an event has nowhere to go.
	_, plain, _ := serveYAML(t, Options{}, "routes:\n  - { name: ok, path: /ok, respond: { status: 200 } }\n")
	r = do(t, "POST", plain.URL+"/__admin/scenarios", "routes:\n  - name: x\n    path: /x\n    respond: { status: 200 }\n    events:\n      - type: a.b\n", "Content-Type", yamlType)
	if r.status != 400 || !strings.Contains(r.body, "no webhook endpoints are defined") {
		t.Errorf("an event with no endpoint anywhere: %d %s, want 400", r.status, r.body)
	}
}

// TestRuntimeDocumentsOverClashingFiles: a file edit that takes a name a
// runtime route has fails its reload, as a broken file does; a test's
// POST (and DELETE) made meanwhile must still be served, on the last good
// files, as over a broken file. Before, every later POST answered 409
// "did not become current", naming another document's route, until the
// file was fixed.
func TestRuntimeDocumentsOverClashingFiles(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.yaml")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("routes:\n  - {name: pay, method: GET, path: /pay, respond: {status: 200, body: file}}\n")
	s, hs, _ := newTestServer(t, Options{Load: func() (*scenarios.Set, error) { return scenarios.Load(path) }})
	base := hs.URL
	postDoc(t, base, "routes:\n  - {name: stub, method: GET, path: /stub, respond: {status: 200, body: stub}}\n")
	other, _ := postDoc(t, base, "routes:\n  - {name: other, method: GET, path: /other, respond: {status: 200, body: other}}\n")

	write("routes:\n  - {name: pay, method: GET, path: /pay, respond: {status: 200, body: file v2}}\n  - {name: stub, method: GET, path: /mine, respond: {status: 200}}\n")
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), "duplicate route name") {
		t.Fatalf("Reload with a name a runtime route has: %v, want the duplicate", err)
	}
	postDoc(t, base, "routes:\n  - {name: late, method: GET, path: /late, respond: {status: 200, body: late}}\n")
	wantBody(t, base+"/late", 200, "late")
	wantBody(t, base+"/stub", 200, "stub")
	wantBody(t, base+"/pay", 200, "file")
	if r := do(t, "DELETE", base+"/__admin/scenarios/"+other, ""); r.status != 200 {
		t.Fatalf("DELETE over a clashing file: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", base+"/other", ""); r.status != 404 {
		t.Fatalf("GET /other after its document was removed: %d %s, want 404", r.status, r.body)
	}
	st := do(t, "GET", base+"/__admin/scenarios", "").json(t)
	if lr := st["lastReload"].(map[string]any); lr["ok"] != false || !strings.Contains(fmt.Sprint(lr["errors"]), path+":3:5") {
		t.Fatalf("lastReload after a POST over a clashing file: %v, want the file's clash still shown", lr)
	}

	write("routes:\n  - {name: pay, method: GET, path: /pay, respond: {status: 200, body: fixed}}\n")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	wantBody(t, base+"/pay", 200, "fixed")
	wantBody(t, base+"/late", 200, "late")
	wantBody(t, base+"/stub", 200, "stub")
}
