package check

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/crw-dev/crw/engine/runspec"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/runtime/loader"
	"github.com/crw-dev/crw/store"
)

// moduleExts are the files crw schema check reads as a crw:lib/schemas module, not as JSON.
var moduleExts = []string{".js", ".mjs", ".cjs", ".ts", ".mts"}

func isModule(file string) bool {
	return slices.Contains(moduleExts, strings.ToLower(filepath.Ext(file)))
}

// checkModule holds a crw:lib/schemas module's exports to the strict rules as a workflow's
// import of it does: the module is loaded by the runtime's loader, which checks every export
// (helpers that are functions, and a default that only gathers the named ones, left out), from
// a workflow that imports it and does nothing else. Its violations are nil when every export
// is strict.
func checkModule(c *Options, file string) ([]violation, error) {
	abs, err := filepath.Abs(file)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, errs.New(errs.InvalidRequest, "%s: cannot read: %v", file, err)
	}
	libDir, name, ok := libModule(abs)
	if !ok {
		return nil, errs.New(errs.InvalidRequest, "%s: a schema module is a file of a schemas folder of a lib folder (lib/schemas/NAME.ts, served as crw:lib/schemas/NAME)", file)
	}
	tmp, err := os.MkdirTemp("", "crw-schema-check-")
	if err != nil {
		return nil, errs.New(errs.CapabilityUnavailable, "cannot make a temporary folder: %v", err)
	}
	defer os.RemoveAll(tmp)
	entry := filepath.Join(tmp, "check.js")
	src := "import * as m from " + jsString(name) + ";\nexport default function main() { return m; }\n"
	if err := os.WriteFile(entry, []byte(src), 0o600); err != nil {
		return nil, errs.New(errs.CapabilityUnavailable, "cannot write %s: %v", entry, err)
	}
	script, err := runspec.Load(c.Ctx, entry, []string{libDir}, nil, store.Limits{}, nil)
	var le *loader.LoadError
	// Another schema module it imports that is not strict is a module that does not load.
	if errors.As(err, &le) && le.Code == loader.CodeSchemaNotStrict && len(le.Problems) > 0 && le.File == abs {
		out := make([]violation, len(le.Problems))
		for i, p := range le.Problems {
			out[i] = violation{Export: p.Export, Pointer: p.Pointer, Rule: p.Rule, Message: p.Message}
		}
		return out, nil
	}
	if err != nil {
		return nil, errs.New(errs.InvalidRequest, "%s (%s): %v", file, name, errors.Unwrap(err))
	}
	// The name resolves to this file, not to a file of another extension beside it.
	if _, loaded := script.Sources()[abs]; !loaded {
		return nil, errs.New(errs.InvalidRequest, "%s: %s is another file of %s (a .js, .ts… of the same name)", file, name, filepath.Dir(abs))
	}
	return nil, nil
}

// libModule is the crw:lib name of the module at abs, and the lib folder that serves it: the
// folder above its nearest schemas folder.
func libModule(abs string) (libDir, name string, ok bool) {
	for dir := filepath.Dir(abs); dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if filepath.Base(dir) != "schemas" {
			continue
		}
		rel, err := filepath.Rel(filepath.Dir(dir), abs)
		if err != nil {
			return "", "", false
		}
		rel = strings.TrimSuffix(filepath.ToSlash(rel), filepath.Ext(rel))
		return filepath.Dir(dir), "crw:lib/" + rel, true
	}
	return "", "", false
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
