package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/scenariomock/scenariomock/adminclient"
)

// verifyOptions are verify's own flags: what the count must be.
type verifyOptions struct {
	admin       adminFlags
	count       int
	atLeast     int
	atMost      int
	none        bool
	noUnmatched bool
	webhooks    webhookVerify
}

// shown is how many matching requests a failed verify lists.
const shown = 50

func newVerifyCmd(stdout, stderr io.Writer) *cobra.Command {
	var opts verifyOptions
	cmd := &cobra.Command{
		Use:   "verify [filter flags] [--count N | --at-least N | --at-most N | --none] [--no-unmatched]",
		Short: "Check what a running server received: exit 0, or print what was expected and found and exit 1",
		Long: `Verify asks a running server's request journal how many requests match the
filters, and exits 0 when the count is as expected (at least one, unless
--count, --at-least, --at-most or --none say otherwise). Otherwise it prints
what was expected, what was found, the matching requests and, when too few
matched, the newest requests received, and exits 1.

--no-unmatched fails when any request matched no route, listing each with
its near-miss report. It looks at every request (since --since, if given),
whatever the other filters say; with no count flag it is the only check.

Exit codes: 0 as expected; 1 not as expected (or another failure); 2 usage,
a filter the server refused, or a missing or wrong --admin-token; 4 no
server answered at --addr within --timeout.`,
		Example: `  scenariomock verify --route "create payment" --status 201 --count 1
  scenariomock verify --path '/v1/payments/*' --method POST --at-least 2
  scenariomock verify --route "create payment" --idempotency replayed --count 1
  scenariomock verify --header Idempotency-Key=k1 --body amount=9800 --none
  scenariomock verify --no-unmatched
  scenariomock verify --webhook shop --type payment_intent.succeeded --delivered --attempts-at-most 3 --within 10s
  scenariomock verify --webhook shop --undelivered --none`,
		Args: cobra.NoArgs,
		RunE: failing(func(cmd *cobra.Command, _ []string) error {
			return runVerify(cmd.Context(), cmd, opts, stdout, stderr)
		}),
	}
	opts.admin.register(cmd.Flags())
	f := cmd.Flags()
	f.IntVar(&opts.count, "count", 0, "exactly this many requests match")
	f.IntVar(&opts.atLeast, "at-least", 0, "at least this many requests match (default 1 when no count flag is given)")
	f.IntVar(&opts.atMost, "at-most", 0, "at most this many requests match")
	f.BoolVar(&opts.none, "none", false, "no request matches (--count 0)")
	f.BoolVar(&opts.noUnmatched, "no-unmatched", false, "fail when any request (since --since) matched no route, listing each with its near-miss report")
	opts.webhooks.register(f)
	_ = cmd.RegisterFlagCompletionFunc("route", completeRoutes(&opts.admin))
	return cmd
}

// expectation is a range of counts: min ≤ count ≤ max (max < 0: no bound).
type expectation struct{ min, max int }

func (e expectation) holds(n int) bool { return n >= e.min && (e.max < 0 || n <= e.max) }

func (e expectation) String() string {
	switch {
	case e.min == e.max:
		return fmt.Sprintf("exactly %d %s", e.min, plural(e.min, "request"))
	case e.max < 0:
		return fmt.Sprintf("at least %d %s", e.min, plural(e.min, "request"))
	case e.min == 0:
		return fmt.Sprintf("at most %d %s", e.max, plural(e.max, "request"))
	}
	return fmt.Sprintf("from %d to %d requests", e.min, e.max)
}

// expect reads the count flags. ok is false when none was given and
// --no-unmatched is the only check.
func (o verifyOptions) expect(cmd *cobra.Command) (e expectation, ok bool, err error) {
	changed := cmd.Flags().Changed
	count, atLeast, atMost := changed("count"), changed("at-least"), changed("at-most")
	for name, n := range map[string]int{"count": o.count, "at-least": o.atLeast, "at-most": o.atMost} {
		if changed(name) && n < 0 {
			return e, false, fmt.Errorf("--%s %d: want 0 or more", name, n)
		}
	}
	switch {
	case o.none && (count || atLeast || atMost):
		return e, false, errors.New("--none goes with no other count flag")
	case count && (atLeast || atMost):
		return e, false, errors.New("--count goes with neither --at-least nor --at-most")
	case o.none:
		return expectation{0, 0}, true, nil
	case count:
		return expectation{o.count, o.count}, true, nil
	case atLeast && atMost && o.atLeast > o.atMost:
		return e, false, fmt.Errorf("--at-least %d is more than --at-most %d", o.atLeast, o.atMost)
	case atLeast || atMost:
		e = expectation{o.atLeast, -1}
		if atMost {
			e.max = o.atMost
		}
		return e, true, nil
	case o.noUnmatched:
		return e, false, nil
	}
	return expectation{1, -1}, true, nil
}

func runVerify(ctx context.Context, cmd *cobra.Command, opts verifyOptions, stdout, stderr io.Writer) error {
	want, counting, err := opts.expect(cmd)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if opts.noUnmatched && opts.admin.filter.Matched != "" {
		return withCode(exitUsage, errors.New("--no-unmatched goes without --matched"))
	}
	client, filter, err := opts.admin.build()
	if err != nil {
		return err
	}
	hooks := opts.webhooks.on(cmd.Flags().Changed)
	if hooks {
		if _, err := opts.webhooks.filter(); err != nil {
			return withCode(exitUsage, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.admin.timeout+opts.webhooks.within)
	defer cancel()
	failed := false
	if hooks {
		ok, err := verifyWebhooks(ctx, client, opts.webhooks, want, stdout, stderr)
		if err != nil {
			return adminError(err, opts.admin.timeout)
		}
		if !ok {
			return errReported
		}
		return nil
	}
	if counting {
		ok, err := verifyCount(ctx, client, filter, want, stdout, stderr)
		if err != nil {
			return adminError(err, opts.admin.timeout)
		}
		failed = !ok
	}
	if opts.noUnmatched {
		ok, err := verifyNoUnmatched(ctx, client, adminclient.Filter{Since: filter.Since}, stdout, stderr)
		if err != nil {
			return adminError(err, opts.admin.timeout)
		}
		failed = failed || !ok
	}
	if failed {
		return errReported
	}
	return nil
}

func describeFilter(f adminclient.Filter) string {
	if s := f.String(); s != "" {
		return s
	}
	return "(none: every request)"
}

func verifyCount(ctx context.Context, c *adminclient.Client, f adminclient.Filter, want expectation, stdout, stderr io.Writer) (bool, error) {
	f.Limit = shown
	entries, total, err := c.Requests(ctx, f)
	if err != nil {
		return false, err
	}
	if want.holds(total) {
		fmt.Fprintf(stdout, "ok: %d %s matched, want %s; filters: %s\n", total, plural(total, "request"), want, describeFilter(f))
		return true, nil
	}
	fmt.Fprintf(stderr, "verify failed: want %s, found %d\n", want, total)
	fmt.Fprintf(stderr, "filters: %s\n", describeFilter(f))
	if total == 0 {
		fmt.Fprintln(stderr, "matching requests: none")
	} else {
		fmt.Fprintf(stderr, "matching requests (%d", total)
		if total > len(entries) {
			fmt.Fprintf(stderr, ", the newest %d shown", len(entries))
		}
		fmt.Fprintln(stderr, "):")
		printEntries(stderr, entries)
	}
	if total < want.min {
		// Too few: what did arrive says why (a typo in a path, the wrong
		// status, a request that never came).
		recent, all, err := c.Requests(ctx, adminclient.Filter{Limit: 10})
		if err != nil {
			return false, err
		}
		if all == 0 {
			fmt.Fprintln(stderr, "the journal is empty: no request reached the server since it started (or since the last reset or clear)")
		} else {
			fmt.Fprintf(stderr, "the newest requests received, of %d (any):\n", all)
			printEntries(stderr, recent)
			printNearMisses(stderr, recent)
		}
	}
	return false, nil
}

// verifyNoUnmatched checks that no request selected by f matched no
// route. The caller passes only --since: a route, status or idempotency
// filter would select matched requests alone, and so pass always.
func verifyNoUnmatched(ctx context.Context, c *adminclient.Client, f adminclient.Filter, stdout, stderr io.Writer) (bool, error) {
	f.Matched = "false"
	f.Limit = shown
	entries, total, err := c.Requests(ctx, f)
	if err != nil {
		return false, err
	}
	if total == 0 {
		fmt.Fprintln(stdout, "ok: every request matched a route")
		return true, nil
	}
	fmt.Fprintf(stderr, "verify failed: %d %s matched no route, want none\n", total, plural(total, "request"))
	if total > len(entries) {
		fmt.Fprintf(stderr, "the newest %d:\n", len(entries))
	}
	printEntries(stderr, entries)
	fmt.Fprintln(stderr, "near misses:")
	printNearMisses(stderr, entries)
	return false, nil
}
