package jsutil

import (
	"runtime"
	"testing"

	"github.com/dop251/goja"
)

// A value JSON cannot serialize is refused with the path to the part that is wrong.
func TestJSONErrorsNameWhere(t *testing.T) {
	cases := []struct{ value, want string }{
		{`({ a: [1, { get b() { return 1; } }] })`, `$.a[1].b: a getter, which crw does not call: give the value itself`},
		{`(() => { const o = { x: { y: [] } }; o.x.y.push(o); return o; })()`, `$.x.y[0]: a circular structure: the value contains itself`},
		{`({ list: [1, 2, new Proxy({}, {})] })`, `$.list[2]: a Proxy`},
		{`({ n: { "odd key": 10n } })`, `$.n.odd key: a BigInt, which JSON cannot hold`},
		{`({ s: "x".repeat(40) })`, `$.s: a string longer than 32`},
		{`({ a: "0123456789", b: "0123456789", c: "0123456789" })`, `$.b: larger than 32 bytes`},
		{`({ a: [[], new Array(40)] })`, `$.a[1]: an array of 40 elements, larger than 32 bytes`},
		{`({ t: new Uint8Array(6) })`, `$.t: a typed array of 6 elements, larger than 32 bytes`},
		{`({ t: new Float64Array(1e6) })`, `$.t: a typed array of 1000000 elements, larger than 32 bytes`},
		{`({ e: ["ok", "\ud800"] })`, `$.e[1]: a string that holds a lone UTF-16 surrogate \ud800 at index 0 (it would read as U+FFFD)`},
		{`"a\udfffb"`, `$: a string that holds a lone UTF-16 surrogate \udfff at index 1 (it would read as U+FFFD)`},
		{`({ p: { "k\ud800": 1 } })`, `$.p.k�: a key that holds a lone UTF-16 surrogate (it would read as U+FFFD)`},
		{`({ "\ufffd": 1, "\udc00": 2 })`, `$.�: a key that holds a lone UTF-16 surrogate (it would read as U+FFFD)`},
	}
	for _, c := range cases {
		rt := goja.New()
		in := Capture(rt)
		v, err := rt.RunString(c.value)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := in.JSON(v, DataOnly, 32); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %s", c.value, err, c.want)
		}
	}
}

// The walk writes what JSON.stringify writes, escapes included.
func TestJSONIsJSONStringify(t *testing.T) {
	rt := goja.New()
	in := Capture(rt)
	for _, src := range []string{
		`({ "\ufffd": "\ufffd \ud83d\ude00", k: ["\ud800\udc00"] })`,
		`({ a: "plain", b: "quote \" back \\ nl \n tab \t <&> é 😀 \u0001", c: [1, -0, 1.5, 1e21, NaN, Infinity, true, null, undefined, () => 1], d: undefined, e: new String("boxed"), f: {}, g: new Number(2.5), h: new Boolean(false) })`,
		`[, 1, , 2]`,
		`"top"`,
	} {
		v, err := rt.RunString(src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := in.JSON(v, DataOnly, 0)
		if err != nil {
			t.Fatal(err)
		}
		rt.Set("v", v)
		want, _ := rt.RunString(`JSON.stringify(v)`)
		if string(got) != want.String() {
			t.Errorf("%s:\n got %s\nwant %s", src, got, want)
		}
	}
}

// TestAHugeTypedArrayIsRefusedFromItsLength: a typed array's JSON is an object of its indexes;
// one too large for the bound is refused before a string is made of any of them (the walk of a
// 40 MB Uint8Array took 2.5 GB and 25 s), and a small one is written as JSON.stringify writes it.
func TestAHugeTypedArrayIsRefusedFromItsLength(t *testing.T) {
	rt := goja.New()
	in := Capture(rt)
	v, err := rt.RunString(`({ schema: { x: new Uint8Array(8 << 20) }, small: new Int16Array([1, -2]) })`)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = in.JSON(v.ToObject(rt).Get("schema"), DataOnly, 4<<20)
	runtime.ReadMemStats(&after)
	if want := "$.x: a typed array of 8388608 elements, larger than 4194304 bytes"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("the refusal allocated %d bytes", grew)
	}
	got, err := in.JSON(v.ToObject(rt).Get("small"), DataOnly, 4<<20)
	if err != nil || string(got) != `{"0":1,"1":-2}` {
		t.Errorf("a small typed array: %s, %v", got, err)
	}
}
