// Package list is crw flow list: the runs of the state folder, filtered by state and age.
package list

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store"
)

// States are the states --status takes.
var States = []string{string(store.StateRunning), string(store.StatePaused), string(store.StateWaitingDecision), string(store.StateWaitingResume), string(store.StateEnded), string(store.StateCrashed)}

// Options are crw flow list's.
type Options struct {
	cmdutil.Common
	States []string
	Limit  int
	Since  time.Duration
}

// NewCmdList is crw flow list; runF, when not nil, runs in place of the command.
func NewCmdList(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
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
		RunE: cmdutil.RunE(f, &opts.Common, opts, nil, runF, runList),
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&opts.States, "status", nil, "keep the runs in these states: "+strings.Join(States, ", "))
	fl.IntVar(&opts.Limit, "limit", 0, "the newest N runs only (0: all)")
	fl.DurationVar(&opts.Since, "since", 0, "the runs started within this long only (24h, 30m)")
	return cmd
}

func runList(opts *Options) error {
	for _, s := range opts.States {
		if !slices.Contains(States, s) && s != string(store.StateUnreadable) {
			return errs.New(errs.InvalidRequest, "--status %q: one of %s", s, strings.Join(States, ", "))
		}
	}
	if opts.Limit < 0 || opts.Since < 0 {
		return errs.New(errs.InvalidRequest, "--limit and --since must not be negative")
	}
	svc, err := opts.Service()
	if err != nil {
		return err
	}
	all, err := svc.List(opts.Ctx)
	if err != nil {
		return err
	}
	runs := []store.Status{}
	for _, r := range all {
		if len(opts.States) > 0 && !slices.Contains(opts.States, string(r.State)) {
			continue
		}
		if opts.Since > 0 && (r.Started.IsZero() || time.Since(r.Started) > opts.Since) {
			continue
		}
		runs = append(runs, r)
	}
	if opts.Limit > 0 && len(runs) > opts.Limit {
		runs = runs[len(runs)-opts.Limit:]
	}
	opts.Print(map[string]any{"runs": runs}, func(w io.Writer) { printRuns(w, runs) })
	return nil
}

func printRuns(w io.Writer, runs []store.Status) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", r.Run, r.State, cmdutil.Dash(status), r.Calls.Total(), started, r.Workflow)
	}
	_ = tw.Flush() // a write that fails is the root's to report
}
