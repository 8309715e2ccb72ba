package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/internal/redistest"
)

// TestRedisRestartLosesClaim: redis-server is killed and started again,
// empty, while an idempotent request runs its delay (issue 19 item 2).
// Its claim is gone when it completes: its client must get a 503 problem
// (the request may have taken effect; a retry runs it again), not a 201
// it would trust while its retry, finding no key, runs the route a second
// time. Before, the first request got 201 and so did the retry: two
// payments, both reported as the one.
func TestRedisRestartLosesClaim(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	rs := redistest.Start(t)
	path := filepath.Join(t.TempDir(), "payments.yaml")
	if err := os.WriteFile(path, []byte(sleepyRouteScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	_, addr, logs := started(t, bin, "--state", rs.URL(), "--state-prefix", "restart:", "--watch=false", path)
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
	rs.Stop() // --save '': what it held is lost
	rs.Restart()
	a := <-first
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.status != 503 || !a.problem {
		t.Fatalf("the request whose claim Redis lost = %d %s, want a 503 problem; logs:\n%s", a.status, a.body, logs)
	}
	// The key is free: the retry runs the route, as the 503 said.
	deadline = time.Now().Add(patience)
	for {
		retry := call("POST", base+"/payments", `{"amount":1}`, "Idempotency-Key", "k1")
		if retry.err != nil {
			t.Fatal(retry.err)
		}
		if retry.status == 201 && !retry.replayed {
			break
		}
		if retry.status != 503 || time.Now().After(deadline) {
			t.Fatalf("retry = %d %s (replayed %v), want 201 from running the route again", retry.status, retry.body, retry.replayed)
		}
		time.Sleep(100 * time.Millisecond) // polling, as a client's retries would
	}
}
