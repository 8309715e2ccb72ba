package scenariomocktest_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/scenariomock/scenariomock/scenariomocktest"
)

// A client that retries a failed payment, against a provider that fails
// the first attempt: the journal shows both attempts. In a test, Start(t,
// ...) replaces New and Close, and FailOnUnmatched checks that nothing
// unmocked was called.
func Example() {
	srv, err := scenariomocktest.New(scenariomocktest.YAML(`
		routes:
		  - name: create payment
		    method: POST
		    path: /payments
		    responses:              # one after the other: a 500, then 201s
		      - status: 500
		      - status: 201
		        body: { id: pay_1 }
	`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	// The client under test: up to 3 attempts, retrying a 5xx.
	for attempt := 1; attempt <= 3; attempt++ {
		resp, err := http.Post(srv.URL()+"/payments", "application/json", strings.NewReader(`{"amount": 9800}`))
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(strings.TrimSpace(fmt.Sprintf("attempt %d: %d %s", attempt, resp.StatusCode, body)))
		if resp.StatusCode < 500 {
			break
		}
	}

	fmt.Println("requests:", srv.Count(scenariomocktest.Filter{Route: "create payment"}))
	fmt.Println("created:", srv.Count(scenariomocktest.Filter{Route: "create payment", Status: "201"}))
	for _, e := range srv.Requests(scenariomocktest.Filter{Path: "/payments"}) {
		fmt.Println(e.Method, e.Path, e.Status, string(e.Body))
	}
	// Output:
	// attempt 1: 500
	// attempt 2: 201 {"id":"pay_1"}
	// requests: 2
	// created: 1
	// POST /payments 500 {"amount": 9800}
	// POST /payments 201 {"amount": 9800}
}
