package matcher

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/scenarios"
)

func formRequest(body, contentType string) *Request {
	r := httptest.NewRequest("POST", "/v1/charges", strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	return NewRequest(r, []byte(body))
}

func TestForm(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body, contentType string
		want                    string // the nested form as JSON; "null" when not a form
	}{
		{"plain", "amount=2000&currency=usd", "application/x-www-form-urlencoded", `{"amount":"2000","currency":"usd"}`},
		{"charset and case", "a=1", "Application/X-WWW-Form-URLEncoded; charset=utf-8", `{"a":"1"}`},
		{"not a form", "a=1", "application/json", `null`},
		{"no content type", "a=1", "", `null`},
		{"bracket keys", "metadata[order_id]=6735&metadata[note]=a+b%26c", formCT, `{"metadata":{"note":"a b&c","order_id":"6735"}}`},
		{"escaped brackets", "metadata%5Border_id%5D=7", formCT, `{"metadata":{"order_id":"7"}}`},
		{"stripe-go indexes", "expand[0]=customer&expand[1]=invoice", formCT, `{"expand":["customer","invoice"]}`},
		{"indexes out of order, gaps closed", "a[2]=z&a[0]=x&a[10]=w", formCT, `{"a":["x","z","w"]}`},
		{"empty brackets", "a[]=x&a[]=y", formCT, `{"a":["x","y"]}`},
		{"list of objects by index", "items[0][price]=p1&items[0][quantity]=2&items[1][price]=p2", formCT,
			`{"items":[{"price":"p1","quantity":"2"},{"price":"p2"}]}`},
		{"list of objects by []", "items[][price]=p1&items[][quantity]=2&items[][price]=p2", formCT,
			`{"items":[{"price":"p1","quantity":"2"},{"price":"p2"}]}`},
		{"index with a leading zero is a key", "a[01]=x", formCT, `{"a":{"01":"x"}}`},
		{"repeated plain key: first value", "a=1&a=2", formCT, `{"a":"1"}`},
		{"value then object: first wins", "a=1&a[b]=2", formCT, `{"a":"1"}`},
		{"object then value: first wins", "a[b]=2&a=1", formCT, `{"a":{"b":"2"}}`},
		{"malformed keys stay whole", "a[b=1&[c]=2&d]e=3&f[g]h=4", formCT, `{"[c]":"2","a[b":"1","d]e":"3","f[g]h":"4"}`},
		{"bad escapes and empty pairs skipped", "a=%zz&&b=2&c%=1&=5&d", formCT, `{"":"5","b":"2","d":""}`},
		{"semicolons skipped", "a=1;b=2&c=3", formCT, `{"c":"3"}`},
		{"index keys at the top stay an object", "0=a&1=b", formCT, `{"0":"a","1":"b"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			in := formRequest(c.body, c.contentType)
			var buf strings.Builder
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(in.Form()); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(buf.String()); got != c.want {
				t.Errorf("Form(%s) = %s, want %s", c.body, got, c.want)
			}
		})
	}
}

func TestFormDepthBound(t *testing.T) {
	t.Parallel()
	key := "a" + strings.Repeat("[x]", maxFormDepth+5)
	in := formRequest(key+"=1", formCT)
	if v, ok := in.Form()[key]; !ok || v != "1" {
		t.Errorf("a key deeper than %d levels: %v, want it kept whole", maxFormDepth, in.Form())
	}
}

func TestFormAttribute(t *testing.T) {
	t.Parallel()
	a := &scenarios.Attribute{Kind: scenarios.FormAttr, Name: "metadata[order_id]"}
	for _, c := range []struct {
		body, contentType, want string
		ok                      bool
	}{
		{"metadata[order_id]=7&metadata[order_id]=8", formCT, "7", true},
		{"metadata%5Border_id%5D=9", formCT, "9", true},
		{"metadata[other]=7", formCT, "", false},
		{`{"metadata":{"order_id":"7"}}`, "application/json", "", false},
	} {
		got, ok := formRequest(c.body, c.contentType).Attribute(a, nil)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %q %v, want %q %v", c.body, got, ok, c.want, c.ok)
		}
	}
}

const formCT = "application/x-www-form-urlencoded"

// FuzzForm checks that any body parses without a panic into values that
// encode as JSON.
func FuzzForm(f *testing.F) {
	for _, s := range []string{
		"amount=2000&currency=usd&metadata[order_id]=6735&expand[0]=customer",
		"a[][x]=1&a[][y]=2&a[][x]=3", "a[b]=1&a=2&a[]=3", "[]=1&a[]]=2&a[[b]]=3", "a[999999999]=1&a[]=2",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		in := formRequest(body, formCT)
		form := in.Form()
		if form == nil {
			t.Fatal("a form body gave no form")
		}
		if _, err := json.Marshal(form); err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		_ = in.FormValues()
	})
}
