package cli

import (
	"fmt"

	"github.com/crw-dev/crw/userfile"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/errs"
)

// schemaCheckOutput is `crw schema check --json`.
type schemaCheckOutput struct {
	File       string             `json:"file"`
	Strict     bool               `json:"strict"`
	Violations []schema.Violation `json:"violations"`
}

func newCmdSchemaCheck(g *globals, streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "check FILE",
		Short: "Check a JSON Schema file against the strict structured-output rules",
		Long: `Check a JSON Schema file against the strict structured-output rules.

Exit status: 0 when the schema is strict, 1 when it is not (every violation is listed with its
JSON pointer and rule), 2 when the file cannot be read or is not JSON.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := args[0]
			data, err := userfile.Read(file, userfile.MaxData)
			if err != nil {
				return errs.New(errs.InvalidRequest, "%s: cannot read: %v", file, err)
			}
			vs, err := schema.CheckStrict(data)
			if err != nil {
				return errs.New(errs.InvalidRequest, "%s: %v", file, err)
			}
			if g.json {
				if vs == nil {
					vs = []schema.Violation{}
				}
				writeJSON(streams.Out, schemaCheckOutput{File: file, Strict: len(vs) == 0, Violations: vs})
			} else if len(vs) == 0 {
				fmt.Fprintf(streams.Out, "%s: strict\n", file)
			} else {
				for _, v := range vs {
					fmt.Fprintf(streams.Out, "%s: %s\n", file, v.String())
				}
				fmt.Fprintf(streams.ErrOut, "%s: not strict: %d violation(s)\n", file, len(vs))
			}
			if len(vs) > 0 {
				return errPrinted{code: exitFailed}
			}
			return nil
		},
	}
}
