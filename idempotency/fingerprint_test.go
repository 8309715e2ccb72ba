package idempotency

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/scenarios"
)

func request(method, target, contentType, body string) *matcher.Request {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	r.Header.Set("X-Tenant", "t1")
	return matcher.NewRequest(r, []byte(body))
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	body := []scenarios.FingerprintPart{{Whole: "body"}}
	bodyMethod := []scenarios.FingerprintPart{{Whole: "body"}, {Whole: "method"}}
	tenant := []scenarios.FingerprintPart{{Attr: &scenarios.Attribute{Kind: scenarios.HeaderAttr, Name: "X-Tenant"}}}
	mode := []scenarios.FingerprintPart{{Attr: &scenarios.Attribute{Kind: scenarios.QueryAttr, Name: "mode"}}}
	const js = "application/json"
	const form = "application/x-www-form-urlencoded"
	for _, tc := range []struct {
		name  string
		parts []scenarios.FingerprintPart
		a, b  *matcher.Request
		same  bool
	}{
		{"JSON key order", body, request("POST", "/p", js, `{"amount":100,"currency":"JPY"}`), request("POST", "/p", js, `{"currency":"JPY","amount":100}`), true},
		{"JSON whitespace", body, request("POST", "/p", js, `{"a":[1,2]}`), request("POST", "/p", js, " {\n \"a\" : [ 1 , 2 ] }\n"), true},
		{"JSON number spelling", body, request("POST", "/p", js, `{"a":1}`), request("POST", "/p", js, `{"a":1.0}`), true},
		{"JSON exponent", body, request("POST", "/p", js, `{"a":150}`), request("POST", "/p", js, `{"a":1.5e2}`), true},
		{"JSON nested key order", body, request("POST", "/p", js, `{"m":{"x":1,"y":2}}`), request("POST", "/p", js, `{"m":{"y":2,"x":1}}`), true},
		{"JSON other amount", body, request("POST", "/p", js, `{"amount":100}`), request("POST", "/p", js, `{"amount":101}`), false},
		{"JSON array order matters", body, request("POST", "/p", js, `{"a":[1,2]}`), request("POST", "/p", js, `{"a":[2,1]}`), false},
		{"JSON string vs number", body, request("POST", "/p", js, `{"a":1}`), request("POST", "/p", js, `{"a":"1"}`), false},
		{"vendor JSON type", body, request("POST", "/p", "application/vnd.api+json", `{"a":1,"b":2}`), request("POST", "/p", "application/vnd.api+json", `{"b":2,"a":1}`), true},
		{"form parameter order", body, request("POST", "/p", form, "amount=100&currency=usd&metadata[order]=7"), request("POST", "/p", form, "metadata[order]=7&currency=usd&amount=100"), true},
		{"form other value", body, request("POST", "/p", form, "amount=100"), request("POST", "/p", form, "amount=200"), false},
		{"form repeated values keep order", body, request("POST", "/p", form, "a=1&a=2"), request("POST", "/p", form, "a=2&a=1"), false},
		{"bytes otherwise", body, request("POST", "/p", "text/plain", "a b"), request("POST", "/p", "text/plain", "a  b"), false},
		{"invalid JSON as bytes", body, request("POST", "/p", js, `{"a":`), request("POST", "/p", js, `{"a":`), true},
		{"method ignored by default", body, request("POST", "/p", js, `{}`), request("PUT", "/p", js, `{}`), true},
		{"method when named", bodyMethod, request("POST", "/p", js, `{}`), request("PUT", "/p", js, `{}`), false},
		{"header part", tenant, request("POST", "/p", js, `{}`), request("POST", "/p", js, `{"other":1}`), true},
		{"query part absent vs empty", mode, request("POST", "/p", js, ``), request("POST", "/p?mode=", js, ``), false},
		{"query part equal", mode, request("POST", "/p?mode=x", js, `{"a":1}`), request("POST", "/p?mode=x&z=1", js, `{"a":2}`), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fa, fb := FingerprintOf(tc.a, tc.parts, nil), FingerprintOf(tc.b, tc.parts, nil)
			if (fa == fb) != tc.same {
				t.Errorf("same fingerprint = %v, want %v", fa == fb, tc.same)
			}
		})
	}
}

func BenchmarkFingerprint(b *testing.B) {
	body := []scenarios.FingerprintPart{{Whole: "body"}}
	for _, tc := range []struct{ name, ct, body string }{
		{"json", "application/json", `{"amount":9800,"currency":"JPY","metadata":{"order":"A-1001","note":"gift"}}`},
		{"form", "application/x-www-form-urlencoded", "amount=9800&currency=jpy&metadata[order]=A-1001"},
		{"raw", "text/plain", "amount 9800 currency JPY"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := request("POST", "/p", tc.ct, tc.body).HTTP
			b.ReportAllocs()
			for b.Loop() {
				FingerprintOf(matcher.NewRequest(r, []byte(tc.body)), body, nil)
			}
		})
	}
}
