package openapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode"

	"github.com/scenariomock/scenariomock/state"
)

// A created object's id is made in the style the spec gives it: an
// integer id counts up per collection (1, 2, 3, as json-server's do), a
// format: uuid id is a version 4 UUID, and a string id is Stripe's style
// (the example's prefix and 14 letters and digits) unless its pattern
// refuses that, when it is drawn from the pattern itself. An id drawn from
// a small space (a pattern's, or an integer) is checked against the ids
// stored and deleted, so that a create never replaces an object nor brings
// a deleted id back.

// idKind is what the spec says a created object's id is.
type idKind int

const (
	idString idKind = iota
	idInteger
	idUUID
)

// maxIDTries bounds the draws of an id that is taken; past it, the
// create fails rather than replace an object. An integer id steps over
// as many as maxIntTries taken ones (made by updates under unknownIds:
// create, or seeded).
const (
	maxIDTries  = 64
	maxIntTries = 1024
)

// newID makes the id of an object created in coll (deleted ids in tomb),
// in the style of the generated example id like. value is the id as the
// object carries it (an integer id is a JSON number), key as it is
// stored.
func (o *Operation) newID(ctx context.Context, x Exchange, coll, tomb, like string) (key string, value any, err error) {
	sh := o.shapeOf()
	switch sh.idKind {
	case idInteger:
		// Counted from the id's minimum (1 by default); ids an update
		// made (unknownIds: create) or a seed stored are stepped over.
		name := "openapi id " + coll
		if len(name) > 200 { // a long credential in the scope: a counter name has a bound
			sum := sha256.Sum256([]byte(coll))
			name = "openapi id " + hex.EncodeToString(sum[:16])
		}
		for range maxIntTries {
			var n int64
			if x.Counters != nil {
				if n, err = x.Counters.Next(ctx, name); err != nil {
					if errors.Is(err, state.ErrCountersFull) || errors.Is(err, state.ErrCounterName) {
						err = fmt.Errorf("%w: counting the integer ids of a collection: %w", state.ErrFull, err) // a bound: 507
					}
					return "", nil, err
				}
			} else {
				n = 1 + int64(x.Rand()*(1<<31))
			}
			n += sh.idMin - 1
			if sh.idMax != nil && n > *sh.idMax {
				return "", nil, noFreeID(coll)
			}
			key = strconv.FormatInt(n, 10)
			if taken, err := idTaken(ctx, x.Store, coll, tomb, key); err != nil || !taken {
				return key, n, err
			}
		}
	case idUUID:
		key = randomUUID(x.Rand)
		return key, key, nil
	default:
		id := freshID(like, x.Rand)
		if sh.idPattern == nil || sh.idPattern.MatchString(id) {
			return id, id, nil // 62^14 ids: no need to look
		}
		for range maxIDTries {
			id = idFromPattern(sh.idSyntax, like, sh.idPattern, x.Rand)
			if id == "" {
				break
			}
			if taken, err := idTaken(ctx, x.Store, coll, tomb, id); err != nil || !taken {
				return id, id, err
			}
		}
	}
	return "", nil, noFreeID(coll)
}

// noFreeID is a create that found no id free: the id's pattern (or
// type) leaves too few. It answers as a full collection does (507).
type noFreeID string

func (e noFreeID) Error() string {
	return fmt.Sprintf("no free id for a new object in %s: the ids the spec's schema for the id allows (its pattern, or its maximum) are taken", string(e))
}

func (e noFreeID) Is(target error) bool { return target == state.ErrFull }

// idTaken reports whether id names an object stored in coll or deleted
// from it.
func idTaken(ctx context.Context, store state.Collections, coll, tomb, id string) (bool, error) {
	for _, c := range [...]string{coll, tomb} {
		_, found, err := store.Load(ctx, c, id)
		if err != nil || found {
			return found, err
		}
	}
	return false, nil
}

// randomUUID draws a version 4 UUID from rnd.
func randomUUID(rnd func() float64) string {
	var b [16]byte
	for i := range b {
		b[i] = byte(rnd() * 256)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hex[c>>4], hex[c&0xf])
	}
	return string(out)
}

// idFromPattern draws an id that pattern matches, from its syntax tree
// re (open-ended repeats drawn 14 times, as Stripe's ids are long), or
// else one of like's length from like's own characters (an example id
// that matches its pattern is made of characters the pattern allows); ""
// when neither matches.
func idFromPattern(re *syntax.Regexp, like string, pattern *regexp.Regexp, rnd func() float64) string {
	if re != nil {
		var b strings.Builder
		budget := maxDrawSteps
		drawRegexp(&b, re, rnd, 14, &budget)
		if id := b.String(); pattern.MatchString(id) {
			return id
		}
	}
	prefix, suffix := "", like
	if i := strings.LastIndexByte(like, '_'); i >= 0 {
		prefix, suffix = like[:i+1], like[i+1:]
	}
	var alphabet []byte
	for i := 0; i < len(suffix); i++ {
		if strings.IndexByte(string(alphabet), suffix[i]) < 0 {
			alphabet = append(alphabet, suffix[i])
		}
	}
	if len(alphabet) < 2 {
		return ""
	}
	b := make([]byte, len(suffix))
	for i := range b {
		b[i] = alphabet[int(rnd()*float64(len(alphabet)))%len(alphabet)]
	}
	if id := prefix + string(b); pattern.MatchString(id) {
		return id
	}
	return ""
}

// maxIDLength bounds what drawRegexp writes, and maxDrawSteps the nodes
// it visits: a repeat of a repeat that writes nothing ((a?)*)* is not
// cut by the length, and would take open^depth steps.
const (
	maxIDLength  = 1024
	maxDrawSteps = 1 << 14
)

// drawRegexp writes to b a string re matches: literals as written, a
// class's characters drawn (printable ASCII where the class has some),
// alternatives drawn, optional parts left out, open repeats open times
// (or as few as they allow, when more).
func drawRegexp(b *strings.Builder, re *syntax.Regexp, rnd func() float64, open int, budget *int) {
	if b.Len() > maxIDLength || *budget <= 0 {
		return
	}
	*budget--
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		b.WriteRune(drawRune(re.Rune, rnd))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte(freshAlphabet[int(rnd()*float64(len(freshAlphabet)))%len(freshAlphabet)])
	case syntax.OpCapture:
		drawRegexp(b, re.Sub[0], rnd, open, budget)
	case syntax.OpConcat:
		for _, s := range re.Sub {
			drawRegexp(b, s, rnd, open, budget)
		}
	case syntax.OpAlternate:
		drawRegexp(b, re.Sub[int(rnd()*float64(len(re.Sub)))%len(re.Sub)], rnd, open, budget)
	case syntax.OpStar, syntax.OpPlus:
		// Only the outermost repeat draws open times: one inside it
		// draws once, so that (a?)* nested is not open^depth.
		for range max(open, 1) {
			drawRegexp(b, re.Sub[0], rnd, 1, budget)
		}
	case syntax.OpRepeat:
		n := re.Min
		if re.Max < 0 || re.Max > re.Min {
			n = max(re.Min, open)
			if re.Max >= 0 {
				n = min(n, re.Max)
			}
		}
		for range n {
			drawRegexp(b, re.Sub[0], rnd, 1, budget)
		}
	}
	// OpQuest draws nothing (the optional part left out); anchors, word
	// boundaries and empty matches write nothing.
}

// drawRune draws a rune from a class's ranges (pairs lo, hi), from their
// printable ASCII part when they have one.
func drawRune(ranges []rune, rnd func() float64) rune {
	var ascii []rune
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := max(ranges[i], '!'), min(ranges[i+1], '~')
		if lo <= hi {
			ascii = append(ascii, lo, hi)
		}
	}
	if len(ascii) > 0 {
		ranges = ascii
	}
	var total int64
	for i := 0; i+1 < len(ranges); i += 2 {
		total += int64(ranges[i+1]-ranges[i]) + 1
	}
	if total == 0 {
		return 'x'
	}
	n := int64(rnd() * float64(total))
	for i := 0; i+1 < len(ranges); i += 2 {
		size := int64(ranges[i+1]-ranges[i]) + 1
		if n < size {
			if r := ranges[i] + rune(n); unicode.IsPrint(r) {
				return r
			}
			return ranges[i]
		}
		n -= size
	}
	return ranges[0]
}
