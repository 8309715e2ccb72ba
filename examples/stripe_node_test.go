package examples_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nodeInstall is the command .ci/run runs to install the npm packages the
// node tests use.
const nodeInstall = `npm install --prefix "${XDG_CACHE_HOME:-$HOME/.cache}/scenariomock/node" --no-audit --no-fund standardwebhooks@1.3.0 stripe@23.2.0`

// TestStripeNode drives the Stripe example with the official Node client,
// npm stripe@23.2.0 (testdata/stripe-node.cjs): a customer's life with
// auto-pagination, a payment intent confirmed, refunded and canceled,
// expand[]=customer, a Checkout Session of several line items listed
// with auto-pagination, a replayed key, a key reused with other
// parameters, a key longer than 255 characters, a lost answer retried (of a customer, and of a confirmed payment), a
// declining test card, a declining payment method confirmed later (and
// the failed charge it made), a
// test payment method attached and listed, a paid intent's charge counting
// its refund, and a subscription whose first invoice is paid (and the
// customer.subscription.updated its activation sends).
func TestStripeNode(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed (apt-get install nodejs npm), then: %s", nodeInstall)
	}
	modules := os.Getenv("SCENARIOMOCK_NODE_MODULES")
	if modules == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatalf("no cache directory (%v): set SCENARIOMOCK_NODE_MODULES, after: %s", err, nodeInstall)
		}
		modules = filepath.Join(cache, "scenariomock", "node", "node_modules")
	}
	if _, err := os.Stat(filepath.Join(modules, "stripe", "package.json")); err != nil {
		t.Fatalf("npm package stripe is not installed in %s; install it with:\n  %s", modules, nodeInstall)
	}
	hs := serveStripe(t)
	cmd := exec.Command(node, filepath.Join("testdata", "stripe-node.cjs"), hs.URL)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	for _, step := range []string{
		"customer created and retrieved", "customer updated", "customers listed newest first, auto-paginated", "customer deleted",
		"payment intent created with expand[]=customer", "payment intent confirmed", "payment intent refunded", "refunds of more than is left, or of an unpaid intent, refused", "payment intent canceled",
		"payment intent below the minimum refused, currency kept lower case", "checkout session totals its price", "checkout session of several line items totals and lists them",
		"retry with the same key replayed", "key reused with other parameters refused", "key longer than 255 characters refused", "lost answer retried into one customer",
		"declining test card raised a card error", "stored declining payment method declined a bare confirm", "declined confirm made a failed charge", "setup intent confirmed only with a payment method",
		"test payment method attached and listed", "lost answer of a confirmed payment retried into one payment",
		"a paid intent has its charge, which counts its refund", "a subscription made incomplete, its first invoice paid, then active", "the activation sent customer.subscription.updated, previously incomplete",
	} {
		if !strings.Contains(string(out), "ok "+step+"\n") {
			t.Errorf("node did not report %q:\n%s", step, out)
		}
	}
}
