package engine_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/local/journalfile"
	"github.com/crw-dev/crw/store/local/journalfile/journalfiletest"
)

// The durable tests resume journals written by hand: what a process left behind when it was
// killed between two commits that the command line cannot place on purpose.

// durableGateWorkflow takes its path from the gate call, which the first process saw held by a
// rate limit. Held, it falls back; answered, it goes on with what the gate said.
const durableGateWorkflow = `import { agent } from "crw:agent";

export default async function main() {
  const gate = await agent.call({ role: "explorer", node: "gate", prompt: "which way" });
  if (gate.status !== "completed") {
    const fallback = await agent.call({ role: "explorer", node: "fallback", prompt: "fall back" });
    return { gate: gate.reason, fallback: fallback.status };
  }
  if (gate.output === "stop") {
    return { gate: gate.output };
  }
  const next = await agent.call({ role: "explorer", node: "next", prompt: "go " + gate.output });
  return { gate: gate.output, next: [next.callId, next.output] };
}
`

// durablePrepared is the prepared row the engine writes for an explorer call without schema.
func durablePrepared(call string, index int, node, prompt string) *journal.Row {
	sum := sha256.Sum256([]byte(prompt))
	row := &journal.Row{
		Type: journal.TypePrepared, Call: call, Index: index, Role: "explorer", Node: node,
		Prompt: prompt, PromptDigest: "sha256:" + hex.EncodeToString(sum[:]), Site: "wf.js:4:28",
	}
	row.InputDigest = engine.InputDigest(row)
	return row
}

// durablePausedThenKilled creates a run of durableGateWorkflow whose first process saw the gate
// held by a rate limit (the run paused), had the script issue the fallback call and was killed
// before the fallback's held row was committed: the fallback is an open call. The fake backend
// now answers the gate with gateAnswer.
func durablePausedThenKilled(t *testing.T, gateAnswer string) (state, id string) {
	t.Helper()
	root := t.TempDir()
	state = filepath.Join(root, "state")
	wfPath := filepath.Join(root, "wf.js")
	require.NoError(t, os.WriteFile(wfPath, []byte(durableGateWorkflow), 0o644))
	answersPath := filepath.Join(root, "answers.json")
	answersFile := `{"answers": [
  {"match": {"node": "gate"}, "turns": [{"text": ` + gateAnswer + `}]},
  {"match": {"node": "next"}, "turns": [{"text": "gone"}]}
]}`
	require.NoError(t, os.WriteFile(answersPath, []byte(answersFile), 0o644))
	id, err := engine.Create(engine.Options{StateDir: state, Workflow: wfPath, BackendOpts: map[string]string{"answers": answersPath}, Backends: enginetest.Backends()})
	require.NoError(t, err)

	j, err := journalfile.Open(filepath.Join(engine.RunDir(state, id), engine.JournalFile))
	require.NoError(t, err)
	_, err = j.Write(
		&journal.Row{Type: journal.TypeStarted, Run: id, Backend: "fake", Workflow: wfPath, Pool: 4, Input: json.RawMessage("null")},
		durablePrepared("c1", 1, "gate", "which way"),
		&journal.Row{Type: journal.TypeThreadStarted, Call: "c1", ThreadID: "fake-c1", Model: "fake-model", Effort: "medium"},
		&journal.Row{Type: journal.TypeTurnStarted, Call: "c1", K: 1, TurnID: "fake-c1-t1"},
		&journal.Row{Type: journal.TypeEscalation, Call: "c1", Reason: "quota_or_rate", Detail: "codexErrorInfo rateLimitExceeded"},
		&journal.Row{Type: journal.TypeHeld, Call: "c1", Reason: "host_infra_rate", Detail: "codexErrorInfo rateLimitExceeded", TurnIDs: []string{"fake-c1-t1"}},
		durablePrepared("c2", 2, "fallback", "fall back"),
	)
	require.NoError(t, err)
	require.NoError(t, j.Close())
	return state, id
}

// durableResume resumes a run in this process and returns its result and journal.
func durableResume(t *testing.T, state, id string) (*engine.Result, []journal.Row) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), enginetest.Timeout)
	defer cancel()
	res, err := engine.Execute(ctx, state, id, engine.ExecOptions{Backends: enginetest.Backends()})
	require.NoError(t, err)
	journalfiletest.Check(t, filepath.Join(engine.RunDir(state, id), engine.JournalFile))
	rows, err := engine.ReadJournal(state, id)
	require.NoError(t, err)
	return res, rows
}

// TestDurableResumeSupersedesUnmadeCall: the gate, held by the pause, runs again and is answered;
// the script no longer falls back, so the open fallback call ends superseded /
// superseded_by_resume, and is never matched against.
func TestDurableResumeSupersedesUnmadeCall(t *testing.T) {
	t.Parallel()
	state, id := durablePausedThenKilled(t, `"stop"`)
	res, rows := durableResume(t, state, id)
	require.Equal(t, engine.RunCompleted, res.Status, "%+v", res.Error)
	assert.JSONEq(t, `{"gate": "stop"}`, string(res.Result))

	// The gate ran again: a second attempt under the same id, sent and answered.
	assert.Equal(t, []string{
		journal.TypePrepared, journal.TypeThreadStarted, journal.TypeTurnStarted, journal.TypeEscalation, journal.TypeHeld,
		journal.TypePrepared, journal.TypeThreadStarted, journal.TypeTurnStarted, journal.TypeCompleted,
	}, enginetest.Types(enginetest.CallRows(rows, "c1")))
	assert.JSONEq(t, `"stop"`, string(enginetest.OfType(enginetest.CallRows(rows, "c1"), journal.TypeCompleted)[0].Output))

	// The fallback is ended, superseded, with nothing sent.
	fallback := enginetest.CallRows(rows, "c2")
	require.Equal(t, []string{journal.TypePrepared, journal.TypeSuperseded}, enginetest.Types(fallback))
	assert.Equal(t, "superseded_by_resume", fallback[1].Reason)

	// The superseded row comes before the run's end, and the timeline counts it.
	ended := enginetest.OfType(rows, journal.TypeEnded)
	require.Len(t, ended, 1)
	assert.Less(t, fallback[1].Seq, ended[0].Seq)
	s := engine.Summarize(rows)
	assert.Equal(t, engine.Counts{"completed": 1, "superseded": 1}, s.Counts)
	require.Len(t, s.Calls, 2, "no other call")
	assert.Equal(t, 2, s.Calls[0].Attempts)
}

// TestDurableResumeSupersedesReplacedCall: the gate runs again and sends the script down another
// path, whose call takes the open fallback's position in issue order. That call is a new one
// (its own id); the fallback, which the resumed script never makes, ends superseded /
// superseded_by_resume rather than staying open for good.
func TestDurableResumeSupersedesReplacedCall(t *testing.T) {
	t.Parallel()
	state, id := durablePausedThenKilled(t, `"left"`)
	res, rows := durableResume(t, state, id)
	require.Equal(t, engine.RunCompleted, res.Status, "%+v", res.Error)
	assert.JSONEq(t, `{"gate": "left", "next": ["c3", "gone"]}`, string(res.Result))

	next := enginetest.CallRows(rows, "c3")
	require.NotEmpty(t, next)
	assert.Equal(t, "next", next[0].Node)
	assert.Equal(t, 2, next[0].Index, "the new call is the second the script issued")

	fallback := enginetest.CallRows(rows, "c2")
	types := enginetest.Types(fallback)
	require.Equal(t, []string{journal.TypePrepared, journal.TypeSuperseded}, types)
	assert.Equal(t, "superseded_by_resume", fallback[1].Reason)
	assert.Equal(t, engine.Counts{"completed": 2, "superseded": 1}, engine.Summarize(rows).Counts)
}
