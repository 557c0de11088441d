package cmdutil

import (
	"fmt"

	"github.com/spf13/cobra"
)

// Exit codes: 0 success, 1 the operation failed, 2 bad input; a run that is not over when its
// process ends: 3 paused (a usage or rate limit), 4 waiting for a decision; and, from crw flow
// status --exit-status only, 5 a run still running, 6 one no process holds that has not ended.
const (
	ExitOK        = 0
	ExitFailed    = 1
	ExitBadInput  = 2
	ExitPaused    = 3
	ExitWaiting   = 4
	ExitRunning   = 5
	ExitNoProcess = 6
)

// ExitError says a command already wrote its own output for a failure; only the exit code is
// left.
type ExitError struct{ Code int }

func (e ExitError) Error() string { return fmt.Sprintf("exit %d", e.Code) }

// Failed is a failure the command has said all of already.
var Failed = ExitError{Code: ExitFailed}

// NewGroup is a command that only holds cmds, its subcommands: Group runs it.
func NewGroup(use, short string, cmds ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, RunE: Group, Long: short + `.

Exit status: 0 (alone, it prints its help), 2 for a command it does not have.`}
	cmd.AddCommand(cmds...)
	return cmd
}

// Group runs a command that only holds subcommands: alone it prints its help, and an argument
// that names none of its subcommands is an unknown command. (cobra checks unknown commands only
// on the root.)
func Group(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return c.Help()
	}
	return UnknownCommand(c, args[0])
}
