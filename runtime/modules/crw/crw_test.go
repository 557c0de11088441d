package crw_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/runtime/modules/crw"
	"github.com/crw-dev/crw/runtime/runtimetest"
	"github.com/crw-dev/crw/runtime/vm"
)

var run = runtimetest.RunOK

func TestInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, input, want string
	}{
		{"object", `{"task":"x","tags":["a",{"b":1}]}`, `{"task":"x","tags":["a",{"b":1}]}`},
		{"absent", ``, `null`},
		{"string", `"hello"`, `"hello"`},
		{"number", `42`, `42`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, _ := run(t, runtimetest.Main(`
	const same = JSON.stringify(crw.input) === JSON.stringify(input);
	if (!same) throw new Error("crw.input differs from the entry's argument");
	return crw.input;`), runtimetest.WithInput(tt.input))
			assert.Equal(t, tt.want, string(out))
		})
	}
}

func TestInputIsFrozen(t *testing.T) {
	t.Parallel()
	out, _ := run(t, runtimetest.Main(`
	const writes = [
		() => { crw.input.task = "y"; },
		() => { crw.input.tags.push("c"); },
		() => { crw.input.tags[1].b = 2; },
		() => { crw.input = {}; },
	];
	const errs = writes.map((w) => { try { w(); return "no error"; } catch (e) { return e.constructor.name; } });
	return { errs, input: crw.input };`), runtimetest.WithInput(`{"task":"x","tags":["a",{"b":1}]}`))
	assert.JSONEq(t, `{"errs":["TypeError","TypeError","TypeError","TypeError"],"input":{"task":"x","tags":["a",{"b":1}]}}`, string(out))
}

func TestNowAndRandom(t *testing.T) {
	t.Parallel()
	clock := runtimetest.Epoch
	values := []float64{0.25, 0.5, 0.75}
	out, _ := run(t, runtimetest.Main(`
	return { now: crw.now(), later: crw.now(), r: [crw.random(), crw.random(), crw.random()] };`),
		runtimetest.WithHost(func(h *runtimetest.Host) {
			h.Clock = func() time.Time {
				clock = clock.Add(time.Second)
				return clock
			}
			h.Rand = func() float64 {
				v := values[0]
				values = values[1:]
				return v
			}
		}))
	want := runtimetest.Epoch.Add(time.Second).UnixMilli()
	assert.JSONEq(t, `{"now":`+itoa(want)+`,"later":`+itoa(want+1000)+`,"r":[0.25,0.5,0.75]}`, string(out))
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestLog(t *testing.T) {
	t.Parallel()
	_, r := run(t, runtimetest.Main(`
	crw.log("plain", 1, true, null, undefined);
	crw.log({ a: 1, b: [2] }, ["x"]);
	console.log("console", "log");
	console.info("info");
	console.warn("warn");
	console.error(new Error("boom"));
	console.debug("debug");
	crw.log();`))
	assert.Equal(t, []runtimetest.LogLine{
		{Level: "info", Message: "plain 1 true null undefined"},
		{Level: "info", Message: `{"a":1,"b":[2]} ["x"]`},
		{Level: "log", Message: "console log"},
		{Level: "info", Message: "info"},
		{Level: "warn", Message: "warn"},
		{Level: "error", Message: "Error: boom"},
		{Level: "debug", Message: "debug"},
		{Level: "info", Message: ""},
	}, r.Host.Logs())
}

func TestTierStepAndCommit(t *testing.T) {
	t.Parallel()
	host := runtimetest.WithHost(func(h *runtimetest.Host) {
		h.TierStepError = func(node string) error {
			if node == "held" {
				return runtimetest.Errorf("recovery_hold", "node %s is in recovery_hold", node)
			}
			if node == "plain" {
				return errors.New("no tier above")
			}
			return nil
		}
		h.CommitError = func(node, message string) error {
			if node == "late" {
				return runtimetest.Errorf("revision_conflict", "commit of %s conflicts", node)
			}
			return nil
		}
	})
	out, r := run(t, runtimetest.Main(`
	const got = [];
	const attempt = (f) => {
		try { const v = f(); got.push(v instanceof Promise ? "promise" : JSON.stringify(v) + (Object.isFrozen(v) ? " frozen" : "")); }
		catch (e) { got.push(e instanceof Error ? e.code + ": " + e.message : "not an Error"); }
	};
	const evidence = { callId: "c1", status: "null_model" };
	attempt(() => crw.tierStep("plan", evidence));
	attempt(() => crw.tierStep("held", evidence));
	attempt(() => crw.tierStep("plain", evidence));
	attempt(() => crw.tierStep("plan"));
	attempt(() => crw.tierStep("", evidence));
	attempt(() => crw.commit("plan", { message: "the plan" }));
	attempt(() => crw.commit("solo", "a bare message"));
	attempt(() => crw.commit("late", { message: "too late" }));
	attempt(() => crw.commit("solo"));
	attempt(() => crw.commit("solo", { message: "x", mesage: "typo" }));
	attempt(() => crw.commit("solo", { message: "  " }));
	attempt(() => crw.commit(7, { message: "x" }));
	attempt(() => crw.commit("solo", { message: "a\u0000b" }));
	attempt(() => crw.commit("so\udc00lo", { message: "x" }));
	attempt(() => crw.commit("solo", { message: "half \ud83d" }));
	attempt(() => crw.tierStep("\ud800", evidence));
	const kept = await crw.commit("plan", { message: "again" });
	got.push(JSON.stringify(kept) + (Object.isFrozen(kept) ? " frozen" : ""));
	return got;`), host)
	assert.JSONEq(t, `[
		"{\"evidence\":\"c1\",\"node\":\"plan\"} frozen",
		"recovery_hold: node held is in recovery_hold",
		"invalid_request: no tier above",
		"invalid_request: crw.tierStep: the second argument is the evidence: the null_model CallResult of an executor call of node \"plan\"; got undefined",
		"invalid_request: crw.tierStep: the node is empty",
		"promise", "promise",
		"revision_conflict: commit of late conflicts",
		"invalid_request: crw.commit: the second argument is {message}: what the commit says",
		"invalid_request: crw.commit: unknown option \"mesage\" (crw.commit takes {message})",
		"invalid_request: crw.commit: message must be a non-empty string",
		"invalid_request: crw.commit: the first argument is the node, a string; got number",
		"invalid_request: crw.commit: message holds a NUL byte at byte 1, which no commit message may",
		"invalid_request: crw.commit: the node holds a lone UTF-16 surrogate \\udc00 at index 2 (it would read as U+FFFD)",
		"invalid_request: crw.commit: message holds a lone UTF-16 surrogate \\ud83d at index 5 (it would read as U+FFFD)",
		"invalid_request: crw.tierStep: the node holds a lone UTF-16 surrogate \\ud800 at index 0 (it would read as U+FFFD)",
		"{\"message\":\"again\",\"node\":\"plan\"} frozen"]`, string(out))
	assert.Equal(t, []string{"plan", "held", "plain"}, r.Host.TierSteps())
	assert.Equal(t, [][2]string{{"plan", "the plan"}, {"solo", "a bare message"}, {"late", "too late"}, {"plan", "again"}}, r.Host.Commits())
}

func TestDecide(t *testing.T) {
	t.Parallel()
	host := runtimetest.WithHost(func(h *runtimetest.Host) {
		h.DecideAnswer = func(d crw.Decision) (json.RawMessage, error) {
			if d.ID == "no" {
				return nil, runtimetest.Errorf("run_unavailable", "nobody answers %s", d.ID)
			}
			return json.RawMessage(`{"keep": true}`), nil
		}
	})
	out, r := run(t, runtimetest.Main(`
	const schema = { type: "object", properties: { keep: { type: "boolean" } }, required: ["keep"], additionalProperties: false };
	const got = [];
	const answer = await crw.decide({ id: "keep-it", question: "Keep the change?", schema });
	got.push(JSON.stringify(answer) + (Object.isFrozen(answer) ? " frozen" : ""));
	try { await crw.decide({ id: "no", question: "?", schema }); } catch (e) { got.push(e.code + ": " + e.message); }
	for (const bad of [undefined, { id: "x", question: "q" }, { id: "a b", question: "q", schema }, { id: "x", question: "q", schema, extra: 1 }, { id: "x", question: "Keep \udfff?", schema }]) {
		try { crw.decide(bad); got.push("no throw"); } catch (e) { got.push(e.code + ": " + e.message); }
	}
	return got;`), host)
	assert.JSONEq(t, `[
		"{\"keep\":true} frozen",
		"run_unavailable: nobody answers no",
		"invalid_request: crw.decide: takes {id, question, schema}, got undefined",
		"invalid_request: crw.decide: schema must be a JSON Schema object, got undefined",
		"invalid_request: crw.decide: id \"a b\" holds ' ' at byte 1: an id is letters, digits and - _ . : /",
		"invalid_request: crw.decide: unknown option \"extra\" (crw.decide takes id, question, schema)",
		"invalid_request: crw.decide: question holds a lone UTF-16 surrogate \\udfff at index 5 (it would read as U+FFFD)"]`, string(out))
	require.Len(t, r.Host.Decisions(), 2)
	assert.Equal(t, "Keep the change?", r.Host.Decisions()[0].Question)
	assert.JSONEq(t, `{"type":"object","properties":{"keep":{"type":"boolean"}},"required":["keep"],"additionalProperties":false}`, string(r.Host.Decisions()[0].Schema))
}

func TestUncaughtHostErrorFailsRun(t *testing.T) {
	t.Parallel()
	r := runtimetest.New(t, runtimetest.Main(`
	crw.tierStep("held", { callId: "c1" });`), runtimetest.WithHost(func(h *runtimetest.Host) {
		h.TierStepError = func(node string) error { return runtimetest.Errorf("recovery_hold", "node %s is held", node) }
	}))
	_, err := r.Run(context.Background())
	var se *vm.ScriptError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "recovery_hold", se.Code)
	assert.Equal(t, "node held is held", se.Message)
	assert.Contains(t, se.Stack, "at tierStep (native)")
	assert.Contains(t, se.Stack, r.Path+":6:")
}

func TestModuleShapes(t *testing.T) {
	t.Parallel()
	out, _ := run(t, `import crw, { now, input } from "crw";
const viaRequire = require("crw");
export default function main() {
  return [crw === viaRequire, now() === crw.now(), input === crw.input, Object.keys(crw).sort()];
}
`, runtimetest.WithInput(`{"a":1}`))
	assert.JSONEq(t, `[true, true, true, ["commit","decide","effect","input","log","now","random","tierStep"]]`, string(out))
}

func TestEffect(t *testing.T) {
	t.Parallel()
	host := runtimetest.WithHost(func(h *runtimetest.Host) {
		h.EffectVerdict = func(call string) (json.RawMessage, error) {
			if call == "c9" {
				return nil, runtimetest.Errorf("run_unavailable", "no verdict on %s", call)
			}
			return json.RawMessage(`{"callId":"` + call + `","verdict":"applied","output":{"ok":true},"by":"uid 1"}`), nil
		}
		h.EffectError = func(call string) error {
			if call == "c7" {
				return runtimetest.Errorf("invalid_request", "call %s did not end unknown", call)
			}
			return nil
		}
	})
	out, r := run(t, runtimetest.Main(`
	const got = [];
	const v = await crw.effect({ callId: "c1", status: "unknown" });
	got.push(v.verdict + " " + v.output.ok + (Object.isFrozen(v) && Object.isFrozen(v.output) ? " frozen" : ""));
	got.push((await crw.effect("c2")).callId);
	try { await crw.effect("c9"); } catch (e) { got.push(e.code + ": " + e.message); }
	for (const bad of [undefined, 3, {}, "", "c7"]) {
		try { crw.effect(bad); got.push("no throw"); } catch (e) { got.push(e.code + ": " + e.message); }
	}
	return got;`), host)
	assert.JSONEq(t, `[
		"applied true frozen",
		"c2",
		"run_unavailable: no verdict on c9",
		"invalid_request: crw.effect: the argument is the CallResult of a call that ended unknown, or its callId; got undefined",
		"invalid_request: crw.effect: the argument is the CallResult of a call that ended unknown, or its callId; got number",
		"invalid_request: crw.effect: the argument is the CallResult of a call that ended unknown, or its callId; got undefined",
		"invalid_request: crw.effect: the argument is the CallResult of a call that ended unknown, or its callId; got string",
		"invalid_request: call c7 did not end unknown"]`, string(out))
	assert.Equal(t, []string{"c1", "c2", "c9", "c7"}, r.Host.Effects())
}

// TestARecordedNumberPastFloat64ReadsInfinity: a verdict's or answer's number beyond float64's
// range reaches the script as an agent.call's output would (Infinity), never as a Go error.
func TestARecordedNumberPastFloat64ReadsInfinity(t *testing.T) {
	t.Parallel()
	host := runtimetest.WithHost(func(h *runtimetest.Host) {
		h.EffectVerdict = func(call string) (json.RawMessage, error) {
			return json.RawMessage(`{"callId":"c1","verdict":"applied","output":{"n":1e400,"m":-1e400},"by":"t"}`), nil
		}
		h.DecideAnswer = func(crw.Decision) (json.RawMessage, error) { return json.RawMessage(`{"n":1e400}`), nil }
	})
	out, _ := run(t, runtimetest.Main(`
	const schema = { type: "object", properties: { n: { type: "number" } }, required: ["n"], additionalProperties: false };
	const v = await crw.effect("c1");
	const d = await crw.decide({ id: "big", question: "?", schema });
	return [v.output.n === Infinity, v.output.m === -Infinity, d.n === Infinity, Object.isFrozen(v.output)];`), host)
	assert.JSONEq(t, `[true, true, true, true]`, string(out))
}
