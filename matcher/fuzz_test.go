package matcher

import (
	"bufio"
	"bytes"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/gorilla/mux"
	"github.com/scenariomock/scenariomock/scenarios"
)

// FuzzMatch matches arbitrary requests against the payments demo. Match and
// Explain must never panic; a match must really fit the route's method and
// path (gorilla/mux, built from the same template, is the oracle); a miss
// must be explained by at most three routes, each with a reason, and when
// some route fits the method and path, the best explanation is one of those.
//
//	go test -run '^$' -fuzz '^FuzzMatch$' -fuzztime 3m ./matcher
func FuzzMatch(f *testing.F) {
	set, err := scenarios.Load("../examples/payments-idempotency.yaml")
	if err != nil {
		f.Fatal(err)
	}
	tab, err := Compile(set)
	if err != nil {
		f.Fatal(err)
	}
	oracles := make([]*mux.Route, len(tab.Routes()))
	names := map[string]bool{}
	for i, r := range tab.Routes() {
		oracles[i] = mux.NewRouter().Path(r.Path)
		if len(r.Methods) > 0 {
			oracles[i] = oracles[i].Methods(r.Methods...)
		}
		if err := oracles[i].GetError(); err != nil {
			f.Fatalf("mux rejects %q: %v", r.Path, err)
		}
		names[r.Name] = true
	}
	const payment = `{"amount":9800,"currency":"JPY"}`
	seeds := []struct {
		method, target, hname, hval, body string
	}{
		{"POST", "/payments", "Idempotency-Key", "k-1", payment},
		{"POST", "/payments", "", "", payment},
		{"POST", "/payments", "idempotency-key", "demo-conflict", payment},
		{"POST", "/payments", "Idempotency-Key", "demo-in-progress", "not json"},
		{"GET", "/payments/pay_demo_0001", "", "", ""},
		{"GET", "/payments/pay_other?expand=x", "X-Trace", "1", ""},
		{"GET", "http://api.example.test/payments/a%2Fb", "Host", "h", ""},
		{"DELETE", "/payments/pay_demo_0001", "", "", ""},
		{"POST", "/refunds", "Idempotency-Key", "k", payment},
		{"post", "/transfers", "Idempotency-Key", "k", `{"amount":50000,"currency":"JPY","toAccount":"0000000"}`},
		{"PUT", "/transfers/", "", "", "[1,2"},
		{"", "*", "", "", ""},
		{"GET", "/", "", "", ""},
		{"GET", "/%E3%81%82/%FF", "Accept", "*/*", "\x00\xff"},
	}
	for _, s := range seeds {
		f.Add(s.method, s.target, s.hname, s.hval, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, method, target, hname, hval string, body []byte) {
		if !validForNewRequest(method, target) {
			t.Skip("not a request httptest.NewRequest can build")
		}
		if hname != "" && (!headerName.MatchString(hname) || !validHeaderValue(hval)) {
			t.Skip("not a header net/http would send")
		}
		req := httptest.NewRequest(method, target, bytes.NewReader(body))
		if hname != "" {
			req.Header.Add(hname, hval)
		}
		in := NewRequest(req, body)
		fits := make([]bool, len(oracles)) // route i fits the method and path, says mux
		anyFits := false
		for i, o := range oracles {
			var rm mux.RouteMatch
			fits[i] = o.Match(req, &rm)
			anyFits = anyFits || fits[i]
		}
		m, ok := tab.Match(in)
		if ok {
			r := m.Route
			if r == nil || r.Index < 0 || r.Index >= len(tab.Routes()) || tab.Routes()[r.Index] != r {
				t.Fatalf("%s %s: matched a route not in the table: %+v", req.Method, req.URL.Path, r)
			}
			var rm mux.RouteMatch
			if !oracles[r.Index].Match(req, &rm) {
				t.Fatalf("%s %s matched route %q (%v %s), whose method or path does not fit", req.Method, req.URL.Path, r.Name, r.Methods, r.Path)
			}
			if len(m.Vars) != len(rm.Vars) {
				t.Fatalf("%s %s, route %q: vars %v, mux %v", req.Method, req.URL.Path, r.Name, m.Vars, rm.Vars)
			}
			for k, v := range rm.Vars {
				if m.Vars[k] != v {
					t.Fatalf("%s %s, route %q: vars %v, mux %v", req.Method, req.URL.Path, r.Name, m.Vars, rm.Vars)
				}
			}
			return
		}
		near := tab.Explain(in)
		if len(near) > 3 {
			t.Errorf("Explain returned %d entries, want at most 3: %+v", len(near), near)
		}
		if len(near) == 0 && len(tab.Routes()) > 0 {
			t.Errorf("%s %s: a miss with no explanation", req.Method, req.URL.Path)
		}
		for _, n := range near {
			if n.Route == "" || !names[n.Route] || strings.TrimSpace(n.Reason) == "" {
				t.Errorf("Explain entry %+v: want a route of the table and a reason", n)
			}
		}
		if anyFits && len(near) > 0 {
			first := -1
			for i, r := range tab.Routes() {
				if r.Name == near[0].Route {
					first = i
				}
			}
			if first < 0 || !fits[first] {
				t.Errorf("%s %s: a route fits the method and path, but the best explanation is %+v", req.Method, req.URL.Path, near[0])
			}
		}
	})
}

// validForNewRequest reports whether httptest.NewRequest accepts method and
// target (it panics otherwise) as one request line.
func validForNewRequest(method, target string) bool {
	if strings.ContainsAny(method+target, " \r\n") {
		return false
	}
	if method == "" {
		method = "GET"
	}
	_, err := http.ReadRequest(bufio.NewReader(strings.NewReader(method + " " + target + " HTTP/1.0\r\n\r\n")))
	return err == nil
}

var headerName = regexp.MustCompile("^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$")

// validHeaderValue is net/http's rule: no control characters but tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < ' ' && b != '\t' || b == 0x7f {
			return false
		}
	}
	return true
}
