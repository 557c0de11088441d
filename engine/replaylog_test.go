package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/engine/runner/progress"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/store"
)

// TestALineOnARecordedResultIsNotPrintedAgain: a fan-out paused by a rate limit while one of
// its calls had completed, then resumed: the resumed process prints what the script does with
// the calls it runs, and not again the line the first process printed on the call it saw
// complete, although the script takes that result again after it caught up with the record.
func TestALineOnARecordedResultIsNotPrintedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  crw.log("begin");
  const rs = await Promise.all(["a", "b", "c"].map((n) =>
    agent.call({ role: "explorer", node: n, prompt: "look " + n }).then((r) => { crw.log("done " + n + " " + r.status); return r; })));
  crw.log("middle");
  const last = await agent.call({ role: "explorer", node: "z", prompt: "last" });
  crw.log("end " + last.status);
  return rs.map((r) => r.status);
}
`), 0o644))
	answers := func(text string) engine.ExecOptions {
		a, err := fake.ParseAnswers("answers.json", []byte(text))
		require.NoError(t, err)
		return engine.ExecOptions{Backend: fake.New(a, nil)}
	}
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	var first, second bytes.Buffer
	// a completes; then b meets the limit (its turn held until a has ended), which pauses
	// the run; c, still under way, is held.
	x := answers(`{"answers": [{"match": {"node": "a"}, "turns": [{"text": "ok"}]},
  {"match": {"node": "b"}, "turns": [{"error": "usageLimitExceeded"}]},
  {"match": {}, "turns": [{"text": "ok", "delay_ms": 600000}]}]}`)
	gate := enginetest.Gate(x.Backend, func(c backend.Call) bool { return c.Node == "b" })
	x.Backend = gate
	x.OnEvent = func(e progress.Event) {
		if e.Kind == progress.EventCallEnded && e.Node == "a" {
			gate.Open()
		}
	}
	x.Console = &first
	end, err := svc.Execute(ctx, id, x)
	require.NoError(t, err)
	require.Equal(t, store.RunPaused, end.Status)
	require.Contains(t, first.String(), "done a completed\n", "the first process saw a complete")

	x = answers(`{"answers": []}`)
	x.Console = &second
	end, err = svc.Execute(ctx, id, x)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status)
	lines := strings.Split(strings.TrimSpace(second.String()), "\n")
	require.Len(t, lines, 4, "%q", second.String())
	ran := lines[:2]
	sort.Strings(ran)
	assert.Equal(t, []string{"done b completed", "done c completed"}, ran)
	assert.Equal(t, []string{"middle", "end completed"}, lines[2:])
}

// TestALineAfterAnAnswerGivenBetweenProcessesIsPrinted: a run paused by a rate limit while the
// first process, with the held result in hand, went on to issue later calls (held at once);
// the resume took another path and ended waiting for a verdict (crw.effect) or a decision
// (crw.decide); the answer given while no process held the run reaches the script of the next
// resume from the journal, and what the script logs on it is printed: no process printed it
// before, and the calls the first process issued on its way past the pause owe nothing.
func TestALineAfterAnAnswerGivenBetweenProcessesIsPrinted(t *testing.T) {
	t.Parallel()
	for _, wait := range []string{"effect", "decide"} {
		t.Run(wait, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			svc, _ := enginetest.LocalService(t)
			waitFor := `const v = await crw.effect(r); crw.log("after verdict " + v.verdict);`
			if wait == "decide" {
				waitFor = `const v = await crw.decide({ id: "go", question: "go?", schema: { type: "object", properties: { go: { type: "boolean" } }, required: ["go"], additionalProperties: false } }); crw.log("after answer " + v.go);`
			}
			wf := filepath.Join(t.TempDir(), "wf.js")
			require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  const a = await agent.call({ role: "explorer", node: "a", prompt: "look" });
  const r = await agent.call({ role: "explorer", node: "t", prompt: "triage after " + a.status });
  if (a.status === "completed") { `+waitFor+` }
  const u = await agent.call({ role: "explorer", node: "u", prompt: "last" });
  crw.log("end " + u.status);
  return u.status;
}
`), 0o644))
			answers := func(text string) engine.ExecOptions {
				a, err := fake.ParseAnswers("answers.json", []byte(text))
				require.NoError(t, err)
				return engine.ExecOptions{Backend: fake.New(a, nil)}
			}
			id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
			require.NoError(t, err)
			// a meets the limit; t and u, issued with its held result, are held at once.
			x := answers(`{"answers": [{"match": {"node": "a"}, "turns": [{"error": "rateLimitExceeded"}]}]}`)
			end, err := svc.Execute(ctx, id, x)
			require.NoError(t, err)
			require.Equal(t, store.RunPaused, end.Status)

			// a runs again and completes, t is another call now (c4), and the script waits.
			lost := `{"answers": [{"match": {"node": "t"}, "turns": [{"lost": true}]}]}`
			if wait == "decide" {
				lost = `{"answers": []}`
			}
			end, err = svc.Execute(ctx, id, answers(lost))
			require.NoError(t, err)
			require.Equal(t, store.RunWaitingDecision, end.Status)
			if wait == "effect" {
				_, err = svc.Recover(ctx, id, "c4", decisions.Verdict{Verdict: decisions.VerdictNotApplied}, "t", false)
			} else {
				_, err = svc.Answer(ctx, id, "go", json.RawMessage(`{"go": true}`), "t", false)
			}
			require.NoError(t, err)

			var third bytes.Buffer
			x = answers(`{"answers": []}`)
			x.Console = &third
			end, err = svc.Execute(ctx, id, x)
			require.NoError(t, err)
			require.Equal(t, store.RunCompleted, end.Status)
			after := "after verdict not_applied"
			if wait == "decide" {
				after = "after answer true"
			}
			assert.Equal(t, after+"\nend completed\n", third.String())
		})
	}
}
