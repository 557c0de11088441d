package cli

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/lib/types"
)

// typesOutput is `crw types --json`.
type typesOutput struct {
	Dir   string   `json:"dir"`
	Files []string `json:"files"`
	// Tsconfig is the tsconfig written: tsconfig.json, or tsconfig.crw.json beside one of the
	// user's, which then has to extend it (Note says how).
	Tsconfig string `json:"tsconfig"`
	Note     string `json:"note,omitempty"`
}

func newCmdTypes(g *globals, streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "types [DIR]",
		Short: "Write the TypeScript declarations of crw's modules, and a tsconfig, next to your workflows",
		Long: `Write the TypeScript declarations of crw:agent, crw and the built-in crw:lib modules into
DIR/crw-types/ (DIR: the workflows' folder, default the current one), and a tsconfig.json that
maps the module names to them and checks the folder's JavaScript and TypeScript workflows. Then
tsc --noEmit (or an editor) finds a misspelled option, a status or reason outside the closed
sets, and a forgotten await whose result is used as a CallResult, before any call is made.

A tsconfig.json of your own is left alone: tsconfig.crw.json is written beside it, for yours to
extend. Running it again brings the declarations up to date.`,
		Example: `  crw types workflows
  cd workflows && npx -p typescript tsc --noEmit`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			out, err := writeTypes(dir)
			if err != nil {
				return err
			}
			if g.json {
				writeJSON(streams.Out, out)
				return nil
			}
			for _, f := range out.Files {
				fmt.Fprintf(streams.Out, "wrote %s\n", filepath.Join(out.Dir, f))
			}
			if out.Note != "" {
				fmt.Fprintln(streams.Out, out.Note)
			}
			return nil
		},
	}
}

// writeTypes writes the declarations into dir; each file is written whole under another name
// and renamed into place.
func writeTypes(dir string) (*typesOutput, error) {
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
	out := &typesOutput{Dir: dir, Files: []string{}, Tsconfig: "tsconfig.json"}
	if mine, err := os.ReadFile(filepath.Join(dir, "tsconfig.json")); err == nil && !bytes.HasPrefix(mine, []byte(types.Marker)) {
		// The user's own: ours goes beside it.
		files["tsconfig.crw.json"] = files["tsconfig.json"]
		delete(files, "tsconfig.json")
		out.Tsconfig = "tsconfig.crw.json"
		out.Note = `your tsconfig.json is left as it is: add "extends": "./tsconfig.crw.json" to it`
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := writeWhole(path, files[name], 0o644); err != nil {
			return nil, errs.New(errs.CapabilityUnavailable, "crw types: cannot write %s: %v", path, err)
		}
		out.Files = append(out.Files, name)
	}
	return out, nil
}

// writeWhole writes data to path through a temporary file renamed over it, with mode
// whatever the umask.
func writeWhole(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	fi, err := os.Lstat(path)
	if err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("it is a link")
	}
	if err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		// A device or a pipe (/dev/stdout) is written to, never replaced nor chmodded.
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
