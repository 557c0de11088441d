package engine_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/runner/progress"
	"github.com/crw-dev/crw/engine/timeline"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
	"github.com/crw-dev/crw/store/local/journalfile/journalfiletest"
	"github.com/crw-dev/crw/store/mem"
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
	row.InputDigest = replay.InputDigest(row)
	return row
}

// services are a run service on each store: the tests of resumes run through the Store
// interface on both.
func services(t *testing.T) map[string]*engine.Service {
	local, _ := enginetest.LocalService(t)
	return map[string]*engine.Service{"local": local, "mem": enginetest.Service(mem.New())}
}

// durablePausedThenKilled creates a run of durableGateWorkflow whose first process saw the gate
// held by a rate limit (the run paused), had the script issue the fallback call and was killed
// before the fallback's held row was committed: the fallback is an open call. The fake backend
// now answers the gate with gateAnswer.
func durablePausedThenKilled(t *testing.T, svc *engine.Service, gateAnswer string) (id string) {
	t.Helper()
	root := t.TempDir()
	wfPath := filepath.Join(root, "wf.js")
	require.NoError(t, os.WriteFile(wfPath, []byte(durableGateWorkflow), 0o644))
	answersPath := filepath.Join(root, "answers.json")
	answersFile := `{"answers": [
  {"match": {"node": "gate"}, "turns": [{"text": ` + gateAnswer + `}]},
  {"match": {"node": "next"}, "turns": [{"text": "gone"}]}
]}`
	require.NoError(t, os.WriteFile(answersPath, []byte(answersFile), 0o644))
	ctx := context.Background()
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wfPath, BackendOpts: map[string]string{"answers": answersPath}})
	require.NoError(t, err)

	lease, err := svc.Store.Acquire(ctx, id)
	require.NoError(t, err)
	_, err = lease.Journal().Write(
		&journal.Row{Type: journal.TypeStarted, Run: id, Backend: "fake", Workflow: wfPath, Pool: 4, Input: json.RawMessage("null")},
		durablePrepared("c1", 1, "gate", "which way"),
		&journal.Row{Type: journal.TypeThreadStarted, Call: "c1", ThreadID: "fake-c1", Model: "fake-model", Effort: "medium"},
		&journal.Row{Type: journal.TypeTurnStarted, Call: "c1", K: 1, TurnID: "fake-c1-t1"},
		&journal.Row{Type: journal.TypeEscalation, Call: "c1", Reason: "quota_or_rate", Detail: "codexErrorInfo rateLimitExceeded"},
		&journal.Row{Type: journal.TypeHeld, Call: "c1", Reason: "host_infra_rate", Detail: "codexErrorInfo rateLimitExceeded", TurnIDs: []string{"fake-c1-t1"}},
		durablePrepared("c2", 2, "fallback", "fall back"),
	)
	require.NoError(t, err)
	require.NoError(t, lease.Release())
	return id
}

// durableResume resumes a run in this process and returns its end and journal.
func durableResume(t *testing.T, svc *engine.Service, id string) (*store.Status, []journal.Row) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), enginetest.Timeout)
	defer cancel()
	res, err := svc.Execute(ctx, id, engine.ExecOptions{})
	require.NoError(t, err)
	if _, ok := svc.Store.(*local.Store); ok {
		journalfiletest.Check(t, enginetest.JournalPath(svc, id))
	}
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	enginetest.CheckJournal(t, rows)
	return res, rows
}

// TestDurableResumeSupersedesUnmadeCall: the gate, held by the pause, runs again and is answered;
// the script no longer falls back, so the open fallback call ends superseded /
// superseded_by_resume, and is never matched against.
func TestDurableResumeSupersedesUnmadeCall(t *testing.T) {
	t.Parallel()
	for name, svc := range services(t) {
		t.Run(name, func(t *testing.T) { testResumeSupersedesUnmadeCall(t, svc) })
	}
}

func testResumeSupersedesUnmadeCall(t *testing.T, svc *engine.Service) {
	id := durablePausedThenKilled(t, svc, `"stop"`)
	res, rows := durableResume(t, svc, id)
	require.Equal(t, store.RunCompleted, res.Status, "%+v", res.Error)
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
	s := timeline.Summarize(rows)
	assert.Equal(t, store.Counts{"completed": 1, "superseded": 1}, s.Counts)
	require.Len(t, s.Calls, 2, "no other call")
	assert.Equal(t, 2, s.Calls[0].Attempts)
}

// TestDurableResumeSupersedesReplacedCall: the gate runs again and sends the script down another
// path, whose call takes the open fallback's position in issue order. That call is a new one
// (its own id); the fallback, which the resumed script never makes, ends superseded /
// superseded_by_resume rather than staying open for good.
func TestDurableResumeSupersedesReplacedCall(t *testing.T) {
	t.Parallel()
	for name, svc := range services(t) {
		t.Run(name, func(t *testing.T) { testResumeSupersedesReplacedCall(t, svc) })
	}
}

func testResumeSupersedesReplacedCall(t *testing.T, svc *engine.Service) {
	id := durablePausedThenKilled(t, svc, `"left"`)
	res, rows := durableResume(t, svc, id)
	require.Equal(t, store.RunCompleted, res.Status, "%+v", res.Error)
	assert.JSONEq(t, `{"gate": "left", "next": ["c3", "gone"]}`, string(res.Result))

	next := enginetest.CallRows(rows, "c3")
	require.NotEmpty(t, next)
	assert.Equal(t, "next", next[0].Node)
	assert.Equal(t, 2, next[0].Index, "the new call is the second the script issued")

	fallback := enginetest.CallRows(rows, "c2")
	types := enginetest.Types(fallback)
	require.Equal(t, []string{journal.TypePrepared, journal.TypeSuperseded}, types)
	assert.Equal(t, "superseded_by_resume", fallback[1].Reason)
	assert.Equal(t, store.Counts{"completed": 2, "superseded": 1}, timeline.Summarize(rows).Counts)
}

// TestReplayMutesTheConsole: a resumed script's console is muted while it replays what the
// journal recorded (its first process printed that already), the code that runs on the last
// recorded result included (the process that saw c1 complete printed "after a"), and heard
// again once the script goes on from a result of its own.
func TestReplayMutesTheConsole(t *testing.T) {
	t.Parallel()
	for name, svc := range services(t) {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			wfPath := filepath.Join(root, "wf.js")
			require.NoError(t, os.WriteFile(wfPath, []byte(`import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  console.log("first line");
  const a = await agent.call({ role: "explorer", node: "a", prompt: "a" });
  crw.log("after a: " + a.output);
  const b = await agent.call({ role: "explorer", node: "b", prompt: "b" });
  console.warn("after b: " + b.output);
  return [a.output, b.output];
}
`), 0o644))
			ctx := context.Background()
			id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wfPath})
			require.NoError(t, err)
			lease, err := svc.Store.Acquire(ctx, id)
			require.NoError(t, err)
			_, err = lease.Journal().Write(
				&journal.Row{Type: journal.TypeStarted, Run: id, Backend: "fake", Workflow: wfPath, Pool: 4, Input: json.RawMessage("null")},
				durablePrepared("c1", 1, "a", "a"),
				&journal.Row{Type: journal.TypeThreadStarted, Call: "c1", ThreadID: "fake-c1", Model: "fake-model", Effort: "medium"},
				&journal.Row{Type: journal.TypeTurnStarted, Call: "c1", K: 1, TurnID: "fake-c1-t1"},
				&journal.Row{Type: journal.TypeCompleted, Call: "c1", Output: json.RawMessage(`"A"`), TurnIDs: []string{"fake-c1-t1"}},
			)
			require.NoError(t, err)
			require.NoError(t, lease.Release())

			var console bytes.Buffer
			end, err := svc.Execute(ctx, id, engine.ExecOptions{Console: &console})
			require.NoError(t, err)
			assert.JSONEq(t, `["A", "ok"]`, string(end.Result))
			assert.Equal(t, "warn: after b: ok\n", console.String())
		})
	}
}

// TestStoppedProcessLeavesTheRunResumable: a process whose caller stops it (a signal, a
// shutdown) stops at once without ending its run; the call it left in flight is reconciled by
// the resume, never sent again.
func TestStoppedProcessLeavesTheRunResumable(t *testing.T) {
	t.Parallel()
	for name, svc := range services(t) {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			wfPath := filepath.Join(root, "wf.js")
			require.NoError(t, os.WriteFile(wfPath, []byte(`import { agent } from "crw:agent";
export default async function main() {
  const a = await agent.call({ role: "explorer", node: "slow", prompt: "take your time" });
  return a.output;
}
`), 0o644))
			// The turn takes a minute on the host: a process that waited for it would take that
			// long. By the resume the host has answered it.
			slow, err := fake.ParseAnswers("answers.json", []byte(`{"answers": [{"turns": [{"text": "done", "delay_ms": 60000}]}]}`))
			require.NoError(t, err)
			a, err := fake.ParseAnswers("answers.json", []byte(`{"answers": [{"turns": [{"text": "done"}]}]}`))
			require.NoError(t, err)
			host := fake.NewHost("")
			id, err := svc.Create(context.Background(), engine.CreateOptions{Workflow: wfPath})
			require.NoError(t, err)

			ctx, stop := context.WithCancel(context.Background())
			go func() {
				for len(host.Received()) == 0 {
					time.Sleep(time.Millisecond)
				}
				stop()
			}()
			start := time.Now()
			_, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(slow, host)})
			require.Error(t, err)
			assert.Less(t, time.Since(start), 30*time.Second, "it stops at once, not when its turn ends")
			e, ok := errs.As(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, errs.RunUnavailable, e.Code)
			assert.Equal(t, "process_stopped", e.Reason())
			st, err := svc.Status(context.Background(), id)
			require.NoError(t, err)
			assert.Equal(t, store.StateCrashed, st.State, "not ended")

			end, err := svc.Execute(context.Background(), id, engine.ExecOptions{Backend: fake.New(a, host)})
			require.NoError(t, err)
			assert.Equal(t, store.RunCompleted, end.Status)
			assert.JSONEq(t, `"done"`, string(end.Result))
			assert.Equal(t, map[string]int{"fake-c1-t1": 1}, host.Received(), "reconciled, not sent again")
		})
	}
}

// stopWhenSent runs the run in this process and stops the process once the host has received
// n turns and their turn_started rows are durable (the row, not only the send: a test that
// reads the turn ids back must not depend on when the row was committed before the stop). It
// returns what Execute returned. A call that must still be in flight at the stop is held by b
// (enginetest.GateAnswers, never opened: the stop ends its turn).
func stopWhenSent(t *testing.T, svc *engine.Service, id string, b backend.Backend, host *fake.Host, n int) error {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		defer stop()
		for ctx.Err() == nil {
			if len(host.Received()) >= n {
				if rows, err := svc.Rows(ctx, id); err == nil && enginetest.Count(rows, "", journal.TypeTurnStarted) >= n {
					return
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	_, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: b})
	return err
}

// all holds every call.
func all(backend.Call) bool { return true }

// TestStoppedProcessWritesNothingForWaitingCalls: calls waiting for a place in the pool when the
// process is stopped have not run: they must not end (held cancelled) in the journal, or the
// resume would give the script those ends instead of running the calls.
func TestStoppedProcessWritesNothingForWaitingCalls(t *testing.T) {
	t.Parallel()
	for name, svc := range services(t) {
		t.Run(name, func(t *testing.T) {
			wfPath := filepath.Join(t.TempDir(), "wf.js")
			require.NoError(t, os.WriteFile(wfPath, []byte(`import { agent } from "crw:agent";
export default async function main() {
  const nodes = ["n1", "n2", "n3", "n4", "n5", "n6"];
  const results = await Promise.all(nodes.map((node) => agent.call({ role: "explorer", node, prompt: "go " + node })));
  return results.map((r) => r.status + ":" + r.output);
}
`), 0o644))
			a, err := fake.ParseAnswers("answers.json", []byte(`{"answers": [{"turns": [{"text": "done"}]}]}`))
			require.NoError(t, err)
			host := fake.NewHost("")
			id, err := svc.Create(context.Background(), engine.CreateOptions{Workflow: wfPath, Pool: new(2)})
			require.NoError(t, err)

			// The two calls sent are in flight until the stop: none ends, none frees its place.
			err = stopWhenSent(t, svc, id, enginetest.GateAnswers(fake.New(a, host), all), host, 2)
			e, ok := errs.As(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, "process_stopped", e.Reason())
			rows, err := svc.Rows(context.Background(), id)
			require.NoError(t, err)
			assert.Empty(t, enginetest.Terminals(rows), "no call ended: %v", enginetest.Types(rows))
			assert.Empty(t, enginetest.OfType(rows, journal.TypeInterruptRequested))

			end, err := svc.Execute(context.Background(), id, engine.ExecOptions{Backend: fake.New(a, host)})
			require.NoError(t, err)
			assert.Equal(t, store.RunCompleted, end.Status)
			assert.JSONEq(t, `["completed:done","completed:done","completed:done","completed:done","completed:done","completed:done"]`, string(end.Result))
			want := map[string]int{}
			for i := 1; i <= 6; i++ {
				want[fmt.Sprintf("fake-c%d-t1", i)] = 1
			}
			assert.Equal(t, want, host.Received(), "every turn sent once")
		})
	}
}

// TestResumeOfAScriptThatMakesFewerCallsDiverges: a resumed script that ends without making a
// call its journal has took another path: the run stops on a divergence, and nothing is written
// (the open call is not superseded), so the script it was recorded with still resumes it.
func TestResumeOfAScriptThatMakesFewerCallsDiverges(t *testing.T) {
	t.Parallel()
	for name, svc := range services(t) {
		t.Run(name, func(t *testing.T) {
			wfPath := filepath.Join(t.TempDir(), "wf.js")
			recorded := []byte(`import { agent } from "crw:agent";
export default async function main() {
  const a = await agent.call({ role: "explorer", node: "a", prompt: "first" });
  const b = await agent.call({ role: "explorer", node: "b", prompt: "second" });
  return [a.output, b.output];
}
`)
			require.NoError(t, os.WriteFile(wfPath, recorded, 0o644))
			a, err := fake.ParseAnswers("answers.json", []byte(`{"answers": [
  {"match": {"node": "a"}, "turns": [{"text": "A"}]},
  {"match": {"node": "b"}, "turns": [{"text": "B"}]}
]}`))
			require.NoError(t, err)
			host := fake.NewHost("")
			id, err := svc.Create(context.Background(), engine.CreateOptions{Workflow: wfPath})
			require.NoError(t, err)
			require.Error(t, stopWhenSent(t, svc, id, enginetest.GateAnswers(fake.New(a, host), enginetest.Nodes("b")), host, 2))
			before, err := svc.Rows(context.Background(), id)
			require.NoError(t, err)

			require.NoError(t, os.WriteFile(wfPath, []byte(`import { agent } from "crw:agent";
export default async function main() {
  const a = await agent.call({ role: "explorer", node: "a", prompt: "first" });
  return [a.output];
}
`), 0o644))
			_, err = svc.Execute(context.Background(), id, engine.ExecOptions{Backend: fake.New(a, host)})
			e, ok := errs.As(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, errs.RevisionConflict, e.Code)
			assert.Equal(t, "divergence", e.Reason())
			assert.Contains(t, e.Detail, `call 2 (c2, node "b"`)
			after, err := svc.Rows(context.Background(), id)
			require.NoError(t, err)
			assert.Empty(t, enginetest.OfType(after, journal.TypeSuperseded))
			assert.Empty(t, enginetest.OfType(after, journal.TypeEnded))
			assert.Equal(t, len(before)+1, len(after), "only the resume's started row: %v", enginetest.Types(after[len(before):]))

			require.NoError(t, os.WriteFile(wfPath, recorded, 0o644))
			end, err := svc.Execute(context.Background(), id, engine.ExecOptions{Backend: fake.New(a, host)})
			require.NoError(t, err)
			assert.Equal(t, store.RunCompleted, end.Status)
			assert.JSONEq(t, `["A","B"]`, string(end.Result))
			assert.Equal(t, map[string]int{"fake-c1-t1": 1, "fake-c2-t1": 1}, host.Received())
		})
	}
}

// TestTierStepReplaysAsRecorded: crw.tierStep answers from the outcomes the script has
// received, so a resume answers it as the recorded run did, even when the journal holds a
// recovery_hold the script had not yet seen at that point.
func TestTierStepReplaysAsRecorded(t *testing.T) {
	t.Parallel()
	for name, svc := range services(t) {
		t.Run(name, func(t *testing.T) {
			wfPath := filepath.Join(t.TempDir(), "wf.js")
			require.NoError(t, os.WriteFile(wfPath, []byte(`import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  const before = reason("x");
  const a = await agent.call({ role: "explorer", node: "x", prompt: "p" });
  const after = reason("x");
  const b = await agent.call({ role: "explorer", node: before === "recovery_hold" ? "other" : "y", prompt: "q" });
  return [before, a.status, after, b.output];
}
function reason(node) {
  try { crw.tierStep(node, { callId: "c0" }); return "none"; } catch (e) { return e.reason || e.code; }
}
`), 0o644))
			a, err := fake.ParseAnswers("answers.json", []byte(`{"answers": [
  {"match": {"node": "x"}, "turns": [{"lost": true}]},
  {"match": {"node": "y"}, "turns": [{"text": "Y"}]}
]}`))
			require.NoError(t, err)
			host := fake.NewHost("")
			id, err := svc.Create(context.Background(), engine.CreateOptions{Workflow: wfPath})
			require.NoError(t, err)
			require.Error(t, stopWhenSent(t, svc, id, enginetest.GateAnswers(fake.New(a, host), enginetest.Nodes("y")), host, 2))

			end, err := svc.Execute(context.Background(), id, engine.ExecOptions{Backend: fake.New(a, host)})
			require.NoError(t, err)
			assert.Equal(t, store.RunCompleted, end.Status)
			assert.JSONEq(t, `["invalid_request", "unknown", "recovery_hold", "Y"]`, string(end.Result))
		})
	}
}

// TestCancelWhileReplayingEndsOpenCallsCancelled: a run cancelled before its resumed script has
// made its calls again ends their open calls held cancelled, as a cancel does, not superseded
// as if the script had taken another path; its status counts them and is not replaying.
func TestCancelWhileReplayingEndsOpenCallsCancelled(t *testing.T) {
	t.Parallel()
	for name, svc := range services(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			wfPath := filepath.Join(t.TempDir(), "wf.js")
			require.NoError(t, os.WriteFile(wfPath, []byte(`import { agent } from "crw:agent";
export default async function main() {
  const a = await agent.call({ role: "explorer", node: "a", prompt: "first" });
  const b = await agent.call({ role: "explorer", node: "b", prompt: "second" });
  return [a.output, b.output];
}
`), 0o644))
			a, err := fake.ParseAnswers("answers.json", []byte(`{"answers": [
  {"match": {"node": "a"}, "turns": [{"text": "A"}]},
  {"match": {"node": "b"}, "turns": [{"text": "B"}]}
]}`))
			require.NoError(t, err)
			host := fake.NewHost("")
			id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wfPath})
			require.NoError(t, err)
			require.Error(t, stopWhenSent(t, svc, id, enginetest.GateAnswers(fake.New(a, host), enginetest.Nodes("b")), host, 2))
			require.NoError(t, svc.Store.RequestCancel(ctx, id))

			// b's answer is still held when the resume finds its turn on the host: only the
			// cancel can end it.
			end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: enginetest.GateAnswers(fake.New(a, host), enginetest.Nodes("b"))})
			require.NoError(t, err)
			assert.Equal(t, store.RunCancelled, end.Status)
			assert.False(t, end.Replaying)
			rows, err := svc.Rows(ctx, id)
			require.NoError(t, err)
			assert.Empty(t, enginetest.OfType(rows, journal.TypeSuperseded))
			b := enginetest.Terminal(t, rows, "c2")
			assert.Equal(t, journal.TypeHeld, b.Type)
			assert.Equal(t, "cancelled", b.Reason)
			assert.Equal(t, []string{"fake-c2-t1"}, b.TurnIDs)
			assert.Equal(t, 1, end.Calls["held"], "%v", end.Calls)
			st, err := svc.Status(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, 1, st.Calls["held"], "%v", st.Calls)
		})
	}
}

// TestStoppedProcessTellsNothingMore: after a stop, calls that never ran are not reported as
// ended to the run's watchers: the journal leaves them open, and a resume runs them.
func TestStoppedProcessTellsNothingMore(t *testing.T) {
	t.Parallel()
	for name, svc := range services(t) {
		t.Run(name, func(t *testing.T) {
			wfPath := filepath.Join(t.TempDir(), "wf.js")
			require.NoError(t, os.WriteFile(wfPath, []byte(`import { agent } from "crw:agent";
export default async function main() {
  return Promise.all(["n1", "n2", "n3"].map((node) => agent.call({ role: "explorer", node, prompt: node })));
}
`), 0o644))
			a, err := fake.ParseAnswers("answers.json", []byte(`{"answers": [{"turns": [{"text": "done"}]}]}`))
			require.NoError(t, err)
			host := fake.NewHost("")
			id, err := svc.Create(context.Background(), engine.CreateOptions{Workflow: wfPath, Pool: new(1)})
			require.NoError(t, err)
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			go func() {
				for len(host.Received()) == 0 {
					time.Sleep(time.Millisecond)
				}
				stop()
			}()
			var mu sync.Mutex
			var ended []string
			// The call sent is in flight until the stop, its answer held; the gate opens once
			// the process stopped, in case anything of it were still running.
			gated := enginetest.GateAnswers(fake.New(a, host), all)
			_, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: gated, OnEvent: func(e progress.Event) {
				if e.Kind == progress.EventCallEnded {
					mu.Lock()
					ended = append(ended, e.Call+" "+string(e.Status))
					mu.Unlock()
				}
			}})
			require.Error(t, err)
			gated.Open()
			time.Sleep(600 * time.Millisecond) // time for a late event, were there one
			mu.Lock()
			defer mu.Unlock()
			assert.Empty(t, ended)
		})
	}
}

// TestACancelStoredBeforeTheProcessWins: a cancel request stored while no process held the run
// ends it cancelled even when its script would end at once: the process honours it before the
// script runs, whatever its watcher's timing.
func TestACancelStoredBeforeTheProcessWins(t *testing.T) {
	t.Parallel()
	for name, svc := range services(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			wfPath := filepath.Join(t.TempDir(), "wf.js")
			require.NoError(t, os.WriteFile(wfPath, []byte(`export default async function main() { return "done"; }
`), 0o644))
			for i := range 20 {
				id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wfPath})
				require.NoError(t, err)
				require.NoError(t, svc.Store.RequestCancel(ctx, id))
				end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, fake.NewHost(""))})
				require.NoError(t, err)
				require.Equal(t, store.RunCancelled, end.Status, "run %d", i)
			}
		})
	}
}
