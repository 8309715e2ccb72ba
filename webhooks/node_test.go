package webhooks

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nodeInstall is the command .ci/run runs to install the receivers'
// libraries that TestNodeLibrariesVerify runs.
const nodeInstall = `npm install --prefix "${XDG_CACHE_HOME:-$HOME/.cache}/scenariomock/node" --no-audit --no-fund standardwebhooks@1.3.0 stripe@23.2.0`

// nodeModules returns the node_modules holding standardwebhooks and stripe.
func nodeModules(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SCENARIOMOCK_NODE_MODULES")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatalf("no cache directory (%v): set SCENARIOMOCK_NODE_MODULES, after: %s", err, nodeInstall)
		}
		dir = filepath.Join(cache, "scenariomock", "node", "node_modules")
	}
	for _, pkg := range []string{"standardwebhooks", "stripe"} {
		if _, err := os.Stat(filepath.Join(dir, pkg, "package.json")); err != nil {
			t.Fatalf("npm package %s is not installed in %s; install it with:\n  %s", pkg, dir, nodeInstall)
		}
	}
	return dir
}

// nodeCase is one delivery for testdata/verify.cjs.
type nodeCase struct {
	Signing string            `json:"signing"`
	Secret  string            `json:"secret"`
	Body    string            `json:"body"`
	Headers map[string]string `json:"headers"`
	want    bool
	name    string
}

func TestNodeLibrariesVerify(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed (apt-get install nodejs npm), then: %s", nodeInstall)
	}
	modules := nodeModules(t)
	const standardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	var cases []nodeCase
	for _, sg := range []struct {
		signing Signing
		secrets []string
	}{
		{Stripe, []string{secret}},
		{Stripe, []string{"whsec_new", secret}},
		{Standard, []string{standardSecret}},
		{Standard, []string{"whsec_" + "bmV3IGtleSBmb3Igcm90YXRpb24=", standardSecret}},
	} {
		for _, neg := range append([]Negative{""}, Negatives...) {
			rc := newReceiver(t, func(int, received) int { return http.StatusOK })
			ep := endpoint("ep", rc.URL)
			ep.Signing, ep.Secrets = sg.signing, sg.secrets
			d := newDispatcher(t, Options{}, ep)
			start(t, d)
			var f *Fault
			if neg != "" {
				f = &Fault{Negative: map[Negative]float64{neg: 1}}
			}
			if err := d.Send(paymentIntent("pi_1", "created"), nil, 0, f); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "a delivery", func() bool { return len(rc.requests()) == 1 })
			r := rc.requests()[0]
			h := map[string]string{}
			for k, v := range r.header {
				h[strings.ToLower(k)] = v[0]
			}
			name := string(sg.signing) + "/" + strings.Join(sg.secrets, "+") + "/" + string(neg)
			// The receiver is configured with the last secret: during a
			// rotation it still has the old one.
			c := nodeCase{Signing: string(sg.signing), Secret: sg.secrets[len(sg.secrets)-1], Body: string(r.body), Headers: h, want: neg == "", name: name}
			cases = append(cases, c)
			if neg == "" {
				changed := c
				b := []byte(c.Body)
				b[len(b)/2] ^= 0x01
				changed.Body, changed.want, changed.name = string(b), false, name+"one byte changed"
				cases = append(cases, changed)
			}
		}
	}
	in := filepath.Join(t.TempDir(), "cases.json")
	data, _ := json.Marshal(cases)
	if err := os.WriteFile(in, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join("testdata", "verify.cjs"), in)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var results []struct {
		OK    bool
		Error string
	}
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(cases) {
		t.Fatalf("node printed %s (%v), want %d results", out, err, len(cases))
	}
	for i, c := range cases {
		if results[i].OK != c.want {
			t.Errorf("%s: verified = %v (%s), want %v", c.name, results[i].OK, results[i].Error, c.want)
		}
	}
}
