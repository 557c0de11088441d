// Package libdecl makes the declarations of the built-in crw:lib modules: each module's
// schemas, evaluated alone in the VM (vm.Exports), typed by the answers they admit
// (types.Declare). go generate writes them into lib/types/lib, which crw embeds; a test of
// lib/types makes them again and compares.
package libdecl

import (
	"io/fs"
	"strings"

	"github.com/crw-dev/crw/lib"
	"github.com/crw-dev/crw/lib/types"
	"github.com/crw-dev/crw/runtime/vm"
)

// Files are the declarations, by file name (<module>.d.ts).
func Files() (map[string][]byte, error) {
	mods, err := fs.Glob(lib.FS, "*.js")
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, m := range mods {
		exports, err := vm.Exports(lib.FS, m)
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(m, ".js")
		if out[name+".d.ts"], err = types.Declare(name, exports); err != nil {
			return nil, err
		}
	}
	return out, nil
}
