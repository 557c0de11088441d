package cli

import (
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/appserver"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/backend/session"
)

// TestEveryCommandHasExamples: every command a user runs shows Examples in its --help.
func TestEveryCommandHasExamples(t *testing.T) {
	t.Parallel()
	root := newRoot(newInvocation(&IO{}, backend.NewRegistry(fake.Descriptor(), appserver.Descriptor(), session.Descriptor(session.Hosts{}))))
	root.InitDefaultCompletionCmd()
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" || sub.HasParent() && sub.Parent().Name() == "completion" {
				continue
			}
			n++
			assert.NotEmpty(t, sub.Example, "%s has no examples", sub.CommandPath())
			walk(sub)
		}
	}
	walk(root)
	assert.Greater(t, n, 25)
}
