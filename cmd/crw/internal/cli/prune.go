package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/store"
)

// pruned is what crw flow prune did with one run.
type pruned struct {
	Run     string `json:"run"`
	State   string `json:"state"`
	Deleted bool   `json:"deleted"`
	// Kept says why a run old enough was kept: live (a process holds it), unfinished (it can
	// go on, and --unfinished was not given), or the error that stopped its removal.
	Kept string `json:"kept,omitempty"`
}

func newCmdPrune(g *globals, streams IO) *cobra.Command {
	var olderThan time.Duration
	var unfinished, dryRun bool
	var opts engine.DeleteOptions
	cmd := &cobra.Command{
		Use:   "prune --older-than D",
		Short: "Remove the runs that ended longer ago than D",
		Long: `Remove the runs of the state folder that started longer ago than D and have ended, with their
journals and every file of them, their worktrees and, unless --keep-refs, their refs in their
repositories. A run a process holds is never removed. A run that can still go
on (paused, waiting for a decision, crashed) is kept unless --unfinished. --dry-run lists what
would go and removes nothing.`,
		Example: `  crw flow prune --older-than 720h
  crw flow prune --older-than 24h --unfinished --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if olderThan <= 0 {
				return errs.New(errs.InvalidRequest, "prune: --older-than D is required, more than 0 (720h, 30m)")
			}
			svc, err := g.service()
			if err != nil {
				return err
			}
			runs, err := svc.List(cmd.Context())
			if err != nil {
				return err
			}
			out := []pruned{}
			for _, r := range runs {
				if r.Started.IsZero() || time.Since(r.Started) < olderThan {
					continue
				}
				p := pruned{Run: r.Run, State: string(r.State)}
				switch {
				case r.State == store.StateRunning:
					p.Kept = "live"
				case r.State != store.StateEnded && r.State != store.StateUnreadable && !unfinished:
					p.Kept = "unfinished"
				case dryRun:
				default:
					if err := svc.Delete(cmd.Context(), r.Run, opts); err != nil {
						p.Kept = err.Error()
					} else {
						p.Deleted = true
					}
				}
				out = append(out, p)
			}
			var gone []string
			for _, p := range out {
				if p.Deleted {
					gone = append(gone, p.Run)
				}
			}
			if !dryRun {
				// Also what an earlier prune or delete, killed part-way, left.
				_, _ = svc.CollectFiles(cmd.Context())
			}
			g.auditDetail = fmt.Sprintf("%d runs deleted: %v", len(gone), gone)
			if g.json {
				writeJSON(streams.Out, map[string]any{"runs": out, "dry_run": dryRun})
				return nil
			}
			n := 0
			for _, p := range out {
				switch {
				case p.Deleted:
					n++
					fmt.Fprintf(streams.Out, "deleted %s (%s)\n", p.Run, p.State)
				case p.Kept != "":
					fmt.Fprintf(streams.Out, "kept    %s (%s): %s\n", p.Run, p.State, p.Kept)
				default:
					fmt.Fprintf(streams.Out, "would delete %s (%s)\n", p.Run, p.State)
				}
			}
			fmt.Fprintf(streams.Out, "%d runs deleted\n", n)
			return nil
		},
	}
	f := cmd.Flags()
	f.DurationVar(&olderThan, "older-than", 0, "remove the runs started longer ago than this (720h)")
	f.BoolVar(&unfinished, "unfinished", false, "remove runs that could still go on too (paused, waiting, crashed)")
	f.BoolVar(&dryRun, "dry-run", false, "list what would go; remove nothing")
	f.BoolVar(&opts.KeepRefs, "keep-refs", false, "keep the runs' refs (refs/crw/flow/RUN/) in their repositories")
	return cmd
}

// withAlias is cmd answering to another name too.
func withAlias(cmd *cobra.Command, alias string) *cobra.Command {
	cmd.Aliases = append(cmd.Aliases, alias)
	return cmd
}
