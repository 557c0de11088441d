// Package prune is crw flow prune: the runs that ended longer ago than a duration removed.
package prune

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store"
)

// Options are crw flow prune's.
type Options struct {
	cmdutil.Common
	OlderThan  time.Duration
	Unfinished bool
	DryRun     bool
	Delete     engine.DeleteOptions
}

// pruned is what crw flow prune did with one run.
type pruned struct {
	Run     string `json:"run"`
	State   string `json:"state"`
	Deleted bool   `json:"deleted"`
	// Kept says why a run old enough was kept: live (a process holds it), unfinished (it can
	// go on, and --unfinished was not given), or the error that stopped its removal.
	Kept string `json:"kept,omitempty"`
}

// NewCmdPrune is crw flow prune; runF, when not nil, runs in place of the command.
func NewCmdPrune(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "prune --older-than D",
		Short: "Remove the ended runs that started longer ago than D",
		Long: `Remove the runs of the state folder that started longer ago than D and have ended, with their
journals and every file of them, their worktrees and, unless --keep-refs, their refs in their
repositories. A run a process holds is never removed. A run that can still go
on (paused, waiting for a decision, crashed) is kept unless --unfinished. --dry-run lists what
would go and removes nothing.

Exit status: 0 when what was due went (nothing included), 1 when a run could not be removed, 2
on bad input.`,
		Example: `  crw flow prune --older-than 30d
  crw flow prune --older-than 24h --unfinished --dry-run`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(f, &opts.Common, opts, nil, runF, runPrune),
	}
	fl := cmd.Flags()
	fl.Var((*cmdutil.AgeFlag)(&opts.OlderThan), "older-than", "remove the runs started longer ago than this (30d, 720h)")
	fl.BoolVar(&opts.Unfinished, "unfinished", false, "remove runs that could still go on too (paused, waiting, crashed)")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "list what would go; remove nothing")
	fl.BoolVar(&opts.Delete.KeepRefs, "keep-refs", false, "keep the runs' refs (refs/crw/flow/RUN/) in their repositories")
	return cmd
}

func runPrune(opts *Options) error {
	if opts.OlderThan <= 0 {
		return errs.New(errs.InvalidRequest, "prune: --older-than D is required, more than 0 (30d, 720h, 30m)")
	}
	svc, err := opts.Service()
	if err != nil {
		return err
	}
	out, err := prune(opts, svc)
	if err != nil {
		return err
	}
	var gone []string
	for _, p := range out {
		if p.Deleted {
			gone = append(gone, p.Run)
		}
	}
	if !opts.DryRun {
		// Also what an earlier prune or delete, killed part-way, left.
		_, _ = svc.CollectFiles(opts.Ctx)
	}
	opts.Outcome.AuditDetail = fmt.Sprintf("%d runs deleted: %v", len(gone), gone)
	opts.Print(map[string]any{"runs": out, "dry_run": opts.DryRun}, func(w io.Writer) {
		printPruned(w, out, opts.DryRun)
	})
	return nil
}

// prune removes the runs old enough that may go, and says what it did with each.
func prune(opts *Options, svc *engine.Service) ([]pruned, error) {
	runs, err := svc.List(opts.Ctx)
	if err != nil {
		return nil, err
	}
	out := []pruned{}
	for _, r := range runs {
		if r.State == store.StateUnreadable && r.Error != nil && r.Error.Reason == "journal_unrecovered" {
			// Its age cannot be read, and it is no damaged run: a resume recovers it.
			out = append(out, pruned{Run: r.Run, State: string(r.State),
				Kept: "its journal waits for its recovery after the machine's restart: crw flow resume " + r.Run})
			continue
		}
		if r.Started.IsZero() || time.Since(r.Started) < opts.OlderThan {
			continue
		}
		p := pruned{Run: r.Run, State: string(r.State)}
		switch {
		case r.State == store.StateRunning:
			p.Kept = "live"
		case r.State != store.StateEnded && r.State != store.StateUnreadable && !opts.Unfinished:
			p.Kept = "unfinished"
		case opts.DryRun:
		default:
			if err := svc.Delete(opts.Ctx, r.Run, opts.Delete); err != nil {
				p.Kept = err.Error()
			} else {
				p.Deleted = true
			}
		}
		out = append(out, p)
	}
	return out, nil
}

func printPruned(w io.Writer, out []pruned, dryRun bool) {
	n := 0
	for _, p := range out {
		switch {
		case p.Deleted:
			n++
			fmt.Fprintf(w, "deleted %s (%s)\n", p.Run, p.State)
		case p.Kept != "":
			fmt.Fprintf(w, "kept    %s (%s): %s\n", p.Run, p.State, p.Kept)
		default:
			n++
			fmt.Fprintf(w, "would delete %s (%s)\n", p.Run, p.State)
		}
	}
	if dryRun {
		fmt.Fprintf(w, "%s would be deleted; nothing was (--dry-run)\n", runs(n))
		return
	}
	fmt.Fprintf(w, "%s deleted\n", runs(n))
}

// runs is n runs, in words.
func runs(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}
