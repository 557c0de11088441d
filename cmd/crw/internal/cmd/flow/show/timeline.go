package show

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/engine/timeline"
	"github.com/crw-dev/crw/journal"
)

// maxShownWarnings bounds the warnings show prints; the trace has them all.
const maxShownWarnings = 20

// printTimeline prints a run's timeline: its calls in a table, then its escalations, warnings,
// steps and a summary.
func printTimeline(w io.Writer, f *timeline.Fold) {
	s, tail := f.Head(), f.Tail()
	status := string(s.Status)
	if status == "" {
		status = "not ended"
	}
	fmt.Fprintf(w, "run %s  %s  backend %s  %s\n", s.Run, s.Workflow, s.Backend, status)
	printCalls(w, f)
	for _, e := range tail.Escalations {
		fmt.Fprintf(w, "escalation %s by %s: %s\n", e.Reason, e.Call, e.Detail)
	}
	for i, x := range tail.Warnings {
		if i == maxShownWarnings {
			fmt.Fprintf(w, "and %d more warnings: crw flow trace %s\n", len(tail.Warnings)-i, s.Run)
			break
		}
		fmt.Fprintf(w, "warning %s: %s\n", x.Reason, x.Detail)
	}
	for _, st := range tail.Steps {
		printStep(w, st)
	}
	fmt.Fprintf(w, "%d calls: %s; %d tokens", f.Len(), cmdutil.CountsLine(tail.Counts), tail.Tokens.Total)
	if s.Ended != nil {
		fmt.Fprintf(w, "; %s", s.Ended.Sub(s.Started).Round(time.Millisecond))
	}
	fmt.Fprintln(w)
	if s.Error != nil {
		fmt.Fprintf(w, "error: %s\n", cmdutil.FailureLine(s.Error))
	}
}

// printStep prints a step of the run that is not a call: a commit, a tier step, a decision, a
// verdict.
func printStep(w io.Writer, st journal.Row) {
	switch st.Type {
	case journal.TypeCommitResult:
		if st.Reason != "" {
			fmt.Fprintf(w, "commit of node %s: %s (%s)\n", st.Node, st.Reason, st.Detail)
		} else {
			fmt.Fprintf(w, "commit of node %s: %s on %s\n", st.Node, shortID(st.Commit), st.Ref)
		}
	case journal.TypeTierStep:
		fmt.Fprintf(w, "tier step of node %s to %s on %s's null_model\n", st.Node, st.Role, st.Evidence)
	case journal.TypeDecisionRequested:
		fmt.Fprintf(w, "decision %s asked: %s\n", st.DecisionID, st.Question)
	case journal.TypeDecisionAnswered:
		fmt.Fprintf(w, "decision %s answered by %s: %s\n", st.DecisionID, cmdutil.Dash(st.By), cmdutil.Compact(st.Output))
	case journal.TypeEffectReconciled:
		fmt.Fprintf(w, "verdict on %s by %s: %s%s\n", st.Effect, cmdutil.Dash(st.By), st.Verdict, cmdutil.VerdictOutput(st.Output))
	}
}

// shortID is a commit's first 12 hex digits.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// callColumns are the columns of the calls' table.
var callColumns = [...]string{"CALL", "ROLE", "NODE", "STATUS", "REASON", "TURNS", "TOKENS", "TIME"}

// callCells are a call's cells in the table.
func callCells(c *timeline.Call) [len(callColumns)]string {
	st := string(c.Status)
	if st == "" {
		st = "(" + c.LastRow + ")"
	}
	return [...]string{c.Call, c.Role, c.Node, st, cmdutil.Dash(c.Reason), strconv.Itoa(c.Turns),
		strconv.FormatInt(c.Tokens.Total, 10), (time.Duration(c.DurationMS) * time.Millisecond).String()}
}

// printCalls prints the calls' table, each column as wide as its widest cell and two spaces,
// a line at a time: the widths are found first, so no line waits for the table's end.
func printCalls(w io.Writer, f *timeline.Fold) {
	var widths [len(callColumns)]int
	measure := func(cells [len(callColumns)]string) {
		for i, cell := range cells {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	measure(callColumns)
	f.Each(func(c *timeline.Call) { measure(callCells(c)) })
	bw := bufio.NewWriter(w)
	line := func(cells [len(callColumns)]string) {
		for i, cell := range cells {
			if i == len(cells)-1 {
				bw.WriteString(cell + "\n")
				break
			}
			bw.WriteString(cell + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell)+2))
		}
	}
	line(callColumns)
	f.Each(func(c *timeline.Call) { line(callCells(c)) })
	_ = bw.Flush() // a write that fails is the root's to report
}
