package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/appserver"
	"github.com/crw-dev/crw/engine/appserver/mockmodel"
	"github.com/crw-dev/crw/engine/fake"
	"github.com/crw-dev/crw/engine/session"
	"github.com/crw-dev/crw/engine/session/codexhost"
	"github.com/crw-dev/crw/journal"
)

const sessionWorkflow = `
import { agent } from "crw:agent";
const schema = { type: "object", additionalProperties: false, required: ["verdict"], properties: { verdict: { type: "string" } } };
export default async function main() {
  const [a, b] = await Promise.all([
    agent.call({ role: "reviewer", node: "a", prompt: "Review part a.", schema }),
    agent.call({ role: "explorer", node: "b", prompt: "Explore part b.", schema }),
  ]);
  const c = await agent.call({ role: "reviewer", node: "c", prompt: "Review the whole.", schema });
  return [a.status, a.output.verdict, b.output.verdict, c.output.verdict];
}
`

const sessionAnswers = `{"answers": [{"match": {}, "turns": [{"text": "Looked at it.\n{\"verdict\": \"fine\"}"}]}]}`

// TestSessionRunOnARealCodexOwner: a user's Codex session (the real codex app-server, its model
// a scripted mock) is the owner of a session run. The owner does what crw flow next says:
// spawn_agent for each step, crw flow dispatched with the agent id, close_agent for each close
// step, until the run ends; the subagents answer from the answers file.
func TestSessionRunOnARealCodexOwner(t *testing.T) {
	t.Parallel()
	codex := mockmodel.Codex(t)
	answers, err := fake.ParseAnswers("answers.json", []byte(sessionAnswers))
	require.NoError(t, err)
	mock := mockmodel.New(answers)
	t.Cleanup(mock.Close)
	dir := t.TempDir()
	home, work, sock, state := filepath.Join(dir, "home"), filepath.Join(dir, "work"), filepath.Join(dir, "app.sock"), filepath.Join(dir, "state")
	require.NoError(t, os.Mkdir(work, 0o755))
	require.NoError(t, mock.WriteCodexHome(home,
		mockmodel.Role{Name: "reviewer", Description: "Reviews and answers with JSON.", Model: "mock-reviewer-model", Effort: "high"},
		mockmodel.Role{Name: "explorer", Description: "Explores and answers with JSON.", Model: "mock-explorer-model", Effort: "low"}))
	mockmodel.StartOwnerServer(t, codex, home, sock)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	owner, closeOwner, err := codexhost.Client(ctx, "unix://"+sock, "owner")
	require.NoError(t, err)
	defer closeOwner()
	th, err := owner.StartThread(ctx, appserver.ThreadParams{Cwd: work, ApprovalPolicy: "never", Sandbox: "read-only"})
	require.NoError(t, err)
	ownerID := th.Thread.ID
	host, err := codexhost.Dial(ctx, "unix://"+sock)
	require.NoError(t, err)
	defer host.Close()

	wf := filepath.Join(dir, "review.js")
	require.NoError(t, os.WriteFile(wf, []byte(sessionWorkflow), 0o600))
	env := []string{"CODEX_HOME=" + home}
	start := durableCrw(t, state, env, "--json", "flow", "start", wf, "--backend", "session", "--owner", ownerID, "--host", "unix://"+sock)
	require.Equal(t, 0, start.exit, "%s%s", start.stdout, start.stderr)
	var started struct{ Run string }
	require.NoError(t, json.Unmarshal([]byte(start.stdout), &started))
	run := started.Run

	var script []mockmodel.OwnerStep // the owner's tool calls so far, across its turns
	spawned := map[string]bool{}
	var view session.NextView
	for round := 0; ; round++ {
		require.Less(t, round, 30, "the run did not end: %+v", view)
		next := durableCrw(t, state, env, "--json", "flow", "next", run, "--wait", "10s")
		require.Equal(t, 0, next.exit, "%s%s", next.stdout, next.stderr)
		view = session.NextView{}
		require.NoError(t, json.Unmarshal([]byte(next.stdout), &view), next.stdout)
		if view.State == session.StateEnded {
			break
		}
		assert.Equal(t, 4, view.Slots.Limit, "agents.max_threads of the CODEX_HOME the mock wrote")
		var turn []mockmodel.OwnerStep
		var reports []session.NextStep
		for _, st := range view.Steps {
			switch st.Action {
			case session.ActionSpawn:
				require.False(t, spawned[st.Marker], "step %s handed out again after its spawn", st.Marker)
				spawned[st.Marker] = true
				turn = append(turn, mockmodel.OwnerStep{Tool: st.HostCall.Tool, Args: st.HostCall.Arguments})
				reports = append(reports, st)
			case session.ActionClose:
				turn = append(turn, mockmodel.OwnerStep{Tool: st.HostCall.Tool, Args: st.HostCall.Arguments})
			}
		}
		if len(turn) == 0 {
			continue
		}
		script = append(script, turn...)
		mock.Own(ownerID, append(append([]mockmodel.OwnerStep(nil), script...), mockmodel.OwnerStep{Text: "Done with these steps."})...)
		turnID, err := owner.StartTurn(ctx, ownerID, "Take the run's steps.", nil)
		require.NoError(t, err)
		res, err := owner.WaitTurn(ctx, turnID)
		require.NoError(t, err)
		require.Equal(t, appserver.TurnCompleted, res.Turn.Status, "%+v", res.Turn.Error)

		// The agent ids spawn_agent returned, by the marker of each subagent's first message.
		agents := map[string]string{}
		subs, err := host.Subagents(ctx)
		require.NoError(t, err)
		for _, s := range subs {
			agents[session.MarkerOf(s.Preview)] = s.ID
		}
		for _, st := range reports {
			agent := agents[st.Marker]
			require.NotEmpty(t, agent, "no subagent carries %s", st.Marker)
			d := durableCrw(t, state, env, "--json", "flow", "dispatched", run, st.Call, "--agent", agent,
				"--k", "1", "--attempt", "1", "--wait", "30s")
			var reply session.Reply
			require.NoError(t, json.Unmarshal([]byte(d.stdout), &reply), d.stdout+d.stderr)
			assert.Equal(t, session.ReplyBound, reply.Reply, "%+v", reply)
			assert.Equal(t, 0, d.exit)
		}
	}
	assert.Equal(t, "completed", view.Status)
	status := durableCrw(t, state, env, "--json", "flow", "status", run)
	assert.Contains(t, status.stdout, `"result":["completed","fine","fine","fine"]`)
	assert.Len(t, spawned, 3)

	trace := durableCrw(t, state, env, "flow", "trace", run)
	require.Equal(t, 0, trace.exit, trace.stderr)
	var rows []journal.Row
	for _, line := range strings.Split(strings.TrimSpace(trace.stdout), "\n") {
		var r journal.Row
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		rows = append(rows, r)
	}
	threads := map[string]journal.Row{}
	for _, r := range rows {
		if r.Type == journal.TypeThreadStarted {
			_, twice := threads[r.Call]
			assert.False(t, twice, "call %s bound twice", r.Call)
			threads[r.Call] = r
		}
	}
	require.Len(t, threads, 3)
	for call, r := range threads {
		assert.Equal(t, "session", r.Via, call)
		assert.Equal(t, ownerID, r.ParentThreadID, call)
		assert.Equal(t, work, r.HostCwd, call)
	}
	assert.Equal(t, "mock-reviewer-model", threads["c1"].Model)
	assert.Equal(t, "high", threads["c1"].Effort)
	assert.Equal(t, "explorer", threads["c2"].AgentRole)
	for _, r := range rows {
		if r.Type == journal.TypeCompleted {
			require.NotNil(t, r.Tokens, "call %s: its tokens from the subagent's rollout", r.Call)
			assert.Positive(t, r.Tokens.Total, r.Call)
		}
		assert.NotEqual(t, "tokens_unmeasured", r.Reason, r.Call)
		if r.Type == journal.TypeStarted {
			assert.Equal(t, "session", r.Backend)
			assert.Equal(t, 3, r.Pool, "a session run's pool is agents.max_threads − 1")
		}
	}
	assert.Equal(t, "mock-explorer-model", threads["c2"].Model)
}
