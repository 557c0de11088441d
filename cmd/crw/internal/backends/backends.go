// Package backends registers the backends this build of crw offers.
package backends

import (
	"context"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/appserver"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/engine/backend/session/codexhost"
	"github.com/crw-dev/crw/engine/backend/session/host"
)

// Registry holds the backends this build offers: the one place they are registered by name.
func Registry() *backend.Registry {
	return backend.NewRegistry(fake.Descriptor(), appserver.Descriptor(), session.Descriptor(codexHosts))
}

// codexHosts are the session backend's hosts on the real Codex: the owner's app server at its
// socket, or a private one on the owner's CODEX_HOME.
var codexHosts = session.Hosts{
	Dial: func(ctx context.Context, addr string) (host.Host, error) { return codexhost.Dial(ctx, addr) },
	Private: func(ctx context.Context, codex, codexHome, log string) (host.Host, error) {
		return codexhost.Private(ctx, codex, codexHome, codexhost.WithLog(log))
	},
	FindCodex: codex.FindCodex,
}
