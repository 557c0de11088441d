package mcpserver_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/mcptest"
	"github.com/crw-dev/crw/cmd/crw/internal/mcpserver/wire"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/codex"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

// twoCalls makes two calls, each answering {n}, and logs a line before and after them; the
// second call's prompt is the input's prompt when it has one.
const twoCalls = `import { agent } from "crw:agent";
const n = { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false };
export default async function main(input) {
  console.log("planning");
  const a = await agent.call({ role: "explorer", node: "a", prompt: "first prompt", schema: n });
  const b = await agent.call({ role: "reviewer", node: "b", prompt: input?.big ? "x".repeat(input.big) : "second prompt", schema: n });
  console.log("done", a.output.n + b.output.n);
  return a.output.n + b.output.n;
}
`

const twoAnswers = `{"answers": [{"match": {"call": 1}, "turns": [{"json": {"n": 1}}]}, {"match": {"call": 2}, "turns": [{"json": {"n": 2}}]}]}`

// endedRuns runs twoCalls n times in this process, in the state folder, each to its end, and
// returns the runs' ids; input is each run's input.
func endedRuns(t *testing.T, state string, n int, input string) []string {
	t.Helper()
	ctx := context.Background()
	st, err := local.New(state)
	require.NoError(t, err)
	svc := enginetest.Service(st)
	wf := writeWorkflow(t, twoCalls)
	var ids []string
	for range n {
		co := engine.CreateOptions{Workflow: wf}
		if input != "" {
			co.Input = []byte(input)
		}
		id, err := svc.Create(ctx, co)
		require.NoError(t, err)
		a, err := fake.ParseAnswers("a.json", []byte(twoAnswers))
		require.NoError(t, err)
		end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(a, nil)})
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
		ids = append(ids, id)
	}
	return ids
}

// TestListPagesTheRunsNewestFirst: list gives the runs newest first, limit at a time, next
// naming the before of the page after; status keeps the runs of a status or state.
func TestListPagesTheRunsNewestFirst(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ids := endedRuns(t, r.state, 3, "")
	slices.Sort(ids)
	slices.Reverse(ids) // the newest run has the greatest id

	first := r.Call(r.ctx, "list", map[string]any{"limit": 2})
	require.False(t, first.IsError, first.Text)
	assert.Equal(t, []any{ids[0], ids[1]}, runsOf(first))
	assert.Equal(t, ids[1], first.Get("page.next"))
	run := first.Get("page.runs").([]any)[0].(map[string]any)
	assert.Equal(t, "ended", run["state"])
	assert.Equal(t, "completed", run["status"])
	assert.Equal(t, 3.0, run["result"])
	assert.Equal(t, 2.0, run["calls"].(map[string]any)["completed"])

	second := r.Call(r.ctx, "list", map[string]any{"limit": 2, "before": ids[1]})
	assert.Equal(t, []any{ids[2]}, runsOf(second))
	assert.Nil(t, second.Get("page.next"), "no page is left")

	assert.Equal(t, []any{ids[0], ids[1], ids[2]}, runsOf(r.Call(r.ctx, "list", map[string]any{"status": []string{"completed"}})))
	assert.Equal(t, []any{ids[0], ids[1], ids[2]}, runsOf(r.Call(r.ctx, "list", map[string]any{"status": []string{"crashed", "ended"}})))
	assert.Equal(t, []any{}, runsOf(r.Call(r.ctx, "list", map[string]any{"status": []string{"failed", "running"}})))

	bad := r.Call(r.ctx, "list", map[string]any{"status": []string{"done"}})
	assert.Equal(t, "invalid_request", bad.Code())
	assert.Equal(t, "arguments do not match the tool's input schema: /status/0: fails \"enum\"", bad.Get("error.detail"))
	bad = r.Call(r.ctx, "list", map[string]any{"before": "../x"})
	assert.Equal(t, "invalid_request", bad.Code())
}

func runsOf(a mcptest.Answer) []any {
	out := []any{}
	runs, _ := a.Get("page.runs").([]any)
	for _, r := range runs {
		out = append(out, r.(map[string]any)["run"])
	}
	return out
}

// TestShowPagesTheCallsAndShowsOneWhole: show gives a run's calls a page at a time without
// their bodies, and one call with its prompt and answer.
func TestShowPagesTheCallsAndShowsOneWhole(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	run := endedRuns(t, r.state, 1, "")[0]

	all := r.Call(r.ctx, "show", map[string]any{"run": run})
	require.False(t, all.IsError, all.Text)
	assert.Equal(t, run, all.Get("timeline.run"))
	assert.Equal(t, "completed", all.Get("timeline.status"))
	assert.Equal(t, 3.0, all.Get("timeline.result"))
	assert.Equal(t, 2.0, all.Get("timeline.total_calls"))
	assert.Equal(t, 2.0, all.Get("timeline.counts.completed"))
	assert.Nil(t, all.Get("timeline.next_offset"))
	calls := all.Get("timeline.calls").([]any)
	require.Len(t, calls, 2)
	c1 := calls[0].(map[string]any)
	assert.Equal(t, "c1", c1["call"])
	assert.Equal(t, "explorer", c1["role"])
	assert.Equal(t, "a", c1["node"])
	assert.Equal(t, "completed", c1["status"])
	assert.Equal(t, 1.0, c1["turns"])
	assert.Equal(t, "", c1["prompt"], "a page reads no bodies")
	assert.Nil(t, c1["output"])

	page := r.Call(r.ctx, "show", map[string]any{"run": run, "limit": 1})
	assert.Equal(t, 1.0, page.Get("timeline.next_offset"))
	assert.Len(t, page.Get("timeline.calls"), 1)
	page = r.Call(r.ctx, "show", map[string]any{"run": run, "offset": 1, "limit": 1})
	assert.Equal(t, "c2", page.Get("timeline.calls").([]any)[0].(map[string]any)["call"])
	assert.Nil(t, page.Get("timeline.next_offset"))

	one := r.Call(r.ctx, "show", map[string]any{"run": "last", "call": "c2"})
	require.False(t, one.IsError, one.Text)
	calls = one.Get("timeline.calls").([]any)
	require.Len(t, calls, 1)
	c2 := calls[0].(map[string]any)
	assert.Equal(t, "reviewer", c2["role"])
	assert.Contains(t, c2["prompt"], "second prompt")
	assert.Equal(t, map[string]any{"n": 2.0}, c2["output"])
	assert.Equal(t, false, c2["clipped"])
	assert.Equal(t, 1.0, one.Get("timeline.counts.completed"), "the call's own counts")

	none := r.Call(r.ctx, "show", map[string]any{"run": run, "call": "c9"})
	assert.Equal(t, "invalid_request", none.Code())
	assert.Equal(t, "run "+run+` has no call "c9"`, none.Get("error.detail"))
}

// TestLogsPagesTheRunsLog: logs gives the log's lines from an offset, limit at a time, or its
// last ones; each as crw flow logs prints it and as the log keeps it.
func TestLogsPagesTheRunsLog(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	run := endedRuns(t, r.state, 1, "")[0]

	all := r.Call(r.ctx, "logs", map[string]any{"run": run})
	require.False(t, all.IsError, all.Text)
	lines := all.Get("logs.lines").([]any)
	require.Len(t, lines, 2, all.Text)
	assert.Equal(t, []string{"planning", "done 3"}, logMessages(lines))
	l0 := lines[0].(map[string]any)
	assert.Equal(t, 0.0, l0["offset"])
	assert.True(t, strings.HasSuffix(l0["text"].(string), " log: planning"), l0["text"])
	assert.Equal(t, false, all.Get("logs.more"))
	assert.Equal(t, all.Get("logs.size"), all.Get("logs.next_offset"))

	first := r.Call(r.ctx, "logs", map[string]any{"run": run, "limit": 1})
	assert.Equal(t, []string{"planning"}, logMessages(first.Get("logs.lines").([]any)))
	assert.Equal(t, true, first.Get("logs.more"))
	next := first.Get("logs.next_offset")
	assert.Equal(t, lines[1].(map[string]any)["offset"], next)
	rest := r.Call(r.ctx, "logs", map[string]any{"run": run, "offset": next})
	assert.Equal(t, []string{"done 3"}, logMessages(rest.Get("logs.lines").([]any)))

	tail := r.Call(r.ctx, "logs", map[string]any{"run": run, "tail": 1})
	assert.Equal(t, []string{"done 3"}, logMessages(tail.Get("logs.lines").([]any)))

	both := r.Call(r.ctx, "logs", map[string]any{"run": run, "tail": 1, "offset": 0})
	assert.Equal(t, "invalid_request", both.Code())
	assert.Equal(t, "tail and offset: give one of them", both.Get("error.detail"))
}

func logMessages(lines []any) []string {
	var out []string
	for _, l := range lines {
		entry, _ := l.(map[string]any)["entry"].(map[string]any)
		msg, _ := entry["message"].(string)
		out = append(out, msg)
	}
	return out
}

// TestTracePagesTheJournal: trace gives the journal's rows after a seq, limit at a time, next
// naming the after of the next page; a limit past 1,000 is refused.
func TestTracePagesTheJournal(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	run := endedRuns(t, r.state, 1, "")[0]
	rows := journalRows(t, r.state, run)

	first := r.Call(r.ctx, "trace", map[string]any{"run": run, "limit": 2})
	require.False(t, first.IsError, first.Text)
	assert.Equal(t, "crw-trace/1", first.Get("trace.format"))
	page := first.Get("trace.rows").([]any)
	require.Len(t, page, 2)
	assert.Equal(t, 1.0, page[0].(map[string]any)["seq"])
	assert.Equal(t, "started", page[0].(map[string]any)["type"])
	assert.Equal(t, run, page[0].(map[string]any)["row"].(map[string]any)["run"])
	assert.Equal(t, 2.0, first.Get("trace.next"))

	rest := r.Call(r.ctx, "trace", map[string]any{"run": run, "after": 2, "limit": 1000})
	page = rest.Get("trace.rows").([]any)
	require.Len(t, page, len(rows)-2)
	assert.Equal(t, 3.0, page[0].(map[string]any)["seq"])
	assert.Equal(t, "ended", page[len(page)-1].(map[string]any)["type"])
	assert.Nil(t, rest.Get("trace.next"), "the journal has no more rows")

	past := r.Call(r.ctx, "trace", map[string]any{"run": run, "after": len(rows)})
	assert.Equal(t, []any{}, past.Get("trace.rows"))
	assert.Nil(t, past.Get("trace.next"))
}

// TestTheReadsAreBounded: a limit past the page's bound is refused by the input schema, saying
// what it wants; a prompt past 1 MiB is clipped in show and its row clipped in trace, so no
// answer grows with what the run holds.
func TestTheReadsAreBounded(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	run := endedRuns(t, r.state, 1, `{"big": 2097152}`)[0]

	for _, tool := range []string{"trace", "show", "logs", "list"} {
		args := map[string]any{"run": run, "limit": 1_000_000}
		if tool == "list" {
			delete(args, "run")
		}
		a := r.Call(r.ctx, tool, args)
		assert.Equal(t, "invalid_request", a.Code(), tool)
		assert.Equal(t, "arguments do not match the tool's input schema: /limit: must be at most 1000", a.Get("error.detail"), tool)
	}

	one := r.Call(r.ctx, "show", map[string]any{"run": run, "call": "c2"})
	require.False(t, one.IsError)
	c2 := one.Get("timeline.calls").([]any)[0].(map[string]any)
	assert.Equal(t, true, c2["clipped"])
	assert.Len(t, c2["prompt"], 1<<20)
	assert.Equal(t, map[string]any{"n": 2.0}, c2["output"], "the answer is small: whole")

	tr := r.Call(r.ctx, "trace", map[string]any{"run": run, "limit": 1000})
	require.False(t, tr.IsError)
	clipped := 0
	for _, row := range tr.Get("trace.rows").([]any) {
		if m := row.(map[string]any); m["clipped"] == true {
			clipped++
			assert.Nil(t, m["row"])
		}
	}
	assert.Equal(t, 1, clipped, "c2's prepared row holds its prompt")
	assert.Less(t, len(tr.Text), 1<<20, "the page holds no row past the bound")
}

// TestCapabilitiesSaysWhatTheHostLacks (not parallel: it sets the server's environment): on a
// host with no codex binary and no owner thread, the fake backend is ready and the others say
// what they lack, named by start's arguments; capability_unavailable's safe_response points at
// the capabilities tool.
func TestCapabilitiesSaysWhatTheHostLacks(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CRW_CODEX", "")
	t.Setenv("CODEX_THREAD_ID", "")
	t.Setenv("CRW_SESSION_HOST", "")
	r := newRig(t)
	a := r.Call(r.ctx, "capabilities", map[string]any{})
	require.False(t, a.IsError, a.Text)
	assert.Equal(t, "crw", a.Get("capabilities.server.name"))
	assert.Equal(t, "test", a.Get("capabilities.server.version"))
	assert.Equal(t, r.state, a.Get("capabilities.server.state"))
	assert.Equal(t, "the state folder", a.Get("capabilities.server.store"))
	assert.Contains(t, a.Get("capabilities.server.tools"), "capabilities")
	assert.Len(t, a.Get("capabilities.server.tools"), len(r.Listed))

	byName := map[string]map[string]any{}
	var names []string
	for _, b := range a.Get("capabilities.backends").([]any) {
		m := b.(map[string]any)
		byName[m["name"].(string)] = m
		names = append(names, m["name"].(string))
	}
	assert.Equal(t, []string{"app-server", "fake", "session"}, names)

	assert.Equal(t, true, byName["fake"]["ready"])
	assert.Nil(t, byName["fake"]["missing"])
	assert.Equal(t, []any{"answers"}, byName["fake"]["options"])
	assert.Equal(t, []any{}, byName["fake"]["prerequisites"])

	assert.Equal(t, false, byName["app-server"]["ready"])
	missing := byName["app-server"]["missing"].(map[string]any)
	assert.Equal(t, "capability_unavailable", missing["code"])
	assert.Equal(t, "codex: no codex binary: codex is not on PATH and CRW_CODEX is not set; install it with npm install @openai/codex@"+codex.CodexVersion+", or name it (or $CRW_CODEX)", missing["detail"])
	assert.NotEmpty(t, byName["app-server"]["prerequisites"])

	assert.Equal(t, false, byName["session"]["ready"])
	missing = byName["session"]["missing"].(map[string]any)
	assert.Equal(t, "capability_unavailable", missing["code"])
	assert.True(t, strings.HasPrefix(missing["detail"].(string), "owner: no owner thread for backend session"), missing["detail"])
	assert.Equal(t, "backend fake (offline), or backend app-server", missing["next_action"], "named as start's arguments")
	assert.Equal(t, []any{"owner", "host", "codex", "lost_after", "poll", "wake", "wake_after", "renotify_max", "unresponsive_after"}, byName["session"]["options"])

	host := map[string]bool{}
	for _, f := range a.Get("capabilities.host").([]any) {
		m := f.(map[string]any)
		host[m["name"].(string)] = m["ok"].(bool)
	}
	assert.Equal(t, map[string]bool{"codex": false, "owner_thread": false, "session_host": false}, host)

	// What start answers on this host points at the descriptor.
	wf := writeWorkflow(t, `export default async function main() { return 1; }`)
	start := r.Call(r.ctx, "start", map[string]any{"request_key": "s", "workflow": wf, "no_repo": true})
	assert.Equal(t, "capability_unavailable", start.Code(), start.Text)
	assert.Equal(t, wire.SafeResponse(errs.CapabilityUnavailable), start.Get("error.safe_response"))
	assert.Contains(t, start.Get("error.safe_response"), "the capabilities tool")
	assert.True(t, strings.HasPrefix(start.Get("error.detail").(string), "owner: no owner thread"), start.Text)
	assert.Equal(t, "backend fake (offline), or backend app-server", start.Get("error.diagnostic.nextAction"))
	assert.NotContains(t, start.Text, "--", "no flag is named")
}
