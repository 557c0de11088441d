package inputs

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSchemasKeepABoundedNumber: a schema built anew for every call (here an enum of the
// call's own value) is compiled for it, and the run does not keep one per call.
func TestSchemasKeepABoundedNumber(t *testing.T) {
	t.Parallel()
	var c Schemas
	for i := range 1000 {
		raw := fmt.Sprintf(`{"type":"object","additionalProperties":false,"required":["v"],"properties":{"v":{"type":"string","enum":["x%d"]}}}`, i)
		s := c.Get([]byte(raw))
		require.NoError(t, s.Err)
		require.Empty(t, s.Refusal())
		assert.LessOrEqual(t, len(c.m), 256)
	}
	first := c.Get([]byte(`{"type":"string"}`))
	assert.Same(t, first, c.Get([]byte(`{"type":"string"}`)), "a schema in use is compiled once")
}
