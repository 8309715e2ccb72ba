package openapi

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/scenarios"
)

// TestFakerDrawsFit draws many answers of every operation of
// testdata/dynamic straight from the faker, without drawAnswer's second
// chances, and checks each as proxy mode checks a real upstream's answer
// (CheckAnswer: libopenapi-validator, formats asserted): a draw that its
// schema refuses is a fault of the faker, not one a redraw hides.
func TestFakerDrawsFit(t *testing.T) {
	t.Parallel()
	set, err := scenarios.LoadBytes("dynamic.yaml", []byte("routes: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	// 3.0's spellings and 3.1's.
	srcs := []*scenarios.OpenAPISource{FileSource("testdata/dynamic/openapi.yaml", ""), FileSource("testdata/dynamic/openapi31.yaml", "")}
	if err := Expand(set, Options{Extra: srcs, Cache: NewCache()}); err != nil {
		t.Fatal(err)
	}
	draws := 300
	if testing.Short() {
		draws = 50
	}
	rnd := rand.New(rand.NewPCG(1, 2)).Float64
	checked := 0
	for _, r := range set.Routes() {
		o, ok := r.Operation.(*Operation)
		if !ok || o.Name == "nextSku" { // its schema does not compile: TestDynamicAnswers
			continue
		}
		for _, code := range declaredCodes(o.op) {
			status, _ := strconv.Atoi(code)
			resp, _ := o.response(status)
			name, mt := pickMedia(resp, nil)
			if mt == nil || mt.Schema == nil {
				continue
			}
			schema := mt.Schema.Schema()
			req := httptest.NewRequest(o.Method, strings.ReplaceAll(o.Path, "{gadgetId}", "00000000-0000-4000-8000-000000000000"), nil)
			for i := range draws {
				v := faker{api: o.api, rnd: rnd}.value(schema, 0)
				b, err := marshal(v)
				if err != nil {
					t.Fatalf("%s %d: draw %d does not encode: %v", o.Name, status, i, err)
				}
				if vs := o.CheckAnswer(req, status, http.Header{"Content-Type": {name}}, b); len(vs) > 0 {
					t.Errorf("%s %d: draw %d breaks its schema: %s\n%s", o.Name, status, i, strings.Join(summary(vs), "; "), b)
					break
				}
				checked++
			}
		}
	}
	if checked < 6*draws {
		t.Errorf("checked %d draws; want those of 6 responses at least", checked)
	}
}

func summary(vs []Violation) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.In + " " + v.Pointer + ": " + v.Detail
	}
	return out
}
