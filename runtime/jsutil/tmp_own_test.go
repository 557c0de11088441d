package jsutil

import (
	"slices"
	"testing"

	"github.com/dop251/goja"
)

func BenchmarkTmpOwn(b *testing.B) {
	rt := goja.New()
	in := Capture(rt)
	v, _ := rt.RunString(`({role: "reviewer", node: "step", prompt: "Review step 1"})`)
	o := v.(*goja.Object)
	b.Run("Own", func(b *testing.B) {
		for b.Loop() {
			in.Own(o, "prompt")
		}
	})
	b.Run("gopd", func(b *testing.B) {
		for b.Loop() {
			in.gopd(goja.Undefined(), o, rt.ToValue("prompt"))
		}
	})
	b.Run("gopd+names", func(b *testing.B) {
		for b.Loop() {
			d, _ := in.gopd(goja.Undefined(), o, rt.ToValue("prompt"))
			_ = slices.Contains(d.(*goja.Object).GetOwnPropertyNames(), "get")
		}
	})
	b.Run("Get", func(b *testing.B) {
		for b.Loop() {
			o.Get("prompt")
		}
	})
	b.Run("Keys", func(b *testing.B) {
		for b.Loop() {
			o.Keys()
		}
	})
}

func BenchmarkTmpOwnJS(b *testing.B) {
	rt := goja.New()
	fnv, err := rt.RunString(`(function (gopd, hasOwn, keys) {
		const ACCESSOR = {};
		return [ACCESSOR, function (o, names) {
			const out = [];
			for (let i = 0; i < names.length; i++) {
				const d = gopd(o, names[i]);
				if (d === undefined) { out.push(undefined); continue; }
				if (hasOwn(d, "get")) { out.push(ACCESSOR); continue; }
				out.push(d.value);
			}
			return out;
		}];
	})(Object.getOwnPropertyDescriptor, Object.hasOwn, Object.keys)`)
	if err != nil {
		b.Fatal(err)
	}
	read, _ := goja.AssertFunction(fnv.(*goja.Object).Get("1"))
	v, _ := rt.RunString(`({role: "reviewer", node: "step", prompt: "Review step 1"})`)
	names := rt.ToValue([]any{"role", "node", "prompt"})
	b.Run("three", func(b *testing.B) {
		for b.Loop() {
			read(goja.Undefined(), v, names)
		}
	})
}
