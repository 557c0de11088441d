package show

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/engine/timeline"
	"github.com/crw-dev/crw/journal"
)

// maxShownWarnings bounds the warnings show prints; the trace has them all.
const maxShownWarnings = 20

// printTimeline prints a run's timeline: its calls in a table, then its escalations, warnings,
// steps and a summary.
func printTimeline(w io.Writer, s *timeline.Timeline) {
	status := string(s.Status)
	if status == "" {
		status = "not ended"
	}
	fmt.Fprintf(w, "run %s  %s  backend %s  %s\n", s.Run, s.Workflow, s.Backend, status)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CALL\tROLE\tNODE\tSTATUS\tREASON\tTURNS\tTOKENS\tTIME")
	for _, c := range s.Calls {
		st := string(c.Status)
		if st == "" {
			st = "(" + c.LastRow + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", c.Call, c.Role, c.Node, st, cmdutil.Dash(c.Reason), c.Turns, c.Tokens.Total, time.Duration(c.DurationMS)*time.Millisecond)
	}
	if tw.Flush() != nil {
		return // a write that fails is the root's to report
	}
	for _, e := range s.Escalations {
		fmt.Fprintf(w, "escalation %s by %s: %s\n", e.Reason, e.Call, e.Detail)
	}
	for i, x := range s.Warnings {
		if i == maxShownWarnings {
			fmt.Fprintf(w, "and %d more warnings: crw flow trace %s\n", len(s.Warnings)-i, s.Run)
			break
		}
		fmt.Fprintf(w, "warning %s: %s\n", x.Reason, x.Detail)
	}
	for _, st := range s.Steps {
		printStep(w, st)
	}
	fmt.Fprintf(w, "%d calls: %s; %d tokens", len(s.Calls), cmdutil.CountsLine(s.Counts), s.Tokens.Total)
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
