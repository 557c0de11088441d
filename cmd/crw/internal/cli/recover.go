package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine/runner"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store/local"
)

func newCmdRecover(g *globals, streams IO) *cobra.Command {
	var applied, notApplied, noResume bool
	var output string
	cmd := &cobra.Command{
		Use:   "recover RUN CALL (--applied [--output JSON|@FILE] | --not-applied)",
		Short: "Give the verdict on a call whose outcome is unknown, and release its node's recovery hold",
		Long: `A call whose turn was sent and whose answer was lost ends unknown, and its node is held: every
later call of the node ends held recovery_hold, sending nothing. Verify in the host whether the
turn ran (crw flow effects says what to verify and where), then give the verdict:

  --not-applied   it did not run: the node's next call may send again
  --applied       it ran: the node's next calls run too; --output records what it answered

The unknown call's rows are not changed, and it stays unknown for the workflow. The verdict is
journaled (effect_reconciled); a run whose process is live takes it itself. A run whose workflow
waits for the verdict (crw.effect) resumes in a process of its own, unless --no-resume; resume
any other run no process holds with crw flow resume. A run that has ended takes the verdict
too, for the record, and resumes nothing: its unresolved effects stay listed until then. Exit
status 2, with nothing written, without a verdict or for a call that did not end unknown.`,
		Example: `  crw flow effects RUN
  crw flow recover RUN c3 --not-applied && crw flow resume RUN
  crw flow recover RUN c3 --applied --output @answer.json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			g.runID = args[0]
			v := runner.Verdict{}
			switch {
			case applied && notApplied:
				return errs.New(errs.InvalidRequest, "recover: --applied and --not-applied exclude each other")
			case applied:
				v.Verdict = runner.VerdictApplied
			case notApplied:
				v.Verdict = runner.VerdictNotApplied
			}
			if cmd.Flags().Changed("output") {
				data, err := readFlagValue("--output", output, streams)
				if err != nil {
					return err
				}
				v.Output = data
			}
			svc, err := g.service()
			if err != nil {
				return err
			}
			out, err := svc.Recover(cmd.Context(), args[0], args[1], v, ops.Who(), !noResume)
			if err != nil {
				return err
			}
			if g.json {
				writeJSON(streams.Out, out)
				return nil
			}
			switch {
			case out.RunEnded:
				fmt.Fprintf(streams.Out, "call %s reconciled %s: the run has ended; the verdict is recorded and resumes nothing\n", out.Call, out.Verdict)
			case out.Journaled && len(out.HeldBy) > 0:
				fmt.Fprintf(streams.Out, "call %s reconciled %s: node %s stays held by %s, whose outcome is unknown too\n", out.Call, out.Verdict, out.Node, strings.Join(out.HeldBy, ", "))
			case out.Journaled && out.Verdict == runner.VerdictApplied:
				fmt.Fprintf(streams.Out, "call %s reconciled %s: node %s is released for the calls after it; the same call is never sent again\n", out.Call, out.Verdict, out.Node)
			case out.Journaled:
				fmt.Fprintf(streams.Out, "call %s reconciled %s: node %s is released for the calls after it, the same call included\n", out.Call, out.Verdict, out.Node)
			default:
				fmt.Fprintf(streams.Out, "call %s: the verdict %s is left for the run's live process\n", out.Call, out.Verdict)
			}
			if out.PID != 0 {
				fmt.Fprintf(streams.Out, "run %s resumed (pid %d): its workflow waited for the verdict\n", out.Run, out.PID)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&applied, "applied", false, "the effect happened")
	cmd.Flags().BoolVar(&notApplied, "not-applied", false, "the effect did not happen")
	cmd.Flags().StringVar(&output, "output", "", "with --applied: what the call answered, JSON or @FILE")
	cmd.Flags().BoolVar(&noResume, "no-resume", false, "journal the verdict and start nothing")
	return cmd
}

func newCmdEffects(g *globals, streams IO) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "effects [RUN]",
		Short: "List the effects whose outcome is unknown: what to verify, where, and how to reconcile each",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := g.service()
			if err != nil {
				return err
			}
			if len(args) == 1 {
				g.runID = args[0]
			}
			effects, err := svc.Effects(cmd.Context(), limit, args...)
			if err != nil {
				return err
			}
			if g.json {
				writeJSON(streams.Out, map[string]any{"effects": effects})
				return nil
			}
			if len(effects) == 0 {
				fmt.Fprintln(streams.Out, "no unresolved effect")
				return nil
			}
			for _, e := range effects {
				ended := ""
				if e.RunEnded {
					ended = "  (run ended)"
				}
				fmt.Fprintf(streams.Out, "run %s  %s %s  node %s  %s%s\n  verify %s\n  then   %s\n", e.Run, e.Kind, dash(e.Call), e.Node, dash(e.Reason), ended, e.Verify, e.Then)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "list at most N effects")
	return cmd
}

func newCmdInspect(g *globals, streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "inspect RUN",
		Short: "A run's diagnosis: where it stands, what holds it, what it waits for, and what to do next",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g.runID = args[0]
			svc, err := g.service()
			if err != nil {
				return err
			}
			in, err := svc.Inspect(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if st, ok := g.store.(*local.Store); ok {
				ops.HostState(st, in)
			}
			if g.json {
				writeJSON(streams.Out, in)
				return nil
			}
			w := streams.Out
			st := in.Status
			fmt.Fprintf(w, "run       %s\nstate     %s\n", st.Run, st.State)
			if st.Status != "" {
				fmt.Fprintf(w, "status    %s\n", st.Status)
			}
			fmt.Fprintf(w, "calls     %s\n", countsLine(st.Calls))
			if len(in.InFlight) > 0 {
				fmt.Fprintf(w, "open      %s\n", strings.Join(in.InFlight, ", "))
			}
			for _, h := range in.Held {
				fmt.Fprintf(w, "held      node %s, by call %s (unknown outcome)\n", h.Node, h.Call)
			}
			for _, v := range in.Verdicts {
				fmt.Fprintf(w, "verdict   call %s %s, by %s%s\n", v.Call, v.Verdict, dash(v.By), verdictOutput(v.Output))
			}
			for _, d := range st.Decisions {
				fmt.Fprintf(w, "decision  %s: %s\n", d.ID, d.Question)
			}
			if st.Error != nil {
				fmt.Fprintf(w, "error     %s\n", failureLine(st.Error))
			}
			if in.Log != "" {
				fmt.Fprintf(w, "log       %s\n", in.Log)
			}
			fmt.Fprintf(w, "backend   %s\n", in.Backend.Name)
			if in.Backend.Host != "" {
				fmt.Fprintf(w, "host      %s (%s)\n", in.Backend.Host, in.Backend.Reachable)
			}
			if in.Backend.HostLog != "" {
				fmt.Fprintf(w, "host log  %s\n", in.Backend.HostLog)
			}
			for _, n := range in.Next {
				fmt.Fprintf(w, "next      %s\n", n)
			}
			return nil
		},
	}
}

func newCmdAudit(g *globals, streams IO) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "audit [RUN]",
		Short: "The history of the mutations commands made (run, start, resume, cancel, answer, recover, delete, dispatched): who, when, and how each ended",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			run := ""
			if len(args) == 1 {
				run = args[0]
			}
			svc, err := g.service()
			if err != nil {
				return err
			}
			entries, err := svc.AuditLog(cmd.Context(), run, limit)
			if err != nil {
				return err
			}
			if g.json {
				writeJSON(streams.Out, map[string]any{"audit": entries})
				return nil
			}
			for _, e := range entries {
				fmt.Fprintf(streams.Out, "%s  %-10s %-22s %-12s %s", e.At.Format(time.RFC3339), e.Op, dash(e.Run), e.Who, e.Result)
				if e.Detail != "" && e.Result != "ok" {
					fmt.Fprintf(streams.Out, ": %s", e.Detail)
				}
				fmt.Fprintln(streams.Out)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 50, "the newest N entries")
	return cmd
}
