package matcher

import (
	"net/http"
	"testing"

	"github.com/scenariomock/scenariomock/scenarios"
)

// TestActAs: the headers ActAs sets make Owner say the owner it was
// given, whatever the request carried before (a browser carries no API
// key; another key is replaced).
func TestActAs(t *testing.T) {
	t.Parallel()
	stripe := scenarios.Scope{Credential: true, Headers: []string{"Stripe-Account"}}
	for _, tc := range []struct {
		name   string
		scope  scenarios.Scope
		owner  string
		before http.Header
	}{
		{"a key, from nothing", stripe, "sk_test_1", http.Header{}},
		{"a key and an account", stripe, "sk_test_1 Stripe-Account=acct_1", http.Header{}},
		{"another key replaced", stripe, "sk_test_1", http.Header{"Authorization": {"Basic c2tfdGVzdF8yOg=="}, "Stripe-Account": {"acct_2"}}},
		{"an account without a key", stripe, "Stripe-Account=acct_1", http.Header{"Authorization": {"Bearer sk_test_2"}}},
		{"nobody", stripe, "", http.Header{"Authorization": {"Bearer sk_test_2"}}},
		{"headers only", scenarios.Scope{Headers: []string{"X-Tenant"}}, "X-Tenant=t1", http.Header{}},
		{"everyone's", scenarios.Scope{}, "", http.Header{"Authorization": {"Bearer sk_test_2"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := tc.before.Clone()
			ActAs(tc.scope, tc.owner, h)
			if got := Owner(tc.scope, h); got != tc.owner {
				t.Errorf("Owner after ActAs(%q) = %q (headers %v)", tc.owner, got, h)
			}
		})
	}
}
