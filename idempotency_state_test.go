package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/internal/redistest"
)

// slowRouteScenario is an idempotent create that runs longer than its
// key's ttl (issue 19, item 3).
const slowRouteScenario = `
routes:
  - name: slow create
    method: POST
    path: /slow
    idempotency:
      key: header.Idempotency-Key
      required: true
      ttl: 1s
    respond:
      status: 201
      delay: 6s
      template: true
      body: { id: 'ch_{{ randomHex 12 }}' }
`

// idemKeyState returns the state of key in GET /__admin/idempotency ("" when
// it is not listed).
func idemKeyState(t *testing.T, base, key string) string {
	t.Helper()
	resp, err := http.Get(base + "/__admin/idempotency")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Keys []struct {
			Key, State string
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	for _, k := range page.Keys {
		if k.Key == key {
			return k.State
		}
	}
	return ""
}

// TestIdempotencyTTLShorterThanRoute: a route slower than its key's ttl
// never runs twice at once. A retry sent after the ttl has passed, while
// the first request still runs, gets 409 (before, it got a fresh 201 and
// the route ran a second time); after the first completes, the retry gets
// its replay, and the key expires ttl after that completion. Run against
// memory and against a real redis-server.
func TestIdempotencyTTLShorterThanRoute(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	rs := redistest.Start(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"memory", nil},
		{"redis", []string{"--state", rs.URL(), "--state-prefix", "ttl:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "slow.yaml")
			if err := os.WriteFile(path, []byte(slowRouteScenario), 0o644); err != nil {
				t.Fatal(err)
			}
			_, addr, logs := started(t, bin, append(tc.args, "--watch=false", path)...)
			base := "http://" + addr
			first := make(chan answer, 1)
			go func() { first <- call("POST", base+"/slow", `{"amount":1}`, "Idempotency-Key", "k1") }()
			deadline := time.Now().Add(patience)
			for idemKeyState(t, base, "k1") != "in-flight" {
				if time.Now().After(deadline) {
					t.Fatalf("k1 never in flight; logs:\n%s", logs)
				}
				time.Sleep(20 * time.Millisecond) // polling the admin API
			}
			claimed := time.Now()
			// Wait out the ttl (1s) with margin; the route still has
			// about 4.5s to run.
			time.Sleep(1500*time.Millisecond - time.Since(claimed))
			sent := time.Since(claimed)
			retry := call("POST", base+"/slow", `{"amount":1}`, "Idempotency-Key", "k1")
			if retry.err != nil {
				t.Fatal(retry.err)
			}
			if retry.status == 201 && !retry.replayed {
				t.Fatalf("a retry %v after the claim, past the 1s ttl, ran the route again: %d %s", sent, retry.status, retry.body)
			}
			if retry.status != 409 {
				t.Fatalf("retry while the first runs = %d %s (replayed %v), want 409", retry.status, retry.body, retry.replayed)
			}
			a := <-first
			if a.err != nil || a.status != 201 {
				t.Fatalf("first request = %d %s %v", a.status, a.body, a.err)
			}
			done := time.Now()
			again := call("POST", base+"/slow", `{"amount":1}`, "Idempotency-Key", "k1")
			if time.Since(done) < 900*time.Millisecond && (again.status != 201 || !again.replayed || again.body != a.body) {
				t.Fatalf("retry just after completion = %d %s (replayed %v), want the replay of %s", again.status, again.body, again.replayed, a.body)
			}
		})
	}
}

// sleepyRouteScenario is an idempotent create that saves an item, so that
// the request needs Redis again after its delay (issue 19, item 1).
const sleepyRouteScenario = `
routes:
  - name: create payment
    method: POST
    path: /payments
    idempotency:
      key: header.Idempotency-Key
      required: true
    respond:
      status: 201
      delay: 3s
      template: true
      body: { id: 'pay_{{ randomHex 12 }}' }
      save: { collection: payments, id: '{{ .Response.JSON.id }}' }
`

// redisAsleep reports whether the redis-server at addr fails to answer a
// PING within 200ms, that is, whether DEBUG SLEEP holds it.
func redisAsleep(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	_, err = bufio.NewReader(c).ReadString('\n')
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestRedisTimeoutFreesKey: Redis stops answering (DEBUG SLEEP) while an
// idempotent request runs, so that its store calls after the delay time
// out and it answers 503. Once Redis answers again, the key must be free:
// before, the failed release left it in flight for its whole ttl (24h of
// 409s); now the store retries the release in the background until Redis
// answers.
func TestRedisTimeoutFreesKey(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	rs := redistest.Start(t)
	path := filepath.Join(t.TempDir(), "payments.yaml")
	if err := os.WriteFile(path, []byte(sleepyRouteScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	_, addr, logs := started(t, bin, "--state", rs.URL(), "--state-prefix", "sleepy:", "--watch=false", path)
	base := "http://" + addr
	first := make(chan answer, 1)
	go func() { first <- call("POST", base+"/payments", `{"amount":1}`, "Idempotency-Key", "k1") }()
	deadline := time.Now().Add(patience)
	for idemKeyState(t, base, "k1") != "in-flight" {
		if time.Now().After(deadline) {
			t.Fatalf("k1 never in flight; logs:\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond) // polling the admin API
	}
	slept := make(chan error, 1)
	go func() {
		_, err := rs.Command("DEBUG", "SLEEP", "6")
		slept <- err
	}()
	for !redisAsleep(rs.Addr()) {
		if time.Now().After(deadline) {
			t.Fatal("redis-server never went to sleep")
		}
	}
	a := <-first
	if a.err != nil {
		t.Fatal(a.err)
	}
	if err := <-slept; err != nil {
		t.Fatalf("DEBUG SLEEP: %v", err)
	}
	if a.status != 503 {
		t.Fatalf("the request whose store calls timed out = %d %s, want 503; logs:\n%s", a.status, a.body, logs)
	}
	// Redis is awake: the key must become free (a retry runs the route)
	// within seconds, not stay in flight for 24 hours.
	woke := time.Now()
	for {
		retry := call("POST", base+"/payments", `{"amount":1}`, "Idempotency-Key", "k1")
		if retry.err != nil {
			t.Fatal(retry.err)
		}
		if retry.status == 201 {
			t.Logf("the key was free %v after Redis woke", time.Since(woke).Round(time.Millisecond))
			break
		}
		if retry.status != 409 && retry.status != 503 {
			t.Fatalf("retry = %d %s", retry.status, retry.body)
		}
		if time.Since(woke) > patience {
			t.Fatalf("the key is still in flight %v after Redis woke (last retry %d); logs:\n%s", patience, retry.status, logs)
		}
		time.Sleep(100 * time.Millisecond) // polling, as a client's retries would
	}
}

// TestCountersBounded: seq counter names taken from the request are
// bounded by --max-counters (before, every name was kept: 20,000 long names
// took RSS to 252 MB), the listing pages, and a reset forgets the names,
// making room again. Issue 19, item 6; memory and a real redis-server.
func TestCountersBounded(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	rs := redistest.Start(t)
	const scenario = `
routes:
  - name: numbered
    method: GET
    path: /orders/{id}
    respond:
      status: 200
      template: true
      body: 'n{{ seq .Request.Vars.id }}'
`
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"memory", nil},
		{"redis", []string{"--state", rs.URL(), "--state-prefix", "counters:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "orders.yaml")
			if err := os.WriteFile(path, []byte(scenario), 0o644); err != nil {
				t.Fatal(err)
			}
			_, addr, logs := started(t, bin, append(tc.args, "--max-counters", "20", "--watch=false", path)...)
			base := "http://" + addr
			for i := range 20 {
				if a := call("GET", fmt.Sprintf("%s/orders/o%02d", base, i), ""); a.status != 200 || a.body != "n1" {
					t.Fatalf("name %d of 20 = %d %s; logs:\n%s", i, a.status, a.body, logs)
				}
			}
			if a := call("GET", base+"/orders/o00", ""); a.status != 200 || a.body != "n2" {
				t.Fatalf("a known name at the bound = %d %s, want n2", a.status, a.body)
			}
			if a := call("GET", base+"/orders/one-too-many", ""); a.status != 507 || !strings.Contains(a.body, "max-counters") {
				t.Fatalf("a 21st name of 20 = %d %s, want a 507 problem naming --max-counters", a.status, a.body)
			}
			var page struct {
				Counters []struct {
					Name  string
					Value int64
				}
				Total, Offset int
			}
			getJSON(t, base+"/__admin/counters?offset=5&limit=3", &page)
			if page.Total != 20 || len(page.Counters) != 3 || page.Counters[0].Name != "o05" {
				t.Fatalf("counters page (offset 5, limit 3) = %+v, want o05.. of 20", page)
			}
			if a := call("POST", base+"/__admin/reset", ""); a.status != 200 {
				t.Fatalf("reset = %d %s", a.status, a.body)
			}
			getJSON(t, base+"/__admin/counters", &page)
			if page.Total != 0 || len(page.Counters) != 0 {
				t.Fatalf("counters after reset = %+v, want none (names forgotten)", page)
			}
			if a := call("GET", base+"/orders/one-too-many", ""); a.status != 200 || a.body != "n1" {
				t.Fatalf("a new name after reset = %d %s, want n1", a.status, a.body)
			}
		})
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// TestByteBudgets: stored answers and items are bounded by bytes, not only
// by count (issue 19, item 7: 1,500 items of 2 MB took 5.7 GB RSS). Past
// --idempotency-max-bytes the least recently used answers are forgotten;
// past --collections-max-bytes a save is a 507; health reports the bytes
// used. Memory and a real redis-server.
func TestByteBudgets(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	rs := redistest.Start(t)
	big := strings.Repeat("x", 200<<10)
	scenario := `
routes:
  - name: create
    method: POST
    path: /charges
    idempotency: { key: header.Idempotency-Key, required: true }
    respond: { status: 201, body: "` + big + `" }
  - name: save
    method: PUT
    path: /items/{id}
    idempotency: off
    respond:
      status: 201
      template: true
      body: '{"id":"{{ .Request.Vars.id }}","pad":"` + big + `"}'
      save: { collection: items, id: '{{ .Request.Vars.id }}' }
`
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"memory", nil},
		{"redis", []string{"--state", rs.URL(), "--state-prefix", "bytes:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "big.yaml")
			if err := os.WriteFile(path, []byte(scenario), 0o644); err != nil {
				t.Fatal(err)
			}
			_, addr, logs := started(t, bin, append(tc.args, "--idempotency-max-bytes", "1MiB", "--collections-max-bytes", "1MiB", "--watch=false", path)...)
			base := "http://" + addr
			for i := range 10 {
				if a := call("POST", base+"/charges", "", "Idempotency-Key", fmt.Sprint("k", i)); a.status != 201 || a.replayed {
					t.Fatalf("charge %d = %d (replayed %v); logs:\n%s", i, a.status, a.replayed, logs)
				}
			}
			if a := call("POST", base+"/charges", "", "Idempotency-Key", "k9"); !a.replayed {
				t.Fatalf("the newest answer is not replayed: %d", a.status)
			}
			var health struct {
				Usage struct {
					IdempotencyKeys                   int
					IdempotencyBytes, CollectionBytes int64
				}
			}
			getJSON(t, base+"/__admin/health", &health)
			if u := health.Usage; u.IdempotencyKeys > 5 || u.IdempotencyBytes <= 4*200<<10 || u.IdempotencyBytes > 1<<20 {
				t.Fatalf("after ten 200 KiB answers under a 1 MiB budget, health usage = %+v, want at most 5 keys within 1 MiB", u)
			}
			// Redis evicts in exact LRU order; memory, sharded at the
			// default --idempotency-max-keys, per shard.
			if a := call("POST", base+"/charges", "", "Idempotency-Key", "k0"); a.replayed && tc.name == "redis" {
				t.Fatal("the oldest of ten 200 KiB answers is still replayed under a 1 MiB budget")
			}
			saved := 0
			for i := range 10 {
				a := call("PUT", fmt.Sprintf("%s/items/i%d", base, i), "")
				if a.status == 507 {
					break
				}
				if a.status != 201 {
					t.Fatalf("save %d = %d %.200s", i, a.status, a.body)
				}
				saved++
			}
			if saved != 5 {
				t.Fatalf("%d items of 200 KiB saved under a 1 MiB budget, want 5 then a 507", saved)
			}
			getJSON(t, base+"/__admin/health", &health)
			if u := health.Usage; u.CollectionBytes <= 5*200<<10 || u.CollectionBytes > 1<<20 {
				t.Fatalf("health usage = %+v, want collection bytes within 1 MiB and near it", u)
			}
		})
	}
}
