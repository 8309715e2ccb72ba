package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/scenariomock/scenariomock/internal/redistest"
)

// replicaScenario is a payment provider in the style of
// examples/payments-stateful.yaml, with delays that make concurrent
// requests overlap.
const replicaScenario = `
defaults:
  idempotency:
    key: header.Idempotency-Key
    required: true
routes:
  - name: create payment
    method: POST
    path: /payments
    respond:
      status: 201
      delay: 2s
      template: true
      body: { id: 'pay_{{ randomHex 24 }}', amount: '{{ .Request.JSON.amount }}' }
      save: { collection: payments, id: '{{ .Response.JSON.id }}' }
  - name: create payment and wait
    method: POST
    path: /payments-wait
    idempotency:
      key: header.Idempotency-Key
      required: true
      inFlight: wait
    respond:
      status: 201
      delay: 2s
      template: true
      body: { id: 'pay_{{ randomHex 24 }}', amount: '{{ .Request.JSON.amount }}' }
      save: { collection: payments, id: '{{ .Response.JSON.id }}' }
  - name: create payment now
    method: POST
    path: /payments-now
    respond:
      status: 201
      template: true
      body: { id: 'pay_{{ randomHex 24 }}', amount: '{{ .Request.JSON.amount }}' }
      save: { collection: payments, id: '{{ .Response.JSON.id }}' }
  - name: get payment
    method: GET
    path: /payments/{id}
    idempotency: off
    respond:
      load: { collection: payments, id: '{{ .Request.Vars.id }}' }
  - name: list payments
    method: GET
    path: /payments
    idempotency: off
    respond:
      list: { collection: payments }
  - name: step per user
    method: GET
    path: /steps
    idempotency: off
    sequence: { per: header.X-User }
    responses:
      - { status: 200, template: true, body: 'call {{ .Call }}' }
  - name: static
    method: GET
    path: /static
    idempotency: off
    respond: { status: 200, body: static }
`

// replica is one scenariomock process of a replicas test.
type replica struct {
	cmd  *exec.Cmd
	logs *syncLog
}

// replicas starts n scenariomock processes sharing the Redis at url under
// prefix, and returns their base URLs.
func replicas(t *testing.T, n int, url, prefix string) []string {
	bases, _ := replicaProcs(t, n, url, prefix)
	return bases
}

func replicaProcs(t *testing.T, n int, url, prefix string) ([]string, []replica) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "payments.yaml")
	if err := os.WriteFile(path, []byte(replicaScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := binary(t)
	var bases []string
	var procs []replica
	for range n {
		cmd, addr, logs := started(t, bin, "--state", url, "--state-prefix", prefix, "--watch=false", path)
		bases = append(bases, "http://"+addr)
		procs = append(procs, replica{cmd, logs})
	}
	return bases, procs
}

type answer struct {
	status   int
	body     string
	replayed bool
	problem  bool
	err      error
}

func call(method, url, body string, headers ...string) answer {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return answer{err: err}
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{
		status: resp.StatusCode, body: string(b), err: err,
		replayed: resp.Header.Get("Idempotent-Replayed") == "true",
		problem:  resp.Header.Get("Content-Type") == "application/problem+json" && resp.Header.Get("Retry-After") != "",
	}
}

// TestReplicas runs three replicas on one redis-server and checks that they
// behave as one server.
func TestReplicas(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	bases, procs := replicaProcs(t, 3, rs.URL(), "replicas:")

	concurrently := func(n int, f func(i int) answer) []answer {
		out := make([]answer, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				out[i] = f(i)
			})
		}
		close(start)
		wg.Wait()
		return out
	}
	payments := func() int {
		a := call("GET", bases[0]+"/payments", "")
		var items []any
		if err := json.Unmarshal([]byte(a.body), &items); a.status != 200 || err != nil {
			t.Fatalf("GET /payments = %d %s", a.status, a.body)
		}
		return len(items)
	}

	t.Run("ten concurrent requests with one key across replicas create one payment, nine get 409", func(t *testing.T) {
		answers := concurrently(10, func(i int) answer {
			return call("POST", bases[i%3]+"/payments", `{"amount": 100}`, "Idempotency-Key", "k-conflict")
		})
		counts := map[int]int{}
		for _, a := range answers {
			if a.err != nil {
				t.Fatal(a.err)
			}
			counts[a.status]++
		}
		if counts[201] != 1 || counts[409] != 9 {
			t.Fatalf("statuses %v, want one 201 and nine 409", counts)
		}
		if n := payments(); n != 1 {
			t.Fatalf("%d payments stored, want 1", n)
		}
	})

	t.Run("ten concurrent identical requests with inFlight wait all get the one payment", func(t *testing.T) {
		answers := concurrently(10, func(i int) answer {
			return call("POST", bases[i%3]+"/payments-wait", `{"amount": 200}`, "Idempotency-Key", "k-wait")
		})
		fresh, bodies := 0, map[string]int{}
		for _, a := range answers {
			if a.err != nil || a.status != 201 {
				t.Fatalf("answer %d %q %v, want 201", a.status, a.body, a.err)
			}
			if !a.replayed {
				fresh++
			}
			bodies[a.body]++
		}
		if fresh != 1 || len(bodies) != 1 {
			t.Fatalf("%d answers not replayed, bodies %v; want one run and one body", fresh, bodies)
		}
		if n := payments(); n != 2 {
			t.Fatalf("%d payments stored, want 2", n)
		}
	})

	t.Run("a per-key sequence advances once per request whichever replica answers", func(t *testing.T) {
		for i := range 9 {
			for _, user := range []string{"ann", "bob"} {
				a := call("GET", bases[(i+len(user))%3]+"/steps", "", "X-User", user)
				if want := fmt.Sprint("call ", i+1); a.status != 200 || a.body != want {
					t.Fatalf("request %d of %s = %d %q, want %q", i+1, user, a.status, a.body, want)
				}
			}
		}
	})

	t.Run("a payment created through one replica is fetched through the others", func(t *testing.T) {
		created := call("POST", bases[0]+"/payments-now", `{"amount": 300}`, "Idempotency-Key", "k-fetch")
		var p struct{ ID string }
		if err := json.Unmarshal([]byte(created.body), &p); created.status != 201 || err != nil || p.ID == "" {
			t.Fatalf("POST = %d %s", created.status, created.body)
		}
		for _, base := range bases[1:] {
			if a := call("GET", base+"/payments/"+p.ID, ""); a.status != 200 || a.body != created.body {
				t.Fatalf("GET through %s = %d %s, want 200 %s", base, a.status, a.body, created.body)
			}
		}
		// And a retry through a third replica replays it.
		if a := call("POST", bases[2]+"/payments-now", `{"amount": 300}`, "Idempotency-Key", "k-fetch"); !a.replayed || a.body != created.body {
			t.Fatalf("retry through another replica = %d %s (replayed %v)", a.status, a.body, a.replayed)
		}
	})

	t.Run("verify --count on one replica counts the requests all three received", func(t *testing.T) {
		// The sequence subtest sent 18 requests to /steps, 6 through each
		// replica. Every replica's journal count sees all 18.
		for _, base := range bases {
			a := call("GET", base+"/__admin/requests/count?route=step+per+user", "")
			var c struct{ Count int }
			if err := json.Unmarshal([]byte(a.body), &c); a.status != 200 || err != nil || c.Count != 18 {
				t.Fatalf("requests/count through %s = %d %s, want 18", base, a.status, a.body)
			}
		}
		bin := binary(t)
		verify := func(args ...string) (int, string) {
			code, stdout, stderr := runCLI(t, bin, nil, append([]string{"verify", "--addr", bases[1]}, args...)...)
			return code, stdout + stderr
		}
		if code, out := verify("--route", "step per user", "--count", "18"); code != 0 {
			t.Fatalf("verify --count 18 exited %d:\n%s", code, out)
		}
		if code, out := verify("--route", "step per user", "--header", "X-User=ann", "--count", "9"); code != 0 {
			t.Fatalf("verify --header X-User=ann --count 9 exited %d:\n%s", code, out)
		}
		if code, out := verify("--route", "step per user", "--count", "6"); code != 1 || !strings.Contains(out, "18") {
			t.Fatalf("verify --count 6 (one replica's share) exited %d, want 1 naming the 18 found:\n%s", code, out)
		}
	})

	t.Run("on SIGTERM a replica closes its store and exits 0", func(t *testing.T) {
		p := procs[2]
		stopped(t, p.cmd, p.logs, syscall.SIGTERM)
		if closed := regexp.MustCompile(`msg="state store closed" round_trips=[1-9]`); !closed.MatchString(p.logs.String()) {
			t.Fatalf("no line saying the store closed, with its round trips:\n%s", p.logs)
		}
		// The others go on.
		if a := call("GET", bases[0]+"/static", ""); a.status != 200 {
			t.Errorf("another replica after one stopped: %d", a.status)
		}
	})
}

// TestReplicasRedisRestart stops and restarts redis-server under load from
// three replicas: every answer is either right or a 503 problem with
// Retry-After, routes without state answer throughout, and service comes
// back by itself.
func TestReplicasRedisRestart(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	bases := replicas(t, 3, rs.URL(), "restart:")

	var (
		ok, unavailable, iterations atomic.Int64
		mu                          sync.Mutex // guards wrong
		wrong                       []string
		stop                        = make(chan struct{})
		wg                          sync.WaitGroup
	)
	bad := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		wrong = append(wrong, fmt.Sprintf(format, args...))
	}
	for w := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				iterations.Add(1)
				in, out := bases[(w+i)%3], bases[(w+i+1)%3]
				if a := call("GET", in+"/static", ""); a.err != nil || a.status != 200 || a.body != "static" {
					bad("static: %d %q %v", a.status, a.body, a.err)
				}
				created := call("POST", in+"/payments-now", `{"amount": 1}`, "Idempotency-Key", fmt.Sprintf("w%d-%d", w, i))
				switch {
				case created.err != nil:
					bad("POST: %v", created.err)
					continue
				case created.status == 503 && created.problem:
					unavailable.Add(1)
					continue
				case created.status != 201:
					bad("POST: %d %s", created.status, created.body)
					continue
				}
				var p struct{ ID string }
				if err := json.Unmarshal([]byte(created.body), &p); err != nil || p.ID == "" {
					bad("POST body %q", created.body)
					continue
				}
				switch got := call("GET", out+"/payments/"+p.ID, ""); {
				case got.err != nil:
					bad("GET: %v", got.err)
				case got.status == 503 && got.problem:
					unavailable.Add(1)
				case got.status != 200 || got.body != created.body:
					bad("GET %s after 201 %s: %d %s", p.ID, created.body, got.status, got.body)
				default:
					ok.Add(1)
				}
			}
		})
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(2 * patience)
		for !cond() {
			if time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				t.Fatalf("waited %s for %s (ok %d, unavailable %d, wrong %v)", 2*patience, what, ok.Load(), unavailable.Load(), wrong)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("answers before the outage", func() bool { return ok.Load() >= 20 })
	rs.StopSaving()
	before := unavailable.Load()
	waitFor("503s during the outage", func() bool { return unavailable.Load() >= before+10 })
	rs.Restart()
	after := ok.Load()
	waitFor("answers after the restart", func() bool { return ok.Load() >= after+20 })
	close(stop)
	wg.Wait()
	t.Logf("%d iterations: %d right, %d answered 503", iterations.Load(), ok.Load(), unavailable.Load())
	if len(wrong) > 0 {
		t.Fatalf("%d wrong answers, e.g. %v", len(wrong), wrong[:min(len(wrong), 5)])
	}
}

// TestReplicasComposeFile checks what of examples/replicas we can without
// Docker: the compose file is YAML whose replicas set only variables that
// name serve flags, with values those flags take, and run a command serve
// accepts.
func TestReplicasComposeFile(t *testing.T) {
	b, err := os.ReadFile("examples/replicas/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatal(err)
	}
	replicas := 0
	for name, svc := range compose.Services {
		if !strings.HasPrefix(name, "replica") {
			continue
		}
		replicas++
		serve := newServeCmd(io.Discard)
		if len(svc.Command) == 0 || svc.Command[0] != "serve" {
			t.Fatalf("%s: command %v, want serve ...", name, svc.Command)
		}
		if err := serve.ParseFlags(svc.Command[1:]); err != nil {
			t.Errorf("%s: command %v: %v", name, svc.Command, err)
		}
		for k, v := range svc.Environment {
			flag := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(k, envPrefix)), "_", "-")
			if !strings.HasPrefix(k, envPrefix) || serve.Flags().Lookup(flag) == nil {
				t.Errorf("%s: %s names no serve flag", name, k)
				continue
			}
			if err := serve.Flags().Set(flag, v); err != nil {
				t.Errorf("%s: %s=%q: %v", name, k, v, err)
			}
		}
	}
	if replicas != 3 {
		t.Errorf("%d replicas in the compose file, want 3", replicas)
	}
}
