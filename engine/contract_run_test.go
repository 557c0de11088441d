package engine_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/runner/progress"
	"github.com/crw-dev/crw/engine/runspec"
	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

// maxInFlight replays the journal: a call is in flight from its thread_started row to its
// terminal row.
func maxInFlight(rows []journal.Row) int {
	open := map[string]bool{}
	most := 0
	for _, r := range rows {
		switch {
		case r.Type == journal.TypeThreadStarted:
			open[r.Call] = true
		case journal.IsTerminal(r.Type):
			delete(open, r.Call)
		}
		most = max(most, len(open))
	}
	return most
}

// TestContractConcurrency: calls issued together run at most pool at a time, and reach the
// script in the order the journal recorded their completions.
func TestContractConcurrency(t *testing.T) {
	t.Parallel()

	t.Run("pool", func(t *testing.T) {
		t.Parallel()
		// Hundreds of milliseconds apart, so that the order of completions is the delays'
		// even on a loaded machine, where sending a turn can take tens of milliseconds. The
		// answers wait until the first three turns were sent: the pool is full before any ends.
		delays := []int{900, 400, 600, 100, 700, 300, 400, 100}
		var entries []string
		for i, d := range delays {
			entries = append(entries, fmt.Sprintf(`{"match": {"call": %d}, "turns": [{"json": {"n": %d}, "delay_ms": %d}]}`, i+1, i+1, d))
		}
		res, rows := enginetest.Run(t, wf(`
const seen = [];
const calls = [];
for (let i = 1; i <= 8; i++) {
  calls.push(agent.call({ role: "critic", prompt: "task " + i, schema: S, node: "n" + i }).then((r) => { seen.push(r.callId); return r; }));
}
const all = await Promise.all(calls);
return { seen, ids: all.map((r) => r.callId), outputs: all.map((r) => r.output.n), statuses: all.map((r) => r.status) };`),
			answers(entries...), enginetest.Pool(3), enginetest.Wrap(func(b backend.Backend) backend.Backend {
				return enginetest.GateAnswers(b, func(backend.Call) bool { return true }).OpenAfter(3)
			}))
		require.Equal(t, store.RunCompleted, res.Status)
		var got struct {
			Seen, IDs, Statuses []string
			Outputs             []int
		}
		enginetest.Decode(t, res, &got)
		assert.Equal(t, []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"}, got.IDs, "Promise.all keeps issue order")
		assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8}, got.Outputs)
		assert.Equal(t, []string{"completed", "completed", "completed", "completed", "completed", "completed", "completed", "completed"}, got.Statuses)

		var journalOrder []string
		for _, r := range enginetest.Terminals(rows) {
			journalOrder = append(journalOrder, r.Call)
		}
		assert.Equal(t, journalOrder, got.Seen, "completions reach the script in journal order")
		assert.NotEqual(t, got.IDs, got.Seen, "the delays reorder the completions")

		assert.Equal(t, 3, maxInFlight(rows), "never more than the pool in flight, and the pool is used")
		assert.Equal(t, 3, rows[0].Pool)
		// The first three calls start before any ends; a later one only after one has ended.
		firstEnd := enginetest.Terminals(rows)[0].Seq
		for _, r := range enginetest.OfType(rows, journal.TypeThreadStarted) {
			var idx int
			_, err := fmt.Sscanf(r.Call, "c%d", &idx)
			require.NoError(t, err)
			if idx <= 3 {
				assert.Less(t, r.Seq, firstEnd, r.Call)
			} else {
				assert.Greater(t, r.Seq, firstEnd, r.Call)
			}
		}
		// Wall-clock: the ended calls' [start, end] intervals never overlap more than three deep.
		type span struct{ start, end int64 }
		spans := map[string]*span{}
		for _, r := range rows {
			switch {
			case r.Type == journal.TypeTurnStarted:
				spans[r.Call] = &span{start: r.At.UnixNano()}
			case journal.IsTerminal(r.Type):
				spans[r.Call].end = r.At.UnixNano()
			}
		}
		for id, s := range spans {
			overlapping := 0
			for _, o := range spans {
				if o.start <= s.start && s.start < o.end {
					overlapping++
				}
			}
			assert.LessOrEqual(t, overlapping, 3, "calls running when %s started", id)
		}
	})

	t.Run("default pool", func(t *testing.T) {
		t.Parallel()
		var entries []string
		for i := 1; i <= 6; i++ {
			entries = append(entries, fmt.Sprintf(`{"match": {"call": %d}, "turns": [{"json": {"n": %d}}]}`, i, i))
		}
		// The answers wait until four turns were sent: four calls are in flight at once.
		res, rows := enginetest.Run(t, wf(`
const calls = [];
for (let i = 1; i <= 6; i++) calls.push(agent.call({ role: "critic", prompt: "t" + i, schema: S }));
return (await Promise.all(calls)).length;`), answers(entries...), enginetest.Wrap(func(b backend.Backend) backend.Backend {
			return enginetest.GateAnswers(b, func(backend.Call) bool { return true }).OpenAfter(4)
		}))
		require.Equal(t, store.RunCompleted, res.Status)
		assert.JSONEq(t, `6`, string(res.Result))
		assert.Equal(t, 4, maxInFlight(rows))
	})

	t.Run("race", func(t *testing.T) {
		t.Parallel()
		// The slow and middle calls' answers are held until the fast one's end was given to
		// the script (its call_ended event is sent then).
		var held *enginetest.Gated
		res, rows := enginetest.Run(t, wf(`
const order = [];
const track = (p) => p.then((r) => { order.push(r.callId); return r; });
const winner = await Promise.race([
  track(agent.call({ role: "reviewer", prompt: "slow", schema: S })),
  track(agent.call({ role: "reviewer", prompt: "fast", schema: S })),
  track(agent.call({ role: "reviewer", prompt: "middle", schema: S })),
]);
const seenAtWin = order.slice();
return { winner, seenAtWin };`),
			answers(
				`{"match": {"call": 1}, "turns": [{"json": {"n": 1}}]}`,
				`{"match": {"call": 2}, "turns": [{"json": {"n": 2}}]}`,
				`{"match": {"call": 3}, "turns": [{"json": {"n": 3}}]}`,
			),
			enginetest.Wrap(func(b backend.Backend) backend.Backend {
				held = enginetest.GateAnswers(b, func(c backend.Call) bool { return c.Index != 2 })
				return held
			}),
			enginetest.OnEvent(func(e progress.Event) {
				if e.Kind == progress.EventCallEnded && e.Call == "c2" {
					held.Open()
				}
			}))
		require.Equal(t, store.RunCompleted, res.Status)
		winner := call(t, res, rows, "winner")
		first := enginetest.Terminals(rows)[0]
		assert.Equal(t, first.Call, winner.CallID, "Promise.race takes the journal's first completion")
		assert.Equal(t, "c2", winner.CallID)
		assert.JSONEq(t, `{"n": 2}`, string(winner.Output))
		assert.JSONEq(t, `["c2"]`, string(results(t, res)["seenAtWin"]))
		// The losers still end, and the run waited for them.
		assert.Len(t, enginetest.Terminals(rows), 3)
		assert.Equal(t, store.Counts{"completed": 3}, res.Calls)
	})
}

// TestContractAnswersMatching: a call takes the first entry whose match fields all equal its
// own; its turn k takes turns[k-1]; anything unscripted is synthesized.
func TestContractAnswersMatching(t *testing.T) {
	t.Parallel()
	script := wf(`
return {
  plan: await agent.call({ role: "architect", prompt: "p", schema: S, node: "plan" }),
  build: await agent.call({ role: "explorer", prompt: "p", schema: S, node: "build" }),
  review: await agent.call({ role: "reviewer", prompt: "p", schema: S, node: "review" }),
  fix: await agent.call({ role: "explorer", prompt: "p", schema: S, node: "fix" }),
  note: await agent.call({ role: "critic", prompt: "p", node: "note" }),
};`)
	synth, err := schema.Synthesize([]byte(schemaS))
	require.NoError(t, err)
	syn := string(synth)
	tests := []struct {
		name    string
		answers string
		want    map[string]string // key → output JSON
	}{
		{"nothing scripted", "", map[string]string{"plan": syn, "build": syn, "review": syn, "fix": syn, "note": `"ok"`}},
		{"no entries", answers(), map[string]string{"plan": syn, "build": syn, "review": syn, "fix": syn, "note": `"ok"`}},
		{"by role", answers(`{"match": {"role": "explorer"}, "turns": [{"json": {"n": 1}}]}`),
			map[string]string{"plan": syn, "build": `{"n":1}`, "review": syn, "fix": `{"n":1}`, "note": `"ok"`}},
		{"by node", answers(`{"match": {"node": "fix"}, "turns": [{"json": {"n": 2}}]}`),
			map[string]string{"plan": syn, "build": syn, "review": syn, "fix": `{"n":2}`, "note": `"ok"`}},
		{"by call index", answers(`{"match": {"call": 3}, "turns": [{"json": {"n": 3}}]}`, `{"match": {"call": 5}, "turns": [{"text": "noted"}]}`),
			map[string]string{"plan": syn, "build": syn, "review": `{"n":3}`, "fix": syn, "note": `"noted"`}},
		{"empty match", answers(`{"match": {}, "turns": [{"json": {"n": 4}}]}`),
			map[string]string{"plan": `{"n":4}`, "build": `{"n":4}`, "review": `{"n":4}`, "fix": `{"n":4}`, "note": `"{\"n\":4}"`}},
		{"no match field", answers(`{"turns": [{"json": {"n": 5}}]}`),
			map[string]string{"plan": `{"n":5}`, "build": `{"n":5}`, "review": `{"n":5}`, "fix": `{"n":5}`, "note": `"{\"n\":5}"`}},
		{"every field must match", answers(`{"match": {"role": "explorer", "node": "fix", "call": 4}, "turns": [{"json": {"n": 6}}]}`, `{"match": {"role": "explorer", "node": "plan"}, "turns": [{"json": {"n": 7}}]}`),
			map[string]string{"plan": syn, "build": syn, "review": syn, "fix": `{"n":6}`, "note": `"ok"`}},
		{"first entry wins", answers(`{"match": {"role": "explorer"}, "turns": [{"json": {"n": 8}}]}`, `{"match": {"node": "build"}, "turns": [{"json": {"n": 9}}]}`, `{"match": {}, "turns": [{"json": {"n": 10}}]}`),
			map[string]string{"plan": `{"n":10}`, "build": `{"n":8}`, "review": `{"n":10}`, "fix": `{"n":8}`, "note": `"{\"n\":10}"`}},
		{"first entry wins even when it has no turn", answers(`{"match": {"node": "plan"}, "turns": []}`, `{"match": {}, "turns": [{"json": {"n": 11}}]}`),
			map[string]string{"plan": syn, "build": `{"n":11}`, "review": `{"n":11}`, "fix": `{"n":11}`, "note": `"{\"n\":11}"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, rows := enginetest.Run(t, script, tc.answers)
			require.Equal(t, store.RunCompleted, res.Status)
			for key, want := range tc.want {
				cr := call(t, res, rows, key)
				assert.Equal(t, journal.CallStatus("completed"), cr.Status, key)
				if strings.HasPrefix(want, `"{`) {
					// A text call answered by a json turn gets the value as text.
					var w, g string
					require.NoError(t, json.Unmarshal([]byte(want), &w))
					require.NoError(t, json.Unmarshal(cr.Output, &g), key)
					assert.JSONEq(t, w, g, key)
				} else {
					assert.JSONEq(t, want, string(cr.Output), key)
				}
				assert.False(t, cr.Meta.RepairUsed, key)
			}
		})
	}

	t.Run("turn past the list", func(t *testing.T) {
		t.Parallel()
		// The repair turn is not scripted: its answer is synthesized, valid and the same every run.
		const richSchema = `{"type": "object", "additionalProperties": false, "required": ["title", "tags", "ok"], "properties": {"title": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 2}, "ok": {"type": "boolean"}}}`
		script := wf(`return { r: await agent.call({ role: "critic", prompt: "p", schema: ` + richSchema + ` }) };`)
		want, err := schema.Synthesize([]byte(richSchema))
		require.NoError(t, err)
		var outputs []string
		for range 2 {
			res, rows := enginetest.Run(t, script, answers(`{"match": {}, "turns": [{"text": "not yet"}]}`))
			cr := call(t, res, rows, "r")
			assert.Equal(t, journal.CallStatus("completed"), cr.Status)
			assert.True(t, cr.Meta.RepairUsed)
			assert.Equal(t, 2, enginetest.Count(rows, cr.CallID, journal.TypeTurnStarted))
			outputs = append(outputs, string(cr.Output))
		}
		assert.JSONEq(t, string(want), outputs[0])
		assert.Contains(t, outputs[0], `"tags":["a","a"]`, "minItems is met")
		assert.Equal(t, outputs[0], outputs[1], "synthesized answers are deterministic")
	})

	t.Run("synthesized answers validate", func(t *testing.T) {
		t.Parallel()
		res, rows := enginetest.Run(t, `
import { agent } from "crw:agent";
import * as schemas from "crw:lib/schemas";
export default async function main() {
  const out = {};
  for (const [name, schema] of Object.entries(schemas)) {
    out[name] = await agent.call({ role: "architect", prompt: name, schema });
  }
  return out;
}`, "")
		require.Equal(t, store.RunCompleted, res.Status)
		m := results(t, res)
		require.NotEmpty(t, m)
		for key := range m {
			cr := call(t, res, rows, key)
			assert.Equal(t, journal.CallStatus("completed"), cr.Status, key)
			assert.False(t, cr.Meta.RepairUsed, "%s: the synthesized answer is valid at once", key)
		}
	})
}

// TestContractAnswersFile: a malformed answers file names the field that is wrong.
func TestContractAnswersFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, data, field, says string
	}{
		{"not JSON", `{"answers": [`, "", "not a JSON object"},
		{"not an object", `[]`, "", "not a JSON object"},
		{"text after", `{"answers": []} {}`, "", "text after"},
		{"missing answers", `{}`, "answers", "missing"},
		{"answers not a list", `{"answers": {}}`, "answers", "array"},
		{"answers null", `{"answers": null}`, "answers", "array"},
		{"unknown top field", `{"answers": [], "extra": 1}`, "extra", "unknown field"},
		{"entry not an object", `{"answers": [1]}`, "answers[0]", ""},
		{"unknown entry field", `{"answers": [{"turns": [], "when": {}}]}`, "answers[0]", "when"},
		{"unknown match field", `{"answers": [{"match": {"rol": "x"}, "turns": []}]}`, "answers[0].match", "rol"},
		{"match role type", `{"answers": [{"match": {"role": 1}, "turns": []}]}`, "answers[0].match.role", "must be a string, not a JSON number"},
		{"match not an object", `{"answers": [{"match": [], "turns": []}]}`, "answers[0].match", "must be an object, not a JSON array"},
		{"match call zero", `{"answers": [{"match": {"call": 0}, "turns": []}]}`, "answers[0].match.call", "1 or more"},
		{"match call fraction", `{"answers": [{"match": {"call": 1.5}, "turns": []}]}`, "answers[0].match.call", "must be a whole number, not a JSON number 1.5"},
		{"match node_call zero", `{"answers": [{"match": {"node_call": 0}, "turns": []}]}`, "answers[0].match.node_call", "1 or more"},
		{"match role_call negative", `{"answers": [{"match": {"role_call": -2}, "turns": []}]}`, "answers[0].match.role_call", "1 or more"},
		{"match bad prompt_regex", `{"answers": [{"turns": []}, {"match": {"prompt_regex": "(a"}, "turns": []}]}`, "answers[1].match.prompt_regex", "not a Go regular expression"},
		{"missing turns", `{"answers": [{"match": {}}]}`, "answers[0].turns", "missing"},
		{"turn with two kinds", `{"answers": [{"turns": [{"json": 1}]}, {"turns": [{"json": 1}, {"json": 1, "text": "x"}]}]}`, "answers[1].turns[1]", "exactly one"},
		{"turn with no kind", `{"answers": [{"turns": [{"delay_ms": 5}]}]}`, "answers[0].turns[0]", "exactly one"},
		{"lost false", `{"answers": [{"turns": [{"lost": false}]}]}`, "answers[0].turns[0]", "exactly one"},
		{"unknown turn field", `{"answers": [{"turns": [{"json": 1, "delay": 5}]}]}`, "answers[0].turns[0]", "delay"},
		{"text type", `{"answers": [{"turns": [{"text": 5}]}]}`, "answers[0].turns[0]", ""},
		{"negative delay", `{"answers": [{"turns": [{"json": 1, "delay_ms": -1}]}]}`, "answers[0].turns[0].delay_ms", "negative"},
		{"negative tokens", `{"answers": [{"turns": [{"json": 1, "tokens": {"input": -1, "output": 2}}]}]}`, "answers[0].turns[0].tokens", "negative"},
		{"unknown token field", `{"answers": [{"turns": [{"json": 1, "tokens": {"in": 1}}]}]}`, "answers[0].turns[0]", "in"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := fake.ParseAnswers("answers.json", []byte(tc.data))
			require.Error(t, err)
			var fe *fake.FileError
			require.True(t, errors.As(err, &fe), "%T %v", err, err)
			assert.Equal(t, "answers.json", fe.File)
			assert.Equal(t, tc.field, fe.Field)
			assert.True(t, strings.HasPrefix(err.Error(), "answers.json: "), err.Error())
			if tc.field != "" {
				assert.Contains(t, err.Error(), "answers.json: "+tc.field+": ")
			}
			assert.Contains(t, err.Error(), tc.says)
		})
	}

	t.Run("well formed", func(t *testing.T) {
		t.Parallel()
		a, err := fake.ParseAnswers("ok.json", []byte(`{"answers": [
			{"match": {"role": "architect", "node": "plan", "call": 1}, "turns": [{"json": {"n": 1}, "delay_ms": 5, "tokens": {"input": 3, "output": 4}}, {"text": "t"}, {"error": "other"}, {"lost": true}]},
			{"turns": []}
		]}`))
		require.NoError(t, err)
		require.Len(t, a.Entries, 2)
		assert.Len(t, a.Entries[0].Turns, 4)
	})

	t.Run("unreadable", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "missing.json")
		_, err := fake.LoadAnswers(path)
		var fe *fake.FileError
		require.True(t, errors.As(err, &fe))
		assert.Contains(t, err.Error(), path)
	})
}

// TestContractWorkflowThrows: a workflow that throws fails the run with its message and a
// stack naming the original file and line.
func TestContractWorkflowThrows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		opts    []enginetest.Option
		script  string
		message string
		at      string // file:line the stack must name
	}{
		{
			name: "js",
			script: `import { agent } from "crw:agent";

function check(r) {
  throw new Error("the plan is empty: " + r.status);
}

export default async function main() {
  const r = await agent.call({ role: "architect", prompt: "plan" });
  check(r);
}
`,
			message: "the plan is empty: completed", at: "wf.js:4",
		},
		{
			name: "typescript",
			opts: []enginetest.Option{enginetest.Name("wf.ts")},
			script: `import { agent } from "crw:agent";

interface Plan {
  steps: string[];
}
type Verdict = "ok" | "bad";

function judge(p: Plan): Verdict {
  if (p.steps.length === 0) throw new TypeError("no steps");
  return "ok";
}

export default async function main(): Promise<Verdict> {
  await agent.call({ role: "architect", prompt: "plan" });
  return judge({ steps: [] });
}
`,
			message: "TypeError: no steps", at: "wf.ts:9",
		},
		{
			name: "helper module",
			opts: []enginetest.Option{enginetest.File("steps/helper.js", `
export function fail(code) {
  const e = new Error("helper failed");
  e.code = code;
  throw e;
}
`)},
			script: `import { fail } from "./steps/helper.js";
export default async function main() { fail("mine"); }
`,
			message: "helper failed (its code: mine)", at: "steps/helper.js:3",
		},
		{
			name:    "rejected call result use",
			script:  wf(`const r = await agent.call({ role: "architect", prompt: "p", schema: S }); return r.output.missing.deeper;`),
			message: "TypeError", at: "wf.js:6",
		},
		{
			name:    "not JSON result",
			script:  wf(`const o = {}; o.self = o; return o;`),
			message: "circular",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, rows := enginetest.Run(t, tc.script, "", tc.opts...)
			require.Equal(t, store.RunFailed, res.Status, "result %s", res.Result)
			require.NotNil(t, res.Error)
			// An error of the workflow's own: crw's code and its fixed message, what was
			// thrown in the detail, and a diagnostic with a next action.
			assert.Contains(t, res.Error.Detail, tc.message)
			assert.Equal(t, "workflow_failed", res.Error.Code)
			assert.Equal(t, "The Workflow threw an error and the Run did not complete.", res.Error.Message)
			require.NotNil(t, res.Error.Diagnostic)
			assert.Equal(t, "workflow/threw/stopped", res.Error.Diagnostic.Phase+"/"+res.Error.Diagnostic.Reason+"/"+res.Error.Diagnostic.Disposition)
			assert.Contains(t, res.Error.Diagnostic.NextAction, "fix the workflow or its input")
			if tc.at != "" {
				assert.Contains(t, res.Error.Stack, filepath.FromSlash(tc.at)+":", "the stack names the original file and line")
			}
			assert.JSONEq(t, "null", string(res.Result), "a run that failed has no result")
			ended := rows[len(rows)-1]
			assert.Equal(t, journal.TypeEnded, ended.Type)
			assert.Equal(t, store.RunFailed, store.RunStatus(ended.Status))
			assert.Equal(t, res.Error, ended.Error)
		})
	}

	t.Run("calls in flight", func(t *testing.T) {
		t.Parallel()
		res, rows := enginetest.Run(t, wf(`
agent.call({ role: "critic", prompt: "slow", schema: S });
await agent.call({ role: "architect", prompt: "fast", schema: S });
throw new Error("stop here");`),
			answers(`{"match": {"call": 1}, "turns": [{"json": {"n": 1}, "delay_ms": 200}]}`))
		require.Equal(t, store.RunFailed, res.Status)
		assert.Contains(t, res.Error.Detail, "stop here")
		// Every call the run started has its terminal row before the run's ended row.
		assert.Len(t, enginetest.Terminals(rows), 2)
		assert.Equal(t, journal.TypeEnded, rows[len(rows)-1].Type)
	})
}

// TestContractLoadFailure: a workflow that does not load is invalid input, and leaves no run
// behind.
func TestContractLoadFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string
		opts   []enginetest.Option
		names  []string // words the error's detail must contain
	}{
		{"syntax error", "import { agent } from \"crw:agent\";\nexport default async function main() {\n  const x = ;\n}\n", nil, []string{"wf.js:3"}},
		{"typescript syntax error", "export default function main(): number {\n  return 1 +;\n}\n", []enginetest.Option{enginetest.Name("wf.ts")}, []string{"wf.ts:2"}},
		{"unknown crw module", "import x from \"crw:nothing\";\nexport default () => x;\n", nil, []string{"crw:nothing", "wf.js"}},
		{"unknown lib module", "import x from \"crw:lib/nothing\";\nexport default () => x;\n", nil, []string{"crw:lib/nothing"}},
		{"missing relative file", "import x from \"./nothing.js\";\nexport default () => x;\n", nil, []string{"./nothing.js"}},
		{"outside the folder", "import x from \"../outside.js\";\nexport default () => x;\n", nil, []string{"../outside.js"}},
		{"non-strict lib schema", "import { loose } from \"crw:lib/schemas/extra\";\nexport default () => loose;\n",
			[]enginetest.Option{enginetest.File("lib/schemas/extra.js", "export const tight = { type: \"object\", additionalProperties: false, required: [], properties: {} };\nexport const loose = { type: \"object\", properties: { a: { type: \"string\" } } };\n")},
			[]string{"crw:lib/schemas/extra", `"loose"`}},
		{"non-strict lib schema through a helper", "import { pick } from \"./helper.js\";\nexport default () => pick;\n",
			[]enginetest.Option{
				enginetest.File("helper.js", "import * as s from \"crw:lib/schemas/extra\";\nexport const pick = s.open;\n"),
				enginetest.File("lib/schemas/extra.ts", "export const open = { type: \"object\", additionalProperties: false, required: [\"a\"], properties: { a: { oneOf: [{ type: \"string\" }] } } };\n"),
			},
			[]string{"crw:lib/schemas/extra", `"open"`, "/properties/a"}},
		{"throws while loading", "throw new Error(\"not today\");\nexport default () => 1;\n", nil, []string{"not today"}},
		{"no default export", "export const main = () => 1;\n", nil, []string{"default export"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.name == "outside the folder" {
				// A file that does exist, just outside the workflow's folder.
				tc.opts = append(tc.opts, enginetest.Configure(func(o *engine.CreateOptions) {
					require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(filepath.Dir(o.Workflow)), "outside.js"), []byte("export default 1;\n"), 0o644))
				}))
			}
			out := enginetest.Start(t, tc.script, "", tc.opts...)
			require.Error(t, out.Err)
			assert.Nil(t, out.Status)
			e, ok := errs.As(out.Err)
			require.True(t, ok, "%T: %v", out.Err, out.Err)
			assert.Equal(t, errs.InvalidRequest, e.Code)
			for _, w := range tc.names {
				assert.Contains(t, e.Detail, w)
			}
			// Nothing was written: no run folder, not even the flow folder.
			ids, err := out.Service.Store.List(context.Background())
			require.NoError(t, err)
			assert.Empty(t, ids)
			_, err = os.Stat(filepath.Join(out.Service.Store.(*local.Store).Root(), "flow"))
			assert.True(t, os.IsNotExist(err), "no flow folder: %v", err)
		})
	}

	t.Run("bad input", func(t *testing.T) {
		t.Parallel()
		out := enginetest.Start(t, wf(`return input;`), "", enginetest.Input(`{"a":`))
		e, ok := errs.As(out.Err)
		require.True(t, ok, "%v", out.Err)
		assert.Equal(t, errs.InvalidRequest, e.Code)
		_, err := os.Stat(out.Service.Store.(*local.Store).Root())
		assert.True(t, os.IsNotExist(err))
	})
}

// TestContractInput: the entry function gets the run's input, and crw.input is the same.
func TestContractInput(t *testing.T) {
	t.Parallel()
	out := enginetest.Start(t, wf(`return { input, same: JSON.stringify(input) === JSON.stringify(crw.input), frozen: Object.isFrozen(crw.input) };`),
		"", enginetest.Input(`{"task": "ship it", "n": [1, 2]}`))
	require.NoError(t, out.Err)
	res, rows := out.Status, out.Rows
	require.Equal(t, store.RunCompleted, res.Status)
	assert.JSONEq(t, `{"input": {"task": "ship it", "n": [1, 2]}, "same": true, "frozen": true}`, string(res.Result))
	assert.JSONEq(t, `{"task": "ship it", "n": [1, 2]}`, string(rows[0].Input))
	spec, err := out.Service.Store.Spec(context.Background(), res.Run)
	require.NoError(t, err)
	assert.JSONEq(t, `{"task": "ship it", "n": [1, 2]}`, string(spec.Input))
	assert.Equal(t, rows[0].Workflow, spec.Workflow)
}

// TestCreateKeepsTheWorkflowsFiles: the store keeps every file a run's workflow loaded from
// disk, by digest, as they were when the run was created.
func TestCreateKeepsTheWorkflowsFiles(t *testing.T) {
	t.Parallel()
	helper := "export const greet = (n) => \"hello \" + n;\n"
	out := enginetest.Start(t, prelude+`import { greet } from "./helper.js";
export default async function main() { return greet("you"); }
`, "", enginetest.File("helper.js", helper))
	require.NoError(t, out.Err)
	ctx := context.Background()
	spec, err := out.Service.Store.Spec(ctx, out.Status.Run)
	require.NoError(t, err)
	require.Len(t, spec.Files, 2, "the workflow and its helper: %v", spec.Files)
	for path, digest := range spec.Files {
		data, err := out.Service.Store.File(ctx, digest)
		require.NoError(t, err, path)
		onDisk, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, onDisk, data, path)
		sum := sha256.Sum256(onDisk)
		assert.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), digest)
	}
	helperPath, err := filepath.EvalSymlinks(filepath.Join(out.Dir, "helper.js"))
	require.NoError(t, err)
	data, err := out.Service.Store.File(ctx, spec.Files[helperPath])
	require.NoError(t, err)
	assert.Equal(t, helper, string(data))
}

// TestRunIDsSortByCreation: run ids sort as their runs were created, to the millisecond.
func TestRunIDsSortByCreation(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 1, 2, 3, 4, 0, time.UTC)
	var prev string
	for _, ms := range []int{0, 1, 9, 10, 99, 100, 500, 999} {
		id := runspec.NewRunID(base.Add(time.Duration(ms) * time.Millisecond))
		assert.True(t, journal.ValidRunID(id), id)
		assert.Equal(t, "20261201-020304-", id[:16])
		assert.Equal(t, fmt.Sprintf("%03x", ms), id[16:19])
		assert.Less(t, prev, id)
		prev = id
	}
	assert.Less(t, prev, runspec.NewRunID(base.Add(time.Second)))
}
