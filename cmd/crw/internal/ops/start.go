package ops

import (
	"context"
	"fmt"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/bound"
	"github.com/crw-dev/crw/engine/backend/session"
)

// Started is what Start did: the run, its process, what kept a session run's owner from being
// bound, and a session run's preview.
type Started struct {
	Run      string
	PID      int
	Warnings []string
	Preview  *Preview
}

// Start creates a run and starts it in a process of its own (crw flow start). A session run's
// owner is bound before any process of the run exists, under the run's start lock: the run is
// live from then until its process holds it; when the process does not come up, the owner is
// let go again. announce, when not nil, is told the run, its warnings and preview once its
// owner is bound, before its process starts. The Started it returns names the run whenever the
// run was created, an error or not.
func Start(ctx context.Context, svc *engine.Service, st Host, co engine.CreateOptions, announce func(*Started)) (*Started, error) {
	id, err := svc.Create(ctx, co)
	if err != nil {
		return nil, err
	}
	out := &Started{Run: id}
	if co.Backend == session.Name {
		release, err := st.StartLock(id)
		if err != nil {
			out.Warnings = append(out.Warnings, fmt.Sprintf("run %s: its start lock cannot be taken: %v", id, err))
		} else {
			defer release()
		}
		spec, err := svc.Store.Spec(ctx, id)
		if err != nil {
			return out, err
		}
		p := SessionPreview(st, PreviewOf{Run: id, Owner: spec.BackendOptions["owner"], Host: spec.BackendOptions["host"],
			CodexHome: spec.BackendOptions["codex-home"], Repo: spec.Repo, Roles: spec.Roles})
		out.Preview = &p
		if w := bindOwner(st, spec); w != "" {
			out.Warnings = append(out.Warnings, w)
		}
	}
	if announce != nil {
		announce(out)
	}
	out.PID, err = svc.Start(ctx, id)
	if err != nil && co.Backend == session.Name {
		// The run's process did not come up: the owner is not left bound to it.
		if spec, serr := svc.Store.Spec(ctx, id); serr == nil {
			_ = bound.New(st.Root()).Close(spec.BackendOptions["owner"], id)
		}
	}
	return out, err
}

// ResumeDetached goes on with a run in a process of its own (crw flow resume --detach), with
// the edited script or answers file change names, journaled as by who: what that process would
// refuse is refused here first, so the caller hears of it.
func ResumeDetached(ctx context.Context, svc *engine.Service, id string, change engine.ResumeChange, who string) (pid int, err error) {
	if err := svc.CheckResumable(ctx, id); err != nil {
		return 0, err
	}
	if err := svc.ChangeResume(ctx, id, change, who); err != nil {
		return 0, err
	}
	return svc.Start(ctx, id)
}
