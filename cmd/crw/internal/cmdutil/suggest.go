package cmdutil

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/crw-dev/crw/errs"
)

// UnknownCommand is the error of name, which names none of c's subcommands, with the ones it
// may have meant: cobra suggests on the root only, and in a shape of its own.
func UnknownCommand(c *cobra.Command, name string) error {
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's default, which it sets on the root only
	}
	return errs.New(errs.InvalidRequest, "unknown command %q for %q%s (see %s --help)", name, c.CommandPath(),
		didYouMean(c.SuggestionsFor(name), ""), c.CommandPath())
}

// UnknownFlag is the error of --name, a flag c does not take, with the flags it may have meant.
func UnknownFlag(c *cobra.Command, name string) error {
	return errs.New(errs.InvalidRequest, "unknown flag: --%s%s (see %s --help)", name,
		didYouMean(FlagSuggestions(c, name), "--"), c.CommandPath())
}

// FlagSuggestions are the flags of c (its own and those it inherits, hidden ones left out) that
// typed may have meant, by cobra's rule for commands: within SuggestionsMinimumDistance edits
// (2 unless set), or a name typed begins, case aside.
func FlagSuggestions(c *cobra.Command, typed string) []string {
	dist := c.SuggestionsMinimumDistance
	if dist <= 0 {
		dist = 2
	}
	var names []string
	visit := func(f *pflag.Flag) {
		if !f.Hidden && f.Deprecated == "" && !slices.Contains(names, f.Name) {
			names = append(names, f.Name)
		}
	}
	c.Flags().VisitAll(visit)
	c.InheritedFlags().VisitAll(visit)
	return similar(typed, names, dist)
}

// Similar are the names typed may have meant, by the rule of FlagSuggestions (two edits).
func Similar(typed string, names []string) []string { return similar(typed, names, 2) }

func similar(typed string, names []string, dist int) []string {
	typed = strings.ToLower(typed)
	var out []string
	for _, n := range names {
		name := strings.ToLower(n)
		if levenshtein(typed, name) <= dist || typed != "" && strings.HasPrefix(name, typed) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// didYouMean is "; did you mean A?" (or "A or B") of names, each after prefix; "" of none.
func didYouMean(names []string, prefix string) string {
	if len(names) == 0 {
		return ""
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = prefix + n
	}
	list := quoted[0]
	if len(quoted) > 1 {
		list = strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
	}
	return "; did you mean " + list + "?"
}

// levenshtein is the edit distance of a and b, in bytes (flag names are ASCII).
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
