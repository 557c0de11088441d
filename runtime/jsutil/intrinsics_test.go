package jsutil

import (
	"io"
	"runtime"
	"slices"
	"testing"
	"weak"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/internal/depstest"
)

// ownDataObjects are objects of every kind a script can hand crw, each with the names to read.
const ownDataObjects = `(() => {
	let calls = 0;
	const plain = { role: "reviewer", n: 1, none: undefined, nil: null, o: {} };
	const accessors = {
		get g() { calls++; return "x"; },
		set s(v) { calls++; },
		get both() { calls++; return 1; }, set both(v) { calls++; },
	};
	const defined = {};
	Object.defineProperty(defined, "bare", {});
	Object.defineProperty(defined, "hidden", { value: "h", enumerable: false });
	Object.defineProperty(defined, "fixed", { value: 2, writable: false, configurable: false, enumerable: true });
	Object.defineProperty(defined, "later", { get: undefined, set: undefined, configurable: true });
	const frozen = Object.freeze({ a: "frozen", b: [1] });
	const arr = ["zero", , "two"];
	arr.extra = true;
	const str = new String("ab");
	function fn(a, b) {}
	class C { constructor() { this.field = 1; } get proto() { return 1; } }
	const inst = new C();
	const args = (function () { return arguments; })(1, 2);
	const inherits = Object.create({ inherited: 1 });
	inherits.own = 2;
	const numeric = { b: 1, 2: "two", a: 2, 1: "one", "-1": "neg" };
	delete numeric.a;
	numeric.a = 3;
	const uni = { "é": 1, "\u{1F600}": 2, "k\ud800": 3 };
	const date = new Date(0);
	const map = new Map([[1, 2]]);
	const sym = { [Symbol("s")]: 1, t: 2 };
	const names = ["role", "n", "none", "nil", "o", "g", "s", "both", "bare", "hidden", "fixed", "later",
		"a", "b", "0", "1", "2", "3", "-1", "length", "extra", "name", "prototype", "field", "proto",
		"callee", "inherited", "own", "é", "\u{1F600}", "k\ud800", "size", "t", "missing", "constructor"];
	return {
		objects: [plain, accessors, defined, frozen, arr, str, fn, C, inst, args, inherits, numeric, uni, date, map, sym],
		names, calls: () => calls,
	};
})()`

// OwnData says of every own property what Object.getOwnPropertyDescriptor says, and runs no
// getter; AppendKeys and HasKeys agree with Keys.
func TestOwnDataIsTheDescriptor(t *testing.T) {
	rt := goja.New()
	in := Capture(rt)
	v, err := rt.RunString(ownDataObjects)
	if err != nil {
		t.Fatal(err)
	}
	set := v.ToObject(rt)
	// Integer keys come first, ascending, also when nothing listed the keys before.
	fresh := `(() => { const o = { b: 1, 2: "two", a: 2, 1: "one", "-1": "neg" }; delete o.a; o.a = 3; return o; })()`
	wantNumeric := []string{"1", "2", "b", "-1", "a"}
	for _, read := range []func(*goja.Object) bool{
		func(o *goja.Object) bool { return o.HasKeys(wantNumeric) },
		func(o *goja.Object) bool { return slices.Equal(o.AppendKeys(nil), wantNumeric) },
	} {
		o, err := rt.RunString(fresh)
		if err != nil {
			t.Fatal(err)
		}
		if !read(o.ToObject(rt)) {
			t.Errorf("the keys of a fresh object with integer keys are not %q", wantNumeric)
		}
	}

	var objects []*goja.Object
	if err := rt.ExportTo(set.Get("objects"), &objects); err != nil {
		t.Fatal(err)
	}
	var names []string
	if err := rt.ExportTo(set.Get("names"), &names); err != nil {
		t.Fatal(err)
	}
	calls, _ := goja.AssertFunction(set.Get("calls"))
	describe, err := rt.RunString(`(o, k) => {
		const d = Object.getOwnPropertyDescriptor(o, k);
		if (d === undefined) return { found: false };
		return "get" in d ? { found: true, accessor: true } : { found: true, accessor: false, value: d.value };
	}`)
	if err != nil {
		t.Fatal(err)
	}
	desc, _ := goja.AssertFunction(describe)
	checked, accessors := 0, 0
	for i, o := range objects {
		for _, name := range names {
			d, err := desc(goja.Undefined(), o, rt.ToValue(name))
			if err != nil {
				t.Fatal(err)
			}
			want := d.ToObject(rt)
			value, accessor, found, err := o.OwnData(name)
			if err != nil {
				t.Fatalf("object %d, %q: %v", i, name, err)
			}
			if found != want.Get("found").ToBoolean() {
				t.Errorf("object %d, %q: found %v, the descriptor says %v", i, name, found, !found)
				continue
			}
			if !found {
				if value != nil || accessor {
					t.Errorf("object %d, %q: not found, but value %v, accessor %v", i, name, value, accessor)
				}
				continue
			}
			checked++
			if accessor != want.Get("accessor").ToBoolean() {
				t.Errorf("object %d, %q: accessor %v, the descriptor says %v", i, name, accessor, !accessor)
				continue
			}
			if accessor {
				accessors++
				if value != nil {
					t.Errorf("object %d, %q: an accessor with a value %v", i, name, value)
				}
				continue
			}
			if value == nil || !value.SameAs(want.Get("value")) {
				t.Errorf("object %d, %q: value %v, the descriptor's %v", i, name, value, want.Get("value"))
			}
			p, err := in.Own(o, name)
			if err != nil || !p.Found || p.Accessor || !p.Value.SameAs(value) {
				t.Errorf("object %d, %q: Own gives %+v, %v", i, name, p, err)
			}
		}
		keys := o.Keys()
		if got := o.AppendKeys([]string{"before"}); !slices.Equal(got, append([]string{"before"}, keys...)) {
			t.Errorf("object %d: AppendKeys gives %q, Keys %q", i, got, keys)
		}
		if !o.HasKeys(keys) {
			t.Errorf("object %d: HasKeys(%q) is false", i, keys)
		}
		if len(keys) > 0 && (o.HasKeys(keys[1:]) || o.HasKeys(append(slices.Clone(keys), "more"))) ||
			len(keys) > 1 && o.HasKeys(slices.Concat(keys[1:], keys[:1])) {
			t.Errorf("object %d: HasKeys holds for other keys than %q", i, keys)
		}
	}
	// Written out: the properties the objects have (5 plain, 3 accessors, 4 defined, 2 frozen,
	// 4 of the array (not its hole), 3 of the String, 3 each of the function and the class,
	// 1 of the instance, 4 of the arguments, 1 own beside the inherited, 5 numeric, 2 of the
	// unicode keys (the lone surrogate's name reads as U+FFFD in Go), 1 beside the symbol),
	// and how many are accessors (g, s, both, and later, defined with neither function).
	if checked != 41 || accessors != 4 {
		t.Errorf("checked %d properties, %d accessors; want 41 and 4", checked, accessors)
	}
	if n, _ := calls(goja.Undefined()); n.ToInteger() != 0 {
		t.Errorf("%d getters or setters ran", n.ToInteger())
	}
	numeric := objects[11]
	if got, want := numeric.Keys(), wantNumeric; !slices.Equal(got, want) || !numeric.HasKeys(want) {
		t.Errorf("keys of the numeric object: %q, want %q", got, want)
	}
	p, err := in.Own(objects[1], "g")
	if err != nil || !p.Found || !p.Accessor || p.Getter == nil {
		t.Errorf("Own of a getter: %+v, %v", p, err)
	}
	if p, err := in.Own(objects[2], "later"); err != nil || !p.Accessor || p.Getter != nil {
		t.Errorf("Own of an accessor without a getter: %+v, %v", p, err)
	}
	// An Error's stack is made on its first read, from its name: a getter that throws there
	// is an error, not a panic, as it is through the descriptor.
	e, err := rt.RunString(`(() => { const e = new Error("m"); Object.defineProperty(e, "name", { get() { throw 1; } }); return e; })()`)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := in.Own(e.ToObject(rt), "stack"); err == nil {
		t.Errorf("Own of the stack of an Error whose name throws: %+v, no error", p)
	}
	// And one whose name's getter overflows the stack: an error too, not a panic.
	deep := goja.New()
	deep.SetMaxCallStackSize(100)
	deepIn := Capture(deep)
	e, err = deep.RunString(`(() => { const e = new Error("m"); Object.defineProperty(e, "name", { get() { return this.name; } }); return e; })()`)
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("Own of the stack of an Error whose name overflows the stack panicked: %v", r)
			}
		}()
		if p, err := deepIn.Own(e.ToObject(deep), "stack"); err == nil {
			t.Errorf("Own of the stack of an Error whose name overflows the stack: %+v, no error", p)
		}
	}()
}

// TestGojaHasNoProfiler: crw's goja has its profiler taken out (third_party/goja/CRW.md), so
// that no crw process initializes github.com/google/pprof/profile at its start: StartProfile
// refuses, and goja imports no package of pprof's.
func TestGojaHasNoProfiler(t *testing.T) {
	t.Parallel()
	require.Error(t, goja.StartProfile(io.Discard))
	goja.StopProfile() // nothing to stop
	depstest.Forbid(t, map[string][]string{"github.com/dop251/goja": {"github.com/google/pprof"}})
}

// TestTheStackKeptBetweenEntriesHoldsNothing: crw's goja keeps the VM's stack array from one
// entry from Go to the next (third_party/goja/CRW.md), cleared: a value the script left on it
// is not kept alive by it once the script has returned.
func TestTheStackKeptBetweenEntriesHoldsNothing(t *testing.T) {
	rt := goja.New()
	var held weak.Pointer[goja.Object]
	require.NoError(t, rt.Set("note", func(o *goja.Object) { held = weak.Make(o) }))
	_, err := rt.RunString(`(function () { const o = { payload: "x".repeat(1 << 16) }; note(o); return 1; })()`)
	require.NoError(t, err)
	require.NotNil(t, held.Value(), "noted")
	runtime.GC()
	runtime.GC()
	assert.Nil(t, held.Value(), "the object the script left on the stack was collected")
	_, err = rt.RunString(`[1, 2, 3].map(x => x * 2).join(",")`)
	require.NoError(t, err, "the runtime goes on with the stack it kept")
	runtime.KeepAlive(rt)
}
