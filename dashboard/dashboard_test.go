package dashboard

import (
	"regexp"
	"strings"
	"testing"
)

// The page must work under its own CSP and fetch nothing from elsewhere:
// no inline script, style or event handler, no URL to another host, and
// no server data put in as HTML. The browser tests catch a violation at
// run time; this names the file and the line at once.
func TestAssetsSelfContained(t *testing.T) {
	t.Parallel()
	if len(assets) < 4 {
		t.Fatalf("%d embedded files, want the page, its script, style and icon", len(assets))
	}
	for _, tc := range []struct {
		name string
		re   *regexp.Regexp
		in   string // file extension the rule applies to, "" for all
	}{
		{"a URL to another host", regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/`), ""},
		{"an inline script", regexp.MustCompile(`(?i)<script(\s[^>]*)?>[^<]`), ".html"},
		{"a script without src", regexp.MustCompile(`(?i)<script(\s+(?:[^s>]|s[^r])[^>]*)?>`), ".html"},
		{"a style attribute", regexp.MustCompile(`(?i)\sstyle\s*=`), ".html"},
		{"a style element", regexp.MustCompile(`(?i)<style`), ".html"},
		{"an inline event handler", regexp.MustCompile(`(?i)\son[a-z]+\s*=`), ".html"},
		{"HTML from data", regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function`), ".js"},
		{"a style attribute set", regexp.MustCompile(`setAttribute\(\s*'style'`), ".js"},
	} {
		for name, a := range assets {
			if name == "" {
				name = "index.html"
			}
			if tc.in != "" && !strings.HasSuffix(name, tc.in) {
				continue
			}
			text := string(a.body)
			if strings.HasSuffix(name, ".svg") {
				text = strings.ReplaceAll(text, `xmlns="http://www.w3.org/2000/svg"`, "") // a namespace, not a fetch
			}
			for i, line := range strings.Split(text, "\n") {
				if tc.re.MatchString(line) {
					t.Errorf("%s:%d: %s: %s", name, i+1, tc.name, strings.TrimSpace(line))
				}
			}
		}
	}
}

func TestServes(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]bool{
		"/__admin/ui": true, "/__admin/ui/app.js": true, "/__admin/ui/app.css": true, "/__admin/ui/icon.svg": true,
		"/__admin/ui/": false, "/__admin/ui/nope": false, "/__admin/uix": false, "/__admin/ui/index.html": false,
		"/__admin/scenarios": false, "/__admin/ui/ui/app.js": false,
	} {
		if got := Serves(path); got != want {
			t.Errorf("Serves(%q) = %v, want %v", path, got, want)
		}
	}
	for _, p := range Assets() {
		if !Serves(p) {
			t.Errorf("Assets lists %s, which Serves refuses", p)
		}
	}
}
