package vm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/runtime/runtimetest"
	"github.com/crw-dev/crw/runtime/vm"
)

var run = runtimetest.RunOK

// fail runs script and returns the *vm.ScriptError it must end with.
func fail(t *testing.T, script string, opts ...runtimetest.Option) (*vm.ScriptError, *runtimetest.Runtime) {
	t.Helper()
	r := runtimetest.New(t, script, opts...)
	out, err := r.Run(context.Background())
	require.Error(t, err, "the run returned %s", out)
	var se *vm.ScriptError
	require.ErrorAs(t, err, &se)
	return se, r
}

func TestResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, name2, script, want string
	}{
		{"sync object", "wf.js", `export default function main(input) { return { got: input, n: [1, 2] }; }`, `{"got":{"x":1},"n":[1,2]}`},
		{"async object", "wf.js", `export default async function main(input) { await null; return { got: input.x }; }`, `{"got":1}`},
		{"sync undefined", "wf.js", `export default function main() {}`, `null`},
		{"async undefined", "wf.js", `export default async function main() { await 1; }`, `null`},
		{"null", "wf.js", `export default () => null`, `null`},
		{"string", "wf.js", `export default () => "done"`, `"done"`},
		{"number", "wf.js", `export default async () => 4.5`, `4.5`},
		{"function is null", "wf.js", `export default () => () => 1`, `null`},
		{"key order kept", "wf.js", `export default () => ({ z: 1, a: 2, m: { y: 1, b: 2 } })`, `{"z":1,"a":2,"m":{"y":1,"b":2}}`},
		{"toJSON used", "wf.js", `export default () => ({ at: new Date(0) })`, `{"at":"1970-01-01T00:00:00.000Z"}`},
		{"commonjs", "wf.cjs", `module.exports = async function (input) { return input.x + 1; };`, `2`},
		{"typescript", "wf.ts", `export default async function main(input: { x: number }): Promise<number> { return input.x * 10; }`, `10`},
		{"resolves to a promise", "wf.js", `export default () => Promise.resolve(Promise.resolve(7))`, `7`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, _ := run(t, tt.script, runtimetest.WithName(tt.name2), runtimetest.WithInput(`{"x":1}`))
			assert.Equal(t, tt.want, string(out))
		})
	}
}

func TestResultWaitsForCalls(t *testing.T) {
	t.Parallel()
	// A sync entry returns at once; the run still ends only after its calls were delivered.
	out, r := run(t, runtimetest.Prelude+`
export default function main() {
  agent.call({ role: "executor", prompt: "a" }).then((r) => crw.log(r.output));
  return "returned";
}
`, runtimetest.WithHost(func(h *runtimetest.Host) {
		h.Mode = runtimetest.After
		h.Delay = 20 * time.Millisecond
	}))
	assert.Equal(t, `"returned"`, string(out))
	assert.Equal(t, []runtimetest.LogLine{{Level: "info", Message: "a"}}, r.Host.Logs())
}

func TestThrownError(t *testing.T) {
	t.Parallel()
	script := `// A TypeScript workflow: types shift nothing in what a stack reports.
interface Input { task: string }

function check(input: Input): void {
  const e: Error & { code?: string } = new Error("no task given");
  e.code = "bad_input";
  throw e;
}

export default function main(input: Input): string {
  check(input);
  return "unreachable";
}
`
	se, r := fail(t, script, runtimetest.WithName("wf.ts"))
	assert.Equal(t, "no task given", se.Message)
	assert.Equal(t, "bad_input", se.Code)
	assert.Equal(t, "no task given", se.Error())
	lines := strings.Split(strings.TrimSpace(se.Stack), "\n")
	require.GreaterOrEqual(t, len(lines), 2, se.Stack)
	assert.Equal(t, "at check ("+r.Path+":5:40)", lines[0], "frames only, original positions, no bytecode offsets")
	assert.Equal(t, "at main ("+r.Path+":11:3)", lines[1], se.Stack)
}

func TestThrownValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, msg, code string
	}{
		{"type error", `const o = null; o.x;`, "TypeError: Cannot read property 'x' of", ""},
		{"error subclass", `class Oops extends Error { constructor(m) { super(m); this.name = "Oops"; this.code = "oops"; } } throw new Oops("bad");`, "Oops: bad", "oops"},
		{"string", `throw "just a string";`, `threw "just a string"`, ""},
		{"object", `throw { code: "x", why: 1 };`, `threw {"code":"x","why":1}`, ""},
		{"number code", `const e = new Error("m"); e.code = 7; throw e;`, "m", "7"},
		{"undefined", `throw undefined;`, "undefined", ""},
		{"after await", `await null; throw new Error("later");`, "later", ""},
		{"result not JSON", `const o = {}; o.self = o; return o;`, "TypeError", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			se, _ := fail(t, runtimetest.Main(tt.body))
			assert.Contains(t, se.Message, tt.msg)
			assert.Equal(t, tt.code, se.Code)
		})
	}
}

func TestRejectedPromise(t *testing.T) {
	t.Parallel()
	script := `export default function main() {
  return new Promise((resolve, reject) => {
    const e = new Error("rejected");
    e.code = "nope";
    reject(e);
  });
}
`
	se, r := fail(t, script)
	assert.Equal(t, "rejected", se.Message)
	assert.Equal(t, "nope", se.Code)
	assert.Contains(t, se.Stack, r.Path+":3:")
	assert.NotContains(t, se.Message, "uncaught")
}

func TestAsyncRejectionAfterCall(t *testing.T) {
	t.Parallel()
	se, r := fail(t, runtimetest.Main(`
	const res = await agent.call({ role: "architect", prompt: "plan" });
	const e = new Error("bad plan: " + res.output);
	e.code = "plan_rejected";
	throw e;`))
	assert.Equal(t, "bad plan: plan", se.Message)
	assert.Equal(t, "plan_rejected", se.Code)
	assert.Contains(t, se.Stack, "at main ("+r.Path+":7:")
}

func TestUnhandledRejection(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, msg string
	}{
		{"at start", `
	Promise.reject(new Error("side"));
	return "done";`, "uncaught (in promise): side"},
		{"from an async helper", `
	const helper = async () => { throw new Error("helper failed"); };
	helper();
	return "done";`, "uncaught (in promise): helper failed"},
		{"after a call", `
	await agent.call({ role: "executor", prompt: "a" });
	(async () => { await null; throw new Error("late"); })();
	await agent.call({ role: "executor", prompt: "b" });
	return "done";`, "uncaught (in promise): late"},
		{"handled too late", `
	const p = Promise.reject(new Error("too late"));
	await agent.call({ role: "executor", prompt: "a" });
	await p.catch(() => {});
	return "done";`, "uncaught (in promise): too late"},
		{"a rejected call chain", `
	agent.call({ role: "executor", prompt: "a" }).then(() => { throw new Error("in then"); });
	return "done";`, "uncaught (in promise): in then"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			se, _ := fail(t, runtimetest.Main(tt.body))
			assert.Equal(t, tt.msg, se.Message)
		})
	}
}

func TestHandledRejection(t *testing.T) {
	t.Parallel()
	out, _ := run(t, runtimetest.Main(`
	const p = Promise.reject(new Error("handled"));
	let msg;
	try { await p; } catch (e) { msg = e.message; }
	const q = (async () => { throw new Error("caught later in the same turn"); })();
	const r = await q.catch((e) => e.message);
	return [msg, r];`))
	assert.JSONEq(t, `["handled", "caught later in the same turn"]`, string(out))
}

func TestNeverSettles(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`await new Promise(() => {});`,
		`await agent.call({ role: "executor", prompt: "a" }); await new Promise(() => {}); return 1;`,
	} {
		se, _ := fail(t, runtimetest.Main(body))
		assert.Contains(t, se.Message, "never settled")
		assert.Equal(t, "invalid_request", se.Code)
		assert.Equal(t, "nondeterministic", se.Reason)
	}
}

func TestTimersAreNotAvailable(t *testing.T) {
	t.Parallel()
	for _, call := range []string{
		`setTimeout(() => {}, 10)`,
		`setInterval(() => {}, 10)`,
		`setImmediate(() => {})`,
		`clearTimeout(1)`,
		`clearInterval(1)`,
		`queueMicrotask(() => {})`,
	} {
		name := call[:strings.IndexByte(call, '(')]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			se, r := fail(t, runtimetest.Main(`
	await null;
	`+call+`;`))
			assert.Equal(t, "invalid_request", se.Code)
			assert.Equal(t, "nondeterministic", se.Reason)
			assert.Equal(t, name+" is not available in a workflow: its timing cannot be replayed", se.Message)
			assert.Contains(t, se.Stack, "at "+name+" (native)")
			assert.Contains(t, se.Stack, r.Path+":7:")
		})
	}
}

func TestTimerAtLoad(t *testing.T) {
	t.Parallel()
	_, err := runtimetest.Load(t, `setTimeout(() => {}, 1);
export default () => 1;
`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "setTimeout is not available in a workflow")
}

func TestDeterministicRandom(t *testing.T) {
	t.Parallel()
	script := `export default () => Array.from({ length: 5 }, () => Math.random());`
	draw := func(seed uint64) []float64 {
		out, _ := run(t, script, runtimetest.WithSeed(seed))
		var got []float64
		require.NoError(t, json.Unmarshal(out, &got))
		require.Len(t, got, 5)
		for _, f := range got {
			require.True(t, f >= 0 && f < 1, "%v out of [0, 1)", f)
		}
		return got
	}
	a1, a2, b := draw(42), draw(42), draw(43)
	assert.Equal(t, a1, a2, "same seed, same sequence")
	assert.NotEqual(t, a1, b, "different seed, different sequence")
	assert.NotEqual(t, a1[0], a1[1])
}

func TestClock(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 5, 6, 7, 8, 9, 500_000_000, time.UTC)
	out, _ := run(t, runtimetest.Main(`
	return { now: Date.now(), iso: new Date().toISOString(), crw: crw.now(), explicit: new Date(0).getTime() };`),
		runtimetest.WithHost(func(h *runtimetest.Host) { h.Clock = func() time.Time { return at } }))
	ms := at.UnixMilli()
	b, _ := json.Marshal(map[string]any{"now": ms, "iso": "2030-05-06T07:08:09.500Z", "crw": ms, "explicit": 0})
	assert.JSONEq(t, string(b), string(out))
}

// TestClockFollowsDelivery: the clock a script reads is the host's at the time it reads it.
func TestClockFollowsDelivery(t *testing.T) {
	t.Parallel()
	tick := runtimetest.Epoch
	out, _ := run(t, runtimetest.Main(`
	const before = Date.now();
	await agent.call({ role: "executor", prompt: "a" });
	return Date.now() - before;`), runtimetest.WithHost(func(h *runtimetest.Host) {
		h.Clock = func() time.Time { return tick }
		result := h.Result
		h.Result = func(c runtimetest.Call) json.RawMessage {
			tick = tick.Add(3 * time.Second)
			return result(c)
		}
	}))
	assert.Equal(t, "3000", string(out))
}

func TestInputArgument(t *testing.T) {
	t.Parallel()
	out, _ := run(t, runtimetest.Main(`
	return { arg: input, same: JSON.stringify(input) === JSON.stringify(crw.input), frozen: Object.isFrozen(crw.input) };`),
		runtimetest.WithInput(`{"task":"t","n":[1]}`))
	assert.JSONEq(t, `{"arg":{"task":"t","n":[1]},"same":true,"frozen":true}`, string(out))
}

func TestConsole(t *testing.T) {
	t.Parallel()
	_, r := run(t, `export default function main() {
  console.log("a", { b: 1 });
  console.warn("w");
}
`)
	assert.Equal(t, []runtimetest.LogLine{{Level: "log", Message: `a {"b":1}`}, {Level: "warn", Message: "w"}}, r.Host.Logs())
}

func TestHostErrors(t *testing.T) {
	t.Parallel()
	se, _ := fail(t, runtimetest.Main(`
	crw.commit("plan", "done");
	crw.commit("review", "late");`), runtimetest.WithHost(func(h *runtimetest.Host) {
		h.CommitError = func(node, _ string) error {
			if node == "review" {
				return runtimetest.Errorf("revision_conflict", "review was committed elsewhere")
			}
			return nil
		}
	}))
	assert.Equal(t, "revision_conflict", se.Code)
	assert.Equal(t, "review was committed elsewhere", se.Message)
}

func TestCancelBusyLoop(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`while (true) {}`,
		`await agent.call({ role: "executor", prompt: "a" }); for (;;) {}`,
	} {
		r := runtimetest.New(t, runtimetest.Main(body))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := r.Run(ctx)
			done <- err
		}()
		time.Sleep(50 * time.Millisecond)
		cancel()
		select {
		case err := <-done:
			require.ErrorIs(t, err, context.Canceled)
			var se *vm.ScriptError
			assert.False(t, errors.As(err, &se), "a cancelled run is not the script's error")
		case <-time.After(time.Minute):
			t.Fatal("Run did not return after ctx was cancelled")
		}
	}
}

func TestCancelWhileWaiting(t *testing.T) {
	t.Parallel()
	r := runtimetest.New(t, runtimetest.Main(`
	await agent.call({ role: "executor", prompt: "never answered" });`),
		runtimetest.WithHost(func(h *runtimetest.Host) { h.Mode = runtimetest.Manual }))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx)
		done <- err
	}()
	require.True(t, r.Host.WaitCalls(1, time.Minute))
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after ctx was cancelled")
	}
	assert.Equal(t, 1, r.VM.Pending(), "the call issued but not delivered")
	// The engine delivers the lost call later; it must not block or panic.
	r.Host.Settle(0, nil)
}

func TestCancelledBeforeRun(t *testing.T) {
	t.Parallel()
	r := runtimetest.New(t, `export default () => 1;`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := r.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)
}

func TestDigest(t *testing.T) {
	t.Parallel()
	a := runtimetest.New(t, `export default () => 1;`)
	b := runtimetest.New(t, `export default () => 1;`)
	c := runtimetest.New(t, `export default () => 2;`)
	assert.True(t, strings.HasPrefix(a.VM.Digest(), "sha256:"))
	assert.Equal(t, a.VM.Digest(), b.VM.Digest())
	assert.NotEqual(t, a.VM.Digest(), c.VM.Digest())
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	_, err := runtimetest.Load(t, `import x from "crw:nope"; export default () => x;`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "crw:nope")

	_, err = runtimetest.Load(t, `throw new Error("at load");`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "at load")

	// Bad input is the engine's bug: it must not read as the script's.
	for _, script := range []string{`import crw from "crw"; export default () => crw.input;`, `export default (input) => input;`} {
		_, err = runtimetest.Load(t, script, runtimetest.WithInput(`{not json`))
		require.EqualError(t, err, "vm: the run's input is not valid JSON")
	}
}
