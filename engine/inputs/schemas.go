package inputs

import (
	"strings"
	"sync"

	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/runtime/loader"
)

// Schema is what a call needs of its schema, worked out once per distinct schema text: a
// workflow passes the same few schemas to thousands of calls.
type Schema struct {
	Digest     string
	Violations []schema.Violation
	Err        error // not JSON, or no validator could be built
	Validator  *schema.Validator
}

// Refusal is why a call with this schema is refused before any thread starts (schema_not_strict),
// "" when it is not.
func (s *Schema) Refusal() string {
	if len(s.Violations) > 0 {
		parts := make([]string, len(s.Violations))
		for i, v := range s.Violations {
			parts[i] = v.String()
		}
		return strings.Join(parts, "; ")
	}
	if s.Err != nil {
		return s.Err.Error()
	}
	return ""
}

// Schemas compiles schemas once per distinct text, keeping at most maxSchemas: a script that
// builds a new schema for every call (an enum of this call's choices) must not make the run
// keep one per call. The zero value is ready; it is safe for concurrent use.
type Schemas struct {
	mu sync.Mutex
	m  map[string]*Schema
}

// Get returns the compiled schema of raw.
func (c *Schemas) Get(raw []byte) *Schema {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.m[string(raw)]; ok {
		return s
	}
	s := &Schema{Digest: schema.Digest(raw)}
	s.Violations, s.Err = schema.CheckStrict(raw)
	if s.Err == nil && len(s.Violations) == 0 {
		s.Validator, s.Err = schema.Compile(raw)
	}
	if c.m == nil || len(c.m) >= maxSchemas {
		c.m = map[string]*Schema{} // a new start costs a compile of each schema in use again
	}
	c.m[string(raw)] = s
	return s
}

// maxSchemas bounds the schemas a Schemas keeps compiled.
const maxSchemas = 256

// checkedSchemas remembers the verdicts on schema texts: every run's load checks the same
// built-in schemas again.
var checkedSchemas sync.Map // string → []loader.Problem

// CheckSchema applies the strict rules to a schema module's export (vm.Host.CheckSchema).
func CheckSchema(s []byte) []loader.Problem {
	if p, ok := checkedSchemas.Load(string(s)); ok {
		return p.([]loader.Problem)
	}
	p := strictProblems(s)
	checkedSchemas.Store(string(s), p)
	return p
}

func strictProblems(s []byte) []loader.Problem {
	vs, err := schema.CheckStrict(s)
	if err != nil {
		return []loader.Problem{{Rule: "invalid", Message: err.Error()}}
	}
	out := make([]loader.Problem, len(vs))
	for i, v := range vs {
		out[i] = loader.Problem{Pointer: v.Pointer, Rule: v.Rule, Message: v.Message}
	}
	return out
}
