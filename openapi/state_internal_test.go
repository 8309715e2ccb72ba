package openapi

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stripe/stripe-mock/embedded"

	"github.com/scenariomock/scenariomock/scenarios"
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

// TestUnsentNullsOfAFixture holds unsentNulls on a copy of a fixture
// (nullablesIn: only the fixture's fields, none looked up in the object)
// to unsentNulls looking each nullable up in the object, for every
// create of Stripe's spec whose answer is made from a fixture, with
// nothing sent and with each nullable field sent.
func TestUnsentNullsOfAFixture(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec, fixtures := filepath.Join(dir, "spec3.json"), filepath.Join(dir, "fixtures3.json")
	if err := os.WriteFile(spec, embedded.OpenAPISpec, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fixtures, embedded.OpenAPIFixtures, 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := scenarios.LoadBytes("stripe", []byte("routes: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Expand(set, Options{Extra: []*scenarios.OpenAPISource{FileSource(spec, fixtures)}}); err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/", nil)
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	checked, set0 := 0, 0
	for _, route := range set.Routes() {
		o := route.Operation.(*Operation)
		if o.kind != opCreate {
			continue
		}
		resp, _ := o.response(0)
		mt, schema := o.mediaOf(resp)
		sent := o.sentSchema(r)
		if mt == nil || schema == nil || sent == nil {
			continue
		}
		v, _, name := o.api.instanceOf(mt, schema, "")
		fx, ok := v.(map[string]any)
		if !ok || name == "" {
			continue
		}
		ins := []map[string]any{{}}
		for _, f := range o.api.nullables(sent, schema) {
			ins = append(ins, map[string]any{f.name: "sent"})
		}
		for _, in := range ins {
			want, got := maps.Clone(fx), maps.Clone(fx)
			o.unsentNulls(want, in, nil, sent, schema, "")
			o.unsentNulls(got, in, nil, sent, schema, name)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, sent %v: unsentNulls of fixture %s = %v; looking each field up gives %v", o.Name, in, name, got, want)
			}
			if !reflect.DeepEqual(got, fx) {
				set0++
			}
			checked++
		}
	}
	if checked < 100 || set0 == 0 {
		t.Fatalf("%d cases, %d of which set a field: the test checks too little", checked, set0)
	}
}
