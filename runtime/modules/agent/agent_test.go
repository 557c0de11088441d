package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/runtime/modules/agent"
	"github.com/crw-dev/crw/runtime/runtimetest"
	"github.com/crw-dev/crw/runtime/vm"
)

// run loads and runs script, failing the test on any error (with the JS stack).
var run = runtimetest.RunOK

func hostOpt(f func(h *runtimetest.Host)) runtimetest.Option { return runtimetest.WithHost(f) }

func TestCallValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args string // the argument list of agent.call
		msg  string // a part of the message
	}{
		{"no options", ``, "options are required"},
		{"null options", `null`, "options are required"},
		{"string options", `"architect"`, "options must be an object, got string"},
		{"array options", `[{ role: "architect", prompt: "p" }]`, "options must be an object, got array"},
		{"function options", `() => 1`, "options must be an object, got function"},
		{"missing role", `{ prompt: "p" }`, `option "role" is required`},
		{"missing prompt", `{ role: "architect" }`, `option "prompt" is required`},
		{"empty prompt", `{ role: "architect", prompt: "  " }`, "prompt is empty"},
		{"unknown option", `{ role: "architect", prompt: "p", temperature: 0 }`, `unknown option "temperature"`},
		{"misspelt option", `{ role: "architect", prompt: "p", shcema: {} }`, `unknown option "shcema"`},
		{"number prompt", `{ role: "architect", prompt: 42 }`, `option "prompt" must be a string, got number`},
		{"object prompt", `{ role: "architect", prompt: { text: "p" } }`, `option "prompt" must be a string, got object`},
		{"number role", `{ role: 1, prompt: "p" }`, `option "role" must be a string, got number`},
		{"boolean node", `{ role: "architect", prompt: "p", node: true }`, `option "node" must be a string, got boolean`},
		{"number model", `{ role: "architect", prompt: "p", model: 5 }`, `option "model" must be a string, got number`},
		{"array resume", `{ role: "architect", prompt: "p", resume: ["h"] }`, `option "resume" must be a string, got array`},
		{"string schema", `{ role: "architect", prompt: "p", schema: "{\"type\":\"object\"}" }`, "schema must be a JSON Schema object, got string"},
		{"array schema", `{ role: "architect", prompt: "p", schema: [] }`, "schema must be a JSON Schema object, got array"},
		{"number schema", `{ role: "architect", prompt: "p", schema: 1 }`, "schema must be a JSON Schema object, got number"},
		{"cyclic schema", `(() => { const s = { type: "object" }; s.self = s; return { role: "architect", prompt: "p", schema: s }; })()`, "schema cannot be serialized"},
		{"unknown role", `{ role: "oracle", prompt: "p" }`, `role "oracle" is not one of architect, executor, executor-t1, reviewer, explorer, critic`},
		{"bad effort", `{ role: "architect", prompt: "p", effort: "extreme" }`, `effort "extreme" is not one of none, minimal, low, medium, high, xhigh`},
		{"number effort", `{ role: "architect", prompt: "p", effort: 3 }`, `option "effort" must be a string, got number`},
		{"symbol prompt", `{ role: "architect", prompt: Symbol("p") }`, `option "prompt" must be a string, got symbol`},
		{"object prompt with getters", `{ role: "architect", prompt: { get text() { throw 1; } } }`, `option "prompt" must be a string, got object`},
		{"getter option", `{ role: "architect", get prompt() { return "p"; } }`, `option "prompt" is a getter`},
		{"throwing getter", `{ role: "architect", prompt: "p", get schema() { throw 1; } }`, `option "schema" is a getter`},
		{"call from own getter", `{ role: "architect", get prompt() { return agent.call({ role: "critic", prompt: "inner" }); } }`, `option "prompt" is a getter`},
		{"proxy options", `new Proxy({ role: "architect", prompt: "p" }, { get() { throw 1; }, ownKeys() { throw 2; } })`, "options must be a plain object, got a Proxy"},
		{"revoked proxy options", `(() => { const p = Proxy.revocable({}, {}); p.revoke(); return p.proxy; })()`, "got a Proxy"},
		{"proxy schema", `{ role: "architect", prompt: "p", schema: new Proxy({ type: "string" }, {}) }`, "got a Proxy"},
		{"schema getter", `{ role: "architect", prompt: "p", schema: { get type() { return "string"; } } }`, "schema.type: a getter"},
		{"deep schema", `(() => { let s = {}; for (let i = 0; i < 100000; i++) s = { s }; return { role: "architect", prompt: "p", schema: s }; })()`, "nested deeper than 512"},
		{"bigint in schema", `{ role: "architect", prompt: "p", schema: { maxLength: 1n } }`, "schema.maxLength: a BigInt"},
		{"escape in node", `{ role: "architect", prompt: "p", node: "a\x1b[2Jb" }`, "node holds the character U+001B at byte 1"},
		{"newline in node", `{ role: "architect", prompt: "p", node: "a\nb" }`, "node holds the character U+000A at byte 1"},
		{"bidi override in model", `{ role: "architect", prompt: "p", model: "gpt\u202e" }`, "model holds the character U+202E at byte 3"},
		{"long node", `{ role: "architect", prompt: "p", node: "n".repeat(257) }`, "node is 257 bytes long; the limit is 256"},
		{"lone high surrogate in prompt", `{ role: "architect", prompt: "ab\ud800c" }`, `option "prompt" holds a lone UTF-16 surrogate \ud800 at index 2 (it would read as U+FFFD)`},
		{"lone low surrogate in prompt", `{ role: "architect", prompt: "\udc00" }`, `option "prompt" holds a lone UTF-16 surrogate \udc00 at index 0`},
		{"high surrogate at the prompt's end", `{ role: "architect", prompt: "\ud83d\ude00x\udbff" }`, `option "prompt" holds a lone UTF-16 surrogate \udbff at index 3`},
		{"two high surrogates in prompt", `{ role: "architect", prompt: "\ud800\ud800\udc00" }`, `option "prompt" holds a lone UTF-16 surrogate \ud800 at index 0`},
		{"lone surrogate beside U+FFFD", `{ role: "architect", prompt: "\ufffd\udfff" }`, `option "prompt" holds a lone UTF-16 surrogate \udfff at index 1`},
		{"lone surrogate in node", `{ role: "architect", prompt: "p", node: "n\ud800" }`, `option "node" holds a lone UTF-16 surrogate \ud800 at index 1`},
		{"lone surrogate in the schema", `{ role: "architect", prompt: "p", schema: { type: "string", enum: ["x", "\ud800"] } }`, `schema.enum[1]: a string that holds a lone UTF-16 surrogate \ud800 at index 0`},
		{"lone surrogate in a schema's key", `{ role: "architect", prompt: "p", schema: { type: "object", properties: { "\udc00": { type: "string" } }, additionalProperties: false } }`, `a key that holds a lone UTF-16 surrogate`},
		{"lone surrogate in role", `{ role: "arch\udc00", prompt: "p" }`, `option "role" holds a lone UTF-16 surrogate \udc00 at index 4`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			script := runtimetest.Main(`
	let thrown, returned;
	try {
		returned = agent.call(` + tt.args + `);
	} catch (e) {
		thrown = e;
	}
	if (returned !== undefined) throw new Error("agent.call returned instead of throwing");
	if (!(thrown instanceof Error)) throw new Error("not an Error: " + thrown);
	if (thrown.code !== "invalid_request") throw new Error("code " + thrown.code);
	return thrown.message;`)
			out, r := run(t, script)
			var msg string
			require.NoError(t, json.Unmarshal(out, &msg))
			assert.Contains(t, msg, tt.msg)
			assert.True(t, strings.HasPrefix(msg, "agent.call: "), msg)
			assert.Empty(t, r.Host.Requests(), "a malformed request reached the host")
			assert.Zero(t, r.VM.Pending())
		})
	}
}

// TestValidationUncaught: the error is thrown where agent.call is called, so an uncaught one
// fails the run with its code and a stack pointing at the call.
func TestValidationUncaught(t *testing.T) {
	t.Parallel()
	r := runtimetest.New(t, runtimetest.Main(`
	await agent.call({ role: "architect", prompt: "p", colour: "red" });`))
	_, err := r.Run(context.Background())
	var se *vm.ScriptError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, string(agent.CodeInvalidRequest), se.Code)
	assert.Contains(t, se.Message, `unknown option "colour"`)
	assert.Contains(t, se.Stack, r.Path+":6:")
}

func TestRequestFields(t *testing.T) {
	t.Parallel()
	script := `import { agent } from "crw:agent";

const schema = {
  type: "object",
  properties: { zeta: { type: "string" }, alpha: { type: "number" }, mid: { type: ["string", "null"] } },
  required: ["zeta", "alpha", "mid"],
  additionalProperties: false,
};

export default async function main() {
  await agent.call({ role: "reviewer", prompt: "Review it", schema, node: "review", model: "gpt-x", effort: "high", resume: "crwh1:r:c1" });
  await agent.call({ role: "explorer", prompt: "Look around" });
  await agent.call({
    prompt: "null options are absent",
    role: "critic",
    schema: null,
    node: undefined,
    model: null,
  });
}
`
	_, r := run(t, script)
	reqs := r.Host.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, agent.Request{
		Role:   "reviewer",
		Prompt: "Review it",
		Schema: json.RawMessage(`{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"number"},"mid":{"type":["string","null"]}},"required":["zeta","alpha","mid"],"additionalProperties":false}`),
		Node:   "review",
		Model:  "gpt-x",
		Effort: "high",
		Resume: "crwh1:r:c1",
		Site:   r.Path + ":11:",
	}, withSitePrefix(reqs[0]))
	assert.Equal(t, agent.Request{Role: "explorer", Prompt: "Look around", Node: "explorer", Site: r.Path + ":12:"}, withSitePrefix(reqs[1]))
	assert.Equal(t, agent.Request{Role: "critic", Prompt: "null options are absent", Node: "critic", Site: r.Path + ":13:"}, withSitePrefix(reqs[2]))
}

// TestAReplacementCharacterAndPairsPass: a real U+FFFD and surrogate pairs are no lone
// surrogates: the prompt and a node that hold them reach the host as written.
func TestAReplacementCharacterAndPairsPass(t *testing.T) {
	t.Parallel()
	_, r := run(t, runtimetest.Main(`
	await agent.call({ role: "architect", prompt: "\ufffd \ud83d\ude00 \ud800\udc00", node: "n\ufffd" });`))
	reqs := r.Host.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "\uFFFD \U0001F600 \U00010000", reqs[0].Prompt)
	assert.Equal(t, "n\uFFFD", reqs[0].Node)
}

// TestOptionsIgnoreTamperedGlobals: options are own data properties read by crw, and the schema
// is serialized by crw's own walk: what the script did to Object.prototype (a get that a property
// descriptor would inherit included), JSON, Object.keys or Array.prototype changes no
// request.
func TestOptionsIgnoreTamperedGlobals(t *testing.T) {
	t.Parallel()
	script := runtimetest.Main(`
	Object.prototype.schema = { type: "string" };
	Object.prototype.node = "polluted";
	Object.prototype.toJSON = function () { return "pwned"; };
	JSON.stringify = () => '{"type":"null"}';
	Object.keys = () => [];
	Array.prototype.map = Array.prototype.join = Array.prototype.forEach = () => { throw new Error("tampered"); };
	Object.defineProperty(Array.prototype, "0", { get() { return "tampered"; }, configurable: true });
	Object.prototype.get = function () { return "tampered"; }; // what a descriptor read could inherit
	await agent.call({ role: "explorer", prompt: "text answer" });
	await agent.call({ role: "explorer", prompt: "with schema", schema: { type: "object", properties: { a: { type: "array", items: { enum: ["x", "y"] } } }, required: ["a"], additionalProperties: false } });
	return 1;`)
	_, r := run(t, script)
	reqs := r.Host.Requests()
	require.Len(t, reqs, 2)
	assert.Nil(t, reqs[0].Schema, "Object.prototype.schema made a schema")
	assert.Equal(t, "explorer", reqs[0].Node)
	assert.JSONEq(t, `{"type":"object","properties":{"a":{"type":"array","items":{"enum":["x","y"]}}},"required":["a"],"additionalProperties":false}`, string(reqs[1].Schema))
}

// TestAGetterSwappedIntoAKeptSchemaIsRefusedUncalled: a schema member a script turned into a
// getter after a first call is seen by the schema memo's check as an accessor (OwnData), never
// called: the call is refused as a schema with a getter is, and the getter's own agent.call
// never runs.
func TestAGetterSwappedIntoAKeptSchemaIsRefusedUncalled(t *testing.T) {
	t.Parallel()
	script := runtimetest.Main(`
	const ok = { type: "boolean" };
	const props = { ok };
	const schema = { type: "object", properties: props, required: ["ok"], additionalProperties: false };
	await agent.call({ role: "explorer", node: "a", prompt: "first", schema });
	let reentered = 0;
	Object.defineProperty(props, "ok", { enumerable: true, configurable: true,
		get() { reentered++; agent.call({ role: "explorer", node: "b", prompt: "again", schema }); return ok; } });
	try { await agent.call({ role: "explorer", node: "b", prompt: "second", schema }); return "called"; }
	catch (e) { return [e.code, reentered, e.message]; }`)
	out, r := run(t, script)
	assert.JSONEq(t, `["invalid_request", 0, "agent.call: schema cannot be serialized: schema.properties.ok: a getter, which crw does not call: give the value itself"]`, string(out))
	assert.Len(t, r.Host.Requests(), 1, "only the first call was made")
}

// withSitePrefix cuts the column off a request's Site, keeping "file:line:".
func withSitePrefix(req agent.Request) agent.Request {
	if i := strings.LastIndexByte(req.Site, ':'); i >= 0 {
		req.Site = req.Site[:i+1]
	}
	return req
}

func TestSiteColumn(t *testing.T) {
	t.Parallel()
	script := runtimetest.Main(`	const r = await agent.call({ role: "architect", prompt: "p" });`)
	_, r := run(t, script)
	reqs := r.Host.Requests()
	require.Len(t, reqs, 1)
	// The line is "\tconst r = await agent.call(...": the column is inside the call expression.
	var line, col int
	_, err := fmt.Sscanf(strings.TrimPrefix(reqs[0].Site, r.Path), ":%d:%d", &line, &col)
	require.NoError(t, err, reqs[0].Site)
	assert.Equal(t, 5, line)
	assert.GreaterOrEqual(t, col, len("\tconst r = await ")+1)
	assert.LessOrEqual(t, col, len("\tconst r = await agent.call(")+1)
}

func TestSiteTypeScript(t *testing.T) {
	t.Parallel()
	script := `import { agent } from "crw:agent";
import * as schemas from "crw:lib/schemas";

interface Input {
  task: string;
  retries?: number;
}

type Out = { steps: number };

export default async function main(input: Input): Promise<Out> {
  const role: "architect" = "architect";
  const res = await agent.call({ role, prompt: "Plan: " + input.task, schema: schemas.plan, node: "plan" });
  return { steps: (res.output as string).length };
}
`
	_, r := run(t, script, runtimetest.WithName("wf.ts"), runtimetest.WithInput(`{"task":"x"}`))
	reqs := r.Host.Requests()
	require.Len(t, reqs, 1)
	assert.True(t, strings.HasPrefix(reqs[0].Site, r.Path+":13:"), "site %q", reqs[0].Site)
	assert.Equal(t, "plan", reqs[0].Node)
	assert.True(t, json.Valid(reqs[0].Schema))
	assert.Contains(t, string(reqs[0].Schema), `"additionalProperties":false`)
}

// TestSiteOfHelper: the site is the agent.call itself, in the helper file that makes it.
func TestSiteOfHelper(t *testing.T) {
	t.Parallel()
	helper := `import { agent } from "crw:agent";

export function ask(prompt) {
  return agent.call({ role: "executor", prompt });
}
`
	script := `import { ask } from "./helper.js";
export default async function main() {
  await ask("one");
}
`
	for _, name := range []string{"helper.js", "my helpers/ask #1.js"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			script := strings.Replace(script, "./helper.js", "./"+name, 1)
			_, r := run(t, script, runtimetest.WithFile(name, helper))
			reqs := r.Host.Requests()
			require.Len(t, reqs, 1)
			assert.True(t, strings.HasPrefix(reqs[0].Site, r.Dir+"/"+name+":4:"), "site %q", reqs[0].Site)
		})
	}
}

func TestResultIsDeeplyFrozen(t *testing.T) {
	t.Parallel()
	script := runtimetest.Main(`
	const r = await agent.call({ role: "executor", prompt: "p" });
	const objects = { r, meta: r.meta, tokens: r.meta.tokens, turnIds: r.meta.turnIds, output: r.output, items: r.output.items };
	for (const [name, o] of Object.entries(objects)) {
		if (!Object.isFrozen(o)) throw new Error(name + " is not frozen");
	}
	const writes = [
		() => { r.status = "held"; },
		() => { r.extra = 1; },
		() => { delete r.callId; },
		() => { r.meta.tokens.input = 0; },
		() => { r.meta.turnIds.push("u2"); },
		() => { r.output.items[0].name = "b"; },
	];
	writes.forEach((w, i) => {
		let err;
		try { w(); } catch (e) { err = e; }
		if (!(err instanceof TypeError)) throw new Error("write " + i + " did not throw a TypeError: " + err);
	});
	return [r.status, r.meta.tokens.input, r.output.items[0].name];`)
	out, _ := run(t, script, hostOpt(func(h *runtimetest.Host) {
		h.Result = func(c runtimetest.Call) json.RawMessage {
			return runtimetest.Completed(c, map[string]any{"items": []any{map[string]any{"name": "a"}}}, "c0")
		}
	}))
	assert.JSONEq(t, `["completed", 10, "a"]`, string(out))
}

func TestResultShape(t *testing.T) {
	t.Parallel()
	script := runtimetest.Main(`
	const r = await agent.call({ role: "executor", prompt: "hello" });
	const d = Object.getOwnPropertyDescriptor(r, "meta");
	const m = r.meta;
	return { text: JSON.stringify(r), keys: Object.keys(r).join(","), frozen: Object.isFrozen(r) && Object.isFrozen(m) && Object.isFrozen(m.z),
		meta: [typeof d.get, d.set === undefined, d.enumerable, d.configurable, m === r.meta],
		data: ["callId", "status", "output"].map(k => { const x = Object.getOwnPropertyDescriptor(r, k); return [x.writable, x.configurable, x.enumerable]; }) };`)
	out, _ := run(t, script, hostOpt(func(h *runtimetest.Host) {
		h.Result = func(runtimetest.Call) json.RawMessage {
			return json.RawMessage(`{"callId":"c9","status":"null_model","output":null,"reason":"schema_invalid_after_repair","meta":{"z":[1],"a":2}}`)
		}
	}))
	// Every member of call-result.md, in its order, whatever the host left out; meta is a
	// getter that gives one frozen value, built from the host's meta with its keys' order.
	assert.JSONEq(t, `{
		"text": "{\"callId\":\"c9\",\"handle\":null,\"status\":\"null_model\",\"output\":null,\"reason\":\"schema_invalid_after_repair\",\"meta\":{\"z\":[1],\"a\":2}}",
		"keys": "callId,handle,status,output,reason,meta",
		"frozen": true,
		"meta": ["function", true, true, false, true],
		"data": [[false, false, true], [false, false, true], [false, false, true]]
	}`, string(out))
}

// countedMeta is a meta that counts how often it is made JSON, and fails when told to.
type countedMeta struct {
	n    *atomic.Int32
	fail bool
}

func (m countedMeta) MarshalJSON() ([]byte, error) {
	m.n.Add(1)
	if m.fail {
		return nil, errors.New("meta cannot be made")
	}
	return []byte(`{"n":7}`), nil
}

// countedMetaHost completes every call with the output "o" and a countedMeta counted in n,
// which fails for the prompt "fail".
func countedMetaHost(n *atomic.Int32) runtimetest.Option {
	return hostOpt(func(h *runtimetest.Host) {
		h.Given = func(c runtimetest.Call) agent.Result {
			return agent.Result{CallID: "c", Status: "completed", Output: json.RawMessage(`"o"`), Meta: countedMeta{n: n, fail: c.Request.Prompt == "fail"}}
		}
	})
}

// TestMetaNotBuiltUntilRead: a result's meta is made JSON when the script first reads it, once,
// and a meta that cannot be made throws at that read, the run going on.
func TestMetaNotBuiltUntilRead(t *testing.T) {
	t.Parallel()
	var built atomic.Int32
	out, r := run(t, runtimetest.Main(`
	const a = await agent.call({ role: "executor", prompt: "a" });
	const b = await agent.call({ role: "executor", prompt: "b" });
	const c = await agent.call({ role: "executor", prompt: "fail" });
	let thrown = "";
	try { c.meta; } catch (e) { thrown = String(e.message || e); }
	return [a.status, JSON.stringify(b), b.meta.n, b.meta === b.meta, thrown];`), countedMetaHost(&built))
	assert.JSONEq(t, `["completed", "{\"callId\":\"c\",\"handle\":null,\"status\":\"completed\",\"output\":\"o\",\"reason\":null,\"meta\":{\"n\":7}}", 7, true, "agent.call: the meta of the result of `+r.Path+`:8:24 could not be given to the script"]`, string(out))
	assert.Equal(t, int32(2), built.Load(), "b's meta once, c's once; a's never")
}

// TestMetaGetterReadsItsResult: a result's meta, read through the result whatever the receiver
// (a Proxy of it, Reflect.get with another, an object whose prototype it is), is its meta, as
// when each result had a getter of its own. The getter is one frozen function for every
// result, which gives the meta of the result it is called on (or of the first on that
// object's prototype chain), made once, and throws a TypeError called on anything else (a
// Proxy's getPrototypeOf trap is not run to look further).
func TestMetaGetterReadsItsResult(t *testing.T) {
	t.Parallel()
	var built atomic.Int32
	out, _ := run(t, runtimetest.Main(`
	const a = await agent.call({ role: "executor", prompt: "a" });
	const b = await agent.call({ role: "executor", prompt: "b" });
	const get = Object.getOwnPropertyDescriptor(a, "meta").get;
	let traps = 0;
	const proxy = new Proxy({}, { getPrototypeOf() { traps++; return b; } });
	const thrown = [{}, null, 1, Object.create({}), proxy, Object.create(proxy)].map((x) => { try { get.call(x); return "read"; } catch (e) { return e.constructor.name; } });
	const inherited = Object.create(Object.create(b));
	const through = [new Proxy(a, {}).meta, new Proxy(a, { get: (o, k, r) => Reflect.get(o, k, r) }).meta, Reflect.get(a, "meta", b), Reflect.get(a, "meta", 1),
		inherited.meta, { __proto__: a, m() { return super.meta; } }.m()];
	return [get === Object.getOwnPropertyDescriptor(b, "meta").get, Object.isFrozen(get), get.call(b) === b.meta, get.call(a) === a.meta, get.call(inherited) === b.meta,
		a.meta === b.meta, through.map((m) => m === a.meta ? "a" : m === b.meta ? "b" : typeof m).join(","), thrown.join(","), traps, Object.isFrozen(a)];`), countedMetaHost(&built))
	assert.JSONEq(t, `[true, true, true, true, true, false, "a,a,a,a,b,a", "TypeError,TypeError,TypeError,TypeError,TypeError,TypeError", 0, true]`, string(out))
	assert.Equal(t, int32(2), built.Load(), "a's meta once, b's once")
}

// TestSettleOrder: whatever order the calls were issued in, the script observes them in the
// order the host settled them, from whichever goroutines that happened.
func TestSettleOrder(t *testing.T) {
	t.Parallel()
	script := runtimetest.Main(`
	const seen = [];
	const calls = ["a", "b", "c", "d"].map((p) => agent.call({ role: "executor", prompt: p }).then((r) => { seen.push(r.output); return r.output; }));
	const all = await Promise.all(calls);
	return { seen, all };`)
	tests := []struct {
		name  string
		order []int
		seen  string
	}{
		{"issue order", []int{0, 1, 2, 3}, "abcd"},
		{"reversed", []int{3, 2, 1, 0}, "dcba"},
		{"mixed", []int{2, 0, 3, 1}, "cadb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, r := run(t, script, hostOpt(func(h *runtimetest.Host) {
				h.Mode = runtimetest.InOrder
				h.Order = tt.order
			}))
			var got struct{ Seen, All []string }
			require.NoError(t, json.Unmarshal(out, &got))
			assert.Equal(t, tt.seen, strings.Join(got.Seen, ""))
			assert.Equal(t, []string{"a", "b", "c", "d"}, got.All, "Promise.all keeps issue order")
			assert.Equal(t, tt.order, r.Host.Delivered())
		})
	}
}

// TestSettleManually drives the host from the test: each result is settled from a fresh
// goroutine, and the script's view follows.
func TestSettleManually(t *testing.T) {
	t.Parallel()
	script := runtimetest.Main(`
	const seen = [];
	const calls = [0, 1, 2].map((i) => agent.call({ role: "executor", prompt: "p" + i }).then((r) => seen.push(r.output)));
	await Promise.all(calls);
	return seen;`)
	r := runtimetest.New(t, script, hostOpt(func(h *runtimetest.Host) { h.Mode = runtimetest.Manual }))
	type res struct {
		out json.RawMessage
		err error
	}
	done := make(chan res, 1)
	go func() {
		out, err := r.Run(context.Background())
		done <- res{out, err}
	}()
	require.True(t, r.Host.WaitCalls(3, time.Minute))
	for _, i := range []int{1, 2, 0} {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.Host.Settle(i, nil)
		}()
		wg.Wait()
	}
	got := <-done
	require.NoError(t, got.err)
	assert.JSONEq(t, `["p1","p2","p0"]`, string(got.out))
	assert.Equal(t, []int{1, 2, 0}, r.Host.Delivered())
}

func TestSettleAfterDelay(t *testing.T) {
	t.Parallel()
	script := runtimetest.Main(`
	const a = await agent.call({ role: "architect", prompt: "a" });
	const [b, c] = await Promise.all([agent.call({ role: "executor", prompt: "b" }), agent.call({ role: "reviewer", prompt: "c" })]);
	return a.output + b.output + c.output;`)
	out, r := run(t, script, hostOpt(func(h *runtimetest.Host) {
		h.Mode = runtimetest.After
		h.Delay = 10 * time.Millisecond
	}))
	assert.Equal(t, `"abc"`, string(out))
	assert.Len(t, r.Host.Requests(), 3)
	assert.Zero(t, r.VM.Pending())
}

// TestRace: Promise.race takes the first settled call; the run still waits for the other so
// that its result is delivered (and would be journaled) before the run ends.
func TestRace(t *testing.T) {
	t.Parallel()
	script := runtimetest.Main(`
	const winner = await Promise.race([
		agent.call({ role: "executor", prompt: "slow" }),
		agent.call({ role: "executor", prompt: "fast" }),
	]);
	return winner.output;`)
	out, r := run(t, script, hostOpt(func(h *runtimetest.Host) {
		h.Mode = runtimetest.InOrder
		h.Order = []int{1, 0}
	}))
	assert.Equal(t, `"fast"`, string(out))
	assert.Equal(t, []int{1, 0}, r.Host.Delivered())
	assert.Zero(t, r.VM.Pending())
}

func TestAllSettledAndAny(t *testing.T) {
	t.Parallel()
	script := runtimetest.Main(`
	const calls = () => [agent.call({ role: "executor", prompt: "x" }), agent.call({ role: "critic", prompt: "y" })];
	const settled = await Promise.allSettled(calls());
	const first = await Promise.any(calls());
	return [settled.map((s) => s.status + ":" + s.value.output), first.output];`)
	out, _ := run(t, script, hostOpt(func(h *runtimetest.Host) {
		h.Mode = runtimetest.After
		h.Delay = time.Millisecond
	}))
	var got []any
	require.NoError(t, json.Unmarshal(out, &got))
	assert.Equal(t, []any{"fulfilled:x", "fulfilled:y"}, got[0])
	assert.Contains(t, []any{"x", "y"}, got[1])
}

func TestHostCallError(t *testing.T) {
	t.Parallel()
	refuse := hostOpt(func(h *runtimetest.Host) {
		h.CallError = func(req agent.Request) error {
			switch req.Role {
			case "critic":
				return runtimetest.Errorf("budget_exhausted", "the run's budget is spent")
			case "explorer":
				return errors.New("plain failure")
			}
			return nil
		}
	})

	t.Run("caught", func(t *testing.T) {
		t.Parallel()
		script := runtimetest.Main(`
	const codes = [];
	for (const role of ["critic", "explorer"]) {
		try {
			agent.call({ role, prompt: "p" });
			codes.push("no throw");
		} catch (e) {
			codes.push(e.code + ": " + e.message);
		}
	}
	const ok = await agent.call({ role: "executor", prompt: "still works" });
	codes.push(ok.output);
	return codes;`)
		out, r := run(t, script, refuse)
		assert.JSONEq(t, `["budget_exhausted: agent.call: the run's budget is spent", "invalid_request: agent.call: plain failure", "still works"]`, string(out))
		assert.Zero(t, r.VM.Pending(), "a refused call left its reservation open")
		assert.Len(t, r.Host.Requests(), 1)
	})

	t.Run("uncaught", func(t *testing.T) {
		t.Parallel()
		r := runtimetest.New(t, runtimetest.Main(`
	await agent.call({ role: "executor", prompt: "first" });
	await agent.call({ role: "critic", prompt: "refused" });
	return "unreachable";`), refuse)
		done := make(chan error, 1)
		go func() {
			_, err := r.Run(context.Background())
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Minute):
			t.Fatal("the run did not end after a refused call")
		}
		var se *vm.ScriptError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, "budget_exhausted", se.Code)
		assert.Equal(t, "agent.call: the run's budget is spent", se.Message)
		assert.Contains(t, se.Stack, "at call (native)")
		assert.Contains(t, se.Stack, "at main ("+r.Path+":7:")
		assert.Zero(t, r.VM.Pending())
	})
}

func TestResultNotJSON(t *testing.T) {
	t.Parallel()
	r := runtimetest.New(t, runtimetest.Main(`
	await agent.call({ role: "executor", prompt: "p" });`), hostOpt(func(h *runtimetest.Host) {
		h.Result = func(runtimetest.Call) json.RawMessage { return json.RawMessage(`{not json`) }
	}))
	_, err := r.Run(context.Background())
	require.Error(t, err)
	var se *vm.ScriptError
	assert.False(t, errors.As(err, &se), "a host's bad result is not the script's error: %v", err)
	assert.Contains(t, err.Error(), "agent.call: the result of "+r.Path+":6:")
	assert.Contains(t, err.Error(), "could not be given to the script")
}

// TestResultErrorQuotesNoAnswer: a result the parser refuses (a member named after a secret,
// then an invalid value) ends the run with an error that names the call site and quotes nothing
// of the answer.
func TestResultErrorQuotesNoAnswer(t *testing.T) {
	t.Parallel()
	r := runtimetest.New(t, runtimetest.Main(`
	await agent.call({ role: "executor", prompt: "p" });`), hostOpt(func(h *runtimetest.Host) {
		h.Result = func(c runtimetest.Call) json.RawMessage {
			return json.RawMessage(`{"callId":"c1","status":"completed","output":{"sk-live-4f9a":"x","sk-live-4f9b":nul},"meta":{}}`)
		}
	}))
	_, err := r.Run(context.Background())
	require.Error(t, err)
	assert.Equal(t, "agent.call: the result of "+r.Path+":6:14 could not be given to the script", err.Error())
}

func TestModuleShapes(t *testing.T) {
	t.Parallel()
	script := `import agentDefault, { agent, schema } from "crw:agent";
const viaRequire = require("crw:agent");

export default async function main() {
  if (agentDefault !== agent || viaRequire.agent !== agent) throw new Error("one agent object");
  const s = { type: "object" };
  if (schema(s) !== s || viaRequire.schema !== schema) throw new Error("schema returns its argument");
  const r = await viaRequire.agent.call({ role: "executor-t1", prompt: "via require" });
  return { roles: agent.roles, output: r.output };
}
`
	out, _ := run(t, script)
	assert.JSONEq(t, `{"roles":["architect","executor","executor-t1","reviewer","explorer","critic"],"output":"via require"}`, string(out))
}

// TestModuleIsFrozen: one module may not replace what another one calls.
func TestModuleIsFrozen(t *testing.T) {
	t.Parallel()
	helper := `const mod = require("crw:agent");
export function tamper() {
  const errs = [];
  for (const w of [() => { mod.agent.call = () => 1; }, () => { mod.agent = {}; }, () => { mod.default = {}; }]) {
    try { w(); errs.push("no error"); } catch (e) { errs.push(e.constructor.name); }
  }
  return errs;
}
`
	script := `import { agent } from "crw:agent";
import { tamper } from "./helper.js";
export default async function main() {
  const errs = tamper();
  const r = await agent.call({ role: "executor", prompt: "real" });
  return { errs, output: r.output };
}
`
	out, _ := run(t, script, runtimetest.WithFile("helper.js", helper))
	assert.JSONEq(t, `{"errs":["TypeError","TypeError","TypeError"],"output":"real"}`, string(out))
}

// TestCallsInIssueOrder: the host sees calls in the order the script issues them, including
// calls issued from then-callbacks of earlier ones.
// TestRolesIsACopy: the roles list a script sees cannot change the one calls are checked against.
func TestRolesIsACopy(t *testing.T) {
	t.Parallel()
	script := runtimetest.Main(`
	try { agent.roles[0] = "oracle"; } catch (e) {}
	try { agent.roles.push("oracle"); } catch (e) {}
	try {
		agent.call({ role: "oracle", prompt: "p" });
	} catch (e) {
		return [e.code, agent.roles.length];
	}
	return "oracle accepted";`)
	out, _ := run(t, script)
	assert.JSONEq(t, `["invalid_request", 6]`, string(out))
	assert.Equal(t, "architect", agent.Roles[0])
	assert.Len(t, agent.Roles, 6)
}

func TestCallsInIssueOrder(t *testing.T) {
	t.Parallel()
	script := runtimetest.Main(`
	const first = agent.call({ role: "architect", prompt: "0" });
	const chained = first.then(() => agent.call({ role: "executor", prompt: "2" }));
	const second = agent.call({ role: "reviewer", prompt: "1" });
	await Promise.all([chained, second]);`)
	_, r := run(t, script)
	var prompts []string
	for _, req := range r.Host.Requests() {
		prompts = append(prompts, req.Prompt)
	}
	assert.Equal(t, []string{"0", "1", "2"}, prompts)
}
