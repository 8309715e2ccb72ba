package journal

import (
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/state"
)

var t0 = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

// entry is a POST /v1/payments/pay_1 answered 201 by "create payment".
func entry() *state.Entry {
	return &state.Entry{
		ID: 7, Time: t0, Method: "POST", Path: "/v1/payments/pay_1", Query: "expand=customer&tag=a&tag=b",
		Headers:     http.Header{"Idempotency-Key": {"k-1"}, "Accept": {"text/plain", "application/json"}},
		Body:        []byte(`{"amount":9800,"customer":{"id":"cus_1"},"items":[{"sku":"x"},{"sku":"y"}],"live":false,"note":null}`),
		Route:       "create payment",
		Matched:     true,
		Status:      201,
		Idempotency: "replayed",
	}
}

func TestMatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		query string
		want  bool
	}{
		{"", true},
		{"route=create+payment", true},
		{"route=other", false},
		{"method=POST", true},
		{"method=post", true},
		{"method=GET", false},
		{"path=/v1/payments/pay_1", true},
		{"path=/v1/payments", false},
		{"path=/v1/payments/*", true},
		{"path=/v1/*", false}, // * stays within a segment
		{"path=/v1/**", true},
		{"path=/**/pay_*", true},
		{"path=/v2/**", false},
		{"path=/v1/payments/pay.1", false}, // a dot is a dot, not any character
		{"status=201", true},
		{"status=200", false},
		{"status=2xx", true},
		{"status=4xx", false},
		{"header.Idempotency-Key=k-1", true},
		{"header.idempotency-key=k-1", true}, // names are canonicalized
		{"header.Idempotency-Key=k-2", false},
		{"header.Accept=application/json", true}, // any of the values
		{"header.X-Missing=a", false},
		{"query.expand=customer", true},
		{"query.tag=b", true},
		{"query.expand=other", false},
		{"query.missing=x", false},
		{"body.amount=9800", true},
		{"body.amount=9800.0", true}, // numbers by value
		{"body.amount=98", false},
		{"body.customer.id=cus_1", true},
		{"body.customer.id=cus_2", false},
		{"body.items.1.sku=y", true},
		{"body.items.0.sku=y", false},
		{"body.items.2.sku=y", false},
		{"body.live=false", true},
		{"body.note=null", true},
		{"body.customer=cus_1", false}, // an object matches nothing
		{"body.amount.x=1", false},
		{"idempotency=replayed", true},
		{"idempotency=new", false},
		{"matched=true", true},
		{"matched=false", false},
		{"violating=false", true}, // the entry has no violations
		{"violating=true", false},
		{"since=6", true},
		{"since=7", false}, // since an id: the entries after it
		{"since=2026-01-02T15:04:05Z", true},
		{"since=2026-01-02T15:04:06Z", false},
		{"since=2026-01-02T16:04:05%2B01:00", true},
		{"limit=1", true},
		{"method=POST&status=4xx", false}, // ANDed
		{"method=POST&status=2xx&route=create+payment&body.amount=9800", true},
	} {
		t.Run(tc.query, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			f, err := ParseFilter(q)
			if err != nil {
				t.Fatalf("ParseFilter: %v", err)
			}
			if got := f.Match(entry()); got != tc.want {
				t.Errorf("Match = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMatchBodyNotJSON(t *testing.T) {
	t.Parallel()
	f, err := ParseFilter(url.Values{"body.a": {"1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"", "a=1", `{"a":1`, `{"a":1} {"a":1}`} {
		e := entry()
		e.Body = []byte(body)
		if f.Match(e) {
			t.Errorf("body %q matched body.a=1", body)
		}
	}
}

// TestMatchForm: form.<key> reads a URL-encoded body (Stripe's), by the
// keys as sent, and only when the Content-Type says it is a form.
func TestMatchForm(t *testing.T) {
	t.Parallel()
	form := func(contentType, body string) *state.Entry {
		e := entry()
		e.Body = []byte(body)
		e.Headers = http.Header{"Content-Type": {contentType}}
		return e
	}
	const stripe = "amount=2000&currency=usd&metadata[order_id]=6735&expand[]=customer&expand[]=invoice&note=a+b%26c"
	for _, tc := range []struct {
		name  string
		query string
		entry *state.Entry
		want  bool
	}{
		{"a field", "form.amount=2000", form("application/x-www-form-urlencoded", stripe), true},
		{"another value", "form.amount=1", form("application/x-www-form-urlencoded", stripe), false},
		{"a bracket key as sent", "form.metadata%5Border_id%5D=6735", form("application/x-www-form-urlencoded", stripe), true},
		{"any of a list", "form.expand%5B%5D=invoice", form("application/x-www-form-urlencoded", stripe), true},
		{"decoded", "form.note=a+b%26c", form("application/x-www-form-urlencoded", stripe), true},
		{"with a charset, ANDed", "form.amount=2000&form.currency=usd", form("Application/X-WWW-Form-Urlencoded; charset=utf-8", stripe), true},
		{"ANDed, one fails", "form.amount=2000&form.currency=eur", form("application/x-www-form-urlencoded", stripe), false},
		{"a missing field", "form.customer=cus_1", form("application/x-www-form-urlencoded", stripe), false},
		{"not a form", "form.amount=2000", form("text/plain", stripe), false},
		{"no Content-Type", "form.amount=2000", func() *state.Entry { e := form("", stripe); delete(e.Headers, "Content-Type"); return e }(), false},
		{"a JSON body", "form.amount=9800", entry(), false},
		{"a broken pair among good ones", "form.amount=2000", form("application/x-www-form-urlencoded", "x=%zz&amount=2000"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			f, err := ParseFilter(q)
			if err != nil {
				t.Fatalf("ParseFilter: %v", err)
			}
			if got := f.Match(tc.entry); got != tc.want {
				t.Errorf("Match = %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := ParseFilter(url.Values{"form.": {"1"}}); err == nil {
		t.Error("form. with no key: no error")
	}
}

func TestMatchStatusZeroAndRoutes(t *testing.T) {
	t.Parallel()
	e := entry()
	e.Status, e.Route, e.Matched = 0, "(fallback)", false
	for query, want := range map[string]bool{
		"status=0": true, "status=2xx": false, "route=(fallback)": true, "matched=false": true,
	} {
		q, _ := url.ParseQuery(query)
		f, err := ParseFilter(q)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		if got := f.Match(e); got != want {
			t.Errorf("%s: Match = %v, want %v", query, got, want)
		}
	}
}

func TestParseFilterErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		query, param string
	}{
		{"stauts=201", "stauts"},
		{"status=abc", "status"},
		{"status=99", "status"},
		{"status=600", "status"},
		{"status=6xx", "status"},
		{"status=", "status"},
		{"method=", "method"},
		{"path=v1", "path"},
		{"idempotency=maybe", "idempotency"},
		{"matched=yes", "matched"},
		{"violating=yes", "violating"},
		{"since=yesterday", "since"},
		{"since=-1", "since"},
		{"limit=0", "limit"},
		{"limit=10001", "limit"},
		{"limit=x", "limit"},
		{"header.=x", "header."},
		{"body.a..b=1", "body.a..b"},
		{"cookie.x=1", "cookie.x"},
		{"method=GET&method=POST", "method"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ParseFilter(q)
			var fe *Error
			if !errors.As(err, &fe) {
				t.Fatalf("ParseFilter = %v, want an *Error", err)
			}
			if fe.Param != tc.param {
				t.Errorf("error names %q, want %q (%v)", fe.Param, tc.param, err)
			}
		})
	}
}

func TestLimitAndAfter(t *testing.T) {
	t.Parallel()
	f, err := ParseFilter(url.Values{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Limit() != DefaultLimit || f.After() != 0 {
		t.Errorf("defaults: Limit %d After %d", f.Limit(), f.After())
	}
	if (Filter{}).Limit() != DefaultLimit {
		t.Errorf("zero Filter: Limit %d", Filter{}.Limit())
	}
	f, err = ParseFilter(url.Values{"limit": {"5"}, "since": {"12"}})
	if err != nil {
		t.Fatal(err)
	}
	if f.Limit() != 5 || f.After() != 12 {
		t.Errorf("Limit %d After %d, want 5 and 12", f.Limit(), f.After())
	}
}

// FuzzParseFilter: any query either parses into a filter that can match
// an entry without panicking, or is refused with an error naming one of
// its parameters.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{"path=/v1/**/x*", "status=4xx&method=GET", "body.items.0.sku=x", "since=2026-01-02T15:04:05Z", "header.A=b&query.c=d", "limit=3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		flt, err := ParseFilter(q)
		if err != nil {
			var fe *Error
			if !errors.As(err, &fe) || !q.Has(fe.Param) {
				t.Fatalf("ParseFilter(%q) = %v: not an *Error naming a parameter", raw, err)
			}
			return
		}
		flt.Match(entry())
		if l := flt.Limit(); l < 1 || l > MaxLimit {
			t.Fatalf("Limit %d", l)
		}
	})
}
