package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/engine/session"
	"github.com/crw-dev/crw/engine/session/bound"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

// ownerLine is the orchestrator line of a session run: its run, the digest of its role table
// and the decided pairs of the six roles.
func ownerLine(spec *store.Spec) bound.Line {
	return bound.Orchestrator(spec.Run, inputs.RoleTable(spec.Roles).Digest(), spec.Roles)
}

// bindOwner binds a session run's owner thread to the run, unless the thread serves another
// live run; what keeps it from binding is returned as a warning, never an error: the run goes
// on, and its binds still check every subagent's pair.
func bindOwner(st *local.Store, spec *store.Spec) string {
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

// ownerHooks are what a process of a session run does with its owner's binding: bind it again
// once the run's started row is durable, when its line is not the one in force, and close it
// when the run ends. Warnings go to w.
func ownerHooks(ctx context.Context, g *globals, svc *engine.Service, id string, w io.Writer) (onStart func(string), onEnd func(*store.Status)) {
	st, ok := g.store.(*local.Store)
	spec, err := svc.Store.Spec(ctx, id)
	if !ok || err != nil || spec.Backend != session.Name {
		return nil, func(*store.Status) {}
	}
	onStart = func(string) {
		if warning := bindOwner(st, spec); warning != "" {
			fmt.Fprintf(w, "crw: warning: %s\n", warning)
		}
	}
	onEnd = func(end *store.Status) {
		if end == nil || end.State != store.StateEnded {
			return // a paused run keeps its owner: its line is closed by the next bind once it is not live
		}
		if err := bound.New(st.Root()).Close(spec.BackendOptions["owner"], id); err != nil {
			fmt.Fprintf(w, "crw: warning: the owner's binding cannot be closed: %v\n", err)
		}
	}
	return onStart, onEnd
}
