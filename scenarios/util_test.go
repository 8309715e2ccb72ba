package scenarios

import (
	"net/http"
	"net/url"
	"reflect"
	"testing"

	"github.com/gorilla/mux"
)

// agreesWithMux checks that a compiled template matches path exactly when
// the mux route built from the same template does, binding the same
// variables.
func agreesWithMux(t *testing.T, tpl string, pt *PathTemplate, route *mux.Route, path string) {
	t.Helper()
	req := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: path}, Header: http.Header{}}
	var m mux.RouteMatch
	muxOK := route.Match(req, &m)
	vals, ours := pt.Match(path, nil)
	if ours != muxOK {
		t.Errorf("template %q, path %q: ours %v, mux %v", tpl, path, ours, muxOK)
		return
	}
	if pt.Matches(path) != ours {
		t.Errorf("template %q, path %q: Match says %v, Matches the opposite", tpl, path, ours)
	}
	if !ours {
		return
	}
	if len(vals) != len(pt.Vars) {
		t.Fatalf("template %q, path %q: %d values %q for variables %q", tpl, path, len(vals), vals, pt.Vars)
	}
	vars := map[string]string{}
	for i, v := range pt.Vars {
		vars[v] = vals[i]
	}
	if len(pt.Vars) > 0 && !reflect.DeepEqual(vars, m.Vars) {
		t.Errorf("template %q, path %q: vars %v, mux %v", tpl, path, vars, m.Vars)
	}
}
