package hook

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
)

func TestHookLetsThroughWhatItCannotRead(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, warning string }{
		{"[1]", `crw codex hook: the event is not a JSON object: it starts with '[', not {: the spawn passes` + "\n"},
		{"", "crw codex hook: the event cannot be read (the input ended before a JSON object): the spawn passes\n"},
		{`{"tool_name": 1}`, "crw codex hook: the event is not a JSON object (json: cannot unmarshal number into Go struct field Event.tool_name of type string): the spawn passes\n"},
	} {
		e := cmdtest.New(t)
		e.In.WriteString(c.in)
		require.NoError(t, runHook(&Options{Common: e.Common(), EventWait: hookEventWait}))
		assert.Equal(t, c.warning, e.ErrOut.String(), c.in)
		assert.Empty(t, e.Out.String(), "the spawn is let through as sent")
	}
}

func TestHookPassesASpawnOfAnOwnerNoRunBinds(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	e.In.WriteString(`{"tool_name": "spawn_agent", "session_id": "019a0000-0000-7000-8000-000000000001", "tool_input": {"message": "hi"}}`)
	require.NoError(t, runHook(&Options{Common: e.Common(), EventWait: hookEventWait}))
	assert.Empty(t, e.ErrOut.String())
}
