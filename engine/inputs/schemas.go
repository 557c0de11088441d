package inputs

import (
	"strings"

	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/runtime/loader"
)

// Schema is what a call needs of its schema, worked out once per distinct schema text.
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

// Schemas gives each call what it needs of its schema, from the one cache of the schemas
// the process has read (schema.Load): a workflow passes the same few schemas to thousands
// of calls, and every run's load checks the same built-in ones. The zero value is ready; it
// is safe for concurrent use.
type Schemas struct{}

// Get returns the compiled schema of raw.
func (*Schemas) Get(raw []byte) *Schema {
	l := schema.Load(raw)
	s := &Schema{Digest: l.Digest()}
	s.Violations, s.Err = l.CheckStrict()
	if s.Err == nil && len(s.Violations) == 0 {
		s.Validator, s.Err = l.Validator()
	}
	return s
}

// CheckSchema applies the strict rules to a schema module's export (vm.Host.CheckSchema).
func CheckSchema(s []byte) []loader.Problem {
	vs, err := schema.Load(s).CheckStrict()
	if err != nil {
		return []loader.Problem{{Rule: "invalid", Message: err.Error()}}
	}
	out := make([]loader.Problem, len(vs))
	for i, v := range vs {
		out[i] = loader.Problem{Pointer: v.Pointer, Rule: v.Rule, Message: v.Message}
	}
	return out
}
