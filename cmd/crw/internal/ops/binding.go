package ops

import (
	"fmt"

	"github.com/crw-dev/crw/engine/backend/bound"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

// ownerLine is the orchestrator line of a session run: its run, the digest of its role table
// and the decided pairs of the six roles.
func ownerLine(spec *store.Spec) bound.Line {
	return bound.Orchestrator(spec.Run, inputs.RoleTable(spec.Roles).Digest(), spec.Roles)
}

// BindOwner binds a session run's owner thread to the run, unless the thread serves another
// live run; what keeps it from binding is returned as a warning, never an error: the run goes
// on, and its binds still check every subagent's pair.
func BindOwner(st *local.Store, spec *store.Spec) string {
	if spec.Backend != session.Name {
		return ""
	}
	owner := spec.BackendOptions["owner"]
	out, err := bound.New(st.Root()).Bind(owner, ownerLine(spec), func(run string) bool { return local.Live(st.Root(), run) })
	switch {
	case err != nil:
		return fmt.Sprintf("the owner thread %s cannot be bound to run %s: %v; its spawns get no pair from the run", owner, spec.Run, err)
	case !out.Bound:
		return out.Warning
	}
	return ""
}
