package inputs

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSchemasCompileOnce: a schema built anew for every call (here an enum of the call's
// own value) is compiled for it; a schema in use is compiled once, whoever asks for it.
func TestSchemasCompileOnce(t *testing.T) {
	t.Parallel()
	var c, other Schemas
	for i := range 300 {
		raw := fmt.Sprintf(`{"type":"object","additionalProperties":false,"required":["v"],"properties":{"v":{"type":"string","enum":["x%d"]}}}`, i)
		s := c.Get([]byte(raw))
		require.NoError(t, s.Err)
		require.Empty(t, s.Refusal())
		require.NotNil(t, s.Validator)
	}
	raw := []byte(`{"type":"object","additionalProperties":false,"required":[],"properties":{}}`)
	first := c.Get(raw)
	assert.Same(t, first.Validator, other.Get(raw).Validator, "a schema in use is compiled once")
	assert.Equal(t, first.Digest, other.Get(raw).Digest)

	refused := c.Get([]byte(`{"type":"string"}`))
	assert.Nil(t, refused.Validator)
	assert.Equal(t, `(root): root_not_object: the root schema must have "type": "object"`, refused.Refusal())
}
