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
	File       string      `json:"file"`
	Strict     bool        `json:"strict"`
	Violations []violation `json:"violations"`
}

// violation is a strict rule a schema breaks; in a module, Export names the export's schema.
type violation struct {
	Export  string `json:"export,omitempty"`
	Pointer string `json:"pointer"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

func (v violation) String() string {
	s := schema.Violation{Pointer: v.Pointer, Rule: v.Rule, Message: v.Message}.String()
	if v.Export != "" {
		s = fmt.Sprintf("export %q: %s", v.Export, s)
	}
	return s
}

// NewCmdCheck is crw schema check; runF, when not nil, runs in place of the command.
func NewCmdCheck(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	return &cobra.Command{
		Use:   "check FILE",
		Short: "Check a JSON Schema file against the strict structured-output rules",
		Long: `Check a JSON Schema file against the strict structured-output rules; or, given a .js or .ts
module of a lib/schemas/ folder (crw:lib/schemas/NAME), every schema it exports, as a
workflow's import of it checks them (functions, and a default export that only gathers the named
ones, are left out), each violation named by its export.

Exit status: 0 when the schema is strict, 1 when it is not (every violation is listed with its
JSON pointer and rule), 2 when the file cannot be read or is not JSON (a module: does not load, or is not under a
schemas folder).`,
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
	var vs []violation
	if isModule(file) {
		var err error
		if vs, err = checkModule(opts, file); err != nil {
			return err
		}
	} else {
		data, err := userfile.Read(file, userfile.MaxData)
		if err != nil {
			return errs.New(errs.InvalidRequest, "%s: cannot read: %v", file, err)
		}
		found, err := schema.CheckStrict(data)
		if err != nil {
			return errs.New(errs.InvalidRequest, "%s: %v", file, err)
		}
		for _, v := range found {
			vs = append(vs, violation{Pointer: v.Pointer, Rule: v.Rule, Message: v.Message})
		}
	}
	if vs == nil {
		vs = []violation{}
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
