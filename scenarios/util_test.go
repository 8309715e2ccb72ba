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
	ours, vars := false, map[string]string{}
	if pt.Regexp == nil {
		ours = path == tpl
	} else if sm := pt.Regexp.FindStringSubmatch(path); sm != nil {
		ours = true
		for i, v := range pt.Vars {
			vars[v] = sm[i+1]
		}
	}
	if ours != muxOK {
		t.Errorf("template %q, path %q: ours %v, mux %v", tpl, path, ours, muxOK)
		return
	}
	if ours && pt.Regexp != nil && !reflect.DeepEqual(vars, m.Vars) {
		t.Errorf("template %q, path %q: vars %v, mux %v", tpl, path, vars, m.Vars)
	}
}
