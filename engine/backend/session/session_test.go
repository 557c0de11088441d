package session_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/backend/session/host"
	"github.com/crw-dev/crw/engine/backend/session/sessiontest"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/engine/runner/turns"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

const owner = "owner-thread"

// sessionRun runs script on the session backend, with an owner that answers each step with
// answer, and returns the run's end, its rows, the host and the owner.
func sessionRun(t *testing.T, script string, answer func(bus.StepFile) sessiontest.Answer, tune func(*sessiontest.Owner), roles ...inputs.RoleTable) (*store.Status, []journal.Row, *sessiontest.Host, *sessiontest.Owner, string) {
	t.Helper()
	return sessionRunWith(t, script, answer, tune, nil, roles...)
}

// sessionRunWith is sessionRun with the backend's configuration tuned by config.
func sessionRunWith(t *testing.T, script string, answer func(bus.StepFile) sessiontest.Answer, tune func(*sessiontest.Owner), config func(*session.Config), roles ...inputs.RoleTable) (*store.Status, []journal.Row, *sessiontest.Host, *sessiontest.Owner, string) {
	t.Helper()
	return sessionRunCreated(t, script, answer, tune, config, nil, roles...)
}

// sessionRunCreated is sessionRunWith with the run's options tuned by create.
func sessionRunCreated(t *testing.T, script string, answer func(bus.StepFile) sessiontest.Answer, tune func(*sessiontest.Owner), config func(*session.Config), create func(*engine.CreateOptions), roles ...inputs.RoleTable) (*store.Status, []journal.Row, *sessiontest.Host, *sessiontest.Owner, string) {
	t.Helper()
	return sessionRunWrapped(t, script, answer, tune, config, create, nil, roles...)
}

// sessionRunWrapped is sessionRunCreated with the engine given wrap's backend around the
// session backend (nil: the session backend itself).
func sessionRunWrapped(t *testing.T, script string, answer func(bus.StepFile) sessiontest.Answer, tune func(*sessiontest.Owner), config func(*session.Config), create func(*engine.CreateOptions), wrap func(*session.Backend) backend.Backend, roles ...inputs.RoleTable) (*store.Status, []journal.Row, *sessiontest.Host, *sessiontest.Owner, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(script), 0o600))
	st := mem.New()
	st.Dir = filepath.Join(dir, "state")
	svc := enginetest.Service(st)
	co := engine.CreateOptions{Workflow: wf}
	if strings.Contains(script, `role: "executor"`) {
		// An executor works in a worktree of the run's repository.
		co.Repo = enginetest.GitRepo(t, map[string]string{"README.md": "# the project\n"})
	}
	if len(roles) > 0 {
		co.Roles = roles[0]
	}
	if create != nil {
		create(&co)
	}
	id, err := svc.Create(ctx, co)
	require.NoError(t, err)
	runDir := filepath.Join(dir, "run")
	require.NoError(t, os.Mkdir(runDir, 0o700))
	host := sessiontest.NewHost(owner)
	host.RolloutDir = t.TempDir()
	o := &sessiontest.Owner{Host: host, Bus: bus.Bus{Dir: runDir}, Run: id, Answer: answer}
	if tune != nil {
		tune(o)
	}
	cfg := session.Config{Run: id, Owner: owner, Host: host, Dir: runDir, Poll: 5 * time.Millisecond, LookupEvery: 4}
	if config != nil {
		config(&cfg)
	}
	b := session.New(cfg)
	var be backend.Backend = b
	if wrap != nil {
		be = wrap(b)
	}
	ownerCtx, stopOwner := context.WithCancel(ctx)
	go o.Loop(ownerCtx)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: be})
	if err != nil {
		rows, _ := svc.Rows(context.Background(), id)
		for _, r := range rows {
			t.Logf("%s %s %s %s", r.Type, r.Call, r.Reason, r.Detail)
		}
	}
	require.NoError(t, err)
	require.NoError(t, b.Close())
	// The close steps of the last calls: the owner takes them too. With no process left to
	// retract them, their files stay, naming subagents that are closed.
	require.Eventually(t, func() bool {
		o.Pass()
		steps, _, _ := o.Bus.Steps()
		for _, st := range steps {
			if st.Action != bus.ActionClose || !host.Closed(st.AgentID) {
				return false
			}
		}
		return true
	}, time.Minute, 5*time.Millisecond)
	stopOwner()
	_, _, agents, err := o.Bus.Read()
	require.NoError(t, err)
	assert.Empty(t, agents, "no subagent is marked bound once every call has ended")
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	enginetest.CheckJournal(t, rows)
	return end, rows, host, o, runDir
}

const threeCalls = `
import { agent } from "crw:agent";
const schema = { type: "object", additionalProperties: false, required: ["n"], properties: { n: { type: "integer" } } };
export default async function main() {
  const [a, b] = await Promise.all([
    agent.call({ role: "explorer", node: "a", prompt: "count the files", schema }),
    agent.call({ role: "reviewer", node: "b", prompt: "count the tests", schema }),
  ]);
  const c = await agent.call({ role: "critic", node: "c", prompt: "add them", schema });
  return [a.status, a.output.n, b.output.n, c.output.n];
}
`

func answerN(st bus.StepFile) sessiontest.Answer {
	switch {
	case strings.Contains(st.Message, "CRW-ROLE: explorer"):
		return sessiontest.Answer{Text: `{"n": 3}`}
	case strings.Contains(st.Message, "CRW-ROLE: reviewer"):
		return sessiontest.Answer{Text: `{"n": 4}`}
	}
	return sessiontest.Answer{Text: "The sum is below.\n{\"n\": 7}"}
}

// TestSessionCallsRunOnOwnerSubagents: each call is a step the owner spawns a subagent for and
// reports; the run binds it, harvests its answer and closes it.
func TestSessionCallsRunOnOwnerSubagents(t *testing.T) {
	// No marker lookup: every subagent is bound by its report, whatever the machine's load.
	end, rows, host, o, runDir := sessionRunWith(t, threeCalls, answerN, nil, func(c *session.Config) { c.LookupEvery = 1 << 20 })
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["completed", 3, 4, 7]`, string(end.Result))
	if !assert.Eventually(t, func() bool { return o.RepliesOf(bus.ReplyBound) == 3 }, time.Minute, 5*time.Millisecond, "three replies: bound") {
		t.Logf("the replies the owner read: %+v", o.AllReplies())
	}
	assert.Equal(t, []string{"c1/t1-a1", "c2/t1-a1", "c3/t1-a1"}, sorted(o.Spawned))

	for _, c := range []struct{ call, role, agentType string }{{"c1", "explorer", "explorer"}, {"c2", "reviewer", "reviewer"}, {"c3", "critic", "reviewer"}} {
		call := enginetest.CallRows(rows, c.call)
		assert.Equal(t, []string{journal.TypePrepared, journal.TypeStepPublished, journal.TypeThreadStarted, journal.TypeTurnStarted, journal.TypeCompleted},
			enginetest.Types(call), c.call)
		step, th, turn := call[1], call[2], call[3]
		marker := c.call + "/t1-a1"
		assert.Equal(t, marker, step.Marker)
		assert.Equal(t, c.call+"/t1", step.Op)
		assert.Equal(t, 1, step.Attempt)
		assert.Equal(t, bus.ActionSpawn, step.Action)
		assert.Equal(t, c.agentType, step.AgentType)
		assert.Equal(t, c.role, step.Role)
		ws := filepath.Join(runDir, "calls", c.call)
		assert.Equal(t, ws, step.Workspace)
		assert.DirExists(t, ws)
		assert.Equal(t, 1, step.ConversationTurn)
		var input string
		require.NoError(t, json.Unmarshal(step.Input, &input))
		assert.True(t, strings.HasPrefix(input, "crw-flow-op: "+marker+"\nCRW-ROLE: "+c.role+"\n\nYour shell starts in a directory that is NOT your workspace. Your workspace is "+ws+": "), input)
		packet := filepath.Join(runDir, "steps", c.call, "packet-t1-a1.md")
		assert.Equal(t, packet, step.Packet)
		data, err := os.ReadFile(packet)
		require.NoError(t, err)
		assert.Contains(t, string(data), "## Output contract")
		assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, step.PacketDigest)

		assert.Equal(t, "session", th.Via)
		assert.Equal(t, owner, th.ParentThreadID)
		assert.Equal(t, c.agentType, th.AgentRole)
		assert.Equal(t, marker, th.Marker)
		assert.Equal(t, ws, th.Cwd)
		assert.Equal(t, "/owner/cwd", th.HostCwd)
		assert.Equal(t, marker, turn.Marker)
		assert.Equal(t, c.call+"/t1", turn.Op)
		assert.Equal(t, 1, turn.ConversationTurn)
		assert.True(t, host.Closed(th.ThreadID), "the subagent of %s is closed", c.call)
	}
	for _, r := range enginetest.Terminals(rows) {
		require.NotNil(t, r.Tokens, r.Call)
		assert.Equal(t, int64(10), r.Tokens.Input, "the turn's usage from the subagent's rollout")
	}
	assert.Equal(t, journal.Tokens{Input: 10, Output: 8, Total: 18}, *enginetest.Terminal(t, rows, "c1").Tokens)
	third := enginetest.Terminal(t, rows, "c3")
	assert.True(t, third.Extracted, "the JSON after prose is taken out of the answer")
	assert.JSONEq(t, `{"n": 7}`, string(third.Output))
}

// TestSessionRepairIsSentToTheOpenSubagent: an answer that fails the schema gets its one
// repair as a send_input step on the same subagent.
func TestSessionRepairIsSentToTheOpenSubagent(t *testing.T) {
	script := `
import { agent } from "crw:agent";
export default async function main() {
  const r = await agent.call({ role: "reviewer", prompt: "review", schema: { type: "object", additionalProperties: false, required: ["ok"], properties: { ok: { type: "boolean" } } } });
  return [r.status, r.output.ok, r.meta.repairUsed];
}
`
	end, rows, _, o, _ := sessionRun(t, script, func(st bus.StepFile) sessiontest.Answer {
		if st.K == 1 {
			return sessiontest.Answer{Text: `{"ok": "yes"}`}
		}
		return sessiontest.Answer{Text: `{"ok": true}`}
	}, nil)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["completed", true, true]`, string(end.Result))
	steps := enginetest.OfType(rows, journal.TypeStepPublished)
	require.Len(t, steps, 2)
	threads := enginetest.OfType(rows, journal.TypeThreadStarted)
	require.Len(t, threads, 1, "the repair runs on the subagent of the task turn")
	assert.Equal(t, bus.ActionSendInput, steps[1].Action)
	assert.Equal(t, threads[0].ThreadID, steps[1].AgentID)
	assert.Equal(t, "c1/t2-a1", steps[1].Marker)
	turns := enginetest.OfType(rows, journal.TypeTurnStarted)
	require.Len(t, turns, 2)
	assert.Equal(t, "c1/t2-a1", turns[1].Marker)
	assert.Equal(t, 2, turns[1].K)
	assert.Eventually(t, func() bool { return o.RepliesOf(bus.ReplyBound) == 2 }, time.Minute, 5*time.Millisecond, "two replies: bound")
}

// TestSessionSpawnNeverReportedIsBoundByItsMarker: an owner that spawns and never reports: the
// run finds the subagent by the marker of its first message.
func TestSessionSpawnNeverReportedIsBoundByItsMarker(t *testing.T) {
	end, rows, _, o, _ := sessionRun(t, threeCalls, answerN, func(o *sessiontest.Owner) { o.Silent = true })
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["completed", 3, 4, 7]`, string(end.Result))
	assert.Len(t, enginetest.OfType(rows, journal.TypeThreadStarted), 3)
	assert.Zero(t, o.RepliesOf(bus.ReplyBound))
}

// TestSessionFailedTurnIsClassified: a subagent's turn that fails with a rate limit pauses the
// run as any call's would.
func TestSessionFailedTurnIsClassified(t *testing.T) {
	script := `
import { agent } from "crw:agent";
export default async function main() {
  const r = await agent.call({ role: "explorer", prompt: "look" });
  return [r.status, r.reason];
}
`
	end, rows, _, _, _ := sessionRun(t, script, func(bus.StepFile) sessiontest.Answer {
		return sessiontest.Answer{Info: "rateLimitExceeded"}
	}, func(o *sessiontest.Owner) { o.Host.RolloutDir = "" })
	assert.Equal(t, store.RunPaused, end.Status, "%+v", end.Error)
	held := enginetest.Terminal(t, rows, "c1")
	assert.Equal(t, journal.TypeHeld, held.Type)
	assert.Equal(t, "host_infra_rate", held.Reason)
	warnings := enginetest.OfType(rows, journal.TypeWarning)
	require.Len(t, warnings, 1, "a host without the subagent's rollout: the turn is unmeasured")
	assert.Equal(t, "tokens_unmeasured", warnings[0].Reason)
	assert.Contains(t, warnings[0].Detail, "pauses: false")
}

// TestSessionBindsOnlyTheOwnersSubagentOnTheRolesPair: a subagent of another thread is refused
// and one on another pair is told pair_mismatch; the step stays until the owner spawns the
// right one, which alone is bound.
func TestSessionBindsOnlyTheOwnersSubagentOnTheRolesPair(t *testing.T) {
	script := `
import { agent } from "crw:agent";
export default async function main() {
  const r = await agent.call({ role: "reviewer", prompt: "review" });
  return [r.status, r.output];
}
`
	var spawns atomic.Int32
	end, rows, _, o, _ := sessionRun(t, script, func(bus.StepFile) sessiontest.Answer {
		switch spawns.Add(1) {
		case 1:
			return sessiontest.Answer{Text: "from a stranger", Parent: "another-thread"}
		case 2:
			return sessiontest.Answer{Text: "on the wrong pair", Model: "other-model"}
		}
		return sessiontest.Answer{Text: "looks fine"}
	}, nil, inputs.RoleTable{"reviewer": {Model: "review-model", Effort: "high"}})
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["completed", "looks fine"]`, string(end.Result))
	assert.Equal(t, int32(3), spawns.Load())
	// The third subagent is bound by its report or by its marker, whichever comes first.
	require.Eventually(t, func() bool { return len(o.AllReplies()) >= 2 }, time.Minute, 5*time.Millisecond)
	assert.Equal(t, 1, o.RepliesOf(bus.ReplyRefused))
	assert.Equal(t, 1, o.RepliesOf(bus.ReplyPairMismatch))
	for _, r := range o.AllReplies() {
		if r.Reply == bus.ReplyPairMismatch {
			assert.Equal(t, "review-model", r.Model)
			assert.Equal(t, "high", r.Effort)
		}
	}
	threads := enginetest.OfType(rows, journal.TypeThreadStarted)
	require.Len(t, threads, 1)
	assert.Equal(t, "review-model", threads[0].Model)
	assert.Equal(t, "high", threads[0].Effort)
	assert.Empty(t, threads[0].PairCheck, "both parts decided and checked")
	assert.Len(t, enginetest.OfType(rows, journal.TypeStepPublished), 1, "the step was published once")
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestSessionRunSurvivesACrashAfterEveryCommit: the run's process dies after each commit in
// turn and a new process resumes it, with the same owner and host: the run ends as an
// uninterrupted one does, each attempt is bound once, and no step is spawned twice.
func TestSessionRunSurvivesACrashAfterEveryCommit(t *testing.T) {
	crashAfterEveryCommit(t, threeCalls, answerN, func(msg string, end *store.Status, rows []journal.Row, o *sessiontest.Owner) {
		assert.JSONEq(t, `["completed", 3, 4, 7]`, string(end.Result), msg)
		for _, call := range []string{"c1", "c2", "c3"} {
			assert.Equal(t, 1, enginetest.Count(rows, call, journal.TypeThreadStarted), "%s: %s bound once", msg, call)
			assert.Equal(t, 1, enginetest.Count(rows, call, journal.TypeStepPublished), "%s: %s's step published once", msg, call)
		}
		assert.Equal(t, []string{"c1/t1-a1", "c2/t1-a1", "c3/t1-a1"}, sorted(o.Spawned), "%s: every step spawned once", msg)
	})
}

// TestSessionLostAttemptAndRepairSurviveACrashAfterEveryCommit: a call whose first attempt
// is lost and whose second answers only after a repair, its process killed after each commit:
// the attempt is recorded lost once, each step is published once and each attempt bound once.
func TestSessionLostAttemptAndRepairSurviveACrashAfterEveryCommit(t *testing.T) {
	script := `
import { agent } from "crw:agent";
const schema = { type: "object", additionalProperties: false, required: ["n"], properties: { n: { type: "integer" } } };
export default async function main() {
  const r = await agent.call({ role: "critic", prompt: "count", schema });
  return [r.status, r.output.n];
}
`
	answer := func(st bus.StepFile) sessiontest.Answer {
		switch {
		case st.Attempt == 1:
			return sessiontest.Answer{Lose: true}
		case st.K == 1:
			return sessiontest.Answer{Text: "about five"}
		}
		return sessiontest.Answer{Text: `{"n": 5}`}
	}
	crashAfterEveryCommit(t, script, answer, func(msg string, end *store.Status, rows []journal.Row, o *sessiontest.Owner) {
		assert.JSONEq(t, `["completed", 5]`, string(end.Result), msg)
		assert.Equal(t, 1, enginetest.Count(rows, "c1", journal.TypeAttemptLost), "%s: the attempt is lost once", msg)
		assert.Equal(t, 2, enginetest.Count(rows, "c1", journal.TypeThreadStarted), "%s: one bind per attempt", msg)
		var markers []string
		for _, r := range enginetest.OfType(rows, journal.TypeStepPublished) {
			markers = append(markers, r.Marker)
		}
		assert.Equal(t, []string{"c1/t1-a1", "c1/t1-a2", "c1/t2-a2"}, markers, "%s: each step published once", msg)
		repair := enginetest.OfType(rows, journal.TypeStepPublished)[2]
		assert.Equal(t, "about five", repair.PreviousAnswer, "%s: the repair step names the answer it repairs", msg)
		assert.Equal(t, []string{"c1/t1-a1", "c1/t1-a2"}, sorted(o.Spawned), "%s: every spawn step spawned once", msg)
	})
}

// crashAfterEveryCommit runs script once for each commit n, its process dying after commit n
// and resumed until the run ends, and checks each run.
func crashAfterEveryCommit(t *testing.T, script string, answer func(bus.StepFile) sessiontest.Answer,
	check func(msg string, end *store.Status, rows []journal.Row, o *sessiontest.Owner)) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(script), 0o600))
	crashed := 0
	for n := uint64(1); n < 40; n++ {
		st, svc, id, host := freshRun(ctx, t, wf)
		runDir := filepath.Join(dir, fmt.Sprint("run", n))
		o := &sessiontest.Owner{Host: host, Bus: bus.Bus{Dir: runDir}, Run: id, Answer: answer}
		ownerCtx, stopOwner := context.WithCancel(ctx)
		go o.Loop(ownerCtx)
		process := func() (*store.Status, error) {
			b := session.New(session.Config{Run: id, Owner: owner, Host: host, Dir: runDir, Poll: 5 * time.Millisecond, LookupEvery: 4})
			defer b.Close()
			return svc.Execute(ctx, id, engine.ExecOptions{Backend: b})
		}
		st.CrashAfterCommit(id, n)
		end, err := process()
		if err == nil {
			stopOwner()
			require.Equal(t, store.RunCompleted, end.Status)
			break
		}
		require.ErrorIs(t, err, store.ErrLeaseLost, "commit %d", n)
		crashed++
		for resumes := 0; end == nil; resumes++ {
			require.Less(t, resumes, 3, "commit %d: the run did not end", n)
			end, err = process()
			if errs.CodeOf(err) == errs.RunUnavailable && resumes == 0 {
				// The process died right after its ended row was durable: the run is over.
				end, err = svc.Status(ctx, id)
			}
			require.NoError(t, err, "commit %d", n)
		}
		stopOwner()
		msg := fmt.Sprintf("crash after commit %d", n)
		rows, err := svc.Rows(ctx, id)
		require.NoError(t, err)
		if end.Status != store.RunCompleted || os.Getenv("CRW_DEBUG_ROWS") != "" {
			for _, r := range rows {
				t.Logf("%d %s %s k%d a%d %s %s %s %s", n, r.Type, r.Call, r.K, r.Attempt, r.Marker, r.ThreadID, r.Reason, r.Detail)
			}
		}
		require.Equal(t, store.RunCompleted, end.Status, "%s: %+v", msg, end.Error)
		enginetest.CheckJournal(t, rows)
		check(msg, end, rows, o)
	}
	assert.Greater(t, crashed, 3)
	t.Logf("a process died after each of %d commits", crashed)
}

// TestSessionStepUnwrittenIsRetriedAndWarnedSparingly: a step that cannot be written (the
// steps folder is a file) is written again at each poll, warned about at the 1st and 10th
// failure, and closed with written: true once it is written.
func TestSessionStepUnwrittenIsRetriedAndWarnedSparingly(t *testing.T) {
	script := `
import { agent } from "crw:agent";
export default async function main() { return (await agent.call({ role: "explorer", prompt: "look" })).output; }
`
	// The run looks the step's marker up every 4 polls (LookupEvery), each poll after a write
	// of the step that fails: at its 26th lookup the step failed to be written 104 times.
	var lookups atomic.Int64
	var flows flowRows
	end, rows, _, _, _ := sessionRunWith(t, script, func(bus.StepFile) sessiontest.Answer { return sessiontest.Answer{Text: "seen"} }, func(o *sessiontest.Owner) {
		// steps/ is a file for about 30 polls, then the disk is "freed".
		require.NoError(t, os.MkdirAll(o.Bus.Dir, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(o.Bus.Dir, "steps"), nil, 0o600))
		go func() {
			for deadline := time.Now().Add(20 * time.Second); lookups.Load() < 26 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			_ = os.Remove(filepath.Join(o.Bus.Dir, "steps"))
		}()
	}, func(c *session.Config) {
		c.Host = countingLookups{Host: c.Host.(*sessiontest.Host), n: &lookups}
		c.Report = flows.add
	})
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `"seen"`, string(end.Result))
	unwritten := enginetest.OfType(flows.all(), journal.TypeStepUnwritten)
	require.Len(t, unwritten, 4, "the 1st, 10th and 100th failures, and the closing row: not one a poll")
	for i, want := range []int{1, 10, 100} {
		r := unwritten[i]
		u := r.Rares().Unwritten
		require.NotNil(t, u)
		assert.Equal(t, "c1/t1-a1 1 1 spawn", fmt.Sprintf("%s %d %d %s", r.Marker, r.K, r.Attempt, r.Action))
		assert.Equal(t, "not_delivered", u.InputState)
		assert.Equal(t, want, u.Failures)
		assert.NotEmpty(t, u.Error)
		assert.Nil(t, u.Written, "only the closing row says whether it was written")
		assert.False(t, u.LastAt.Before(u.FirstAt))
	}
	closing := unwritten[3].Rares().Unwritten
	require.NotNil(t, closing.Written)
	assert.True(t, *closing.Written)
	assert.GreaterOrEqual(t, closing.Failures, 100)
	assert.Empty(t, enginetest.OfType(rows, journal.TypeWarning), "step_unwritten is a row of its own")
}

// TestSessionStepNeverWrittenSaysSo: a step that is never written before its turn ends (here
// the run's deadline interrupts it) has its closing step_unwritten row, written: false.
func TestSessionStepNeverWrittenSaysSo(t *testing.T) {
	script := `
import { agent } from "crw:agent";
export default async function main() { return (await agent.call({ role: "explorer", prompt: "look" })).status; }
`
	var flows flowRows
	end, _, _, _, _ := sessionRunCreated(t, script, func(bus.StepFile) sessiontest.Answer { return sessiontest.Answer{Text: "seen"} }, func(o *sessiontest.Owner) {
		require.NoError(t, os.MkdirAll(o.Bus.Dir, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(o.Bus.Dir, "steps"), nil, 0o600)) // until the turn ends
	}, func(c *session.Config) {
		c.Report = func(e backend.Event) {
			flows.add(e)
			r := e.Row()
			if u := r.Rares().Unwritten; u != nil && u.Written != nil {
				_ = os.Remove(filepath.Join(c.Dir, "steps")) // the helper reads the bus when the run ends
			}
		}
	}, func(co *engine.CreateOptions) { co.Limits.Deadline = new(500 * time.Millisecond) })
	require.Equal(t, store.RunFailed, end.Status)
	unwritten := enginetest.OfType(flows.all(), journal.TypeStepUnwritten)
	require.NotEmpty(t, unwritten)
	closing := unwritten[len(unwritten)-1].Rares().Unwritten
	require.NotNil(t, closing)
	require.NotNil(t, closing.Written, "the closing row")
	assert.False(t, *closing.Written)
	assert.Equal(t, "not_delivered", closing.InputState)
}

// TestSessionRepairAfterALostAttemptReplacesNothing: seed 003's replaces_turn names the turn a
// step runs again. The task turn's second attempt (the first was lost) replaces turn 1; the
// repair turn on that attempt's subagent is the call's first turn 2, and replaces nothing.
func TestSessionRepairAfterALostAttemptReplacesNothing(t *testing.T) {
	script := `
import { agent } from "crw:agent";
const S = {type: "object", properties: {ok: {type: "boolean"}}, required: ["ok"], additionalProperties: false};
export default async function main() { return (await agent.call({ role: "critic", prompt: "judge it", schema: S })).output; }
`
	end, rows, _, _, _ := sessionRun(t, script, func(st bus.StepFile) sessiontest.Answer {
		switch {
		case st.Attempt == 1:
			return sessiontest.Answer{Lose: true}
		case st.K == 1:
			return sessiontest.Answer{Text: "not what was asked"}
		}
		return sessiontest.Answer{Text: `{"ok": true}`}
	}, nil)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `{"ok": true}`, string(end.Result))
	steps := enginetest.OfType(rows, journal.TypeStepPublished)
	require.Len(t, steps, 3)
	var got [][3]int // k, attempt, replaces_turn
	for _, st := range steps {
		got = append(got, [3]int{st.K, st.Attempt, st.ReplacesTurn})
	}
	assert.Equal(t, [][3]int{{1, 1, 0}, {1, 2, 1}, {2, 2, 0}}, got)
	var turns [][2]int // conversation_turn, replaces_turn
	for _, ts := range enginetest.OfType(rows, journal.TypeTurnStarted) {
		turns = append(turns, [2]int{ts.ConversationTurn, ts.ReplacesTurn})
	}
	assert.Equal(t, [][2]int{{1, 0}, {1, 1}, {2, 0}}, turns)
}

// countingLookups is a host that counts the run's lookups of markers (Subagents).
type countingLookups struct {
	*sessiontest.Host
	n *atomic.Int64
}

func (h countingLookups) Subagents(ctx context.Context) ([]host.Thread, error) {
	h.n.Add(1)
	return h.Host.Subagents(ctx)
}

// TestSessionLostAttemptSpawnsTheNext: a subagent the host drops mid-turn loses its attempt
// (session_attempt_lost, its subagent closed); the next attempt is spawned in the same
// workspace, its packet saying why, and answers.
func TestSessionLostAttemptSpawnsTheNext(t *testing.T) {
	script := `
import { agent } from "crw:agent";
export default async function main() { return (await agent.call({ role: "executor", prompt: "build it" })).output; }
`
	var owner *sessiontest.Owner
	late := ""
	end, rows, host, o, _ := sessionRun(t, script, func(st bus.StepFile) sessiontest.Answer {
		if st.Attempt == 1 {
			return sessiontest.Answer{Lose: true, Model: "first-model"}
		}
		// The call goes on under attempt 2: a late report of another subagent for attempt 1
		// is told that attempt ended, not that it has its subagent.
		late = closeReply(t, owner, bus.Report{Run: owner.Run, Call: "c1", Agent: "late-agent", K: 1, Attempt: 1})
		return sessiontest.Answer{Text: "built"}
	}, func(o *sessiontest.Owner) { owner = o })
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `"built"`, string(end.Result))
	assert.Equal(t, "the attempt of this marker ended (it was answered, or lost and spawned again): close the subagent", late)
	assert.Equal(t, []string{"c1/t1-a1", "c1/t1-a2"}, o.Spawned)
	assert.Equal(t, []string{journal.TypePrepared, journal.TypeWorkspacePlaced, journal.TypeStepPublished, journal.TypeThreadStarted, journal.TypeTurnStarted,
		journal.TypeAttemptLost, journal.TypeStepPublished, journal.TypeThreadStarted, journal.TypeTurnStarted, journal.TypeCompleted},
		enginetest.Types(enginetest.CallRows(rows, "c1")))
	lost := enginetest.OfType(rows, journal.TypeAttemptLost)[0]
	threads := enginetest.OfType(rows, journal.TypeThreadStarted)
	assert.Equal(t, 1, lost.Attempt)
	assert.Equal(t, threads[0].ThreadID, lost.AgentID)
	assert.Equal(t, "turn_stopped", lost.Reason)
	assert.Equal(t, "notLoaded", lost.HostStatus)
	assert.Equal(t, "interrupted", lost.TurnStatus)
	// Its close step is taken back once the host shows the subagent closed, and a lost one
	// reads notLoaded already: the owner may or may not have closed it by then.
	th, err := host.ReadThread(context.Background(), threads[0].ThreadID)
	require.NoError(t, err)
	assert.Equal(t, "notLoaded", th.Status, "the lost attempt's subagent runs nothing")
	second := enginetest.OfType(rows, journal.TypeStepPublished)[1]
	assert.Equal(t, 2, second.Attempt)
	assert.Equal(t, "c1/t1-a2", second.Marker)
	assert.Equal(t, 1, second.ReplacesTurn)
	placed := enginetest.OfType(rows, journal.TypeWorkspacePlaced)
	require.Len(t, placed, 1, "one allocation serves every attempt")
	assert.Equal(t, "attempt", placed[0].Placement)
	first := enginetest.OfType(rows, journal.TypeStepPublished)[0]
	assert.Equal(t, placed[0].Workspace, first.Workspace, "the executor works in its node's worktree")
	assert.Equal(t, placed[0].Workspace, second.Workspace, "the same workspace")
	assert.Contains(t, second.Note, "Attempt 1 of this turn was cut off")
	assert.Contains(t, second.Note, "git -C "+placed[0].Workspace+" status")
	packet, err := os.ReadFile(second.Packet)
	require.NoError(t, err)
	assert.Contains(t, string(packet), "## Earlier attempts\n\nAttempt 1 of this turn was cut off")
	assert.Equal(t, 2, threads[1].Attempt)
	assert.Equal(t, "c1/t1-a2", threads[1].Marker)
	assert.Equal(t, []journal.Pair{{Model: "first-model", Effort: "medium"}}, threads[1].PriorPairs, "the pair the lost attempt ran")
	assert.Nil(t, threads[0].PriorPairs)
	assert.Equal(t, "pair_unchecked", threads[1].PairCheck, "no role table: the host decides the pair")
}

// BenchmarkSessionStep is a session call's whole way, publish → bind → harvest, on the in-memory
// host and an owner that answers at once, polling every millisecond: the engine's own overhead
// per step, host reads being map lookups here.
func BenchmarkSessionStep(b *testing.B) {
	const calls = 200
	script := fmt.Sprintf(`
import { agent } from "crw:agent";
export default async function main() {
  let n = 0;
  for (let i = 0; i < %d; i++) if ((await agent.call({ role: "explorer", prompt: "step " + i })).status === "completed") n++;
  return n;
}
`, calls)
	dir := b.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(b, os.WriteFile(wf, []byte(script), 0o600))
	for b.Loop() {
		ctx := context.Background()
		svc := enginetest.Service(mem.New())
		id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
		require.NoError(b, err)
		runDir := filepath.Join(dir, id)
		host := sessiontest.NewHost(owner)
		o := &sessiontest.Owner{Host: host, Bus: bus.Bus{Dir: runDir}, Run: id, Answer: func(bus.StepFile) sessiontest.Answer { return sessiontest.Answer{Text: "ok"} }}
		ownerCtx, stop := context.WithCancel(ctx)
		go func() {
			for ownerCtx.Err() == nil {
				o.Pass()
				time.Sleep(200 * time.Microsecond)
			}
		}()
		be := session.New(session.Config{Run: id, Owner: owner, Host: host, Dir: runDir, Poll: time.Millisecond})
		start, cpu := time.Now(), cpuTime()
		end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: be})
		elapsed, used := time.Since(start), cpuTime()-cpu
		stop()
		be.Close()
		require.NoError(b, err)
		require.Equal(b, store.RunCompleted, end.Status)
		b.ReportMetric(float64(elapsed.Microseconds())/calls/1000, "ms/step")
		// The process's CPU time a step costs, the owner's and the polls' included: the
		// engine's own work, where ms/step is mostly the polls' waiting.
		b.ReportMetric(float64(used.Microseconds())/calls/1000, "cpu-ms/step")
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

const continuation = `
import { agent } from "crw:agent";
const schema = { type: "object", additionalProperties: false, required: ["n"], properties: { n: { type: "integer" } } };
export default async function main() {
  const a = await agent.call({ role: "explorer", prompt: "count the files", schema });
  const b = await agent.call({ role: "explorer", prompt: "now count the tests", schema, resume: a.handle });
  return [a.output.n, b.output.n];
}
`

// continuationConversation is what c2's packet must carry of c1, as the journal records it.
const continuationConversation = "## Conversation so far\n\nYou continue this conversation: the earlier turns and their answers, oldest first. Build on them; do not redo them.\n\n" +
	"### c1, turn 1: task\n\ncount the files\n\n### c1, turn 1: answer (completed)\n\n{\"n\":3}\n\n"

// continuesSection is what c2's packet says of the call it continues, c1, in the run folder
// runDir: c1's packet and the file with its answer.
func continuesSection(runDir string) string {
	return "## The call you continue\n\nYou go on from call c1: its task packet is " + filepath.Join(runDir, "steps", "c1", "packet-t1-a1.md") +
		", and its answer is in " + filepath.Join(runDir, "steps", "c2", "continues-c1-answer.md") + ".\n\n"
}

// TestSessionContinuationRunsOnANewSubagentWithItsConversation: a continuation (resume:
// handle) spawns a subagent of its own, chained to the handle's, whose packet carries the
// journal's record of the conversation it goes on from.
func TestSessionContinuationRunsOnANewSubagentWithItsConversation(t *testing.T) {
	end, rows, _, o, runDir := sessionRun(t, continuation, answerN, nil)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `[3, 3]`, string(end.Result))
	assert.Equal(t, []string{"c1/t1-a1", "c2/t1-a1"}, o.Spawned, "the continuation spawns a subagent of its own")
	answer, err := os.ReadFile(filepath.Join(runDir, "steps", "c2", "continues-c1-answer.md"))
	require.NoError(t, err)
	assert.Equal(t, `{"n":3}`, string(answer), "the continued call's answer, in a file")
	threads := enginetest.OfType(rows, journal.TypeThreadStarted)
	require.Len(t, threads, 2)
	assert.NotEqual(t, threads[0].ThreadID, threads[1].ThreadID)
	assert.Equal(t, threads[0].ThreadID, threads[1].ChainThread)
	assert.True(t, strings.HasSuffix(threads[1].ChainedFrom, ":c1"), threads[1].ChainedFrom)
	step := enginetest.CallRows(rows, "c2")[1]
	require.Equal(t, journal.TypeStepPublished, step.Type)
	packet, err := os.ReadFile(step.Packet)
	require.NoError(t, err)
	assert.Contains(t, string(packet), continuationConversation+continuesSection(runDir)+"## Task\n\nnow count the tests\n")
	assert.Empty(t, enginetest.OfType(rows, journal.TypeCheckpointStarted), "a run's first process forks nothing either, but writes no checkpoint row")
}

// TestSessionContinuationInAResumesSuffixStartsFromACheckpoint: a continuation a resumed
// process starts writes checkpoint_started (the handle, the conversation's calls and its
// digest) before its step, once; its packet carries the same conversation whichever process
// publishes it.
func TestSessionContinuationInAResumesSuffixStartsFromACheckpoint(t *testing.T) {
	crashAfterEveryCommit(t, continuation, answerN, func(msg string, end *store.Status, rows []journal.Row, o *sessiontest.Owner) {
		assert.JSONEq(t, `[3, 3]`, string(end.Result), msg)
		c2 := enginetest.CallRows(rows, "c2")
		var step journal.Row
		for _, r := range c2 {
			if r.Type == journal.TypeStepPublished {
				step = r
			}
		}
		require.NotEmpty(t, step.Packet, msg)
		packet, err := os.ReadFile(step.Packet)
		require.NoError(t, err, msg)
		runDir := filepath.Dir(filepath.Dir(filepath.Dir(step.Packet)))
		assert.Contains(t, string(packet), continuationConversation+continuesSection(runDir), msg)
		starts := 0
		for _, r := range rows {
			if r.Type == journal.TypeStarted {
				starts++
			}
			if r.Seq == step.Seq {
				break
			}
		}
		checkpoints := enginetest.OfType(c2, journal.TypeCheckpointStarted)
		if starts == 1 {
			assert.Empty(t, checkpoints, "%s: the first process published c2's step", msg)
			return
		}
		require.Len(t, checkpoints, 1, "%s: c2's step was published in a resume's suffix", msg)
		cp := checkpoints[0]
		assert.Less(t, cp.Seq, step.Seq, msg)
		assert.Equal(t, []string{"c1"}, cp.ConversationCalls, msg)
		assert.True(t, strings.HasSuffix(cp.ChainedFrom, ":c1"), msg)
		sum := sha256.Sum256([]byte(continuationConversation))
		assert.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), cp.ConversationDigest, msg)
	})
}

func closeSteps(t *testing.T, runDir, call string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(runDir, "steps", call, "close-*.json"))
	require.NoError(t, err)
	return files
}

// TestSessionCloseStepIsRetractedOnceClosed: a close step stays until the host shows its
// subagent closed, then the run takes it back: crw flow next hands out each close until the
// owner has made it, and no longer.
func TestSessionCloseStepIsRetractedOnceClosed(t *testing.T) {
	script := `
import { agent } from "crw:agent";
export default async function main() {
  const a = await agent.call({ role: "explorer", prompt: "first" });
  const b = await agent.call({ role: "explorer", prompt: "second" });
  return [a.output, b.output];
}
`
	var runDir string
	retracted := false
	end, _, _, _, _ := sessionRun(t, script, func(st bus.StepFile) sessiontest.Answer {
		if st.Call == "c2" {
			// The owner closed c1's subagent in this pass, before it took c2's step.
			retracted = assert.Eventually(t, func() bool { return len(closeSteps(t, runDir, "c1")) == 0 }, time.Minute, time.Millisecond)
		}
		return sessiontest.Answer{Text: st.Call}
	}, func(o *sessiontest.Owner) { runDir = o.Bus.Dir })
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.True(t, retracted, "c1's close step was retracted while the run went on")
}

// TestSessionPairChecksOnlyTheDecidedParts: a role that decides its model alone is bound on its
// model, and thread_started records the effort the host applied with effort_unchecked.
func TestSessionPairChecksOnlyTheDecidedParts(t *testing.T) {
	script := `
import { agent } from "crw:agent";
export default async function main() { return (await agent.call({ role: "reviewer", prompt: "review" })).output; }
`
	end, rows, _, _, _ := sessionRun(t, script, func(bus.StepFile) sessiontest.Answer { return sessiontest.Answer{Text: "ok"} },
		nil, inputs.RoleTable{"reviewer": {Model: "review-model"}})
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	th := enginetest.OfType(rows, journal.TypeThreadStarted)[0]
	assert.Equal(t, "review-model", th.Model)
	assert.Equal(t, "medium", th.Effort, "the host's")
	assert.Equal(t, "effort_unchecked", th.PairCheck)
}

// TestSessionContinuationOnAnotherEffortIsRefused: a continuation that asks an effort its
// handle's subagent did not run (the role leaves effort to the host) is refused pair_refused
// before any step; one that asks nothing continues, recording the handle's pair as prior.
func TestSessionContinuationOnAnotherEffortIsRefused(t *testing.T) {
	script := `
import { agent } from "crw:agent";
export default async function main() {
  const a = await agent.call({ role: "explorer", prompt: "look" });
  const b = await agent.call({ role: "explorer", prompt: "look harder", effort: "xhigh", resume: a.handle });
  const c = await agent.call({ role: "explorer", prompt: "go on", resume: a.handle });
  return [b.status, b.reason, c.status];
}
`
	end, rows, _, o, _ := sessionRun(t, script, func(bus.StepFile) sessiontest.Answer { return sessiontest.Answer{Text: "ok"} }, nil)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["refused", "pair_refused", "completed"]`, string(end.Result))
	assert.Equal(t, []string{journal.TypePrepared, journal.TypeRefused}, enginetest.Types(enginetest.CallRows(rows, "c2")), "refused before any step")
	assert.Contains(t, enginetest.Terminal(t, rows, "c2").Detail, `effort "xhigh" is not the "medium" its handle's subagent ran`)
	assert.Equal(t, []string{"c1/t1-a1", "c3/t1-a1"}, o.Spawned)
}

// TestSessionLostRepairIsSpawnedWithTheTaskAndTheAnswer: a repair whose subagent is lost goes
// on on a new subagent, whose packet names the task once, the answer repaired and the repair
// instruction; the send_input step before it counted the call's tokens so far.
func TestSessionLostRepairIsSpawnedWithTheTaskAndTheAnswer(t *testing.T) {
	script := `
import { agent } from "crw:agent";
const schema = { type: "object", additionalProperties: false, required: ["n"], properties: { n: { type: "integer" } } };
export default async function main() { return (await agent.call({ role: "explorer", prompt: "count the files", schema })).output; }
`
	end, rows, _, o, _ := sessionRun(t, script, func(st bus.StepFile) sessiontest.Answer {
		switch {
		case st.K == 1:
			return sessiontest.Answer{Text: "about five"}
		case st.Attempt == 1:
			return sessiontest.Answer{Lose: true}
		}
		return sessiontest.Answer{Text: `{"n": 5}`}
	}, nil)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `{"n": 5}`, string(end.Result))
	assert.Equal(t, []string{"c1/t1-a1", "c1/t2-a2"}, o.Spawned)
	steps := enginetest.OfType(rows, journal.TypeStepPublished)
	require.Len(t, steps, 3)
	sendInput, respawn := steps[1], steps[2]
	assert.Equal(t, bus.ActionSendInput, sendInput.Action)
	assert.Equal(t, "about five", sendInput.PreviousAnswer)
	require.NotNil(t, sendInput.CallTokens, "the task turn's tokens, from the rollout")
	assert.Equal(t, sendInput.CallTokens, sendInput.TokensSeen)
	assert.Positive(t, sendInput.CallTokens.Total)
	assert.Equal(t, bus.ActionSpawn, respawn.Action)
	assert.Equal(t, "c1/t2-a2", respawn.Marker)
	packet, err := os.ReadFile(respawn.Packet)
	require.NoError(t, err)
	assert.Contains(t, string(packet), "## Task\n\ncount the files\n\n### The answer to repair\n\nabout five\n\n### What to do\n\nYour previous answer could not be accepted: ")
}

// private reads the host as a private app server does (sessiontest.Private), with LostAfter.
func private(lostAfter time.Duration) func(*session.Config) {
	return func(c *session.Config) {
		c.Host = sessiontest.Private{Host: c.Host.(*sessiontest.Host)}
		c.PrivateHost = true
		c.LostAfter = lostAfter
	}
}

// TestSessionPrivateHostWaitsForASubagentAtWork: on a private host a running subagent reads
// notLoaded with its turn interrupted, and one not yet on disk reads unknown. Neither is taken
// for a lost attempt or the host's interrupt: the report is told retry, the subagent is bound
// once it is on disk, and a turn that runs three times LostAfter while its rollout grows is
// harvested when it ends.
func TestSessionPrivateHostWaitsForASubagentAtWork(t *testing.T) {
	// The subagent's rollout grows every lostAfter/5: a wide margin for a loaded machine.
	const lostAfter = 500 * time.Millisecond
	var host *sessiontest.Host
	var ow *sessiontest.Owner
	worked := make(chan time.Duration, 1)
	end, rows, _, o, _ := sessionRunWith(t, threeCalls, func(st bus.StepFile) sessiontest.Answer {
		if st.Call != "c1" {
			return answerN(st)
		}
		go func() { // the subagent works a while, writing its rollout, then answers
			var agent, turn string
			assert.Eventually(t, func() bool { var ok bool; agent, turn, ok = host.Find(st.Marker); return ok }, 20*time.Second, time.Millisecond)
			// The report comes before its rollout is written: the rollout is written once the
			// run has told the report retry.
			assert.Eventually(t, func() bool {
				for _, r := range ow.AllReplies() {
					if r.Marker == st.Marker && r.Reply == bus.ReplyRetry {
						return true
					}
				}
				return false
			}, 20*time.Second, time.Millisecond, "the report of %s told retry", st.Marker)
			start := time.Now()
			for time.Since(start) < 3*lostAfter {
				host.Progress(agent)
				time.Sleep(lostAfter / 5)
			}
			host.End(agent, turn, `{"n": 3}`, "")
			worked <- time.Since(start)
		}()
		return sessiontest.Answer{Hold: true}
	}, func(o *sessiontest.Owner) { host, ow = o.Host, o; o.NoteCloses = true }, private(lostAfter))
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["completed", 3, 4, 7]`, string(end.Result))
	assert.GreaterOrEqual(t, <-worked, 3*lostAfter)
	assert.Empty(t, enginetest.OfType(rows, journal.TypeAttemptLost), "a subagent at work is no lost attempt")
	assert.Len(t, enginetest.OfType(rows, journal.TypeThreadStarted), 3, "one subagent a call")
	assert.Equal(t, []string{"c1/t1-a1", "c2/t1-a1", "c3/t1-a1"}, sorted(o.Spawned))
	retry := false
	for _, r := range o.AllReplies() {
		if r.Marker == "c1/t1-a1" && r.Reply == bus.ReplyRetry {
			retry = true
			assert.Contains(t, r.Detail, "does not see the subagent on disk yet")
		}
		assert.NotEqual(t, bus.ReplyRefused, r.Reply, "%+v", r)
	}
	assert.True(t, retry, "the report of a subagent not yet on disk is told retry: %+v", o.AllReplies())
}

// TestSessionPrivateHostLosesAnAttemptThatStandsStill: on a private host only LostAfter
// decides: a subagent whose turn, thread and rollout stand still that long is a lost attempt
// (no_progress), and the next attempt answers.
func TestSessionPrivateHostLosesAnAttemptThatStandsStill(t *testing.T) {
	script := `
import { agent } from "crw:agent";
export default async function main() { return (await agent.call({ role: "explorer", prompt: "look" })).output; }
`
	var host *sessiontest.Host
	start := time.Now()
	end, rows, _, o, _ := sessionRunWith(t, script, func(st bus.StepFile) sessiontest.Answer {
		if st.Attempt == 1 {
			go func() {
				var agent string
				require.Eventually(t, func() bool { var ok bool; agent, _, ok = host.Find(st.Marker); return ok }, time.Minute, time.Millisecond)
				host.Progress(agent) // on disk, then nothing more
			}()
			return sessiontest.Answer{Hold: true}
		}
		return sessiontest.Answer{Text: `"second"`}
	}, func(o *sessiontest.Owner) { host = o.Host; o.NoteCloses = true }, private(300*time.Millisecond))
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `"\"second\""`, string(end.Result))
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	assert.Equal(t, []string{"c1/t1-a1", "c1/t1-a2"}, o.Spawned)
	lost := enginetest.OfType(rows, journal.TypeAttemptLost)
	require.Len(t, lost, 1)
	assert.Equal(t, "no_progress", lost[0].Reason)
	assert.Equal(t, "notLoaded", lost[0].HostStatus)
	assert.Equal(t, "interrupted", lost[0].TurnStatus)
}

// TestSessionPrivateHostTakesACloseStepBackWhenHandedOut: a private host cannot show a
// subagent closed, so a close step is taken back once crw flow next has handed it out (its
// note in the inbox); on a host that can, the note alone takes nothing back.
func TestSessionPrivateHostTakesACloseStepBackWhenHandedOut(t *testing.T) {
	script := `
import { agent } from "crw:agent";
export default async function main() {
  const a = await agent.call({ role: "explorer", prompt: "first" });
  const b = await agent.call({ role: "explorer", prompt: "second" });
  return [a.output, b.output];
}
`
	for _, c := range []struct {
		name    string
		config  func(*session.Config)
		pending int // c1's close steps left while c2 runs, its subagent still open
	}{{"private", private(time.Minute), 0}, {"owner's app server", nil, 1}} {
		t.Run(c.name, func(t *testing.T) {
			var runDir string
			var o *sessiontest.Owner
			pending := -1
			end, _, _, _, _ := sessionRunWith(t, script, func(st bus.StepFile) sessiontest.Answer {
				if st.Call == "c2" {
					if c.pending == 0 {
						assert.Eventually(t, func() bool { return len(closeSteps(t, runDir, "c1")) == 0 }, time.Minute, time.Millisecond)
					} else {
						time.Sleep(100 * time.Millisecond) // many polls of the run
					}
					pending = len(closeSteps(t, runDir, "c1"))
					o.KeepOpen = false // the owner gets to c1's subagent now
				}
				return sessiontest.Answer{Text: `"` + st.Call + `"`}
			}, func(owner *sessiontest.Owner) {
				o, runDir = owner, owner.Bus.Dir
				o.NoteCloses, o.KeepOpen = true, true
			}, c.config)
			require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
			assert.Equal(t, c.pending, pending, "c1's close steps while its subagent is open and its step was handed out")
		})
	}
}

// TestSessionPauseInterruptsTheBoundSubagent: a rate limit on one call pauses the run; the
// other call's bound subagent, still at work, has its turn interrupted on the host and read
// until it ended. Its interrupt_requested row names the step it is for (op and attempt), the
// call ends held, and its subagent gets a close step.
func TestSessionPauseInterruptsTheBoundSubagent(t *testing.T) {
	script := `
import { agent } from "crw:agent";
export default async function main() {
  const [a, b] = await Promise.all([
    agent.call({ role: "explorer", node: "a", prompt: "work long" }),
    agent.call({ role: "reviewer", node: "b", prompt: "hit the limit" }),
  ]);
  return [a.status, a.reason, b.status, b.reason];
}
`
	var host *sessiontest.Host
	var ow *sessiontest.Owner
	end, rows, _, _, _ := sessionRun(t, script, func(st bus.StepFile) sessiontest.Answer {
		if st.Call == "c1" {
			return sessiontest.Answer{Hold: true}
		}
		go func() { // c2 fails once the run has bound c1, so that the pause finds c1's turn running
			var agent, turn string
			assert.Eventually(t, func() bool {
				bound := false
				for _, r := range ow.AllReplies() {
					bound = bound || (r.Marker == "c1/t1-a1" && r.Reply == bus.ReplyBound)
				}
				var ok bool
				agent, turn, ok = host.Find(st.Marker)
				return bound && ok
			}, 20*time.Second, time.Millisecond, "c1 bound and c2 spawned")
			host.End(agent, turn, "", "usageLimitExceeded")
		}()
		return sessiontest.Answer{Hold: true}
	}, func(o *sessiontest.Owner) { host, ow = o.Host, o })
	require.Equal(t, store.RunPaused, end.Status, "%+v", end.Error)
	assert.Equal(t, 1, host.Interrupts, "c1's running turn was interrupted on the host")
	interrupts := enginetest.OfType(enginetest.CallRows(rows, "c1"), journal.TypeInterruptRequested)
	require.Len(t, interrupts, 1)
	assert.Equal(t, "c1/t1", interrupts[0].Op)
	assert.Equal(t, 1, interrupts[0].Attempt)
	c1 := enginetest.CallRows(rows, "c1")
	assert.Equal(t, journal.TypeHeld, c1[len(c1)-1].Type)
	agent, _, _ := host.Find("c1/t1-a1")
	assert.True(t, host.Closed(agent), "c1's subagent was closed by its close step")
}

// TestSessionResumeAfterAnInterruptClosesTheSubagent: the process dies right after it
// recorded the interrupt (a cancel) of a bound subagent's turn; the resumed process ends the
// call held for the recorded reason and gives its subagent a close step, so no subagent of the
// run is left open.
func TestSessionResumeAfterAnInterruptClosesTheSubagent(t *testing.T) {
	script := `
import { agent } from "crw:agent";
export default async function main() { return (await agent.call({ role: "explorer", prompt: "work long" })).status; }
`
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(script), 0o600))
	st, svc, id, host := freshRun(ctx, t, wf)
	runDir := filepath.Join(dir, "run")
	var o *sessiontest.Owner
	o = &sessiontest.Owner{Host: host, Bus: bus.Bus{Dir: runDir}, Run: id, Answer: func(st bus.StepFile) sessiontest.Answer {
		// cancelled once its subagent is at work on a turn the engine bound
		go afterBound(ctx, o, st.Marker, func() { _, _ = svc.Cancel(ctx, id, 0) })
		return sessiontest.Answer{Hold: true}
	}}
	ownerCtx, stopOwner := context.WithCancel(ctx)
	defer stopOwner()
	go o.Loop(ownerCtx)
	process, heldAtInterrupt := dyingAndResumed(ctx, svc, id, host, runDir)
	rows := diesAtTheInterrupt(ctx, t, st, svc, id, "cancelled", process)
	require.Equal(t, journal.TypeInterruptRequested, rows[len(rows)-1].Type)
	agent, _, _ := host.Find("c1/t1-a1")
	require.False(t, host.Closed(agent))
	steps, _, _ := o.Bus.Steps()
	require.Empty(t, steps, "the dead process left no close step")
	end, err := process(false)
	require.NoError(t, err)
	require.Equal(t, store.RunCancelled, end.Status, "%+v", end.Error)
	rows, err = svc.Rows(ctx, id)
	require.NoError(t, err)
	c1 := enginetest.CallRows(rows, "c1")
	assert.Equal(t, journal.TypeHeld, c1[len(c1)-1].Type)
	assert.Eventually(t, func() bool { o.Pass(); return host.Closed(agent) }, 20*time.Second, 5*time.Millisecond,
		"the subagent of the call the dead process interrupted gets a close step")
	// Seed 003: the resumed process interrupts the turn the dead one left running, and reads
	// it until it runs no more, before the call ends held.
	assert.Equal(t, []bool{false}, *heldAtInterrupt, "one interrupt, before the call's held row")
	th, err := host.ReadThread(ctx, agent)
	require.NoError(t, err)
	assert.Equal(t, "interrupted", th.Turns[0].Status)
}

// diesAtItsCrash is a backend whose process dies at its store's crash: it closes no subagent.
type diesAtItsCrash struct{ backend.Backend }

func (diesAtItsCrash) Done(backend.Call, backend.Thread) {}

// TestSessionRestartFindsAStepBySpawnCall: after a restart, a step the owner spawned while no
// process watched, whose subagent the host's listing does not show, is found by the owner's
// spawn call: the one the spawn hook's ledger names for its marker. A spawn the ledger does not
// name is bound too, with a session_host_warning (no_ledger_line); a ledger line whose call the
// owner's turns no longer show is window_ended.
func TestSessionRestartFindsAStepBySpawnCall(t *testing.T) {
	script := `
import { agent } from "crw:agent";
export default async function main() { return (await agent.call({ role: "explorer", prompt: "look" })).output; }
`
	for _, c := range []struct {
		name     string
		ledger   func(call string) []session.LedgerLine
		warnings []string
		binds    bool
	}{
		{"the ledger names the call", func(call string) []session.LedgerLine { return []session.LedgerLine{{Op: "c1/t1-a1", ToolUseID: call}} }, nil, true},
		{"no ledger line", func(string) []session.LedgerLine { return nil }, []string{"no_ledger_line"}, true},
		{"a call the turns no longer show", func(string) []session.LedgerLine {
			return []session.LedgerLine{{Op: "c1/t1-a1", ToolUseID: "call-gone"}}
		}, []string{"no_ledger_line", "window_ended"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dir := t.TempDir()
			wf := filepath.Join(dir, "wf.js")
			require.NoError(t, os.WriteFile(wf, []byte(script), 0o600))
			st, svc, id, host := freshRun(ctx, t, wf)
			runDir := filepath.Join(dir, "run")
			rows := &flowRows{}
			st.CrashAfterRow(id, func(r *journal.Row) bool { return r.Type == journal.TypeStepPublished })
			b := session.New(session.Config{Run: id, Owner: owner, Host: host, Dir: runDir, Poll: 2 * time.Millisecond, LookupEvery: 2})
			_, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: diesAtItsCrash{b}})
			b.Close()
			require.Error(t, err)
			recorded, err := svc.Rows(ctx, id)
			require.NoError(t, err)
			require.Equal(t, journal.TypeStepPublished, recorded[len(recorded)-1].Type)
			// While no process watches, the owner spawns the step (its message as the row
			// records it: the dead process wrote no step file); the listing misses it.
			step := recorded[len(recorded)-1]
			var message string
			require.NoError(t, json.Unmarshal(step.Input, &message))
			agent, turn := host.Spawn(owner, step.AgentType, "host-model", "medium", message)
			host.Unlist(agent)
			host.End(agent, turn, `"found"`, "")
			spawns, _ := host.OwnerSpawns(ctx, owner)
			ledger := c.ledger(spawns[0].CallID)
			b = session.New(session.Config{Run: id, Owner: owner, Host: host, Dir: runDir, Poll: 2 * time.Millisecond, LookupEvery: 2,
				Report: rows.add, Ledger: func(string) ([]session.LedgerLine, error) { return ledger, nil }})
			end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: b})
			b.Close()
			require.NoError(t, err)
			require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
			all, err := svc.Rows(ctx, id)
			require.NoError(t, err)
			threads := enginetest.OfType(all, journal.TypeThreadStarted)
			require.Len(t, threads, 1)
			assert.Equal(t, agent, threads[0].ThreadID, "bound to the subagent the spawn call made")
			var warnings []journal.Row
			for _, r := range rows.all() {
				if r.Type == journal.TypeSessionHostWarning {
					warnings = append(warnings, r)
				}
			}
			if c.warnings == nil {
				assert.Empty(t, warnings)
			} else {
				require.Len(t, warnings, 1)
				assert.Equal(t, c.warnings, warnings[0].Warnings)
				assert.Equal(t, "c1/t1", warnings[0].Op)
			}
		})
	}
}

// freshRun is a new run of the workflow wf in a store of its own, and a host for its owner.
func freshRun(ctx context.Context, t *testing.T, wf string) (*mem.Store, *engine.Service, string, *sessiontest.Host) {
	t.Helper()
	st := mem.New()
	svc := enginetest.Service(st)
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	return st, svc, id, sessiontest.NewHost(owner)
}

// TestSessionCloseRepliesSayWhichCaseItIs: a report whose marker no step waits under is
// answered close, and its detail says whether the marker's attempt ended or no step was ever
// published under it.
func TestSessionCloseRepliesSayWhichCaseItIs(t *testing.T) {
	script := `
import { agent } from "crw:agent";
export default async function main() {
  const a = await agent.call({ role: "reviewer", prompt: "first" });
  const b = await agent.call({ role: "reviewer", prompt: "second" });
  return [a.status, b.status];
}
`
	var o *sessiontest.Owner
	details := map[string]string{}
	asked := make(chan struct{})
	ask := func(r bus.Report) { details[r.Marker()] = closeReply(t, o, r) }
	// c1's Done waits for the late reports: they come while c1's binding is kept, as they may
	// when the script's next call is published before the call's end is let go.
	wrap := func(b *session.Backend) backend.Backend {
		return doneAfter{Backend: b, call: "c1", after: asked}
	}
	end, _, _, _, _ := sessionRunWrapped(t, script, func(st bus.StepFile) sessiontest.Answer {
		if st.Call == "c2" && st.K == 1 {
			// c1's attempt ended; c2 has no second attempt.
			ask(bus.Report{Run: o.Run, Call: "c1", Agent: "late-agent", K: 1, Attempt: 1})
			ask(bus.Report{Run: o.Run, Call: "c2", Agent: "early-agent", K: 1, Attempt: 2})
			close(asked)
		}
		return sessiontest.Answer{Text: "ok"}
	}, func(owner *sessiontest.Owner) { o = owner }, nil, nil, wrap)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.Equal(t, "the attempt of this marker ended (it was answered, or lost and spawned again): close the subagent", details["c1/t1-a1"])
	assert.Equal(t, "the run never published a step under this marker (a report before its step, or a marker of no step): close the subagent", details["c2/t1-a2"])
}

// closeReply dispatches the owner's report r and returns the detail of the run's reply, which
// must be a close.
func closeReply(t *testing.T, o *sessiontest.Owner, r bus.Report) string {
	sent, err := o.Bus.Dispatch(r)
	require.NoError(t, err)
	for {
		if reply, ok, _ := o.Bus.ReplyTo(sent.ID); ok {
			require.Equal(t, bus.ReplyClose, reply.Reply, "%+v", reply)
			return reply.Detail
		}
		time.Sleep(5 * time.Millisecond) // the run answers at its next poll
	}
}

// doneAfter is the session backend with one call's Done held until after is closed.
type doneAfter struct {
	*session.Backend
	call  string
	after chan struct{}
}

func (d doneAfter) Done(call backend.Call, th backend.Thread) {
	if call.ID == d.call {
		<-d.after
	}
	d.Backend.Done(call, th)
}

// TestSessionRecoveredRepairCountsTheTaskTurnFromItsStep: seed 003, a process loses its run
// once it has published the repair's send_input step, and the task turn's rollout is gone
// (here: emptied) before the next process reads it. That process takes the task turn's tokens
// from the step's call_tokens, as the dead process counted them, rather than leaving the turn
// unmeasured: the call's terminal row and the run's figure carry both turns, once.
func TestSessionRecoveredRepairCountsTheTaskTurnFromItsStep(t *testing.T) {
	script := `
import { agent } from "crw:agent";
const schema = { type: "object", additionalProperties: false, required: ["n"], properties: { n: { type: "integer" } } };
export default async function main() {
  const r = await agent.call({ role: "critic", prompt: "count", schema });
  return [r.status, r.output.n];
}
`
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(script), 0o600))
	st, svc, id, host := freshRun(ctx, t, wf)
	host.RolloutDir = t.TempDir()
	revoked := false
	answer := func(sf bus.StepFile) sessiontest.Answer {
		if sf.K == 1 {
			return sessiontest.Answer{Text: "about five"} // input 10, output 10
		}
		if !revoked {
			// The repair's step is published: the task turn's rollout goes, and so does the
			// process's hold on the run, before the repair's turn ends.
			revoked = true
			entries, err := os.ReadDir(host.RolloutDir)
			assert.NoError(t, err)
			for _, e := range entries {
				assert.NoError(t, os.Truncate(filepath.Join(host.RolloutDir, e.Name()), 0))
			}
			st.Revoke(id)
		}
		return sessiontest.Answer{Text: `{"n": 5}`} // input 10, output 8
	}
	runDir := filepath.Join(dir, "run")
	o := &sessiontest.Owner{Host: host, Bus: bus.Bus{Dir: runDir}, Run: id, Answer: answer}
	go o.Loop(ctx)
	process := func() (*store.Status, error) {
		b := session.New(session.Config{Run: id, Owner: owner, Host: host, Dir: runDir, Poll: 5 * time.Millisecond, LookupEvery: 4})
		defer b.Close()
		return svc.Execute(ctx, id, engine.ExecOptions{Backend: b})
	}
	_, err := process()
	require.ErrorIs(t, err, store.ErrLeaseLost)
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	require.Empty(t, enginetest.Terminals(rows), "the call ended before its process lost the run")
	steps := enginetest.OfType(rows, journal.TypeStepPublished)
	require.Len(t, steps, 2)
	require.NotNil(t, steps[1].CallTokens)
	assert.Equal(t, journal.Tokens{Input: 10, Output: 10, Total: 20}, *steps[1].CallTokens, "the repair's step records the task turn's tokens")

	end, err := process()
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status)
	rows, err = svc.Rows(ctx, id)
	require.NoError(t, err)
	c1 := enginetest.Terminal(t, rows, "c1")
	require.NotNil(t, c1.Tokens, "the call counted nothing")
	assert.Equal(t, journal.Tokens{Input: 20, Output: 18, Total: 38}, *c1.Tokens, "the task turn (10+10) and the repair (10+8)")
	assert.Zero(t, countWarnings(rows, "tokens_unmeasured"), "a turn was left unmeasured")
	assert.Equal(t, journal.Tokens{Input: 20, Output: 18, Total: 38}, end.Tokens, "the run's figure counts both turns once")
}

// countWarnings counts the warning rows of a reason.
func countWarnings(rows []journal.Row, reason string) int {
	n := 0
	for _, r := range enginetest.OfType(rows, journal.TypeWarning) {
		if r.Reason == reason {
			n++
		}
	}
	return n
}

// TestSessionTraceIsolationJudgesTheOwnersCheckoutAndBindings: seed 003, with trace isolation a
// session run's outside checkout is the owner's working directory's checkout when it is a git
// checkout other than P, and its shared state includes the owner bindings of the flow-bound
// folder; an owner working from no checkout leaves the run's repository as the outside one.
func TestSessionTraceIsolationJudgesTheOwnersCheckoutAndBindings(t *testing.T) {
	script := `
import { agent } from "crw:agent";
export default async function main() {
  return (await agent.call({ role: "executor", node: "build", prompt: "build" })).status;
}
`
	for _, ownerInCheckout := range []bool{true, false} {
		ownerDir := enginetest.GitRepo(t, map[string]string{"OWNER.md": "the owner's own checkout\n"})
		if !ownerInCheckout {
			ownerDir = t.TempDir()
		}
		bindings := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(bindings, "019b0000-0000-7000-8000-0000000000ff.jsonl"), []byte("{}\n"), 0o600))
		var runRepo string
		answer := func(st bus.StepFile) sessiontest.Answer {
			// While the executor works: the owner's folder changes, the run's repository's
			// checkout changes, and another owner's binding gets a line.
			assert.NoError(t, os.WriteFile(filepath.Join(ownerDir, "OWNER.md"), []byte("changed by the subagent\n"), 0o644))
			assert.NoError(t, os.WriteFile(filepath.Join(runRepo, "README.md"), []byte("changed too\n"), 0o644))
			f, err := os.OpenFile(filepath.Join(bindings, "019b0000-0000-7000-8000-0000000000ff.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
			if assert.NoError(t, err) {
				_, _ = f.WriteString("{}\n")
				f.Close()
			}
			return sessiontest.Answer{Text: "built"}
		}
		end, rows, _, _, _ := sessionRunCreated(t, script, answer,
			func(o *sessiontest.Owner) { o.Host.OwnerCwd = filepath.Join(ownerDir) },
			func(c *session.Config) { c.Bindings = bindings },
			func(co *engine.CreateOptions) { co.TraceIsolation = true; runRepo = co.Repo })
		require.Equal(t, store.RunCompleted, end.Status)
		got := map[string]string{}
		for _, w := range enginetest.OfType(rows, journal.TypeWarning) {
			got[w.Reason] = w.Detail
		}
		outside := runRepo
		if ownerInCheckout {
			outside = ownerDir
		}
		assert.Contains(t, got["executor_wrote_outside"], "the checkout "+outside+" changed while the executor worked in ", "owner in a checkout: %t", ownerInCheckout)
		assert.Contains(t, got, "shared_state_changed", "owner in a checkout: %t", ownerInCheckout)
	}
}

// TestSessionInterruptBindsATakenStepFirst: seed 003, a cancel while the repair's send_input
// step waits for its report, its subagent already at work on it: the step's turn is bound
// (turn_started) and interrupted on the host, not left running while the step is retracted.
func TestSessionInterruptBindsATakenStepFirst(t *testing.T) {
	script := `
import { agent } from "crw:agent";
const schema = { type: "object", additionalProperties: false, required: ["n"], properties: { n: { type: "integer" } } };
export default async function main() {
  const r = await agent.call({ role: "critic", prompt: "count", schema });
  return [r.status, r.reason];
}
`
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(script), 0o600))
	_, svc, id, host := freshRun(ctx, t, wf)
	runDir := filepath.Join(dir, "run")
	o := &sessiontest.Owner{Host: host, Bus: bus.Bus{Dir: runDir}, Run: id, Answer: func(st bus.StepFile) sessiontest.Answer {
		if st.K == 1 {
			return sessiontest.Answer{Text: "about five"}
		}
		go func() { // cancelled once the repair runs on the subagent, unreported
			for {
				if th, err := host.ReadThread(ctx, st.AgentID); err == nil && len(th.Turns) == 2 || ctx.Err() != nil {
					break
				}
				time.Sleep(time.Millisecond)
			}
			_, _ = svc.Cancel(ctx, id, 0)
		}()
		return sessiontest.Answer{Hold: true, Unreported: true}
	}}
	go o.Loop(ctx)
	// No marker lookup while the step waits: the repair's turn is found by the interrupt alone.
	b := session.New(session.Config{Run: id, Owner: owner, Host: host, Dir: runDir, Poll: 5 * time.Millisecond, LookupEvery: 1 << 20})
	defer b.Close()
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: b})
	require.NoError(t, err)
	require.Equal(t, store.RunCancelled, end.Status)
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	c1 := enginetest.CallRows(rows, "c1")
	var repair *journal.Row
	for i := range c1 {
		if c1[i].Type == journal.TypeTurnStarted && c1[i].K == 2 {
			repair = &c1[i]
		}
	}
	require.NotNil(t, repair, "the repair's turn was bound before the call ended")
	agent, turn, _ := host.Find("c1/t1-a1") // the subagent of the task, its last turn the repair's
	assert.Equal(t, turn, repair.TurnID)
	term := c1[len(c1)-1]
	assert.Equal(t, journal.TypeHeld, term.Type)
	assert.Equal(t, "cancelled", term.Reason)
	assert.Contains(t, term.TurnIDs, turn)
	th, err := host.ReadThread(ctx, agent)
	require.NoError(t, err)
	assert.Equal(t, "interrupted", th.Turns[len(th.Turns)-1].Status, "the repair's turn does not run on")
}

// interruptWatch is a host that runs before at each turn/interrupt it is asked for, or, with
// drop, passes none on.
type interruptWatch struct {
	*sessiontest.Host
	before func()
	drop   bool
}

func (w *interruptWatch) InterruptTurn(ctx context.Context, thread, turn string) error {
	if w.drop {
		return nil
	}
	w.before()
	return w.Host.InterruptTurn(ctx, thread, turn)
}

// dyingAndResumed gives a run's processes: one that dies (its store set to crash it) having
// interrupted nothing and closed nothing, and the ones after it, which record in held, at
// each turn/interrupt they ask the host for, whether the journal held c1's held row by then.
func dyingAndResumed(ctx context.Context, svc *engine.Service, id string, host *sessiontest.Host, runDir string) (process func(dies bool) (*store.Status, error), held *[]bool) {
	held = new([]bool)
	watched := &interruptWatch{Host: host, before: func() {
		rows, _ := svc.Rows(context.Background(), id)
		c1Held := false
		for _, r := range enginetest.CallRows(rows, "c1") {
			c1Held = c1Held || r.Type == journal.TypeHeld
		}
		*held = append(*held, c1Held)
	}}
	return func(dies bool) (*store.Status, error) {
		cfg := session.Config{Run: id, Owner: owner, Host: watched, Dir: runDir, Poll: 5 * time.Millisecond, LookupEvery: 4}
		if dies {
			// Killed at its commit, it interrupts nothing (and does not wait for the turn).
			cfg.Host, cfg.InterruptWait = &interruptWatch{Host: host, drop: true}, time.Millisecond
		}
		var b backend.Backend = session.New(cfg)
		defer b.Close()
		if dies {
			b = diesAtItsCrash{b} // a process killed at its crash does nothing more
		}
		return svc.Execute(ctx, id, engine.ExecOptions{Backend: b})
	}, held
}

// diesAtTheInterrupt runs the process that dies right after the commit of c1's
// interrupt_requested row (for reason), whatever the order the owner's replies and the calls'
// ends came in, and gives the rows it left.
func diesAtTheInterrupt(ctx context.Context, t *testing.T, st *mem.Store, svc *engine.Service, id, reason string, process func(dies bool) (*store.Status, error)) []journal.Row {
	t.Helper()
	st.CrashAfterRow(id, func(r *journal.Row) bool {
		return r.Call == "c1" && r.Type == journal.TypeInterruptRequested && r.Reason == reason
	})
	_, err := process(true)
	require.Error(t, err, "the process never wrote c1's interrupt_requested row")
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	c1 := enginetest.CallRows(rows, "c1")
	require.NotEmpty(t, c1)
	require.Equal(t, journal.TypeInterruptRequested, c1[len(c1)-1].Type)
	return rows
}

// afterBound runs then once the owner replied bound to marker: once the engine bound its turn.
func afterBound(ctx context.Context, o *sessiontest.Owner, marker string, then func()) {
	for ctx.Err() == nil {
		for _, r := range o.AllReplies() {
			if r.Marker == marker && r.Reply == bus.ReplyBound {
				then()
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSessionResumeAfterAPauseInterruptStopsTheTurnFirst: seed 003, the process dies right
// after it recorded the pause's interrupt of c1's bound turn, before it reached the host; the
// resumed process, making c1 again, interrupts that turn on the host and reads it until it runs
// no more before it ends the call held.
func TestSessionResumeAfterAPauseInterruptStopsTheTurnFirst(t *testing.T) {
	script := `
import { agent } from "crw:agent";
export default async function main() {
  const [a, b] = await Promise.all([
    agent.call({ role: "explorer", node: "a", prompt: "work long" }),
    agent.call({ role: "reviewer", node: "b", prompt: "hit the limit" }),
  ]);
  return [a.status, b.status];
}
`
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(script), 0o600))
	st, svc, id, host := freshRun(ctx, t, wf)
	runDir := filepath.Join(dir, "run")
	o := &sessiontest.Owner{Host: host, Bus: bus.Bus{Dir: runDir}, Run: id}
	o.Answer = func(sf bus.StepFile) sessiontest.Answer {
		if sf.Call == "c2" {
			// c2 fails once both are bound, so that the pause finds c1's turn running
			go afterBound(ctx, o, "c1/t1-a1", func() {
				afterBound(ctx, o, sf.Marker, func() {
					agent, turn, _ := host.Find(sf.Marker)
					host.End(agent, turn, "", "usageLimitExceeded")
				})
			})
		}
		return sessiontest.Answer{Hold: true}
	}
	ownerCtx, stopOwner := context.WithCancel(ctx)
	go o.Loop(ownerCtx)
	process, heldAtInterrupt := dyingAndResumed(ctx, svc, id, host, runDir)
	diesAtTheInterrupt(ctx, t, st, svc, id, "engine_paused", process)
	agent, _, _ := host.Find("c1/t1-a1")
	_, err := process(false)
	require.NoError(t, err)
	stopOwner()
	require.NotEmpty(t, *heldAtInterrupt, "the resumed process interrupted nothing")
	assert.False(t, (*heldAtInterrupt)[0], "the turn was interrupted before the call's held row")
	th, err := host.ReadThread(ctx, agent)
	require.NoError(t, err)
	assert.Equal(t, "interrupted", th.Turns[0].Status)
}

// TestSessionContinuationCarriesEachConversationTurn: seed 003, a continuation's packet carries
// the conversation turn by turn, as the turn_started rows give it: the task and its answer, the
// repair and its answer, each once, the task run again on a new subagent (its first attempt
// lost) in place of the one it replaces.
func TestSessionContinuationCarriesEachConversationTurn(t *testing.T) {
	answer := func(st bus.StepFile) sessiontest.Answer {
		switch {
		case st.Call == "c1" && st.Attempt == 1:
			return sessiontest.Answer{Lose: true}
		case st.Call == "c1" && st.K == 1:
			return sessiontest.Answer{Text: "about three"}
		}
		return sessiontest.Answer{Text: `{"n": 3}`}
	}
	end, rows, _, _, runDir := sessionRun(t, continuation, answer, nil)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	var step journal.Row
	for _, r := range enginetest.CallRows(rows, "c2") {
		if r.Type == journal.TypeStepPublished {
			step = r
		}
	}
	packet, err := os.ReadFile(step.Packet)
	require.NoError(t, err)
	assert.Contains(t, string(packet), "## Conversation so far\n\nYou continue this conversation: the earlier turns and their answers, oldest first. Build on them; do not redo them.\n\n"+
		"### c1, turn 1: task\n\ncount the files\n\n"+
		"### c1, turn 1: answer\n\nabout three\n\n"+
		"### c1, turn 2: repair\n\n"+turns.RepairPrompt("no JSON document")+"\n\n"+
		"### c1, turn 2: answer (completed)\n\n{\"n\":3}\n\n"+
		"## The call you continue\n\nYou go on from call c1: its task packet is "+filepath.Join(runDir, "steps", "c1", "packet-t2-a2.md")+
		", and its answer is in "+filepath.Join(runDir, "steps", "c2", "continues-c1-answer.md")+".\n\n")
}

// TestSessionHeldInItsRepairGoesOnWithThatRepair: seed 003, a call a pause holds in its repair
// turn goes on, in the resume, with that repair: its next generation's prepared row says so,
// its one step is the repair on a new subagent whose packet names the task once, the answer
// repaired, the instruction and why the earlier attempt stopped; no task turn is sent again and
// the call has no second repair.
func TestSessionHeldInItsRepairGoesOnWithThatRepair(t *testing.T) {
	script := `
import { agent } from "crw:agent";
const schema = { type: "object", additionalProperties: false, required: ["n"], properties: { n: { type: "integer" } } };
export default async function main() {
  const [a, b] = await Promise.all([
    agent.call({ role: "critic", node: "a", prompt: "count", schema }),
    agent.call({ role: "reviewer", node: "b", prompt: "hit the limit", schema }),
  ]);
  return [a.status, a.output && a.output.n, b.status];
}
`
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(script), 0o600))
	_, svc, id, host := freshRun(ctx, t, wf)
	runDir := filepath.Join(dir, "run")
	var packets []bus.StepFile
	o := &sessiontest.Owner{Host: host, Bus: bus.Bus{Dir: runDir}, Run: id}
	o.Answer = func(sf bus.StepFile) sessiontest.Answer {
		if sf.Call == "c1" {
			packets = append(packets, sf)
		}
		switch {
		case sf.Call == "c1" && sf.K == 1:
			return sessiontest.Answer{Text: "about five"}
		case sf.Call == "c1" && sf.Attempt == 1:
			return sessiontest.Answer{Hold: true} // the repair runs when the pause comes
		case sf.Call == "c1":
			return sessiontest.Answer{Text: `{"n": 5}`}
		case sf.Attempt == 1:
			go func() { // c2 fails once c1's repair is bound
				for ctx.Err() == nil {
					bound := false
					for _, r := range o.AllReplies() {
						bound = bound || r.Marker == "c1/t2-a1" && r.Reply == bus.ReplyBound
					}
					if agent, turn, ok := host.Find(sf.Marker); bound && ok {
						host.End(agent, turn, "", "usageLimitExceeded")
						return
					}
					time.Sleep(time.Millisecond)
				}
			}()
			return sessiontest.Answer{Hold: true}
		}
		return sessiontest.Answer{Text: `{"n": 1}`}
	}
	go o.Loop(ctx)
	process := func() *store.Status {
		b := session.New(session.Config{Run: id, Owner: owner, Host: host, Dir: runDir, Poll: 5 * time.Millisecond, LookupEvery: 4})
		defer b.Close()
		end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: b})
		require.NoError(t, err)
		return end
	}
	require.Equal(t, store.RunPaused, process().Status)
	end := process()
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	assert.JSONEq(t, `["completed", 5, "completed"]`, string(end.Result))

	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	c1 := enginetest.CallRows(rows, "c1")
	prepared := enginetest.OfType(c1, journal.TypePrepared)
	require.Len(t, prepared, 2)
	assert.Equal(t, 2, prepared[1].K, "the next generation goes on with the repair")
	assert.Equal(t, "about five", prepared[1].PreviousAnswer)
	assert.Equal(t, "Generation 1 of this call stopped in its repair turn: it was held (engine_paused). This one takes that turn again.", prepared[1].Note)
	var after []journal.Row // the second generation's rows
	for _, r := range c1 {
		if r.Seq > prepared[1].Seq {
			after = append(after, r)
		}
	}
	steps := enginetest.OfType(after, journal.TypeStepPublished)
	require.Len(t, steps, 1, "one step: the repair, and no task turn again")
	assert.Equal(t, 2, steps[0].K)
	assert.Equal(t, bus.ActionSpawn, steps[0].Action)
	packet, err := os.ReadFile(steps[0].Packet)
	require.NoError(t, err)
	assert.Contains(t, string(packet), "## Earlier attempts\n\nGeneration 1 of this call stopped in its repair turn: it was held (engine_paused). This one takes that turn again.\n\n")
	assert.Contains(t, string(packet), "## Task\n\ncount\n\n### The answer to repair\n\nabout five\n\n### What to do\n\n"+turns.RepairPrompt("no JSON document")+"\n\n")
	term := after[len(after)-1]
	assert.Equal(t, journal.TypeCompleted, term.Type)
	assert.True(t, term.RepairUsed)
	assert.Equal(t, 3, len(packets), "c1's steps: the task, the held repair, the repair again")
}
