// Package schema is crw schema: the group of commands on JSON Schemas.
package schema

import (
	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmd/schema/check"
	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
)

// NewCmdSchema is crw schema and its subcommands.
func NewCmdSchema(f *cmdutil.Factory) *cobra.Command {
	return cmdutil.NewGroup("schema", "Check JSON Schemas against the strict structured-output rules", check.NewCmdCheck(f, nil))
}
