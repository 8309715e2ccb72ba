package matcher

import (
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/scenarios"
)

// explainByScan is the near-miss report computed the slow, plain way: every
// route ranked on everything, for comparison with Explain's shortcuts.
func explainByScan(t *Table, in *Request) []string {
	path, method := in.HTTP.URL.Path, in.HTTP.Method
	var best []ranked
	for _, r := range t.routes {
		c := ranked{r: r, methodOK: r.methodOK(method), pathOK: r.pathMatches(path)}
		switch {
		case !c.pathOK:
			c.distance, c.shared = editDistance(path, r.Path, 64), sharedPrefix(path, r.literal)
		case c.methodOK:
			vars, _ := r.matchPath(path)
			q := NewRequest(in.HTTP, in.Body)
			q.States = in.States
			c.passed, c.fail, _ = r.testConditions(q, vars)
		}
		best = append(best, c)
	}
	slices.SortStableFunc(best, func(a, b ranked) int {
		if a.better(b) {
			return -1
		}
		return 1
	})
	var out []string
	shown := map[string]bool{}
	for _, c := range best {
		if len(out) == maxNearMisses {
			break
		}
		if !c.pathOK {
			if shown[c.r.Path] {
				continue
			}
			shown[c.r.Path] = true
		}
		reason := c.fail.String()
		switch {
		case !c.pathOK:
			reason = fmt.Sprintf("path %s does not match %s", clip(path), c.r.Path)
		case !c.methodOK:
			reason = fmt.Sprintf("method is %s, want %s", method, strings.Join(c.r.Methods, " or "))
		}
		out = append(out, c.r.Name+": "+reason)
	}
	return out
}

// TestExplainAgreesWithScan checks, over random tables small enough that
// no bound of Explain's cuts in (fewer templates than it ranks), that its
// report is exactly the one a full scan ranks.
func TestExplainAgreesWithScan(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	segs := []string{"a", "b", "payments", "{id}", "{n:[0-9]+}", "pay"}
	reqSegs := []string{"a", "b", "payments", "1", "42", "paymentz", "pay", "zz"}
	conds := []string{"", "X-A: '1'", "X-A: { present: true }", "X-B: { regex: '^[0-9]+$' }", "X-A: '2', X-B: { absent: true }"}
	checked := 0
	for round := range 300 {
		var b strings.Builder
		b.WriteString("routes:\n")
		for i := range 1 + rng.IntN(10) {
			path := ""
			for d := range 1 + rng.IntN(3) {
				s := segs[rng.IntN(len(segs))]
				s = strings.Replace(strings.Replace(s, "{id}", fmt.Sprintf("{v%d}", d), 1), "{n:", fmt.Sprintf("{v%d:", d), 1)
				path += "/" + s
			}
			method := []string{"GET", "POST", "[GET, PUT]", "ANY"}[rng.IntN(4)]
			when := ""
			if c := conds[rng.IntN(len(conds))]; c != "" {
				when = ", when: { headers: { " + c + " } }"
			}
			fmt.Fprintf(&b, "  - { name: r%d, path: %q, method: %s%s, respond: {} }\n", i, path, method, when)
		}
		tab := compile(t, b.String())
		for range 30 {
			path := ""
			for range 1 + rng.IntN(3) {
				path += "/" + reqSegs[rng.IntN(len(reqSegs))]
			}
			r := httptest.NewRequest([]string{"GET", "POST", "PUT"}[rng.IntN(3)], path, nil)
			if rng.IntN(2) == 0 {
				r.Header.Set("X-A", []string{"1", "2", "3"}[rng.IntN(3)])
			}
			if rng.IntN(2) == 0 {
				r.Header.Set("X-B", []string{"7", "x"}[rng.IntN(2)])
			}
			in := NewRequest(r, nil)
			if _, ok := tab.Match(in); ok {
				continue
			}
			checked++
			var got []string
			for _, n := range tab.Explain(in) {
				got = append(got, n.Route+": "+n.Reason)
			}
			if want := explainByScan(tab, in); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("round %d: %s %s %v\nExplain:\n%s\na full scan:\n%s\nroutes:\n%s", round, r.Method, path, r.Header,
					strings.Join(got, "\n"), strings.Join(want, "\n"), b.String())
			}
		}
	}
	if checked < 2000 {
		t.Errorf("only %d misses checked", checked)
	}
}

// TestExplainLargeTables checks the reports on the two shapes that once
// cost a scan of every route per candidate, at 2,000 routes (far more than
// Explain ranks or measures; 10,000 take minutes to load under -race).
func TestExplainLargeTables(t *testing.T) {
	t.Parallel()
	shapes := missShapes(2_000)
	headers := compile(t, shapes[0].yaml)
	r := httptest.NewRequest("GET", "/tenants", nil)
	r.Header.Set("X-Tenant", "nobody")
	want := []string{
		`header X-Tenant is "nobody", want = "t0"`,
		`header X-Tenant is "nobody", want = "t1"`,
		`header X-Tenant is "nobody", want = "t2"`,
	}
	checkReport(t, headers, NewRequest(r, nil), want)

	literal := compile(t, shapes[1].yaml)
	// Edit distance 2 all three. A full ranking would name /items/51
	// third (file order breaks the tie); Explain measures only the
	// templates nearest in literal order, and /items/500 comes first there.
	checkReport(t, literal, NewRequest(httptest.NewRequest("GET", "/items/5/x", nil), nil), []string{
		`path /items/5/x does not match /items/5`,
		`path /items/5/x does not match /items/50`,
		`path /items/5/x does not match /items/500`,
	})
	checkReport(t, literal, NewRequest(httptest.NewRequest("GET", "/itemz/5", nil), nil), []string{
		`path /itemz/5 does not match /items/5`,
	})
	checkReport(t, literal, NewRequest(httptest.NewRequest("POST", "/paymentz", nil), nil), []string{
		`path /paymentz does not match /payments`,
		`path /paymentz does not match /payments/{id}`,
	})
}

func checkReport(t *testing.T, tab *Table, in *Request, want []string) {
	t.Helper()
	if _, ok := tab.Match(in); ok {
		t.Fatal("matched; the case needs a miss")
	}
	got := tab.Explain(in)
	for i, w := range want {
		if i >= len(got) {
			t.Fatalf("%s: only %d near misses, want %q next", in.HTTP.URL.Path, len(got), w)
		}
		if got[i].Reason != w {
			t.Errorf("%s: near miss %d = %q, want %q", in.HTTP.URL.Path, i, got[i].Reason, w)
		}
	}
}

// TestConditionsTestedOnce checks that Match and then Explain run each
// distinct body condition once per request: three routes share one body
// regex, a fourth has another, and a miss tests the body twice in all
// (once tested each, it was tested eight times: four by Match, four again
// by Explain).
func TestConditionsTestedOnce(t *testing.T) {
	t.Parallel()
	tab := compile(t, `
routes:
  - { name: a, method: POST, path: /upload, when: { headers: { X-A: "1" }, body: { regex: "^<xml" } }, respond: {} }
  - { name: b, method: POST, path: /upload, when: { headers: { X-B: "1" }, body: { regex: "^<xml" } }, respond: {} }
  - { name: c, method: POST, path: /upload, when: { body: { regex: "^<xml" } }, respond: {} }
  - { name: d, method: POST, path: /upload, when: { body: { contains: "needle" } }, respond: {} }
`)
	r := httptest.NewRequest("POST", "/upload", nil)
	r.Header.Set("X-A", "1")
	r.Header.Set("X-B", "1")
	in := NewRequest(r, []byte("<json/>"))
	if _, ok := tab.Match(in); ok {
		t.Fatal("matched")
	}
	if got := tab.Explain(in); len(got) != 3 || got[0].Reason != `body is "<json/>", want matches /^<xml/` {
		t.Fatalf("near misses %v", got)
	}
	if in.evals != 2 {
		t.Errorf("the body was tested %d times, want 2: once per distinct condition", in.evals)
	}
}

// TestBodyScanLimit checks what raw body tests read of a body larger than
// MaxBodyScan: contains and regex the first MaxBodyScan bytes, equals all.
func TestBodyScanLimit(t *testing.T) {
	t.Parallel()
	pad := strings.Repeat("x", MaxBodyScan)
	tab := compile(t, `
routes:
  - { name: contains, method: POST, path: /c, when: { body: { contains: "needle" } }, respond: {} }
  - { name: regex, method: POST, path: /r, when: { body: { regex: "needle" } }, respond: {} }
  - { name: equals, method: POST, path: /e, when: { body: { equals: "`+pad+`" } }, respond: {} }
`)
	cases := []struct {
		name, path, body string
		match            bool
	}{
		{"contains within the limit", "/c", pad[6:] + "needle", true},
		{"contains past the limit", "/c", pad[5:] + "needle", false},
		{"regex within the limit", "/r", pad[6:] + "needle", true},
		{"regex past the limit", "/r", pad[5:] + "needle", false},
		{"equals, the whole body", "/e", pad, true},
		{"equals, a longer body", "/e", pad + "x", false},
		{"equals, differing past the limit", "/e", pad[1:] + "y", false},
	}
	for _, c := range cases {
		r := httptest.NewRequest("POST", c.path, nil)
		if _, ok := tab.Match(NewRequest(r, []byte(c.body))); ok != c.match {
			t.Errorf("%s: matched %v, want %v", c.name, ok, c.match)
		}
	}
}

// TestRedacted checks which wanted values a redacted report hides: those
// of headers, query parameters and JSON keys whose names look secret.
func TestRedacted(t *testing.T) {
	t.Parallel()
	tab := compile(t, `
routes:
  - { name: auth, path: /auth, when: { headers: { Authorization: "Bearer s3cret" } }, respond: {} }
  - { name: cookie, path: /cookie, when: { headers: { Cookie: { contains: "sid=s3cret" } } }, respond: {} }
  - { name: proxy, path: /proxy, when: { headers: { Proxy-Authorization: { regex: "^Basic s3cret$" } } }, respond: {} }
  - { name: api key, path: /key, when: { headers: { X-Api-Key: { oneOf: [s3cret, other] } } }, respond: {} }
  - { name: query, path: /q, when: { query: { access_token: s3cret } }, respond: {} }
  - { name: json, method: POST, path: /j, when: { body: { json: { user: { password: s3cret } } } }, respond: {} }
  - { name: mode, path: /mode, when: { headers: { X-Mode: live } }, respond: {} }
  - { name: key present, path: /idem, when: { headers: { Idempotency-Key: { absent: true } } }, respond: {} }
  - { name: key value, path: /idem-value, when: { headers: { Idempotency-Key: demo-conflict } }, respond: {} }
  - { name: key in body, method: POST, path: /idem-body, when: { body: { json: { idempotency_key: demo-conflict } } }, respond: {} }
`)
	cases := []struct {
		req            req
		full, redacted string
	}{
		{req{target: "/auth", headers: map[string]string{"Authorization": "Bearer guess"}},
			`header Authorization is "Bearer guess", want = "Bearer s3cret"`, `header Authorization is "Bearer guess", want [redacted]`},
		{req{target: "/cookie", headers: map[string]string{"Cookie": "sid=x"}},
			`header Cookie is "sid=x", want contains "sid=s3cret"`, `header Cookie is "sid=x", want [redacted]`},
		{req{target: "/proxy", headers: map[string]string{"Proxy-Authorization": "Basic x"}},
			`header Proxy-Authorization is "Basic x", want matches /^Basic s3cret$/`, `header Proxy-Authorization is "Basic x", want [redacted]`},
		{req{target: "/key", headers: map[string]string{"X-Api-Key": "x"}},
			`header X-Api-Key is "x", want one of ["s3cret", "other"]`, `header X-Api-Key is "x", want [redacted]`},
		{req{target: "/q?access_token=x"},
			`query access_token is "x", want = "s3cret"`, `query access_token is "x", want [redacted]`},
		{req{method: "POST", target: "/j", body: `{"user":{"password":"x"}}`},
			`body json.user.password is "x", want "s3cret"`, `body json.user.password is "x", want [redacted]`},
		{req{method: "POST", target: "/j", body: `{"user":{}}`},
			`body json.user.password is absent, want "s3cret"`, `body json.user.password is absent, want [redacted]`},
		{req{target: "/mode", headers: map[string]string{"X-Mode": "test"}},
			`header X-Mode is "test", want = "live"`, `header X-Mode is "test", want = "live"`},
		{req{target: "/idem", headers: map[string]string{"Idempotency-Key": "k"}},
			`header Idempotency-Key is present ("k"), want absent`, `header Idempotency-Key is present ("k"), want absent`},
		// An idempotency key is a retry token, no credential (as a
		// recording keeps it): the value a route wants is shown.
		{req{target: "/idem-value", headers: map[string]string{"Idempotency-Key": "k"}},
			`header Idempotency-Key is "k", want = "demo-conflict"`, `header Idempotency-Key is "k", want = "demo-conflict"`},
		{req{method: "POST", target: "/idem-body", body: `{"idempotency_key":"k"}`},
			`body json.idempotency_key is "k", want "demo-conflict"`, `body json.idempotency_key is "k", want "demo-conflict"`},
	}
	for _, c := range cases {
		in := c.req.build()
		if _, ok := tab.Match(in); ok {
			t.Fatalf("%s matched", c.req.target)
		}
		near := tab.Explain(in)
		if len(near) == 0 {
			t.Fatalf("%s: no near misses", c.req.target)
		}
		if near[0].Reason != c.full {
			t.Errorf("%s: reason %q, want %q", c.req.target, near[0].Reason, c.full)
		}
		if r := near[0].Redacted(); r.Reason != c.redacted || r.Route != near[0].Route {
			t.Errorf("%s: redacted %q, want %q", c.req.target, r.Reason, c.redacted)
		}
	}
}

// TestConditionsTestedOnceManyConditions is TestConditionsTestedOnce past
// the 32 conditions a Request remembers without allocating.
func TestConditionsTestedOnceManyConditions(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("routes:\n")
	for i := range 40 {
		fmt.Fprintf(&b, "  - { name: r%d, method: POST, path: /upload, when: { headers: { X-N: { regex: '^%d$' } }, body: { contains: 'n%d;' } }, respond: {} }\n", i, i%3, i)
	}
	tab := compile(t, b.String())
	for _, c := range []struct {
		n, body string
		want    string
	}{{"0", "n39;", "r39"}, {"2", "n38;", "r38"}, {"1", "n38;", ""}} {
		r := httptest.NewRequest("POST", "/upload", nil)
		r.Header.Set("X-N", c.n)
		in := NewRequest(r, []byte(c.body))
		got := ""
		if m, ok := tab.Match(in); ok {
			got = m.Route.Name
		}
		if got != "" || c.want != "" {
			if got != c.want {
				t.Errorf("X-N %s, body %s: matched %q, want %q", c.n, c.body, got, c.want)
			}
			continue
		}
		tab.Explain(in)
		if in.evals != 13 { // the routes whose X-N condition holds: r1, r4, … r37
			t.Errorf("the body was tested %d times, want 13", in.evals)
		}
	}
}

// TestEditDistance checks the bounded edit distance against the one
// scenarios reports with, below and above the limit.
func TestEditDistance(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	word := func() string {
		b := make([]byte, rng.IntN(70))
		for i := range b {
			b[i] = "/abc{}"[rng.IntN(6)]
		}
		return string(b)
	}
	for range 5000 {
		a, b, limit := word(), word(), rng.IntN(70)
		want := scenarios.EditDistance(a, b)
		if got := editDistance(a, b, limit); got != min(want, limit+1) {
			t.Fatalf("editDistance(%q, %q, %d) = %d, want %d", a, b, limit, got, min(want, limit+1))
		}
	}
}
