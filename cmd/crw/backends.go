package main

import (
	"github.com/crw-dev/crw/engine/appserver"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/fake"
)

// backends are the backends this build offers: the one place they are registered by name.
func backends() *backend.Registry {
	return backend.NewRegistry(fake.Descriptor(), appserver.Descriptor())
}
