package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/store/local"
)

// TestToolEnvironmentIsRecordedAndChecked: a tool environment and tool path go into run.json's env
// beside the TMPDIR; a process puts them into its own environment with the tool path before
// its PATH; names crw or Codex set, bad names and values, and tool paths that are no
// directories are refused before a run exists; an edited run.json's env is refused when the
// run would start.
func TestToolEnvironmentIsRecordedAndChecked(t *testing.T) {
	t.Setenv("PATH", "/usr/bin:/bin")
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`export default async function main() { return 1; }`), 0o644))
	tools := filepath.Join(dir, "tools", "bin")
	require.NoError(t, os.MkdirAll(tools, 0o755))

	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, ToolEnv: map[string]string{"GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod"}, ToolPath: []string{tools}})
	require.NoError(t, err)
	spec, err := svc.Store.Spec(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"TMPDIR": spec.Env["TMPDIR"], "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod", "PATH": tools + ":$PATH"}, spec.Env)
	env, err := svc.Env(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, tools+":/usr/bin:/bin", env["PATH"])
	assert.Equal(t, "local", env["GOTOOLCHAIN"])

	for _, tt := range []struct {
		env  map[string]string
		path []string
		want string
	}{
		{env: map[string]string{"TMPDIR": "/x"}, want: "tool_env TMPDIR: not settable"},
		{env: map[string]string{"PATH": "/x"}, want: "tool_env PATH: not settable: the run's tool path goes before $PATH"},
		{env: map[string]string{"CRW_STATE": "/x"}, want: "tool_env CRW_STATE: not settable"},
		{env: map[string]string{"CODEX_HOME": "/x"}, want: "tool_env CODEX_HOME: not settable"},
		{env: map[string]string{"1GO": "x"}, want: `tool_env 1GO: "1GO" is not a variable name`},
		{env: map[string]string{"GO": "a\nb"}, want: "tool_env GO: a value with a line break or a NUL"},
		{path: []string{"relative/bin"}, want: `tool_path "relative/bin": not an absolute directory path`},
		{path: []string{filepath.Join(dir, "missing")}, want: "tool_path " + filepath.Join(dir, "missing") + ": not a directory"},
		{path: []string{wf}, want: "tool_path " + wf + ": not a directory"},
	} {
		before, err := svc.Store.List(ctx)
		require.NoError(t, err)
		_, err = svc.Create(ctx, engine.CreateOptions{Workflow: wf, ToolEnv: tt.env, ToolPath: tt.path})
		assert.Equal(t, errs.InvalidRequest, errs.CodeOf(err), "%v", err)
		assert.ErrorContains(t, err, tt.want)
		assert.Contains(t, []string{"tool_env", "tool_path"}, errs.FieldOf(err).Field)
		after, err := svc.Store.List(ctx)
		require.NoError(t, err)
		assert.Equal(t, before, after, "a refused create leaves no run")
	}

	// A run.json whose env was edited to set what crw refuses is refused when the run starts.
	spec.Env["CRW_PLANT"] = "x"
	data, err := json.Marshal(spec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(svc.Store.(*local.Store).RunDir(id), "run.json"), data, 0o600))
	_, err = svc.Env(ctx, id)
	assert.Equal(t, errs.RunEnvUnusable, errs.CodeOf(err))
	assert.ErrorContains(t, err, "its run.json's env is not one crw records: CRW_PLANT: not settable")
}
