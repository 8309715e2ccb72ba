package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPaymentsDemo replays the README's curl walk-through against the
// example file. The test clock records the delays asked for.
func TestPaymentsDemo(t *testing.T) {
	t.Parallel()
	// The transfer's 10s delay is tripled, not shortened: it must outlast
	// however late a loaded machine lets the server notice the client leave.
	clock := &testClock{scale: 3, began: make(chan struct{}, 16)}
	_, hs, _ := newTestServer(t, Options{Clock: clock}, demoFile)
	H := hs.URL
	jsonCT := []string{"Content-Type", "application/json"}
	with := func(extra ...string) []string { return append(append([]string{}, jsonCT...), extra...) }
	const body = `{"amount":9800,"currency":"JPY"}`

	// Same key twice: both 201; the second carries Idempotent-Replayed: true.
	key := "6d3f1c1e-4a43-4c8f-9b1e-2f8f4d2a9c11"
	first := do(t, "POST", H+"/payments", body, with("Idempotency-Key", key)...)
	second := do(t, "POST", H+"/payments", body, with("Idempotency-Key", key)...)
	if first.status != 201 || second.status != 201 {
		t.Fatalf("statuses %d, %d; want 201, 201", first.status, second.status)
	}
	if v := first.header.Get("Idempotent-Replayed"); v != "" {
		t.Errorf("first response has Idempotent-Replayed: %q", v)
	}
	if v := second.header.Get("Idempotent-Replayed"); v != "true" {
		t.Errorf("second response Idempotent-Replayed = %q, want true", v)
	}
	if first.body != second.body || first.json(t)["id"] != "pay_demo_0001" {
		t.Errorf("replay body %s differs from first %s", second.body, first.body)
	}
	// A new key starts its own sequence.
	if r := do(t, "POST", H+"/payments", body, with("Idempotency-Key", "another-key")...); r.header.Get("Idempotent-Replayed") != "" {
		t.Error("a fresh key was answered as a replay")
	}

	problems := []struct {
		name   string
		header []string
		body   string
		status int
	}{
		{"no key", jsonCT, body, 400},
		{"key reused with another body", with("Idempotency-Key", "demo-conflict"), `{"amount":1200,"currency":"JPY"}`, 422},
		{"in progress", with("Idempotency-Key", "demo-in-progress"), body, 409},
	}
	for _, p := range problems {
		r := do(t, "POST", H+"/payments", p.body, p.header...)
		if r.status != p.status {
			t.Errorf("%s: status %d, want %d", p.name, r.status, p.status)
		}
		if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("%s: Content-Type %q", p.name, ct)
		}
		doc := r.json(t)
		for _, f := range []string{"type", "title", "status", "detail"} {
			if _, ok := doc[f]; !ok {
				t.Errorf("%s: problem has no %q: %s", p.name, f, r.body)
			}
		}
		if doc["status"] != float64(p.status) {
			t.Errorf("%s: problem status %v, want %d", p.name, doc["status"], p.status)
		}
	}

	// The first transfer takes 10 s; the client gives up during the delay
	// (once the server is in it, not after a fixed time that a loaded
	// machine may outrun) and retries with the same key: 201 at once.
	const transfer = `{"amount":50000,"currency":"JPY","toAccount":"0000000"}`
	key2 := "0b9e2f5a-8c1d-4e7f-a6b3-5d4c3b2a1f00"
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := doCtx(ctx, "POST", H+"/transfers", transfer, with("Idempotency-Key", key2)...)
		errc <- err
	}()
	select {
	case <-clock.began:
	case <-time.After(patience):
		t.Fatal("the first transfer's delay did not begin")
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("first transfer: err = %v, want the client to give up", err)
	}
	retry := do(t, "POST", H+"/transfers", transfer, with("Idempotency-Key", key2)...)
	if retry.status != 201 || retry.header.Get("Idempotent-Replayed") != "true" || retry.json(t)["id"] != "tr_demo_0001" {
		t.Errorf("retry: %d %v %s", retry.status, retry.header, retry.body)
	}
	waits, _ := clock.recorded()
	if len(waits) != 1 || waits[0] != 10*time.Second {
		t.Errorf("delays asked for = %v, want one of 10s (the first transfer only; the retry is not delayed)", waits)
	}
	eventually(t, patience, func() string {
		if clock.cutShort(0) {
			return ""
		}
		return "the first transfer's delay did not end when its client left"
	})

	// GET /payments/pay_demo_0001 → 200; any other id → 404 problem.
	if r := do(t, "GET", H+"/payments/pay_demo_0001", ""); r.status != 200 || r.json(t)["id"] != "pay_demo_0001" {
		t.Errorf("GET known payment: %d %s", r.status, r.body)
	}
	r := do(t, "GET", H+"/payments/pay_nope", "")
	if r.status != 404 || r.header.Get("Content-Type") != "application/problem+json" || r.json(t)["detail"] != "No payment has the id pay_nope." {
		t.Errorf("GET unknown payment: %d %v %s", r.status, r.header, r.body)
	}
}

func TestDemoUnmatchedExplains(t *testing.T) {
	t.Parallel()
	_, hs, logs := newTestServer(t, Options{}, demoFile)
	r := do(t, "DELETE", hs.URL+"/payments", "")
	if r.status != http.StatusNotFound || r.header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("%d %v", r.status, r.header)
	}
	doc := r.json(t)
	want := `No route matches DELETE /payments. Closest: route "payment without key": method is DELETE, want POST; ` +
		`route "payment key reused with another body": method is DELETE, want POST; route "payment in progress": method is DELETE, want POST.`
	if doc["detail"] != want {
		t.Errorf("detail = %q\nwant %q", doc["detail"], want)
	}
	if closest, _ := doc["closest"].([]any); len(closest) != 3 {
		t.Errorf("closest = %v, want 3 entries", doc["closest"])
	}
	eventually(t, patience, func() string {
		if !strings.Contains(logs.String(), `method is DELETE, want POST`) {
			return "the near-miss explanation is not in the log: " + logs.String()
		}
		return ""
	})
}
