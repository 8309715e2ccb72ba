package loghandler

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"
)

type valuer struct{}

func (valuer) LogValue() slog.Value {
	return slog.GroupValue(slog.Int("a", 1), slog.String("b", "two words"))
}

type marshalErr struct{}

func (marshalErr) Error() string                { return "boom" }
func (marshalErr) MarshalJSON() ([]byte, error) { return []byte(`{"custom":true}`), nil }

// logCases are records whose output must equal slog's own handlers'.
var logCases = []struct {
	name  string
	level slog.Level
	msg   string
	attrs []slog.Attr
	with  []slog.Attr // added by WithAttrs first
	group string      // then WithGroup, if set
}{
	{name: "request line", msg: "request", attrs: []slog.Attr{
		slog.String("method", "POST"), slog.String("path", "/payments"), slog.String("route", "payment created"),
		slog.Int("status", 201), slog.Float64("duration_ms", Millis(24897*time.Nanosecond)), slog.Float64("delay_ms", Millis(10*time.Second)),
	}},
	{name: "durations in milliseconds", msg: "request", attrs: []slog.Attr{
		slog.Float64("a_ms", Millis(3002365531*time.Nanosecond)), slog.Float64("b_ms", Millis(time.Nanosecond)), slog.Float64("c_ms", Millis(25*time.Minute)),
		slog.Float64("d_ms", Millis(1<<62)), slog.Float64("e_ms", Millis(-time.Second)), slog.Float64("f_ms", 1e-9), slog.Float64("g_ms", 1e-10),
		slog.Float64("h_ms", math.Inf(1)), slog.Float64("i_ms", 123456789e15), slog.Float64("j_ms", 0), slog.Float64("k_ms", math.Copysign(0, -1)),
	}},
	{name: "quoting", level: slog.LevelWarn, msg: "needs quotes", attrs: []slog.Attr{
		slog.String("empty", ""), slog.String("space", "a b"), slog.String("eq", "a=b"), slog.String("quote", `say "hi"`),
		slog.String("backslash", `C:\path`), slog.String("newline", "a\nb"), slog.String("tab", "a\tb"), slog.String("nul", "a\x00b"),
		slog.String("unicode", "金額 µs"), slog.String("nbsp", "a\u00a0b"), slog.String("bad utf8", "a\xffb"),
		slog.String("separator", "a\u2028b"), slog.String("key with space", "v"), slog.String("", "empty key"),
		slog.String("micro", "µs"), slog.String("del", "a\x7fb"), slog.String("del space", "a\x7f b"),
		slog.String("backslash space", `a\b c`), slog.String("unicode space", "金額 µs"), slog.String("replacement", "a\ufffdb"),
		slog.String("equals", "="), slog.String("µ-key", "v"),
	}},
	{name: "kinds", level: slog.LevelError, msg: "", attrs: []slog.Attr{
		slog.Int64("neg", -42), slog.Uint64("big", math.MaxUint64), slog.Bool("yes", true),
		slog.Float64("pi", math.Pi), slog.Float64("int float", 3), slog.Float64("huge", 1e21), slog.Float64("tiny", 1e-7), slog.Float64("nan", math.NaN()),
		slog.Time("at", time.Date(2026, 12, 2, 13, 42, 37, 843000000, time.UTC)), slog.Time("zone", time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("", 9*3600))),
		slog.Any("err", errors.New("file.yaml:3:5: bad duration")), slog.Any("marshal err", marshalErr{}),
		slog.Any("addr", netip.MustParseAddr("127.0.0.1")), slog.Any("bytes", []byte("raw\x01")),
		slog.Any("map", map[string]int{"a": 1}), slog.Any("slice", []string{"x", "<y>"}), slog.Any("nil", nil),
		slog.Any("valuer", valuer{}), slog.Duration("zero", 0),
	}},
	{name: "groups", level: slog.LevelDebug, msg: "grouped", attrs: []slog.Attr{
		slog.Group("g", slog.Int("a", 1), slog.Group("h", slog.String("b", "c d"))),
		slog.Group("empty"), slog.Group("", slog.Int("inline", 2)),
		{}, slog.Int("after", 3),
	}},
	{name: "custom level", level: slog.LevelInfo + 2, msg: "odd level"},
	{name: "with attrs", msg: "with", with: []slog.Attr{slog.String("source", "examples/x.yaml"), slog.Group("w", slog.Int("n", 1))}, attrs: []slog.Attr{slog.Int("n", 2)}},
	{name: "with group", msg: "grouped handler", with: []slog.Attr{slog.Int("outer", 1)}, group: "req", attrs: []slog.Attr{slog.Int("n", 2)}},
}

func TestLogHandlerMatchesSlog(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 13, 42, 37, 843500000, time.UTC)
	for _, asJSON := range []bool{false, true} {
		for _, c := range logCases {
			name := "text/" + c.name
			if asJSON {
				name = "json/" + c.name
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				var ours, theirs bytes.Buffer
				opts := &slog.HandlerOptions{Level: slog.LevelDebug}
				var h, s slog.Handler = New(&ours, asJSON, slog.LevelDebug), slog.NewTextHandler(&theirs, opts)
				if asJSON {
					s = slog.NewJSONHandler(&theirs, opts)
				}
				h, s = h.WithAttrs(c.with), s.WithAttrs(c.with)
				if c.group != "" {
					h, s = h.WithGroup(c.group), s.WithGroup(c.group)
				}
				// With a time, again in the same millisecond (the cached
				// formatting), in another zone, and without a time.
				for _, when := range []time.Time{at, at.Add(time.Microsecond), at.In(time.FixedZone("JST", 9*3600)), at.Add(time.Millisecond), {}} {
					r := slog.NewRecord(when, c.level, c.msg, 0)
					r.AddAttrs(c.attrs...)
					if err := h.Handle(context.Background(), r); err != nil {
						t.Fatal(err)
					}
					if err := s.Handle(context.Background(), r); err != nil {
						t.Fatal(err)
					}
				}
				if ours.String() != theirs.String() {
					t.Errorf("output differs from slog's\nours:   %s\nslog's: %s", ours.String(), theirs.String())
				}
			})
		}
	}
}

// TestLogHandlerGroupOfEmptyAttrs is where slog itself goes wrong (an open
// issue, golang/go#61067): a group holding only empty attributes makes its
// JSONHandler drop a comma, giving invalid JSON, and its TextHandler put
// the group's name on the next key. Ours elides the group, as slog's
// Handler contract says.
func TestLogHandlerGroupOfEmptyAttrs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		json bool
		want string
	}{
		{false, "level=INFO msg=m a=1 after=2\n"},
		{true, `{"level":"INFO","msg":"m","a":1,"after":2}` + "\n"},
	} {
		var b bytes.Buffer
		r := slog.NewRecord(time.Time{}, slog.LevelInfo, "m", 0)
		r.AddAttrs(slog.Int("a", 1), slog.Group("only empty", slog.Attr{}), slog.Int("after", 2))
		_ = New(&b, c.json, nil).Handle(context.Background(), r)
		if b.String() != c.want {
			t.Errorf("json=%v: %q, want %q", c.json, b.String(), c.want)
		}
	}
}

func TestLogHandlerLevel(t *testing.T) {
	t.Parallel()
	h := New(&bytes.Buffer{}, false, slog.LevelWarn)
	if h.Enabled(context.Background(), slog.LevelInfo) || !h.Enabled(context.Background(), slog.LevelError) {
		t.Error("Enabled does not follow the level")
	}
}

// FuzzLogHandler checks arbitrary keys and values against slog's handlers.
func FuzzLogHandler(f *testing.F) {
	f.Add("msg", "key", "value", int64(1))
	f.Add("", "", "", int64(0))
	f.Add("a b", "k=v", "\"\\\n\x00\xff\u2028µ", int64(-1))
	f.Fuzz(func(t *testing.T, msg, key, value string, n int64) {
		for _, asJSON := range []bool{false, true} {
			var ours, theirs bytes.Buffer
			var s slog.Handler = slog.NewTextHandler(&theirs, nil)
			if asJSON {
				s = slog.NewJSONHandler(&theirs, nil)
			}
			r := slog.NewRecord(time.Unix(0, n).UTC(), slog.LevelInfo, msg, 0)
			r.AddAttrs(slog.String(key, value), slog.Int64(value, n), slog.Group(key, slog.String(msg, value)))
			_ = New(&ours, asJSON, nil).Handle(context.Background(), r)
			_ = s.Handle(context.Background(), r)
			if ours.String() != theirs.String() {
				t.Fatalf("json=%v: output differs from slog's\nours:   %q\nslog's: %q", asJSON, ours.String(), theirs.String())
			}
		}
	})
}

// TestQuotingMatchesSlog holds the text format's quoting (needsQuoting's
// byte table, and its rune by rune test past ASCII) to slog's, for every
// string of one and two bytes and for random strings that mix ASCII with
// multi-byte and invalid UTF-8.
func TestQuotingMatchesSlog(t *testing.T) {
	t.Parallel()
	var ours, theirs bytes.Buffer
	h, s := New(&ours, false, slog.LevelInfo), slog.NewTextHandler(&theirs, nil)
	check := func(v string) {
		t.Helper()
		ours.Reset()
		theirs.Reset()
		r := slog.NewRecord(time.Time{}, slog.LevelInfo, "m", 0)
		r.AddAttrs(slog.String("k", v))
		_ = h.Handle(context.Background(), r)
		_ = s.Handle(context.Background(), r)
		if ours.String() != theirs.String() {
			t.Fatalf("%q: ours %s, slog's %s", v, ours.String(), theirs.String())
		}
	}
	for a := range 256 {
		check(string([]byte{byte(a)}))
		for b := range 256 {
			check(string([]byte{byte(a), byte(b)}))
		}
	}
	pieces := []string{"a", "Z", "/", " ", "=", `"`, `\`, "\x7f", "\x00", "\n", "µ", "金", "\u00a0", "\u2028", "\xff", "\ufffd", "-", "."}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 20_000 {
		var b strings.Builder
		for range 1 + rnd.IntN(8) {
			b.WriteString(pieces[rnd.IntN(len(pieces))])
		}
		check(b.String())
	}
}

// TestNeedsQuotingUnrolled holds needsQuoting, which reads four bytes a
// turn, to the byte by byte table: every byte value at every position of
// plain text of each length from 1 to 13, and in pairs at random
// positions of text up to 25 bytes.
func TestNeedsQuotingUnrolled(t *testing.T) {
	t.Parallel()
	byTable := func(s string) int {
		if s == "" {
			return quotePlain
		}
		var bits byte
		for i := 0; i < len(s); i++ {
			bits |= textBits[s[i]]
		}
		switch {
		case bits&bitNonASCII != 0:
			return needsQuotingRunes(s)
		case bits&bitEscape != 0:
			return quoteEscaped
		case bits&bitQuote == 0:
			return quoteNone
		case bits&bitEscapeIfQuoted != 0:
			return quoteEscaped
		}
		return quotePlain
	}
	const plain = "/payments/pay_demo_0001~!"
	for n := 1; n <= 13; n++ {
		for i := range n {
			for c := range 256 {
				b := []byte(plain[:n])
				b[i] = byte(c)
				if got, want := needsQuoting(string(b)), byTable(string(b)); got != want {
					t.Fatalf("%q: %d, table %d", b, got, want)
				}
			}
		}
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	for range 200_000 {
		b := []byte(plain[:1+rnd.IntN(len(plain))])
		b[rnd.IntN(len(b))] = byte(rnd.IntN(256))
		b[rnd.IntN(len(b))] = byte(rnd.IntN(256))
		if got, want := needsQuoting(string(b)), byTable(string(b)); got != want {
			t.Fatalf("%q: %d, table %d", b, got, want)
		}
	}
}
