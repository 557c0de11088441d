package engine

import (
	"context"
	"path/filepath"

	"github.com/crw-dev/crw/engine/offline"
	"github.com/crw-dev/crw/engine/runspec"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// ChangeResumeUnchecked is ChangeResume's script change without its replay check
// (replaysAsRecorded): a test sees what a resume with the script does.
func (s *Service) ChangeResumeUnchecked(ctx context.Context, run, script, by string) error {
	spec, err := s.Store.Spec(ctx, run)
	if err != nil {
		return err
	}
	wf, err := filepath.Abs(script)
	if err != nil {
		return err
	}
	var limits store.Limits
	if spec.Limits != nil {
		limits = *spec.Limits
	}
	sc, err := runspec.Load(ctx, wf, spec.LibDirs, spec.Input, limits, nil)
	if err != nil {
		return err
	}
	row := journal.ResumeChanged{By: by, Workflow: wf, ScriptDigest: sc.Digest()}
	if spec.CodeKept {
		row.Files = map[string]string{}
		for path, data := range sc.Sources() {
			if row.Files[path], err = s.Store.PutFile(ctx, data); err != nil {
				return err
			}
		}
	}
	return s.writeOffline(ctx, run, func(w *offline.Writer) error { return w.Change(row.Row()) })
}
