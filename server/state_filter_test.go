package server

import (
	"strings"
	"testing"
	"time"
)

// TestJournalStateFilter: state.<name>=<to> counts the requests that
// moved a route state to <to>, stateKey= the ones of one per: key, so a
// test can assert that order ord_7 was paid exactly once; a state name
// no route has is refused with the name it likely misspells.
func TestJournalStateFilter(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, orderStates)
	for _, p := range []string{"/orders/ord_7/pay", "/orders/ord_7/pay", "/orders/ord_8/pay"} {
		do(t, "POST", hs.URL+p, "")
	}
	for deadline := time.Now().Add(10 * time.Second); countRequests(t, hs.URL, "method=POST") < 3; {
		if time.Now().After(deadline) {
			t.Fatal("the journal never held the three payments")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for query, want := range map[string]int{
		"state.order=paid":                 2, // ord_7 once (the second answered 409, moving nothing), ord_8
		"state.order=paid&stateKey=ord_7":  1,
		"stateKey=ord_8":                   1,
		"state.order=Started":              0,
		"route=pay+again&state.order=paid": 0,
	} {
		if got := countRequests(t, hs.URL, query); got != want {
			t.Errorf("count?%s = %d, want %d", query, got, want)
		}
	}
	for _, path := range []string{"/__admin/requests/count?state.ordr=paid", "/__admin/requests?state.ordr=paid&stateKey=ord_7"} {
		r := do(t, "GET", hs.URL+path, "")
		if r.status != 400 || !strings.Contains(r.body, `\"order\"`) && !strings.Contains(r.body, `"order"`) {
			t.Errorf("GET %s = %d %s, want a 400 that names order", path, r.status, r.body)
		}
	}
	if r := do(t, "GET", hs.URL+"/__admin/requests/count?state.order=", ""); r.status != 400 {
		t.Errorf("empty state.order= = %d %s, want 400", r.status, r.body)
	}
}
