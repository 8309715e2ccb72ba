package api

import (
	"fmt"
	"io"
	"os"
	"testing"

	"example.com/fakesuite/mocktest"
)

func get(t *testing.T, path string) {
	resp, err := mocktest.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		// What stripe-go's leveled logger prints for a failed call.
		fmt.Fprintf(os.Stderr, "[ERROR] Request error from Stripe (status %d): %s\n", resp.StatusCode, body)
		t.Fatalf("Error: %s", resp.Status)
	}
}

func TestPass(t *testing.T) { get(t, "/v1/customers/cus_1") }

func TestFail(t *testing.T) { get(t, "/v1/refunds/re_1") }

func TestSkip(t *testing.T) { t.Skip("not here") }

func TestSubtests(t *testing.T) {
	t.Run("a", func(t *testing.T) { get(t, "/v1/customers/cus_a") })
	t.Run("b", func(t *testing.T) { get(t, "/v1/customers/cus_b") })
}
