package engine_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/engine/result"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// The contract tests run real workflows (goja, bbolt, the fake backend) and check both what
// the script saw and what the journal recorded.

// prelude is the top of every test workflow: three lines, so the body of main starts on
// line 6 of wf.js.
const prelude = `import { agent } from "crw:agent";
import crw from "crw";
const S = { type: "object", additionalProperties: false, required: ["n"], properties: { n: { type: "integer" } } };
`

// wf is a workflow whose entry function runs body in strict mode.
func wf(body string) string {
	return prelude + "export default async function main(input) {\n\"use strict\";\n" + body + "\n}\n"
}

// schemaS is the S of prelude, as Go sees it.
const schemaS = `{"type":"object","additionalProperties":false,"required":["n"],"properties":{"n":{"type":"integer"}}}`

// answers builds an answers file from entries written as JSON.
func answers(entries ...string) string {
	return `{"answers": [` + strings.Join(entries, ",") + `]}`
}

// results decodes a workflow result that is an object of CallResults (and other values).
func results(t *testing.T, res *store.Status) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	enginetest.Decode(t, res, &m)
	return m
}

// callResult decodes one CallResult strictly: a field the contract does not list fails.
func callResult(t *testing.T, raw json.RawMessage) result.CallResult {
	t.Helper()
	var cr result.CallResult
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&cr), "CallResult %s", raw)
	return cr
}

// checkCall asserts that the CallResult the script saw is the one the call's journal rows
// give, and returns it decoded.
func checkCall(t *testing.T, res *store.Status, rows []journal.Row, raw json.RawMessage) result.CallResult {
	t.Helper()
	cr := callResult(t, raw)
	callRows := enginetest.CallRows(rows, cr.CallID)
	require.NotEmpty(t, callRows, "call %s has no rows", cr.CallID)
	prepared := callRows[0]
	require.Equal(t, journal.TypePrepared, prepared.Type)
	var thread *journal.Row
	for i := range callRows {
		if callRows[i].Type == journal.TypeThreadStarted {
			thread = &callRows[i]
		}
	}
	terminal := enginetest.Terminal(t, rows, cr.CallID)
	assert.Equal(t, terminal, callRows[len(callRows)-1], "call %s: the terminal row is its last", cr.CallID)
	want, err := json.Marshal(result.Build(res.Run, &prepared, thread, &terminal))
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(raw), "call %s: the script's CallResult and the journal's", cr.CallID)

	assert.Equal(t, journal.StatusOf(terminal.Type), cr.Status)
	require.NotNil(t, cr.Meta.StartSeq)
	require.NotNil(t, cr.Meta.EndSeq)
	assert.Equal(t, prepared.Seq, *cr.Meta.StartSeq)
	assert.Equal(t, terminal.Seq, *cr.Meta.EndSeq)
	if cr.Status == journal.StatusCompleted {
		assert.Nil(t, cr.Reason)
		assert.JSONEq(t, string(terminal.Output), string(cr.Output))
	} else {
		require.NotNil(t, cr.Reason)
		assert.Equal(t, terminal.Reason, *cr.Reason)
		assert.Equal(t, "null", string(cr.Output))
	}
	if thread != nil {
		require.NotNil(t, cr.Handle)
		assert.Equal(t, result.Handle(res.Run, cr.CallID), *cr.Handle)
		require.NotNil(t, cr.Meta.ThreadID)
		assert.Equal(t, thread.ThreadID, *cr.Meta.ThreadID)
	} else {
		assert.Nil(t, cr.Handle, "no thread, no handle")
		assert.Nil(t, cr.Meta.ThreadID)
	}
	var turns []string
	for _, r := range callRows {
		if r.Type == journal.TypeTurnStarted {
			turns = append(turns, r.TurnID)
		}
	}
	if turns == nil {
		turns = []string{}
	}
	assert.Equal(t, turns, cr.Meta.TurnIDs)
	return cr
}

// call returns the CallResult named key of the workflow's result, checked against the journal.
func call(t *testing.T, res *store.Status, rows []journal.Row, key string) result.CallResult {
	t.Helper()
	raw, ok := results(t, res)[key]
	require.True(t, ok, "the result has no %q: %s", key, res.Result)
	return checkCall(t, res, rows, raw)
}

func str(s string) *string { return &s }

func keysOf(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sorted(s ...string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func TestContractCompleted(t *testing.T) {
	t.Parallel()

	t.Run("schema", func(t *testing.T) {
		t.Parallel()
		res, rows := enginetest.Run(t, wf(`
const r = await agent.call({ role: "architect", prompt: "plan it", schema: S, node: "plan" });
const attempts = {
  status: () => { r.status = "held"; },
  add: () => { r.extra = 1; },
  remove: () => { delete r.callId; },
  meta: () => { r.meta.role = "critic"; },
  pair: () => { r.meta.requestedPair.model = "m"; },
  tokens: () => { r.meta.tokens.total = 0; },
  turnIds: () => { r.meta.turnIds.push("t"); },
  output: () => { r.output.n = 0; },
};
const threw = {};
for (const [k, fn] of Object.entries(attempts)) {
  try { fn(); threw[k] = "no"; } catch (e) { threw[k] = e instanceof TypeError ? "TypeError" : String(e); }
}
const frozen = [r, r.meta, r.meta.requestedPair, r.meta.configuredPair, r.meta.turnIds, r.meta.tokens, r.output].every(Object.isFrozen);
return { r, threw, frozen, keys: Object.keys(r), metaKeys: Object.keys(r.meta) };`),
			answers(`{"match": {}, "turns": [{"json": {"n": 7}, "tokens": {"input": 10, "output": 5}}]}`))

		require.Equal(t, store.RunCompleted, res.Status)
		m := results(t, res)
		cr := checkCall(t, res, rows, m["r"])

		// Exactly the fields of call-result.md, in the script and in JSON.
		assert.Equal(t, sorted("callId", "handle", "status", "output", "reason", "meta"), keysOf(t, m["r"]))
		metaFields := sorted("role", "requestedPair", "configuredPair", "threadId", "turnIds", "repairUsed", "tokens", "startSeq", "endSeq")
		var rm map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(m["r"], &rm))
		assert.Equal(t, metaFields, keysOf(t, rm["meta"]))
		assert.JSONEq(t, `["callId","handle","status","output","reason","meta"]`, string(m["keys"]))
		var metaKeys []string
		require.NoError(t, json.Unmarshal(m["metaKeys"], &metaKeys))
		assert.Equal(t, metaFields, sorted(metaKeys...))

		// Deeply frozen: every assignment throws in strict mode.
		assert.JSONEq(t, `{"status":"TypeError","add":"TypeError","remove":"TypeError","meta":"TypeError","pair":"TypeError","tokens":"TypeError","turnIds":"TypeError","output":"TypeError"}`, string(m["threw"]))
		assert.JSONEq(t, `true`, string(m["frozen"]))

		assert.Equal(t, "c1", cr.CallID)
		assert.Equal(t, "crwh1:"+res.Run+":c1", *cr.Handle)
		assert.Equal(t, journal.StatusCompleted, cr.Status)
		assert.JSONEq(t, `{"n": 7}`, string(cr.Output))
		assert.Equal(t, "architect", cr.Meta.Role)
		assert.Equal(t, result.ResultPair{}, cr.Meta.RequestedPair)
		assert.Equal(t, result.ResultPair{}, cr.Meta.ConfiguredPair)
		assert.False(t, cr.Meta.RepairUsed)
		assert.Len(t, cr.Meta.TurnIDs, 1)
		assert.Equal(t, result.ResultTokens{Input: 10, Output: 5, Total: 15}, cr.Meta.Tokens)
		var meta map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(rm["meta"], &meta))
		assert.JSONEq(t, `{"input":10,"cachedInput":0,"output":5,"reasoningOutput":0,"total":15}`, string(meta["tokens"]), "every part of tokens is present")
		assert.JSONEq(t, `{"model":null,"effort":null}`, string(meta["requestedPair"]))

		assert.Equal(t, []string{"prepared", "thread_started", "turn_started", "completed"}, enginetest.Types(enginetest.CallRows(rows, "c1")))
		prepared := enginetest.CallRows(rows, "c1")[0]
		assert.Equal(t, "plan", prepared.Node)
		assert.Equal(t, "plan it", prepared.Prompt)
		assert.Equal(t, 1, prepared.Index)
		assert.Contains(t, prepared.Site, "wf.js:7:", "the prepared row names the call site")
		done := enginetest.Terminal(t, rows, "c1")
		assert.False(t, done.Extracted)
		assert.Nil(t, done.RawText)
		assert.JSONEq(t, `{"n": 7}`, string(done.Output))
		assert.Equal(t, "sha256:1dd42de9287c1b6a96c617376c0df6b8304485783ed0b4803f1aac0f119471a5", done.ResultDigest, "the digest of the canonical output, {\"n\":7}")
		assert.Equal(t, &journal.Tokens{Input: 10, Output: 5, Total: 15}, done.Tokens)
		assert.Equal(t, []string{"started"}, enginetest.Types(rows[:1]))
		assert.Equal(t, journal.TypeEnded, rows[len(rows)-1].Type)
		assert.Equal(t, store.RunCompleted, store.RunStatus(rows[len(rows)-1].Status))
		assert.JSONEq(t, string(res.Result), string(rows[len(rows)-1].Result))
		assert.Equal(t, store.Counts{"completed": 1}, res.Calls)
	})

	t.Run("text", func(t *testing.T) {
		t.Parallel()
		const text = "Two steps: {first} then [second]."
		res, rows := enginetest.Run(t, wf(`
const r = await agent.call({ role: "explorer", prompt: "look around" });
return { r, type: typeof r.output };`),
			answers(`{"match": {"role": "explorer"}, "turns": [{"text": `+quote(text)+`}]}`))
		require.Equal(t, store.RunCompleted, res.Status)
		cr := call(t, res, rows, "r")
		assert.Equal(t, journal.StatusCompleted, cr.Status)
		assert.JSONEq(t, quote(text), string(cr.Output))
		assert.JSONEq(t, `"string"`, string(results(t, res)["type"]))
		assert.Equal(t, "explorer", cr.Meta.Role)
		prepared := enginetest.CallRows(rows, cr.CallID)[0]
		assert.Empty(t, prepared.SchemaDigest, "a text call has no schema")
		assert.Equal(t, "explorer", prepared.Node, "the node defaults to the role")
		assert.Equal(t, 1, enginetest.Count(rows, cr.CallID, journal.TypeTurnStarted))
	})

	t.Run("text synthesized", func(t *testing.T) {
		t.Parallel()
		res, rows := enginetest.Run(t, wf(`return { r: await agent.call({ role: "critic", prompt: "judge" }) };`), "")
		cr := call(t, res, rows, "r")
		assert.JSONEq(t, `"ok"`, string(cr.Output))
	})
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestContractAnswerParsing covers what an answer must be: one JSON document, or prose before
// a final object; anything else gets one repair turn on the same thread.
func TestContractAnswerParsing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		turns string // the call's turns
		// expectations
		status, reason string
		output         string // JSON; "" when not completed
		turnCount      int    // turn_started rows
		repairNames    string // what the repair turn says was wrong ("" when there is none)
		extracted      bool
	}{
		{name: "one document", turns: `[{"json": {"n": 1}}]`, status: "completed", output: `{"n": 1}`, turnCount: 1},
		{name: "whitespace around", turns: `[{"text": "\n  {\"n\": 2}  \n"}]`, status: "completed", output: `{"n": 2}`, turnCount: 1},
		{name: "prose before a final object", turns: `[{"text": "Here is the answer:\n{\"n\": 3}"}]`, status: "completed", output: `{"n": 3}`, turnCount: 1, extracted: true},
		{name: "repaired", turns: `[{"text": "I cannot answer in JSON."}, {"json": {"n": 4}}]`, status: "completed", output: `{"n": 4}`, turnCount: 2, repairNames: "no JSON document"},
		{name: "schema invalid then repaired", turns: `[{"json": {"n": "four"}}, {"json": {"n": 4}}]`, status: "completed", output: `{"n": 4}`, turnCount: 2, repairNames: "/n"},
		{name: "json then text", turns: `[{"text": "{\"n\": 1} and that is all"}, {"json": {"n": 5}}]`, status: "completed", output: `{"n": 5}`, turnCount: 2, repairNames: "text after the JSON document"},
		{name: "two documents", turns: `[{"text": "{\"n\": 1}\n{\"n\": 2}"}, {"json": {"n": 6}}]`, status: "completed", output: `{"n": 6}`, turnCount: 2, repairNames: "more than one JSON document"},
		{name: "code fence", turns: "[{\"text\": \"```json\\n{\\\"n\\\": 1}\\n```\"}, {\"json\": {\"n\": 7}}]", status: "completed", output: `{"n": 7}`, turnCount: 2, repairNames: "code fence"},
		{name: "closing bracket after", turns: `[{"text": "{\"n\": 1}}"}, {"json": {"n": 8}}]`, status: "completed", output: `{"n": 8}`, turnCount: 2, repairNames: "after"},
		{name: "array", turns: `[{"json": [1]}, {"json": {"n": 9}}]`, status: "completed", output: `{"n": 9}`, turnCount: 2, repairNames: "object"},
		{name: "still invalid", turns: `[{"text": "nope"}, {"json": {"n": "x"}}, {"json": {"n": 10}}]`, status: "null_model", reason: "schema_invalid_after_repair", turnCount: 2, repairNames: "no JSON document"},
		{name: "still invalid prose", turns: "[{\"text\": \"{\\\"n\\\": 1} {\\\"n\\\": 2}\"}, {\"text\": \"```json\\n{\\\"n\\\": 1}\\n```\"}, {\"json\": {\"n\": 11}}]", status: "null_model", reason: "schema_invalid_after_repair", turnCount: 2, repairNames: "more than one JSON document"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			host := fake.NewHost("")
			res, rows := enginetest.Run(t, wf(`return { r: await agent.call({ role: "critic", prompt: "count", schema: S }) };`),
				answers(`{"match": {"call": 1}, "turns": `+tc.turns+`}`), enginetest.Host(host))
			require.Equal(t, store.RunCompleted, res.Status)
			cr := call(t, res, rows, "r")
			assert.Equal(t, tc.status, string(cr.Status))
			if tc.reason != "" {
				require.NotNil(t, cr.Reason)
				assert.Equal(t, tc.reason, *cr.Reason)
			}
			if tc.output != "" {
				assert.JSONEq(t, tc.output, string(cr.Output))
			} else {
				assert.Equal(t, "null", string(cr.Output))
			}
			assert.Equal(t, tc.turnCount == 2, cr.Meta.RepairUsed)

			// One thread; the repair is turn 2 on it, and there is never a third.
			cid := cr.CallID
			assert.Equal(t, 1, enginetest.Count(rows, cid, journal.TypeThreadStarted))
			turnRows := enginetest.OfType(enginetest.CallRows(rows, cid), journal.TypeTurnStarted)
			require.Len(t, turnRows, tc.turnCount)
			for i, tr := range turnRows {
				assert.Equal(t, i+1, tr.K)
			}
			assert.Empty(t, turnRows[0].Repair)
			assert.Equal(t, "count", host.Prompt(turnRows[0].TurnID), "the task turn is the call's prompt")
			if tc.turnCount == 2 {
				assert.Contains(t, turnRows[1].Repair, tc.repairNames)
				// The repair turn names what was wrong; it is not the task again.
				repair := host.Prompt(turnRows[1].TurnID)
				assert.Equal(t, "Your previous answer could not be accepted: "+turnRows[1].Repair+".\n"+
					"Answer the same task again. Reply with exactly one JSON document that satisfies the output schema, and nothing before or after it.", repair)
				assert.Contains(t, repair, tc.repairNames)
				thread := enginetest.OfType(enginetest.CallRows(rows, cid), journal.TypeThreadStarted)[0]
				for _, id := range cr.Meta.TurnIDs {
					assert.True(t, strings.HasPrefix(id, thread.ThreadID), "turn %s on thread %s", id, thread.ThreadID)
				}
			}

			term := enginetest.Terminal(t, rows, cid)
			assert.Equal(t, tc.extracted, term.Extracted)
			if tc.extracted {
				require.NotNil(t, term.RawText)
				assert.Equal(t, "Here is the answer:\n{\"n\": 3}", *term.RawText)
			} else {
				assert.Nil(t, term.RawText)
			}
			assert.Equal(t, tc.turnCount == 2, term.RepairUsed)
			if tc.status == "null_model" {
				assert.Equal(t, journal.TypeNullModel, term.Type)
				assert.NotEmpty(t, term.Detail, "the null_model row says what was wrong")
			}
		})
	}
}

// TestContractRepairTokens: a call's tokens count both its turns, and so does the run's budget.
func TestContractRepairTokens(t *testing.T) {
	t.Parallel()
	res, rows := enginetest.Run(t, wf(`return { r: await agent.call({ role: "critic", prompt: "count", schema: S }) };`),
		answers(`{"match": {}, "turns": [{"text": "soon", "tokens": {"input": 7, "output": 1}}, {"json": {"n": 1}, "tokens": {"input": 20, "output": 3}}]}`))
	cr := call(t, res, rows, "r")
	assert.True(t, cr.Meta.RepairUsed)
	assert.Equal(t, result.ResultTokens{Input: 27, Output: 4, Total: 31}, cr.Meta.Tokens)
	assert.Equal(t, &journal.Tokens{Input: 27, Output: 4, Total: 31}, enginetest.Terminal(t, rows, cr.CallID).Tokens)
}

// TestContractClassification runs every row of DESIGN.md's codexErrorInfo table.
func TestContractClassification(t *testing.T) {
	t.Parallel()
	tests := []struct {
		info, status, reason string
		pauses               bool
	}{
		{"usageLimitExceeded", "held", "host_infra_quota", true},
		{"rateLimitExceeded", "held", "host_infra_rate", true},
		{"serverOverloaded", "held", "host_infra_overload", false},
		{"httpConnectionFailed", "held", "host_infra_connection", false},
		{"responseStreamConnectionFailed", "held", "host_infra_stream", false},
		{"responseStreamDisconnected", "held", "host_infra_stream", false},
		{"responseTooManyFailedAttempts", "held", "host_infra_stream", false},
		{"threadRollbackFailed", "held", "host_infra_rollback", false},
		{"activeTurnNotSteerable", "held", "host_infra_steering", false},
		{"other", "held", "host_infra_other", false},
		{"sessionBudgetExceeded", "held", "budget_exhausted", false},
		{"badRequest", "refused", "host_config_bad_request", false},
		{"unauthorized", "refused", "host_config_unauthorized", false},
		{"sandboxError", "refused", "host_config_sandbox_error", false},
		{"cyberPolicy", "refused", "host_policy_cyber", false},
		{"misalignmentPolicyViolation", "refused", "host_policy_misalignment", false},
		{"contextWindowExceeded", "null_model", "context_window_exceeded", false},
		{"none", "held", "host_infra_unknown", false},
		{"somethingNobodyListed", "held", "host_infra_unknown", false},
	}
	for _, tc := range tests {
		t.Run(tc.info, func(t *testing.T) {
			t.Parallel()
			res, rows := enginetest.Run(t, wf(`return { r: await agent.call({ role: "critic", prompt: "work", schema: S, node: "build" }) };`),
				answers(`{"match": {"node": "build"}, "turns": [{"error": `+quote(tc.info)+`}, {"json": {"n": 1}}]}`))
			cr := call(t, res, rows, "r")
			assert.Equal(t, tc.status, string(cr.Status))
			require.NotNil(t, cr.Reason)
			assert.Equal(t, tc.reason, *cr.Reason)
			assert.Equal(t, "null", string(cr.Output))
			assert.False(t, cr.Meta.RepairUsed, "a failed turn is not repaired")

			cid := cr.CallID
			want := []string{"prepared", "thread_started", "turn_started", tc.status}
			if tc.pauses {
				// The escalation names the call whose turn hit the limit.
				want = []string{"prepared", "thread_started", "turn_started", "escalation", tc.status}
			}
			assert.Equal(t, want, enginetest.Types(enginetest.CallRows(rows, cid)))
			term := enginetest.Terminal(t, rows, cid)
			if tc.info == "none" {
				assert.Equal(t, "the host gave no codexErrorInfo", term.Detail)
			} else {
				assert.Equal(t, "codexErrorInfo "+tc.info, term.Detail)
			}

			esc := enginetest.OfType(rows, journal.TypeEscalation)
			if tc.pauses {
				assert.Equal(t, store.RunPaused, res.Status)
				require.Len(t, esc, 1)
				assert.Equal(t, "quota_or_rate", esc[0].Reason)
				assert.Equal(t, cid, esc[0].Call)
				assert.Less(t, esc[0].Seq, term.Seq, "the escalation comes before the call's terminal row")
			} else {
				// The host's session budget held the call: as with the run's own token budget,
				// the run ends paused (a resume runs the call again), with no escalation.
				want := store.RunCompleted
				if tc.reason == "budget_exhausted" {
					want = store.RunPaused
				}
				assert.Equal(t, want, res.Status)
				assert.Empty(t, esc)
			}
			assert.Equal(t, res.Status, store.RunStatus(rows[len(rows)-1].Status))
			assert.Equal(t, store.Counts{journal.CallStatus(tc.status): 1}, res.Calls)
		})
	}
}

// TestContractPause: a usage or rate limit pauses the run; what is in flight is interrupted
// and what starts afterwards is held, with nothing sent.
func TestContractPause(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ info, reason string }{
		{"usageLimitExceeded", "host_infra_quota"},
		{"rateLimitExceeded", "host_infra_rate"},
	} {
		t.Run(tc.info, func(t *testing.T) {
			t.Parallel()
			res, rows := enginetest.Run(t, wf(`
const slow = agent.call({ role: "critic", prompt: "slow work", schema: S, node: "slow" });
const limited = await agent.call({ role: "architect", prompt: "plan", schema: S, node: "plan" });
const after = await agent.call({ role: "reviewer", prompt: "review", schema: S, node: "review" });
const text = await agent.call({ role: "critic", prompt: "judge" });
return { slow: await slow, limited, after, text };`),
				answers(
					// The slow call's answer never comes before the limit: only the pause's
					// interrupt ends it (a wait for the event, not a race between two delays).
					`{"match": {"node": "slow"}, "turns": [{"json": {"n": 1}, "delay_ms": 600000}]}`,
					`{"match": {"node": "plan"}, "turns": [{"error": `+quote(tc.info)+`, "delay_ms": 60}]}`,
				))
			require.Equal(t, store.RunPaused, res.Status)
			ended := rows[len(rows)-1]
			assert.Equal(t, journal.TypeEnded, ended.Type)
			assert.Equal(t, store.RunPaused, store.RunStatus(ended.Status))

			limited := call(t, res, rows, "limited")
			assert.Equal(t, journal.CallStatus("held"), limited.Status)
			assert.Equal(t, tc.reason, *limited.Reason)

			esc := enginetest.OfType(rows, journal.TypeEscalation)
			require.Len(t, esc, 1, "one escalation row")
			assert.Equal(t, "quota_or_rate", esc[0].Reason)
			assert.Equal(t, limited.CallID, esc[0].Call)

			// The slow call was in flight: the interrupt is journaled before its held row.
			slow := call(t, res, rows, "slow")
			assert.Equal(t, journal.CallStatus("held"), slow.Status)
			assert.Equal(t, "engine_paused", *slow.Reason)
			slowRows := enginetest.CallRows(rows, slow.CallID)
			assert.Equal(t, []string{"prepared", "thread_started", "turn_started", "interrupt_requested", "held"}, enginetest.Types(slowRows))
			assert.Equal(t, "engine_paused", slowRows[3].Reason)
			assert.Less(t, esc[0].Seq, slowRows[3].Seq)

			// Calls started after the pause send nothing.
			for _, key := range []string{"after", "text"} {
				cr := call(t, res, rows, key)
				assert.Equal(t, journal.CallStatus("held"), cr.Status, key)
				assert.Equal(t, "engine_paused", *cr.Reason, key)
				assert.Equal(t, []string{"prepared", "held"}, enginetest.Types(enginetest.CallRows(rows, cr.CallID)), key)
			}
			assert.Equal(t, store.Counts{"held": 4}, res.Calls)
		})
	}
}

// TestContractPauseOnce: limits hit together pause the run once, and calls still waiting for
// the pool are held without sending anything.
func TestContractPauseOnce(t *testing.T) {
	t.Parallel()

	t.Run("two limits at once", func(t *testing.T) {
		t.Parallel()
		res, rows := enginetest.Run(t, wf(`
const [a, b] = await Promise.all([
  agent.call({ role: "critic", prompt: "a", schema: S }),
  agent.call({ role: "critic", prompt: "b", schema: S }),
]);
return { a, b };`), answers(`{"match": {}, "turns": [{"error": "rateLimitExceeded", "delay_ms": 20}]}`))
		require.Equal(t, store.RunPaused, res.Status)
		require.Len(t, enginetest.OfType(rows, journal.TypeEscalation), 1, "one escalation row")
		for _, key := range []string{"a", "b"} {
			cr := call(t, res, rows, key)
			assert.Equal(t, journal.CallStatus("held"), cr.Status, key)
			assert.Contains(t, []string{"host_infra_rate", "engine_paused"}, *cr.Reason, key)
		}
	})

	t.Run("queued calls", func(t *testing.T) {
		t.Parallel()
		res, rows := enginetest.Run(t, wf(`
const [limited, queued, last] = await Promise.all([
  agent.call({ role: "critic", prompt: "a", schema: S }),
  agent.call({ role: "critic", prompt: "b", schema: S }),
  agent.call({ role: "critic", prompt: "c" }),
]);
return { limited, queued, last };`), answers(`{"match": {"call": 1}, "turns": [{"error": "usageLimitExceeded", "delay_ms": 20}]}`), enginetest.Pool(1))
		require.Equal(t, store.RunPaused, res.Status)
		limited := call(t, res, rows, "limited")
		assert.Equal(t, "host_infra_quota", *limited.Reason)
		for _, key := range []string{"queued", "last"} {
			cr := call(t, res, rows, key)
			assert.Equal(t, "engine_paused", *cr.Reason, key)
			assert.Equal(t, []string{"prepared", "held"}, enginetest.Types(enginetest.CallRows(rows, cr.CallID)), key)
		}
		assert.Zero(t, enginetest.Count(rows, "", journal.TypeInterruptRequested), "nothing else was in flight")
	})
}

// TestContractLost: a lost request ends unknown and puts its node into recovery_hold.
func TestContractLost(t *testing.T) {
	t.Parallel()
	res, rows := enginetest.Run(t, wf(`
const lost = await agent.call({ role: "critic", prompt: "build it", schema: S, node: "build" });
const again = await agent.call({ role: "critic", prompt: "build it again", schema: S, node: "build" });
const resumed = await agent.call({ role: "reviewer", prompt: "go on", schema: S, node: "check", resume: lost.handle });
const other = await agent.call({ role: "critic", prompt: "test it", schema: S, node: "test" });
const tier = {};
for (const node of ["build", "test"]) {
  try { crw.tierStep(node, lost); tier[node] = "no throw"; } catch (e) { tier[node] = { code: e.code, reason: e.reason, message: e.message }; }
}
return { lost, again, resumed, other, tier };`),
		answers(
			`{"match": {"node": "build"}, "turns": [{"lost": true}]}`,
			`{"match": {"node": "check"}, "turns": [{"json": {"n": 2}}]}`,
		))
	require.Equal(t, store.RunCompleted, res.Status)

	lost := call(t, res, rows, "lost")
	assert.Equal(t, journal.CallStatus("unknown"), lost.Status)
	assert.Equal(t, "dispatch_unknown", *lost.Reason)
	assert.NotNil(t, lost.Handle, "the turn was sent on a thread")
	assert.Equal(t, []string{"prepared", "thread_started", "turn_started", "outcome_unknown"}, enginetest.Types(enginetest.CallRows(rows, lost.CallID)))

	for _, key := range []string{"again", "resumed"} {
		cr := call(t, res, rows, key)
		assert.Equal(t, journal.CallStatus("held"), cr.Status, key)
		assert.Equal(t, "recovery_hold", *cr.Reason, key)
		assert.Equal(t, []string{"prepared", "held"}, enginetest.Types(enginetest.CallRows(rows, cr.CallID)), key)
	}

	other := call(t, res, rows, "other")
	assert.Equal(t, journal.CallStatus("completed"), other.Status, "another node proceeds")

	var tier map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(results(t, res)["tier"], &tier))
	var build struct{ Code, Reason, Message string }
	require.NoError(t, json.Unmarshal(tier["build"], &build), "crw.tierStep(build) threw: %s", tier["build"])
	assert.Equal(t, "unreconciled_effect", build.Code)
	assert.Equal(t, "recovery_hold", build.Reason)
	assert.Contains(t, build.Message, lost.CallID)
	assert.NotContains(t, string(tier["test"]), "recovery_hold")
	assert.Equal(t, store.Counts{"unknown": 1, "held": 2, "completed": 1}, res.Calls)
}

// TestContractRoles: the role table decides pairs; a contradicting request is refused.
func TestContractRoles(t *testing.T) {
	t.Parallel()
	table := inputs.RoleTable{
		"architect": {Model: "gpt-big", Effort: "high"},
		"critic":    {Model: "gpt-code"},
		"reviewer":  {Effort: "low"},
	}
	res, rows := enginetest.Run(t, wf(`
const c = (role, extra) => agent.call(Object.assign({ role, prompt: "p", schema: S }, extra));
return {
  decided: await c("architect", {}),
  agrees: await c("architect", { model: "gpt-big", effort: "high" }),
  fills: await c("critic", { effort: "minimal" }),
  halfOpen: await c("critic", {}),
  effortOnly: await c("reviewer", { model: "any-model" }),
  undecided: await c("explorer", {}),
  requestedOnly: await c("explorer", { model: "mine", effort: "xhigh" }),
  badModel: await c("architect", { model: "gpt-small" }),
  badEffort: await c("reviewer", { effort: "high" }),
};`), "", enginetest.Roles(table))
	require.Equal(t, store.RunCompleted, res.Status)
	started := rows[0]
	assert.Equal(t, map[string]journal.Pair(table), started.RolePairs)
	assert.Equal(t, table.Digest(), started.PolicyDigest)

	pair := func(model, effort *string) result.ResultPair { return result.ResultPair{Model: model, Effort: effort} }
	tests := []struct {
		key                   string
		requested, configured result.ResultPair
		threadModel           string // "" when refused
		threadEffort          string
	}{
		{"decided", pair(nil, nil), pair(str("gpt-big"), str("high")), "gpt-big", "high"},
		{"agrees", pair(str("gpt-big"), str("high")), pair(str("gpt-big"), str("high")), "gpt-big", "high"},
		{"fills", pair(nil, str("minimal")), pair(str("gpt-code"), str("minimal")), "gpt-code", "minimal"},
		{"halfOpen", pair(nil, nil), pair(str("gpt-code"), nil), "gpt-code", "medium"},
		{"effortOnly", pair(str("any-model"), nil), pair(str("any-model"), str("low")), "any-model", "low"},
		{"undecided", pair(nil, nil), pair(nil, nil), "fake-model", "medium"},
		{"requestedOnly", pair(str("mine"), str("xhigh")), pair(str("mine"), str("xhigh")), "mine", "xhigh"},
		// A refused call's configured pair is the role table's: what it contradicted.
		{"badModel", pair(str("gpt-small"), nil), pair(str("gpt-big"), str("high")), "", ""},
		{"badEffort", pair(nil, str("high")), pair(nil, str("low")), "", ""},
	}
	for _, tc := range tests {
		cr := call(t, res, rows, tc.key)
		assert.Equal(t, tc.requested, cr.Meta.RequestedPair, tc.key)
		assert.Equal(t, tc.configured, cr.Meta.ConfiguredPair, tc.key)
		if tc.threadModel == "" {
			assert.Equal(t, journal.CallStatus("refused"), cr.Status, tc.key)
			assert.Equal(t, "pair_refused", *cr.Reason, tc.key)
			assert.Equal(t, []string{"prepared", "refused"}, enginetest.Types(enginetest.CallRows(rows, cr.CallID)), tc.key)
			continue
		}
		assert.Equal(t, journal.CallStatus("completed"), cr.Status, tc.key)
		th := enginetest.OfType(enginetest.CallRows(rows, cr.CallID), journal.TypeThreadStarted)
		require.Len(t, th, 1, tc.key)
		assert.Equal(t, tc.threadModel, th[0].Model, tc.key)
		assert.Equal(t, tc.threadEffort, th[0].Effort, tc.key)
	}
}

// TestContractBudget: once the run has spent N tokens, a call that would start is held.
func TestContractBudget(t *testing.T) {
	t.Parallel()
	script := wf(`
const first = await agent.call({ role: "architect", prompt: "plan", schema: S });
const second = await agent.call({ role: "critic", prompt: "build", schema: S });
const third = await agent.call({ role: "critic", prompt: "build more" });
return { first, second, third };`)
	spend := answers(`{"match": {"call": 1}, "turns": [{"json": {"n": 1}, "tokens": {"input": 60, "output": 40}}]}`,
		`{"match": {}, "turns": [{"json": {"n": 2}, "tokens": {"input": 1, "output": 1}}]}`)
	for _, tc := range []struct {
		name   string
		budget int64
		held   bool
	}{
		{"spent equals budget", 100, true},
		{"spent over budget", 50, true},
		{"under budget", 101, false},
		{"no budget", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, rows := enginetest.Run(t, script, spend, enginetest.Budget(tc.budget))
			first := call(t, res, rows, "first")
			assert.Equal(t, journal.CallStatus("completed"), first.Status, "the first call starts with nothing spent")
			assert.Equal(t, int64(100), first.Meta.Tokens.Total)
			assert.Equal(t, tc.budget, rows[0].BudgetTokens)
			second := call(t, res, rows, "second")
			third := call(t, res, rows, "third")
			if !tc.held {
				assert.Equal(t, journal.CallStatus("completed"), second.Status)
				if tc.budget == 101 {
					assert.Equal(t, journal.CallStatus("held"), third.Status, "the second call spent the rest")
					assert.Equal(t, "budget_exhausted", *third.Reason)
				}
				return
			}
			for _, cr := range []result.CallResult{second, third} {
				assert.Equal(t, journal.CallStatus("held"), cr.Status)
				assert.Equal(t, "budget_exhausted", *cr.Reason)
				assert.Equal(t, []string{"prepared", "held"}, enginetest.Types(enginetest.CallRows(rows, cr.CallID)))
				assert.Equal(t, result.ResultTokens{}, cr.Meta.Tokens)
			}
		})
	}
}

// TestContractSchemaNotStrict: a schema that breaks the strict rules is refused before any
// thread starts.
func TestContractSchemaNotStrict(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"no additionalProperties": `{ type: "object", required: ["a"], properties: { a: { type: "string" } } }`,
		"optional property":       `{ type: "object", additionalProperties: false, required: [], properties: { a: { type: "string" } } }`,
		"oneOf":                   `{ type: "object", additionalProperties: false, required: ["a"], properties: { a: { oneOf: [{ type: "string" }, { type: "number" }] } } }`,
		"root not an object":      `{ type: "array", items: { type: "string" } }`,
	}
	for name, schema := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, rows := enginetest.Run(t, wf(`return { r: await agent.call({ role: "critic", prompt: "p", schema: `+schema+` }) };`),
				answers(`{"match": {}, "turns": [{"json": {"a": "x"}}]}`))
			require.Equal(t, store.RunCompleted, res.Status)
			cr := call(t, res, rows, "r")
			assert.Equal(t, journal.CallStatus("refused"), cr.Status)
			assert.Equal(t, "schema_not_strict", *cr.Reason)
			assert.Nil(t, cr.Handle)
			assert.Equal(t, []string{"prepared", "refused"}, enginetest.Types(enginetest.CallRows(rows, cr.CallID)))
			assert.NotEmpty(t, enginetest.Terminal(t, rows, cr.CallID).Detail, "the refused row names the rule")
			assert.Zero(t, enginetest.Count(rows, "", journal.TypeThreadStarted))
		})
	}
}

// TestContractInvalidRequest: a malformed agent.call throws invalid_request at its call site
// and journals nothing.
func TestContractInvalidRequest(t *testing.T) {
	t.Parallel()
	res, rows := enginetest.Run(t, wf(`
const attempt = (opts) => {
  try { agent.call(opts); return "no throw"; }
  catch (e) { return { code: e.code, message: e.message, error: e instanceof Error, stack: String(e.stack) }; }
};
const bad = {
  noOptions: attempt(),
  notAnObject: attempt("architect"),
  missingRole: attempt({ prompt: "p" }),
  missingPrompt: attempt({ role: "architect" }),
  emptyPrompt: attempt({ role: "architect", prompt: "  " }),
  unknownOption: attempt({ role: "architect", prompt: "p", temperature: 0.2 }),
  promptType: attempt({ role: "architect", prompt: 42 }),
  nodeType: attempt({ role: "architect", prompt: "p", node: ["a"] }),
  schemaType: attempt({ role: "architect", prompt: "p", schema: "strict please" }),
  badRole: attempt({ role: "boss", prompt: "p" }),
  badEffort: attempt({ role: "architect", prompt: "p", effort: "maximal" }),
  resumeType: attempt({ role: "architect", prompt: "p", resume: 7 }),
  resumeMalformed: attempt({ role: "architect", prompt: "p", resume: "crwh1:nope" }),
  resumeNotHandle: attempt({ role: "architect", prompt: "p", resume: "thread-123" }),
  resumeBadCall: attempt({ role: "architect", prompt: "p", resume: "crwh1:20260101-000000-abcdef:x1" }),
};
const first = await agent.call({ role: "architect", prompt: "plan", schema: S });
bad.resumeNoSuchCall = attempt({ role: "architect", prompt: "p", resume: first.handle.replace(/:c1$/, ":c99") });
const slow = agent.call({ role: "critic", prompt: "slow", schema: S });
bad.resumeNotEnded = attempt({ role: "architect", prompt: "p", resume: first.handle.replace(/:c1$/, ":c2") });
await slow;
const foreign = await agent.call({ role: "architect", prompt: "p", schema: S, resume: "crwh1:20200101-000000-abcdef:c1" });
const chained = await agent.call({ role: "critic", prompt: "go on", schema: S, resume: first.handle });
return { bad, first, foreign, chained };`), "")
	require.Equal(t, store.RunCompleted, res.Status)
	m := results(t, res)

	var bad map[string]struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Error   bool   `json:"error"`
		Stack   string `json:"stack"`
	}
	require.NoError(t, json.Unmarshal(m["bad"], &bad), "every attempt threw: %s", m["bad"])
	names := map[string]string{
		"noOptions": "options", "notAnObject": "object", "missingRole": "role", "missingPrompt": "prompt",
		"emptyPrompt": "prompt", "unknownOption": "temperature", "promptType": "prompt", "nodeType": "node",
		"schemaType": "schema", "badRole": "boss", "badEffort": "maximal", "resumeType": "resume",
		"resumeMalformed": "crwh1:nope", "resumeNotHandle": "thread-123", "resumeBadCall": "x1", "resumeNoSuchCall": "c99",
		"resumeNotEnded": "has not ended",
	}
	assert.Len(t, bad, len(names))
	for key, word := range names {
		e, ok := bad[key]
		if !assert.True(t, ok, "%s did not throw", key) {
			continue
		}
		assert.Equal(t, "invalid_request", e.Code, key)
		assert.True(t, e.Error, "%s: an Error is thrown", key)
		assert.Contains(t, e.Message, word, key)
		assert.Contains(t, e.Stack, "wf.js:8:", "%s: the stack names the call site", key)
	}

	// Only the four real calls were journaled.
	assert.Equal(t, 4, enginetest.Count(rows, "", journal.TypePrepared))

	first := call(t, res, rows, "first")
	assert.Equal(t, "c1", first.CallID)
	foreign := call(t, res, rows, "foreign")
	assert.Equal(t, journal.CallStatus("refused"), foreign.Status)
	assert.Equal(t, "foreign_handle", *foreign.Reason)
	assert.Equal(t, []string{"prepared", "refused"}, enginetest.Types(enginetest.CallRows(rows, foreign.CallID)))

	chained := call(t, res, rows, "chained")
	assert.Equal(t, journal.CallStatus("completed"), chained.Status)
	chainRows := enginetest.CallRows(rows, chained.CallID)
	assert.Equal(t, *first.Handle, chainRows[0].Handle, "the prepared row records the handle")
	th := enginetest.OfType(chainRows, journal.TypeThreadStarted)
	require.Len(t, th, 1)
	assert.Equal(t, *first.Handle, th[0].ChainedFrom)
	assert.Equal(t, *first.Meta.ThreadID, th[0].ChainThread)
	assert.NotEqual(t, *first.Handle, *chained.Handle, "a continuation has a handle of its own")
}

// TestContractResumeThreadless: a continuation of a call that never had a thread cannot start
// one, and sends nothing.
func TestContractResumeThreadless(t *testing.T) {
	t.Parallel()
	res, rows := enginetest.Run(t, wf(`
const first = await agent.call({ role: "critic", prompt: "p", schema: S });
const refused = await agent.call({ role: "architect", prompt: "p", schema: S, model: "other" });
const resumed = await agent.call({ role: "architect", prompt: "go on", schema: S, resume: first.handle.replace(/:c1$/, ":" + refused.callId) });
return { first, refused, resumed };`), "", enginetest.Roles(inputs.RoleTable{"architect": {Model: "m"}}))
	refused := call(t, res, rows, "refused")
	assert.Equal(t, "pair_refused", *refused.Reason)
	assert.Nil(t, refused.Handle, "a refused call has no handle")
	resumed := call(t, res, rows, "resumed")
	assert.Equal(t, journal.CallStatus("refused"), resumed.Status)
	assert.Equal(t, "policy_refused", *resumed.Reason)
	assert.Equal(t, []string{"prepared", "refused"}, enginetest.Types(enginetest.CallRows(rows, resumed.CallID)))
}

// TestContractResumeOfAnOpenOrUnknownCall: a handle of a call whose result the script has not
// been given, or of no call of the run, is refused where the script resumes it.
// The open call's answer has no delay: the call stays open until its result is delivered,
// which happens on the loop goroutine, after the synchronous refusals, however soon it comes.
func TestContractResumeOfAnOpenOrUnknownCall(t *testing.T) {
	t.Parallel()
	res, _ := enginetest.Run(t, wf(`
const first = await agent.call({ role: "critic", prompt: "p", schema: S });
const open = agent.call({ role: "critic", prompt: "q", schema: S, node: "slow" });
const refusals = {};
for (const id of ["c2", "c9"]) {
  try { await agent.call({ role: "critic", prompt: "go on", schema: S, resume: first.handle.replace(/:c1$/, ":" + id) }); refusals[id] = "no throw"; }
  catch (e) { refusals[id] = e.code + ": " + e.message; }
}
await open;
return refusals;`), answers(`{"match": {"node": "slow"}, "turns": [{"json": {"n": 1}}]}`))
	require.Equal(t, store.RunCompleted, res.Status, "%+v", res.Error)
	var refusals map[string]string
	enginetest.Decode(t, res, &refusals)
	assert.Regexp(t, `^invalid_request: agent.call: resume: handle crwh1:\S+:c2 names call c2, which has not ended: await its result first$`, refusals["c2"])
	assert.Regexp(t, `^invalid_request: agent.call: resume: handle crwh1:\S+:c9 names no call of this run$`, refusals["c9"])
}

func TestContractHandleFormat(t *testing.T) {
	t.Parallel()
	run := "20261130-052301-a1b2c3"
	h := result.Handle(run, "c12")
	assert.Equal(t, "crwh1:20261130-052301-a1b2c3:c12", h)
	r, c, ok := result.ParseHandle(h)
	assert.True(t, ok)
	assert.Equal(t, run, r)
	assert.Equal(t, "c12", c)
	for _, bad := range []string{"", "crwh1:", "crwh1:" + run, "crwh1:" + run + ":", "crwh1:" + run + ":c0", "crwh1:" + run + ":c1x", "crwh2:" + run + ":c1", "crwh1:run:c1"} {
		_, _, ok := result.ParseHandle(bad)
		assert.False(t, ok, fmt.Sprintf("%q", bad))
	}
}
