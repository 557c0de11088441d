package jsutil

import (
	"testing"

	"github.com/dop251/goja"
)

// benchSchema is the answer schema a workflow passes to its calls: a few nested objects and
// arrays of short strings.
const benchSchema = `({ type: "object", properties: {
  status: { type: "string" }, summary: { type: "string" }, files: { type: "array", items: { type: "string" } },
}, required: ["status", "summary", "files"], additionalProperties: false })`

// BenchmarkJSONSchema is what reading a schema object costs: a DataOnly walk, and a memo's
// check of a schema it has read before.
func BenchmarkJSONSchema(b *testing.B) {
	rt := goja.New()
	in := Capture(rt)
	v, err := rt.RunString(benchSchema)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("walk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := in.JSON(v, DataOnly, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("memo", func(b *testing.B) {
		b.ReportAllocs()
		m := in.NewMemo(8, 0)
		o := v.(*goja.Object)
		for b.Loop() {
			if _, err := m.JSON(o); err != nil {
				b.Fatal(err)
			}
		}
	})
}
