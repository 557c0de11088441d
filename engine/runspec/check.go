package runspec

import (
	"encoding/json"
	"fmt"

	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// Check refuses a spec a run cannot go on with: one that is not valid, or one that
// disagrees with the started row its journal begins with (nil when the run never started).
// The spec is a file the user can edit (run.json); a resume goes on with what the run started
// with, or not at all. (The backend is compared where it is opened: tests may replace it.)
func Check(run string, spec *store.Spec, startedRow *journal.Row) error {
	where := spec.Path
	if where == "" {
		where = "the spec of run " + run
	}
	bad := func(field, format string, args ...any) error {
		return errs.New(errs.IncompatibleSchema, "%s: %s: %s", where, field, fmt.Sprintf(format, args...)).
			Next("put back the spec the run was created with")
	}
	switch {
	case spec.Run != run:
		return bad("run", "names run %q", spec.Run)
	case spec.Pool < 1:
		return bad("pool", "must be 1 or more, got %d", spec.Pool)
	case spec.BudgetTokens < 0:
		return bad("budget_tokens", "must not be negative, got %d", spec.BudgetTokens)
	case len(spec.Input) == 0:
		return bad("input", "missing")
	case !json.Valid(spec.Input):
		return bad("input", "not JSON")
	}
	if err := checkInput(spec.Input); err != nil {
		return bad("input", "%v", err)
	}
	if startedRow == nil {
		return nil
	}
	started := startedRow.AsStarted()
	const row = "(its journal's started row)"
	switch {
	case spec.Workflow != started.Workflow:
		return bad("workflow", "%q, but the run started with %q %s", spec.Workflow, started.Workflow, row)
	case spec.Pool != started.Pool:
		return bad("pool", "%d, but the run started with %d %s", spec.Pool, started.Pool, row)
	case spec.BudgetTokens != started.BudgetTokens:
		return bad("budget_tokens", "%d, but the run started with %d %s", spec.BudgetTokens, started.BudgetTokens, row)
	case !journal.SameJSON(spec.Input, started.Input):
		// Not the values: an input may be long.
		return bad("input", "not the input the run started with %s", row)
	case spec.OmitCallSeqs != started.OmitCallSeqs:
		return bad("omit_call_seqs", "%t, but the run started with %t %s", spec.OmitCallSeqs, started.OmitCallSeqs, row)
	case inputs.RoleTable(spec.Roles).Digest() != inputs.RoleTable(started.RolePairs).Digest():
		return bad("roles", "not the role pairs the run started with %s", row)
	}
	return nil
}
