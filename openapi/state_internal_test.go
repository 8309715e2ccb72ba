package openapi

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stripe/stripe-mock/embedded"
)

// TestContainsIDIsBytesContains holds containsID to bytes.Contains: every
// id of Stripe's fixtures in every fixture's bytes, and cases chosen to
// leave its fast path (no prefix, an id ending in "_", the random part
// found without its prefix or with part of it, at either end).
func TestContainsIDIsBytesContains(t *testing.T) {
	var fx struct {
		Resources map[string]json.RawMessage `json:"resources"`
	}
	if err := json.Unmarshal(embedded.OpenAPIFixtures, &fx); err != nil {
		t.Fatal(err)
	}
	var ids []string
	var bodies [][]byte
	for _, raw := range fx.Resources {
		var r struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(raw, &r) == nil && r.ID != "" {
			ids = append(ids, r.ID)
		}
		bodies = append(bodies, raw)
	}
	ids = append(ids, "1", "ab", "cus_", "_x", "a_b_c", "cus_Nff", "x__y")
	bodies = append(bodies, nil, []byte("Nff"), []byte("cus_Nff"), []byte("us_Nff cus_Nf"), []byte("xcus_Nff"),
		[]byte("cs_Nff cus_ Nff cus_Nff"), []byte("_b_c a_b_"), []byte("a_b_c"), []byte("x_y x__"), []byte("x___y"))
	found := 0
	for _, id := range ids {
		for _, body := range bodies {
			want := bytes.Contains(body, []byte(id))
			if got := containsID(body, id); got != want {
				t.Fatalf("containsID(%.60q, %q) = %v; bytes.Contains says %v", body, id, got, want)
			}
			if want {
				found++
			}
		}
	}
	if found < len(ids) {
		t.Fatalf("only %d of the cases contain their id: the test checks too little", found)
	}
}
