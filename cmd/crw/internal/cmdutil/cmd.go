package cmdutil

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/engine"
)

// RunE is a command's RunE: once its flags are parsed, opts takes the Factory's part (into
// common) and, with take, what it takes of the command line; then runF, a test's, runs in place
// of run when it is given. An error about a field of the engine's names it by its flag
// (FlagNamed).
func RunE[O any](f *Factory, common *Common, opts O, take func(*cobra.Command, []string), runF, run func(O) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		*common = f.Common(cmd.Context())
		if take != nil {
			take(cmd, args)
		}
		if runF != nil {
			run = runF
		}
		return FlagNamed(run(opts), common.Outcome)
	}
}

// Options are what NewCmd fills: a command's Options, which embed Common and take the command
// line's arguments with their Take (RunArg's, or their own).
type Options interface {
	common() *Common
	Take(cmd *cobra.Command, args []string)
}

func (c *Common) common() *Common { return c }

// NewCmd is cmd run on opts by run, or by runF (a test's) when it is given: once the flags are
// parsed, opts takes the Factory's part and, with its Take, the arguments.
func NewCmd[O Options](f *Factory, opts O, runF, run func(O) error, cmd *cobra.Command) *cobra.Command {
	cmd.RunE = RunE(f, opts.common(), opts, opts.Take, runF, run)
	return cmd
}

// NewRunCmd is NewCmd of a command whose one argument is the run it works on, which opts takes
// (with the RunArg it embeds).
func NewRunCmd[O Options](f *Factory, opts O, runF, run func(O) error, cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.ExactArgs(1)
	return NewCmd(f, opts, runF, run, cmd)
}

// RunArg is the Options part of a command that works on the run its first argument names.
type RunArg struct{ Run string }

// Take takes the run from the command's arguments.
func (r *RunArg) Take(_ *cobra.Command, args []string) { r.Run = args[0] }

// RunOptions are the Options of a command that takes the run it works on and nothing else, and
// the part of those of a command that takes a run and flags.
type RunOptions struct {
	Common
	RunArg
}

// Show is what a command that shows a run does: the run service for run (its errors name the
// run from here on), get, and what get returned printed.
func Show[T any](c *Common, run string, get func(*engine.Service) (T, error), text func(io.Writer, T)) (T, error) {
	var none T
	svc, err := c.RunService(run)
	if err != nil {
		return none, err
	}
	v, err := get(svc)
	if err != nil {
		return none, err
	}
	c.Print(v, func(w io.Writer) { text(w, v) })
	return v, nil
}

// ShowRun is Show of what get, a method of the run service, says of the run opts names.
func ShowRun[T any](opts *RunOptions, get func(*engine.Service, context.Context, string) (T, error), text func(io.Writer, T)) error {
	_, err := Show(&opts.Common, opts.Run, func(svc *engine.Service) (T, error) { return get(svc, opts.Ctx, opts.Run) }, text)
	return err
}

// runsWorkflows is the annotation of a command that replays or runs a workflow in its own
// process.
const runsWorkflows = "crw:runs-workflows"

// RunsWorkflows are the Annotations of a command that replays or runs a workflow in its own
// process and ends (not one that starts another process to, nor a long-lived server, whose
// memory must go back when it is idle): its heap is readied for huge pages before it runs
// (gctune.LargeHeap), which costs a command that only reads a run's state more than it saves.
func RunsWorkflows() map[string]string { return map[string]string{runsWorkflows: ""} }

// RunsWorkflowsUnless are RunsWorkflows of a command that runs its workflow in a process of
// its own when its boolean flag is given (crw flow resume --detach).
func RunsWorkflowsUnless(flag string) map[string]string {
	return map[string]string{runsWorkflows: flag}
}

// WorkflowRunner reports whether cmd, its flags parsed, runs a workflow in this process: made
// with RunsWorkflows, or with RunsWorkflowsUnless and without its flag.
func WorkflowRunner(cmd *cobra.Command) bool {
	flag, ok := cmd.Annotations[runsWorkflows]
	if !ok {
		return false
	}
	elsewhere, _ := cmd.Flags().GetBool(flag) // false for "": no such flag
	return !elsewhere
}
