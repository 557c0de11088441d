package ops

import (
	"github.com/crw-dev/crw/engine/backend/bound"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/store"
)

// ownerLine is the orchestrator line of a session run: its run, the digest of its role table
// and the decided pairs of the six roles.
func ownerLine(spec *store.Spec) bound.Line {
	return bound.Orchestrator(spec.Run, inputs.RoleTable(spec.Roles).Digest(), spec.Roles)
}

// bindOwner binds a session run's owner thread to the run, unless the thread serves another
// live run; what keeps it from binding is returned as a warning, never an error: the run goes
// on, and its binds still check every subagent's pair.
func bindOwner(st Host, spec *store.Spec) string {
	if spec.Backend != session.Name {
		return ""
	}
	return bound.New(st.Root()).BindOwner(spec.BackendOptions["owner"], ownerLine(spec), st.Live)
}
