// Package answer is crw flow answer: a decision a run waits for answered, and the run resumed.
package answer

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/errs"
)

// Options are crw flow answer's.
type Options struct {
	cmdutil.Common
	Run, Decision string
	// Value is --value as given (JSON, @FILE or @-); ValueSet whether it was given at all.
	Value    string
	ValueSet bool
	NoResume bool
}

// NewCmdAnswer is crw flow answer; runF, when not nil, runs in place of the command.
func NewCmdAnswer(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "answer RUN ID --value JSON|@FILE",
		Short: "Answer a decision the run waits for (crw.decide), and resume it",
		Long: `Answer the decision ID a run asked with crw.decide. The value is JSON (or @FILE, or @- for
stdin) and must satisfy the decision's schema; crw flow status RUN lists the decisions a run
waits for. The answer is journaled and the run resumes in a process of its own, unless
--no-resume; a run whose process is live takes the answer itself.

Exit status: 0 when the answer was taken, 2 when it was refused (no such decision, answered
already, or not valid against its schema: nothing was written), 1 when the run is not there, its
recorded environment cannot be used (run_env_unusable: nothing was written) or the answer could
not be stored.`,
		Example: `  crw flow status RUN
  crw flow answer RUN keep-change --value '{"keep": true}'
  crw flow answer RUN keep-change --value @answer.json --no-resume`,
		Args: cobra.ExactArgs(2),
		RunE: cmdutil.RunE(f, &opts.Common, opts, opts.take, runF, runAnswer),
	}
	cmd.Flags().StringVar(&opts.Value, "value", "", "the answer: JSON, @FILE, or @- to read it from stdin")
	cmd.Flags().BoolVar(&opts.NoResume, "no-resume", false, "journal the answer and start nothing")
	return cmd
}

// take takes the run, the decision and whether --value was given.
func (o *Options) take(cmd *cobra.Command, args []string) {
	o.Run, o.Decision, o.ValueSet = args[0], args[1], cmd.Flags().Changed("value")
}

func runAnswer(opts *Options) error {
	opts.WorksOn(opts.Run)
	if !opts.ValueSet {
		return errs.New(errs.InvalidRequest, "--value is required: the answer, as JSON or @FILE")
	}
	v, err := cmdutil.ReadFlagValue("--value", opts.Value, opts.IO.In)
	if err != nil {
		return err
	}
	_, err = cmdutil.Show(&opts.Common, opts.Run, func(svc *engine.Service) (*engine.Answered, error) {
		return svc.Answer(opts.Ctx, opts.Run, opts.Decision, v, ops.Who(), !opts.NoResume)
	}, printAnswered)
	return err
}

func printAnswered(w io.Writer, out *engine.Answered) {
	switch {
	case !out.Journaled:
		fmt.Fprintf(w, "decision %s answered: the run's live process takes it\n", out.Decision)
	case out.PID != 0:
		fmt.Fprintf(w, "decision %s answered; run %s resumed (pid %d)\n", out.Decision, out.Run, out.PID)
	default:
		fmt.Fprintf(w, "decision %s answered; resume the run with crw flow resume %s\n", out.Decision, out.Run)
	}
}
