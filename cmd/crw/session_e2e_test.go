package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/backend/session/codexhost"
	"github.com/crw-dev/crw/engine/backend/session/host"
	"github.com/crw-dev/crw/engine/backend/session/nextview"
	"github.com/crw-dev/crw/internal/mockmodel"
	"github.com/crw-dev/crw/journal"
)

// The roles of the owner's Codex: each pins its pair, and the run's role table decides the same.
var (
	reviewerRole = mockmodel.Role{Name: "reviewer", Description: "Reviews and answers with JSON.", Model: "mock-reviewer-model", Effort: "high"}
	explorerRole = mockmodel.Role{Name: "explorer", Description: "Explores and answers with JSON.", Model: "mock-explorer-model", Effort: "low"}
)

const sessionRoles = `{"roles": {"reviewer": {"model": "mock-reviewer-model", "effort": "high"}, "explorer": {"model": "mock-explorer-model", "effort": "low"}}}`

// ownerRig is a user's Codex session (the real codex app-server, its model a scripted mock)
// that owns session runs: it starts them, and makes the host calls crw flow next hands out in
// turns of its owner thread.
type ownerRig struct {
	t                 *testing.T
	ctx               context.Context
	mock              *mockmodel.Server
	dir, state, sock  string
	env               []string
	owner             *codex.Client
	ownerID           string
	host              host.Host
	script            []mockmodel.OwnerStep // the owner's tool calls so far, across its turns
	reported          map[string]bool       // agents reported with crw flow dispatched
	late              map[string]string     // marker → the agent a report named after its attempt ended
	spawns            map[string]int        // spawn_agent calls by marker
	ownerTurns        int
	answersFile, work string
	codex             string
	// private starts runs without --host: the run reads the owner's subagents through a
	// private app server of its own on the same CODEX_HOME.
	private bool
	// noWakes starts runs that never wake the owner. Without it the runs wake an owner that does
	// not watch them, and the rig, which reads crw flow next as it drives the owner's turns, is
	// one that watches: it is never woken.
	noWakes bool
}

func newOwnerRig(t *testing.T, answers string) *ownerRig { return newOwnerRigWith(t, answers, nil) }

// newOwnerRigWith is newOwnerRig with prepare run on the owner's CODEX_HOME before its app
// server starts (the rig's folder and the CODEX_HOME).
func newOwnerRigWith(t *testing.T, answers string, prepare func(dir, home string)) *ownerRig {
	codexBin := mockmodel.Codex(t)
	parsed, err := fake.ParseAnswers("answers.json", []byte(answers))
	require.NoError(t, err)
	mock := mockmodel.New(parsed)
	t.Cleanup(mock.Close)
	dir := t.TempDir()
	r := &ownerRig{t: t, mock: mock, dir: dir, state: filepath.Join(dir, "state"), sock: filepath.Join(dir, "app.sock"),
		work: filepath.Join(dir, "work"), reported: map[string]bool{}, late: map[string]string{}, spawns: map[string]int{}, codex: codexBin}
	home := filepath.Join(dir, "home")
	require.NoError(t, os.Mkdir(r.work, 0o755))
	require.NoError(t, mock.WriteCodexHome(home, reviewerRole, explorerRole))
	mockmodel.WriteCatalog(t, codexBin, home, reviewerRole.Model, explorerRole.Model)
	if prepare != nil {
		prepare(dir, home)
	}
	mockmodel.StartOwnerServer(t, codexBin, home, r.sock)
	r.env = []string{"CODEX_HOME=" + home}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	r.ctx = ctx
	owner, closeOwner, err := codexhost.Client(ctx, "unix://"+r.sock, "owner")
	require.NoError(t, err)
	t.Cleanup(closeOwner)
	th, err := owner.StartThread(ctx, codex.ThreadParams{Cwd: r.work, ApprovalPolicy: "never", Sandbox: "read-only"})
	require.NoError(t, err)
	r.owner, r.ownerID = owner, th.Thread.ID
	host, err := codexhost.Dial(ctx, "unix://"+r.sock)
	require.NoError(t, err)
	t.Cleanup(func() { host.Close() })
	r.host = host
	r.answersFile = filepath.Join(dir, "answers.json")
	require.NoError(t, os.WriteFile(r.answersFile, []byte(answers), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "roles.json"), []byte(sessionRoles), 0o600))
	return r
}

func (r *ownerRig) crw(args ...string) durableRun {
	r.t.Helper()
	return durableCrw(r.t, r.state, r.env, args...)
}

// start starts a session run of the workflow; it returns the run and its process's pid.
func (r *ownerRig) start(workflow string, flags ...string) (run string, pid int) {
	r.t.Helper()
	wf := filepath.Join(r.dir, "workflow.js")
	require.NoError(r.t, os.WriteFile(wf, []byte(workflow), 0o600))
	host := []string{"--host", "unix://" + r.sock}
	if r.private {
		host = []string{"--codex", r.codex}
	}
	if r.noWakes {
		flags = append([]string{"--wake", "off"}, flags...)
	}
	args := append(append([]string{"--json", "flow", "start", wf, "--backend", "session", "--owner", r.ownerID}, host...),
		append([]string{"--roles", filepath.Join(r.dir, "roles.json"), "--poll", "50ms"}, flags...)...)
	res := r.crw(args...)
	require.Equal(r.t, 0, res.exit, "%s%s", res.stdout, res.stderr)
	var started struct {
		Run string
		PID int
	}
	require.NoError(r.t, json.Unmarshal([]byte(res.stdout), &started))
	return started.Run, started.PID
}

func (r *ownerRig) next(run string) nextview.NextView {
	r.t.Helper()
	res := r.crw("--json", "flow", "next", run, "--wait", "10s")
	require.Equal(r.t, 0, res.exit, "%s%s", res.stdout, res.stderr)
	var v nextview.NextView
	require.NoError(r.t, json.Unmarshal([]byte(res.stdout), &v), res.stdout)
	return v
}

// turn runs one turn of the owner thread that makes these tool calls.
func (r *ownerRig) turn(calls ...mockmodel.OwnerStep) {
	r.t.Helper()
	for _, c := range calls {
		if c.Tool == "spawn_agent" {
			r.spawns[bus.MarkerOf(c.Args["message"].(string))]++
		}
	}
	r.script = append(r.script, calls...)
	r.ownerTurns++
	r.mock.Own(r.ownerID, append(append([]mockmodel.OwnerStep(nil), r.script...), mockmodel.OwnerStep{Text: "Done with these steps."})...)
	turnID, err := r.owner.StartTurn(r.ctx, r.ownerID, "Take the run's steps.", nil)
	require.NoError(r.t, err)
	res, err := r.owner.WaitTurn(r.ctx, turnID)
	require.NoError(r.t, err)
	require.Equal(r.t, codex.TurnCompleted, res.Turn.Status, "%+v", res.Turn.Error)
}

// agentFor is the newest subagent of the owner that carries marker and was not reported yet.
func (r *ownerRig) agentFor(marker string) string {
	r.t.Helper()
	// The host lists a spawned subagent with its first message once it has written its
	// rollout, which may come after the owner's spawn returned: the listing is read again
	// until it shows the subagent (a safeguard ends a wait that never would).
	for safeguard := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		subs, err := r.host.Subagents(r.ctx)
		require.NoError(r.t, err)
		agent := ""
		for _, s := range subs {
			if bus.MarkerOf(s.Preview) == marker && !r.reported[s.ID] {
				agent = s.ID
			}
		}
		if agent != "" {
			return agent
		}
		if time.Now().After(safeguard) {
			reqs := r.mock.Requests()
			r.t.Fatalf("no unreported subagent carries %s; the owner's tool outputs: %v", marker, reqs[len(reqs)-1].Outputs)
		}
	}
}

// dispatched reports a step's subagent as the hint says and returns the run's reply.
func (r *ownerRig) dispatched(run string, st nextview.NextStep, agent string) bus.Reply {
	r.t.Helper()
	r.reported[agent] = true
	res := r.crw("--json", "flow", "dispatched", run, st.Call, "--agent", agent,
		"--k", strconv.Itoa(st.K), "--attempt", strconv.Itoa(st.Attempt), "--wait", "30s")
	var reply bus.Reply
	require.NoError(r.t, json.Unmarshal([]byte(res.stdout), &reply), res.stdout+res.stderr)
	if reply.Reply == bus.ReplyBound {
		assert.Equal(r.t, 0, res.exit)
	} else {
		assert.Equal(r.t, 1, res.exit, "%+v", reply)
	}
	return reply
}

// bound reports a step's subagent, which the run must take: bound, or close when the run
// found it by its marker first and its attempt ended before the report came (checkOnce then
// finds the marker bound to it in the journal).
func (r *ownerRig) bound(run string, st nextview.NextStep, agent string) {
	r.t.Helper()
	reply := r.dispatched(run, st, agent)
	if reply.Reply == bus.ReplyClose && strings.Contains(reply.Detail, "ended") {
		r.late[st.Marker] = agent
		return
	}
	require.Equal(r.t, bus.ReplyBound, reply.Reply, "%s: %+v", st.Marker, reply)
}

// rows is the run's journal, as crw flow trace prints it.
func (r *ownerRig) rows(run string) []journal.Row {
	r.t.Helper()
	trace := r.crw("flow", "trace", run)
	require.Equal(r.t, 0, trace.exit, trace.stderr)
	var rows []journal.Row
	for _, line := range strings.Split(strings.TrimSpace(trace.stdout), "\n") {
		var row journal.Row
		require.NoError(r.t, json.Unmarshal([]byte(line), &row), line)
		rows = append(rows, row)
	}
	return rows
}

// checkOnce asserts what every session run's journal and host must show: each step published
// once, one thread_started per attempt, bound to a subagent of the owner that was spawned once
// for its marker.
func (r *ownerRig) checkOnce(rows []journal.Row) {
	r.t.Helper()
	published, bound, agents := map[string]bool{}, map[string]bool{}, map[string]string{}
	for _, row := range rows {
		switch row.Type {
		case journal.TypeTurnStarted:
			if row.Marker != "" && agents[row.Marker] == "" {
				agents[row.Marker] = agents[row.Call]
			}
		case journal.TypeStepPublished:
			assert.False(r.t, published[row.Marker], "step %s published twice", row.Marker)
			published[row.Marker] = true
		case journal.TypeThreadStarted:
			assert.False(r.t, bound[row.Marker], "attempt %s bound twice", row.Marker)
			bound[row.Marker] = true
			agents[row.Call], agents[row.Marker] = row.ThreadID, row.ThreadID
			assert.Equal(r.t, "session", row.Via)
			assert.Equal(r.t, r.ownerID, row.ParentThreadID)
			assert.Equal(r.t, r.work, row.HostCwd)
		}
	}
	for marker, agent := range r.late {
		assert.Equal(r.t, agent, agents[marker], "the late report of %s named the subagent bound to it", marker)
	}
	subs, err := r.host.Subagents(r.ctx)
	require.NoError(r.t, err)
	carriers := map[string]int{}
	for _, s := range subs {
		carriers[bus.MarkerOf(s.Preview)]++
	}
	for marker := range bound {
		assert.Equal(r.t, r.spawns[marker], carriers[marker], "subagents that carry %s", marker)
	}
}

const fanOutWorkflow = `
import { agent } from "crw:agent";
const schema = { type: "object", additionalProperties: false, required: ["verdict"], properties: { verdict: { type: "string" } } };
export default async function main() {
  const parts = await Promise.all(["a", "b", "c", "d", "e"].map((node, i) =>
    agent.call({ role: i % 2 ? "explorer" : "reviewer", node, prompt: "Look at part " + node + ".", schema })));
  const whole = await agent.call({ role: "reviewer", node: "whole", prompt: "Review the whole.", schema });
  return [...parts.map(p => p.status + " " + p.output.verdict), whole.output.verdict];
}
`

// Call 2 first answers prose without JSON (the repair goes to its subagent by send_input);
// every other turn answers JSON after a line of prose. Each entry has turns to spare: the
// mock counts the turns of all of a call's subagents.
const fanOutAnswers = `{"answers": [
  {"match": {"call": 2}, "turns": [{"text": "I looked, and it seems fine to me."}, {"text": "{\"verdict\": \"fine after repair\"}"}]},
  {"match": {}, "turns": [{"text": "Looked at it.\n{\"verdict\": \"fine\"}"}, {"text": "Looked at it.\n{\"verdict\": \"fine\"}"}]}
]}`

// TestSessionRunOnARealCodexOwner: the owner does what crw flow next says, turn by turn, until
// the run ends: spawn_agent and crw flow dispatched for each spawn step, send_input for the
// repair, close_agent for each close step. Five calls fan out up to the slot limit; one spawn
// is never reported (the run finds it by its marker); one is first spawned as the wrong role
// (pair_mismatch: closed and spawned again). The run ends with the fake backend's result for
// the same answers.
func TestSessionRunOnARealCodexOwner(t *testing.T) {
	t.Parallel()
	r := newOwnerRig(t, fanOutAnswers)
	run, _ := r.start(fanOutWorkflow)

	var view nextview.NextView
	mismatched := map[string]string{} // marker → the subagent told pair_mismatch
	maxSpawnSteps := 0                // spawn steps one next showed at once: at most the pool
	for round := 0; ; round++ {
		require.Less(t, round, 40, "the run did not end: %+v", view)
		view = r.next(run)
		if view.State == nextview.StateEnded {
			break
		}
		assert.Equal(t, 4, view.Slots.Limit, "agents.max_threads of the CODEX_HOME the mock wrote")
		assert.Contains(t, view.SpawnFormats, nextview.SpawnFormat{Role: "reviewer", AgentType: "reviewer", Model: reviewerRole.Model, ReasoningEffort: "high",
			Call: `spawn_agent(agent_type="reviewer", message, model="mock-reviewer-model", reasoning_effort="high", fork_context=false)`})
		var calls []mockmodel.OwnerStep
		var reports []nextview.NextStep
		spawnSteps := 0
		for _, st := range view.Steps {
			call := mockmodel.OwnerStep{Tool: st.HostCall.Tool, Args: st.HostCall.Arguments}
			switch st.Action {
			case bus.ActionSpawn:
				spawnSteps++
				if r.spawns[st.Marker] > 0 && mismatched[st.Marker] == "" {
					continue // spawned, not bound yet: the unreported one, until its marker is found
				}
				if agent := mismatched[st.Marker]; agent != "" {
					calls = append(calls, mockmodel.OwnerStep{Tool: "close_agent", Args: map[string]any{"target": agent}})
					mismatched[st.Marker] = "closed"
				} else if st.Call == "c4" {
					// The owner's mistake: the explorer's step spawned as a reviewer, whose
					// role file pins the reviewer's pair whatever the spawn asks.
					args := map[string]any{}
					for k, v := range st.HostCall.Arguments {
						args[k] = v
					}
					args["agent_type"] = "reviewer"
					call.Args = args
				}
				calls = append(calls, call)
				if st.Call != "c3" { // c3's spawn is never reported
					reports = append(reports, st)
				}
			case bus.ActionSendInput:
				calls = append(calls, call)
				reports = append(reports, st)
			case bus.ActionClose:
				calls = append(calls, call)
			}
		}
		maxSpawnSteps = max(maxSpawnSteps, spawnSteps)
		if len(calls) == 0 {
			continue
		}
		r.turn(calls...)
		for _, st := range reports {
			agent := st.AgentID
			if st.Action == bus.ActionSpawn {
				agent = r.agentFor(st.Marker)
			}
			reply := r.dispatched(run, st, agent)
			switch {
			case st.Call == "c4" && mismatched[st.Marker] == "":
				require.Equal(t, bus.ReplyPairMismatch, reply.Reply, "%+v", reply)
				assert.Equal(t, explorerRole.Model, reply.Model)
				assert.Equal(t, explorerRole.Effort, reply.Effort)
				mismatched[st.Marker] = agent
			case reply.Reply == bus.ReplyClose && strings.Contains(reply.Detail, "ended"):
				r.late[st.Marker] = agent
			default:
				require.Equal(t, bus.ReplyBound, reply.Reply, "%s: %+v", st.Marker, reply)
			}
		}
	}
	assert.Equal(t, "completed", view.Status)
	assert.LessOrEqual(t, maxSpawnSteps, 3, "no more steps wait at once than agents.max_threads − 1")

	status := r.crw("--json", "flow", "status", run)
	var got struct{ Result json.RawMessage }
	require.NoError(t, json.Unmarshal([]byte(status.stdout), &got), status.stdout)
	fakeRun := r.crw("--json", "flow", "run", filepath.Join(r.dir, "workflow.js"), "--answers", r.answersFile)
	require.Equal(t, 0, fakeRun.exit, fakeRun.stderr)
	var want struct{ Result json.RawMessage }
	require.NoError(t, json.Unmarshal([]byte(fakeRun.stdout), &want), fakeRun.stdout)
	assert.JSONEq(t, `["completed fine", "completed fine after repair", "completed fine", "completed fine", "completed fine", "fine"]`, string(want.Result))
	assert.JSONEq(t, string(want.Result), string(got.Result), "the session run's result is the fake backend's")

	rows := r.rows(run)
	r.checkOnce(rows)
	inFlight, most := 0, 0 // calls on the backend (a step published) and not ended, at the most
	running := map[string]bool{}
	for _, row := range rows {
		switch {
		case row.Type == journal.TypeStepPublished && !running[row.Call]:
			running[row.Call] = true
			inFlight++
		case journal.IsTerminal(row.Type) && running[row.Call]:
			inFlight--
		}
		most = max(most, inFlight)
	}
	assert.Equal(t, 3, most, "the five calls fan out to agents.max_threads − 1 at once")
	threads := map[string]journal.Row{}
	var repairStep *journal.Row
	for _, row := range rows {
		switch {
		case row.Type == journal.TypeThreadStarted:
			threads[row.Call] = row
		case row.Type == journal.TypeStepPublished && row.Call == "c2" && row.K == 2:
			repairStep = &row
		}
		if row.Type == journal.TypeCompleted {
			require.NotNil(t, row.Tokens, "call %s: its tokens from the subagent's rollout", row.Call)
			assert.Positive(t, row.Tokens.Total, row.Call)
		}
		assert.NotEqual(t, "tokens_unmeasured", row.Reason, row.Call)
		if row.Type == journal.TypeStarted {
			assert.Equal(t, "session", row.Backend)
			assert.Equal(t, 3, row.Pool, "a session run's pool is agents.max_threads − 1")
		}
	}
	require.Len(t, threads, 6, "one subagent bound per call")
	assert.Equal(t, reviewerRole.Model, threads["c1"].Model)
	assert.Equal(t, "high", threads["c1"].Effort)
	assert.Equal(t, "explorer", threads["c2"].AgentRole)
	assert.Equal(t, explorerRole.Model, threads["c4"].Model, "c4 is bound to its second subagent, on the explorer's pair")
	assert.Equal(t, 2, r.spawns["c4/t1-a1"], "c4 was spawned twice: on the wrong pair, then on its own")
	require.NotNil(t, repairStep, "c2's repair is a step of its own")
	assert.Equal(t, bus.ActionSendInput, repairStep.Action)
	assert.Equal(t, threads["c2"].ThreadID, repairStep.AgentID, "the repair goes to c2's open subagent")
	assert.Equal(t, "c2/t2-a1", repairStep.Marker)
}

const resumeWorkflow = `
import { agent } from "crw:agent";
const schema = { type: "object", additionalProperties: false, required: ["verdict"], properties: { verdict: { type: "string" } } };
export default async function main() {
  const slow = await agent.call({ role: "explorer", node: "slow", prompt: "Explore slowly.", schema });
  const limited = await agent.call({ role: "reviewer", node: "limited", prompt: "Review under a rate limit.", schema });
  const cut = await agent.call({ role: "explorer", node: "cut", prompt: "Explore until cut off.", schema });
  // A paused run's script ends with held calls: it reads their outputs with care.
  return [slow.status, limited.status, cut.status, slow.output?.verdict, limited.output?.verdict, cut.output?.verdict];
}
`

// Call 1 answers after 4 s, long enough to kill the run's process meanwhile; call 2's first
// turn hits a rate limit; call 3's first subagent never answers (the owner closes it).
const resumeAnswers = `{"answers": [
  {"match": {"call": 1}, "turns": [{"text": "{\"verdict\": \"slow\"}", "delay_ms": 4000}]},
  {"match": {"call": 2}, "turns": [{"error": "rateLimitExceeded"}, {"text": "{\"verdict\": \"after the limit\"}"}]},
  {"match": {"call": 3}, "turns": [{"lost": true}, {"text": "{\"verdict\": \"second attempt\"}"}]}
]}`

// TestSessionRunOnARealCodexOwnerSurvivesItsProcess: the run's process is SIGKILLed while a
// subagent works, and crw flow next resumes it (nothing is spawned again: the resumed process
// goes on reading the bound subagent); a rate limit on a subagent pauses the run, and a resume
// runs the call again on a new attempt; a subagent the owner closes mid-turn is a lost attempt,
// and the call goes on on the next attempt.
func TestSessionRunOnARealCodexOwnerSurvivesItsProcess(t *testing.T) {
	t.Parallel()
	r := newOwnerRig(t, resumeAnswers)
	run, pid := r.start(resumeWorkflow, "--lost-after", "1s")

	take := func(v nextview.NextView) {
		t.Helper()
		var calls []mockmodel.OwnerStep
		var reports []nextview.NextStep
		for _, st := range v.Steps {
			if st.Action == bus.ActionSpawn && r.spawns[st.Marker] > 0 {
				continue
			}
			calls = append(calls, mockmodel.OwnerStep{Tool: st.HostCall.Tool, Args: st.HostCall.Arguments})
			if st.Action != bus.ActionClose {
				reports = append(reports, st)
			}
		}
		if len(calls) == 0 {
			return
		}
		r.turn(calls...)
		for _, st := range reports {
			agent := st.AgentID
			if st.Action == bus.ActionSpawn {
				agent = r.agentFor(st.Marker)
			}
			r.bound(run, st, agent)
		}
	}
	// waitFor asks crw flow next until the view satisfies ok, taking every step on the way.
	waitFor := func(what string, ok func(nextview.NextView) bool) nextview.NextView {
		t.Helper()
		for round := 0; round < 20; round++ {
			v := r.next(run)
			if ok(v) {
				return v
			}
			if v.State == nextview.StateEnded {
				for _, row := range r.rows(run) {
					t.Logf("%s %s %s %s %s %s", row.Type, row.Call, row.Marker, row.Reason, row.Detail, row.Error.Text())
				}
				t.Fatalf("the run ended before %s: %+v", what, v)
			}
			take(v)
		}
		t.Fatalf("never %s", what)
		return nextview.NextView{}
	}
	hasStep := func(marker string) func(nextview.NextView) bool {
		return func(v nextview.NextView) bool {
			for _, st := range v.Steps {
				if st.Marker == marker {
					return true
				}
			}
			return false
		}
	}

	// c1's subagent is bound and works; the run's process dies.
	take(waitFor("c1's step", hasStep("c1/t1-a1")))
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	v := r.next(run)
	assert.NotZero(t, v.ResumedPID, "crw flow next resumes the run no process holds: %+v", v)
	assert.Contains(t, v.Hint, "resumed")

	// c2's subagent hits the rate limit: the run pauses; a resume runs c2 again.
	waitFor("c2's step", hasStep("c2/t1-a1"))
	v = waitFor("the pause", func(v nextview.NextView) bool { return v.State == nextview.StatePaused })
	assert.Contains(t, v.Hint, "crw flow resume")
	res := r.crw("--json", "flow", "resume", run, "--detach")
	require.Equal(t, 0, res.exit, "%s%s", res.stdout, res.stderr)
	take(waitFor("c2's next attempt", hasStep("c2/t1-a2")))

	// c3's first subagent never answers; the owner closes it mid-turn: the attempt is lost.
	take(waitFor("c3's step", hasStep("c3/t1-a1")))
	c3 := ""
	for _, row := range r.rows(run) {
		if row.Type == journal.TypeThreadStarted && row.Call == "c3" {
			c3 = row.ThreadID
		}
	}
	require.NotEmpty(t, c3, "c3's first subagent is bound")
	r.turn(mockmodel.OwnerStep{Tool: "close_agent", Args: map[string]any{"target": c3}})
	v = waitFor("c3's next attempt", hasStep("c3/t1-a2"))
	take(v)
	v = waitFor("the end", func(v nextview.NextView) bool { return v.State == nextview.StateEnded })
	assert.Equal(t, "completed", v.Status)

	status := r.crw("--json", "flow", "status", run)
	assert.Contains(t, status.stdout, `"result":["completed","completed","completed","slow","after the limit","second attempt"]`)
	rows := r.rows(run)
	r.checkOnce(rows)
	for marker, n := range r.spawns {
		assert.Equal(t, 1, n, "%s spawned once", marker)
	}
	var lost []journal.Row
	for _, row := range rows {
		if row.Type == journal.TypeAttemptLost {
			lost = append(lost, row)
		}
	}
	require.Len(t, lost, 1)
	assert.Equal(t, "c3", lost[0].Call)
	assert.Equal(t, c3, lost[0].AgentID)
}

const privateWorkflow = `
import { agent } from "crw:agent";
const schema = { type: "object", additionalProperties: false, required: ["verdict"], properties: { verdict: { type: "string" } } };
export default async function main() {
  const [slow, quick] = await Promise.all([
    agent.call({ role: "explorer", node: "slow", prompt: "Explore slowly.", schema }),
    agent.call({ role: "reviewer", node: "quick", prompt: "Review quickly.", schema }),
  ]);
  const last = await agent.call({ role: "reviewer", node: "last", prompt: "Review the rest.", schema });
  return [slow.output.verdict, quick.output.verdict, last.output.verdict];
}
`

// Call 1 answers after 3 s: meanwhile the run's private app server reads its subagent
// notLoaded with its turn interrupted, which must be neither a lost attempt nor an interrupt.
const privateAnswers = `{"answers": [
  {"match": {"call": 1}, "turns": [{"text": "{\"verdict\": \"slow\"}", "delay_ms": 3000}]},
  {"match": {}, "turns": [{"text": "Done.\n{\"verdict\": \"quick\"}"}]}
]}`

// TestSessionRunThroughAPrivateAppServer: a run started without --host reads the owner's
// subagents through an app server of its own on the owner's CODEX_HOME (recorded in run.json).
// It binds what the owner reports, waits for a subagent that reads notLoaded and interrupted
// while it works, harvests every answer with its tokens, and takes each close step back once
// crw flow next has handed it out.
func TestSessionRunThroughAPrivateAppServer(t *testing.T) {
	t.Parallel()
	r := newOwnerRig(t, privateAnswers)
	r.private = true
	run, _ := r.start(privateWorkflow, "--lost-after", "1m")
	spec, err := os.ReadFile(filepath.Join(r.state, "flow", run, "run.json"))
	require.NoError(t, err)
	assert.Contains(t, string(spec), `"host": "private"`)
	assert.Contains(t, string(spec), `"codex-home": "`+filepath.Join(r.dir, "home")+`"`)

	closes := map[string]int{} // close steps handed out, by subagent
	var view nextview.NextView
	for round := 0; ; round++ {
		require.Less(t, round, 40, "the run did not end: %+v", view)
		view = r.next(run)
		if view.State == nextview.StateEnded {
			break
		}
		var calls []mockmodel.OwnerStep
		var reports []nextview.NextStep
		for _, st := range view.Steps {
			if st.Action == bus.ActionSpawn && r.spawns[st.Marker] > 0 {
				continue
			}
			calls = append(calls, mockmodel.OwnerStep{Tool: st.HostCall.Tool, Args: st.HostCall.Arguments})
			switch st.Action {
			case bus.ActionClose:
				closes[st.AgentID]++
			default:
				reports = append(reports, st)
			}
		}
		if len(calls) == 0 {
			continue
		}
		r.turn(calls...)
		for _, st := range reports {
			agent := st.AgentID
			if st.Action == bus.ActionSpawn {
				agent = r.agentFor(st.Marker)
			}
			// The run's own app server may not see a subagent on disk yet: report again.
			var reply bus.Reply
			for try := 0; try < 50; try++ {
				if reply = r.dispatched(run, st, agent); reply.Reply != bus.ReplyRetry {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if reply.Reply == bus.ReplyClose && strings.Contains(reply.Detail, "ended") {
				r.late[st.Marker] = agent
				continue
			}
			require.Equal(t, bus.ReplyBound, reply.Reply, "%s: %+v", st.Marker, reply)
		}
	}
	assert.Equal(t, "completed", view.Status)
	status := r.crw("--json", "flow", "status", run)
	assert.Contains(t, status.stdout, `"result":["slow","quick","quick"]`)

	rows := r.rows(run)
	r.checkOnce(rows)
	threads := 0
	for _, row := range rows {
		switch row.Type {
		case journal.TypeThreadStarted:
			threads++
		case journal.TypeCompleted:
			require.NotNil(t, row.Tokens, "call %s: its tokens from the subagent's rollout", row.Call)
			assert.Positive(t, row.Tokens.Total, row.Call)
		}
		assert.NotEqual(t, journal.TypeAttemptLost, row.Type, "%+v", row)
		assert.NotEqual(t, journal.TypeInterruptRequested, row.Type, "%+v", row)
	}
	assert.Equal(t, 3, threads, "one subagent bound per call")
	for agent, n := range closes {
		assert.Equal(t, 1, n, "the close step of %s was handed out once, then taken back", agent)
	}
	// The ended run's last close steps were handed out once more and then taken back.
	final := r.next(run)
	assert.Equal(t, nextview.StateEnded, final.State)
	assert.Empty(t, final.Steps, "an ended run's close steps, handed out, are gone")
	for marker, n := range r.spawns {
		assert.Equal(t, 1, n, "%s spawned once", marker)
	}
}

// TestOwnerSpawnsGoThroughTheSpawnHook: after crw codex setup into the owner's CODEX_HOME, the
// owner thread of a session run is bound to it, and the real Codex runs crw's spawn hook on the
// owner's spawns: a spawn with no agent type that asks for another model runs on its role's
// pair from the run's table, a fork of the owner's whole history is refused, and so is a spawn
// by a subagent ([agents] max_depth = 2 lets one try); each decision is a line of the ledger.
func TestOwnerSpawnsGoThroughTheSpawnHook(t *testing.T) {
	t.Parallel()
	r := newOwnerRigWith(t, `{"answers": [{"match": {}, "turns": [{"text": "{\"verdict\": \"fine\"}"}]}]}`, func(dir, home string) {
		config, err := os.ReadFile(filepath.Join(home, "config.toml"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"),
			[]byte(strings.Replace(string(config), "max_threads = 4", "max_threads = 6\nmax_depth = 2", 1)), 0o644))
		roles := filepath.Join(dir, "setup-roles.json")
		require.NoError(t, os.WriteFile(roles, []byte(sessionRoles), 0o600))
		res := durableCrw(t, filepath.Join(dir, "state"), nil, "--json", "codex", "setup", "--codex-home", home, "--roles", roles, "--codex", mockmodel.Codex(t))
		require.Equal(t, 0, res.exit, "%s%s", res.stdout, res.stderr)
		assert.Contains(t, res.stdout, `"status":"trusted"`)
	})
	run, _ := r.start(`
import { agent } from "crw:agent";
export default async function main() { return (await agent.call({ role: "explorer", prompt: "wait here" })).status; }
`)
	t.Cleanup(func() { r.crw("flow", "cancel", run) })
	binding, err := os.ReadFile(filepath.Join(r.state, "flow-bound", r.ownerID+".jsonl"))
	require.NoError(t, err, "the start binds the owner")
	assert.Contains(t, string(binding), `"kind":"orchestrator","run_id":"`+run+`"`)
	assert.Contains(t, string(binding), `"explorer":{"model":"mock-explorer-model","effort":"low"}`)

	r.mock.OwnPrompt("LEAF-SPAWNER", mockmodel.OwnerStep{Tool: "spawn_agent", Args: map[string]any{"message": "grandchild"}},
		mockmodel.OwnerStep{Text: "I tried."})
	r.turn(
		mockmodel.OwnerStep{Tool: "spawn_agent", Args: map[string]any{"message": "Look around, please.", "model": reviewerRole.Model, "reasoning_effort": "high"}},
		mockmodel.OwnerStep{Tool: "spawn_agent", Args: map[string]any{"agent_type": "reviewer", "message": "Fork me.", "fork_context": true}},
		mockmodel.OwnerStep{Tool: "spawn_agent", Args: map[string]any{"agent_type": "explorer", "message": "LEAF-SPAWNER: spawn one"}},
	)
	ledger := filepath.Join(r.state, "flow-bound", "decisions", r.ownerID+".jsonl")
	var decisions []map[string]any
	require.Eventually(t, func() bool {
		data, _ := os.ReadFile(ledger)
		decisions = nil
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var d map[string]any
			if json.Unmarshal([]byte(l), &d) == nil {
				decisions = append(decisions, d)
			}
		}
		return len(decisions) == 4
	}, time.Minute, 100*time.Millisecond, "four spawns decided")
	byDecision := map[string][]string{}
	for _, d := range decisions {
		assert.Equal(t, run, d["run_id"])
		byDecision[d["decision"].(string)] = append(byDecision[d["decision"].(string)], fmt.Sprint(d["role"], " ", d["reason"]))
	}
	assert.ElementsMatch(t, []string{"explorer <nil>", "explorer <nil>"}, byDecision["allow"])
	assert.ElementsMatch(t, []string{"reviewer full_history_fork_refused", "explorer leaf_spawn_refused"}, byDecision["deny"])

	subs, err := r.host.Subagents(r.ctx)
	require.NoError(t, err)
	previews := map[string]host.Thread{}
	for _, s := range subs {
		previews[s.Preview] = s
	}
	look, ok := previews["Look around, please."]
	require.True(t, ok, "the first spawn ran: %v", previews)
	assert.Equal(t, explorerRole.Model, look.Model, "it runs on the explorer's pair, not the model it asked for")
	assert.Equal(t, "low", look.Effort)
	// The owner's spawn calls as the host shows them (where a restart looks a step up by the
	// ledger's call): the spawn that ran, with the call id the ledger recorded for it.
	spawner, ok := r.host.(host.OwnerSpawner)
	require.True(t, ok)
	spawns, err := spawner.OwnerSpawns(r.ctx, r.ownerID)
	require.NoError(t, err)
	calls := map[string]string{} // the agent each spawn call started
	for _, sp := range spawns {
		calls[sp.CallID] = sp.Agent
	}
	assert.Contains(t, calls, decisions[0]["tool_use_id"], "the ledger's call is one of the owner's spawns: %+v", spawns)
	assert.Equal(t, look.ID, calls[fmt.Sprint(decisions[0]["tool_use_id"])], "it started the subagent that looks around")
	assert.NotContains(t, previews, "Fork me.", "the fork was refused")
	assert.NotContains(t, previews, "grandchild", "the subagent's spawn was refused")
	outputs := func() string { return fmt.Sprint(r.mock.Requests()) }
	assert.Contains(t, outputs(), "Tool call blocked by PreToolUse hook: crw: full_history_fork_refused")
	assert.Eventually(t, func() bool {
		return strings.Contains(outputs(), "Tool call blocked by PreToolUse hook: crw: leaf_spawn_refused")
	}, 30*time.Second, 50*time.Millisecond, "the subagent is told its spawn was refused")
}

// TestTwoStartsOnOneThreadBindOnce: two crw flow start of session runs on one owner thread at
// the same moment: exactly one binds the owner, the other starts and warns; once the bound run
// has ended, the next start binds.
func TestTwoStartsOnOneThreadBindOnce(t *testing.T) {
	t.Parallel()
	r := newOwnerRig(t, `{"answers": []}`)
	wf := filepath.Join(r.dir, "wait.js")
	require.NoError(t, os.WriteFile(wf, []byte(`
import { agent } from "crw:agent";
export default async function main() { return (await agent.call({ role: "explorer", prompt: "wait here" })).status; }
`), 0o600))
	start := func() (run string, warnings []string) {
		res := r.crw("--json", "flow", "start", wf, "--owner", r.ownerID, "--host", "unix://"+r.sock, "--poll", "50ms", "--wake", "off")
		require.Equal(t, 0, res.exit, "%s%s", res.stdout, res.stderr)
		var out struct {
			Run      string
			Warnings []string
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &out), res.stdout)
		return out.Run, out.Warnings
	}
	type started struct {
		run      string
		warnings []string
	}
	results := make(chan started, 2)
	for range 2 {
		go func() {
			run, w := start()
			results <- started{run, w}
		}()
	}
	a, b := <-results, <-results
	t.Cleanup(func() { r.crw("flow", "cancel", a.run); r.crw("flow", "cancel", b.run) })
	assert.NotEqual(t, len(a.warnings) == 0, len(b.warnings) == 0, "exactly one start warns: %+v %+v", a, b)
	bound, loser := a, b
	if len(a.warnings) > 0 {
		bound, loser = b, a
	}
	assert.Contains(t, loser.warnings[0], "serves live run "+bound.run)
	lines := func() []string {
		data, err := os.ReadFile(filepath.Join(r.state, "flow-bound", r.ownerID+".jsonl"))
		require.NoError(t, err)
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
	require.Len(t, lines(), 1, "one line: the bound run's")
	assert.Contains(t, lines()[0], `"run_id":"`+bound.run+`"`)
	assert.Equal(t, []string{"the owner thread " + r.ownerID + " is bound to run " + bound.run + ", not this one: its spawns get that run's pairs"},
		r.next(loser.run).Warnings, "crw flow next warns of an owner line that is not the run's")
	assert.Empty(t, r.next(bound.run).Warnings)

	// The bound run ends: its line is closed, and a new start binds.
	res := r.crw("flow", "cancel", bound.run)
	require.Equal(t, 0, res.exit, "%s%s", res.stdout, res.stderr)
	require.Eventually(t, func() bool { return strings.Contains(lines()[len(lines())-1], `"kind":"orchestrator_closed"`) }, 30*time.Second, 50*time.Millisecond,
		"the ended run lets the owner go: %v", lines())
	res = r.crw("flow", "cancel", loser.run)
	require.Equal(t, 0, res.exit, "%s%s", res.stdout, res.stderr)
	third, warnings := start()
	t.Cleanup(func() { r.crw("flow", "cancel", third) })
	assert.Empty(t, warnings)
	assert.Contains(t, lines()[len(lines())-1], `"kind":"orchestrator","run_id":"`+third+`"`)
}

// TestSessionRunWakesItsOwner: a run started from an idle owner on the owner's app server wakes
// it when its step is published (a turn on the owner's thread that names the step), again after
// --wake-after while the step waits, and the owner, woken, takes the step: the run ends.
func TestSessionRunWakesItsOwner(t *testing.T) {
	t.Parallel()
	r := newOwnerRig(t, `{"answers": [{"match": {}, "turns": [{"text": "{\"verdict\": \"woken\"}"}]}]}`)
	run, _ := r.start(`
import { agent } from "crw:agent";
export default async function main() { return (await agent.call({ role: "explorer", prompt: "Explore when woken." })).output; }
`, "--wake-after", "1s")
	// The step, read from the run's bus (crw flow next would tell the run the owner watches it,
	// and a watching owner is not woken).
	sb := bus.Bus{Dir: filepath.Join(r.state, "flow", run)}
	var steps []bus.StepFile
	require.Eventually(t, func() bool { steps, _, _ = sb.Steps(); return len(steps) == 1 }, 30*time.Second, 50*time.Millisecond)
	st := nextview.Next(run, nextview.StateRunning, "", steps, nil, 4, nil).Steps[0]
	// From its next wake on, the owner takes the step it is woken for.
	r.mock.Own(r.ownerID, mockmodel.OwnerStep{Tool: st.HostCall.Tool, Args: st.HostCall.Arguments}, mockmodel.OwnerStep{Text: "Spawned it."})
	var status durableRun
	require.Eventually(t, func() bool {
		status = r.crw("--json", "flow", "status", run)
		return strings.Contains(status.stdout, `"state":"ended"`)
	}, time.Minute, 200*time.Millisecond)
	assert.Contains(t, status.stdout, `"status":"completed"`)
	assert.Contains(t, status.stdout, `"result":"{\"verdict\": \"woken\"}"`)
	// crw flow inspect says which owner's app server the run reaches, and that it answers.
	insp := r.crw("flow", "inspect", run)
	assert.Regexp(t, `(?m)^host      unix://\S+ \(reachable\)$`, insp.stdout, insp.stderr)

	var wakes []journal.Row
	for _, row := range r.rows(run) {
		if row.Type == journal.TypeSessionWake {
			wakes = append(wakes, row)
		}
	}
	require.NotEmpty(t, wakes)
	for _, w := range wakes {
		require.NotNil(t, w.Staged)
		assert.True(t, *w.Staged, "%+v", w)
		assert.Equal(t, r.ownerID, w.Owner)
		assert.Equal(t, []string{"c1/t1"}, w.Ops)
	}
	woken, wakeTurns := false, map[string]bool{}
	for _, req := range r.mock.Requests() {
		if req.Thread == r.ownerID && strings.Contains(req.Prompt, "1 step(s) wait for you (c1/t1-a1)") {
			wakeTurns[req.Turn] = true
			woken = woken || req.Answer == "owner:spawn_agent"
		}
	}
	assert.True(t, woken, "the owner spawned the step in a turn the wake started")
	for _, w := range wakes {
		assert.True(t, wakeTurns[w.TurnID], "the wake names the turn it started on the owner's thread: %q of %v", w.TurnID, wakeTurns)
	}
	for _, row := range r.rows(run) {
		if row.Type == journal.TypeSessionWakeEnded { // the run may end before it sees its wakes end
			assert.True(t, wakeTurns[row.TurnID], "%+v", row)
			assert.Contains(t, []string{"completed", "interrupted", "failed"}, row.TurnStatus)
		}
	}

	// An owner that reads crw flow next watches the run: it is not woken. The owner reads the
	// run while it waits for a decision, before its step exists, so no wake can be under way
	// when it starts watching: the step is published, and woken for, only after the answer.
	r2 := newOwnerRig(t, `{"answers": [{"match": {}, "turns": [{"text": "{\"verdict\": \"seen\"}"}]}]}`)
	run2, _ := r2.start(`
import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  await crw.decide({ id: "go", question: "Explore now?",
    schema: { type: "object", properties: { go: { type: "boolean" } }, required: ["go"], additionalProperties: false } });
  return (await agent.call({ role: "explorer", prompt: "Explore when seen." })).output;
}
`, "--wake-after", "1s")
	t.Cleanup(func() { r2.crw("flow", "cancel", run2) }) // its process gone before its folder is
	for {
		st2 := r2.crw("--json", "flow", "status", run2)
		require.NotContains(t, st2.stdout, `"state":"ended"`)
		if strings.Contains(st2.stdout, `"waiting_decision"`) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	seen := r2.crw("--json", "flow", "next", run2)
	require.Equal(t, 0, seen.exit, "%s%s", seen.stdout, seen.stderr)
	answered := r2.crw("flow", "answer", run2, "go", "--value", `{"go": true}`)
	require.Equal(t, 0, answered.exit, "%s%s", answered.stdout, answered.stderr)
	bus2 := bus.Bus{Dir: filepath.Join(r2.state, "flow", run2)}
	require.Eventually(t, func() bool { steps, _, _ := bus2.Steps(); return len(steps) == 1 }, time.Minute, 50*time.Millisecond)
	time.Sleep(3 * time.Second) // past --wake-after twice, the owner watching all along
	for _, row := range r2.rows(run2) {
		assert.NotEqual(t, journal.TypeSessionWake, row.Type, "a watching owner is not woken: row %d, wake %s", row.Seq, row.WakeID)
	}
	assert.Len(t, r2.next(run2).Steps, 1, "the owner sees the step itself")
}
