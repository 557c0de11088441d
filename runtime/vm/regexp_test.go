package vm_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/runtime/runtimetest"
)

// A pattern compiled at run time may nest its groups at most 2,000 deep, however it reaches the
// compiler: regexp2 recursed once per group until the Go stack overflowed and the process died.
func TestRegExpPatternNestingIsBounded(t *testing.T) {
	t.Parallel()
	out, _ := run(t, runtimetest.Main(`
		const deep = "(".repeat(1e6) + ")".repeat(1e6) + "\\1";
		let reads = 0;
		const fickle = { toString() { return reads++ === 0 ? "a" : deep; } };
		const ways = {
			"new RegExp": () => new RegExp(deep),
			"RegExp": () => RegExp(deep, "g"),
			"a subclass": () => new (class extends RegExp {})(deep),
			"Reflect.construct": () => Reflect.construct(RegExp, [deep]),
			"an object's string": () => new RegExp({ toString: () => deep }),
			"a regexp-like object": () => new RegExp({ [Symbol.match]: true, source: deep, flags: "" }),
			"compile": () => /a/.compile(deep),
			"compile of an object": () => /a/.compile({ toString: () => deep }),
			"String.prototype.match": () => "x".match(deep),
			"String.prototype.matchAll": () => "x".matchAll(deep),
			"String.prototype.search": () => "x".search(deep),
			"match of an object": () => "x".match({ toString: () => deep }),
			"a string read once": () => "x".search(fickle),
		};
		const out = {};
		for (const [name, f] of Object.entries(ways)) {
			try { f(); out[name] = "compiled"; } catch (e) { out[name] = e.name + ": " + e.message; }
		}
		return out;`))
	var got map[string]string
	require.NoError(t, json.Unmarshal(out, &got))
	require.Len(t, got, 13)
	for name, msg := range got {
		if name == "a string read once" {
			assert.Equal(t, "compiled", msg, "the pattern was read once, as 'a'")
			continue
		}
		assert.Equal(t, "RangeError: RegExp: the pattern's groups nest more than 2000 deep", msg, name)
	}
}

// The bound leaves RegExp as it was: its identity, subclasses, species, a pattern's escaped and
// class-held parentheses, and the objects String.prototype.match accepts.
func TestRegExpStillWorks(t *testing.T) {
	t.Parallel()
	out, _ := run(t, runtimetest.Main(`
		const re = /a(b)/g;
		class R extends RegExp { exec(s) { return super.exec(s); } }
		const matcher = { [Symbol.match]: (s) => "matched " + s };
		return [
			RegExp(re) === re,
			/x/.constructor === RegExp,
			re instanceof RegExp,
			new R("b+", "g")[Symbol.replace]("abbc", "-"),
			"a,b;c".split(new R("[,;]")),
			new RegExp(re, "i").flags,
			new RegExp("\\(".repeat(3000) + "[(]".repeat(3000)).test("(".repeat(6000)),
			new RegExp("(".repeat(2000) + "a" + ")".repeat(2000) + "\\1").test("aa"),
			"xabab".match("ab").index,
			[..."abab".matchAll("b")].length,
			"xyz".search("z"),
			"s".match(matcher),
			"a1b2".replace(/\d/g, "#"),
			new RegExp({ [Symbol.match]: true, source: "q+", flags: "g" }).flags,
			/x/.compile("y+", "g").source,
			String(RegExp({ toString: () => "o" })),
		];`))
	assert.JSONEq(t, `[true, true, true, "a-c", ["a","b","c"], "i", true, true, 1, 2, 2, "matched s", "a#b#", "g", "y+", "/o/"]`, string(out))
}
