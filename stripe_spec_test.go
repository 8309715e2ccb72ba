package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/stripe/stripe-mock/embedded"
)

// TestStripeSpecIsStripeMocks: the Stripe example's spec and fixtures,
// built in gzip-compressed, are byte for byte stripe-mock v0.203.0's
// copies (its module is a test dependency only), with Stripe's MIT
// license beside them.
func TestStripeSpecIsStripeMocks(t *testing.T) {
	t.Parallel()
	for name, want := range map[string][]byte{
		"examples/stripe/spec3.json.gz":     embedded.OpenAPISpec,
		"examples/stripe/fixtures3.json.gz": embedded.OpenAPIFixtures,
	} {
		f, err := examples.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := io.ReadAll(zr)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes decompressed, differing from stripe-mock's %d; rewrite it with gzip -9 -n from $(go list -m -f '{{.Dir}}' github.com/stripe/stripe-mock)/embedded/openapi", name, len(got), len(want))
		}
	}
	license, err := examples.ReadFile("examples/stripe/LICENSE")
	if err != nil || !bytes.Contains(license, []byte("Stripe, Inc.")) || !bytes.Contains(license, []byte("MIT License")) {
		t.Errorf("examples/stripe/LICENSE: %v; want Stripe's MIT license", err)
	}
}

// TestProductLinksNoStripeMock: the binary carries its own copy of the
// spec; stripe-mock is for tests.
func TestProductLinksNoStripeMock(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "github.com/stripe/stripe-mock") {
		t.Error("the product imports github.com/stripe/stripe-mock")
	}
}
