package openapi

import (
	"encoding/json"
	"hash/maphash"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// canonical is JSON exactly as encoding/json writes it (compact, with
// <, > and & escaped): a fixture's nested objects and arrays, encoded once
// when the fixture is first decoded (shallow), so that every answer built
// on the fixture appends them as they are.
type canonical []byte

// MarshalJSON returns c: encoding/json compacts it again, which leaves it
// as it is.
func (c canonical) MarshalJSON() ([]byte, error) { return c, nil }

// toCanonical encodes raw as encoding/json would write it.
func toCanonical(raw json.RawMessage) (canonical, bool) {
	b, err := json.Marshal(raw)
	return canonical(b), err == nil
}

// marshal is json.Marshal for the values answers are built of (maps,
// lists, strings, numbers, booleans, canonical), byte for byte, without
// reflection: a Stripe create spent a sixth of its CPU in encoding/json
// writing one generated object (sorting map keys by reflection and
// compacting the fixture's raw parts again). Anything else, and any
// string or number that needs escaping or an exponent, is handed to
// json.Marshal; TestMarshalIsJSONMarshal compares the two.
func marshal(v any) ([]byte, error) {
	return appendJSON(make([]byte, 0, 1024), v)
}

func appendJSON(b []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, t), nil
	case string:
		return appendJSONString(b, t)
	case float64:
		if a := math.Abs(t); a == 0 || a >= 1e-6 && a < 1e21 { // encoding/json's 'f' range; NaN and Inf fail there
			return strconv.AppendFloat(b, t, 'f', -1, 64), nil
		}
	case int:
		return strconv.AppendInt(b, int64(t), 10), nil
	case int64:
		return strconv.AppendInt(b, t, 10), nil
	case canonical:
		return append(b, t...), nil
	case map[string]any:
		if t == nil {
			return append(b, "null"...), nil
		}
		if len(t) >= minRemembered {
			if order := keyOrders.guess(t); order != nil {
				if out, ok, err := appendInOrder(b, t, order.keys, order.heads); ok || err != nil {
					return out, err
				}
			}
			if order, sum := keyOrders.of(t); order != nil {
				if out, ok, err := appendInOrder(b, t, order.keys, order.heads); ok || err != nil {
					keyOrders.found(order)
					return out, err
				}
			} else {
				b, err := appendSorted(b, t)
				if err == nil {
					keyOrders.remember(sum, t)
				}
				return b, err
			}
		}
		return appendSorted(b, t)
	case []any:
		if t == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		var err error
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSON(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	return appendMarshaled(b, v)
}

// appendSorted writes t with its keys sorted, as encoding/json does.
func appendSorted(b []byte, t map[string]any) ([]byte, error) {
	// The keys, sorted in a slice on the stack for the sizes Stripe's
	// objects have (slices.Sorted(maps.Keys) grows one on the heap
	// through an iterator: 4.7% of a create).
	var room [64]string
	keys := room[:0]
	for k := range t {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out, _, err := appendInOrder(b, t, keys, nil)
	return out, err
}

// appendInOrder writes t with its keys in order, which holds every key of
// t once (appendSorted) or may not (keyOrders): false, with b as it was,
// when t lacks one of them. Equal lengths and every key of order in t
// make the same set. heads, when not nil, are the keys as they are
// written before their values (keyOrder.heads).
func appendInOrder(b []byte, t map[string]any, order, heads []string) ([]byte, bool, error) {
	if len(order) != len(t) {
		return b, false, nil
	}
	start := len(b)
	b = append(b, '{')
	var err error
	for i, k := range order {
		v, ok := t[k]
		if !ok {
			return b[:start], false, nil
		}
		if heads != nil {
			b = append(b, heads[i]...)
		} else {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSONString(b, k); err != nil {
				return nil, false, err
			}
			b = append(b, ':')
		}
		if b, err = appendJSON(b, v); err != nil {
			return nil, false, err
		}
	}
	return append(b, '}'), true, nil
}

// minRemembered is the least number of keys whose order keyOrders keeps;
// fewer sort faster than they are looked up.
const minRemembered = 8

// keyOrders remembers the sorted keys of the key sets that answers are
// made of (a Stripe customer's 25 fields, its invoice_settings' 4). The
// objects of one resource have the same keys in answer after answer, and
// sorting them was a third of writing one (pprof, BenchmarkStripeCreate).
// A set is found by a sum of its keys' hashes, which does not depend on
// the order a map gives them in, and checked key by key as it is
// written, so a collision costs a sort, never a wrong answer. The table
// is copied on write and stops growing at maxRemembered sets of at most
// maxRememberedBytes of keys each (8 MiB in all): the key sets of a
// document's resources are a few hundred of a few hundred bytes, and a
// request's free keys (metadata) must not grow it without bound.
var keyOrders = &orderTable{seed: maphash.MakeSeed()}

const (
	maxRemembered      = 4096
	maxRememberedBytes = 2048
)

// keyOrder is a remembered key set's order: its keys, sorted, and each
// key as it is written before its value ("key": and, but for the first,
// the comma before it), so that an object of the set copies its keys
// rather than quoting each afresh (a tenth of writing Stripe's customer).
// heads is nil when a key needs escaping.
type keyOrder struct {
	keys, heads []string
}

type orderTable struct {
	seed maphash.Seed
	sets atomic.Pointer[map[uint64]*keyOrder]
	full atomic.Bool
	mu   sync.Mutex // serialises remember

	// last is, by number of keys, the order last found in sets: the
	// guess tried before of, which finds an order by a walk of the whole
	// map that hashes every key (for Stripe's customer, 0.8 µs of a
	// create that answers the same key set as the one before it).
	last [maxGuessed + 1]atomic.Pointer[keyOrder]
}

// maxGuessed is the most keys a set may have for guess to try an order.
const maxGuessed = 64

// guess returns the order last found for a set of t's size, when t has
// its first and last keys (a cheap test that tells most resources of one
// size apart), or nil. It may still be another set's order: the caller
// writes with it only when t has every key of it (appendInOrder), and
// otherwise asks of.
func (o *orderTable) guess(t map[string]any) *keyOrder {
	if len(t) > maxGuessed {
		return nil
	}
	order := o.last[len(t)].Load()
	if order == nil {
		return nil
	}
	if _, ok := t[order.keys[0]]; !ok {
		return nil
	}
	if _, ok := t[order.keys[len(order.keys)-1]]; !ok {
		return nil
	}
	return order
}

// found makes order, which of returned and a map of its size was written
// with, the next guess for its size.
func (o *orderTable) found(order *keyOrder) {
	n := len(order.keys)
	if n == 0 || n > maxGuessed {
		return
	}
	if o.last[n].Load() == order {
		return // already the guess: no store, which every core would share
	}
	o.last[n].Store(order)
}

// of returns the remembered order of t's key set, or nil and the sum to
// remember it under.
func (o *orderTable) of(t map[string]any) (*keyOrder, uint64) {
	sum := uint64(len(t))
	for k := range t {
		sum += maphash.String(o.seed, k)
	}
	if sets := o.sets.Load(); sets != nil {
		if order, ok := (*sets)[sum]; ok {
			return order, sum
		}
	}
	return nil, sum
}

// remember keeps t's keys, sorted, under sum, unless the table is full
// or they are long.
func (o *orderTable) remember(sum uint64, t map[string]any) {
	if o.full.Load() {
		return
	}
	size := 0
	for k := range t {
		if size += len(k); size > maxRememberedBytes {
			return
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	old := o.sets.Load()
	if old != nil && len(*old) >= maxRemembered {
		o.full.Store(true)
		return
	}
	if old != nil && (*old)[sum] != nil {
		return
	}
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, strings.Clone(k))
	}
	slices.Sort(keys)
	order := &keyOrder{keys: keys, heads: heads(keys)}
	sets := make(map[uint64]*keyOrder, 1)
	if old != nil {
		sets = maps.Clone(*old)
	}
	sets[sum] = order
	o.sets.Store(&sets)
}

// heads are keys as appendInOrder writes them before their values: the
// comma (but for the first), the quoted key, the colon; nil when a key
// needs escaping (appendJSONString hands it to json.Marshal).
func heads(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		var b []byte
		if i > 0 {
			b = append(b, ',')
		}
		for j := range len(k) {
			if !plainByte[k[j]] {
				return nil
			}
		}
		b = append(b, '"')
		b = append(b, k...)
		out[i] = string(append(b, '"', ':'))
	}
	return out
}

// plainByte says which bytes json.Marshal writes as they are in a string
// (printable ASCII but for the quote, the backslash and its HTML escapes):
// one table load a byte, where seven comparisons made this loop 6% of a
// Stripe create's instructions.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONString quotes s; one that needs escaping goes to json.Marshal.
func appendJSONString(b []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if !plainByte[s[i]] {
			return appendMarshaled(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}

func appendMarshaled(b []byte, v any) ([]byte, error) {
	m, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, m...), nil
}
