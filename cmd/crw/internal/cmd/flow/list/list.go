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
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// States are the states --status takes.
var States = ops.ListStates

// Statuses are the statuses --status takes: how a run's last process ended it.
var Statuses = ops.ListStatuses

// Options are crw flow list's.
type Options struct {
	cmdutil.Common
	States   []string
	Statuses []string
	Limit    int
	Since    time.Duration
	Before   string
}

// DefaultLimit is how many runs a page holds unless --limit says.
const DefaultLimit = 100

// NewCmdList is crw flow list; runF, when not nil, runs in place of the command.
func NewCmdList(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the runs in the state folder",
		Long: `List the runs in the state folder (or on the store --store names), a page of the newest at a
time, newest first: each with its state, its status once its process ended it, its calls, when
it started and its workflow. --status keeps the runs whose STATUS column says one of the
statuses named (completed, failed, cancelled, paused, waiting_decision) or whose STATE column
says one of the states named (running, paused, waiting_decision, waiting_resume, ended,
crashed, queued), repeatable or comma-separated; --since those started within the last D (7d, 24h, 30m),
and --limit the newest N of what is left (100 unless it says; 0: all).
When older runs are left, the command that lists the next page is said on stderr (with --json,
"next" is the run to give --before; null when none is left); a page costs the reads of its own
runs, however many the store holds.

Exit status: 0 when the runs were listed (none included), 1 when the store could not be read, 2
on bad input.`,
		Example: `  crw flow list
  crw flow list --status running,paused --since 24h
  crw flow list --status failed --since 7d
  crw flow list --limit 5 --json
  crw flow list --before 20261130-052301-a1b2c3`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(f, &opts.Common, opts, nil, runF, runList),
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&opts.Statuses, "status", nil, "keep the runs of these statuses ("+strings.Join(Statuses, ", ")+") or states ("+strings.Join(States, ", ")+")")
	fl.IntVar(&opts.Limit, "limit", DefaultLimit, "the newest N runs only (0: all)")
	fl.StringVar(&opts.Before, "before", "", "the runs older than this one only: the next page")
	fl.Var((*cmdutil.AgeFlag)(&opts.Since), "since", "the runs started within this long only (7d, 24h, 30m)")
	return cmd
}

func runList(opts *Options) error {
	states, statuses, bad := ops.ListFilter(opts.Statuses)
	if bad != "" {
		return errs.New(errs.InvalidRequest, "--status %q: a status (%s) or a state (%s)", bad, strings.Join(Statuses, ", "), strings.Join(States, ", "))
	}
	for _, s := range opts.States {
		if !slices.Contains(States, s) && s != string(store.StateUnreadable) {
			return errs.New(errs.InvalidRequest, "--status %q: a status (%s) or a state (%s)", s, strings.Join(Statuses, ", "), strings.Join(States, ", "))
		}
	}

	if opts.Limit < 0 || opts.Since < 0 {
		return errs.New(errs.InvalidRequest, "--limit and --since must not be negative")
	}
	if opts.Before != "" && !journal.ValidRunID(opts.Before) {
		return errs.New(errs.InvalidRequest, "--before %q: a run id (like 20261130-052301-a1b2c3)", opts.Before)
	}
	svc, err := opts.Service()
	if err != nil {
		return err
	}
	q := engine.ListQuery{Limit: opts.Limit, Before: opts.Before, States: states, Statuses: statuses}
	for _, s := range opts.States {
		q.States = append(q.States, store.State(s))
	}
	if opts.Since > 0 {
		q.Since = time.Now().Add(-opts.Since)
	}
	page, err := svc.ListPage(opts.Ctx, q)
	if err != nil {
		return err
	}
	slices.Reverse(page.Runs) // newest first
	var next *string
	if page.Next != "" {
		next = &page.Next
	}
	out := struct {
		Runs []store.Status `json:"runs"`
		Next *string        `json:"next"` // the run to give --before for the page of older runs
	}{page.Runs, next}
	opts.Print(out, func(w io.Writer) {
		printRuns(w, page.Runs)
		if next != nil {
			fmt.Fprintf(opts.IO.ErrOut, "crw: older runs: %s\n", nextCommand(opts, *next))
		}
	})
	return nil
}

// nextCommand is the command line that lists the page after this one.
func nextCommand(opts *Options, before string) string {
	cmd := "crw flow list --before " + before
	if names := append(slices.Clone(opts.States), opts.Statuses...); len(names) > 0 {
		cmd += " --status " + strings.Join(names, ",")
	}
	if opts.Since > 0 {
		cmd += " --since " + (*cmdutil.AgeFlag)(&opts.Since).String()
	}
	if opts.Limit != DefaultLimit {
		cmd += fmt.Sprintf(" --limit %d", opts.Limit)
	}
	return cmd
}

func printRuns(w io.Writer, runs []store.Status) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATE\tSTATUS\tCALLS\tSTARTED\tWORKFLOW")
	for _, r := range runs {
		status := string(r.Status)
		if r.State == store.StateUnreadable && r.Error != nil {
			status = r.Error.Code
			if r.Error.Reason != "" && r.Error.Reason != "unreadable" {
				status = r.Error.Reason // journal_unrecovered, journal_damaged, …: what to do differs
			}
		}
		started := "-"
		if !r.Started.IsZero() {
			started = r.Started.Local().Format("2006-01-02 15:04:05")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", r.Run, r.State, cmdutil.Dash(status), r.Calls.Total(), started, r.Workflow)
	}
	_ = tw.Flush() // a write that fails is the root's to report
}
