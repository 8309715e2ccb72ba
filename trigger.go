package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/scenariomock/scenariomock/adminclient"
)

// triggerOptions are trigger's flags.
type triggerOptions struct {
	admin     adminFlags // the server's address, token and TLS (no filters)
	object    string
	previous  string
	endpoints []string
	headers   []string
}

func newTriggerCmd(stdout io.Writer) *cobra.Command {
	var opts triggerOptions
	cmd := &cobra.Command{
		Use:   "trigger TYPE [--object JSON] [--endpoint NAME]",
		Short: "Send a webhook event that no route made to a running server's endpoints, as stripe trigger does",
		Long: `Trigger asks a running server to send an event of TYPE to its webhook
endpoints (the files' webhooks: endpoints and --forward-to), signed and
delivered as a route's events are, and kept in its events collection
(POST /__admin/webhooks/events). Its data.object is --object, laid over the
fixture of the object TYPE is about when the served OpenAPI document has
one (Stripe's: invoice.payment_failed is about an invoice,
customer.subscription.trial_will_end about a subscription), so that a
receiver rehearses a provider's flow the scenarios do not play. It prints
the event as kept.`,
		Example: `  scenariomock trigger charge.dispute.created
  scenariomock trigger invoice.payment_failed --object '{"id": "in_1", "customer": "cus_1"}' --header "Authorization=Bearer sk_test_123"
  scenariomock trigger customer.updated --object '{"id": "cus_1", "email": "b@example.com"}' --previous '{"email": "a@example.com"}' --endpoint shop`,
		Args: cobra.ExactArgs(1),
		RunE: failing(func(cmd *cobra.Command, args []string) error {
			return runTrigger(cmd.Context(), args[0], opts, stdout)
		}),
	}
	f := cmd.Flags()
	opts.admin.registerServer(f)
	f.StringVar(&opts.object, "object", "", "data.object, a JSON object (laid over the served document's fixture of the object, when there is one)")
	f.StringVar(&opts.previous, "previous", "", "data.previous_attributes, a JSON object")
	f.StringArrayVar(&opts.endpoints, "endpoint", nil, "send to this endpoint only (repeatable; default every endpoint)")
	f.StringArrayVar(&opts.headers, "header", nil, "a header of the request the event is kept as made by, as Name=value (repeatable): Authorization=Bearer sk_test_… keeps it in that key's GET /v1/events, X-Scenariomock-Session=NAME gives its deliveries that session")
	return cmd
}

func runTrigger(ctx context.Context, typ string, opts triggerOptions, stdout io.Writer) error {
	ev := adminclient.Event{Type: typ, Endpoints: opts.endpoints}
	for flag, p := range map[string]struct {
		text string
		raw  *json.RawMessage
	}{"--object": {opts.object, &ev.Object}, "--previous": {opts.previous, &ev.PreviousAttributes}} {
		if p.text == "" {
			continue
		}
		if !json.Valid([]byte(p.text)) || !bytes.HasPrefix(bytes.TrimSpace([]byte(p.text)), []byte("{")) {
			return withCode(exitUsage, fmt.Errorf("%s %q: want a JSON object", flag, p.text))
		}
		*p.raw = json.RawMessage(p.text)
	}
	var err error
	if ev.Headers, err = pairs("--header", opts.headers); err != nil {
		return withCode(exitUsage, err)
	}
	if opts.admin.timeout <= 0 {
		return withCode(exitUsage, fmt.Errorf("--timeout %s: want a positive duration", opts.admin.timeout))
	}
	client, err := opts.admin.client()
	if err != nil {
		return withCode(exitUsage, err)
	}
	ctx, cancel := context.WithTimeout(ctx, opts.admin.timeout)
	defer cancel()
	sent, err := client.SendEvent(ctx, ev)
	if err != nil {
		return adminError(err, opts.admin.timeout)
	}
	var out bytes.Buffer
	if json.Indent(&out, sent.Event, "", "  ") != nil {
		out.Write(sent.Event)
	}
	out.WriteByte('\n')
	_, err = stdout.Write(out.Bytes())
	return err
}
