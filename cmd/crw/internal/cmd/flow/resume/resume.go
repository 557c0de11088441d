// Package resume is crw flow resume: a run that stopped goes on, here or in a process of its own.
package resume

import (
	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/foreground"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/errs"
)

// Options are crw flow resume's.
type Options struct {
	cmdutil.Common
	Run string
	// ScriptArgs are SCRIPT, the second argument, when it is given; Script is --script.
	ScriptArgs []string
	Script     string
	Answers    string
	// Budget is --budget-tokens, a change only when BudgetSet.
	Budget    int64
	BudgetSet bool
	Detach    bool
}

// NewCmdResume is crw flow resume; runF, when not nil, runs in place of the command.
func NewCmdResume(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Annotations: cmdutil.RunsWorkflowsUnless("detach"),
		Use:         "resume RUN [SCRIPT]",
		Short:       "Go on with a run that stopped: replay its journal and finish it",
		Long: `Resume a run whose process died or that a usage or rate limit paused.

The script runs again from the top over the run's journal: every call the journal answered
resolves from it without touching the backend, in the order it was recorded; a call that was
under way is reconciled with the backend, never sent twice; calls held by a pause run again.
A script that asks for another call than the journal recorded stops with a divergence.

With SCRIPT (or --script FILE) the run goes on with an edited workflow: it must replay the
journal as recorded (where crw flow shadow reports a divergence the resume is refused, exit 1,
nothing written), and may take new paths from where the record ends. With --answers FILE a run
on the fake backend goes on with another answers file, and with --budget-tokens N a run paused
by its token budget goes on with a larger one (its held calls run again). A change is journaled
(resume_changed) and holds for every later process of the run; run.json is not rewritten.

Exit status: as crw flow run's: 0 when the workflow returned, 1 when it threw, met a limit or
was cancelled, the resume failed (a divergence included) or the run is not there, 2 on bad
input, 3 when it paused again, 4 when it waits for a decision. With --detach: 0 when its process
started, 1 when it could not or the run is not there, 2 on bad input.`,
		Example: `  crw flow resume RUN
  crw flow resume RUN --answers more-answers.json
  crw flow resume RUN edited-workflow.js --detach`,
		Args: cobra.RangeArgs(1, 2),
		RunE: cmdutil.RunE(f, &opts.Common, opts, opts.take, runF, runResume),
	}
	cmd.Flags().BoolVar(&opts.Detach, "detach", false, "resume in a process of its own and return at once")
	cmd.Flags().StringVar(&opts.Script, "script", "", "go on with this edited workflow (it must replay the journal as recorded)")
	cmd.Flags().StringVar(&opts.Answers, "answers", "", "a run on the fake backend: go on with this answers file")
	cmd.Flags().Int64Var(&opts.Budget, "budget-tokens", 0, "go on with this token budget (0: none): a run paused by its budget runs its held calls again")
	return cmd
}

// take takes the run, SCRIPT when given, and whether --budget-tokens was.
func (o *Options) take(cmd *cobra.Command, args []string) {
	o.Run, o.ScriptArgs, o.BudgetSet = args[0], args[1:], cmd.Flags().Changed("budget-tokens")
}

func runResume(opts *Options) error {
	svc, err := opts.Service()
	if err != nil {
		return err
	}
	opts.Outcome.RunOutput, opts.Outcome.Detached = !opts.Detach, opts.Detach
	opts.WorksOn(opts.Run)
	change, err := resumeChange(opts)
	if err != nil {
		return err
	}
	if opts.Detach {
		pid, err := ops.ResumeDetached(opts.Ctx, svc, opts.Run, change, ops.Who())
		if err != nil {
			return err
		}
		foreground.PrintDetached(&opts.Common, opts.Run, pid, nil, nil)
		return nil
	}
	if err := svc.ChangeResume(opts.Ctx, opts.Run, change, ops.Who()); err != nil {
		return err
	}
	return foreground.Run(&opts.Common, svc, opts.Run, true)
}

// resumeChange is what the resume changes of the run: its script, answers or budget.
func resumeChange(opts *Options) (engine.ResumeChange, error) {
	script := opts.Script
	for _, arg := range opts.ScriptArgs {
		if script != "" && script != arg {
			return engine.ResumeChange{}, errs.New(errs.InvalidRequest, "resume: the script is named twice (%s and --script %s)", arg, script)
		}
		script = arg
	}
	change := engine.ResumeChange{Script: script, Answers: opts.Answers}
	if opts.BudgetSet {
		change.BudgetTokens = &opts.Budget
	}
	return change, nil
}
