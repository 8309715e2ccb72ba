package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/scenariomock/scenariomock/adminclient"
	"github.com/scenariomock/scenariomock/webhooks"
)

// webhookVerify are verify's flags that check webhook deliveries instead
// of requests.
type webhookVerify struct {
	endpoint    string
	typ         string
	delivered   bool
	undelivered bool
	attemptsMax int
	within      time.Duration
	session     string // --session, shared with the request checks
}

func (v *webhookVerify) register(f *pflag.FlagSet) {
	f.StringVar(&v.endpoint, "webhook", "", "check webhook deliveries to this endpoint instead of requests (the count flags count deliveries: one per event and endpoint)")
	f.StringVar(&v.typ, "type", "", "webhook deliveries of events of this type")
	f.BoolVar(&v.delivered, "delivered", false, "webhook deliveries the receiver accepted (2xx)")
	f.BoolVar(&v.undelivered, "undelivered", false, "webhook deliveries not accepted yet or ever (pending, failed, disabled; not a failed one whose event a redelivery got accepted)")
	f.IntVar(&v.attemptsMax, "attempts-at-most", 0, "and each matching webhook delivery took at most this many attempts")
	f.DurationVar(&v.within, "within", 0, "keep asking for this long until the webhook check holds (deliveries are asynchronous)")
}

// on reports whether the webhook flags were given.
func (v *webhookVerify) on(changed func(string) bool) bool {
	for _, n := range []string{"webhook", "type", "delivered", "undelivered", "attempts-at-most"} {
		if changed(n) {
			return true
		}
	}
	return false
}

func (v *webhookVerify) filter() (adminclient.WebhookFilter, error) {
	f := adminclient.WebhookFilter{Endpoint: v.endpoint, Type: v.typ, Session: v.session}
	switch {
	case v.delivered && v.undelivered:
		return f, errors.New("--delivered and --undelivered exclude each other")
	case v.delivered:
		f.Outcome = "delivered"
	case v.undelivered:
		f.Outcome = "undelivered"
	}
	if v.attemptsMax < 0 {
		return f, fmt.Errorf("--attempts-at-most %d: want 1 or more", v.attemptsMax)
	}
	return f, nil
}

// verifyWebhooks checks the deliveries f selects against want, and their
// attempts against --attempts-at-most, asking again until --within ends.
func verifyWebhooks(ctx context.Context, c *adminclient.Client, v webhookVerify, want expectation, stdout, stderr io.Writer) (ok bool, found int, err error) {
	f, err := v.filter()
	if err != nil {
		return false, 0, err
	}
	deadline := time.Now().Add(v.within)
	for {
		list, err := c.Webhooks(ctx, f)
		if err != nil {
			return false, 0, err
		}
		n := len(list.Deliveries)
		var over []string
		if v.attemptsMax > 0 {
			for _, d := range list.Deliveries {
				if d.Attempts > v.attemptsMax {
					over = append(over, fmt.Sprintf("%s %s to %s: %d attempts", d.EventID, d.Type, d.Endpoint, d.Attempts))
				}
			}
		}
		if want.holds(n) && len(over) == 0 {
			fmt.Fprintf(stdout, "ok: %d webhook %s matched, want %s; filters: %s\n", n, deliveries(n), asDeliveries(want, ""), describeWebhookFilter(f, v))
			return true, n, nil
		}
		if time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return false, n, ctx.Err()
			case <-time.After(50 * time.Millisecond):
				continue
			}
		}
		fmt.Fprintf(stderr, "verify failed: want %s, found %d", asDeliveries(want, "webhook "), n)
		if len(over) > 0 {
			fmt.Fprintf(stderr, ", %d with more than %d attempts", len(over), v.attemptsMax)
		}
		fmt.Fprintf(stderr, "\nfilters: %s\n", describeWebhookFilter(f, v))
		for _, o := range over {
			fmt.Fprintln(stderr, "  "+o)
		}
		fmt.Fprintf(stderr, "deliveries (%d):\n", n)
		printDeliveries(stderr, list.Deliveries)
		if n < want.min && f.Outcome != "" {
			// Too few delivered (or undelivered): what became of the
			// others is what the person wants to know, as verify of
			// requests shows the newest received.
			others := f
			others.Outcome = ""
			if all, err := c.Webhooks(ctx, others); err == nil && len(all.Deliveries) > 0 {
				ds := all.Deliveries
				fmt.Fprintf(stderr, "without outcome=%q, %d %s matched", f.Outcome, len(ds), deliveries(len(ds)))
				if len(ds) > newestShown {
					fmt.Fprintf(stderr, ", the newest %d", newestShown)
					ds = ds[len(ds)-newestShown:]
				}
				fmt.Fprintln(stderr, ":")
				printDeliveries(stderr, ds)
			}
		}
		if len(list.Endpoints) == 0 {
			fmt.Fprintln(stderr, "the server has no webhook endpoints (a file's webhooks: block)")
		}
		return false, n, nil
	}
}

// newestShown is how many deliveries of any outcome a failed check lists.
const newestShown = 10

// printDeliveries writes ds, one a line, with each one's last status and
// error.
func printDeliveries(w io.Writer, ds []webhooks.Delivery) {
	for _, d := range ds {
		fmt.Fprintf(w, "  %s %-28s %-10s %-9s attempts=%d status=%d %s\n", d.EventID, d.Type, d.Endpoint, d.State, d.Attempts, d.LastStatus, d.LastError)
	}
}

func describeWebhookFilter(f adminclient.WebhookFilter, v webhookVerify) string {
	var parts []string
	for _, p := range [][2]string{{"webhook", f.Endpoint}, {"session", f.Session}, {"type", f.Type}, {"outcome", f.Outcome}} {
		if p[1] != "" {
			parts = append(parts, p[0]+"="+fmt.Sprintf("%q", p[1]))
		}
	}
	if v.attemptsMax > 0 {
		parts = append(parts, fmt.Sprintf("attempts<=%d", v.attemptsMax))
	}
	if len(parts) == 0 {
		return "(none: every delivery)"
	}
	return strings.Join(parts, " ")
}

func deliveries(n int) string {
	if n == 1 {
		return "delivery"
	}
	return "deliveries"
}

// asDeliveries says want of deliveries rather than requests.
func asDeliveries(want expectation, prefix string) string {
	s := strings.ReplaceAll(want.String(), "requests", prefix+"deliveries")
	return strings.ReplaceAll(s, "request", prefix+"delivery")
}
