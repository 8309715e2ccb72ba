package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/scenariomock/scenariomock/adminclient"
	"github.com/scenariomock/scenariomock/scenarios"
)

// checkFlags are the flags a check in a --file sets by the same names
// (without dashes); with --file they are not given on the command line.
var checkFlags = []string{"route", "session", "method", "path", "status", "header", "query", "form", "body", "state", "state-key", "idempotency", "matched", "proxied", "violating",
	"count", "at-least", "at-most", "none", "no-unmatched", "webhook", "type", "delivered", "undelivered", "attempts-at-most", "within"}

// hookKeys make a check in a --file one of webhook deliveries, as the
// flags of the same names do.
var hookKeys = []string{"webhook", "type", "delivered", "undelivered", "attempts-at-most", "within"}

// fileChecks reads the checks of a --file: a mapping with one key,
// checks, a list of mappings whose keys are name and the names of
// verify's filter and count flags. since, --since on the command line, is
// the since of a check that gives none. Every mistake is reported, each
// at its file:line:col.
func fileChecks(cmd *cobra.Command, file, since string) ([]check, error) {
	for _, name := range checkFlags {
		if cmd.Flags().Changed(name) {
			return nil, withCode(exitUsage, fmt.Errorf("--file %s and --%s: give the checks in the file, or as flags (only --since goes with --file: the since of checks that give none)", file, name))
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, withCode(exitUsage, fmt.Errorf("--file: %w", err))
	}
	checks, err := parseChecks(file, data, since)
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	return checks, nil
}

// checksParser collects the mistakes of one file.
type checksParser struct {
	file string
	errs []error
}

func (p *checksParser) errorf(n *yaml.Node, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("%s:%d:%d: %s", p.file, n.Line, n.Column, fmt.Sprintf(format, args...)))
}

func parseChecks(file string, data []byte, since string) ([]check, error) {
	p := &checksParser{file: file}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty: want checks: [{name: ..., route: ..., count: 1}, ...]", file)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d:%d: want a mapping with the key checks", file, root.Line, root.Column)
	}
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "checks" {
			p.errorf(k, "unknown key %q: the file has one key, checks", k.Value)
			continue
		}
		list = v
	}
	if list == nil {
		if len(p.errs) == 0 {
			p.errorf(root, "no checks: want checks: [{name: ..., route: ..., count: 1}, ...]")
		}
		return nil, errors.Join(p.errs...)
	}
	if list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		p.errorf(list, "checks: want a list of one check or more")
		return nil, errors.Join(p.errs...)
	}
	var checks []check
	names := map[string]*yaml.Node{}
	for i, n := range list.Content {
		c, ok := p.check(i, n, since)
		if prev, dup := names[c.name]; dup && c.name != "" {
			p.errorf(n, "checks[%d]: the name %q is the name of the check at line %d too: each names one testcase", i, c.name, prev.Line)
			continue
		}
		names[c.name] = n
		if ok {
			checks = append(checks, c)
		}
	}
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return checks, nil
}

// check reads one check, reporting its mistakes.
func (p *checksParser) check(i int, n *yaml.Node, since string) (check, bool) {
	where := fmt.Sprintf("checks[%d]", i)
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s: want a mapping such as {name: one payment, route: create payment, count: 1}", where)
		return check{}, false
	}
	var (
		name                string
		f                   adminclient.Filter
		headers, query, bod []string
		form, states        []string
		cs                  counts
		noUnmatched         bool
		filterKeys          []string // the keys given other than name and since
		hook                webhookVerify
	)
	for j := 0; j+1 < len(n.Content); j += 2 {
		if k, v := n.Content[j], n.Content[j+1]; k.Value == "name" && v.Kind == yaml.ScalarNode && v.Value != "" {
			where += fmt.Sprintf(" (%s)", v.Value)
		}
	}
	errs := len(p.errs)
	scalar := func(k, v *yaml.Node) (string, bool) {
		if v.Kind != yaml.ScalarNode || v.Value == "" {
			p.errorf(v, "%s: %s: want a value", where, k.Value)
			return "", false
		}
		return v.Value, true
	}
	list := func(k, v *yaml.Node) []string {
		if v.Kind == yaml.ScalarNode {
			s, _ := scalar(k, v)
			return []string{s}
		}
		if v.Kind != yaml.SequenceNode {
			p.errorf(v, "%s: %s: want Name=value or a list of them", where, k.Value)
			return nil
		}
		var out []string
		for _, e := range v.Content {
			if s, ok := scalar(k, e); ok {
				out = append(out, s)
			}
		}
		return out
	}
	number := func(k, v *yaml.Node) *int {
		s, ok := scalar(k, v)
		if !ok {
			return nil
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			p.errorf(v, "%s: %s: want a whole number, not %q", where, k.Value, s)
			return nil
		}
		return &n
	}
	boolean := func(k, v *yaml.Node) bool {
		s, _ := scalar(k, v)
		b, err := strconv.ParseBool(s)
		if err != nil {
			p.errorf(v, "%s: %s: want true or false, not %q", where, k.Value, s)
		}
		return b
	}
	seen := map[string]bool{}
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, v := n.Content[j], n.Content[j+1]
		if seen[k.Value] {
			p.errorf(k, "%s: %s given twice", where, k.Value)
			continue
		}
		seen[k.Value] = true
		if k.Value != "name" && k.Value != "since" {
			filterKeys = append(filterKeys, k.Value)
		}
		switch k.Value {
		case "name":
			name, _ = scalar(k, v)
		case "since":
			f.Since, _ = scalar(k, v)
		case "route":
			f.Route, _ = scalar(k, v)
		case "session":
			f.Session, _ = scalar(k, v)
		case "method":
			f.Method, _ = scalar(k, v)
		case "path":
			f.Path, _ = scalar(k, v)
		case "status":
			f.Status, _ = scalar(k, v)
		case "idempotency":
			f.Idempotency, _ = scalar(k, v)
		case "matched":
			if s, ok := scalar(k, v); ok {
				if s != "true" && s != "false" {
					p.errorf(v, "%s: matched: want true or false, not %q", where, s)
				}
				f.Matched = s
			}
		case "proxied":
			if s, ok := scalar(k, v); ok {
				if s != "true" && s != "false" {
					p.errorf(v, "%s: proxied: want true or false, not %q", where, s)
				}
				f.Proxied = s
			}
		case "violating":
			if s, ok := scalar(k, v); ok {
				if s != "true" && s != "false" {
					p.errorf(v, "%s: violating: want true or false, not %q", where, s)
				}
				f.Violating = s
			}
		case "header":
			headers = list(k, v)
		case "query":
			query = list(k, v)
		case "form":
			form = list(k, v)
		case "body":
			bod = list(k, v)
		case "state":
			states = list(k, v)
		case "state-key":
			f.StateKey, _ = scalar(k, v)
		case "count":
			cs.count = number(k, v)
		case "at-least":
			cs.atLeast = number(k, v)
		case "at-most":
			cs.atMost = number(k, v)
		case "none":
			cs.none = boolean(k, v)
		case "no-unmatched":
			noUnmatched = boolean(k, v)
		case "webhook":
			hook.endpoint, _ = scalar(k, v)
		case "type":
			hook.typ, _ = scalar(k, v)
		case "delivered":
			hook.delivered = boolean(k, v)
		case "undelivered":
			hook.undelivered = boolean(k, v)
		case "attempts-at-most":
			if n := number(k, v); n != nil {
				hook.attemptsMax = *n
			}
		case "within":
			if s, ok := scalar(k, v); ok {
				d, err := time.ParseDuration(s)
				if err != nil || d < 0 {
					p.errorf(v, "%s: within: want a duration such as 10s, not %q", where, s)
				}
				hook.within = d
			}
		default:
			p.errorf(k, "%s: unknown key %q%s; a check's keys are name, since and %s", where, k.Value, didYouMean(k.Value, append([]string{"name", "since"}, checkFlags...)), strings.Join(checkFlags, ", "))
		}
	}
	var err error
	for _, pr := range []struct {
		key  string
		vals []string
		to   *map[string]string
	}{{"header", headers, &f.Headers}, {"query", query, &f.Query}, {"form", form, &f.Form}, {"body", bod, &f.Body}, {"state", states, &f.States}} {
		if *pr.to, err = pairs(pr.key, pr.vals); err != nil {
			p.errorf(n, "%s: %v", where, err)
		}
	}
	isHook := slices.ContainsFunc(filterKeys, func(k string) bool { return slices.Contains(hookKeys, k) })
	if isHook {
		takes := append([]string{"session", "count", "at-least", "at-most", "none"}, hookKeys...)
		if extra := slices.DeleteFunc(slices.Clone(filterKeys), func(k string) bool { return slices.Contains(takes, k) }); len(extra) > 0 || seen["since"] {
			if seen["since"] {
				extra = append(extra, "since")
			}
			p.errorf(n, "%s: a webhook check (%s) takes name, session, the count keys and %s, not %s", where,
				strings.Join(slices.DeleteFunc(slices.Clone(filterKeys), func(k string) bool { return !slices.Contains(hookKeys, k) }), ", "),
				strings.Join(hookKeys, ", "), strings.Join(extra, ", "))
		}
		hook.session = f.Session
		if _, err := hook.filter(); err != nil {
			p.errorf(n, "%s: %s", where, strings.ReplaceAll(err.Error(), "--", ""))
		}
	}
	if noUnmatched {
		if extra := slices.DeleteFunc(filterKeys, func(k string) bool { return k == "no-unmatched" }); len(extra) > 0 {
			p.errorf(n, "%s: no-unmatched goes with only name and since, not %s", where, strings.Join(extra, ", "))
		}
	}
	want, _, err := cs.expect(noUnmatched)
	if err != nil {
		p.errorf(n, "%s: %s", where, strings.ReplaceAll(err.Error(), "--", ""))
	}
	if len(p.errs) > errs {
		return check{name: name}, false
	}
	if f.Since == "" {
		f.Since = since
	}
	var c check
	switch {
	case noUnmatched:
		c = unmatchedCheck(name, f.Since)
	case isHook:
		c = check{name: name, want: want, hook: &hook}
		if name == "" {
			hf, _ := hook.filter()
			c.name = describeWebhookFilter(hf, hook) + ": " + asDeliveries(want, "webhook ")
		}
	default:
		c = countCheck(name, f, want)
	}
	c.named = name != ""
	return c, true
}

// didYouMean is ` (did you mean "route"?)` for the key among known that
// key most likely misspells (as validate says it of a scenario file's
// fields), or "" when none is close.
func didYouMean(key string, known []string) string {
	if k := scenarios.Suggest(key, known); k != "" {
		return fmt.Sprintf(" (did you mean %q?)", k)
	}
	return ""
}
