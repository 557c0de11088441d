// Command crw runs agent workflows written in JavaScript or TypeScript.
package main

import (
	"os"

	"github.com/crw-dev/crw/cmd/crw/internal/cli"
)

func main() { os.Exit(cli.Main()) }
