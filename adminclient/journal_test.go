package adminclient_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/adminclient"
	"github.com/scenariomock/scenariomock/state"
)

const shop = `
routes:
  - { name: create payment, method: POST, path: /payments, respond: { status: 201 } }
  - { name: get payment, method: GET, path: '/payments/{id}', respond: { status: 200 } }
  - name: charge
    method: POST
    path: /charges
    idempotency: { key: header.Idempotency-Key }
    respond: { status: 201, body: { id: ch_1 } }
`

// send makes one request and waits for its answer.
func send(t *testing.T, method, url, body string, header ...string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// shopping sends the requests the filter cases select from; each case
// counts a different subset.
func shopping(t *testing.T, url string) {
	t.Helper()
	send(t, "POST", url+"/payments?mode=test", `{"amount": 9800, "customer": {"id": "cus_1"}, "items": [{"sku": "a"}]}`, "X-Tenant", "t1", "Content-Type", "application/json")
	send(t, "POST", url+"/payments", `{"amount": 100}`, "Content-Type", "application/json")
	send(t, "GET", url+"/payments/p1", "")
	send(t, "GET", url+"/paymnts/p1", "") // no route
	send(t, "POST", url+"/charges", `{}`, "Idempotency-Key", "k1")
	send(t, "POST", url+"/charges", `{}`, "Idempotency-Key", "k1") // replayed
}

func TestFilters(t *testing.T) {
	t.Parallel()
	url, c, _ := serve(t, shop)
	shopping(t, url)
	all, total, err := c.Requests(ctx(t), adminclient.Filter{})
	if err != nil || total != 6 || len(all) != 6 {
		t.Fatalf("Requests: %d of %d, %v; want 6", len(all), total, err)
	}
	third := strconv.FormatInt(all[2].ID, 10)
	for _, tc := range []struct {
		name string
		f    adminclient.Filter
		want int
	}{
		{"none", adminclient.Filter{}, 6},
		{"route", adminclient.Filter{Route: "create payment"}, 2},
		{"method", adminclient.Filter{Method: "GET"}, 2},
		{"exact path", adminclient.Filter{Path: "/payments"}, 2},
		{"glob path", adminclient.Filter{Path: "/payments/*"}, 1},
		{"status", adminclient.Filter{Status: "201"}, 4},
		{"status class", adminclient.Filter{Status: "4xx"}, 1},
		{"header", adminclient.Filter{Headers: map[string]string{"X-Tenant": "t1"}}, 1},
		{"query", adminclient.Filter{Query: map[string]string{"mode": "test"}}, 1},
		{"body", adminclient.Filter{Body: map[string]string{"amount": "9800"}}, 1},
		{"nested body", adminclient.Filter{Body: map[string]string{"customer.id": "cus_1", "items.0.sku": "a"}}, 1},
		{"idempotency", adminclient.Filter{Idempotency: "replayed"}, 1},
		{"matched", adminclient.Filter{Matched: "false"}, 1},
		{"since an ID", adminclient.Filter{Since: third}, 3},
		{"since a time", adminclient.Filter{Since: all[0].Time.Add(-time.Minute).Format(time.RFC3339Nano)}, 6},
		{"together", adminclient.Filter{Method: "POST", Path: "/payments", Status: "201", Body: map[string]string{"amount": "100"}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := c.Count(ctx(t), tc.f)
			if err != nil || n != tc.want {
				t.Errorf("Count(%s) = %d, %v; want %d", tc.f, n, err, tc.want)
			}
			entries, total, err := c.Requests(ctx(t), tc.f)
			if err != nil || total != tc.want || len(entries) != tc.want {
				t.Errorf("Requests(%s) = %d of %d, %v; want %d", tc.f, len(entries), total, err, tc.want)
			}
		})
	}
	// The journal as it came: oldest first, with what each request was.
	if e := all[0]; e.Method != "POST" || e.Path != "/payments" || e.Query != "mode=test" || e.Route != "create payment" ||
		!e.Matched || e.Status != 201 || !strings.Contains(string(e.Body), "cus_1") || e.Headers["X-Tenant"][0] != "t1" {
		t.Errorf("first entry %+v", e)
	}
	if e := all[3]; e.Matched || e.Route != "" || e.Status != 404 {
		t.Errorf("unmatched entry %+v", e)
	}
	if all[4].Idempotency != "new" || all[5].Idempotency != "replayed" {
		t.Errorf("idempotency outcomes %q, %q; want new, replayed", all[4].Idempotency, all[5].Idempotency)
	}
	newest, total, err := c.Requests(ctx(t), adminclient.Filter{Limit: 2})
	if err != nil || total != 6 || len(newest) != 2 || newest[1].ID != all[5].ID || newest[0].ID != all[4].ID {
		t.Errorf("Limit 2: %v of %d, %v; want the newest two, oldest first", newest, total, err)
	}
}

func TestBadFilter(t *testing.T) {
	t.Parallel()
	_, c, _ := serve(t, shop)
	_, err := c.Count(ctx(t), adminclient.Filter{Status: "abc"})
	var se *adminclient.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest || !strings.Contains(err.Error(), "status") {
		t.Errorf("Count with status=abc: %v, want a 400 naming status", err)
	}
}

func TestClearAndReset(t *testing.T) {
	t.Parallel()
	url, c, _ := serve(t, shop)
	count := func() int {
		t.Helper()
		n, err := c.Count(ctx(t), adminclient.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	shopping(t, url)
	if err := c.Clear(ctx(t)); err != nil || count() != 0 {
		t.Fatalf("after Clear: %v, %d entries", err, count())
	}
	shopping(t, url)
	if err := c.Reset(ctx(t)); err != nil || count() != 0 {
		t.Fatalf("after Reset: %v, %d entries", err, count())
	}
	// Reset forgot the idempotency key: k1 is new again.
	send(t, "POST", url+"/charges", `{}`, "Idempotency-Key", "k1")
	if n, err := c.Count(ctx(t), adminclient.Filter{Idempotency: "new"}); n != 1 || err != nil {
		t.Errorf("after Reset, k1: %d new, %v", n, err)
	}
}

func TestStream(t *testing.T) {
	t.Parallel()
	url, c, stop := serve(t, shop)
	shopping(t, url)
	all, _, err := c.Requests(ctx(t), adminclient.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan state.Entry, 100)
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := make(chan error, 1)
	// From the newest entry listed: only later ones, filtered.
	go func() {
		ended <- c.Stream(sctx, adminclient.Filter{Route: "create payment"}, all[len(all)-1].ID, func(e state.Entry) error {
			got <- e
			return nil
		})
	}()
	send(t, "GET", url+"/payments/p2", "")                      // filtered out
	send(t, "POST", url+"/payments", `{"amount": 1}`, "A", "b") // streamed
	select {
	case e := <-got:
		if e.Path != "/payments" || e.Route != "create payment" || string(e.Body) != `{"amount": 1}` || e.ID <= all[len(all)-1].ID {
			t.Errorf("streamed %+v", e)
		}
	case err := <-ended:
		t.Fatalf("stream ended: %v", err)
	case <-time.After(patience):
		t.Fatal("nothing streamed")
	}
	cancel()
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("Stream after cancel: %v, want nil", err)
		}
	case <-time.After(patience):
		t.Fatal("Stream did not return after its context ended")
	}

	// From 0: every entry kept, then live; the server's shutdown ends it.
	replayed := make(chan state.Entry, 100)
	go func() {
		ended <- c.Stream(context.Background(), adminclient.Filter{}, 0, func(e state.Entry) error {
			replayed <- e
			return nil
		})
	}()
	for i := range len(all) + 2 {
		select {
		case e := <-replayed:
			if i < len(all) && e.ID != all[i].ID {
				t.Errorf("replayed entry %d has ID %d, want %d", i, e.ID, all[i].ID)
			}
		case <-time.After(patience):
			t.Fatalf("%d entries replayed, want %d", i, len(all)+2)
		}
	}
	stop()
	select {
	case err := <-ended:
		if !errors.Is(err, adminclient.ErrStreamEnded) {
			t.Errorf("Stream at shutdown: %v, want ErrStreamEnded", err)
		}
	case <-time.After(patience):
		t.Fatal("Stream did not return at the server's shutdown")
	}

	// fn's error ends the stream with it.
	url2, c2, _ := serve(t, shop)
	send(t, "GET", url2+"/payments/p1", "")
	errStop := errors.New("enough")
	if err := c2.Stream(ctx(t), adminclient.Filter{}, 0, func(state.Entry) error { return errStop }); err != errStop {
		t.Errorf("Stream whose fn fails: %v, want fn's error", err)
	}
}
