package cmdutil

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// Dash is s, or "-" for nothing.
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// CountsLine is calls counted by status, in the journal's order of statuses.
func CountsLine(c store.Counts) string {
	if len(c) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range journal.Statuses {
		if c[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[k], k))
		}
	}
	return strings.Join(parts, ", ")
}

// FailureLine is a run's error in one line: what the workflow threw, or crw's code, finer
// reason and account.
func FailureLine(e *journal.RunError) string {
	switch {
	case e == nil:
		return ""
	case e.Code == string(errs.WorkflowFailed) || e.Code == "":
		return "the workflow threw: " + e.Text()
	case e.Reason != "":
		return e.Code + " (" + e.Reason + "): " + e.Text()
	default:
		return e.Code + ": " + e.Text()
	}
}

// VerdictOutput is an applied verdict's recorded output, as a verdict line ends.
func VerdictOutput(out json.RawMessage) string {
	if len(out) == 0 {
		return ""
	}
	return ", output " + Compact(out)
}
