package webhooks

import (
	"errors"
	"math"
	"math/rand/v2"
	"time"
)

// Negative is a delivery a receiver must refuse: its first attempt is
// spoilt as the name says, and, refused, it is retried clean.
type Negative string

const (
	// StaleTimestamp signs correctly, an hour in the past.
	StaleTimestamp Negative = "stale-timestamp"
	// BadSignature sends a signature one digit off.
	BadSignature Negative = "bad-signature"
	// WrongSecret signs with a secret that is not the endpoint's.
	WrongSecret Negative = "wrong-secret"
	// NoSignature sends no signature headers.
	NoSignature Negative = "no-signature"
)

// Negatives lists the negative faults in the order they are drawn.
var Negatives = []Negative{StaleTimestamp, BadSignature, WrongSecret, NoSignature}

// Fault is how an event's deliveries go wrong. Each rate is a probability
// from 0 to 1, drawn per delivery (event × endpoint) from the dispatcher's
// seeded source, so a run with the same seed and the same sends draws the
// same faults.
type Fault struct {
	// Duplicate sends the event twice to the endpoint, as two deliveries
	// that may run at once; each is delivered at least once.
	Duplicate float64
	// Reorder sends the event before the earlier events of its object
	// (data.object.id) that are still waiting for their first attempt.
	Reorder float64
	// DropFirst never sends the first attempt, so only a retry arrives.
	DropFirst float64
	// Delay holds the first attempt back.
	Delay Delay
	// Negative rates spoil the first attempt; at most one applies, the
	// first drawn in the order of Negatives.
	Negative map[Negative]float64
}

// Check reports what is wrong with f, if anything.
func (f *Fault) Check() error {
	var errs []error
	rate := func(name string, p float64) {
		if p < 0 || p > 1 || math.IsNaN(p) {
			errs = append(errs, errors.New(name+": want a rate from 0 to 1 (or true)"))
		}
	}
	rate("duplicate", f.Duplicate)
	rate("reorder", f.Reorder)
	rate("drop-first", f.DropFirst)
	for _, n := range Negatives {
		rate(string(n), f.Negative[n])
	}
	for n := range f.Negative {
		if !isNegative(n) {
			errs = append(errs, errors.New(string(n)+": not a negative delivery"))
		}
	}
	if err := f.Delay.Check(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func isNegative(n Negative) bool {
	for _, k := range Negatives {
		if k == n {
			return true
		}
	}
	return false
}

// Delay is an extra wait before a first attempt: Fixed, or uniform in
// [Min, Max], or log-normal with Median and Sigma, at most Max when Max
// is set.
type Delay struct {
	Fixed, Min, Max, Median time.Duration
	Sigma                   float64
}

// maxDelay bounds a drawn delay (a log-normal tail is long).
const maxDelay = 24 * time.Hour

// Check reports what is wrong with d, if anything.
func (d *Delay) Check() error {
	switch {
	case d.Fixed < 0 || d.Min < 0 || d.Max < 0 || d.Median < 0 || d.Sigma < 0:
		return errors.New("delay: must not be negative")
	case d.Max < d.Min:
		return errors.New("delay: max is below min")
	}
	return nil
}

func (d *Delay) pick(r *rand.Rand) time.Duration {
	var v time.Duration
	switch {
	case d.Fixed > 0:
		v = d.Fixed
	case d.Median > 0:
		// In float64 first: a draw past int64's range converted to a
		// negative Duration (math.MinInt64 on amd64), a delay of none.
		limit := float64(maxDelay)
		if d.Max > 0 {
			limit = min(limit, float64(d.Max))
		}
		v = duration(min(float64(d.Median)*math.Exp(d.Sigma*r.NormFloat64()), limit))
	case d.Max > 0:
		v = d.Min + time.Duration(r.Int64N(int64(d.Max-d.Min)+1))
	}
	return min(v, maxDelay)
}

// draws is what a fault drew for one delivery.
type draws struct {
	duplicate, reorder, dropFirst bool
	delay                         time.Duration
	negative                      Negative
}

func (f *Fault) draw(r *rand.Rand) draws {
	var d draws
	if f == nil {
		return d
	}
	hit := func(p float64) bool { return p > 0 && (p >= 1 || r.Float64() < p) }
	d.duplicate = hit(f.Duplicate)
	d.reorder = hit(f.Reorder)
	d.dropFirst = hit(f.DropFirst)
	d.delay = f.Delay.pick(r)
	for _, n := range Negatives {
		if hit(f.Negative[n]) && d.negative == "" {
			d.negative = n
		}
	}
	return d
}
