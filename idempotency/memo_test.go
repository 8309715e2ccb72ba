package idempotency

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/scenarios"
)

// TestFingerprintMemo holds the memo to what computing the fingerprint
// gives, for requests that differ only where the canonical form looks
// (key order, spelling, one byte, the media type, an absent or empty
// part), sent many times over, enough of them that slots are shared and
// overwritten.
func TestFingerprintMemo(t *testing.T) {
	t.Parallel()
	partsOf := [][]scenarios.FingerprintPart{
		{{Whole: "body"}},
		{{Whole: "body"}, {Whole: "method"}, {Whole: "path"}},
		{{Attr: &scenarios.Attribute{Kind: scenarios.HeaderAttr, Name: "X-Tenant"}}, {Whole: "body"}},
		{{Attr: &scenarios.Attribute{Kind: scenarios.QueryAttr, Name: "mode"}}},
	}
	types := []string{"application/json", "Application/JSON; charset=utf-8", "application/x-www-form-urlencoded", "text/plain", ""}
	rng := rand.New(rand.NewPCG(5, 6))
	body := func() string {
		a, c := rng.IntN(50), []string{"JPY", "USD"}[rng.IntN(2)]
		switch rng.IntN(5) {
		case 0:
			return fmt.Sprintf(`{"amount":%d,"currency":%q}`, a, c)
		case 1:
			return fmt.Sprintf(`{ "currency" : %q, "amount" : %d.0 }`, c, a)
		case 2:
			return fmt.Sprintf("amount=%d&currency=%s", a, c)
		case 3:
			return fmt.Sprintf(`{"amount":%d,"currency":%q`, a, c) // not JSON
		}
		return ""
	}
	var reqs []*matcher.Request
	var parts [][]scenarios.FingerprintPart
	for i := 0; i < 4000; i++ {
		target := []string{"/p", "/p?mode=", "/p?mode=x", "/q"}[rng.IntN(4)]
		reqs = append(reqs, request([]string{"POST", "PUT"}[rng.IntN(2)], target, types[rng.IntN(len(types))], body()))
		parts = append(parts, partsOf[rng.IntN(len(partsOf))])
	}
	for round := 0; round < 3; round++ {
		for i, r := range reqs {
			want := Fingerprint(sha256.Sum256(appendInputs(nil, r, parts[i], nil, true)))
			if got := FingerprintOf(r, parts[i], nil); got != want {
				t.Fatalf("round %d, request %d (%s %s %q): the memo's fingerprint is not the computed one", round, i, r.HTTP.Method, r.HTTP.URL, r.Body)
			}
		}
	}
}
