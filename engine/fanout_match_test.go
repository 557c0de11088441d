package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

// reviewRounds fans out three reviewers, each reviewing again until it approves (two rounds at
// most), then asks one more reviewer call to sum up. A reviewer's second round is issued when
// its first ends, so the second rounds are issued in the order the first rounds finish.
const reviewRounds = `import { agent } from "crw:agent";
const verdict = { type: "object", properties: { verdict: { type: "string", enum: ["approve", "changes"] }, by: { type: "string" } },
  required: ["verdict", "by"], additionalProperties: false };
async function review(lens) {
  const seen = [];
  for (let round = 1; round <= 2; round++) {
    const r = await agent.call({ role: "reviewer", node: lens, prompt: "Review the change for " + lens + ", round " + round, schema: verdict });
    seen.push(r.output.verdict + " " + r.output.by);
    if (r.output.verdict === "approve") break;
  }
  return [lens, seen];
}
export default async function main() {
  const rounds = Object.fromEntries(await Promise.all(["security", "style", "tests"].map(review)));
  const last = await agent.call({ role: "reviewer", node: "sum-up", prompt: "Sum up the reviews", schema: verdict });
  return { rounds, last: last.output.by };
}`

// reviewRoundsAnswers scripts reviewRounds with every match field but call; unit scales the
// delays (ms). Round 1 finishes tests, then style, then security: the reverse of issue order.
func reviewRoundsAnswers(unit int) string {
	return fmt.Sprintf(`{"answers": [
	{"match": {"role": "reviewer", "role_call": 1}, "turns": [{"json": {"verdict": "changes", "by": "role_call 1"}, "delay_ms": %[3]d}]},
	{"match": {"prompt": "for style, round 1"}, "turns": [{"json": {"verdict": "changes", "by": "prompt"}, "delay_ms": %[2]d}]},
	{"match": {"prompt_regex": "^Review the change for tests, round 1$"}, "turns": [{"json": {"verdict": "changes", "by": "prompt_regex"}, "delay_ms": 1}]},
	{"match": {"node": "security", "node_call": 2}, "turns": [{"json": {"verdict": "approve", "by": "security node_call 2"}, "delay_ms": 1}]},
	{"match": {"node": "tests", "node_call": 2}, "turns": [{"json": {"verdict": "approve", "by": "tests node_call 2"}, "delay_ms": %[2]d}]},
	{"match": {"node_call": 2}, "turns": [{"json": {"verdict": "approve", "by": "node_call 2"}, "delay_ms": %[1]d}]},
	{"match": {"role": "reviewer", "role_call": 7}, "turns": [{"json": {"verdict": "approve", "by": "role_call 7"}}]},
	{"match": {}, "turns": [{"json": {"verdict": "approve", "by": "no entry"}}]}
]}`, unit, 2*unit, 4*unit)
}

const reviewRoundsResult = `{"rounds": {
	"security": ["changes role_call 1", "approve security node_call 2"],
	"style": ["changes prompt", "approve node_call 2"],
	"tests": ["changes prompt_regex", "approve tests node_call 2"]},
  "last": "role_call 7"}`

// TestFanOutAnswersByPromptAndNthCall: a fan-out's answers are picked by prompt, prompt_regex,
// node_call and role_call, whatever order its calls finish in: the second rounds are issued
// (and numbered by call) in the order the first rounds finished, yet each reviewer's second
// round gets its own answer.
func TestFanOutAnswersByPromptAndNthCall(t *testing.T) {
	t.Parallel()
	st, rows := enginetest.Run(t, reviewRounds, reviewRoundsAnswers(50))
	require.Equal(t, store.RunCompleted, st.Status, "%+v", st.Error)
	assert.JSONEq(t, reviewRoundsResult, string(st.Result))

	// The calls in the order the script issued them: the second rounds follow the finish
	// order of the first (tests after 1 ms, style after 100, security after 200).
	var issued []string
	for _, r := range enginetest.OfType(rows, journal.TypePrepared) {
		issued = append(issued, fmt.Sprintf("%d %s: %s", r.Index, r.Node, r.Prompt))
	}
	assert.Equal(t, []string{
		"1 security: Review the change for security, round 1",
		"2 style: Review the change for style, round 1",
		"3 tests: Review the change for tests, round 1",
		"4 tests: Review the change for tests, round 2",
		"5 style: Review the change for style, round 2",
		"6 security: Review the change for security, round 2",
		"7 sum-up: Sum up the reviews",
	}, issued)
}

// TestFanOutNumbersTheSameAfterACrash: a run of the fan-out that loses its process after any
// one of its commits, and is resumed by a new process (a new fake backend on the host that
// outlived it), gives every call the node_call and role_call an uninterrupted run gives it: a
// resume counts the calls it replays from the journal too.
func TestFanOutNumbersTheSameAfterACrash(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*enginetest.Timeout)
	defer cancel()
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(reviewRounds), 0o644))
	answers, err := fake.ParseAnswers("answers.json", []byte(reviewRoundsAnswers(10)))
	require.NoError(t, err)

	crashed := 0
	for n := uint64(1); ; n++ {
		require.Less(t, n, uint64(300), "the run never ended by itself")
		st := mem.New()
		svc := enginetest.Service(st)
		id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
		require.NoError(t, err)
		host := fake.NewHost("")
		st.CrashAfterCommit(id, n)
		end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(answers, host)})
		msg := fmt.Sprintf("crash after commit %d", n)
		if err == nil {
			// Past the last commit: the run ended by itself.
			require.Equal(t, store.RunCompleted, end.Status, "%s: %+v", msg, end.Error)
			assert.JSONEq(t, reviewRoundsResult, string(end.Result), msg)
			break
		}
		require.True(t, errors.Is(err, store.ErrLeaseLost), "%s: %v", msg, err)
		crashed++
		// Every other time the resume loses its process too, a commit or two in.
		if n%2 == 0 {
			st.CrashAfterCommit(id, 1+n%3)
		}
		for resumes := 0; end == nil; resumes++ {
			require.Less(t, resumes, 5, "%s: the run did not end", msg)
			end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(answers, host)})
			require.True(t, err == nil || errors.Is(err, store.ErrLeaseLost), "%s: %v", msg, err)
		}
		require.Equal(t, store.RunCompleted, end.Status, "%s: %+v", msg, end.Error)
		assert.JSONEq(t, reviewRoundsResult, string(end.Result), msg)
		rows, err := svc.Rows(ctx, id)
		require.NoError(t, err)
		enginetest.CheckJournal(t, rows)
		enginetest.CheckSends(t, host.Received())
	}
	// A run makes 8 commits at the fewest, when each round's calls share theirs (as under load):
	// the started row; the first round's prepared rows, then their ends; the second round's
	// likewise; the sum-up's prepared row, then its end; the ended row. Each is waited for
	// before the next is asked for.
	assert.GreaterOrEqual(t, crashed, 7, "a crash after each of the run's commits but its last")
}
