// Package mocktest connects to a mock the way stripe-go's testing package
// does: HTTPS to localhost:$STRIPE_MOCK_PORT without certificate checks,
// and an exit in init when GET / has no Stripe-Mock-Version header.
package mocktest

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
)

// Client is the HTTP client of the tests.
var Client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}

var base string

func init() {
	base = "https://localhost:" + os.Getenv("STRIPE_MOCK_PORT")
	resp, err := Client.Get(base)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Couldn't reach stripe-mock at %s (%v).\n", base, err)
		os.Exit(1)
	}
	resp.Body.Close()
	if v := resp.Header.Get("Stripe-Mock-Version"); v == "" {
		fmt.Fprintf(os.Stderr, "Your version of stripe-mock (%s) is too old.\n", v)
		os.Exit(1)
	}
}

// Get asks the mock for path.
func Get(path string) (*http.Response, error) { return Client.Get(base + path) }
