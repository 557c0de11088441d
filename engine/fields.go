package engine

import (
	"slices"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/runspec"
)

// requestFields are the fields of the service's requests other than a create's: a verdict and
// its output (Recover), an answer's value (Answer), a listing's limit (Effects, AuditLog), a
// resume's script (ChangeResume; its budget is budget_tokens, its answers file the fake
// backend's option).
var requestFields = []string{"verdict", "output", "value", "limit", "script"}

// Fields are every field of a request that the service's errors can name (errs.FieldError):
// a create's options (runspec.Fields), the options of the backends of backends
// (backend.OptionField of each), and the fields of its other requests. The command line and
// the MCP server each have a name of their own for every one of them.
func Fields(backends *backend.Registry) []string {
	out := slices.Concat(runspec.Fields, requestFields)
	for _, o := range backends.Options() {
		out = append(out, backend.OptionField(o.Name))
	}
	return out
}
