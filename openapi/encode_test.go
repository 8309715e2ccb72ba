package openapi

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/stripe/stripe-mock/embedded"
)

// TestMarshalIsJSONMarshal holds marshal to json.Marshal's bytes: every
// resource of Stripe's fixtures, as an answer holds it (shallow: nested
// parts canonical) and decoded whole, and values chosen to leave the fast
// paths (escapes, exponents, NaN, other types).
func TestMarshalIsJSONMarshal(t *testing.T) {
	same := func(t *testing.T, name string, v any) {
		t.Helper()
		want, wantErr := json.Marshal(v)
		got, err := marshal(v)
		if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("%s: marshal = %s, %v; json.Marshal = %s, %v", name, got, err, want, wantErr)
		}
	}
	var fx struct {
		Resources map[string]json.RawMessage `json:"resources"`
	}
	if err := json.Unmarshal(embedded.OpenAPIFixtures, &fx); err != nil {
		t.Fatal(err)
	}
	if len(fx.Resources) < 100 {
		t.Fatalf("%d fixtures; Stripe's have hundreds", len(fx.Resources))
	}
	for name, raw := range fx.Resources {
		v := shallow(raw)
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: not an object", name)
		}
		nested := 0
		for _, f := range m {
			if _, ok := f.(canonical); ok {
				nested++
			}
		}
		same(t, name+" (shallow)", v)
		var whole any
		if err := json.Unmarshal(raw, &whole); err != nil {
			t.Fatal(err)
		}
		same(t, name+" (decoded)", whole)
		// The shallow form decodes back to the same value.
		var back any
		b, _ := marshal(v)
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		same(t, name+" (round trip)", back)
	}
	for name, v := range map[string]any{
		"escapes":        map[string]any{"<a>": "x & y", "q\"": "back\\slash", "nl": "a\nb\tc", "ctl": "\x01\x1f"},
		"unicode":        []any{"héllo", "\u2028\u2029", "\xff\xfe invalid", "日本"},
		"floats":         []any{0.0, math.Copysign(0, -1), 0.1, 1e20, 1e21, 1e-6, 1e-7, -123.456, 1.5e300, 17e9},
		"ints":           []any{0, -1, int64(math.MaxInt64), math.MinInt},
		"nil containers": map[string]any{"m": map[string]any(nil), "l": []any(nil), "n": nil},
		"empty":          map[string]any{"m": map[string]any{}, "l": []any{}, "s": ""},
		"other types":    map[string]any{"num": json.Number("12.50"), "raw": json.RawMessage(`{ "a" : [1, 2] , "b":"<"}`), "strs": []string{"a"}, "u": uint8(3)},
		"canonical":      map[string]any{"c": canonical(`{"a":[1,2]}`)},
	} {
		same(t, name, v)
	}
	for _, bad := range []any{math.NaN(), math.Inf(1), map[string]any{"x": []any{math.Inf(-1)}}, make(chan int)} {
		if b, err := marshal(bad); err == nil {
			t.Fatalf("marshal(%v) = %s, want json.Marshal's error", bad, b)
		}
	}
}

// TestMarshalRemembersOrder holds marshal to json.Marshal's bytes when
// the key order of a set is remembered (keyOrders): the same set again,
// a set of the same size that differs by a key, and a set whose sum finds
// the order of another (a hash collision, made here by hand), which must
// be sorted afresh, not written in the other set's order.
func TestMarshalRemembersOrder(t *testing.T) {
	obj := func(keys ...string) map[string]any {
		m := map[string]any{}
		for i, k := range keys {
			m[k] = float64(i)
		}
		return m
	}
	same := func(name string, v map[string]any) {
		t.Helper()
		want, _ := json.Marshal(v)
		got, err := marshal(v)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: marshal = %s, %v; want %s", name, got, err, want)
		}
	}
	first := obj("zeta", "alpha", "mu", "beta", "omega", "gamma", "delta", "kappa", "iota", "eta")
	same("first", first)
	if order, _ := keyOrders.of(first); order == nil || len(order.keys) != len(first) {
		t.Fatalf("the order of a set of %d keys was not remembered: %v", len(first), order)
	}
	first["alpha"] = map[string]any{"nested": true}
	same("the same keys again", first)
	// A remembered set writes its keys as remembered (keyOrder.heads),
	// but one with a key to escape quotes them each time.
	escaped := obj("<a>", "b&c", "q\"", "mu", "beta", "omega", "gamma", "delta", "kappa")
	same("keys to escape", escaped)
	same("keys to escape, remembered", escaped)
	if order, _ := keyOrders.of(escaped); order == nil || order.heads != nil {
		t.Errorf("a set with keys to escape: remembered %+v; want its keys and no heads", order)
	}
	other := obj("zeta", "alpha", "mu", "beta", "omega", "gamma", "delta", "kappa", "iota", "theta")
	same("one key other", other)
	// The guess for a size (the order last found for one) is another
	// set's when a set of that size with the same first and last keys
	// comes: it must not be written in it.
	var table orderTable
	order, _ := keyOrders.of(first)
	table.found(order)
	if g := table.guess(other); g == nil {
		t.Errorf("no guess for a set with the first and last keys of %v", order)
	} else if b, ok, _ := appendInOrder([]byte("x"), other, g.keys, g.heads); ok || string(b) != "x" {
		t.Errorf("appendInOrder with the guess of another set: %q, %v; want false and the bytes before", b, ok)
	}
	if g := table.guess(obj("q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8", "q9", "q10")); g != nil {
		t.Errorf("a set with none of %v's keys was guessed its order", order)
	}
	long := obj("a", "b", "c", "d", "e", "f", "g", strings.Repeat("h", maxRememberedBytes))
	same("a set of long keys", long)
	if order, _ := keyOrders.of(long); order != nil {
		t.Errorf("a set of %d bytes of keys was remembered; the table keeps none past %d", maxRememberedBytes+7, maxRememberedBytes)
	}
	collide := obj("q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8", "q9", "q10")
	_, sum := keyOrders.of(collide)
	keyOrders.mu.Lock()
	before := keyOrders.sets.Load()
	t.Cleanup(func() { keyOrders.sets.Store(before) }) // take the made-up collision back
	sets := maps.Clone(*before)
	sets[sum], _ = keyOrders.of(first)
	keyOrders.sets.Store(&sets)
	keyOrders.mu.Unlock()
	same("a set whose sum finds another's order", collide)
	if b, ok, _ := appendInOrder([]byte("x"), collide, sets[sum].keys, sets[sum].heads); ok || string(b) != "x" {
		t.Errorf("appendInOrder with another set's order: %q, %v; want false and the bytes before", b, ok)
	}
}
