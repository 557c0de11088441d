package journal_test

import (
	"time"

	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stretchr/testify/assert"

	"github.com/crw-dev/crw/journal"
)

// TestTypedRowsCarryTheirFields: each typed row sets its type and the fields it names, and no
// other.
func TestTypedRowsCarryTheirFields(t *testing.T) {
	t.Parallel()
	raw := "Here: {}"
	for _, tt := range []struct {
		got, want *journal.Row
	}{
		{journal.Warning{Call: "c1", Reason: "r", Detail: "d"}.Row(), &journal.Row{Type: "warning", Call: "c1", Reason: "r", Detail: "d"}},
		{journal.Warning{Reason: "answer_refused", Detail: "d", DecisionID: "q", By: "ann", OutputDigest: "sha256:0"}.Row(), &journal.Row{Type: "warning", Reason: "answer_refused", Detail: "d", DecisionID: "q", By: "ann", OutputDigest: "sha256:0"}},
		{journal.Held("quota", "d"), &journal.Row{Type: "held", Reason: "quota", Detail: "d"}},
		{journal.Refused("pair_refused", "d"), &journal.Row{Type: "refused", Reason: "pair_refused", Detail: "d"}},
		{journal.End{Type: journal.TypeSuperseded, Reason: "s"}.Row(), &journal.Row{Type: "superseded", Reason: "s"}},
		{journal.Completed{Output: json.RawMessage(`{}`), Extracted: true, RawText: &raw}.Row(),
			&journal.Row{Type: "completed", Output: json.RawMessage(`{}`), Extracted: true, RawText: &raw}},
	} {
		assert.Equal(t, tt.want, tt.got)
	}
}

// TestTypedRowsWriteTheWireFormat: each typed row is, on the wire, the row type's members and
// no other (the journal's format does not change with the constructors).
func TestTypedRowsWriteTheWireFormat(t *testing.T) {
	t.Parallel()
	budget := int64(500)
	pair := &journal.Pair{Model: "m", Effort: "high"}
	at := time.Date(2026, 12, 5, 1, 2, 3, 0, time.UTC)
	for _, tt := range []struct {
		row  *journal.Row
		want string
	}{
		{journal.DecisionRequested{ID: "ship", Question: "Ship?", Schema: json.RawMessage(`{"type":"object"}`)}.Row(),
			`"type":"decision_requested","decision_id":"ship","question":"Ship?","schema":{"type":"object"}`},
		{journal.DecisionAnswered{ID: "ship", Output: json.RawMessage(`{"ok":true}`), By: "cli"}.Row(),
			`"type":"decision_answered","decision_id":"ship","by":"cli","output":{"ok":true}`},
		{journal.Reconciled{Call: "c2", Verdict: "applied", By: "ops", Output: json.RawMessage(`1`), OutputDigest: "sha256:x"}.Row(),
			`"type":"effect_reconciled","by":"ops","effect":"c2","verdict":"applied","output_digest":"sha256:x","output":1`},
		{journal.Escalation{Call: "c1", Reason: "quota_or_rate", Detail: "d"}.Row(), `"type":"escalation","call":"c1","reason":"quota_or_rate","detail":"d"`},
		{journal.InterruptRequested{Call: "c1", Reason: "engine_paused", Op: "c1/t1", Attempt: 2}.Row(),
			`"type":"interrupt_requested","call":"c1","op":"c1/t1","attempt":2,"reason":"engine_paused"`},
		{journal.ThreadStarted{Call: "c1", ThreadID: "th", Model: "m", Effort: "low", Cwd: "/w", RolloutPath: "/r"}.Row(),
			`"type":"thread_started","call":"c1","thread_id":"th","model":"m","effort":"low","cwd":"/w","rollout_path":"/r"`},
		{journal.TurnStarted{Call: "c1", K: 2, TurnID: "t2", Repair: "no JSON", PreviousAnswer: "five"}.Row(),
			`"type":"turn_started","call":"c1","k":2,"turn_id":"t2","repair":"no JSON","previous_answer":"five"`},
		{journal.CheckpointStarted{Call: "c3", ChainedFrom: "h", Calls: []string{"c1", "c2"}, Digest: "sha256:y"}.Row(),
			`"type":"checkpoint_started","call":"c3","chained_from":"h","conversation_calls":["c1","c2"],"conversation_digest":"sha256:y"`},
		{journal.AttemptLost{Call: "c1", K: 1, Attempt: 2, AgentID: "a", TurnID: "t", Reason: "subagent_closed", HostStatus: "closed", TurnStatus: "interrupted"}.Row(),
			`"type":"session_attempt_lost","call":"c1","k":1,"turn_id":"t","attempt":2,"agent_id":"a","host_status":"closed","turn_status":"interrupted","reason":"subagent_closed"`},
		{journal.CommitResult{Node: "n", Ref: "refs/crw/n", Commit: "c", Tree: "t", Parent: "p"}.Row(),
			`"type":"commit_result","node":"n","tree":"t","commit":"c","parent":"p","ref":"refs/crw/n"`},
		{journal.Prepared{Role: "explorer", Node: "n", Prompt: "look", SchemaDigest: "sha256:s", Handle: "h", Site: "wf.js:3", RequestedPair: pair, ConfiguredPair: pair}.Row(),
			`"type":"prepared","role":"explorer","node":"n","prompt":"look","schema_digest":"sha256:s","requested_pair":{"model":"m","effort":"high"},"configured_pair":{"model":"m","effort":"high"},"handle":"h","site":"wf.js:3"`},
		{journal.Started{Run: "r", Backend: "fake", Workflow: "/wf.js", ScriptDigest: "sha256:w", PolicyDigest: "sha256:p", Process: "p1", Pool: 4, BudgetTokens: 9, Input: json.RawMessage(`null`)}.Row(),
			`"type":"started","run":"r","backend":"fake","workflow":"/wf.js","script_digest":"sha256:w","policy_digest":"sha256:p","process":"p1","pool":4,"budget_tokens":9,"input":null`},
		{journal.Ended{Status: "waiting_decision", Awaited: []journal.PendingDecision{{ID: "effect/c1", Question: "q"}}}.Row(),
			`"type":"ended","awaited":[{"id":"effect/c1","question":"q"}],"status":"waiting_decision"`},
		{journal.Commit{Node: "n", Ref: "refs/crw/n", Alloc: 1, Tree: "t", Parent: "p", Head: "h", Message: "m", Author: "A", Email: "a@x", At: at}.Row(),
			`"type":"commit_intent","node":"n","alloc":1,"tree":"t","parent":"p","ref":"refs/crw/n","head":"h","message":"m","author":"A","email":"a@x"`},
		{journal.WorkspacePlaced{Call: "c1", Placement: "checkout", Node: "n", Commit: "c", Tree: "t", Workspace: "/p"}.Row(),
			`"type":"workspace_placed","call":"c1","workspace":"/p","placement":"checkout","tree":"t","commit":"c","node":"n"`},
		{journal.TierStep{Node: "n", Evidence: "c4", Tier: 1, Role: "executor-t1", ConfiguredPair: pair, Alloc: 2}.Row(),
			`"type":"tier_step","role":"executor-t1","node":"n","configured_pair":{"model":"m","effort":"high"},"alloc":2,"evidence":"c4","tier":1`},
		{journal.ResumeChanged{By: "cli", Workflow: "/wf2.js", ScriptDigest: "sha256:v", Budget: &budget}.Row(),
			`"type":"resume_changed","workflow":"/wf2.js","script_digest":"sha256:v","budget":500,"by":"cli"`},
	} {
		got, err := json.Marshal(tt.row)
		require.NoError(t, err)
		assert.JSONEq(t, `{"seq":0,"at":"`+tt.row.At.Format(time.RFC3339Nano)+`",`+tt.want+`}`, string(got))
	}
}
