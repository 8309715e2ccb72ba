package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/internal/redistest"
	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/state/redis"
)

// bankSpec has accounts, and a deposit that is an update of one.
const bankSpec = `openapi: 3.0.3
info: {title: bank, version: "1"}
paths:
  /accounts:
    post:
      operationId: createAccount
      requestBody: {content: {application/json: {schema: {type: object, properties: {balance: {type: integer}}}}}}
      responses: {"200": {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/account'}}}}}
  /accounts/{account}:
    parameters: [{name: account, in: path, required: true, schema: {type: string}}]
    get:
      operationId: getAccount
      responses: {"200": {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/account'}}}}}
    post:
      operationId: deposit
      requestBody: {content: {application/json: {schema: {type: object, properties: {amount: {type: integer}}}}}}
      responses: {"200": {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/account'}}}}}
components:
  schemas:
    account: {type: object, properties: {id: {type: string}, balance: {type: integer}, before: {type: integer}}}
`

// bank is a file whose deposit reads an account's balance as stored and
// stores it plus the amount: a read, then a write, which two deposits at
// once interleave unless the account is locked. %s is the route's lock:.
const bank = `openapi: {spec: spec.yaml}
routes:
  - name: deposit
    method: POST
    path: /accounts/{account}
    operation: deposit
    %s
    respond:
      template: true
      override: { balance: '{{ add (int .Item.balance) (int .Request.JSON.amount) }}', before: '{{ .Item.balance }}' }
`

// serveBank serves the bank with the deposit's lock: line.
func serveBank(t *testing.T, opts Options, lock string) (*Server, *httptest.Server) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{"spec.yaml": bankSpec, "s.yaml": fmt.Sprintf(bank, lock)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts.Load = func() (*scenarios.Set, error) {
		set, err := scenarios.Load(filepath.Join(dir, "s.yaml"))
		if err != nil {
			return nil, err
		}
		return set, openapi.Expand(set, openapi.Options{})
	}
	s, ts, _ := newTestServer(t, opts)
	return s, ts
}

// deposits makes an account and sends it n deposits of 10 at once; it
// returns the balance after, and how many distinct balances the deposits
// read before theirs.
func deposits(t *testing.T, n int, urls ...string) (balance string, distinct int) {
	t.Helper()
	url := urls[0]
	acct := do(t, "POST", url+"/accounts", `{"balance":0}`, "Content-Type", "application/json")
	if acct.status != 200 {
		t.Fatalf("create account = %d %s", acct.status, acct.body)
	}
	id := fmt.Sprint(acct.json(t)["id"])
	var wg sync.WaitGroup
	var mu sync.Mutex
	befores := map[string]bool{}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := do(t, "POST", urls[i%len(urls)]+"/accounts/"+id, `{"amount":10}`, "Content-Type", "application/json")
			if r.status != 200 {
				t.Errorf("deposit = %d %s", r.status, r.body)
				return
			}
			mu.Lock()
			befores[fmt.Sprint(r.json(t)["before"])] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	return fmt.Sprint(do(t, "GET", url+"/accounts/"+id, "").json(t)["balance"]), len(befores)
}

// TestLockSerializesReadThenWrite: 50 deposits of 10 at once into one
// account leave 500, since an operation that changes a stored object
// locks it; with lock: [] (none), deposits read the same balance and
// overwrite each other's.
func TestLockSerializesReadThenWrite(t *testing.T) {
	_, ts := serveBank(t, Options{}, "")
	if balance, distinct := deposits(t, 50, ts.URL); balance != "500" || distinct != 50 {
		t.Fatalf("balance %s after 50 deposits of 10 (want 500); %d distinct balances read (want 50)", balance, distinct)
	}
	// The control: without the lock deposits are lost (a test that
	// passes without the lock proves nothing). The race is not certain
	// on every run; a handful of tries makes it so.
	_, ts = serveBank(t, Options{}, "lock: []")
	for try := 0; ; try++ {
		if balance, distinct := deposits(t, 50, ts.URL); balance != "500" || distinct < 50 {
			break
		}
		if try == 10 {
			t.Fatal("lock: []: 11 runs of 50 concurrent deposits lost none; the test cannot tell the lock from its absence")
		}
	}
}

// TestLockTimeout: a request that waits longer than the lock's wait for
// an object another holds gets the timeout answer (the file's own, or a
// 429 problem), changes nothing, and the object is free again after.
func TestLockTimeout(t *testing.T) {
	for _, tc := range []struct {
		name, defaults string
		status         int
		body           string
	}{
		{"problem", "", 429, "Object locked"},
		{"own answer", `defaults: { lock: { wait: 100ms, timeout: { body: { error: { code: lock_timeout } } } } }`, 429, `"lock_timeout"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, ts, _ := serveYAML(t, Options{}, tc.defaults+`
routes:
  - name: slow
    method: POST
    path: /things/{id}
    lock: { names: ['{{ .Request.Vars.id }}'], wait: 100ms }
    respond:
      template: true
      body: { id: '{{ .Request.Vars.id }}', n: '{{ seq "things" }}' }
`)
			// Another request holds thing 1, as a long one would.
			release, err := srv.state.Locks().Lock(t.Context(), []string{"t1"}, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			r := do(t, "POST", ts.URL+"/things/t1", "")
			if r.status != tc.status || !strings.Contains(r.body, tc.body) {
				t.Fatalf("a request on a held object = %d %s, want %d with %s", r.status, r.body, tc.status, tc.body)
			}
			if tc.name == "problem" && r.header.Get("Retry-After") == "" {
				t.Errorf("the 429 problem has no Retry-After")
			}
			if r := do(t, "POST", ts.URL+"/things/t2", ""); r.status != 200 {
				t.Fatalf("another object = %d %s", r.status, r.body)
			}
			release()
			if r := do(t, "POST", ts.URL+"/things/t1", ""); r.status != 200 || !strings.Contains(r.body, `"n":2`) {
				t.Fatalf("once given back = %d %s, want 200 and the second seq (the timed-out request drew none)", r.status, r.body)
			}
			if n := srv.state.Locks().(*state.LocalLocks).Held(); n != 0 {
				t.Fatalf("%d locks held after every request ended", n)
			}
		})
	}
}

// TestLockClientLeaves: a client that hangs up while its request waits
// for a lock ends the request; the lock's holder is not disturbed.
func TestLockClientLeaves(t *testing.T) {
	srv, ts, logs := serveYAML(t, Options{}, `
routes:
  - method: POST
    path: /things/{id}
    lock: { names: ['{{ .Request.Vars.id }}'], wait: 1m }
    respond: { body: ok }
`)
	release, err := srv.state.Locks().Lock(t.Context(), []string{"t1"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	req, _ := http.NewRequest("POST", ts.URL+"/things/t1", nil)
	client := &http.Client{Timeout: 200 * time.Millisecond}
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a request on a held object answered %d before the client gave up", resp.StatusCode)
	}
	eventually(t, 30*time.Second, func() string {
		if !strings.Contains(logs.String(), "client gone while another request held its object") {
			return "the request that waited did not end when its client left:\n" + logs.String()
		}
		return ""
	})
	if n := srv.state.Locks().(*state.LocalLocks).Held(); n != 1 {
		t.Fatalf("%d locks held, want the holder's only", n)
	}
}

// TestLockAcrossReplicas: deposits sent to two replicas on one Redis
// lock the account for both.
func TestLockAcrossReplicas(t *testing.T) {
	rs := redistest.Start(t)
	var urls []string
	for range 2 {
		st, err := redis.Open(context.Background(), rs.URL(), redis.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		_, ts := serveBank(t, Options{State: st}, "")
		urls = append(urls, ts.URL)
	}
	if balance, distinct := deposits(t, 50, urls...); balance != "500" || distinct != 50 {
		t.Fatalf("balance %s after 50 deposits of 10 through two replicas (want 500); %d distinct balances read (want 50)", balance, distinct)
	}
}
