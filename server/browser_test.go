package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/scenariomock/scenariomock/internal/browsertest"
)

// fetchResult is what the page's fetch() saw.
type fetchResult struct {
	Status   int    `json:"status"`
	Body     string `json:"body"`
	Location string `json:"location"`
	Replayed string `json:"replayed"`
	Error    string `json:"error"`
}

// fetchFrom runs fetch() in the page: a POST of JSON with an
// Idempotency-Key, both of which make the browser send a preflight
// first, with credentials as an app behind a login sends them.
func fetchFrom(t *testing.T, b *browsertest.Browser, url, key string) fetchResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), patience)
	defer cancel()
	script := fmt.Sprintf(`fetch(%q, {
		method: "POST",
		credentials: "include",
		headers: {"Content-Type": "application/json", "Idempotency-Key": %q},
		body: JSON.stringify({amount: 9800, currency: "JPY"}),
	}).then(async r => ({status: r.status, body: await r.text(),
		location: r.headers.get("Location") || "", replayed: r.headers.get("Idempotent-Replayed") || ""}))
	  .catch(e => ({error: String(e)}))`, url, key)
	res, err := chromedp.Run(ctx, chromedp.Evaluate[fetchResult](script, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("fetch %s: %v", url, err)
	}
	return res
}

// TestBrowserCORS: a page served from one origin calls the mock on
// another with fetch() in a real Chromium. With --cors the preflight
// passes and the page reads the answer and its exposed headers; without
// it the browser blocks the call and says so on the console.
func TestBrowserCORS(t *testing.T) {
	t.Parallel()
	b := browsertest.New(t)
	_, withCORS, logs := serveYAML(t, Options{CORS: true}, corsScenario)
	_, withoutCORS, _ := serveYAML(t, Options{}, corsScenario)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!doctype html><title>app</title><p>an app on its own origin")
	}))
	t.Cleanup(page.Close)
	ctx, cancel := context.WithTimeout(b.Context(), patience)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(page.URL)); err != nil {
		t.Fatal(err)
	}

	got := fetchFrom(t, b, withCORS.URL+"/payments", "k1")
	if got.Error != "" || got.Status != 201 || got.Body != `{"id":"pay_1"}` || got.Location != "/payments/pay_1" || got.Replayed != "" {
		t.Errorf("fetch with --cors: %+v, want 201 with its body and Location", got)
	}
	got = fetchFrom(t, b, withCORS.URL+"/payments", "k1")
	if got.Status != 201 || got.Replayed != "true" {
		t.Errorf("retry with the same key: %+v, want the replay, Idempotent-Replayed readable", got)
	}
	if !strings.Contains(logs.String(), `"route":"(cors preflight)","status":204`) {
		t.Errorf("the browser sent no preflight, or it was not answered before routing:\n%s", logs)
	}

	got = fetchFrom(t, b, withoutCORS.URL+"/payments", "k2")
	if got.Error == "" || got.Status != 0 {
		t.Errorf("fetch without --cors: %+v, want the browser to refuse it", got)
	}
	// The browser's reason comes as a console entry, shortly after.
	deadline := time.Now().Add(patience)
	for !strings.Contains(strings.Join(b.Errors(), "\n"), "CORS policy") {
		if time.Now().After(deadline) {
			t.Fatalf("no CORS error on the console: %q", b.Errors())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
