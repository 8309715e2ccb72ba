package upstream_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/scenariomock/scenariomock/upstream"
)

// The server's produce stage calls Do; deliver calls WriteTo, or maps the
// *Error to a problem.
func ExampleProxy_Do() {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "upstream saw %s %s, X-Env=%s", r.Method, r.URL.Path, r.Header.Get("X-Env"))
	}))
	defer up.Close()
	p := upstream.New(upstream.Options{})
	defer p.Close()
	target, err := upstream.NewTarget(upstream.Config{URL: up.URL, Set: map[string]string{"X-Env": "ci"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	mock := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := p.Do(r, target)
		var ue *upstream.Error
		if errors.As(err, &ue) {
			http.Error(w, ue.Error(), ue.Status) // the server writes an RFC 9457 problem
			return
		}
		_, _ = resp.WriteTo(w)
	}))
	defer mock.Close()
	resp, err := http.Get(mock.URL + "/v1/charges")
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(b))
	// Output: 200 upstream saw GET /v1/charges, X-Env=ci
}
