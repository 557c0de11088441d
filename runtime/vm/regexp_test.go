package vm_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/runtime/runtimetest"
	"github.com/crw-dev/crw/runtime/vm"
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

// A search that backtracks catastrophically is cut off by regexp2's match timeout, which goja
// turns into "no match": crw never lets that answer reach the script. Whatever method ran the
// search, the run ends at the bound (budget_exhausted, regexp_time), and the script cannot
// catch it.
func TestCatastrophicRegExpEndsTheRun(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"test":           `/(a+)+\1$/.test(s)`,
		"exec":           `/(a+)+\1$/.exec(s)`,
		"a string match": `s.match("(a+)+\\1$")`,
		"replaceAll":     `s.replaceAll(/(a+)+\1$/g, "x")`,
		"split":          `s.split(/(a+)+\1$/)`,
		"search":         `s.search(/(a+)+\1$/)`,
		"matchAll":       `[...s.matchAll(/(a+)+\1$/g)]`,
		"sticky exec":    `Object.assign(/(a+)+\1$/y, { lastIndex: 1 }).exec(s)`,
		"a subclass":     `new (class extends RegExp {})("(a+)+\\1$", "g")[Symbol.replace](s, "")`,
	}
	// Each search takes its whole second of wall-clock time: they run side by side.
	runtimes := map[string]*runtimetest.Runtime{}
	for name, expr := range cases {
		runtimes[name] = runtimetest.New(t, runtimetest.Main(`const s = "a".repeat(34) + "b";
			try { return `+expr+`; } catch (e) { return "caught " + e.message; }`))
	}
	type result struct {
		name string
		out  json.RawMessage
		err  error
	}
	results := make(chan result, len(cases))
	for name, r := range runtimes {
		go func() {
			out, err := r.Run(context.Background())
			results <- result{name, out, err}
		}()
	}
	for range cases {
		res := <-results
		var se *vm.ScriptError
		require.ErrorAs(t, res.err, &se, "%s: the run returned %s", res.name, res.out)
		assert.Equal(t, "budget_exhausted", se.Code, res.name)
		assert.Equal(t, "regexp_time", se.Reason, res.name)
		assert.Contains(t, se.Message, "RangeError: ", res.name)
		assert.Contains(t, se.Message, "a regular-expression search found no match after running 500ms or more; crw cuts a search off at 1s", res.name)
	}
}

// Cancelling the run's context ends a search stuck in catastrophic backtracking: goja reaches
// no interrupt while regexp2 runs, but the search ends at its timeout and crw sees the run is
// being stopped. The context is cancelled as the script reaches its searches (crw.now reads the
// host's clock there), not after a time: on a loaded machine a test that slept 100 ms first was
// woken after the search's whole second, and the run ended at the search's bound instead.
func TestCancelCatastrophicRegExp(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := runtimetest.New(t, runtimetest.Main(`
		const s = "a".repeat(40) + "b";
		crw.now();
		for (;;) { try { /(a+)+\1$/.test(s); } catch (e) {} }`),
		runtimetest.WithHost(func(h *runtimetest.Host) {
			h.Clock = func() time.Time {
				cancel()
				return runtimetest.Epoch
			}
		}))
	done := make(chan error, 1)
	go func() {
		_, err := r.VM.Run(ctx)
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after ctx was cancelled")
	}
}

// Ordinary searches answer as before, whichever engine goja picks (RE2, or regexp2 for
// backreferences, lookarounds and a search that starts past 0). A RegExp whose exec is not a
// function made goja's replace and split call a nil function, which ended the process: replace
// throws a TypeError, and split, which crw runs by the specification there, uses goja's exec.
func TestRegExpSearchesStillAnswer(t *testing.T) {
	t.Parallel()
	out, _ := run(t, runtimetest.Main(`
		const name = (f) => { try { f(); return "none"; } catch (e) { return e.name; } };
		const g = /(\w)\1/g;
		const noExec = /b/; noExec.exec = undefined;
		class NoExec extends RegExp {}
		NoExec.prototype.exec = undefined;
		return [
			g.exec("xaabb").index, g.exec("xaabb").index, g.exec("xaabb"),
			/(?<=a)b/.test("ab"), /(?=c)/.test("ab"),
			"a1b22c333".replace(/\d+/g, (m) => m.length),
			"x-y_z".split(/[-_]/),
			[..."a1b2".matchAll(/\d/g)].map((m) => m.index),
			"hello".search(/l+/),
			"aXbXc".replaceAll(/x/gi, "$&$&"),
			/(a|b)*c/.test("ab".repeat(1000) + "c"),
			name(() => "abc".replace(noExec, "x")),
			"abc".split(new NoExec("b")),
		];`))
	assert.JSONEq(t, `[1, 3, null, true, false, "a1b2c3", ["x","y","z"], [1,3], 2, "aXXbXXc", true, "TypeError", ["a","c"]]`, string(out))
}

// The time a replacement function takes is the script's: a replace whose function is slow and
// gives every match back unchanged is not taken for a search cut off.
func TestSlowReplacerIsNotACutOffSearch(t *testing.T) {
	t.Parallel()
	// crw.now() is the host's clock: this one takes 700 ms to answer.
	out, _ := run(t, runtimetest.Main(`return "abc".replace(/b/g, (m) => (crw.now(), m));`),
		runtimetest.WithHost(func(h *runtimetest.Host) {
			h.Clock = func() time.Time {
				time.Sleep(700 * time.Millisecond)
				return runtimetest.Epoch
			}
		}))
	assert.Equal(t, `"abc"`, string(out))
}

// The searching methods take a missing string as "undefined", as goja does, called in any way.
func TestRegExpMethodsWithoutArguments(t *testing.T) {
	t.Parallel()
	out, _ := run(t, runtimetest.Main(`
		const p = RegExp.prototype;
		return [p[Symbol.split].call(/n/), p[Symbol.replace].call(/n/g), p[Symbol.match].call(/u/), p[Symbol.search].call(/d/),
			p.exec.call(/e/).index, p.test.call(/f/)];`))
	assert.JSONEq(t, `[["u","defi","ed"], "uundefineddefiundefineded", ["u"], 2, 3, true]`, string(out))
}
