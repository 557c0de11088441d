package jsutil

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The frozen parser gives what JSON.parse gives, deeply frozen.
func TestFrozenParserMatchesJSONParse(t *testing.T) {
	docs := []string{
		sampleResult,
		`null`, `true`, `false`, `0`, `-0`, `-12`, `3.25`, `1e3`, `12345678901234567890`, `9007199254740993`,
		`""`, `"a\"b\\c\n\u00e9\ud83d\ude00/"`, `"héllo"`,
		`[]`, `{}`, `[1,[2,[3,{}]]]`, `{"b":1,"a":2,"10":3,"2":4}`,
		` { "x" : [ 1 , "y" , null ] , "z" : { } } `,
		// A repeated member name: the last value wins, where the name first stands.
		`{"v":"x","v":1}`, `{"v":1,"v":1}`, `{"a":1,"b":{"c":[1]},"a":{"d":2},"b":3}`, `[{"x":[],"x":[{"y":1,"y":2}]}]`,
		`{"\ud800":1,"\udbff":2}`, `{"k":{"a":1},"k":{"a":1}}`,
		"[" + strings.TrimSuffix(strings.Repeat(`"e",`, 150), ",") + "]",
		// Names the parser keeps from one parse to the next, given again, escaped, long, and
		// more of them than it keeps.
		`{"status":"a","summary":"b"}`, `{"summary":1,"status":2}`, `{"st\u0061tus":1,"status":2}`, `{"status":1,"st\u0061tus":2}`,
		`{"` + strings.Repeat("n", 65) + `":1,"` + strings.Repeat("n", 65) + `":2}`, manyNames(1100), manyNames(1100),
		"{\"\xff\":1,\"\xfe\":2}", "{\"\xff\":3}",
	}
	rt := goja.New()
	parse := FrozenParser(Capture(rt))
	check, err := rt.RunString(`(function check(a, b) {
		if (JSON.stringify(a) !== JSON.stringify(b)) return "differs: " + JSON.stringify(a) + " vs " + JSON.stringify(b);
		const frozen = (v) => v === null || typeof v !== "object" || (Object.isFrozen(v) && Object.keys(v).every((k) => frozen(v[k])));
		if (!frozen(a)) return "not deeply frozen";
		if (Array.isArray(a) !== Array.isArray(b)) return "array-ness differs";
		if (typeof a === "number" && !Object.is(a, b)) return "number differs";
		return "";
	})`)
	require.NoError(t, err)
	checkFn, _ := goja.AssertFunction(check)
	for _, doc := range docs {
		got, err := parse([]byte(doc))
		require.NoError(t, err, doc)
		want, err := Capture(rt).Parse([]byte(doc))
		require.NoError(t, err, doc)
		msg, err := checkFn(goja.Undefined(), got, want)
		require.NoError(t, err)
		require.Equal(t, "", msg.String(), doc)
	}
}

// manyNames is an object of n members, each of its own name.
func manyNames(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"m%d":%d`, i, i)
	}
	b.WriteString("}")
	return b.String()
}

func TestFrozenParserRejectsBadJSON(t *testing.T) {
	rt := goja.New()
	parse := FrozenParser(Capture(rt))
	for _, doc := range []string{`{`, `[1,]`, `{"a" 1}`, `"open`, `tru`, `1 2`, `{"a":1}x`, `-`, `[`} {
		_, err := parse([]byte(doc))
		require.Error(t, err, doc)
	}
}

// The builder takes a value nesting 512 arrays and objects (engine/result's MaxOutputDepth,
// as result.OutputDepth counts them), and refuses one level more with an error, never a crash.
func TestFrozenParserDepth(t *testing.T) {
	rt := goja.New()
	parse := FrozenParser(Capture(rt))
	nested := func(n int) string {
		return strings.Repeat(`[{"a":`, n/2) + strings.Repeat("[", n%2) + "1" + strings.Repeat("]", n%2) + strings.Repeat("}]", n/2)
	}
	for _, n := range []int{511, 512} {
		_, err := parse([]byte(nested(n)))
		require.NoError(t, err, n)
	}
	for _, n := range []int{513, 514, 1_000_000} {
		_, err := parse([]byte(nested(n)))
		require.ErrorContains(t, err, "nested too deeply", n)
	}
}

// Numbers beyond float64's range are what ECMAScript's JSON.parse makes of them (goja's own
// JSON.parse refuses them): ±Infinity, and ±0 below the smallest.
func TestFrozenParserNumbersBeyondFloat64(t *testing.T) {
	rt := goja.New()
	v, err := FrozenParser(Capture(rt))([]byte(`[2e309,-2e309,1e-400,-1e-400,123456789012345678901234567890e-10]`))
	require.NoError(t, err)
	require.NoError(t, rt.Set("r", v))
	got, err := rt.RunString(`r.map(String).join(" ") + " " + Object.is(r[3], -0)`)
	require.NoError(t, err)
	require.Equal(t, "Infinity -Infinity 0 0 12345678901234567000 true", got.String())
}

// TestAFrozenArrayIsAnArrayThatCannotChange: an array the parser builds is an Array whose
// elements, length and extent cannot change, in strict code a TypeError, whose methods work.
func TestAFrozenArrayIsAnArrayThatCannotChange(t *testing.T) {
	rt := goja.New()
	v, err := FrozenParser(Capture(rt))([]byte(`[1,"two",[3]]`))
	require.NoError(t, err)
	require.NoError(t, rt.Set("r", v))
	got, err := rt.RunString(`"use strict";
		const tries = [() => r.push(4), () => { r[0] = 9; }, () => { r.length = 0; }, () => { r[5] = 1; }, () => r[2].pop(), () => { delete r[1]; }];
		const thrown = tries.map((f) => { try { f(); return "changed"; } catch (e) { return e.constructor.name; } });
		const len = Object.getOwnPropertyDescriptor(r, "length");
		[Array.isArray(r), Object.isFrozen(r), r.length, len.writable, len.enumerable, JSON.stringify(r), r.map(String).join("|"), thrown.join(",")].join(" ")`)
	require.NoError(t, err)
	require.Equal(t, `true true 3 false false [1,"two",[3]] 1|two|3 TypeError,TypeError,TypeError,TypeError,TypeError,TypeError`, got.String())
}

// TestFrozenParserIsObjectFreeze: what the parser builds is, to every reflection and method a
// script has, what Object.freeze makes of JSON.parse's value, level by level.
// TestFrozenParserRepeatsAtEveryLevel: an object whose members repeat, at every level of 500,
// is read once: each level's value is what JSON.parse gives, and reading it costs what its
// length does (made again from the start at each level, it would take 2^500 readings).
func TestFrozenParserRepeatsAtEveryLevel(t *testing.T) {
	const depth = 500
	doc := strings.Repeat(`{"k":0,"k":`, depth) + "1" + strings.Repeat(`,"z":[]}`, depth)
	rt := goja.New()
	got, err := FrozenParser(Capture(rt))([]byte(doc))
	require.NoError(t, err)
	want := strings.Repeat(`{"k":`, depth) + "1" + strings.Repeat(`,"z":[]}`, depth)
	stringify, _ := goja.AssertFunction(rt.Get("JSON").ToObject(rt).Get("stringify"))
	text, err := stringify(goja.Undefined(), got)
	require.NoError(t, err)
	require.Equal(t, want, text.String())
}

// TestFrozenParserKeepsNothingOfAParse: once a big output is parsed and let go, and a small one
// parsed after it, the parser holds none of the big one's names or values (the room it keeps
// from one parse to the next is cleared, and not kept past keptMembers).
func TestFrozenParserKeepsNothingOfAParse(t *testing.T) {
	rt := goja.New()
	parse := FrozenParser(Capture(rt))
	var b strings.Builder
	b.WriteString("{")
	pad := strings.Repeat("x", 100)
	for i := range 50_000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"%s%d":[%d]`, pad, i, i)
	}
	b.WriteString("}")
	v, err := parse([]byte(b.String()))
	require.NoError(t, err)
	b.Reset()
	held := liveHeap()
	runtime.KeepAlive(v)
	v = nil
	_, err = parse([]byte(`{"a":1}`))
	require.NoError(t, err)
	after := liveHeap()
	runtime.KeepAlive(parse)
	parse = nil
	withoutParser := liveHeap()
	runtime.KeepAlive(rt)
	// The names alone are ~6 MB, the value ~20 MB.
	assert.Greater(t, held-withoutParser, uint64(10<<20), "the value held")
	assert.Less(t, after-min(after, withoutParser), uint64(1<<20), "kept by the parser: %d bytes", after-min(after, withoutParser))
}

// liveHeap is the heap's live bytes after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func TestFrozenParserIsObjectFreeze(t *testing.T) {
	docs := []string{
		sampleResult, `{}`, `[]`, `[1,"two",[3,{"x":null}],{}]`, `{"b":1,"a":[true,false],"10":3,"2":{"__proto__":1}}`,
		`{"a":1,"b":{"c":[1]},"a":{"d":2},"b":3}`, `[[],[[]],{"":""}]`,
		"{" + strings.TrimSuffix(strings.Repeat(`"k":1,`, 20)+strings.Repeat(`"m":[2],`, 30), ",") + `,"z":0}`,
		`{"b":1,"7":2,"a":3,"0":4,"01":5,"4294967295":6,"4294967294":7,"-1":8}`, `{"x":{"y":{}},"1":[{"2":null}],"":0,"__proto__":{"a":[]}}`,
		`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9}`, `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8}`,
		// Names that are not UTF-8 (a trace's, read as bytes): goja makes each such byte a
		// U+FFFD, so these are one name, and so is "\uFFFD" written out.
		"{\"\xff\":1,\"\xfe\":2,\"a\xffb\":3,\"\xef\xbf\xbd\":4,\"a\xfeb\":5,\"\xff\xfe\":6,\"\\ufffd\\ufffd\":7}",
	}
	rt := goja.New()
	parse := FrozenParser(Capture(rt))
	// A getter and a setter on Object.prototype: a frozen value's missing properties are looked
	// up there, with the value as the receiver.
	_, err := rt.RunString(`var setterSaw = [];
	Object.defineProperty(Object.prototype, "inherited", { get() { return "got on " + Object.keys(this).length; }, configurable: true });
	Object.defineProperty(Object.prototype, "viaSetter", { set(x) { setterSaw.push(Object.keys(this).length + "=" + x); }, configurable: true });`)
	require.NoError(t, err)
	describe, err := rt.RunString(`"use strict"; (function describe(v) {
		if (v === null || typeof v !== "object") return typeof v + ":" + String(v);
		const proto = Object.getPrototypeOf(v) === Array.prototype ? "Array" : Object.getPrototypeOf(v) === Object.prototype ? "Object" : "other";
		const parts = [proto, Array.isArray(v), Object.isFrozen(v), Object.isExtensible(v), Reflect.ownKeys(v).join(",")];
		for (const k of Reflect.ownKeys(v)) {
			const d = Object.getOwnPropertyDescriptor(v, k);
			parts.push(k + "=" + [d.writable, d.enumerable, d.configurable, "get" in d, k === "length" ? d.value : describe(d.value)].join("/"));
		}
		const tries = [() => { v.added = 1; }, () => { delete v[Reflect.ownKeys(v)[0]]; }, () => { v[Reflect.ownKeys(v)[0]] = 9; }];
		if (Array.isArray(v)) {
			parts.push(v.slice(1).length, v.indexOf(v[0]), v.includes(v[v.length - 1]), [...v].length, v.concat([0]).length, JSON.stringify(v.map((x) => typeof x)), v.at(-1) === v[v.length - 1], [...v.entries()].length);
			tries.push(() => v.push(1), () => v.pop(), () => v.sort(), () => v.reverse(), () => v.splice(0, 1), () => v.fill(0), () => { v.length = 0; });
		}
		const k0 = Reflect.ownKeys(v)[0];
		tries.push(() => Object.defineProperty(v, k0, { value: v[k0] }), () => Object.defineProperty(v, k0, { value: "other" }),
			() => Object.defineProperty(v, k0, { enumerable: false }), () => Object.setPrototypeOf(v, null), () => { v.viaSetter = 5; },
			() => { v.inherited = 1; }, () => Object.freeze(v));
		const forIn = [];
		for (const k in v) forIn.push(k);
		parts.push(JSON.stringify(v), Object.keys(v).join(","), JSON.stringify(Object.values(v).map((x) => typeof x)), Object.entries(v).map((e) => e[0]).join(","),
			forIn.join(","), Object.keys({ ...v }).join(","), Object.keys(Object.assign({}, v)).join(","), "missing" in v, v.inherited, String(v.toString === Object.prototype.toString),
			Reflect.ownKeys(v).every((k) => k in v && Object.prototype.hasOwnProperty.call(v, k) && Object.prototype.propertyIsEnumerable.call(v, k)),
			JSON.stringify(Object.getOwnPropertyDescriptors(v), (k, x) => typeof x === "object" && x !== null && !Array.isArray(x) && "value" in x ? [x.writable, x.enumerable, x.configurable] : x));
		parts.push(tries.map((f) => { try { f(); return "changed"; } catch (e) { return e.constructor.name; } }).join(","), setterSaw.splice(0).join(","));
		return "{" + parts.join(" ") + "}";
	})`)
	require.NoError(t, err)
	describeFn, _ := goja.AssertFunction(describe)
	freeze, err := rt.RunString(`(function deepFreeze(v) { if (v !== null && typeof v === "object") { Object.values(v).forEach(deepFreeze); Object.freeze(v); } return v; })`)
	require.NoError(t, err)
	freezeFn, _ := goja.AssertFunction(freeze)
	for _, doc := range docs {
		got, err := parse([]byte(doc))
		require.NoError(t, err, doc)
		parsed, err := Capture(rt).Parse([]byte(doc))
		require.NoError(t, err, doc)
		want, err := freezeFn(goja.Undefined(), parsed)
		require.NoError(t, err)
		g, err := describeFn(goja.Undefined(), got)
		require.NoError(t, err, doc)
		w, err := describeFn(goja.Undefined(), want)
		require.NoError(t, err, doc)
		require.Equal(t, w.String(), g.String(), doc)
	}
}
