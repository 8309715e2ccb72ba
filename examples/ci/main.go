// Command ci is the client a CI job tests against scenariomock: it pays
// and transfers with github.com/hashicorp/go-retryablehttp the way a
// careful service does (a timeout, retries with the same Idempotency-Key,
// backing off on 409 as Retry-After says), and checks what it got.
// run.sh then asks the server, with `scenariomock verify`, what it
// received. It is its own module so that its dependencies stay out of
// scenariomock's.
//
//	go run . -addr http://127.0.0.1:8080
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

func main() {
	addr := flag.String("addr", "http://127.0.0.1:8080", "the payment provider (scenariomock)")
	timeout := flag.Duration("timeout", time.Second, "how long one attempt may take")
	flag.Parse()
	if err := run(*addr, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "ci client:", err)
		os.Exit(1)
	}
}

func run(addr string, timeout time.Duration) error {
	c := newClient(timeout)

	// The payment: its first answer is lost after the payment was made.
	payment, err := post(c, addr+"/payments", `{"amount": 9800, "currency": "eur"}`)
	if err != nil {
		return fmt.Errorf("pay: %w", err)
	}
	if payment.status != http.StatusCreated || !payment.replayed {
		return fmt.Errorf("pay: %d replayed=%v, want 201 replayed (the first answer was lost)", payment.status, payment.replayed)
	}
	var list []map[string]any
	if err := getJSON(addr+"/payments", &list); err != nil {
		return err
	}
	if len(list) != 1 || list[0]["id"] != payment.body["id"] {
		return fmt.Errorf("payments on the provider: %v, want exactly %v", list, payment.body["id"])
	}

	// The transfer: slower than the client waits.
	transfer, err := post(c, addr+"/transfers", `{"amount": 5000, "currency": "eur"}`)
	if err != nil {
		return fmt.Errorf("transfer: %w", err)
	}
	if transfer.status != http.StatusCreated || !transfer.replayed {
		return fmt.Errorf("transfer: %d replayed=%v, want 201 replayed", transfer.status, transfer.replayed)
	}
	log.Printf("ci client: paid %v, transferred %v", payment.body["id"], transfer.body["id"])
	return nil
}

// newClient retries what go-retryablehttp retries by default (errors,
// timeouts included, and 5xx) and also a 409, the answer to a retry
// that arrives while the first attempt still runs.
func newClient(timeout time.Duration) *retryablehttp.Client {
	c := retryablehttp.NewClient()
	c.HTTPClient.Timeout = timeout
	c.RetryMax = 8
	c.RetryWaitMin = 200 * time.Millisecond
	c.RetryWaitMax = 2 * time.Second
	c.Logger = log.New(os.Stderr, "", log.LstdFlags)
	c.CheckRetry = func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if err == nil && resp.StatusCode == http.StatusConflict {
			return true, nil
		}
		return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
	}
	c.Backoff = func(min, max time.Duration, attempt int, resp *http.Response) time.Duration {
		// The default backoff reads Retry-After only on 429 and 503.
		if resp != nil && resp.StatusCode == http.StatusConflict {
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
				return time.Duration(s) * time.Second
			}
		}
		return retryablehttp.DefaultBackoff(min, max, attempt, resp)
	}
	return c
}

type answer struct {
	status   int
	replayed bool
	body     map[string]any
}

// post sends body with one new Idempotency-Key, which every retry of it
// repeats: go-retryablehttp resends the same request.
func post(c *retryablehttp.Client, url, body string) (*answer, error) {
	req, err := retryablehttp.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", rand.Text())
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	a := &answer{status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &a.body); err != nil {
		return nil, fmt.Errorf("%d %s: %w", resp.StatusCode, b, err)
	}
	return a, nil
}

func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New("GET " + url + ": " + resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
