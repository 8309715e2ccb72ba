package webhooks

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Signing is how an endpoint's deliveries are signed.
type Signing string

const (
	// Stripe signs with Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256 of
	// "t.body">, one v1 per secret (rotation).
	Stripe Signing = "stripe"
	// Standard signs as Standard Webhooks v1: webhook-id, webhook-timestamp
	// and webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">
	// with the secret's base64 key after whsec_.
	Standard Signing = "standard"
	// None sends no signature.
	None Signing = "none"
)

// Retry is an endpoint's retry policy: Schedule holds the waits before the
// attempts after the first (so len(Schedule)+1 attempts in all), Timeout
// bounds one attempt. A nil Schedule is DefaultRetry's (an empty one is no
// retry), and a zero Timeout DefaultRetry's.
type Retry struct {
	Schedule []time.Duration
	Timeout  time.Duration
}

// withDefaults is r with DefaultRetry's schedule if r has none (nil), and
// its timeout if r's is zero: each left out of a retry: block is the
// default, so that retry: { timeout: 30s } keeps the default retries.
func (r Retry) withDefaults() Retry {
	if r.Schedule == nil {
		r.Schedule = DefaultRetry.Schedule
	}
	if r.Timeout == 0 {
		r.Timeout = DefaultRetry.Timeout
	}
	return r
}

// DefaultRetry is the policy of an endpoint that names none.
var DefaultRetry = Retry{
	Schedule: []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour},
	Timeout:  10 * time.Second,
}

// Endpoint is one receiver that events go to.
type Endpoint struct {
	Name    string
	URL     string
	Signing Signing
	// Secrets sign every delivery, the first being the current one; more
	// than one is a rotation (several v1 signatures).
	Secrets []string
	Retry   Retry
	// TimeScale multiplies the endpoint's waits (after, delay, schedule,
	// Retry-After); 0 means the dispatcher's. Signed timestamps stay real.
	TimeScale float64
	// APIVersion is the events' api_version; empty means DefaultAPIVersion.
	APIVersion string
}

// Check reports what is wrong with e, if anything.
func (e *Endpoint) Check() error {
	var errs []error
	if e.Name == "" {
		errs = append(errs, errors.New("name: is required"))
	}
	u, err := url.Parse(e.URL)
	switch {
	case e.URL == "":
		errs = append(errs, errors.New("url: is required"))
	case err != nil:
		errs = append(errs, fmt.Errorf("url: %v", err))
	case u.Scheme != "http" && u.Scheme != "https":
		errs = append(errs, fmt.Errorf("url: want an http or https URL, got scheme %q", u.Scheme))
	case u.Host == "":
		errs = append(errs, errors.New("url: has no host"))
	}
	switch e.Signing {
	case Stripe, Standard:
		if len(e.Secrets) == 0 {
			errs = append(errs, fmt.Errorf("secret: is required for signing %s", e.Signing))
		}
		for _, s := range e.Secrets {
			if s == "" {
				errs = append(errs, errors.New("secret: must not be empty"))
			} else if e.Signing == Standard {
				if _, err := standardKey(s); err != nil {
					errs = append(errs, fmt.Errorf("secret: %v", err))
				}
			}
		}
	case None, "":
	default:
		errs = append(errs, fmt.Errorf("signing: want stripe, standard or none, got %q", e.Signing))
	}
	for _, d := range e.Retry.Schedule {
		if d < 0 {
			errs = append(errs, errors.New("retry.schedule: a wait must not be negative"))
			break
		}
	}
	if e.Retry.Timeout < 0 {
		errs = append(errs, errors.New("retry.timeout: must not be negative"))
	}
	if e.TimeScale < 0 {
		errs = append(errs, errors.New("timeScale: must not be negative"))
	}
	return errors.Join(errs...)
}

// standardKey decodes a Standard Webhooks secret: base64 after whsec_.
func standardKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return nil, errors.New(`a standard secret starts with "whsec_" and holds base64 (e.g. whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw)`)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("the part after whsec_ is not base64: %v", err)
	}
	if len(key) == 0 {
		return nil, errors.New("the key after whsec_ is empty")
	}
	return key, nil
}
