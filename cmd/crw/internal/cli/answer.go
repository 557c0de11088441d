package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/userfile"
)

func newCmdAnswer(g *globals, streams IO) *cobra.Command {
	var value string
	var noResume bool
	cmd := &cobra.Command{
		Use:   "answer RUN ID --value JSON|@FILE",
		Short: "Answer a decision the run waits for (crw.decide), and resume it",
		Long: `Answer the decision ID a run asked with crw.decide. The value is JSON (or @FILE, or @- for
stdin) and must satisfy the decision's schema; crw flow status RUN lists the decisions a run
waits for. The answer is journaled and the run resumes in a process of its own, unless
--no-resume; a run whose process is live takes the answer itself.

Exit status: 0 when the answer was taken, 2 when it was refused (no such decision, answered
already, or not valid against its schema: nothing was written), 1 when the run's recorded
environment cannot be used (run_env_unusable: nothing was written).`,
		Example: `  crw flow status RUN
  crw flow answer RUN keep-change --value '{"keep": true}'
  crw flow answer RUN keep-change --value @answer.json --no-resume`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			g.runID = args[0]
			if !cmd.Flags().Changed("value") {
				return errs.New(errs.InvalidRequest, "--value is required: the answer, as JSON or @FILE")
			}
			v, err := readValue(value, streams)
			if err != nil {
				return err
			}
			svc, err := g.service()
			if err != nil {
				return err
			}
			out, err := svc.Answer(cmd.Context(), args[0], args[1], v, ops.Who(), !noResume)
			if err != nil {
				return err
			}
			if g.json {
				writeJSON(streams.Out, out)
				return nil
			}
			switch {
			case !out.Journaled:
				fmt.Fprintf(streams.Out, "decision %s answered: the run's live process takes it\n", out.Decision)
			case out.PID != 0:
				fmt.Fprintf(streams.Out, "decision %s answered; run %s resumed (pid %d)\n", out.Decision, out.Run, out.PID)
			default:
				fmt.Fprintf(streams.Out, "decision %s answered; resume the run with crw flow resume %s\n", out.Decision, out.Run)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&value, "value", "", "the answer: JSON, @FILE, or @- to read it from stdin")
	cmd.Flags().BoolVar(&noResume, "no-resume", false, "journal the answer and start nothing")
	return cmd
}

// readValue reads --value: JSON, @FILE or @-.
func readValue(s string, streams IO) ([]byte, error) { return readFlagValue("--value", s, streams) }

// readFlagValue reads a flag's JSON, @FILE or @-.
func readFlagValue(flag, s string, streams IO) ([]byte, error) {
	switch {
	case s == "@-":
		data, err := userfile.ReadStream(streams.In, userfile.MaxData)
		if err != nil {
			return nil, errs.New(errs.InvalidRequest, "%s @-: cannot read stdin: %v", flag, err)
		}
		return data, nil
	case strings.HasPrefix(s, "@"):
		data, err := userfile.Read(s[1:], userfile.MaxData)
		if err != nil {
			return nil, errs.New(errs.InvalidRequest, "%s %s: cannot read: %v", flag, s, err)
		}
		return data, nil
	}
	return []byte(s), nil
}
