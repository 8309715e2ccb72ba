package state_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/state"
)

func TestEntryJSONBody(t *testing.T) {
	for _, tc := range []struct {
		body []byte
		key  string
	}{
		{[]byte(`{"amount":9800}`), `"body":"{\"amount\":9800}"`},
		{[]byte{0xff, 0x00, 0x01}, `"bodyBase64":"/wAB"`},
		{nil, ""},
	} {
		b, err := json.Marshal(state.Entry{ID: 1, Method: "POST", Body: tc.body})
		if err != nil {
			t.Fatal(err)
		}
		if tc.key != "" && !strings.Contains(string(b), tc.key) {
			t.Errorf("Marshal = %s, want it to contain %s", b, tc.key)
		}
		if tc.key == "" && (strings.Contains(string(b), `"body":`) || strings.Contains(string(b), `"bodyBase64":`)) {
			t.Errorf("Marshal of no body = %s, want no body field", b)
		}
		var back state.Entry
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if string(back.Body) != string(tc.body) || back.ID != 1 || back.Method != "POST" {
			t.Errorf("round trip of %q = %+v", tc.body, back)
		}
	}
}

// TestJournalStringLengths checks that the memory journal keeps strings
// of every length its encoding writes differently (empty, one length
// byte up to 127, a longer uvarint from 128), in each place an entry has
// strings.
func TestJournalStringLengths(t *testing.T) {
	t.Parallel()
	j := state.NewMemory(state.Options{JournalSize: 4}).Journal()
	for _, n := range []int{0, 1, 127, 128, 129, 16383, 16384, 70000} {
		str := strings.Repeat("s", n)
		want := state.Entry{
			Method: str, Path: str, Query: str, Route: str, Fault: str, FaultAfter: str, Idempotency: str, Session: str, Upstream: str,
			Headers:    map[string][]string{"H" + str: {str, str + "x"}},
			Body:       []byte(str),
			NearMisses: []state.NearMiss{{Route: str, Reason: str + "r"}},
			Violations: []string{str},
		}
		if err := j.Append(context.Background(), &want); err != nil {
			t.Fatal(err)
		}
		got, err := j.Entries(context.Background(), want.ID-1)
		if err != nil || len(got) != 1 {
			t.Fatalf("length %d: %d entries, %v", n, len(got), err)
		}
		if n == 0 {
			want.Body = nil // an empty body reads back as none
		}
		if !reflect.DeepEqual(got[0], want) {
			t.Errorf("length %d: the entry read back differs from the one appended", n)
		}
	}
}
