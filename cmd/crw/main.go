// Command crw runs agent workflows written in JavaScript or TypeScript.
package main

import (
	"os"

	"github.com/crw-dev/crw/cmd/crw/internal/backends"
	"github.com/crw-dev/crw/cmd/crw/internal/cli"
	"github.com/crw-dev/crw/internal/gctune"
)

func main() {
	gctune.Tune()
	os.Exit(cli.Main(backends.Registry()))
}
