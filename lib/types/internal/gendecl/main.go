// Command gendecl writes the declarations of the built-in crw:lib modules into lib/types/lib
// (go generate ./lib/types), so neither crw types nor crw's build of lib/types runs a module.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/crw-dev/crw/lib/types/internal/libdecl"
)

func main() {
	files, err := libdecl.Files()
	if err == nil {
		for name, data := range files {
			if err = os.WriteFile(filepath.Join("lib", name), data, 0o644); err != nil {
				break
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendecl:", err)
		os.Exit(1)
	}
}
