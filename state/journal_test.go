package state_test

import (
	"encoding/json"
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
