package backends

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend/appserver"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/backend/session"
)

// TestTheCodexOptionIsOneOption: --codex is the same option of the app-server backend and of
// a session run's private app server, so the flag the registry lists says what it is to both.
func TestTheCodexOptionIsOneOption(t *testing.T) {
	t.Parallel()
	r := Registry()
	for _, name := range []string{appserver.Name, session.Name} {
		d, err := r.Lookup(name)
		require.NoError(t, err)
		assert.Contains(t, d.Options, codex.Option, name)
	}
	assert.Contains(t, r.Options(), codex.Option)
}
