package webhooks

import (
	"errors"
	"fmt"
	"time"
)

// Target is an endpoint that no configuration names, found when an event
// is sent: an endpoint object that a route stored (Stripe's POST
// /v1/webhook_endpoints makes one). Its deliveries carry it, so that
// whichever replica claims one, from a shared outbox, can make the
// attempt without the object; what the endpoints of its Source share
// (signing, retry, time scale, API version) is read from the Source.
type Target struct {
	// Name names it in the attempt log, the admin API's ?endpoint= and
	// verify --webhook: the stored object's id.
	Name    string   `json:"name"`
	URL     string   `json:"url"`
	Secrets []string `json:"secrets,omitempty"`
	// Source names the Source it was found in.
	Source string `json:"source"`
}

// Source is where targets are found (a collection of endpoint objects),
// with what their deliveries share. Dispatcher.SetSources configures
// them; a delivery whose Source is gone (a reload removed it) fails, as
// one whose endpoint is gone does.
type Source struct {
	Name       string
	Signing    Signing
	Retry      Retry
	TimeScale  float64
	APIVersion string
}

// Check reports what is wrong with t, found in src, if anything: its URL
// and secrets are checked as a configured endpoint's are.
func (t *Target) Check(src *Source) error {
	ep := t.endpoint(src)
	return ep.Check()
}

// endpoint is the endpoint t is, with src's settings.
func (t *Target) endpoint(src *Source) Endpoint {
	return Endpoint{
		Name: t.Name, URL: t.URL, Signing: src.Signing, Secrets: t.Secrets,
		Retry: src.Retry, TimeScale: src.TimeScale, APIVersion: src.APIVersion,
	}
}

// SetSources replaces the sources that targets are found in. A source's
// retry policy defaults as an endpoint's does.
func (d *Dispatcher) SetSources(srcs []Source) error {
	var errs []error
	next := make(map[string]*Source, len(srcs))
	for i := range srcs {
		src := srcs[i]
		if src.Name == "" {
			errs = append(errs, errors.New("webhook endpoint source: name: is required"))
			continue
		}
		if _, dup := next[src.Name]; dup {
			errs = append(errs, fmt.Errorf("webhook endpoint source %q: defined twice", src.Name))
			continue
		}
		switch src.Signing {
		case Stripe, Standard, None:
		case "":
			src.Signing = Stripe
		default:
			errs = append(errs, fmt.Errorf("webhook endpoint source %q: signing: want stripe, standard or none, got %q", src.Name, src.Signing))
		}
		src.Retry = src.Retry.withDefaults()
		next[src.Name] = &src
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sources = next
	d.signal()
	return nil
}

// Source returns the source named name, with its defaults, if it is
// configured.
func (d *Dispatcher) Source(name string) (Source, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	src, ok := d.sources[name]
	if !ok {
		return Source{}, false
	}
	return *src, true
}

// SendTo is Send that queues ev for targets too, after the same wait
// and with the same faults drawn for each: to names configured endpoints
// as Send's does (empty: every one), and targets are found at send time.
// A target whose Source is not configured, or that Check refuses, is an
// error, and the others get the event. The event's pending_webhooks
// counts both.
func (d *Dispatcher) SendTo(ev *Event, to []string, targets []Target, after time.Duration, f *Fault) error {
	_, err := d.send(ev, to, len(to) == 0, targets, after, f)
	return err
}
