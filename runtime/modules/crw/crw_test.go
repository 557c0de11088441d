package crw_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
		try { f(); got.push("ok"); } catch (e) { got.push(e instanceof Error ? e.code + ": " + e.message : "not an Error"); }
	};
	attempt(() => crw.tierStep("plan"));
	attempt(() => crw.tierStep("held"));
	attempt(() => crw.tierStep("plain"));
	attempt(() => crw.commit("plan", "the plan"));
	attempt(() => crw.commit("solo"));
	attempt(() => crw.commit("late", "too late"));
	return got;`), host)
	assert.JSONEq(t, `["ok", "recovery_hold: node held is in recovery_hold", "invalid_request: no tier above",
		"ok", "ok", "revision_conflict: commit of late conflicts"]`, string(out))
	assert.Equal(t, []string{"plan", "held", "plain"}, r.Host.TierSteps())
	assert.Equal(t, [][2]string{{"plan", "the plan"}, {"solo", ""}, {"late", "too late"}}, r.Host.Commits())
}

func TestUncaughtHostErrorFailsRun(t *testing.T) {
	t.Parallel()
	r := runtimetest.New(t, runtimetest.Main(`
	crw.tierStep("held");`), runtimetest.WithHost(func(h *runtimetest.Host) {
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
	assert.JSONEq(t, `[true, true, true, ["commit","input","log","now","random","tierStep"]]`, string(out))
}
