package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/htmlview"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/runner"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/userfile"
)

func newCmdList(g *globals, streams IO) *cobra.Command {
	var states []string
	var limit int
	var since time.Duration
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the runs in the state folder",
		Long: `List the runs in the state folder, oldest first: each with its state, its status once it has
ended, its calls, when it started and its workflow. --status keeps the runs in the states named
(running, paused, waiting_decision, waiting_resume, ended, crashed; repeatable or comma-separated), --since those
started within the last D, and --limit the newest N of what is left.`,
		Example: `  crw flow list
  crw flow list --status running,paused --since 24h
  crw flow list --limit 5 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, s := range states {
				if !slices.Contains(listStates, s) && s != string(store.StateUnreadable) {
					return errs.New(errs.InvalidRequest, "--status %q: one of %s", s, strings.Join(listStates, ", "))
				}
			}
			if limit < 0 || since < 0 {
				return errs.New(errs.InvalidRequest, "--limit and --since must not be negative")
			}
			svc, err := g.service()
			if err != nil {
				return err
			}
			all, err := svc.List(cmd.Context())
			if err != nil {
				return err
			}
			runs := []store.Status{}
			for _, r := range all {
				if len(states) > 0 && !slices.Contains(states, string(r.State)) {
					continue
				}
				if since > 0 && (r.Started.IsZero() || time.Since(r.Started) > since) {
					continue
				}
				runs = append(runs, r)
			}
			if limit > 0 && len(runs) > limit {
				runs = runs[len(runs)-limit:]
			}
			if g.json {
				writeJSON(streams.Out, map[string]any{"runs": runs})
				return nil
			}
			tw := tabwriter.NewWriter(streams.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tSTATE\tSTATUS\tCALLS\tSTARTED\tWORKFLOW")
			for _, r := range runs {
				status := string(r.Status)
				if r.State == store.StateUnreadable && r.Error != nil {
					status = r.Error.Code
				}
				started := "-"
				if !r.Started.IsZero() {
					started = r.Started.Local().Format("2006-01-02 15:04:05")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", r.Run, r.State, dash(status), r.Calls.Total(), started, r.Workflow)
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&states, "status", nil, "keep the runs in these states: "+strings.Join(listStates, ", "))
	f.IntVar(&limit, "limit", 0, "the newest N runs only (0: all)")
	f.DurationVar(&since, "since", 0, "the runs started within this long only (24h, 30m)")
	return cmd
}

func newCmdStatus(g *globals, streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "status RUN",
		Short: "Show a run's state: running, paused, waiting_decision, waiting_resume, ended or crashed",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g.runID = args[0]
			svc, err := g.service()
			if err != nil {
				return err
			}
			st, err := svc.Status(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if g.json {
				writeJSON(streams.Out, st)
				return nil
			}
			fmt.Fprintf(streams.Out, "run       %s\nworkflow  %s\nbackend   %s\nstate     %s\n", st.Run, st.Workflow, st.Backend, st.State)
			if st.Status != "" {
				fmt.Fprintf(streams.Out, "status    %s\n", st.Status)
			}
			if st.Holder != "" {
				fmt.Fprintf(streams.Out, "holder    %s\n", st.Holder)
			}
			fmt.Fprintf(streams.Out, "calls     %s (%d in flight)\ntokens    %d\n", countsLine(st.Calls), st.InFlight, st.Tokens.Total)
			for _, d := range st.Decisions {
				if strings.HasPrefix(d.ID, journal.VerdictPrefix) {
					fmt.Fprintf(streams.Out, "decision  %s: %s\n", d.ID, d.Question) // the question says how
					continue
				}
				fmt.Fprintf(streams.Out, "decision  %s: %s\n          answer it: crw flow answer %s %s --value JSON\n", d.ID, d.Question, st.Run, d.ID)
			}
			if st.Error != nil {
				fmt.Fprintf(streams.Out, "error     %s\n", failureLine(st.Error))
			} else if st.State == store.StateEnded {
				fmt.Fprintf(streams.Out, "result    %s\n", compact(st.Result))
			}
			if n := engine.StateNext(st); n != "" {
				fmt.Fprintf(streams.Out, "next      %s\n", n)
			}
			return nil
		},
	}
}

// progressEvent is a look at a run as live progress shows it.
func progressEvent(st *store.Status) runner.Event {
	return runner.Event{Kind: runner.EventProgress, Run: st.Run, Calls: st.Calls, InFlight: st.InFlight, Tokens: st.Tokens}
}

func newCmdTrace(g *globals, streams IO) *cobra.Command {
	var output, mode string
	cmd := &cobra.Command{
		Use:   "trace RUN",
		Short: "Export a run's journal as a trace (JSON Lines, crw-trace/1), while it runs too",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g.runID = args[0]
			svc, err := g.service()
			if err != nil {
				return err
			}
			// The rows stream from the journal to the trace: memory stays flat in the run's size.
			if _, err := svc.Store.Spec(cmd.Context(), args[0]); err != nil {
				return err
			}
			export := func(w io.Writer) (uint64, error) {
				tw, err := journal.NewTraceWriter(w, args[0])
				if err != nil {
					return 0, err
				}
				if err := svc.Store.Rows(cmd.Context(), args[0], 1, tw.Row); err != nil {
					return tw.Rows(), err
				}
				return tw.Rows(), tw.Flush()
			}
			if output == "" || output == "-" {
				if cmd.Flags().Changed("mode") {
					return errs.New(errs.InvalidRequest, "--mode goes with --output FILE")
				}
				_, err := export(streams.Out)
				return err
			}
			if err := outsideState(g, output); err != nil {
				return err
			}
			perm, err := exportMode(mode)
			if err != nil {
				return err
			}
			f, err := os.OpenFile(output, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
			if err != nil {
				return errs.New(errs.InvalidRequest, "--output %s: %v", output, errors.Unwrap(err))
			}
			regular := false
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
				// An existing file keeps its mode otherwise; a device or a pipe (/dev/stdout)
				// is written to as it is.
				regular = true
				if err := f.Chmod(perm); err != nil {
					f.Close()
					return errs.New(errs.CapabilityUnavailable, "--output %s: %v", output, errors.Unwrap(err))
				}
			}
			rows, err := export(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				if regular {
					os.Remove(output) // no half of a trace is left for a whole one
				}
				if _, ok := errs.As(err); ok {
					return err // the journal's: it says what is wrong with the run
				}
				return errs.New(errs.CapabilityUnavailable, "--output %s: the trace could not be written", output).Wrap(err)
			}
			if g.json {
				writeJSON(streams.Out, map[string]any{"run": args[0], "file": output, "rows": rows})
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the trace to this file instead of stdout")
	cmd.Flags().StringVar(&mode, "mode", "0600", "with --output: the file's mode, in octal (it holds prompts and answers)")
	return cmd
}

func newCmdShow(g *globals, streams IO) *cobra.Command {
	var html, follow bool
	var out, trace, modeText string
	cmd := &cobra.Command{
		Use:   "show RUN [CALL]",
		Short: "Show a run's timeline of calls, or one call, while it runs too",
		Long: `Show a run's timeline of calls (role, node, status, reason, turns, tokens, time), its commits,
tier steps, decisions, verdicts and warnings; or one call's rows in detail.

With --html it writes one self-contained HTML page of the run instead (to -o FILE, else to
standard output): a lane per node, each call a bar from its start to its end coloured by its
status, its turns and repair inside it, continuations as links, held and unknown calls and the
pause marked, times and tokens on hover, and the call's rows, prompt and answer on click. The
page loads nothing from the network. --trace FILE draws a trace instead of a run; --follow
rewrites FILE every two seconds until the run ends (the page reloads itself meanwhile).`,
		Example: `  crw flow show RUN
  crw flow show RUN c3
  crw flow show RUN --html -o run.html
  crw flow show --trace run.jsonl --html -o run.html`,
		Args: cobra.RangeArgs(0, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("mode") && (!html || out == "") {
				return errs.New(errs.InvalidRequest, "--mode goes with --html -o FILE")
			}
			if html {
				return showHTML(cmd.Context(), g, streams, args, trace, out, modeText, follow)
			}
			if trace != "" || out != "" || follow {
				return errs.New(errs.InvalidRequest, "--trace, -o and --follow go with --html")
			}
			if len(args) == 0 {
				return errs.New(errs.InvalidRequest, "show: name the run")
			}
			g.runID = args[0]
			svc, err := g.service()
			if err != nil {
				return err
			}
			s, err := svc.Timeline(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if len(args) == 2 {
				return showCall(g, streams, s, args[1])
			}
			if g.json {
				writeJSON(streams.Out, s)
				return nil
			}
			w := streams.Out
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
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", c.Call, c.Role, c.Node, st, dash(c.Reason), c.Turns, c.Tokens.Total, time.Duration(c.DurationMS)*time.Millisecond)
			}
			if err := tw.Flush(); err != nil {
				return err
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
					fmt.Fprintf(w, "decision %s answered by %s: %s\n", st.DecisionID, dash(st.By), compact(st.Output))
				case journal.TypeEffectReconciled:
					fmt.Fprintf(w, "verdict on %s by %s: %s%s\n", st.Effect, dash(st.By), st.Verdict, verdictOutput(st.Output))
				}
			}
			fmt.Fprintf(w, "%d calls: %s; %d tokens", len(s.Calls), countsLine(s.Counts), s.Tokens.Total)
			if s.Ended != nil {
				fmt.Fprintf(w, "; %s", s.Ended.Sub(s.Started).Round(time.Millisecond))
			}
			fmt.Fprintln(w)
			if s.Error != nil {
				fmt.Fprintf(w, "error: %s\n", failureLine(s.Error))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&html, "html", false, "write the run as one self-contained HTML page")
	f.StringVarP(&out, "output", "o", "", "with --html: the file to write (default: standard output)")
	f.StringVar(&modeText, "mode", "0600", "with --html -o: the file's mode, in octal (it holds prompts and answers)")
	f.StringVar(&trace, "trace", "", "with --html: draw this trace file (crw flow trace) instead of a run")
	f.BoolVar(&follow, "follow", false, "with --html -o FILE: rewrite FILE until the run ends")
	return cmd
}

func showCall(g *globals, streams IO, s *engine.Timeline, id string) error {
	for _, c := range s.Calls {
		if c.Call != id {
			continue
		}
		if g.json {
			writeJSON(streams.Out, c)
			return nil
		}
		w := streams.Out
		status := dash(string(c.Status))
		if c.Reason != "" {
			status += " " + c.Reason
		}
		fmt.Fprintf(w, "call     %s (#%d) at %s\nrole     %s\nnode     %s\nstatus   %s\n", c.Call, c.Index, dash(c.Site), c.Role, c.Node, status)
		if c.Attempts > 1 {
			// A resume took the call up again: this is its newest generation.
			fmt.Fprintf(w, "attempt  %d (its rows from seq %d on; crw flow trace has every attempt's)\n", c.Attempts, c.StartSeq)
		}
		if c.Detail != "" {
			fmt.Fprintf(w, "detail   %s\n", c.Detail)
		}
		fmt.Fprintf(w, "thread   %s (%s, %s)\n", dash(c.ThreadID), dash(c.Model), dash(c.Effort))
		if c.Handle != "" {
			fmt.Fprintf(w, "handle   %s\n", c.Handle)
		}
		if c.Continues != "" {
			fmt.Fprintf(w, "resumes  %s\n", c.Continues)
		}
		fmt.Fprintf(w, "turns    %d (repair used: %v)\n", c.Turns, c.RepairUsed)
		if c.Repair != "" {
			fmt.Fprintf(w, "repair   %s\n", indentAfterFirst(c.Repair))
		}
		fmt.Fprintf(w, "tokens   %d in, %d out\nprompt   %s\n", c.Tokens.Input, c.Tokens.Output, indentAfterFirst(c.Prompt))
		if c.Output != nil {
			fmt.Fprintf(w, "output   %s\n", compact(c.Output))
		}
		return nil
	}
	return errs.New(errs.InvalidRequest, "run %s has no call %q", s.Run, id)
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return string(journal.UnescapeHTML(b.Bytes()))
}

func indentAfterFirst(s string) string { return strings.ReplaceAll(s, "\n", "\n         ") }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func countsLine(c store.Counts) string {
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

// outsideState refuses an output file inside the state folder: its files are the runs'
// journals and specs, and truncating one (trace -o journal.db) would destroy a run.
func outsideState(g *globals, output string) error {
	root, err := g.stateDir()
	if err != nil {
		return err
	}
	resolve := func(p string) string {
		abs, err := filepath.Abs(p)
		if err != nil {
			return p
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			return real
		}
		// A file not made yet: resolve its folder.
		if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
			return filepath.Join(dir, filepath.Base(abs))
		}
		return abs
	}
	out, state := resolve(output), resolve(root)
	if rel, err := filepath.Rel(state, out); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return errs.New(errs.InvalidRequest, "--output %s: inside the state folder %s, whose files only crw writes; write the trace elsewhere", output, root)
	}
	return nil
}

// shortID is a commit's first 12 hex digits.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// verdictOutput is an applied verdict's recorded output, as a verdict line ends.
func verdictOutput(out json.RawMessage) string {
	if len(out) == 0 {
		return ""
	}
	return ", output " + compact(out)
}

// maxShownWarnings bounds the warnings show prints; the trace has them all.
const maxShownWarnings = 20

// showHTML writes the HTML page of a run (or a trace), once or, with follow, until it ends.
func showHTML(ctx context.Context, g *globals, streams IO, args []string, trace, out, modeText string, follow bool) error {
	mode, err := exportMode(modeText)
	if err != nil {
		return err
	}
	switch {
	case trace != "" && len(args) > 0:
		return errs.New(errs.InvalidRequest, "--trace draws a trace: name no run with it")
	case trace == "" && len(args) != 1:
		return errs.New(errs.InvalidRequest, "show --html: name one run (or --trace FILE)")
	case follow && (out == "" || trace != ""):
		return errs.New(errs.InvalidRequest, "--follow rewrites a file: give -o FILE and a run")
	}
	if out != "" {
		if err := outsideState(g, out); err != nil {
			return err
		}
	}
	if trace != "" {
		f, err := userfile.Open(trace)
		if err != nil {
			return errs.New(errs.InvalidRequest, "--trace %s: %v", trace, err)
		}
		rows, err := journal.Import(f)
		f.Close()
		if err != nil {
			return errs.New(errs.InvalidRequest, "--trace %s: %v", trace, err)
		}
		return writePage(streams, out, mode, rows, htmlview.Options{})
	}
	g.runID = args[0]
	svc, err := g.service()
	if err != nil {
		return err
	}
	for {
		st, err := svc.Status(ctx, args[0])
		if err != nil {
			return err
		}
		rows, err := svc.Rows(ctx, args[0])
		if err != nil {
			return err
		}
		live := st.State == store.StateRunning
		if err := writePage(streams, out, mode, rows, htmlview.Options{Live: live && follow, Now: time.Now()}); err != nil {
			return err
		}
		if !follow || !live {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(2 * time.Second):
		}
	}
}

func writePage(streams IO, out string, mode os.FileMode, rows []journal.Row, opts htmlview.Options) error {
	var b bytes.Buffer
	if err := htmlview.Render(&b, rows, opts); err != nil {
		return err
	}
	if out == "" {
		_, err := streams.Out.Write(b.Bytes())
		return err
	}
	if err := writeWhole(out, b.Bytes(), mode); err != nil {
		return errs.New(errs.CapabilityUnavailable, "-o %s: cannot write: %v", out, err)
	}
	return nil
}

// exportMode reads --mode: an octal file mode, 0600 by default, as crw keeps a run's own
// files (a trace and a page hold prompts and answers).
func exportMode(text string) (os.FileMode, error) {
	m, err := strconv.ParseUint(text, 8, 32)
	if err != nil || m > 0o777 || m&0o600 != 0o600 {
		return 0, errs.New(errs.InvalidRequest, "--mode %s: an octal mode such as 0600 or 0644 that lets its owner read and write it", text)
	}
	return os.FileMode(m), nil
}
