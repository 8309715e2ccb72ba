package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// results are the counts of one run of the suite. Tests are named
// "package Test", the package relative to the module ("." for its root).
type results struct {
	against, suite string
	took           time.Duration
	timedOut       time.Duration // the -timeout that ended the run, or 0

	passed, failed, skipped []string // top-level tests, sorted
	reasons                 map[string]string
	subtests                map[string]int // subtests' count by action

	packages       map[string]int    // packages' count by action ("pass", "fail", "skip": no tests)
	brokenPackages map[string]string // failed with no failing test (init exit, build error): why

	baselineSize int      // tests that passed in the baseline
	missing      []string // of those, the ones that did not pass here
	notRun       int      // of those, the ones that did not run (their package exited early)
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string // build-output lines (Go 1.24 and later)
	FailedBuild string
}

// Bounds on what is kept of each test's and package's output: enough to
// find the first error, whatever a test prints.
const (
	keepTestLines    = 200
	keepPackageLines = 100
)

// parseEvents reads go test's events from r until it ends. module is the
// module path that package names are shortened by.
func parseEvents(r io.Reader, module string) (*results, error) {
	res := &results{reasons: map[string]string{}, subtests: map[string]int{}, packages: map[string]int{}, brokenPackages: map[string]string{}}
	testOut := map[string][]string{}  // "pkg Test" → its output lines
	pkgOut := map[string][]string{}   // pkg → its own output lines, the last ones
	buildOut := map[string][]string{} // import path as go test names a build → its lines
	pkgFailedTests := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // go test prints a few lines that are not events (a panic in the go command)
		}
		pkg := shortPackage(e.Package, module)
		id := pkg + " " + e.Test
		switch {
		case e.Action == "build-output":
			buildOut[e.ImportPath] = appendBounded(buildOut[e.ImportPath], e.Output, keepPackageLines)
		case e.Action == "output" && e.Test != "":
			testOut[id] = appendBounded(testOut[id], e.Output, keepTestLines)
		case e.Action == "output":
			pkgOut[pkg] = appendBounded(pkgOut[pkg], e.Output, keepPackageLines)
		case e.Test != "" && strings.Contains(e.Test, "/") && isResult(e.Action):
			res.subtests[e.Action]++
		case e.Test != "" && isResult(e.Action):
			switch e.Action {
			case "pass":
				res.passed = append(res.passed, id)
			case "fail":
				res.failed = append(res.failed, id)
				res.reasons[id] = testReason(testOut[id])
				pkgFailedTests[pkg]++
			case "skip":
				res.skipped = append(res.skipped, id)
			}
			delete(testOut, id)
		case e.Test == "" && isResult(e.Action):
			res.packages[e.Action]++
			if e.Action == "fail" && pkgFailedTests[pkg] == 0 {
				if e.FailedBuild != "" {
					res.brokenPackages[pkg] = "build failed: " + firstLine(buildOut[e.FailedBuild])
				} else {
					res.brokenPackages[pkg] = packageReason(pkgOut[pkg])
				}
			}
			delete(pkgOut, pkg)
		}
	}
	for _, l := range [][]string{res.passed, res.failed, res.skipped} {
		slices.Sort(l)
	}
	return res, sc.Err()
}

func isResult(action string) bool { return action == "pass" || action == "fail" || action == "skip" }

// shortPackage names pkg relative to module.
func shortPackage(pkg, module string) string {
	switch {
	case module == "":
		return pkg
	case pkg == module:
		return "."
	default:
		return strings.TrimPrefix(pkg, module+"/")
	}
}

// appendBounded appends s's lines to lines and keeps the first half of the
// bound and the last lines after it.
func appendBounded(lines []string, s string, bound int) []string {
	lines = append(lines, strings.TrimRight(s, "\n"))
	if len(lines) > bound {
		lines = slices.Delete(lines, bound/2, bound/2+1) // called at every append: one too many
	}
	return lines
}

var (
	stripeError = regexp.MustCompile(`Request error from Stripe \(status (\d+)\): (.*)`)
	pointer     = regexp.MustCompile(`0x[0-9a-f]+`)
	requestURL  = regexp.MustCompile(`\((GET|POST|DELETE|PUT|PATCH): [^)]*\)`)
)

// testReason finds a failing test's first error in its output: the error
// stripe-go logged for an API call that failed, else testify's Error line,
// else a panic, else its first line of output.
func testReason(lines []string) string {
	for _, l := range lines {
		if m := stripeError.FindStringSubmatch(l); m != nil {
			var body struct{ Message string }
			if json.Unmarshal([]byte(m[2]), &body) == nil && body.Message != "" {
				return clean("status " + m[1] + ": " + body.Message)
			}
			return clean("status " + m[1] + ": " + m[2])
		}
	}
	for _, prefix := range []string{"Error:", "panic:"} {
		for _, l := range lines {
			if t := strings.TrimSpace(l); strings.HasPrefix(t, prefix) {
				return clean(strings.TrimSpace(strings.TrimPrefix(t, "Error:")))
			}
		}
	}
	for _, l := range lines {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "=== ") && !strings.HasPrefix(t, "--- ") {
			return clean(t)
		}
	}
	return "(no output)"
}

// packageReason finds why a package failed without a failing test (its
// tests' init exited, TestMain failed, it crashed) in its own output.
func packageReason(lines []string) string {
	for _, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case t == "", t == "FAIL", strings.HasPrefix(t, "FAIL\t"), strings.HasPrefix(t, "ok "), strings.HasPrefix(t, "exit status"), strings.HasPrefix(t, "=== "), strings.HasPrefix(t, "--- "):
			continue
		}
		return clean(t)
	}
	return "(no output)"
}

func firstLine(lines []string) string {
	for _, l := range lines {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			return clean(t)
		}
	}
	return "(no output)"
}

// clean makes a reason comparable across tests: no pointers, and at most
// 240 bytes.
func clean(s string) string {
	s = pointer.ReplaceAllString(s, "0x…")
	if len(s) > 240 {
		s = s[:240] + "…"
	}
	return s
}

// reasonKind groups reasons that differ only in the request's URL.
func reasonKind(reason string) string { return requestURL.ReplaceAllString(reason, "($1 …)") }

func (res *results) total() int { return len(res.passed) + len(res.failed) + len(res.skipped) }

// compare reads a baseline passed.txt and records which of its tests did
// not pass in this run.
func (res *results) compare(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	passed, ran := map[string]bool{}, map[string]bool{}
	for _, t := range res.passed {
		passed[t] = true
	}
	for _, t := range slices.Concat(res.failed, res.skipped) {
		ran[t] = true
	}
	res.missing, res.baselineSize, res.notRun = nil, 0, 0
	for _, line := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		res.baselineSize++
		if !passed[t] {
			res.missing = append(res.missing, t)
			if !ran[t] {
				res.notRun++
			}
		}
	}
	slices.Sort(res.missing)
	return nil
}

// write puts the lists and the summary into dir.
func (res *results) write(dir string) error {
	lists := map[string][]string{"passed.txt": res.passed, "skipped.txt": res.skipped}
	failed := make([]string, len(res.failed))
	for i, t := range res.failed {
		failed[i] = t + "\t" + res.reasons[t]
	}
	lists["failed.txt"] = failed
	if res.baselineSize > 0 {
		lists["missing.txt"] = res.missing
	}
	for name, lines := range lists {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(joinLines(lines)), 0o644); err != nil {
			return err
		}
	}
	var md strings.Builder
	res.summarize(&md, dir)
	return os.WriteFile(filepath.Join(dir, "summary.md"), []byte(md.String()), 0o644)
}

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// summarize prints the counts and the commonest failures, in Markdown.
func (res *results) summarize(w io.Writer, dir string) {
	fmt.Fprintf(w, "\n## %s against %s\n\n", res.suite, res.against)
	if res.timedOut > 0 {
		fmt.Fprintf(w, "**Stopped by -timeout %v: the counts are of the tests that finished.**\n\n", res.timedOut)
	}
	// Not "N passed, N failed" alone on a line: CI reads such a line as
	// the verdict of its own test run.
	fmt.Fprintf(w, "stripe-go suite: passed %d, failed %d, skipped %d of %d top-level tests that ran, in %v (subtests: passed %d, failed %d, skipped %d)\n\n",
		len(res.passed), len(res.failed), len(res.skipped), res.total(), res.took, res.subtests["pass"], res.subtests["fail"], res.subtests["skip"])
	fmt.Fprintf(w, "packages: %d passed, %d failed (%d of them without a failing test), %d without tests\n\n",
		res.packages["pass"], res.packages["fail"], len(res.brokenPackages), res.packages["skip"])

	if len(res.brokenPackages) > 0 {
		fmt.Fprintf(w, "Packages that failed with no failing test (their tests did not run):\n\n| reason | packages |\n|---|---|\n")
		byReason := map[string][]string{}
		for p, r := range res.brokenPackages {
			byReason[r] = append(byReason[r], p)
		}
		for _, r := range sortedByCount(byReason) {
			pkgs := byReason[r]
			slices.Sort(pkgs)
			fmt.Fprintf(w, "| %s | %d: %s |\n", cell(r), len(pkgs), cell(abbreviate(pkgs, 12)))
		}
		fmt.Fprintln(w)
	}
	if len(res.failed) > 0 {
		byPkg, byReason := map[string][]string{}, map[string][]string{}
		for _, t := range res.failed {
			p, _, _ := strings.Cut(t, " ")
			byPkg[p] = append(byPkg[p], t)
			k := reasonKind(res.reasons[t])
			byReason[k] = append(byReason[k], t)
		}
		fmt.Fprintf(w, "Failing tests by package (%d packages; every test with its reason in %s):\n\n| failed | package |\n|---|---|\n", len(byPkg), filepath.Join(dir, "failed.txt"))
		for _, p := range sortedByCount(byPkg)[:min(20, len(byPkg))] {
			fmt.Fprintf(w, "| %d | %s |\n", len(byPkg[p]), cell(p))
		}
		if len(byPkg) > 20 {
			fmt.Fprintf(w, "| … | %d more packages |\n", len(byPkg)-20)
		}
		fmt.Fprintf(w, "\nTop failure reasons (the first error each failing test logged):\n\n| tests | reason |\n|---|---|\n")
		for _, r := range sortedByCount(byReason)[:min(15, len(byReason))] {
			fmt.Fprintf(w, "| %d | %s |\n", len(byReason[r]), cell(r))
		}
		fmt.Fprintln(w)
	}
	if res.baselineSize > 0 {
		fmt.Fprintf(w, "Baseline: %d of its %d passing tests do not pass here", len(res.missing), res.baselineSize)
		if len(res.missing) == 0 {
			fmt.Fprintf(w, ".\n\n")
			return
		}
		byPkg := map[string][]string{}
		for _, t := range res.missing {
			p, _, _ := strings.Cut(t, " ")
			byPkg[p] = append(byPkg[p], t)
		}
		fmt.Fprintf(w, " (%s; %d of them did not run, their package having exited or crashed before them), in %d packages; the most:\n\n| missing | package |\n|---|---|\n",
			filepath.Join(dir, "missing.txt"), res.notRun, len(byPkg))
		for _, p := range sortedByCount(byPkg)[:min(10, len(byPkg))] {
			fmt.Fprintf(w, "| %d | %s |\n", len(byPkg[p]), cell(p))
		}
		fmt.Fprintln(w)
	}
}

// sortedByCount returns m's keys, the longest lists first.
func sortedByCount(m map[string][]string) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(m[b]), len(m[a])), strings.Compare(a, b))
	})
	return keys
}

func abbreviate(l []string, n int) string {
	if len(l) <= n {
		return strings.Join(l, ", ")
	}
	return strings.Join(l[:n], ", ") + fmt.Sprintf(", … %d more", len(l)-n)
}

// cell makes s safe in a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
