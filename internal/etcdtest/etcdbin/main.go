// Command etcd is the real etcd server, at the version this module pins, for the tests that
// run crw against an etcd cluster (internal/etcdtest): .ci/install-etcd.sh builds it. It is a
// module of its own so that crw's module does not take the server's dependencies.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
