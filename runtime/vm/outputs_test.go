package vm_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/runtime/runtimetest"
)

// What one native step builds is refused, with a catchable RangeError, before it passes the
// bounds: 2^28 characters for a string, 4,194,304 pieces or matches for the rest. Each of these
// built gigabytes in one step, past the heap limit and the deadline, or (the nested arrays)
// overflowed the Go stack.
func TestOutputsAreBounded(t *testing.T) {
	t.Parallel()
	// Doubling, not repeat: repeat writes a character at a time, slow under the race detector.
	const prelude = `const twice = (s, n) => { for (let i = 0; i < n; i++) s += s; return s; };
		const x23 = twice("x", 23);`
	got := refusals(t, prelude+`const a26 = twice("a", 26);`, `
		"replace of every character": () => a26.replace(/a/g, "0123456789abcdef"),
		"replaceAll by a RegExp": () => a26.replaceAll(/a/g, "0123456789abcdef"),
		"replaceAll by a string": () => x23.replaceAll("x", "0123456789abcdef"),
		"replaceAll of the empty string": () => x23.replaceAll("", "-"),
		"replace by $ patterns": () => twice("x", 20).replace(/x$/, "$\u0060".repeat(300)),
		"replaceAll by $ patterns": () => twice("x", 20).replaceAll("x", "$'".repeat(300)),
		"split into characters": () => x23.split(""),
		"split by a string": () => twice("x,", 22).concat("x,").split(","),
		"split by a RegExp": () => x23.split(/(?:)/),
		"split by a subclass": () => x23.split(new (class extends RegExp {})("")),
		"a global match": () => x23.match(/(?:)/g),`)
	for name, msg := range refusals(t, prelude+`const big = twice("x", 27);
		let nested = []; for (let i = 0; i < 1e5; i++) nested = [nested];`, `
		"replace by a function": () => "xxx".replace(/x/g, () => big),
		"concat": () => big.concat(big, "y"),
		"join": () => [big, big, big].join(),
		"toLocaleString": () => [big, big, big].toLocaleString(),
		"a typed array's join": () => new Float64Array(2 ** 24).join(),
		"nested arrays": () => String(nested),`) {
		got[name] = msg
	}
	want := map[string]string{
		"replace of every character":     "RangeError: RegExp.prototype[Symbol.replace]: a global search of a string of 67108864 characters could make more than 4194304 matches",
		"replaceAll by a RegExp":         "RangeError: RegExp.prototype[Symbol.replace]: a global search of a string of 67108864 characters could make more than 4194304 matches",
		"replaceAll by a string":         "RangeError: String.prototype.replaceAll: more than 4194304 matches",
		"replaceAll of the empty string": "RangeError: String.prototype.replaceAll: more than 4194304 matches",
		"replace by $ patterns":          "RangeError: RegExp.prototype[Symbol.replace]: a string of more than 268435456 characters",
		"replaceAll by $ patterns":       "RangeError: String.prototype.replaceAll: a string of more than 268435456 characters",
		"replace by a function":          "RangeError: RegExp.prototype[Symbol.replace]: a string of more than 268435456 characters",
		"split into characters":          "RangeError: String.prototype.split: more than 4194304 pieces",
		"split by a string":              "RangeError: String.prototype.split: more than 4194304 pieces",
		"split by a RegExp":              "RangeError: RegExp.prototype[Symbol.split]: a string of 8388608 characters could split into more than 4194304 pieces",
		"split by a subclass":            "RangeError: RegExp.prototype[Symbol.split]: a string of 8388608 characters could split into more than 4194304 pieces",
		"a global match":                 "RangeError: RegExp.prototype[Symbol.match]: a global search of a string of 8388608 characters could make more than 4194304 matches",
		"concat":                         "RangeError: String.prototype.concat: a string of more than 268435456 characters",
		"join":                           "RangeError: Array.prototype.join: a string of more than 268435456 characters",
		"toLocaleString":                 "RangeError: Array.prototype.toLocaleString: a string of more than 268435456 characters",
		"a typed array's join":           "RangeError: %TypedArray%.prototype.join: 16777216 elements could make a string of more than 268435456 characters",
		"nested arrays":                  "RangeError: Array.prototype.join: arrays nested deeper than 1000 levels",
	}
	assert.Equal(t, want, got)
}

// refusals runs each of ways (an object literal's members: a name and a function) after setup
// and returns what each threw.
func refusals(t *testing.T, setup, ways string) map[string]string {
	t.Helper()
	out, _ := run(t, runtimetest.Main(setup+`
		const out = {};
		for (const [name, f] of Object.entries({`+ways+`})) {
			try { f(); out[name] = "built"; } catch (e) { out[name] = e.name + ": " + e.message; }
		}
		return out;`))
	var got map[string]string
	require.NoError(t, json.Unmarshal(out, &got))
	return got
}

// Within the bounds these answer as goja's own did: crw's expansion of a replacement string
// (taken where goja's could pass the bound, or the matches may be the script's) makes what
// goja's makes, and the split by the specification (a RegExp goja does not take for plain) the
// pieces goja's does.
func TestOutputsStillAnswer(t *testing.T) {
	t.Parallel()
	out, _ := run(t, runtimetest.Main(`
		const s = "xabcab cbc-" + "a".repeat(6000) + "bc";
		const template = "[$1|$2|$<n>|$&|$\u0060|$'|$$|$0|$3|$<x>|$<n|$12|$]";
		const plain = /(b)(?<n>c)/g;
		const marked = /(b)(?<n>c)/g; marked.mark = 1;
		const nested = [1, [2, [3, "x"]], null, undefined];
		const self = [1]; self.push(self);
		class R extends RegExp {}
		return [
			s.replace(plain, template) === s.replace(marked, template),
			"abc".replace(marked, template),
			"aaa".replace("a", "$&$\u0060$'$$"),
			"a-b-c".replaceAll("-", "$'"),
			"abc".replaceAll("", "."),
			"a1b2".replace(/\d/g, (m, i) => "<" + m + i + ">"),
			"a,b,,c".split(",", 3),
			["xundefinedy".split(), "a,b".split(",", Infinity), "a,b".split(",", -1), "a,b".split(",", { valueOf: () => 1 })],
			"a1b22c".split(/(\d+)/),
			"a1b22c".split(new R("(\\d+)")),
			"".split(new R("x")),
			"😀x😀".split(new R("", "u")),
			"abc".concat(1, [2, 3], null),
			nested.join("-"),
			String(nested),
			self.join(),
			[1.5, new Date(0)].toLocaleString().length > 0,
			new Uint8Array([1, 2, 3]).join("+"),
			["é", "x"].join("\u2028").length,
		];`))
	assert.JSONEq(t, `[
		true,
		"a[b|c|c|bc|a||$|$0|$3||$<n|b2|$]",
		"aaa$aa",
		"ab-cbcc",
		".a.b.c.",
		"a<11>b<23>",
		["a","b",""],
		[["xundefinedy"], [], ["a","b"], ["a"]],
		["a","1","b","22","c"],
		["a","1","b","22","c"],
		[""],
		["😀","x","😀"],
		"abc12,3null",
		"1-2,3,x--",
		"1,2,3,x,,",
		"1,",
		true,
		"1+2+3",
		3
	]`, string(out))
}
