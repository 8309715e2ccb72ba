package loghandler

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestCachedTimeFormat holds the cached second formatting to what
// time.AppendFormat writes: random instants over the years RFC 3339 can
// write and beyond, in UTC, fixed zones and a zone with summer time
// (each second formatted cold and again warm, so both paths run), and
// the seconds around a daylight saving change.
func TestCachedTimeFormat(t *testing.T) {
	textRef := func(t time.Time) string {
		const prefixLen = len("2006-01-02T15:04:05.000")
		b := t.Truncate(time.Millisecond).Add(time.Millisecond/10).AppendFormat(nil, time.RFC3339Nano)
		return string(append(b[:prefixLen], b[prefixLen+1:]...))
	}
	check := func(at time.Time) {
		t.Helper()
		for i := 0; i < 2; i++ {
			if got, want := string(appendTextTime(nil, at)), textRef(at); got != want {
				t.Fatalf("text %v: %q, want %q", at, got, want)
			}
			if got, want := string(appendNanoTime(nil, at)), at.Format(time.RFC3339Nano); got != want {
				t.Fatalf("json %v: %q, want %q", at, got, want)
			}
		}
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		berlin = time.FixedZone("CET", 3600) // no tzdata on this machine
	}
	locs := []*time.Location{time.UTC, time.Local, berlin, time.FixedZone("", 9*3600), time.FixedZone("", -(3*3600 + 30*60)), time.FixedZone("LMT", 555)}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		var at time.Time
		switch i % 4 {
		case 0: // any time at all, years outside 0-9999 included
			at = time.Unix(rng.Int64N(1<<40)-1<<39, rng.Int64N(1e9))
		case 1: // on a whole second, millisecond or microsecond
			at = time.Unix(rng.Int64N(4e9), []int64{0, 1e6 * rng.Int64N(1000), 1e3 * rng.Int64N(1e6)}[rng.IntN(3)])
		default: // now-ish, with a monotonic reading
			at = time.Now().Add(time.Duration(rng.Int64N(int64(48 * time.Hour))))
		}
		check(at.In(locs[rng.IntN(len(locs))]))
	}
	// The seconds around Berlin's change to summer time in 2026
	// (29 March, 01:00 UTC), in order, as a running server meets them.
	change := time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)
	for d := -3 * time.Second; d <= 3*time.Second; d += 250 * time.Millisecond {
		check(change.Add(d).In(berlin))
	}
}

func BenchmarkTextTime(b *testing.B) {
	at := time.Now()
	buf := make([]byte, 0, 64)
	for b.Loop() {
		buf = appendTextTime(buf[:0], at)
	}
}

// TestAppendMillis holds the request line's durations to strconv's
// shortest formatting of Millis, in text and JSON: around every power of
// ten where the notation changes, and at random over the whole range.
func TestAppendMillis(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ds := []time.Duration{0, 1, -1, 99, 100, 101, 1 << 62, -time.Second, time.Duration(1<<63 - 1), -1 << 63}
	for p := time.Duration(1); p < 1e18; p *= 10 {
		ds = append(ds, p-1, p, p+1, 10*p-1, p*7/3)
	}
	for i := 0; i < 200000; i++ {
		ds = append(ds, time.Duration(rng.Int64N(int64(1)<<rng.IntN(63))))
	}
	for _, asJSON := range []bool{false, true} {
		h := New(nil, asJSON, nil).(*Handler)
		for _, d := range ds {
			if got, want := string(h.appendMillis(nil, d)), string(h.float(nil, Millis(d))); got != want {
				t.Fatalf("json=%v %d: %q, want %q", asJSON, int64(d), got, want)
			}
		}
	}
}
