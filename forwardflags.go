package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/webhooks"
)

// forwardOptions are serve's flags that send every event to one more
// webhook endpoint without editing a file, as `stripe listen --forward-to`
// sends a Stripe account's events to a local receiver.
type forwardOptions struct {
	url     string // --forward-to
	secret  string // --forward-secret
	signing string // --forward-signing
	version string // --forward-api-version
}

// forwardEndpoint is the name of the endpoint --forward-to adds, for
// verify --webhook and GET /__admin/webhooks?endpoint=.
const forwardEndpoint = "forward-to"

// defaultForwardSecret signs --forward-to's deliveries unless
// --forward-secret says otherwise: fixed, so that a receiver's
// configuration (STRIPE_WEBHOOK_SECRET=…) outlives a restart of the mock,
// and base64 after whsec_, so that Standard Webhooks takes it too. It
// is printed at start, as stripe listen prints its secret.
const defaultForwardSecret = "whsec_c2NlbmFyaW9tb2NrLWZvcndhcmQtdG8tc2VjcmV0"

var forwardSignings = []string{"stripe", "standard", "none"}

func (o *forwardOptions) flags(f *pflag.FlagSet) {
	f.StringVar(&o.url, "forward-to", "", "send every event the routes make to this URL too, as stripe listen --forward-to does (a webhook endpoint named "+forwardEndpoint+", retried and faulted as the file's endpoints are), beside the files' webhooks: endpoints")
	f.StringVar(&o.secret, "forward-secret", defaultForwardSecret, "the secret that signs --forward-to's deliveries (printed at start)")
	f.StringVar(&o.signing, "forward-signing", "stripe", "how --forward-to's deliveries are signed: stripe (Stripe-Signature), standard (Standard Webhooks) or none")
	f.StringVar(&o.version, "forward-api-version", "", "the api_version of --forward-to's events (default "+webhooks.DefaultAPIVersion+", which stripe-go v85's ConstructEvent expects; give the one your stripe-go's stripe.APIVersion says)")
}

func (o *forwardOptions) check() error {
	if o.url == "" {
		return nil
	}
	if !slices.Contains(forwardSignings, o.signing) {
		return fmt.Errorf("--forward-signing %q: want stripe, standard or none", o.signing)
	}
	// The endpoint is checked as a file's endpoint is (an http or https
	// URL with a host, a query allowed, as a receiver's URL may have one;
	// a standard secret is whsec_ and base64), once, here: every load
	// lays the same one. Each problem names its flag, not a position in
	// the document the flags make.
	_, err := o.document()
	var errs []error
	for _, p := range scenarios.Problems(err) {
		field, msg, ok := strings.Cut(strings.TrimPrefix(p.Msg, "webhooks.endpoints[0]."), ": ")
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("--forward-to %q: %s", o.url, p.Msg))
		case field == "url":
			errs = append(errs, fmt.Errorf("--forward-to %q: want the receiver's http:// or https:// URL: %s", o.url, msg))
		case field == "secret":
			errs = append(errs, fmt.Errorf("--forward-secret: %s", msg))
		case field == "apiVersion":
			errs = append(errs, fmt.Errorf("--forward-api-version %q: %s", o.version, msg))
		default:
			errs = append(errs, fmt.Errorf("--forward-to: %s: %s", field, msg))
		}
	}
	return errors.Join(errs...)
}

// document is the endpoint as a runtime document of its own, parsed as a
// file's webhooks: block is, so that it takes every check and default of
// one. The values are JSON strings, which YAML reads as they are.
func (o *forwardOptions) document() (*scenarios.Set, error) {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	e := "{name: " + q(forwardEndpoint) + ", url: " + q(o.url) + ", signing: " + q(o.signing)
	if o.signing != "none" {
		e += ", secret: " + q(o.secret)
	}
	if o.version != "" {
		e += ", apiVersion: " + q(o.version)
	}
	return scenarios.LoadDocument("--forward-to", []byte("webhooks: { endpoints: ["+e+"}] }\n"))
}

// wrap returns load with the --forward-to endpoint laid on every set it
// loads. The set keeps the files' hash: the endpoint is the same on every
// load, and an unchanged file still costs a hash, not a parse.
func (o *forwardOptions) wrap(load func() (*scenarios.Set, error)) func() (*scenarios.Set, error) {
	if o.url == "" {
		return load
	}
	return func() (*scenarios.Set, error) {
		set, err := load()
		if err != nil {
			return nil, err
		}
		doc, err := o.document()
		if err != nil {
			return nil, err
		}
		out, err := scenarios.Overlay(set, []*scenarios.Set{doc})
		if err != nil {
			return nil, err
		}
		out.Hash = set.Hash
		return out, nil
	}
}

// log says where events go and with which secret, as stripe listen
// says "Your webhook signing secret is whsec_…".
func (o *forwardOptions) log(log *slog.Logger) {
	if o.url == "" {
		return
	}
	if o.signing == "none" {
		log.Info("events forwarded, unsigned", "url", o.url, "endpoint", forwardEndpoint)
		return
	}
	log.Info("events forwarded", "url", o.url, "endpoint", forwardEndpoint, "signing", o.signing, "secret", o.secret)
}
