// Package types is crw types: the TypeScript declarations of crw's modules, and a tsconfig,
// written next to the workflows.
package types

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdutil"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/lib/types"
)

// Options are crw types'.
type Options struct {
	cmdutil.Common
	// Dir is the workflows' folder.
	Dir string
}

// output is `crw types --json`.
type output struct {
	Dir   string   `json:"dir"`
	Files []string `json:"files"`
	// Tsconfig is the tsconfig written: tsconfig.json, or tsconfig.crw.json beside one of the
	// user's, which then has to extend it (Note says how).
	Tsconfig string `json:"tsconfig"`
	Note     string `json:"note,omitempty"`
}

// NewCmdTypes is crw types; runF, when not nil, runs in place of the command.
func NewCmdTypes(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	return &cobra.Command{
		Use:   "types [DIR]",
		Short: "Write the TypeScript declarations of crw's modules, and a tsconfig, next to your workflows",
		Long: `Write the TypeScript declarations of crw:agent, crw and the built-in crw:lib modules into
DIR/crw-types/ (DIR: the workflows' folder, default the current one), and a tsconfig.json that
maps the module names to them and checks the folder's JavaScript and TypeScript workflows. Then
tsc --noEmit (or an editor) finds a misspelled option, a status or reason outside the closed
sets, and a forgotten await whose result is used as a CallResult, before any call is made.

A tsconfig.json of your own is left alone: tsconfig.crw.json is written beside it, for yours to
extend. Running it again brings the declarations up to date.

Exit status: 0 when the files were written, 1 when one could not be, 2 on bad input.`,
		Example: `  crw types workflows
  cd workflows && npx -p typescript tsc --noEmit`,
		Args: cobra.MaximumNArgs(1),
		RunE: cmdutil.RunE(f, &opts.Common, opts, opts.take, runF, runTypes),
	}
}

// take takes the folder, "." when none is named.
func (o *Options) take(_ *cobra.Command, args []string) {
	o.Dir = "."
	if len(args) == 1 {
		o.Dir = args[0]
	}
}

func runTypes(opts *Options) error {
	out, err := writeTypes(opts.Dir)
	if err != nil {
		return err
	}
	opts.Print(out, func(w io.Writer) {
		for _, f := range out.Files {
			fmt.Fprintf(w, "wrote %s\n", filepath.Join(out.Dir, f))
		}
		if out.Note != "" {
			fmt.Fprintln(w, out.Note)
		}
	})
	return nil
}

// writeTypes writes the declarations into dir; each file is written whole under another name
// and renamed into place.
func writeTypes(dir string) (*output, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, errs.New(errs.InvalidRequest, "crw types: %s is not a folder", dir)
	}
	if fi, err := os.Lstat(filepath.Join(dir, types.Folder)); err == nil && !fi.IsDir() {
		return nil, errs.New(errs.InvalidRequest, "crw types: %s is not a folder crw types wrote (a file or a link): move it away first", filepath.Join(dir, types.Folder))
	}
	files, err := types.Files()
	if err != nil {
		return nil, errs.New(errs.CapabilityUnavailable, "crw types: the declarations: %v", err)
	}
	out := &output{Dir: dir, Files: []string{}, Tsconfig: "tsconfig.json"}
	if mine, err := os.ReadFile(filepath.Join(dir, "tsconfig.json")); err == nil && !bytes.HasPrefix(mine, []byte(types.Marker)) {
		// The user's own: ours goes beside it.
		files["tsconfig.crw.json"] = files["tsconfig.json"]
		delete(files, "tsconfig.json")
		out.Tsconfig = "tsconfig.crw.json"
		out.Note = `your tsconfig.json is left as it is: add "extends": "./tsconfig.crw.json" to it`
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := cmdutil.WriteWhole(path, files[name], 0o644); err != nil {
			return nil, errs.New(errs.CapabilityUnavailable, "crw types: cannot write %s: %v", path, err)
		}
		out.Files = append(out.Files, name)
	}
	return out, nil
}
