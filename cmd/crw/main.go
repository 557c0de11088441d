// Command crw runs agent workflows written in JavaScript or TypeScript.
package main

import (
	"os"
	"runtime/debug"

	"github.com/crw-dev/crw/cmd/crw/internal/cli"
	"github.com/crw-dev/crw/engine/runner"
)

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(runner.ProcessGCPercent)
	}
	os.Exit(cli.Main(backends()))
}
