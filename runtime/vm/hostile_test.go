package vm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/runtime/runtimetest"
)

// TestHostileThrownValues: whatever a script throws, the run ends with what can safely be said
// of it, and none of the value's code runs after the script ended.
func TestHostileThrownValues(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, body, msg, code string }{
		{"message getter throws", `throw { get message() { throw 1; } };`, "threw an object whose message is a getter (not called)", ""},
		{"name getter throws", `const e = new Error("m"); Object.defineProperty(e, "name", { get() { throw 1; } }); throw e;`, "m", ""},
		{"code getter throws", `const e = new Error("m"); Object.defineProperty(e, "code", { get() { throw 1; } }); throw e;`, "m", ""},
		{"stack getter throws", `const e = new Error("m"); Object.defineProperty(e, "stack", { get() { throw 1; } }); throw e;`, "m", ""},
		{"toString throws", `throw { toString() { throw 1; }, valueOf() { throw 2; } };`, "threw {}", ""},
		{"getter loops", `throw { get message() { for (;;) {} } };`, "threw an object whose message is a getter (not called)", ""},
		{"message is an object", `throw { message: { toString() { throw 1; } } };`, "(object)", ""},
		{"proxy", `throw new Proxy({}, { get() { throw 1; }, ownKeys() { throw 2; }, getPrototypeOf() { throw 3; }, getOwnPropertyDescriptor() { throw 4; } });`, "threw a Proxy", ""},
		{"revoked proxy", `const p = Proxy.revocable({}, {}); p.revoke(); throw p.proxy;`, "threw a Proxy", ""},
		{"proxy prototype", `throw Object.create(new Proxy({}, { get() { throw 1; }, getOwnPropertyDescriptor() { throw 2; } }));`, "whose prototype is a Proxy", ""},
		{"symbol", `throw Symbol("s");`, "threw a symbol", ""},
		{"bigint", `throw 12n;`, "threw 12n", ""},
		{"function", `throw function f() {};`, "threw a function", ""},
		{"circular cause", `const e = new Error("loop", {}); e.cause = e; e.code = "c"; throw e;`, "loop", "c"},
		{"circular object", `const o = {}; o.o = o; throw o;`, "circular", ""},
		{"code getter on proto", `Object.defineProperty(Error.prototype, "code", { get() { throw 1; } }); throw new Error("x");`, "x", ""},
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

func TestHugeThrownMessageIsBounded(t *testing.T) {
	t.Parallel()
	se, _ := fail(t, runtimetest.Main(`throw new Error("x".repeat(1 << 22));`))
	assert.Less(t, len(se.Message), 5000)
	assert.Contains(t, se.Message, "more characters cut")
	se, _ = fail(t, runtimetest.Main(`throw "y".repeat(1 << 22);`))
	assert.Less(t, len(se.Message), 5000)
}

// A rejection nobody handles is read the same way: the rejection tracker runs no script code.
func TestHostileUnhandledRejection(t *testing.T) {
	t.Parallel()
	se, _ := fail(t, runtimetest.Main(`Promise.reject({ get message() { throw 1; } }); await null; return 1;`))
	assert.Contains(t, se.Message, "uncaught (in promise): threw an object whose message is a getter")
	se, _ = fail(t, runtimetest.Main(`Promise.reject(new Proxy({}, { get() { throw 1; } })); await null;`))
	assert.Contains(t, se.Message, "threw a Proxy")
}

// The result is serialized by crw: the script's replaced JSON.stringify and Object.keys play no
// part; its own getters and toJSON run once, and what they throw fails the run.
func TestHostileResult(t *testing.T) {
	t.Parallel()
	out, _ := run(t, runtimetest.Main(`JSON.stringify = () => '"pwned"'; Object.keys = () => []; Array.prototype.map = null;
		return { a: [1, 2], d: new Date(0), get g() { return "got"; } };`))
	assert.JSONEq(t, `{"a":[1,2],"d":"1970-01-01T00:00:00.000Z","g":"got"}`, string(out))

	for _, tt := range []struct{ name, body, msg string }{
		{"getter throws", `return { get g() { throw new Error("no"); } };`, "$.g: its getter threw: no"},
		{"toJSON throws", `return { toJSON() { throw { get message() { throw 1; } }; } };`, "its toJSON threw: threw an object whose message is a getter"},
		{"proxy", `return { p: new Proxy({}, {}) };`, "$.p: a Proxy"},
		{"bigint", `return { n: 1n };`, "$.n: a BigInt"},
		{"deep", `let o = {}; for (let i = 0; i < 200000; i++) o = { o }; return o;`, "nested deeper than 512 levels"},
		{"sparse", `const a = []; a[2 ** 31] = 1; return a;`, "an array of 2147483649 elements"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			se, _ := fail(t, runtimetest.Main(tt.body))
			assert.Contains(t, se.Message, tt.msg)
		})
	}
}

// A synchronous main's result is told from a Promise without reading it: its getters run once,
// in the serializer, and what they throw fails the run.
func TestSyncResultWithThrowingGetter(t *testing.T) {
	t.Parallel()
	se, _ := fail(t, `export default function main() { return { get g() { throw 1; } }; }`)
	assert.Contains(t, se.Message, "$.g: its getter threw: threw 1")
}

// The input reaches the script through crw's JSON.parse, and crw.input and call results are
// frozen by crw's Object.freeze, whatever a module replaced before crw was imported.
func TestInputIgnoresReplacedGlobals(t *testing.T) {
	t.Parallel()
	r := runtimetest.New(t, `import "./evil.js";
import crw from "crw";
import { agent } from "crw:agent";
export default async function main(input) {
  const res = await agent.call({ role: "explorer", prompt: "p" });
  // Object.isFrozen is the script's own now: a write that throws tells.
  const frozen = (o) => { try { o.probe = 1; return false; } catch (e) { return true; } };
  return { input, crwInput: crw.input, frozen: [frozen(crw.input), frozen(crw.input.a), frozen(res), frozen(res.meta)] };
}`,
		runtimetest.WithInput(`{"x":1,"a":[1]}`),
		runtimetest.WithFile("evil.js", `JSON.parse = () => ({ pwned: true });
Object.freeze = (o) => o; Object.preventExtensions = (o) => o; Object.isFrozen = () => true;
Array.prototype[Symbol.iterator] = function* () {};`))
	out, err := r.Run(context.Background())
	require.NoError(t, err)
	assert.JSONEq(t, `{"input":{"x":1,"a":[1]},"crwInput":{"x":1,"a":[1]},"frozen":[true,true,true,true]}`, string(out))
}

func TestHostileLogArguments(t *testing.T) {
	t.Parallel()
	r := runtimetest.New(t, runtimetest.Main(`
		crw.log({ get a() { throw 1; } }, new Proxy({}, { get() { throw 2; } }), Symbol("s"), { toJSON() { throw 3; }, b: 1 });
		const e = new Error("m"); Object.defineProperty(e, "message", { get() { throw 4; } }); console.error(e);
		return 1;`))
	_, err := r.Run(context.Background())
	require.NoError(t, err)
	lines := r.Host.Logs()
	require.Len(t, lines, 2)
	assert.True(t, strings.HasPrefix(lines[0].Message, "[object: $.a: a getter"), lines[0].Message)
	assert.Contains(t, lines[0].Message, `[Proxy] a symbol {"b":1}`)
	assert.Contains(t, lines[1].Message, "getter (not called)")
}

// JSON.stringify, bounded by crw, still writes what the built-in writes.
func TestBoundedStringifyKeepsItsRules(t *testing.T) {
	t.Parallel()
	out, _ := run(t, runtimetest.Main(`
		const o = { a: 1, b: { c: 2, a: 3 }, d: [1, { b: 4, a: 5 }] };
		return [
			JSON.stringify(o, ["b", "a", "d", "b"]),
			JSON.stringify(o, (k, v) => (typeof v === "number" ? v * 10 : v)),
			JSON.stringify({ x: [1, 2] }, null, 2),
			JSON.stringify({ at: new Date(0), n: new Number(3), u: undefined, f() {} }),
			JSON.stringify(undefined),
			JSON.stringify("s"),
		];`))
	assert.JSONEq(t, `[
		"{\"b\":{\"a\":3},\"a\":1,\"d\":[1,{\"b\":4,\"a\":5}]}",
		"{\"a\":10,\"b\":{\"c\":20,\"a\":30},\"d\":[10,{\"b\":40,\"a\":50}]}",
		"{\n  \"x\": [\n    1,\n    2\n  ]\n}",
		"{\"at\":\"1970-01-01T00:00:00.000Z\",\"n\":3}",
		null,
		"\"s\""
	]`, string(out))
}

// JSON.parse, bounded by crw, refuses a text nested deeper than MaxStringifyDepth with a
// RangeError (goja's parser recursed until the Go stack overflowed and the process died); a
// string's brackets do not count, and the text is read once, whatever gives it.
func TestBoundedParse(t *testing.T) {
	t.Parallel()
	out, _ := run(t, runtimetest.Main(`
		let reads = 0;
		const text = { toString() { reads++; return '{"a":[1,"[[[["]}'; } };
		const r = [JSON.parse("[".repeat(1000) + "]".repeat(1000)).length, JSON.parse(text).a[1], reads,
			JSON.parse('"' + "[".repeat(5000) + '"').length, JSON.parse('{"a":1}', (k, v) => (k === "a" ? v + 1 : v)).a];
		try { JSON.parse("[".repeat(5e6) + "]".repeat(5e6)); } catch (e) { r.push(e.name + ": " + e.message); }
		return r;`))
	assert.JSONEq(t, `[1, "[[[[", 1, 5000, 2, "RangeError: JSON.parse: the text nests deeper than 1000 levels"]`, string(out))
}

// JSON.parse of a Symbol is still the built-in's TypeError, not a parse of its description.
func TestBoundedParseOfASymbol(t *testing.T) {
	t.Parallel()
	out, _ := run(t, runtimetest.Main(`
		try { JSON.parse(Symbol("[1]")); } catch (e) { return e.name; }
		return "parsed";`))
	assert.JSONEq(t, `"TypeError"`, string(out))
}
