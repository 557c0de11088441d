package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/store"
)

const keptFlow = `import { agent } from "crw:agent";
import { label } from "./label.js";
export default async function main() {
  const a = await agent.call({ role: "explorer", node: "a", prompt: "first" });
  const b = await agent.call({ role: "explorer", node: "b", prompt: "second" });
  return label([a.status, b.status]);
}`

// TestARunThatKeepsItsCodeLoadsItWhereverItGoesOn: a run created to keep its code (a queued
// run, a run on a cluster) loads the workflow and the modules it was created with in every
// process, as the store keeps them, though the files on disk changed or went; a resume with an
// edited script keeps that script's files in turn, and the next process loads those.
func TestARunThatKeepsItsCodeLoadsItWhereverItGoesOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	dir := t.TempDir()
	wf, label := filepath.Join(dir, "wf.js"), filepath.Join(dir, "label.js")
	require.NoError(t, os.WriteFile(wf, []byte(keptFlow), 0o644))
	require.NoError(t, os.WriteFile(label, []byte(`export const label = (s) => "created: " + s.join(",");`), 0o644))
	answers := filepath.Join(dir, "answers.json")
	require.NoError(t, os.WriteFile(answers, []byte(`{"answers": [{"match": {}, "turns": [{"text": "ok", "tokens": {"input": 10, "output": 2}}]}]}`), 0o644))

	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Backend: "fake", BackendOpts: map[string]string{"answers": answers},
		BudgetTokens: 5, KeepCode: true})
	require.NoError(t, err)
	spec, err := svc.Store.Spec(ctx, id)
	require.NoError(t, err)
	assert.True(t, spec.CodeKept)
	assert.Len(t, spec.Files, 2, "the workflow and its module")

	// The files change on disk before any process runs: the run loads what it was created with.
	require.NoError(t, os.WriteFile(label, []byte(`export const label = () => "edited on disk";`), 0o644))
	end, err := svc.Execute(ctx, id, engine.ExecOptions{})
	require.NoError(t, err)
	require.Equal(t, store.RunPaused, end.Status, "its budget of 5 paused it after a call")

	// A resume with an edited script keeps the edit's files; the next process loads them even
	// though the workflow's files are gone from disk by then.
	edited := filepath.Join(dir, "edited.js")
	require.NoError(t, os.WriteFile(label, []byte(`export const label = (s) => "resumed: " + s.join(",");`), 0o644))
	require.NoError(t, os.WriteFile(edited, []byte(keptFlow), 0o644))
	budget := int64(0)
	require.NoError(t, svc.ChangeResume(ctx, id, engine.ResumeChange{Script: edited, BudgetTokens: &budget}, "t"))
	require.NoError(t, os.Remove(edited))
	require.NoError(t, os.Remove(label))
	end, err = svc.Execute(ctx, id, engine.ExecOptions{})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `"resumed: completed,completed"`, string(end.Result))
}

// TestARunWhoseKeptCodeIsGoneSaysWhichFile: a run that keeps its code and whose store lost a
// file of it does not load another: its process says which file of the run it cannot read.
func TestARunWhoseKeptCodeIsGoneSaysWhichFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, root := enginetest.LocalService(t)
	dir := t.TempDir()
	wf, label := filepath.Join(dir, "wf.js"), filepath.Join(dir, "label.js")
	require.NoError(t, os.WriteFile(wf, []byte(keptFlow), 0o644))
	require.NoError(t, os.WriteFile(label, []byte(`export const label = (s) => s.join(",");`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Backend: "fake", KeepCode: true})
	require.NoError(t, err)
	spec, err := svc.Store.Spec(ctx, id)
	require.NoError(t, err)
	real, err := filepath.EvalSymlinks(label)
	require.NoError(t, err)
	digest := spec.Files[real]
	require.NotEmpty(t, digest, "%v", spec.Files)
	files, err := filepath.Glob(filepath.Join(root, "files", "*"))
	require.NoError(t, err)
	removed := 0
	for _, f := range files {
		if filepath.Base(f) == strings.Replace(digest, ":", "-", 1) {
			require.NoError(t, os.Remove(f))
			removed++
		}
	}
	require.Equal(t, 1, removed, "the module's file in the store, among %v", files)

	_, err = svc.Execute(ctx, id, engine.ExecOptions{})
	require.Error(t, err)
	assert.Equal(t, errs.IncompatibleSchema, errs.CodeOf(err))
	assert.Contains(t, err.Error(), real)
}
