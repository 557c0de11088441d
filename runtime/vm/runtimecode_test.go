package vm_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/runtime/runtimetest"
)

// Code built at run time is bounded as a module's source is: each way of compiling a string
// refuses one nested 100,000 deep with a RangeError (goja's parser recursed until the Go stack
// overflowed and the process died).
func TestRuntimeCodeNestingIsBounded(t *testing.T) {
	t.Parallel()
	out, _ := run(t, runtimetest.Main(`
		const deep = "(".repeat(100000) + "1" + ")".repeat(100000);
		const AsyncFunction = (async function () {}).constructor;
		const GeneratorFunction = (function* () {}).constructor;
		const AsyncGeneratorFunction = (async function* () {}).constructor;
		const ways = {
			"new Function": () => new Function("return " + deep),
			"Function": () => Function("a", "return " + deep),
			"Function parameters": () => Function("a = " + deep, "return a"),
			"direct eval": () => eval(deep),
			"brackets to eval": () => eval("[".repeat(1e6)),
			"indirect eval": () => (0, eval)(deep),
			"globalThis.eval": () => globalThis.eval(deep),
			"eval.call": () => eval.call(null, deep),
			"AsyncFunction": () => new AsyncFunction("return " + deep),
			"GeneratorFunction": () => new GeneratorFunction("yield " + deep),
			"AsyncGeneratorFunction": () => AsyncGeneratorFunction("yield " + deep),
			"eval in eval": () => eval("eval(deep)"),
			"eval in a Function": () => new Function("s", "return eval(s)")(deep),
			"a regexp literal": () => eval("/" + "(".repeat(5000) + ")".repeat(5000) + "/"),
		};
		const out = {};
		for (const [name, f] of Object.entries(ways)) {
			try { f(); out[name] = "compiled"; } catch (e) { out[name] = e.name + ": " + e.message; }
		}
		return out;`))
	var got map[string]string
	require.NoError(t, json.Unmarshal(out, &got))
	require.Len(t, got, 14)
	for name, msg := range got {
		assert.Contains(t, msg, "RangeError: code built at run time (eval, Function): the source nests more than 2000 levels deep", name)
	}
	assert.Contains(t, got["new Function"], "(line 3, column ", "the position counts the wrapper goja puts around the body")
}

// Bounding runtime-built code changes nothing else of it: a direct eval still sees the caller's
// scope and an indirect one does not, and the function constructors still build functions.
func TestRuntimeCodeStillWorks(t *testing.T) {
	t.Parallel()
	out, _ := run(t, runtimetest.Main(`
		const local = 41;
		let assigned = 0;
		const AsyncFunction = (async function () {}).constructor;
		const GeneratorFunction = (function* () {}).constructor;
		return [
			new Function("a", "b", "return a + b")(1, 2),
			Function("return this")() === globalThis,
			eval("1 + 2"),
			eval("local + 1"),
			(eval("assigned = 5"), assigned),
			(0, eval)("typeof local"),
			eval("(" + "[".repeat(1000) + "]".repeat(1000) + ")").length,
			await new AsyncFunction("x", "return await x")(Promise.resolve(7)),
			[...new GeneratorFunction("yield 1; yield 2")()],
			new Function("return /(a)(b)/.exec('ab').length")(),
			(() => { try { eval("1 +"); } catch (e) { return e.name; } })(),
		];`))
	assert.JSONEq(t, `[3, true, 3, 42, 5, "undefined", 1, 7, [1, 2], 3, "SyntaxError"]`, string(out))
}
