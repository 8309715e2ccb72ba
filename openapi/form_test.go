package openapi

import (
	"net/url"
	"reflect"
	"testing"
)

// TestParseForm holds the one-pass form reader to what it replaced,
// url.ParseQuery then unflatten, where the keys do not collide (their
// order was the map's, so a collision went either way): the same nested
// values, and an error exactly when ParseQuery gives one. Then what a
// collision gives now: the pairs in the order sent.
func TestParseForm(t *testing.T) {
	bodies := []string{
		"",
		"email=jenny%40example.com&name=Jenny+Rosen",
		"metadata[order]=6735&shipping[name]=J&shipping[address][line1]=1+Main+St&shipping[address][city]=Tokyo",
		"expand[]=customer&expand[]=invoice",
		"expand[]=customer",
		"items[0][price]=p_1&items[0][quantity]=2&items[1][price]=p_2",
		"a=1&a=2&a=3",
		"a[b]=1&a[b]=2",
		"a[b][]=x",
		"a[][c]=x&a[][c]=y",
		"&&a=1&&",
		"a&b=",
		"=x",
		"a[b=1",
		"a[b]c=1",
		"%5Bodd%5D=1",
		"x=%zz&a=1",
		"%zz=1&a=1",
		"a=1;b=2&c=3",
		"a=1&c;=3",
		// Escapes as stripe-go writes them, and malformed ones at each
		// place: the first error is ParseQuery's.
		"metadata%5Border%5D=6735&shipping%5Baddress%5D%5Bline1%5D=1+Main+St&name=J%C3%B6rg+%2B+co",
		"a=%41%62%6a%6A%7e+%2b%25",
		"a=%&b=1",
		"a=%4&b=1",
		"a=x%4&b=1",
		"a=%4g&b=1",
		"a=%g4&b=%zz",
		"a%=1&b=2",
		"a=1&b=%",
		"%25=%25&+=+",
		"a=\xff%ff&b=%E2%82%AC",
	}
	for _, body := range bodies {
		vals, wantErr := url.ParseQuery(body)
		want := unflatten(vals)
		got, err := parseForm(body)
		if (err != nil) != (wantErr != nil) || err != nil && err.Error() != wantErr.Error() {
			t.Errorf("%q: error %v, want %v", body, err, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %#v, want %#v", body, got, want)
		}
	}
	for body, want := range map[string]map[string]any{
		"a=1&a[b]=2":   {"a": map[string]any{"b": "2"}},
		"a[b]=2&a=1":   {"a": "1"},
		"a[]=x&a=y":    {"a": []any{"x", "y"}},
		"tag=a&tag[]=": {"tag": []any{"a", ""}},
	} {
		got, err := parseForm(body)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %#v, %v; want %#v", body, got, err, want)
		}
	}
}

// TestListValues reads a list parameter however a client writes it, the
// indexes in order with their gaps closed, and nothing of other names.
func TestListValues(t *testing.T) {
	q := url.Values{"types[3]": {"d"}, "types[1]": {"b"}, "types[]": {"x"}, "types": {"w"}, "types[0]": {"a"},
		"types[10]": {"k"}, "typesX[0]": {"no"}, "types[0][a]": {"no"}, "types[-1]": {"no"}, "types[2]": {""}}
	if got, want := listValues(q, "types"), []string{"w", "x", "a", "b", "d", "k"}; !reflect.DeepEqual(got, want) {
		t.Errorf("listValues = %q, want %q", got, want)
	}
}
