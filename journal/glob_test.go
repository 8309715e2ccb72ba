package journal

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"
)

// globRegexp is the meaning of a path pattern, as a regular expression:
// the reference compileGlob is checked against.
func globRegexp(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`^`)
	for i := 0; i < len(p); i++ {
		if p[i] != '*' {
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
			continue
		}
		j := i
		for j < len(p) && p[j] == '*' {
			j++
		}
		if j-i >= 2 {
			b.WriteString(`(?s:.*)`)
		} else {
			b.WriteString(`[^/]*`)
		}
		i = j - 1
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}

// TestGlobAgainstRegexp: random patterns over a small alphabet, long ones
// too (past 64 positions, so that the bits cross words), match exactly
// what their regular expression matches.
func TestGlobAgainstRegexp(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func(alphabet string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 2000 {
		p := "/" + word("ab/*", r.IntN(maxGlob-1))
		if r.IntN(4) == 0 {
			p = "/" + word("ab/*", r.IntN(12))
		}
		g, re := compileGlob(p), globRegexp(p)
		for range 5 {
			s := "/" + word("ab/", r.IntN(3*len(p)+2))
			if r.IntN(2) == 0 {
				// A path made from the pattern, so that matches are common.
				s = strings.NewReplacer("**", word("ab/", r.IntN(4)), "*", word("ab", r.IntN(4))).Replace(p)
			}
			if got, want := g.match(s), re.MatchString(s); got != want {
				t.Fatalf("pattern %q, path %q: match %v, want %v", p, s, got, want)
			}
		}
	}
}

// TestGlobCost: the longest pattern of alternating stars over a long path
// is matched in linear time (it took minutes position by position).
func TestGlobCost(t *testing.T) {
	p := "/" + strings.Repeat("*a", (maxGlob-1)/2)
	path := "/" + strings.Repeat("a", 30000) + "b"
	g := compileGlob(p)
	start := time.Now()
	for range 100 {
		if g.match(path) {
			t.Fatal("matched a path that ends in b")
		}
	}
	// Not a timing assertion on speed, only on the order of growth: 100
	// matches of a 30 KB path are 3 million steps, seconds at worst.
	if d := time.Since(start); d > time.Minute {
		t.Fatalf("100 matches took %s", d)
	}
	if _, err := ParseFilter(map[string][]string{"path": {"/" + strings.Repeat("*", maxGlob)}}); err == nil {
		t.Errorf("a pattern past %d bytes was accepted", maxGlob)
	}
}
