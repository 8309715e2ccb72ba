package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// Flag values offered by shell completion, each with what it does. A test
// checks that every one is accepted by the code that reads the flag.
var (
	logFormats     = []cobra.Completion{"text\tkey=value lines", "json\tone JSON object a line"}
	logLevels      = []cobra.Completion{"debug\ta request's line adds its query, headers and body", "info\ta line per request", "warn\tproblems only", "error\terrors only"}
	explainModes   = []cobra.Completion{"redacted\tnear misses without the wanted values of secret-looking fields", "full\tnear misses with every wanted value", "off\ta 404 names no route"}
	journalSecrets = []cobra.Completion{"redact\tcredential headers as a short hash", "keep\tcredential headers as sent"}
	idemOutcomes   = []cobra.Completion{"new\tthe first use of a key: the route ran", "replayed\ta retry answered with the stored answer",
		"mismatch\tthe key reused with another request (422)", "in-flight\ta retry while the first ran (409)",
		"missing-key\tno key where one is required (400)", "invalid-key\ta key that is not valid (400)"}
	matchedValues = []cobra.Completion{"true\trequests a route answered", "false\trequests no route matched"}
)

// completeWords completes a flag from a fixed list of values.
func completeWords(words []cobra.Completion) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, w := range words {
			if strings.HasPrefix(w, toComplete) {
				out = append(out, w)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// registerCompletions registers completeWords for each flag of cmd named
// in words that cmd has.
func registerCompletions(cmd *cobra.Command, words map[string][]cobra.Completion) {
	for flag, ws := range words {
		if cmd.Flags().Lookup(flag) != nil {
			_ = cmd.RegisterFlagCompletionFunc(flag, completeWords(ws))
		}
	}
}
