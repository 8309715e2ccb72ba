package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// statefulFile is the example users copy; the tests load it as it is.
const statefulFile = "../examples/payments-stateful.yaml"

// serveStateful serves the stateful example with a gate clock: its
// transfer's 10 s delay lasts until the test closes the gate.
func serveStateful(t *testing.T) (*gateClock, string) {
	t.Helper()
	clock := newGateClock()
	_, hs, _ := newTestServer(t, Options{Clock: clock}, statefulFile)
	return clock, hs.URL
}

var (
	paymentID  = regexp.MustCompile(`^pay_[0-9a-f]{24}$`)
	transferID = regexp.MustCompile(`^tr_[0-9a-f]{24}$`)
)

// post sends a JSON body with an Idempotency-Key ("" sends none).
func post(t *testing.T, url, key, body string) response {
	t.Helper()
	h := []string{"Content-Type", jsonCT}
	if key != "" {
		h = append(h, "Idempotency-Key", key)
	}
	return do(t, "POST", url, body, h...)
}

// postCtx is post for a request the test may cancel or run in a goroutine.
func postCtx(ctx context.Context, url, key, body string) (response, error) {
	return doCtx(ctx, "POST", url, body, "Content-Type", jsonCT, "Idempotency-Key", key)
}

func isProblem(r response, status int) bool {
	return r.status == status && r.header.Get("Content-Type") == "application/problem+json"
}

func replayed(r response) bool { return r.header.Get("Idempotent-Replayed") == "true" }

// listPayments returns the ids GET /payments lists, in order.
func listPayments(t *testing.T, base string) []string {
	t.Helper()
	r := do(t, "GET", base+"/payments", "")
	var items []struct{ ID string }
	if err := json.Unmarshal([]byte(r.body), &items); r.status != 200 || err != nil {
		t.Fatalf("GET /payments: %d %s (%v)", r.status, r.body, err)
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	return ids
}

// TestStatefulExample runs the seven classic Idempotency-Key cases, and
// the reads of the stored payments, against examples/payments-stateful.yaml
// over real HTTP.
func TestStatefulExample(t *testing.T) {
	t.Parallel()
	const body = `{"amount":9800,"currency":"JPY"}`

	t.Run("same key twice: replay", func(t *testing.T) {
		t.Parallel()
		_, H := serveStateful(t)
		first := post(t, H+"/payments", "k1", body)
		v := first.json(t)
		id, _ := v["id"].(string)
		if first.status != 201 || replayed(first) || !paymentID.MatchString(id) || v["amount"] != float64(9800) || v["currency"] != "JPY" {
			t.Fatalf("first: %d %s %v", first.status, first.body, first.header)
		}
		if !strings.Contains(first.body, `"amount":9800,"currency":"JPY"`) {
			t.Errorf("amount and currency not echoed with their types: %s", first.body)
		}
		// The same request again, and spelt differently (key order,
		// whitespace, the key as an sf-string): the stored answer.
		for _, again := range []struct{ key, body string }{{"k1", body}, {`"k1"`, `{ "currency": "JPY", "amount": 9800 }`}} {
			r := post(t, H+"/payments", again.key, again.body)
			if r.status != 201 || r.body != first.body || !replayed(r) || r.header.Get("Content-Type") != first.header.Get("Content-Type") {
				t.Errorf("retry %s %s: %d %s %v", again.key, again.body, r.status, r.body, r.header)
			}
		}
		// Another key is another payment.
		other := post(t, H+"/payments", "k2", body)
		if other.status != 201 || replayed(other) || other.json(t)["id"] == id {
			t.Errorf("new key: %d %s", other.status, other.body)
		}
		// The created payment can be fetched; a made-up id cannot.
		if r := do(t, "GET", H+"/payments/"+id, ""); r.status != 200 || r.body != first.body {
			t.Errorf("GET /payments/%s: %d %s, want 200 %s", id, r.status, r.body, first.body)
		}
		if r := do(t, "GET", H+"/payments/pay_000000000000000000000000", ""); !isProblem(r, 404) || !strings.Contains(r.body, "pay_000000000000000000000000") {
			t.Errorf("GET a made-up id: %d %s %v", r.status, r.body, r.header)
		}
		if ids := listPayments(t, H); len(ids) != 2 || ids[0] != id || ids[1] != other.json(t)["id"] {
			t.Errorf("GET /payments: %v, want the two payments in order", ids)
		}
	})

	t.Run("same key, other body: 422", func(t *testing.T) {
		t.Parallel()
		_, H := serveStateful(t)
		first := post(t, H+"/payments", "k1", body)
		if r := post(t, H+"/payments", "k1", `{"amount":12000,"currency":"JPY"}`); !isProblem(r, 422) {
			t.Errorf("other body: %d %s %v", r.status, r.body, r.header)
		}
		if r := post(t, H+"/payments", "k1", body); r.body != first.body || !replayed(r) {
			t.Errorf("the key still replays its first answer: %d %s", r.status, r.body)
		}
		if ids := listPayments(t, H); len(ids) != 1 {
			t.Errorf("GET /payments: %v, want one payment", ids)
		}
	})

	t.Run("no key: 400", func(t *testing.T) {
		t.Parallel()
		clock, H := serveStateful(t)
		close(clock.gate) // a transfer that ran by mistake fails the test instead of hanging it
		for _, path := range []string{"/payments", "/transfers", "/payouts"} {
			if r := post(t, H+path, "", body); !isProblem(r, 400) || !strings.Contains(r.body, "Idempotency-Key") {
				t.Errorf("%s without a key: %d %s %v", path, r.status, r.body, r.header)
			}
		}
		if ids := listPayments(t, H); len(ids) != 0 {
			t.Errorf("GET /payments: %v, want none: the route must not run", ids)
		}
	})

	t.Run("in flight: 409, then the replay", func(t *testing.T) {
		t.Parallel()
		clock, H := serveStateful(t)
		const transfer = `{"amount":50000,"currency":"JPY","toAccount":"0000000"}`
		type result struct {
			r   response
			err error
		}
		first := make(chan result, 1)
		go func() {
			r, err := postCtx(context.Background(), H+"/transfers", "t1", transfer)
			first <- result{r, err}
		}()
		clock.waitBegan(t, 1) // the first is in its 10 s
		if r := post(t, H+"/transfers", "t1", transfer); !isProblem(r, 409) || r.header.Get("Retry-After") == "" {
			t.Errorf("retry in flight: %d %s %v", r.status, r.body, r.header)
		}
		close(clock.gate)
		f := <-first
		if f.err != nil || f.r.status != 201 || replayed(f.r) || !transferID.MatchString(fmt.Sprint(f.r.json(t)["id"])) {
			t.Fatalf("first: %v %d %s", f.err, f.r.status, f.r.body)
		}
		if r := post(t, H+"/transfers", "t1", transfer); r.status != 201 || r.body != f.r.body || !replayed(r) {
			t.Errorf("retry after completion: %d %s %v", r.status, r.body, r.header)
		}
	})

	t.Run("client timeout during the transfer", func(t *testing.T) {
		t.Parallel()
		clock, H := serveStateful(t)
		const transfer = `{"amount":50000,"currency":"JPY","toAccount":"0000000"}`
		ctx, cancel := context.WithCancel(context.Background())
		gone := make(chan error, 1)
		go func() {
			_, err := postCtx(ctx, H+"/transfers", "t2", transfer)
			gone <- err
		}()
		clock.waitBegan(t, 1)
		cancel() // the client's timeout, during the 10 s
		if err := <-gone; err == nil {
			t.Fatal("the cancelled client got an answer")
		}
		// The transfer goes on without its client: still running, 409.
		if r := post(t, H+"/transfers", "t2", transfer); !isProblem(r, 409) || r.header.Get("Retry-After") == "" {
			t.Errorf("retry while the abandoned transfer runs: %d %s %v", r.status, r.body, r.header)
		}
		close(clock.gate)
		// Once it completes, its stored answer is the retry's.
		var r response
		eventually(t, patience, func() string {
			r = post(t, H+"/transfers", "t2", transfer)
			if r.status == 409 {
				return "the abandoned transfer did not complete"
			}
			return ""
		})
		v := r.json(t)
		if r.status != 201 || !replayed(r) || !transferID.MatchString(fmt.Sprint(v["id"])) || v["amount"] != float64(50000) || v["toAccount"] != "0000000" {
			t.Errorf("retry after completion: %d %s %v", r.status, r.body, r.header)
		}
		if again := post(t, H+"/transfers", "t2", transfer); again.body != r.body || !replayed(again) {
			t.Errorf("second retry: %d %s", again.status, again.body)
		}
	})

	t.Run("after expiry: a new payment", func(t *testing.T) {
		t.Parallel()
		_, H := serveStateful(t)
		first := post(t, H+"/payments", "k1", body)
		r := do(t, "POST", H+"/__admin/idempotency/expire?group=POST+/payments&key=k1", "")
		if r.status != 200 || r.json(t)["expired"] != float64(1) {
			t.Fatalf("expire: %d %s", r.status, r.body)
		}
		second := post(t, H+"/payments", "k1", body)
		if second.status != 201 || replayed(second) || second.json(t)["id"] == first.json(t)["id"] {
			t.Errorf("after expiry: %d %s %v, want a new payment", second.status, second.body, second.header)
		}
		if ids := listPayments(t, H); len(ids) != 2 {
			t.Errorf("GET /payments: %v, want both payments", ids)
		}
	})

	t.Run("after a 500: the retry succeeds", func(t *testing.T) {
		t.Parallel()
		_, H := serveStateful(t)
		if r := post(t, H+"/payouts", "p1", body); !isProblem(r, 500) {
			t.Fatalf("first payout: %d %s", r.status, r.body)
		}
		ok := post(t, H+"/payouts", "p1", body)
		if ok.status != 201 || replayed(ok) || !strings.HasPrefix(fmt.Sprint(ok.json(t)["id"]), "po_") {
			t.Fatalf("retry after the 500: %d %s %v", ok.status, ok.body, ok.header)
		}
		if r := post(t, H+"/payouts", "p1", body); r.body != ok.body || !replayed(r) {
			t.Errorf("third: %d %s", r.status, r.body)
		}
		// Each key's first attempt fails.
		if r := post(t, H+"/payouts", "p2", body); !isProblem(r, 500) {
			t.Errorf("first payout of another key: %d %s", r.status, r.body)
		}
	})

	t.Run("answer lost after processing: the retry is a replay", func(t *testing.T) {
		t.Parallel()
		_, H := serveStateful(t)
		lost := fresh("POST", H+"/payments", body, 0, "Content-Type", jsonCT, "Idempotency-Key", "lost-1")
		if !isReset(lost.err) {
			t.Fatalf("first POST with lost-1: want a connection reset, got %+v", lost)
		}
		ids := listPayments(t, H)
		if len(ids) != 1 {
			t.Fatalf("after the lost answer: %v, want the one payment it made", ids)
		}
		for range 2 {
			r := post(t, H+"/payments", "lost-1", body)
			if r.status != 201 || !replayed(r) || r.json(t)["id"] != ids[0] {
				t.Errorf("retry with lost-1: %d replayed=%v %s, want the replay of %s", r.status, replayed(r), r.body, ids[0])
			}
		}
		if ids := listPayments(t, H); len(ids) != 1 {
			t.Errorf("after the retries: %v, want one payment", ids)
		}
	})

	t.Run("ten at once with one key: one payment", func(t *testing.T) {
		t.Parallel()
		_, H := serveStateful(t)
		var wg sync.WaitGroup
		results := make([]response, 10)
		errs := make([]error, 10)
		for i := range results {
			wg.Go(func() { results[i], errs[i] = postCtx(context.Background(), H+"/payments", "same", body) })
		}
		wg.Wait()
		var created []response
		for i, r := range results {
			switch {
			case errs[i] != nil:
				t.Fatalf("request %d: %v", i, errs[i])
			case r.status == 201:
				created = append(created, r)
			case !isProblem(r, 409):
				t.Errorf("request %d: %d %s, want 201 or 409", i, r.status, r.body)
			}
		}
		fresh := 0
		for _, r := range created {
			if !replayed(r) {
				fresh++
			}
			if r.body != created[0].body {
				t.Errorf("two bodies for one key: %s / %s", r.body, created[0].body)
			}
		}
		if fresh != 1 {
			t.Errorf("%d answers were not replays, want exactly 1", fresh)
		}
		if ids := listPayments(t, H); len(ids) != 1 {
			t.Errorf("GET /payments: %v, want exactly one payment", ids)
		}
	})

	t.Run("GET /payments lists in order", func(t *testing.T) {
		t.Parallel()
		_, H := serveStateful(t)
		var want []string
		for i := range 3 {
			r := post(t, H+"/payments", fmt.Sprint("order-", i), fmt.Sprintf(`{"amount":%d,"currency":"EUR"}`, 100+i))
			want = append(want, fmt.Sprint(r.json(t)["id"]))
		}
		r := do(t, "GET", H+"/payments", "")
		var items []map[string]any
		if err := json.Unmarshal([]byte(r.body), &items); err != nil || r.status != 200 || len(items) != 3 {
			t.Fatalf("GET /payments: %d %s", r.status, r.body)
		}
		for i, it := range items {
			if it["id"] != want[i] || it["amount"] != float64(100+i) {
				t.Errorf("item %d: %v, want id %s amount %d", i, it, want[i], 100+i)
			}
		}
		if r.header.Get("Content-Type") != jsonCT || r.header.Get("Idempotent-Replayed") != "" || r.status != http.StatusOK {
			t.Errorf("GET /payments headers: %v", r.header)
		}
	})
}
