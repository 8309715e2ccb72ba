package main

import (
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/scenariomock/scenariomock/journal"
	"github.com/scenariomock/scenariomock/server"
)

// TestFlagValueCompletion: the flags with a fixed set of values complete
// them, and every value offered is one the flag accepts.
func TestFlagValueCompletion(t *testing.T) {
	t.Parallel()
	names := func(ws []cobra.Completion) []string {
		out := make([]string, len(ws))
		for i, w := range ws {
			out[i], _, _ = strings.Cut(w, "\t")
		}
		return out
	}
	accepts := map[string]func(string) error{
		"log-format": func(v string) error { _, err := newLogger(io.Discard, v, "info"); return err },
		"log-level":  func(v string) error { _, err := newLogger(io.Discard, "text", v); return err },
		"explain":    func(v string) error { _, err := server.ParseExplainMode(v); return err },
		"journal-secrets": func(v string) error {
			var f secretsFlag
			return f.Set(v)
		},
		"idempotency": func(v string) error { _, err := journal.ParseFilter(url.Values{"idempotency": {v}}); return err },
		"matched":     func(v string) error { _, err := journal.ParseFilter(url.Values{"matched": {v}}); return err },
	}
	for _, tc := range []struct {
		cmd, flag string
		words     []cobra.Completion
	}{
		{"serve", "log-format", logFormats},
		{"serve", "log-level", logLevels},
		{"serve", "explain", explainModes},
		{"serve", "journal-secrets", journalSecrets},
		{"verify", "idempotency", idemOutcomes},
		{"requests", "idempotency", idemOutcomes},
		{"verify", "matched", matchedValues},
	} {
		for _, v := range names(tc.words) {
			if err := accepts[tc.flag](v); err != nil {
				t.Errorf("--%s %s is offered but refused: %v", tc.flag, v, err)
			}
		}
		out, _, err := runCmd(t, "__complete", tc.cmd, "--"+tc.flag, "")
		got, directive, _ := strings.Cut(out, "\n:")
		if err != nil || got != strings.Join(tc.words, "\n") || !strings.HasPrefix(directive, "4") {
			t.Errorf("%s --%s <TAB>: %v %q", tc.cmd, tc.flag, err, out)
		}
	}
	// A prefix narrows the list.
	out, _, err := runCmd(t, "__complete", "verify", "--idempotency", "in")
	if err != nil || !strings.HasPrefix(out, "in-flight\t") || !strings.Contains(out, "\ninvalid-key\t") || strings.Contains(out, "replayed") {
		t.Errorf("--idempotency in<TAB>: %v %q", err, out)
	}
}
