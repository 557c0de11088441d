package foreground

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine/diagnosis"
	"github.com/crw-dev/crw/engine/runner/progress"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// RunOutput is the one JSON object `crw flow run --json` prints, failed or not.
type RunOutput struct {
	Run    *string         `json:"run"`
	Status string          `json:"status"`
	Result json.RawMessage `json:"result"`
	Error  any             `json:"error"`
	Calls  store.Counts    `json:"calls"`
	// Decisions are what a run waiting for a decision waits for (each answered with crw flow
	// answer RUN ID); Paused what paused a paused run.
	Decisions []journal.PendingDecision `json:"decisions,omitempty"`
	Paused    *journal.Paused           `json:"paused,omitempty"`
}

// PrintEnd prints a run's end as crw flow run does.
func PrintEnd(c *cmdutil.Common, end *store.Status) {
	if c.JSON {
		out := RunOutput{Run: &end.Run, Status: string(end.Status), Result: end.Result, Calls: end.Calls, Paused: end.Paused}
		if end.Status == store.RunWaitingDecision {
			out.Decisions = end.Decisions
		}
		if out.Result == nil {
			out.Result = json.RawMessage("null")
		}
		if out.Calls == nil {
			out.Calls = store.Counts{}
		}
		if end.Error != nil {
			out.Error = end.Error
		}
		cmdutil.WriteJSON(c.IO.Out, out)
		return
	}
	w := c.IO.ErrOut
	switch end.Status {
	case store.RunFailed:
		fmt.Fprintf(w, "crw: %s\n", cmdutil.FailureLine(end.Error))
		if end.Error.Stack != "" {
			fmt.Fprintln(w, indent(end.Error.Stack))
		}
		if d := end.Error.Diagnostic; d != nil && d.NextAction != "" {
			fmt.Fprintf(w, "next: %s\n", d.NextAction)
		}
		fmt.Fprintf(w, "run %s failed; see crw flow show %s\n", end.Run, end.Run)
	case store.RunCancelled:
		fmt.Fprintf(w, "run %s was cancelled\n", end.Run)
	case store.RunPaused:
		// Not over: there is no result to print yet.
		why, how := diagnosis.PausedBy(end)
		fmt.Fprintf(w, "run %s is paused by %s; %s\n", end.Run, why, how)
	case store.RunWaitingDecision:
		fmt.Fprintf(w, "run %s waits for a decision; its process has ended:\n", end.Run)
		for _, d := range end.Decisions {
			if strings.HasPrefix(d.ID, journal.VerdictPrefix) {
				fmt.Fprintf(w, "  %s: %s\n", d.ID, d.Question)
				continue
			}
			fmt.Fprintf(w, "  %s: %s\n    crw flow answer %s %s --value JSON\n", d.ID, d.Question, end.Run, d.ID)
		}
	default:
		// As the journal kept it, maybe escaped (<, > and & as \u003c…): written as it is.
		fmt.Fprintln(c.IO.Out, cmdutil.Compact(end.Result))
	}
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "    " + strings.TrimSpace(l)
	}
	return strings.Join(lines, "\n")
}

// ExitFor is the exit code of a run's end: 0 completed, 1 failed or cancelled, 3 paused, 4
// waiting for a decision (neither is over: a resume or an answer goes on).
func ExitFor(end *store.Status) error {
	switch end.Status {
	case store.RunFailed, store.RunCancelled:
		return cmdutil.ExitError{Code: cmdutil.ExitFailed}
	case store.RunPaused:
		return cmdutil.ExitError{Code: cmdutil.ExitPaused}
	case store.RunWaitingDecision:
		return cmdutil.ExitError{Code: cmdutil.ExitWaiting}
	}
	return nil
}

// PrintDetached prints the run a detached process runs: its id (with --json, {"run", "pid",
// "state"}, with the start's warnings and its preview).
func PrintDetached(c *cmdutil.Common, id string, pid int, warnings []string, preview *ops.Preview) {
	if !c.JSON {
		fmt.Fprintln(c.IO.Out, id)
		return
	}
	out := map[string]any{"run": id, "pid": pid, "state": store.StateRunning}
	if len(warnings) > 0 {
		out["warnings"] = warnings
	}
	if preview != nil {
		out["preview"] = preview
	}
	cmdutil.WriteJSON(c.IO.Out, out)
}

// progressEvent is a look at a run as live progress shows it.
func progressEvent(st *store.Status) progress.Event {
	return progress.Event{Kind: progress.EventProgress, Run: st.Run, Calls: st.Calls, InFlight: st.InFlight, Tokens: st.Tokens}
}
