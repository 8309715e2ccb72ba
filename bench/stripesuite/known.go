package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// compareKnown splits the tests missing against the baseline into those a
// list of known gaps (one "package Test" a line, as missing.txt writes
// them) does not have, the regressions, and the known ones that pass
// now, whose lines can go. It prints both to w.
func compareKnown(path string, missing []string, w io.Writer) (regressions []string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			known[t] = true
		}
	}
	var fixed []string
	for _, t := range missing {
		if !known[t] {
			regressions = append(regressions, t)
		}
		delete(known, t)
	}
	for t := range known {
		fixed = append(fixed, t)
	}
	slices.Sort(fixed)
	fmt.Fprintf(w, "known gaps (%s): %d missing tests are not in it (regressions), %d of it pass now\n", path, len(regressions), len(fixed))
	for _, t := range regressions {
		fmt.Fprintf(w, "  regression: %s\n", t)
	}
	for _, t := range fixed {
		fmt.Fprintf(w, "  passes now, remove from the list: %s\n", t)
	}
	return regressions, nil
}
