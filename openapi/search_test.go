package openapi

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSearchQuery reads Stripe's search language and matches objects
// with it: each operator, metadata keys, nested fields, null, negation,
// AND and OR; and refuses what Stripe refuses, saying where.
func TestSearchQuery(t *testing.T) {
	var obj map[string]any
	if err := json.Unmarshal([]byte(`{"id":"pi_1","amount":2000,"currency":"usd","status":"succeeded","customer":{"id":"cus_1"},
		"description":null,"livemode":false,"active":true,"metadata":{"order":"6735","it's":"x"},"shipping":{"address":{"city":"Tokyo"}},"email":"Jenny.Rosen@example.com"}`), &obj); err != nil {
		t.Fatal(err)
	}
	for query, want := range map[string]bool{
		"status:'succeeded'":                     true,
		`status:"SUCCEEDED"`:                     true,
		"status:'canceled'":                      false,
		"-status:'canceled'":                     true,
		"email~'rosen@'":                         true,
		"email~'smith'":                          false,
		"amount>1999":                            true,
		"amount>2000":                            false,
		"amount>=2000 AND amount<=2000":          true,
		"amount<'2001'":                          true,
		"amount:2000":                            true,
		"amount:'2000'":                          true,
		"metadata['order']:'6735'":               true,
		`metadata["it's"]:'x'`:                   true,
		`metadata['it\'s']:'x'`:                  true,
		"metadata['missing']:null":               true,
		"description:null":                       true,
		"currency:null":                          false,
		"-currency:null":                         true,
		"customer:'cus_1'":                       true,
		"shipping.address.city:'tokyo'":          true,
		"status:'canceled' OR currency:'usd'":    true,
		"status:'canceled' AND currency:'usd'":   false,
		"  status:'succeeded'   AND amount>10  ": true,
		"status:'succeeded' currency:'usd'":      true, // a space is AND
		"status:'succeeded' currency:'eur'":      false,
		"status:'canceled' or currency:'usd'":    true,
		"status:'succeeded'\tand\tamount>10":     true,
		"livemode:'false' AND active:true":       true,
		"-active:'true'":                         false,
		"active:false":                           false,
		"amount>-5":                              true,
		"amount<-5":                              false,
	} {
		q, err := parseSearch(query)
		if err != nil {
			t.Errorf("%s: %v", query, err)
			continue
		}
		if got := q.match(obj); got != want {
			t.Errorf("%s: match %v, want %v", query, got, want)
		}
	}
	for query, want := range map[string]string{
		"":                         "missing",
		"status":                   "want :, ~",
		"status:succeeded":         "quoted value",
		"status:'succeeded":        "not closed",
		"email~'ro'":               "3 characters",
		"amount>'big'":             "compares numbers",
		"a:'1' AND b:'2' OR c:'3'": "AND and OR",
		"a:'1' NOT b:'2'":          "after NOT",
		"amount>NaN":               "a number",
		strings.Repeat("a:'1' AND ", 10) + "a:'1'": "more than 10",
		"metadata['k':'v'":                         "want ]",
	} {
		if _, err := parseSearch(query); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want an error saying %q", query, err, want)
		}
	}
}
