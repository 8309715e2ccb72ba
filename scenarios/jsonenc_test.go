package scenarios

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestJSONFastPaths holds the shortcuts of encodeJSON to what they skip:
// writeJSONString's plain text to encoding/json's encoder (HTML left
// alone), and a canonical integer to yaml.v3's decoding formatted again.
func TestJSONFastPaths(t *testing.T) {
	t.Parallel()
	encoder := func(s string) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		return strings.TrimSuffix(b.String(), "\n")
	}
	pieces := []string{"a", "Z", "0", " ", "<", "&", `"`, `\`, "\x7f", "\x00", "\n", "\t", "µ", "\u2028", "\xff", "/", "~"}
	rnd := rand.New(rand.NewPCG(3, 4))
	strs := []string{""}
	for c := range 256 {
		strs = append(strs, string(rune(c)), string([]byte{byte(c)}))
	}
	for range 20_000 {
		var b strings.Builder
		for range 1 + rnd.IntN(6) {
			b.WriteString(pieces[rnd.IntN(len(pieces))])
		}
		strs = append(strs, b.String())
	}
	for _, s := range strs {
		var b bytes.Buffer
		writeJSONString(&b, s)
		if want := encoder(s); b.String() != want {
			t.Fatalf("%q: wrote %s, the encoder %s", s, b.String(), want)
		}
	}

	ints := []string{"0", "-0", "7", "-7", "10000", "007", "+5", "1_000", "0x1F", "0o17", "0b11", "-9223372036854775808",
		"9223372036854775807", "9223372036854775808", "999999999999999999", "1000000000000000000", "-", "1e3", "12.0"}
	for range 2000 {
		ints = append(ints, strconv.FormatInt(rnd.Int64()>>rnd.IntN(63), 10), "-"+strconv.FormatInt(rnd.Int64N(1e6), 10))
	}
	for _, v := range ints {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte("v: "+v), &doc); err != nil {
			continue // not a scalar ("-")
		}
		n := doc.Content[0].Content[1]
		if n.ShortTag() != "!!int" {
			continue
		}
		var want string
		var i int64
		if err := n.Decode(&i); err == nil {
			want = strconv.FormatInt(i, 10)
		} else {
			var u uint64
			if err := n.Decode(&u); err == nil {
				want = strconv.FormatUint(u, 10)
			}
		}
		if canonicalInt(v) && v != want {
			t.Errorf("%s: canonical, but decoding gives %q", v, want)
		}
		var b bytes.Buffer
		d := &decoder{file: "t.yaml", budget: nodeBudget}
		if d.encodeScalar(&b, n, "v") && want != "" && b.String() != want {
			t.Errorf("%s: wrote %s, want %s", v, b.String(), want)
		}
	}
}
