package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/offline"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/runspec"
	"github.com/crw-dev/crw/engine/shadow"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// ResumeChange is what a resume goes on with instead of what the run's spec names.
type ResumeChange struct {
	// Script is an edited workflow ("": the run's own). It must replay the run's journal as it
	// was recorded: where a shadow replay reports a divergence, the change is refused.
	Script string
	// Answers is another answers file for a run on the fake backend ("": the run's own).
	Answers string
	// BudgetTokens, when not nil, is the run's token budget from now on (0: none).
	BudgetTokens *int64
}

// ChangeResume journals a change for the run's next process (a resume_changed row): run.json
// stays as the run was created, and every later process goes on with the change. The run must
// be one no process holds and that has not ended.
func (s *Service) ChangeResume(ctx context.Context, run string, c ResumeChange, by string) error {
	if c.Script == "" && c.Answers == "" && c.BudgetTokens == nil {
		return nil
	}
	if c.BudgetTokens != nil && *c.BudgetTokens < 0 {
		return errs.Field("budget_tokens", "", "must not be negative, got %d", *c.BudgetTokens)
	}
	st, err := s.ActingStatus(ctx, run)
	if err != nil {
		return err
	}
	switch st.State {
	case store.StateEnded:
		return errs.New(errs.RunUnavailable, "run %s has ended (%s): there is nothing to resume", run, st.Status)
	case store.StateRunning:
		return errs.New(errs.RunUnavailable, "run %s is held by another live process: a change goes to a run no process holds", run).Wrap(store.ErrHeld).
			Next("wait for its process to end, or cancel it, then resume it with the change")
	}
	spec, err := s.Store.Spec(ctx, run)
	if err != nil {
		return err
	}
	row := journal.ResumeChanged{By: by}
	if c.BudgetTokens != nil {
		b := *c.BudgetTokens
		row.Budget = &b
	}
	if c.Answers != "" {
		if spec.Backend != "fake" {
			return errs.Field(backend.OptionField("answers"), "", "run %s runs on the %s backend; an answers file is the fake backend's", run, spec.Backend)
		}
		opts, err := s.Backends.Prepare(spec.Backend, map[string]string{"answers": c.Answers})
		if err != nil {
			return err
		}
		row.BackendOptions = map[string]string{"answers": opts["answers"]}
	}
	if c.Script != "" {
		wf, err := filepath.Abs(c.Script)
		if err != nil {
			return errs.Field("script", c.Script, "%v", err)
		}
		var limits store.Limits
		if spec.Limits != nil {
			limits = *spec.Limits
		}
		script, err := runspec.Load(ctx, wf, spec.LibDirs, spec.Input, limits, nil)
		if err != nil {
			return err
		}
		if err := s.replaysAsRecorded(ctx, run, wf, spec.LibDirs); err != nil {
			return err
		}
		row.Workflow, row.ScriptDigest = wf, script.Digest()
		if spec.CodeKept {
			// The run's code travels with it: the edited script's files too.
			row.Files = map[string]string{}
			for path, data := range script.Sources() {
				if row.Files[path], err = s.Store.PutFile(ctx, data); err != nil {
					return err
				}
			}
		}
	}
	// What the run goes on with already is no change: nothing is written for it.
	var changes []*journal.Row
	digest := "" // the script digest of the newest started row
	if err := s.Store.Rows(ctx, run, 1, func(r *journal.Row) error {
		switch r.Type {
		case journal.TypeResumeChanged:
			cp := *r
			changes = append(changes, &cp)
		case journal.TypeStarted:
			digest = r.ScriptDigest
		}
		return nil
	}); err != nil {
		return err
	}
	now := withChanges(spec, changes)
	if row.BackendOptions["answers"] == now.BackendOptions["answers"] {
		row.BackendOptions = nil
	}
	if row.Budget != nil && *row.Budget == now.BudgetTokens {
		row.Budget = nil
	}
	if row.Workflow == now.Workflow && row.Workflow != "" && digest == row.ScriptDigest {
		row.Workflow, row.ScriptDigest = "", ""
	}
	if row.Workflow == "" && row.BackendOptions == nil && row.Budget == nil {
		return nil
	}
	err = s.writeOffline(ctx, run, func(w *offline.Writer) error { return w.Change(row.Row()) })
	if errors.Is(err, store.ErrHeld) {
		return errs.New(errs.RunUnavailable, "run %s is held by another live process: a change goes to a run no process holds", run).Wrap(err)
	}
	return err
}

// replaysAsRecorded refuses an edited script that takes another path over the run's journal
// than the run did: a call asked otherwise, or a call the journal has that it no longer makes
// (one a pause held excepted: a resume runs those again, or lets them go).
func (s *Service) replaysAsRecorded(ctx context.Context, run, script string, libs []string) error {
	h, err := replay.ReadPagesWithin(s.rowSource(ctx, run), s.replayBudget())
	if err != nil {
		return err
	}
	if h == nil {
		return errs.New(errs.IncompatibleSchema, "run %s: its journal has no rows", run)
	}
	opts := shadow.Options{Script: script, LibDirs: libs}
	if err := s.asRecorded(ctx, run, h, &opts); err != nil {
		return err
	}
	rep, err := shadow.Run(ctx, opts)
	if err != nil {
		return err
	}
	var why []string
	// Where the script waits for nothing but decisions the record has no answer to, a resume
	// lets its process go: what the script does from there depends on the answers, and the
	// resume that has them compares it with the record then.
	waiting := func(position int) bool { return rep.WaitsFrom > 0 && position >= rep.WaitsFrom }
	if e, ok := errs.As(rep.Stop); ok && !rep.StopAfterWait {
		// Its process would stop there (a commit, a tier step or a decision asked otherwise).
		why = append(why, e.Detail)
	}
	for _, d := range rep.Divergences {
		if rep.OffRecord > 0 && d.Position >= rep.OffRecord || waiting(d.Position) {
			continue // a resume runs the held call again, and the script's calls from there are its own
		}
		var fields []string
		for _, f := range d.Fields {
			fields = append(fields, f.Field)
		}
		why = append(why, fmt.Sprintf("call %s (#%d, node %s) asks another %s", d.Call, d.Position, d.Node, strings.Join(fields, ", ")))
	}
	for _, u := range rep.Unmade {
		if c := h.Call(u.Call); (c == nil || !replay.PauseReasons[c.EndReason]) && !waiting(u.Position) {
			why = append(why, "it no longer makes call "+u.Call+" ("+u.Role+"/"+u.Node+")")
		}
	}
	if len(why) > 0 {
		return errs.NewField(errs.RevisionConflict, "script", script, "takes another path than run %s recorded: %s", run, strings.Join(why, "; ")).
			Because("replay", "divergence", errs.NotStarted, errs.Certain).
			Next("crw flow shadow " + script + " --run " + run + " shows every difference; resume with a script that replays the journal")
	}
	return nil
}

// withChanges is the spec a process goes on with: the run's, with the changes its journal
// records applied in order (run.json itself is never rewritten).
func withChanges(spec *store.Spec, changes []*journal.Row) *store.Spec {
	if len(changes) == 0 {
		return spec
	}
	out := *spec
	out.BackendOptions = maps.Clone(spec.BackendOptions)
	for _, row := range changes {
		c := row.AsResumeChanged()
		if c.Workflow != "" {
			out.Workflow = c.Workflow
		}
		if c.Files != nil {
			out.Files = c.Files
		}
		if c.Budget != nil {
			out.BudgetTokens = *c.Budget
		}
		for k, v := range c.BackendOptions {
			if out.BackendOptions == nil {
				out.BackendOptions = map[string]string{}
			}
			out.BackendOptions[k] = v
		}
	}
	return &out
}
