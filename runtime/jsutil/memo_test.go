package jsutil

import (
	"strings"
	"testing"

	"github.com/dop251/goja"
)

// Each change a script can make to an object it gave before is seen: the Memo's JSON after the
// change is the walk's, and differs from before.
func TestMemoSeesEveryChange(t *testing.T) {
	const schema = `({ type: "object", properties: { a: { type: "string" }, list: { type: "array",
		items: { enum: ["x", "y", 1, true, null] } } }, required: ["a"] })`
	cases := []struct{ name, change, want string }{
		{"nested value", `o.properties.a.type = "number"`, `"a":{"type":"number"}`},
		{"added member", `o.title = "t"`, `"required":["a"],"title":"t"}`},
		{"deleted member", `delete o.required`, `}}}}`},
		{"reordered members", `const r = o.type; delete o.type; o.type = r`, `"required":["a"],"type":"object"}`},
		{"member made not enumerable", `Object.defineProperty(o, "required", { enumerable: false })`, `}}}}`},
		{"replaced object", `o.properties = { b: { type: "string" } }`, `"properties":{"b":{"type":"string"}}`},
		{"array element", `o.properties.list.items.enum[1] = "z"`, `["x","z",1,true,null]`},
		{"array pushed", `o.properties.list.items.enum.push(2)`, `["x","y",1,true,null,2]`},
		{"array shortened", `o.properties.list.items.enum.length = 1`, `"enum":["x"]`},
		{"number for a string", `o.properties.list.items.enum[2] = "1"`, `["x","y","1",true,null]`},
		{"minus zero", `o.properties.list.items.enum[2] = 0; o.then = 1`, `["x","y",0,true,null]`},
		{"undefined member", `o.properties.a.type = undefined`, `"a":{}`},
		{"a hole", `delete o.properties.list.items.enum[0]`, `[null,"y",1,true,null]`},
		{"a new object in place of the same content", `o.properties.a = { type: "string" }; o.x = 1`, `"required":["a"],"x":1}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt, in, o, m, before := memoized(t, "var o = "+schema+"; o")
			again, _ := m.JSON(o)
			if string(again) != string(before) {
				t.Fatalf("unchanged: %s, then %s", before, again)
			}
			if _, err := rt.RunString(c.change); err != nil {
				t.Fatal(err)
			}
			after, err := m.JSON(o)
			if err != nil {
				t.Fatal(err)
			}
			fresh, _ := in.JSON(o, DataOnly, 0)
			if string(after) != string(fresh) || string(after) == string(before) || !strings.Contains(string(after), c.want) {
				t.Fatalf("after %s: memo %s, walk %s, before %s; want %s in it", c.change, after, fresh, before, c.want)
			}
			if again, _ := m.JSON(o); string(again) != string(fresh) {
				t.Fatalf("read again: %s, want %s", again, fresh)
			}
		})
	}
}

// A getter is refused on every read, and what was refused is not kept.
func TestMemoRefusesGetters(t *testing.T) {
	rt := goja.New()
	in := Capture(rt)
	v, err := rt.RunString(`var calls = 0; ({ type: "object", properties: { a: { get type() { calls++; return "string"; } } } })`)
	if err != nil {
		t.Fatal(err)
	}
	m := in.NewMemo(8, 0)
	for i := 0; i < 2; i++ {
		_, err := m.JSON(v.(*goja.Object))
		if err == nil || err.Error() != "$.properties.a.type: a getter, which crw does not call: give the value itself" {
			t.Fatalf("read %d: %v", i, err)
		}
	}
	if n := rt.Get("calls").ToInteger(); n != 0 {
		t.Fatalf("the getter ran %d times", n)
	}
	if len(m.byRoot) != 0 {
		t.Fatalf("kept %d refused objects", len(m.byRoot))
	}
}

// A frozen object is kept as frozen and never read again; a partly frozen one is checked.
func TestMemoFrozen(t *testing.T) {
	rt := goja.New()
	in := Capture(rt)
	deep, _ := rt.RunString(`Object.freeze({ a: Object.freeze({ b: Object.freeze([1, 2]) }) })`)
	shallow, _ := rt.RunString(`var s = Object.freeze({ a: { b: 1 } }); s`)
	m := in.NewMemo(8, 0)
	for _, c := range []struct {
		v      goja.Value
		frozen bool
	}{{deep, true}, {shallow, false}} {
		if _, err := m.JSON(c.v.(*goja.Object)); err != nil {
			t.Fatal(err)
		}
		if e := m.byRoot[c.v.(*goja.Object)]; e == nil || e.frozen != c.frozen {
			t.Fatalf("%v: kept %+v, want frozen %v", c.v, e, c.frozen)
		}
	}
	if _, err := rt.RunString(`s.a.b = 2`); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.JSON(shallow.(*goja.Object)); string(got) != `{"a":{"b":2}}` {
		t.Fatalf("a shallowly frozen object changed below: %s", got)
	}
}

// What a Memo keeps is bounded: in objects, and in the members one object may have.
func TestMemoBounds(t *testing.T) {
	rt := goja.New()
	in := Capture(rt)
	m := in.NewMemo(2, 0)
	for i := 0; i < 5; i++ {
		v, _ := rt.RunString(`({ type: "string" })`)
		if _, err := m.JSON(v.(*goja.Object)); err != nil {
			t.Fatal(err)
		}
		if len(m.byRoot) > 2 {
			t.Fatalf("after %d objects it keeps %d", i+1, len(m.byRoot))
		}
	}
	big, _ := rt.RunString(`var big = { enum: Array.from({ length: 5000 }, (_, i) => i) }; big`)
	first, err := m.JSON(big.(*goja.Object))
	if err != nil || !strings.HasSuffix(string(first), ",4999]}") {
		t.Fatalf("%.40s…: %v", first, err)
	}
	if m.byRoot[big.(*goja.Object)] != nil {
		t.Fatal("an object of 5,000 members was kept")
	}
	rt.RunString(`big.enum[4999] = "last"`)
	if got, _ := m.JSON(big.(*goja.Object)); !strings.HasSuffix(string(got), `,"last"]}`) {
		t.Fatalf("%s", got[len(got)-20:])
	}
}

// What a plain get of the members cannot tell apart is told apart too: a hole whose
// prototype gives the value that was there, a member made a getter that gives the same value
// (not called), and a key renamed to another that reads the same in Go (a lone surrogate for
// U+FFFD). The Memo's JSON or error after each is the walk's, and no getter runs.
func TestMemoIsTheWalkWhereAGetCannotTell(t *testing.T) {
	cases := []struct{ setup, change string }{
		{`({ a: [1, 2] })`, `delete o.a[0]; Array.prototype[0] = 1`},
		{`({ a: [1, 2] })`, `delete o.a[0]; Object.defineProperty(Array.prototype, "0", { get() { runs++; return 1; }, configurable: true })`},
		{`({ a: [1, 2] })`, `Object.defineProperty(o.a, "0", { get() { runs++; return 1; } })`},
		{`({ a: 1, b: 2 })`, `Object.defineProperty(o, "a", { get() { runs++; return 1; }, enumerable: true })`},
		{`({ "\ufffd": undefined, b: 1 })`, `delete o["\ufffd"]; o["\ud800"] = undefined; const b = o.b; delete o.b; o.b = b`},
		{`({ "\ufffd": 1 })`, `delete o["\ufffd"]; o["\ud800"] = 1`},
	}
	for _, c := range cases {
		t.Run(c.change, func(t *testing.T) {
			rt, in, o, m, before := memoized(t, "var runs = 0; var o = "+c.setup+"; o")
			if _, err := rt.RunString(c.change); err != nil {
				t.Fatal(err)
			}
			after, errAfter := m.JSON(o)
			fresh, errFresh := in.JSON(o, DataOnly, 0)
			if string(after) != string(fresh) || (errAfter == nil) != (errFresh == nil) {
				t.Errorf("memo %s, %v; walk %s, %v (before %s)", after, errAfter, fresh, errFresh, before)
			}
			if runs := rt.Get("runs").ToInteger(); runs != 0 {
				t.Errorf("a getter ran %d times", runs)
			}
		})
	}
}

// memoized runs script, whose value is an object, in a runtime of its own and reads the
// object's JSON through a new Memo once, as a first agent.call would.
func memoized(t *testing.T, script string) (*goja.Runtime, *Intrinsics, *goja.Object, *Memo, []byte) {
	t.Helper()
	rt := goja.New()
	in := Capture(rt)
	v, err := rt.RunString(script)
	if err != nil {
		t.Fatal(err)
	}
	o := v.(*goja.Object)
	m := in.NewMemo(8, 0)
	before, err := m.JSON(o)
	if err != nil {
		t.Fatal(err)
	}
	return rt, in, o, m, before
}
