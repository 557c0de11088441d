package codexhost

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/backend/session/host"
	"github.com/crw-dev/crw/internal/mockmodel"
)

// The subagents' answers: the first answers at once, the second never (until interrupted).
const e2eAnswers = `{"answers": [
	{"match": {"call": 1}, "turns": [{"json": {"verdict": "ok", "step": "c1/t1"}}]},
	{"match": {"call": 2}, "turns": [{"text": "too late", "delay_ms": 60000}]}
]}`

const (
	markerA = "crw-flow-op: c1/t1-a1\nReview the change and answer with JSON."
	markerB = "crw-flow-op: c2/t1-a1\nTake your time."
)

// eventually calls read until ok says yes, for at most five seconds.
func eventually[T any](t *testing.T, what string, read func() (T, error), ok func(T) bool) T {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		v, err := read()
		if err == nil && ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s (last: %+v, %v)", what, v, err)
		}
	}
}

// A user's Codex (client A on its app server's socket) spawns two reviewer subagents; crw, a
// second client, binds and harvests them, sees the running one, and interrupts it. A private
// app server on the same CODEX_HOME reads them from disk.
func TestSubagentsOfARealOwner(t *testing.T) {
	codexBin := mockmodel.Codex(t)
	answers, err := fake.ParseAnswers("answers.json", []byte(e2eAnswers))
	require.NoError(t, err)
	mock := mockmodel.New(answers)
	t.Cleanup(mock.Close)
	dir := t.TempDir()
	home, work, sock := filepath.Join(dir, "home"), filepath.Join(dir, "work"), filepath.Join(dir, "app.sock")
	require.NoError(t, os.Mkdir(work, 0o755))
	require.NoError(t, mock.WriteCodexHome(home, mockmodel.Role{Name: "reviewer",
		Description: "Reviews a step and answers with JSON.", Model: "mock-reviewer-model", Effort: "high"}))
	mockmodel.StartOwnerServer(t, codexBin, home, sock)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// The owner: spawn A, wait for it (it answers at once), spawn B, end the turn.
	conn, err := dialWS(ctx, sock, config(nil))
	require.NoError(t, err)
	defer conn.close()
	owner := codex.NewConnClient(conn, codex.ClientOptions{Timeout: 10 * time.Second})
	require.NoError(t, owner.Initialize(ctx, "owner-host", "0"))
	th, err := owner.StartThread(ctx, codex.ThreadParams{Cwd: work, ApprovalPolicy: "never", Sandbox: "read-only"})
	require.NoError(t, err)
	ownerID := th.Thread.ID
	mock.Own(ownerID,
		mockmodel.OwnerStep{Tool: "spawn_agent", Args: map[string]any{"agent_type": "reviewer", "message": markerA}},
		mockmodel.OwnerStep{Tool: "wait_agent", Args: map[string]any{"timeout_ms": 30000}},
		mockmodel.OwnerStep{Tool: "spawn_agent", Args: map[string]any{"agent_type": "reviewer", "message": markerB}},
		mockmodel.OwnerStep{Text: "Both reviewers are spawned."})
	turnID, err := owner.StartTurn(ctx, ownerID, "Run steps c1 and c2 with reviewer subagents.", nil)
	require.NoError(t, err)
	res, err := owner.WaitTurn(ctx, turnID)
	require.NoError(t, err)
	require.Equal(t, codex.TurnCompleted, res.Turn.Status, "%+v", res.Turn.Error)
	assert.Equal(t, "Both reviewers are spawned.", codex.FinalAnswer(res.Messages))

	// crw binds both by their markers.
	h, err := Dial(ctx, "unix://"+sock)
	require.NoError(t, err)
	defer h.Close()
	subs := eventually(t, "two subagents listed", func() ([]host.Thread, error) { return h.Subagents(ctx) },
		func(s []host.Thread) bool { return len(s) == 2 })
	ids := map[string]string{}
	for _, s := range subs {
		assert.Equal(t, ownerID, s.ParentThreadID)
		assert.Equal(t, "reviewer", s.AgentRole)
		assert.Nil(t, s.Turns)
		ids[strings.SplitN(s.Preview, "\n", 2)[0]] = s.ID
	}
	a, b := ids["crw-flow-op: c1/t1-a1"], ids["crw-flow-op: c2/t1-a1"]
	require.NotEmpty(t, a, "%+v", subs)
	require.NotEmpty(t, b, "%+v", subs)

	// A's answer is harvested.
	subA := eventually(t, "A answered", func() (host.Thread, error) { return h.ReadThread(ctx, a) },
		func(s host.Thread) bool { return len(s.Turns) == 1 && s.Turns[0].Status == "completed" })
	assert.Equal(t, host.Thread{ID: a, ParentThreadID: ownerID, AgentRole: "reviewer", Model: "mock-reviewer-model",
		Effort: "high", Cwd: work, RolloutPath: subA.RolloutPath, Status: "idle", Preview: markerA,
		Turns: []host.Turn{{ID: subA.Turns[0].ID, Status: "completed", FirstUserMessage: markerA,
			Answer: `{"verdict": "ok", "step": "c1/t1"}`, HasAnswer: true}}}, subA)
	assert.True(t, strings.HasSuffix(subA.RolloutPath, a+".jsonl"), subA.RolloutPath)
	assert.FileExists(t, subA.RolloutPath)
	err = h.InterruptTurn(ctx, a, subA.Turns[0].ID)
	var rpc *codex.RPCError
	require.ErrorAs(t, err, &rpc, "a turn that has ended is not interrupted")
	assert.Equal(t, -32600, rpc.Code)
	t.Logf("turn/interrupt of an ended turn: %v", err)

	// B runs: its model never answers.
	subB := eventually(t, "B running", func() (host.Thread, error) { return h.ReadThread(ctx, b) },
		func(s host.Thread) bool { return len(s.Turns) == 1 })
	assert.Equal(t, "active", subB.Status)
	assert.Equal(t, host.Turn{ID: subB.Turns[0].ID, Status: "inProgress", FirstUserMessage: markerB}, subB.Turns[0])

	// A private app server reads the same threads from disk: the running one as notLoaded, its
	// turn interrupted.
	p, err := Private(ctx, codexBin, home)
	require.NoError(t, err)
	defer p.Close()
	privA, err := p.ReadThread(ctx, a)
	require.NoError(t, err)
	assert.Equal(t, "notLoaded", privA.Status)
	assert.Equal(t, subA.Turns, privA.Turns)
	privB := eventually(t, "B on disk", func() (host.Thread, error) { return p.ReadThread(ctx, b) },
		func(s host.Thread) bool { return len(s.Turns) == 1 })
	assert.Equal(t, "notLoaded", privB.Status)
	assert.Equal(t, "interrupted", privB.Turns[0].Status, "what a private app server shows of a running turn")
	assert.ErrorIs(t, p.InterruptTurn(ctx, b, subB.Turns[0].ID), ErrNoInterrupt)
	privSubs, err := p.Subagents(ctx)
	require.NoError(t, err)
	assert.Len(t, privSubs, 2)

	// crw interrupts B.
	require.NoError(t, h.InterruptTurn(ctx, b, subB.Turns[0].ID))
	subB = eventually(t, "B interrupted", func() (host.Thread, error) { return h.ReadThread(ctx, b) },
		func(s host.Thread) bool { return s.Turns[0].Status == "interrupted" })
	assert.False(t, subB.Turns[0].HasAnswer)

	// Ids the host does not know.
	for _, id := range []string{"019b0000-0000-7000-8000-000000000000", "bogus"} {
		_, err = h.ReadThread(ctx, id)
		assert.True(t, errors.Is(err, host.ErrUnknownThread), "%s: %v", id, err)
		_, err = p.ReadThread(ctx, id)
		assert.True(t, errors.Is(err, host.ErrUnknownThread), "%s: %v", id, err)
	}
}
