package engine

import (
	"sync"

	"github.com/crw-dev/crw/engine/schema"
)

// compiledSchema is what a call needs of its schema, worked out once per distinct schema text:
// a workflow passes the same few schemas to thousands of calls.
type compiledSchema struct {
	digest     string
	violations []schema.Violation
	err        error // not JSON, or no validator could be built
	validator  *schema.Validator
}

type schemaCache struct {
	mu sync.Mutex
	m  map[string]*compiledSchema
}

func (c *schemaCache) get(raw []byte) *compiledSchema {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.m[string(raw)]; ok {
		return s
	}
	s := &compiledSchema{digest: schema.Digest(raw)}
	s.violations, s.err = schema.CheckStrict(raw)
	if s.err == nil && len(s.violations) == 0 {
		s.validator, s.err = schema.Compile(raw)
	}
	if c.m == nil {
		c.m = map[string]*compiledSchema{}
	}
	c.m[string(raw)] = s
	return s
}
