// Package run is crw flow run: a workflow run to its end in this process, with live progress.
package run

import (
	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/createflags"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/foreground"
)

// Options are crw flow run's.
type Options struct {
	cmdutil.Common
	// Create is what the run is created with.
	Create createflags.Flags
}

// NewCmdRun is crw flow run; runF, when not nil, runs in place of the command.
func NewCmdRun(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Annotations: cmdutil.RunsWorkflows(),
		Use:         "run WORKFLOW",
		Short:       "Run a workflow in the foreground, with live progress",
		Long: `Run a workflow (a .js or .ts file) to its end in this process.

The workflow's return value is printed as JSON on stdout. With --json, stdout is one JSON
object: {"run": ID, "status": ..., "result": ..., "error": ..., "calls": {STATUS: COUNT}}.

Exit status: 0 when the workflow returned, 1 when it threw, met a limit or was cancelled, 2 on
bad input (flags, input, answers or role file, a workflow that does not load), 3 when the run
paused (a usage or rate limit, or its token budget: crw flow resume goes on with it), 4 when it
waits for a decision (crw flow answer). Neither 3 nor 4 prints a result (with --json, "result" is
null): the run is not over.`,
		Args: cobra.ExactArgs(1),
	}
	take := createflags.Add(cmd, f, &opts.Create, "fake")
	cmd.RunE = cmdutil.RunE(f, &opts.Common, opts, take, runF, runRun)
	return cmd
}

func runRun(opts *Options) error {
	opts.Outcome.RunOutput = true
	co, svc, err := createflags.Open(&opts.Common, &opts.Create)
	if err != nil {
		return err
	}
	// A run of crw flow run gives its calls no startSeq and endSeq (call-result.md).
	co.OmitCallSeqs = true
	id, err := svc.Create(opts.Ctx, co)
	if err != nil {
		return err
	}
	opts.WorksOn(id)
	return foreground.Run(&opts.Common, svc, id, false)
}
