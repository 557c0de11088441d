// Package codex is crw codex: the group of commands that set Codex up for session runs.
package codex

import (
	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmd/codex/hook"
	"github.com/crw-dev/crw/cmd/crw/internal/cmd/codex/setup"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
)

// NewCmdCodex is crw codex and its subcommands.
func NewCmdCodex(f *cmdutil.Factory) *cobra.Command {
	return cmdutil.NewGroup("codex", "Set Codex up for session runs: crw's roles and its spawn hook",
		setup.NewCmdSetup(f, nil), hook.NewCmdHook(f, nil))
}
