package scenarios

import (
	"reflect"
	"testing"
	"time"
)

func TestCORSBlock(t *testing.T) {
	t.Parallel()
	set, err := LoadBytes("a.yaml", []byte(`
cors:
  origins: [HTTP://LocalHost:*, https://app.example.com]
  methods: [GET, POST]
  headers: [idempotency-key, content-type]
  exposeHeaders: request-id
  maxAge: 10m
  credentials: true
routes:
  - path: /x
    respond: { status: 200 }
`))
	if err != nil {
		t.Fatal(err)
	}
	want := &CORS{
		Pos:           Pos{File: "a.yaml", Line: 3, Col: 3},
		Origins:       []string{"http://localhost:*", "https://app.example.com"},
		Methods:       []string{"GET", "POST"},
		Headers:       []string{"Idempotency-Key", "Content-Type"},
		ExposeHeaders: []string{"Request-Id"},
		MaxAge:        10 * time.Minute,
		Credentials:   true,
	}
	if got := set.Files[0].CORS; !reflect.DeepEqual(got, want) {
		t.Errorf("CORS = %+v, want %+v", got, want)
	}
	if r := set.Routes()[0]; r.CORS != set.Files[0].CORS {
		t.Errorf("the route's CORS is %p, want its file's %p", r.CORS, set.Files[0].CORS)
	}
}

func TestAllowsOrigin(t *testing.T) {
	t.Parallel()
	cases := []struct {
		patterns []string
		origin   string
		want     bool
	}{
		{[]string{"*"}, "https://anything.test", true},
		{[]string{"http://localhost:3000"}, "http://localhost:3000", true},
		{[]string{"http://localhost:3000"}, "HTTP://LOCALHOST:3000", true},
		{[]string{"http://localhost:3000"}, "http://localhost:3001", false},
		{[]string{"http://localhost:*"}, "http://localhost:5173", true},
		{[]string{"http://localhost:*"}, "http://localhost", false},
		{[]string{"http://localhost:*"}, "https://localhost:5173", false},
		{[]string{"https://*.example.com"}, "https://app.example.com", true},
		{[]string{"https://*.example.com"}, "https://example.com", false},
		{[]string{"https://*.example.com"}, "https://app.example.com.evil.test", false},
		{[]string{"http://*:*"}, "http://127.0.0.1:8080", true},
		{[]string{"null"}, "null", true},
		{nil, "http://localhost:3000", false},
	}
	for _, tc := range cases {
		if got := AllowsOrigin(tc.patterns, tc.origin); got != tc.want {
			t.Errorf("AllowsOrigin(%q, %q) = %v, want %v", tc.patterns, tc.origin, got, tc.want)
		}
	}
}

// TestCORSAnyMethod: methods: ANY means any method, as a route's method:
// ANY does, like *; it is not taken as a method named ANY.
func TestCORSAnyMethod(t *testing.T) {
	t.Parallel()
	for _, methods := range []string{"ANY", "'*'", "[GET, ANY]"} {
		set, err := LoadBytes("a.yaml", []byte("cors: { origins: '*', methods: "+methods+" }\nroutes: [{ path: /x, respond: {} }]\n"))
		if err != nil {
			t.Fatal(err)
		}
		if m := set.Files[0].CORS.Methods; m != nil {
			t.Errorf("methods: %s: Methods = %q, want nil (any)", methods, m)
		}
	}
}
