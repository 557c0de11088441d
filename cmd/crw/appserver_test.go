package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend/appserver"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/internal/mockmodel"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/local"
)

// TestAppServerKilledMidTurnThenResume kills a run on the real codex app-server while a turn is
// under way (the run's process and so its app server), resumes it, and checks that the turn was
// reconciled with the host rather than sent again.
func TestAppServerKilledMidTurnThenResume(t *testing.T) {
	codex := mockmodel.Codex(t)
	answers, err := fake.ParseAnswers("answers.json", []byte(`{"answers": [
		{"match": {"node": "slow"}, "turns": [{"text": "slow answer", "delay_ms": 1500}]},
		{"match": {}, "turns": [{"text": "quick"}]}
	]}`))
	require.NoError(t, err)
	mock := mockmodel.New(answers)
	t.Cleanup(mock.Close)
	home := t.TempDir()
	require.NoError(t, mock.WriteCodexHome(home))
	env := []string{"CODEX_HOME=" + home, "CRW_CODEX=" + codex, appserver.CallHeadersEnv + "=" + mockmodel.Provider}

	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
export default async function main() {
  const a = await agent.call({ role: "explorer", node: "first", prompt: "one" });
  const b = await agent.call({ role: "explorer", node: "slow", prompt: "two" });
  const c = await agent.call({ role: "explorer", node: "last", prompt: "three" });
  return [a.output, b.status, b.reason, c.output];
}
`), 0o600))

	r := durableCrw(t, state, env, "flow", "start", wf, "--backend", "app-server", "--json")
	require.Equal(t, 0, r.exit, "%+v", r)
	var started struct{ Run string }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &started))
	run := started.Run

	// Kill the run's process once the slow turn reached the model.
	require.Eventually(t, func() bool {
		for _, req := range mock.Requests() {
			if req.Node == "slow" {
				return true
			}
		}
		return false
	}, time.Minute, 10*time.Millisecond)
	st, err := enginetest.State(state).Published(run)
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(st.PID, syscall.SIGKILL))
	require.Eventually(t, func() bool { return !local.Held(state, run) }, time.Minute, 10*time.Millisecond)

	r = durableCrw(t, state, env, "flow", "resume", run, "--json")
	require.Equal(t, 0, r.exit, "%+v", r)
	var res struct {
		Status string
		Result []any
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), r.stdout)
	assert.Equal(t, "completed", res.Status)
	t.Logf("resumed: %v", res.Result)
	require.Len(t, res.Result, 4)
	assert.Equal(t, "quick", res.Result[0])
	assert.Equal(t, "quick", res.Result[3])
	// The slow turn's fate is the host's: harvested if its app server finished it, else held
	// as interrupted by someone other than crw. Either way it was never sent again.
	switch res.Result[1] {
	case string(journal.StatusCompleted):
	case string(journal.StatusHeld):
		assert.Equal(t, "host_interrupted_external", res.Result[2])
	default:
		t.Fatalf("the slow call ended %v", res.Result[1:3])
	}
	slow := 0
	for _, req := range mock.Requests() {
		if req.Node == "slow" && req.Answer != "compaction" {
			slow++
		}
	}
	assert.Equal(t, 1, slow, "the slow turn reached the model once")

	rows, err := enginetest.State(state).Rows(run)
	require.NoError(t, err)
	turns := 0
	for _, row := range rows {
		if row.Type == journal.TypeTurnStarted && row.Call == "c2" {
			turns++
		}
	}
	assert.Equal(t, 1, turns, "one turn_started row for the slow call")
	// Each call's thread was bound to the run before its turn: the spawn hook's line.
	for _, row := range rows {
		if row.Type == journal.TypeThreadStarted {
			binding, err := os.ReadFile(filepath.Join(state, "flow-bound", row.ThreadID+".jsonl"))
			require.NoError(t, err, "the binding of %s's thread", row.Call)
			assert.Contains(t, string(binding), `"kind":"orchestrator","run_id":"`+run+`"`)
		}
	}
}
