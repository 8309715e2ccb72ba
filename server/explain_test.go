package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestExplainModes checks what a 404 tells the client under each
// --explain mode, and that the log has the whole report under all of them.
func TestExplainModes(t *testing.T) {
	t.Parallel()
	const secret = "sk_live_SECRET123"
	yaml := `
routes:
  - name: account
    path: /account
    when: { headers: { Authorization: "Bearer ` + secret + `", X-Mode: live } }
    respond: {}
`
	cases := []struct {
		mode    ExplainMode
		reason  string // the one near miss the 404 names; "" for none
		showsIt bool   // whether the body may carry the secret
	}{
		{ExplainRedacted, `header Authorization is "Bearer guess", want [redacted]`, false},
		{ExplainFull, `header Authorization is "Bearer guess", want = "Bearer ` + secret + `"`, true},
		{ExplainOff, "", false},
	}
	for _, c := range cases {
		t.Run(c.mode.String(), func(t *testing.T) {
			t.Parallel()
			_, hs, logs := serveYAML(t, Options{Explain: c.mode}, yaml)
			a := do(t, "GET", hs.URL+"/account", "", "Authorization", "Bearer guess", "X-Mode", "live")
			if a.status != http.StatusNotFound {
				t.Fatalf("%d %s, want 404", a.status, a.body)
			}
			var p struct {
				Detail  string
				Closest []struct{ Route, Reason string }
			}
			if err := json.Unmarshal([]byte(a.body), &p); err != nil {
				t.Fatal(err)
			}
			if c.reason == "" {
				if len(p.Closest) > 0 || p.Detail != "No route matches GET /account." {
					t.Errorf("the 404 says %s, want no near misses", a.body)
				}
			} else if len(p.Closest) != 1 || p.Closest[0].Reason != c.reason || !strings.Contains(p.Detail, c.reason) {
				t.Errorf("the 404 says %s, want the near miss %q in detail and closest", a.body, c.reason)
			}
			if got := strings.Contains(a.body, secret); got != c.showsIt {
				t.Errorf("the 404 carries the wanted value: %v, want %v: %s", got, c.showsIt, a.body)
			}
			eventually(t, 5*time.Second, func() string {
				if !strings.Contains(logs.String(), `want = \"Bearer `+secret) {
					return "the log line lacks the whole report:\n" + logs.String()
				}
				return ""
			})
		})
	}
}

func TestParseExplainMode(t *testing.T) {
	t.Parallel()
	for _, m := range []ExplainMode{ExplainRedacted, ExplainFull, ExplainOff} {
		if got, err := ParseExplainMode(m.String()); err != nil || got != m {
			t.Errorf("ParseExplainMode(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := ParseExplainMode("verbose"); err == nil {
		t.Error("ParseExplainMode accepted verbose")
	}
}
