package scenarios

import (
	"fmt"
	"strings"
	"testing"
)

// TestDuplicateKeys checks that a duplicate key is reported at the second
// and names the line of the first as written (an alias key's own line),
// and that merged keys yield to written ones, alike in a small mapping
// (searched without a map) and a large one.
func TestDuplicateKeys(t *testing.T) {
	t.Parallel()
	for _, extra := range []int{0, 2 * smallMapping} {
		t.Run(fmt.Sprintf("keys=%d", 3+extra), func(t *testing.T) {
			t.Parallel()
			var pad strings.Builder
			for i := range extra {
				fmt.Fprintf(&pad, "        k%d: %d\n", i, i)
			}
			src := "x-anchors:\n  - &name id\n  - &base { currency: JPY, id: base }\n" +
				"routes:\n" +
				"  - path: /a\n" +
				"    respond:\n" +
				"      body:\n" +
				"        <<: *base\n" + // line 8
				"        *name : 1\n" + // line 9, the alias key
				pad.String() +
				"        id: 2\n"
			_, err := LoadBytes("dup.yaml", []byte(src))
			want := fmt.Sprintf("dup.yaml:%d:9: routes[0]: respond.body.id: duplicate key (first at line 9)", 10+extra)
			if err == nil || err.Error() != want {
				t.Fatalf("err = %v\nwant %s", err, want)
			}
			set, err := LoadBytes("ok.yaml", []byte(strings.Replace(src, "        id: 2\n", "        amount: 2\n", 1)))
			if err != nil {
				t.Fatal(err)
			}
			body := string(set.Routes()[0].Responses[0].Body)
			if !strings.HasPrefix(body, `{"id":1,`) || !strings.HasSuffix(body, `"amount":2,"currency":"JPY"}`) {
				t.Errorf("body %s: want the written id, then the other keys, then the merged currency (not the merged id)", body)
			}
		})
	}
}
