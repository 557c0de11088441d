package cmdutil

import (
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
)

func TestFlagSuggestions(t *testing.T) {
	t.Parallel()
	root := &cobra.Command{Use: "r"}
	root.PersistentFlags().Bool("json", false, "")
	root.PersistentFlags().String("state", "", "")
	c := &cobra.Command{Use: "run", Run: func(*cobra.Command, []string) {}}
	c.Flags().String("backend", "", "")
	c.Flags().Int64("budget-tokens", 0, "")
	c.Flags().String("status", "", "")
	c.Flags().String("secret", "", "")
	_ = c.Flags().MarkHidden("secret")
	root.AddCommand(c)

	for typed, want := range map[string][]string{
		"backed":  {"backend"},       // one edit
		"BACKEND": {"backend"},       // case aside
		"budget":  {"budget-tokens"}, // a prefix
		"stat":    {"state", "status"},
		"jsno":    {"json"}, // an inherited flag: two edits
		"secre":   nil,      // hidden
		"zzzzzz":  nil,
	} {
		assert.Equal(t, want, FlagSuggestions(c, typed), typed)
	}
	assert.EqualError(t, UnknownFlag(c, "backed"), "invalid_request: unknown flag: --backed; did you mean --backend? (see r run --help)")
	assert.EqualError(t, UnknownFlag(c, "stat"), "invalid_request: unknown flag: --stat; did you mean --state or --status? (see r run --help)")
	assert.EqualError(t, UnknownFlag(c, "zzzzzz"), "invalid_request: unknown flag: --zzzzzz (see r run --help)")
}

func TestLevenshtein(t *testing.T) {
	t.Parallel()
	assert.Equal(t, 0, levenshtein("run", "run"))
	assert.Equal(t, 1, levenshtein("backed", "backend"))
	assert.Equal(t, 2, levenshtein("stauts", "status"))
	assert.Equal(t, 3, levenshtein("", "abc"))
}
