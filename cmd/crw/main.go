// Command crw runs agent workflows written in JavaScript or TypeScript.
package main

import (
	"os"
	"runtime"

	"github.com/crw-dev/crw/cmd/crw/internal/backends"
	"github.com/crw-dev/crw/cmd/crw/internal/cli"
	"github.com/crw-dev/crw/internal/gctune"
	// The heap the packages are initialized in, readied for huge pages before most of them are.
	_ "github.com/crw-dev/crw/internal/gctune/earlyheap"
)

func main() {
	// crw reads no heap profile of its own: sampling one would keep a record of every stack
	// that allocates, ~1.4 MB in a replay of 100,000 calls.
	runtime.MemProfileRate = 0
	gctune.Tune()
	os.Exit(cli.Main(backends.Registry()))
}
