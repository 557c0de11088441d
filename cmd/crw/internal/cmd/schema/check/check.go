// Package check is crw schema check: a JSON Schema file held to the strict structured-output
// rules.
package check

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/userfile"
)

// Options are crw schema check's.
type Options struct {
	cmdutil.Common
	File string
}

// output is `crw schema check --json`.
type output struct {
	File       string             `json:"file"`
	Strict     bool               `json:"strict"`
	Violations []schema.Violation `json:"violations"`
}

// NewCmdCheck is crw schema check; runF, when not nil, runs in place of the command.
func NewCmdCheck(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	return &cobra.Command{
		Use:   "check FILE",
		Short: "Check a JSON Schema file against the strict structured-output rules",
		Long: `Check a JSON Schema file against the strict structured-output rules.

Exit status: 0 when the schema is strict, 1 when it is not (every violation is listed with its
JSON pointer and rule), 2 when the file cannot be read or is not JSON.`,
		Args: cobra.ExactArgs(1),
		RunE: cmdutil.RunE(f, &opts.Common, opts, opts.take, runF, runCheck),
	}
}

// take takes the schema file.
func (o *Options) take(_ *cobra.Command, args []string) {
	o.File = args[0]
}

func runCheck(opts *Options) error {
	file := opts.File
	data, err := userfile.Read(file, userfile.MaxData)
	if err != nil {
		return errs.New(errs.InvalidRequest, "%s: cannot read: %v", file, err)
	}
	vs, err := schema.CheckStrict(data)
	if err != nil {
		return errs.New(errs.InvalidRequest, "%s: %v", file, err)
	}
	if vs == nil {
		vs = []schema.Violation{}
	}
	opts.Print(output{File: file, Strict: len(vs) == 0, Violations: vs}, func(w io.Writer) {
		if len(vs) == 0 {
			fmt.Fprintf(w, "%s: strict\n", file)
			return
		}
		for _, v := range vs {
			fmt.Fprintf(w, "%s: %s\n", file, v.String())
		}
		fmt.Fprintf(opts.IO.ErrOut, "%s: not strict: %d violation(s)\n", file, len(vs))
	})
	if len(vs) > 0 {
		return cmdutil.Failed
	}
	return nil
}
