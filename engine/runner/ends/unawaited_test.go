package ends_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crw-dev/crw/engine/runner/ends"
	"github.com/crw-dev/crw/runtime/modules/agent"
)

func TestUnawaited(t *testing.T) {
	unobserved := []agent.Unobserved{{Call: "c1", Site: "wf.js:3:5"}, {Call: "", Site: "wf.js:4:5"}, {Call: "c2", Site: "wf.js:5:5"}}
	late := []agent.Unobserved{{Call: "c2", Site: "wf.js:5:5"}, {Call: "c3", Site: "wf.js:9:7"}}
	got, more := ends.Unawaited(unobserved, late, 2, map[string]bool{"c1": true})
	assert.Equal(t, 2, more, "what the tracker dropped, nothing beyond")
	if assert.Len(t, got, 2) {
		assert.Equal(t, "c2", got[0].Call)
		assert.Equal(t, "agent.call at wf.js:5:5 (call c2) was never awaited: the workflow ended without reading its result (a forgotten await?)", got[0].Detail)
		assert.Equal(t, "c3", got[1].Call)
		assert.Equal(t, "agent.call at wf.js:9:7 (call c3) was still under way when the workflow returned: its result reached no one (an async callback nobody awaited, as forEach's?)", got[1].Detail)
		assert.Equal(t, "unawaited_call", got[1].Reason)
	}

	// 100 in all: the journal's 99 and one more; the rest counted.
	warned := map[string]bool{}
	for i := range 99 {
		warned[fmt.Sprintf("w%d", i)] = true
	}
	got, more = ends.Unawaited([]agent.Unobserved{{Call: "c1"}, {Call: "c2"}, {Call: "c3"}}, nil, 0, warned)
	assert.Len(t, got, 1)
	assert.Equal(t, 2, more)
}
