package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/internal/redistest"
)

// webhookReplicaScenario sends one event per payment to the receiver at
// %s, retried once after 2s, each attempt given %s.
const webhookReplicaScenario = `
webhooks:
  endpoints:
    - name: shop
      url: %s
      signing: none
      retry: { schedule: [2s], timeout: %s }
routes:
  - name: create payment
    method: POST
    path: /payments
    idempotency: off
    respond:
      status: 201
      template: true
      body: { id: 'pay_{{ randomHex 12 }}' }
    events:
      - type: payment.created
`

// hookReceiver answers 500 to the first delivery (or, with hang, holds
// it until the sender goes away) and 200 to the others, and keeps the
// event id and answer of each.
type hookReceiver struct {
	hang  bool
	mu    sync.Mutex // guards got
	got   []hookCall
	first chan struct{} // closed on the first delivery
}

type hookCall struct {
	event  string
	status int
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var ev struct{ ID string }
	_ = json.Unmarshal(b, &ev)
	h.mu.Lock()
	status := http.StatusOK
	first := len(h.got) == 0
	if first {
		status = http.StatusInternalServerError
		if h.hang {
			status = 0
		}
		close(h.first)
	}
	h.got = append(h.got, hookCall{ev.ID, status})
	h.mu.Unlock()
	if first && h.hang {
		<-r.Context().Done()
		return
	}
	w.WriteHeader(status)
}

func (h *hookReceiver) calls() []hookCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookCall(nil), h.got...)
}

// hookState reads a replica's GET /__admin/webhooks.
func hookState(t *testing.T, base string) (pending int, outcomes []string) {
	pending, as := hookAttempts(t, base)
	for _, a := range as {
		outcomes = append(outcomes, a.Outcome)
	}
	return pending, outcomes
}

type loggedAttempt struct {
	Outcome string
	Attempt int
}

func hookAttempts(t *testing.T, base string) (pending int, attempts []loggedAttempt) {
	t.Helper()
	resp, err := http.Get(base + "/__admin/webhooks")
	if err != nil {
		return -1, nil
	}
	defer resp.Body.Close()
	var out struct {
		Pending  int
		Attempts []loggedAttempt
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("GET /__admin/webhooks: %v", err)
	}
	return out.Pending, out.Attempts
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", 2*patience, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReplicasWebhookOutbox: a replica that queued an event and saw its
// first attempt fail is killed (SIGKILL) before the retry; the delivery
// waits in Redis, and of the two replicas started after, exactly one
// delivers it, with the same event id.
func TestReplicasWebhookOutbox(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	recv := &hookReceiver{first: make(chan struct{})}
	hs := httptest.NewServer(recv)
	defer hs.Close()
	path := filepath.Join(t.TempDir(), "hooks.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(webhookReplicaScenario, hs.URL, "5s")), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := binary(t)
	start := func() (*replica, string) {
		cmd, addr, logs := started(t, bin, "--state", rs.URL(), "--state-prefix", "hooks:", "--watch=false", path)
		return &replica{cmd, logs}, "http://" + addr
	}

	a, baseA := start()
	if r := call("POST", baseA+"/payments", `{}`); r.status != 201 {
		t.Fatalf("POST /payments = %d %s %v", r.status, r.body, r.err)
	}
	select {
	case <-recv.first:
	case <-time.After(2 * patience):
		t.Fatal("no first delivery")
	}
	waitUntil(t, "the first replica to schedule the retry", func() bool {
		_, outcomes := hookState(t, baseA)
		return len(outcomes) == 1 && outcomes[0] == "retrying"
	})
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()

	_, baseB := start()
	_, baseC := start()
	if n, _ := hookState(t, baseB); n != 1 && len(recv.calls()) == 1 {
		t.Fatalf("after the kill, %d deliveries pending in Redis, want 1", n)
	}
	waitUntil(t, "the retry, and an empty outbox", func() bool {
		pending, _ := hookState(t, baseB)
		return len(recv.calls()) >= 2 && pending == 0
	})
	got := recv.calls()
	if len(got) != 2 || got[0].event == "" || got[1].event != got[0].event || got[1].status != 200 {
		t.Fatalf("the receiver got %+v, want a 500 then one 200, one event id", got)
	}
	// The outbox is empty, so nothing more can come. The attempt log is
	// shared in Redis: both replicas list the killed one's attempt and
	// the retry one of them made, and the delivery that verify --webhook
	// counts, once.
	for name, base := range map[string]string{"B": baseB, "C": baseC} {
		if _, out := hookState(t, base); !slices.Equal(out, []string{"retrying", "delivered"}) {
			t.Errorf("replica %s lists attempts %v, want [retrying delivered] (A's, then the retry)", name, out)
		}
		if ds := hookDeliveries(t, base); len(ds) != 1 || ds[0].State != "delivered" || ds[0].Attempts != 2 {
			t.Errorf("replica %s lists deliveries %+v, want one delivered in 2 attempts", name, ds)
		}
	}
}

type loggedDelivery struct {
	State    string
	Attempts int
}

// hookDeliveries reads a replica's deliveries from GET /__admin/webhooks.
func hookDeliveries(t *testing.T, base string) []loggedDelivery {
	t.Helper()
	resp, err := http.Get(base + "/__admin/webhooks")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Deliveries []loggedDelivery }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("GET /__admin/webhooks: %v", err)
	}
	return out.Deliveries
}

// TestReplicasWebhookLease: a replica killed in the middle of an attempt
// (the receiver holds it) leaves the delivery claimed; when the claim's
// lease ends (the 3s timeout plus 5s), one of the two replicas started
// after makes the attempt again, and only one does.
func TestReplicasWebhookLease(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	recv := &hookReceiver{hang: true, first: make(chan struct{})}
	hs := httptest.NewServer(recv)
	defer hs.Close()
	path := filepath.Join(t.TempDir(), "hooks.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(webhookReplicaScenario, hs.URL, "3s")), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := binary(t)
	start := func() (*exec.Cmd, string) {
		cmd, addr, _ := started(t, bin, "--state", rs.URL(), "--state-prefix", "lease:", "--watch=false", path)
		return cmd, "http://" + addr
	}
	a, baseA := start()
	if r := call("POST", baseA+"/payments", `{}`); r.status != 201 {
		t.Fatalf("POST /payments = %d %s %v", r.status, r.body, r.err)
	}
	select {
	case <-recv.first:
	case <-time.After(2 * patience):
		t.Fatal("no first delivery")
	}
	killed := time.Now()
	if err := a.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = a.Wait()
	_, baseB := start()
	_, baseC := start()
	waitUntil(t, "the attempt again, and an empty outbox", func() bool {
		pending, _ := hookState(t, baseB)
		return len(recv.calls()) >= 2 && pending == 0
	})
	got := recv.calls()
	if len(got) != 2 || got[0].event == "" || got[1].event != got[0].event || got[1].status != 200 {
		t.Fatalf("the receiver got %+v, want the held attempt then one 200, one event id", got)
	}
	// Attempt 1 again: the killed replica recorded no outcome. The log is
	// shared: both list the one attempt made.
	for name, base := range map[string]string{"B": baseB, "C": baseC} {
		if _, in := hookAttempts(t, base); len(in) != 1 || in[0].Outcome != "delivered" || in[0].Attempt != 1 {
			t.Errorf("replica %s lists attempts %+v; want one delivered first attempt", name, in)
		}
	}
	t.Logf("delivered again %s after the kill (lease 8s from the claim)", time.Since(killed).Round(time.Millisecond))
}
