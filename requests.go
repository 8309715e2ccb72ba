package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/scenariomock/scenariomock/adminclient"
	"github.com/scenariomock/scenariomock/state"
)

type requestsOptions struct {
	admin  adminFlags
	limit  int
	json   bool
	follow bool
}

func newRequestsCmd(stdout, stderr io.Writer) *cobra.Command {
	var opts requestsOptions
	cmd := &cobra.Command{
		Use:   "requests [filter flags] [--json] [--follow]",
		Short: "Print the requests a running server received (its journal), oldest first; --follow tails it",
		Long: `Requests prints the journal of a running server: each request kept (the
newest 10,000 by default) with its time, method, path, status, the route
that answered or "(no route)", its idempotency outcome and how long it took.
The filter flags are verify's. --json writes one JSON object a line, as
GET /__admin/requests has them (headers and body included). --follow then
goes on printing each request as it is recorded, until Ctrl-C.`,
		Example: `  scenariomock requests
  scenariomock requests --matched=false
  scenariomock requests --route "create payment" --json | jq .body
  scenariomock requests --follow --path '/v1/**'`,
		Args: cobra.NoArgs,
		RunE: failing(func(cmd *cobra.Command, _ []string) error {
			return runRequests(cmd.Context(), opts, stdout, stderr)
		}),
	}
	opts.admin.register(cmd.Flags())
	f := cmd.Flags()
	f.IntVar(&opts.limit, "limit", 1000, "the newest this many requests that match (at most 10000)")
	f.BoolVar(&opts.json, "json", false, "one JSON object a line, headers and body included")
	f.BoolVar(&opts.follow, "follow", false, "go on printing requests as they arrive, until interrupted")
	_ = cmd.RegisterFlagCompletionFunc("route", completeRoutes(&opts.admin))
	registerCompletions(cmd, map[string][]cobra.Completion{"idempotency": idemOutcomes, "matched": matchedValues})
	return cmd
}

func runRequests(ctx context.Context, opts requestsOptions, stdout, stderr io.Writer) error {
	if opts.limit < 1 || opts.limit > 10000 {
		return withCode(exitUsage, fmt.Errorf("--limit %d: want 1 to 10000", opts.limit))
	}
	client, filter, err := opts.admin.build()
	if err != nil {
		return err
	}
	filter.Limit = opts.limit
	lctx, cancel := context.WithTimeout(ctx, opts.admin.timeout)
	entries, total, err := client.Requests(lctx, filter)
	cancel()
	if err != nil {
		return adminError(err, opts.admin.timeout)
	}
	var table *followTable // --follow without --json
	switch {
	case opts.json:
		for _, e := range entries {
			if err := printEntryJSON(stdout, e); err != nil {
				return err
			}
		}
	case opts.follow:
		table = newFollowTable(stdout, entries)
		table.row(entryHeader)
		for _, e := range entries {
			table.row(entryRow(e))
		}
	default:
		printEntries(stdout, entries)
	}
	if total > len(entries) {
		fmt.Fprintf(stderr, "the newest %d of %d matching requests; --limit for more\n", len(entries), total)
	}
	if !opts.follow {
		return nil
	}
	// Go on from the newest entry listed: an entry recorded since the
	// listing is replayed by the stream, and none is printed twice.
	var after int64
	if len(entries) > 0 {
		after = entries[len(entries)-1].ID
	}
	err = client.Stream(ctx, filter, after, func(e state.Entry) error {
		if opts.json {
			return printEntryJSON(stdout, e)
		}
		table.row(entryRow(e))
		return nil
	})
	if errors.Is(err, adminclient.ErrStreamEnded) {
		fmt.Fprintln(stderr, "scenariomock: the server ended the stream (it shut down)")
		return nil
	}
	return adminError(err, opts.admin.timeout)
}
