package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/internal/redistest"
	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/state/redis"
)

// TestRedisOutage serves from a Redis store, stops redis-server and starts
// it again: routes that need no state keep answering throughout, routes
// that do answer a 503 problem with Retry-After while Redis is away (never
// a wrong answer), health says degraded with a 200, and all comes back by
// itself.
func TestRedisOutage(t *testing.T) {
	rs := redistest.Start(t)
	st, err := redis.Open(context.Background(), rs.URL(), redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	_, hs, _ := serveYAML(t, Options{State: st}, `
routes:
  - name: static
    method: GET
    path: /static
    respond: {status: 200, body: "still here"}
  - name: templated
    method: GET
    path: /hello/{name}
    respond:
      status: 200
      template: true
      body: "hello {{ .Request.Vars.name }}"
  - name: numbered
    method: GET
    path: /numbered
    respond:
      status: 200
      template: true
      body: "call {{ .Call }}"
  - name: counted
    method: GET
    path: /counted
    respond:
      status: 200
      template: true
      body: 'order {{ seq "orders" }}'
  - name: order
    method: GET
    path: /orders/{id}
    state: {name: order, per: '{{ .Request.Vars.id }}', is: Started}
    respond: {status: 200, body: pending}
  - name: steps
    method: GET
    path: /steps
    sequence: {after: repeat-last}
    responses:
      - {status: 200, body: "first"}
      - {status: 200, body: "then"}
`)
	stateless := func(when string) {
		t.Helper()
		if r := do(t, "GET", hs.URL+"/static", ""); r.status != 200 || r.body != "still here" {
			t.Fatalf("%s: static route = %d %q", when, r.status, r.body)
		}
		if r := do(t, "GET", hs.URL+"/hello/ann", ""); r.status != 200 || r.body != "hello ann" {
			t.Fatalf("%s: templated route = %d %q", when, r.status, r.body)
		}
	}
	stateless("Redis up")
	if r := do(t, "GET", hs.URL+"/steps", ""); r.body != "first" {
		t.Fatalf("first step = %d %q", r.status, r.body)
	}
	if r := do(t, "GET", hs.URL+"/numbered", ""); r.body != "call 1" {
		t.Fatalf("numbered = %d %q", r.status, r.body)
	}

	// A test suite resets between tests: the reset epoch is then one
	// that the restarted Redis below has forgotten.
	if r := do(t, "POST", hs.URL+"/__admin/reset", ""); r.status != 200 {
		t.Fatalf("reset = %d %s", r.status, r.body)
	}
	rs.Stop()
	stateless("Redis down")
	for _, path := range []string{"/steps", "/numbered", "/counted", "/orders/o1", "/__admin/counters"} {
		r := do(t, "GET", hs.URL+path, "")
		if r.status != 503 || r.header.Get("Retry-After") == "" || !strings.Contains(r.header.Get("Content-Type"), "problem+json") {
			t.Fatalf("%s with Redis down = %d %v %q, want a 503 problem with Retry-After", path, r.status, r.header, r.body)
		}
		if d, _ := r.json(t)["detail"].(string); strings.Count(strings.ToLower(d), "did not answer") != 1 {
			t.Errorf("%s with Redis down: detail %q, want it to say once that the store did not answer", path, d)
		}
	}
	if r := do(t, "GET", hs.URL+"/__admin/health", ""); r.status != 200 || r.json(t)["state"] != "unavailable" || r.json(t)["status"] != "degraded" {
		t.Fatalf("health with Redis down = %d %s", r.status, r.body)
	}

	rs.Restart() // empty: the test server keeps nothing
	eventually(t, patience, func() string {
		if r := do(t, "GET", hs.URL+"/__admin/health", ""); r.json(t)["state"] != "ok" {
			return "health after restart: " + r.body
		}
		return ""
	})
	for _, path := range []string{"/steps", "/counted", "/numbered"} {
		eventually(t, patience, func() string {
			if r := do(t, "GET", hs.URL+path, ""); r.status != 200 {
				return path + " after restart: " + r.body
			}
			return ""
		})
	}
	stateless("Redis back")
}

// TestRedisReplicaStartKeepsSharedItems: a replica that starts on a shared
// store saves its seeds again (as a reload does) without wiping what the
// others stored since in the seeded collection.
func TestRedisReplicaStartKeepsSharedItems(t *testing.T) {
	rs := redistest.Start(t)
	open := func() state.Store {
		st, err := redis.Open(context.Background(), rs.URL(), redis.Options{Prefix: "seeds:"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	const scenario = `
collections:
  customers:
    - { id: cus_1, name: Ada }
routes:
  - name: create customer
    method: POST
    path: /customers
    respond:
      status: 201
      template: true
      body: { id: '{{ .Request.JSON.id }}' }
      save: { collection: customers, id: '{{ .Response.JSON.id }}' }
  - name: list customers
    method: GET
    path: /customers
    respond:
      list: { collection: customers }
`
	_, first, _ := serveYAML(t, Options{State: open()}, scenario)
	if r := do(t, "POST", first.URL+"/customers", `{"id":"cus_2"}`, "Content-Type", "application/json"); r.status != 201 {
		t.Fatalf("POST = %d %s", r.status, r.body)
	}
	_, second, _ := serveYAML(t, Options{State: open()}, scenario)
	want := `[{"id":"cus_1","name":"Ada"},{"id":"cus_2"}]`
	for _, hs := range []string{first.URL, second.URL} {
		if r := do(t, "GET", hs+"/customers", ""); r.status != 200 || r.body != want {
			t.Fatalf("GET /customers after a second replica started = %d %s, want %s", r.status, r.body, want)
		}
	}
	// POST /__admin/reset still makes every collection its seed again.
	if r := do(t, "POST", second.URL+"/__admin/reset", ""); r.status != 200 {
		t.Fatalf("reset = %d %s", r.status, r.body)
	}
	if r := do(t, "GET", first.URL+"/customers", ""); r.body != `[{"id":"cus_1","name":"Ada"}]` {
		t.Fatalf("GET /customers after reset through another replica = %s", r.body)
	}
}

// TestRedisForgottenSeeds: a Redis restarted without persistence forgets
// the collections' seeds with the rest; the replicas seed them again by
// themselves, as a restart of a single scenariomock does.
func TestRedisForgottenSeeds(t *testing.T) {
	rs := redistest.Start(t)
	open := func() state.Store {
		st, err := redis.Open(context.Background(), rs.URL(), redis.Options{Prefix: "forgotten:"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	const scenario = `
collections:
  customers:
    - { id: cus_1, name: Ada }
routes:
  - name: create customer
    method: POST
    path: /customers
    respond:
      status: 201
      template: true
      body: { id: '{{ .Request.JSON.id }}' }
      save: { collection: customers, id: '{{ .Response.JSON.id }}' }
  - name: get customer
    method: GET
    path: /customers/{id}
    respond:
      load: { collection: customers, id: '{{ .Request.Vars.id }}' }
`
	// Serve, which runs the replica's background work, as the binary does.
	a, stopA := serveReal(t, Options{State: open()}, scenario)
	b, stopB := serveReal(t, Options{State: open()}, scenario)
	defer func() {
		if err := stopA(); err != nil {
			t.Error(err)
		}
		if err := stopB(); err != nil {
			t.Error(err)
		}
	}()
	waitListening(t, a)
	waitListening(t, b)
	rs.Stop()
	rs.Restart() // empty
	eventually(t, patience, func() string {
		for _, hs := range []string{a, b} {
			if r := do(t, "GET", hs+"/customers/cus_1", ""); r.status != 200 || r.body != `{"id":"cus_1","name":"Ada"}` {
				return fmt.Sprintf("GET %s/customers/cus_1 after a Redis restart = %d %s", hs, r.status, r.body)
			}
		}
		return ""
	})
	if r := do(t, "POST", a+"/customers", `{"id":"cus_2"}`, "Content-Type", "application/json"); r.status != 201 {
		t.Fatalf("POST = %d %s", r.status, r.body)
	}
	if r := do(t, "GET", b+"/customers/cus_2", ""); r.status != 200 {
		t.Fatalf("GET cus_2 created after the restart = %d %s", r.status, r.body)
	}
}

// TestReadsCall: a route's hits are counted in the shared store exactly
// when its answer may depend on them.
func TestReadsCall(t *testing.T) {
	t.Parallel()
	s, _, _ := serveYAML(t, Options{}, `
routes:
  - { name: static, path: /a, respond: { body: x } }
  - { name: echo, path: /b, respond: { template: true, body: '{{ .Request.Path }}' } }
  - { name: body, path: /c, respond: { template: true, body: 'n{{ .Call }}' } }
  - { name: json leaf, path: /d, respond: { template: true, body: { n: '{{ $.Call }}' } } }
  - { name: header, path: /e, respond: { template: true, headers: { X-N: '{{ .Call }}' } } }
  - { name: save id, path: /f, method: POST, respond: { status: 201, body: { ok: true }, save: { collection: c, id: 'i{{ .Call }}' } } }
  - { name: sequence, path: /g, responses: [ { body: a }, { body: b } ] }
  - { name: idempotent, path: /h, method: POST, idempotency: { key: header.Idempotency-Key }, respond: { body: x } }
`)
	want := map[string]bool{"static": false, "echo": false, "body": true, "json leaf": true, "header": true, "save id": true, "sequence": true, "idempotent": true}
	for _, rt := range s.snap.Load().routes {
		if rt.shared != want[rt.route.Name] {
			t.Errorf("route %q: shared = %v, want %v", rt.route.Name, rt.shared, want[rt.route.Name])
		}
	}
}

// TestReadsCallOperation: a route naming an operation counts its hits
// in the shared store when its override: or envelope: template reads the
// call number (before, only body:, headers and ids were looked at, so
// replicas on one Redis each counted their own).
func TestReadsCallOperation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := `openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /things:
    get:
      operationId: listThings
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object, properties: {n: {type: integer}}}}}}
`
	scenario := `openapi: {spec: spec.yaml}
routes:
  - { name: plain, method: GET, path: /things, operation: listThings, respond: { template: true, override: { n: 1 } } }
  - { name: counted, method: GET, path: /things, operation: listThings, when: { query: { c: "1" } }, respond: { template: true, override: { n: '{{ .Call }}' } } }
  - { name: enveloped, method: GET, path: /things, operation: listThings, when: { query: { e: "1" } }, respond: { template: true, envelope: { n: '{{ .Call }}', data: '{{ .Answer }}' } } }
`
	for name, content := range map[string]string{"spec.yaml": spec, "s.yaml": scenario} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, _, _ := newTestServer(t, Options{Load: func() (*scenarios.Set, error) {
		set, err := scenarios.Load(filepath.Join(dir, "s.yaml"))
		if err != nil {
			return nil, err
		}
		return set, openapi.Expand(set, openapi.Options{})
	}})
	want := map[string]bool{"plain": false, "counted": true, "enveloped": true}
	for _, rt := range s.snap.Load().routes {
		if w, ok := want[rt.route.Name]; ok && rt.shared != w {
			t.Errorf("route %q: shared = %v, want %v", rt.route.Name, rt.shared, w)
		}
	}
}

// TestRedisSlow: a Redis that stops answering (DEBUG SLEEP holds its one
// thread) turns a stateful request into a 503 within the read timeout,
// not a hung request; stateless routes do not wait for it.
func TestRedisSlow(t *testing.T) {
	rs := redistest.Start(t)
	st, err := redis.Open(context.Background(), rs.URL(), redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	_, hs, _ := serveYAML(t, Options{State: st}, `
routes:
  - { name: static, method: GET, path: /static, respond: { body: here } }
  - name: steps
    method: GET
    path: /steps
    responses: [ { body: first }, { body: then } ]
`)
	asleep := make(chan error, 1)
	go func() {
		_, err := rs.Command("DEBUG", "SLEEP", "5")
		asleep <- err
	}()
	// Wait until Redis is asleep: a PING of our own goes unanswered.
	eventually(t, patience, func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if st.Ping(ctx) == nil {
			return "Redis still answers"
		}
		return ""
	})
	r := do(t, "GET", hs.URL+"/steps", "")
	if r.status != 503 {
		t.Fatalf("stateful route with Redis asleep = %d %q, want a 503", r.status, r.body)
	}
	if r := do(t, "GET", hs.URL+"/static", ""); r.status != 200 {
		t.Fatalf("static route with Redis asleep = %d", r.status)
	}
	select {
	case <-asleep:
		t.Fatal("the answers came only after Redis woke: the request waited for it")
	default:
	}
	if err := <-asleep; err != nil {
		t.Fatalf("DEBUG SLEEP: %v", err)
	}
	eventually(t, patience, func() string {
		if r := do(t, "GET", hs.URL+"/steps", ""); r.status != 200 {
			return "steps after Redis woke: " + r.body
		}
		return ""
	})
}
