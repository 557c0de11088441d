package main

import (
	"context"

	"github.com/crw-dev/crw/engine/appserver"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/fake"
	"github.com/crw-dev/crw/engine/session"
	"github.com/crw-dev/crw/engine/session/codexhost"
)

// backends are the backends this build offers: the one place they are registered by name.
func backends() *backend.Registry {
	return backend.NewRegistry(fake.Descriptor(), appserver.Descriptor(), session.Descriptor(dialCodex))
}

// dialCodex reaches the owner's Codex app server at its socket.
func dialCodex(ctx context.Context, addr string) (session.Host, error) {
	return codexhost.Dial(ctx, addr)
}
