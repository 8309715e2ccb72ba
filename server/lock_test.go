package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
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
		{"problem", "", 429, `"type":"https://github.com/scenariomock/scenariomock#object-locked","title":"Object locked","status":429`},
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

// serveLockedProxy serves, on st, a route that locks /things/{id} and
// forwards to an upstream that holds each request until proceed is
// closed (or answers at once once it is); inside gets a value as each
// request reaches the upstream, that is, while it holds its object.
func serveLockedProxy(t *testing.T, st state.Store) (url string, inside chan struct{}, proceed chan struct{}) {
	t.Helper()
	inside, proceed = make(chan struct{}, 16), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inside <- struct{}{}
		select {
		case <-proceed:
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "done")
	}))
	t.Cleanup(up.Close)
	_, ts, _ := serveYAML(t, Options{State: st}, `
routes:
  - name: things
    method: POST
    path: /things/{id}
    lock: { names: ['{{ .Request.Vars.id }}'], wait: 300ms }
    respond: { proxy: '`+up.URL+`' }
`)
	return ts.URL, inside, proceed
}

// sleepRedis makes rs sleep for secs (DEBUG SLEEP), returns once a PING
// of st goes unanswered, and returns a channel closed when it wakes.
func sleepRedis(t *testing.T, rs *redistest.Server, st *redis.Store, secs string) chan struct{} {
	t.Helper()
	awake := make(chan struct{})
	go func() {
		defer close(awake)
		if _, err := rs.Command("DEBUG", "SLEEP", secs); err != nil {
			t.Errorf("DEBUG SLEEP: %v", err)
		}
	}()
	eventually(t, patience, func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if st.Ping(ctx) == nil {
			return "Redis still answers"
		}
		return ""
	})
	return awake
}

// lockFreed waits until Redis no longer holds the lock of name, well
// before the lock's 30s expiry would free it.
func lockFreed(t *testing.T, rs *redistest.Server, name string) {
	t.Helper()
	eventually(t, 10*time.Second, func() string {
		got, err := rs.Command("EXISTS", "scenariomock:{state}:l:"+name)
		if err != nil {
			return err.Error()
		}
		if strings.TrimSpace(got) != ":0" {
			return "the lock of " + name + " is still held in Redis (it would expire only after 30s)"
		}
		return ""
	})
}

// TestLockRedisBlips: Redis that does not answer when a lock is given
// back, or when it is taken, leaves no lock behind once it answers
// again. Before, the lock stayed held for its 30s expiry on every
// replica: each request on the object waited its wait and got a 429.
func TestLockRedisBlips(t *testing.T) {
	rs := redistest.Start(t)
	st, err := redis.Open(context.Background(), rs.URL(), redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	url, inside, proceed := serveLockedProxy(t, st)

	// Given back while Redis sleeps.
	{
		got := make(chan response, 1)
		go func() {
			r, _ := doCtx(context.Background(), "POST", url+"/things/t1", "")
			got <- r
		}()
		<-inside // t1 is held
		awake := sleepRedis(t, rs, st, "2")
		close(proceed) // the request ends while Redis sleeps: its release is lost
		<-got
		<-awake
		lockFreed(t, rs, "t1")
		if r := do(t, "POST", url+"/things/t1", ""); r.status != 200 {
			t.Fatalf("t1 once Redis woke = %d %s, want 200", r.status, r.body)
		}
		<-inside
	}
	// Taken while Redis sleeps.
	{
		// The SET NX is sent while Redis sleeps: the request gets a 503,
		// and Redis runs the SET once it wakes.
		awake := sleepRedis(t, rs, st, "2")
		if r := do(t, "POST", url+"/things/t2", ""); r.status != 503 {
			t.Fatalf("t2 while Redis sleeps = %d %s, want 503", r.status, r.body)
		}
		<-awake
		lockFreed(t, rs, "t2")
		if r := do(t, "POST", url+"/things/t2", ""); r.status != 200 {
			t.Fatalf("t2 once Redis woke = %d %s, want 200", r.status, r.body)
		}
		<-inside
	}
}

// lockWatch is a store whose Locks tell, on waiting, when a request asks
// for a lock.
type lockWatch struct {
	state.Store
	asked chan struct{}
}

func (w lockWatch) Locks() state.Locks { return askedLocks{w.Store.Locks(), w.asked} }

type askedLocks struct {
	state.Locks
	asked chan struct{}
}

func (l askedLocks) Lock(ctx context.Context, names []string, wait time.Duration) (func(), error) {
	select {
	case l.asked <- struct{}{}:
	default:
	}
	return l.Locks.Lock(ctx, names, wait)
}

// TestLockShutdown: a request waiting for an object another holds ends
// when shutdown begins, as a delay does: before, Serve waited for it for
// the whole shutdown timeout, and one that completes whatever its client
// does (an idempotency key, onClientAbort: complete) went on waiting
// after Serve had returned, for up to its wait.
func TestLockShutdown(t *testing.T) {
	for _, tc := range []struct {
		name    string
		route   string
		timeout time.Duration // Options.ShutdownTimeout
	}{
		{"plain", `{ name: t, method: POST, path: '/things/{id}', lock: { names: ['{{ .Request.Vars.id }}'], wait: 1m }, respond: { body: ok } }`, time.Minute},
		{"detached", `{ name: t, method: POST, path: '/things/{id}', idempotency: { key: header.Idempotency-Key }, lock: { names: ['{{ .Request.Vars.id }}'], wait: 1m }, respond: { body: ok } }`, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			watch := lockWatch{state.NewMemory(state.Options{}), make(chan struct{}, 1)}
			opts := Options{State: watch, ShutdownTimeout: tc.timeout, Logger: slog.New(slog.DiscardHandler)}
			opts.Load = func() (*scenarios.Set, error) { return scenarios.LoadBytes("s.yaml", []byte("routes: ["+tc.route+"]")) }
			s, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- s.Serve(ctx, ln) }()
			url := "http://" + ln.Addr().String()
			waitListening(t, url)
			// Another request holds t1, for longer than the test.
			release, err := watch.Store.Locks().Lock(t.Context(), []string{"t1"}, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			errc := make(chan error, 1)
			go func() {
				_, err := doCtx(context.Background(), "POST", url+"/things/t1", "", "Idempotency-Key", "k1")
				errc <- err
			}()
			select {
			case <-watch.asked:
			case <-time.After(patience):
				t.Fatal("the request did not ask for its lock")
			}
			start := time.Now()
			cancel()
			if err := <-served; err != nil {
				t.Fatalf("Serve returned %v", err)
			}
			if el := time.Since(start); el > 20*time.Second {
				t.Errorf("shutdown took %s: it waited for the lock", el)
			}
			if err := <-errc; err == nil {
				t.Error("the request waiting for its lock got an answer")
			}
			http.DefaultClient.CloseIdleConnections()
			settledGoroutines(t, before)
		})
	}
}

// brokenCollections is a store whose collections panic when used (a
// bug in a stage that runs with the object locked).
type brokenCollections struct{ *state.Memory }

func (brokenCollections) Collections() state.Collections { return struct{ state.Collections }{} }

// TestLockPanic: a request that panics while it holds its object's lock
// (here in commit, saving) gives the lock back: the object is not
// locked for good.
func TestLockPanic(t *testing.T) {
	mem := state.NewMemory(state.Options{})
	_, ts, logs := serveYAML(t, Options{State: brokenCollections{mem}}, `
routes:
  - name: t
    method: POST
    path: /things/{id}
    lock: { names: ['{{ .Request.Vars.id }}'], wait: 100ms }
    respond: { body: '{"id":"x"}', save: { collection: things, id: '{{ .Request.Vars.id }}' } }
`)
	for range 2 {
		if _, err := doCtx(context.Background(), "POST", ts.URL+"/things/t1", ""); err == nil {
			t.Fatal("the request whose save panicked got an answer")
		}
		if !strings.Contains(logs.String(), "panicked") {
			t.Fatalf("no panic logged:\n%s", logs.String())
		}
		if n := mem.Locks().(*state.LocalLocks).Held(); n != 0 {
			t.Fatalf("%d locks held after the request that panicked", n)
		}
	}
	if strings.Contains(logs.String(), "Object locked") {
		t.Fatalf("the second request found the object locked:\n%s", logs.String())
	}
}

// replyDropper stands between the store and Redis and, while drop is
// set, passes the commands on but throws Redis's replies away: a reply
// lost on the network, after Redis ran the command.
type replyDropper struct {
	ln   net.Listener
	drop atomic.Bool
}

func dropReplies(t *testing.T, target string) *replyDropper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &replyDropper{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go func() { _, _ = io.Copy(r, c); r.Close() }()
			go func() {
				defer c.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := r.Read(buf)
					if n > 0 && !d.drop.Load() {
						if _, err := c.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return d
}

// TestLockRedisTakeLost: a lock whose SET NX Redis ran, but whose reply
// was lost, is given back once Redis answers: before, the request got
// its 503 and the lock stayed held, by no one, for its 30s expiry.
func TestLockRedisTakeLost(t *testing.T) {
	rs := redistest.Start(t)
	d := dropReplies(t, rs.Addr())
	st, err := redis.Open(context.Background(), "redis://"+d.ln.Addr().String()+"/0", redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	url, inside, proceed := serveLockedProxy(t, st)
	close(proceed)
	d.drop.Store(true)
	if r := do(t, "POST", url+"/things/t3", ""); r.status != 503 {
		t.Fatalf("t3 with Redis's replies lost = %d %s, want 503", r.status, r.body)
	}
	d.drop.Store(false)
	lockFreed(t, rs, "t3")
	if r := do(t, "POST", url+"/things/t3", ""); r.status != 200 {
		t.Fatalf("t3 once Redis answers = %d %s, want 200", r.status, r.body)
	}
	<-inside
}

// TestLockReset: a reset sent while one request holds an object (in its
// answer) and another waits for it neither deadlocks nor waits past the
// holder. Locks are taken before the reset fence (fenceIn), and a
// request holding the fence takes no lock, so neither waits for the
// other. The waiter gets a 503 when the reset ran before it (a
// straggler, which writes nothing), else its answer: the test does not
// force the order.
func TestLockReset(t *testing.T) {
	inside, proceed := make(chan struct{}, 4), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inside <- struct{}{}
		<-proceed
		fmt.Fprint(w, "done")
	}))
	defer up.Close()
	watch := lockWatch{state.NewMemory(state.Options{}), make(chan struct{}, 4)}
	_, ts, _ := serveYAML(t, Options{State: watch}, `
routes:
  - name: t
    method: POST
    path: /things/{id}
    idempotency: { key: header.Idempotency-Key }
    lock: { names: ['{{ .Request.Vars.id }}'], wait: 1m }
    respond: { proxy: '`+up.URL+`' }
`)
	holder := make(chan response, 1)
	go func() {
		r, _ := doCtx(context.Background(), "POST", ts.URL+"/things/t1", "", "Idempotency-Key", "a")
		holder <- r
	}()
	<-inside
	<-watch.asked
	waiter := make(chan response, 1)
	go func() {
		r, _ := doCtx(context.Background(), "POST", ts.URL+"/things/t1", "", "Idempotency-Key", "b")
		waiter <- r
	}()
	<-watch.asked
	reset := make(chan response, 1)
	go func() { r, _ := doCtx(context.Background(), "POST", ts.URL+"/__admin/reset", ""); reset <- r }()
	close(proceed)
	for name, c := range map[string]chan response{"holder": holder, "reset": reset, "waiter": waiter} {
		select {
		case r := <-c:
			if r.status == 0 || name == "waiter" && r.status != 200 && r.status != 503 {
				t.Errorf("%s = %d %s", name, r.status, r.body)
			}
		case <-time.After(patience):
			t.Fatalf("%s did not end within %s", name, patience)
		}
	}
	if n := watch.Store.Locks().(*state.LocalLocks).Held(); n != 0 {
		t.Fatalf("%d locks held after every request ended", n)
	}
}

// TestLockNameTooLong: a name rendered from the request (an attacker's
// choice) longer than maxLockName is refused, and the problem says what
// the limit is, not --max-template-output, which does not bound it.
func TestLockNameTooLong(t *testing.T) {
	_, ts, _ := serveYAML(t, Options{}, `
routes:
  - name: t
    method: POST
    path: /things
    lock: '{{ .Request.JSON.name }}'
    respond: { body: ok }
`)
	if r := do(t, "POST", ts.URL+"/things", `{"name":"short"}`, "Content-Type", "application/json"); r.status != 200 {
		t.Fatalf("a short name = %d %s", r.status, r.body)
	}
	r := do(t, "POST", ts.URL+"/things", `{"name":"`+strings.Repeat("x", 2000)+`"}`, "Content-Type", "application/json")
	if r.status != 500 || !strings.Contains(r.body, "1024 bytes") || strings.Contains(r.body, "max-template-output") {
		t.Fatalf("a 2000-byte name = %d %s, want a 500 naming the limit of 1024 bytes, not --max-template-output", r.status, r.body)
	}
}

// TestLockOnlyChanges: of an operation's routes only those that change a
// stored object lock: a create and a read ask for no lock.
func TestLockOnlyChanges(t *testing.T) {
	watch := lockWatch{state.NewMemory(state.Options{}), make(chan struct{}, 1)}
	_, ts := serveBank(t, Options{State: watch}, "")
	asked := func() bool {
		select {
		case <-watch.asked:
			return true
		default:
			return false
		}
	}
	acct := do(t, "POST", ts.URL+"/accounts", `{"balance":0}`, "Content-Type", "application/json")
	if acct.status != 200 || asked() {
		t.Fatalf("a create = %d %s, or it asked for a lock", acct.status, acct.body)
	}
	id := fmt.Sprint(acct.json(t)["id"])
	if r := do(t, "GET", ts.URL+"/accounts/"+id, ""); r.status != 200 || asked() {
		t.Fatalf("a read = %d %s, or it asked for a lock", r.status, r.body)
	}
	if r := do(t, "POST", ts.URL+"/accounts/"+id, `{"amount":1}`, "Content-Type", "application/json"); r.status != 200 || !asked() {
		t.Fatalf("an update = %d %s, or it asked for no lock", r.status, r.body)
	}
}

// failingWait is a store whose locks find the object held, then fail
// while the request waits for it (Redis lost in the wait).
type failingWait struct{ state.Store }

func (f failingWait) Locks() state.Locks { return failingWaitLocks{} }

type failingWaitLocks struct{}

func (failingWaitLocks) Lock(_ context.Context, _ []string, wait time.Duration) (func(), error) {
	if wait == 0 {
		return nil, state.ErrLockTimeout // held: hold waits
	}
	return nil, errors.New("redis: connection lost")
}

// TestLockStoreFailsWhileWaiting: a store that fails while a request
// waits for an object is a 503, as any store failure, not a request
// ended as if its client had left (no answer at all).
func TestLockStoreFailsWhileWaiting(t *testing.T) {
	_, ts, _ := serveYAML(t, Options{State: failingWait{state.NewMemory(state.Options{})}}, `
routes:
  - method: POST
    path: /things/{id}
    lock: '{{ .Request.Vars.id }}'
    respond: { body: ok }
`)
	if r := do(t, "POST", ts.URL+"/things/t1", ""); r.status != 503 || !strings.Contains(r.body, "connection lost") {
		t.Fatalf("a store failing during the wait = %d %s, want a 503 naming the failure", r.status, r.body)
	}
}
