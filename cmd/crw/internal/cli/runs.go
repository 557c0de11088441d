package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/journal"
)

// runArg reports where a command takes a run: its first argument (RUN in its use line), else
// its --run flag; none when it was given a --trace file instead.
func runArg(cmd *cobra.Command) (positional, flag bool) {
	if f := cmd.Flags().Lookup("trace"); f != nil && f.Changed {
		return false, false // it reads a trace file, not a run (show --trace FILE [CALL])
	}
	fields := strings.Fields(cmd.Use)
	if len(fields) > 1 && strings.Trim(fields[1], "[]") == "RUN" {
		return true, false
	}
	return false, cmd.Flags().Lookup("run") != nil
}

// resolveRunArgs puts the run id in place of what names it, before the command runs.
func resolveRunArgs(inv *invocation, cmd *cobra.Command, args []string) error {
	positional, flag := runArg(cmd)
	if !positional && !flag {
		return nil
	}
	var ref string
	switch {
	case positional && len(args) > 0:
		ref = args[0]
	case flag:
		ref, _ = cmd.Flags().GetString("run")
	}
	if ref == "" || journal.ValidRunID(ref) {
		return nil
	}
	svc, err := inv.service()
	if err != nil {
		return err
	}
	root, _ := inv.stateDir()
	id, err := ops.ResolveRun(cmd.Context(), svc.Store, root, ref)
	if err != nil {
		return err
	}
	if positional {
		args[0] = id
	} else {
		_ = cmd.Flags().Set("run", id)
	}
	return nil
}
