// Command crw-etcd is crw with its runs on an etcd cluster as well (--store etcd://…, or
// $CRW_STORE): everything crw does, and etcd's client, which crw leaves out so that its
// commands on the state folder start without it. crw hands a command on a store on etcd to
// the crw-etcd beside it or on $PATH; install both from the same release.
package main

import (
	"os"

	"github.com/crw-dev/crw/cmd/crw/internal/backends"
	"github.com/crw-dev/crw/cmd/crw/internal/cli"
	"github.com/crw-dev/crw/cmd/crw/internal/etcdstore"
	"github.com/crw-dev/crw/internal/gctune"
)

func main() {
	gctune.Tune()
	os.Exit(cli.Main(backends.Registry(), etcdstore.Stores()))
}
