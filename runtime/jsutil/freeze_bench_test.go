package jsutil

import (
	"testing"

	"github.com/dop251/goja"
)

const sampleResult = `{"callId":"c1","handle":"crwh1:20261130-054708-03f64b:c1","status":"completed","output":{"status":"done","summary":"Carried out the step as planned; the tests that cover it pass.","files":["internal/runner/runner.go","internal/runner/runner_test.go","cmd/tool/main.go"]},"reason":null,"meta":{"role":"architect","requestedPair":{"model":null,"effort":null},"configuredPair":{"model":null,"effort":null},"threadId":"fake-c1","turnIds":["fake-c1-t1"],"repairUsed":false,"tokens":{"input":2,"cachedInput":0,"output":22,"reasoningOutput":0,"total":24},"startSeq":2,"endSeq":5}}`

func BenchmarkParseDeepFreeze(b *testing.B) {
	rt := goja.New()
	freeze := Capture(rt).DeepFreeze
	for i := 0; i < b.N; i++ {
		v, err := Capture(rt).Parse([]byte(sampleResult))
		if err != nil {
			b.Fatal(err)
		}
		freeze(v)
	}
}

func BenchmarkParseFrozen(b *testing.B) {
	rt := goja.New()
	parse := FrozenParser(Capture(rt))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := parse([]byte(sampleResult)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseThenGoFreeze(b *testing.B) {
	rt := goja.New()
	freeze, _ := goja.AssertFunction(rt.Get("Object").ToObject(rt).Get("freeze"))
	var walk func(v goja.Value)
	walk = func(v goja.Value) {
		o, ok := v.(*goja.Object)
		if !ok {
			return
		}
		for _, k := range o.Keys() {
			walk(o.Get(k))
		}
		freeze(goja.Undefined(), o)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		v, err := Capture(rt).Parse([]byte(sampleResult))
		if err != nil {
			b.Fatal(err)
		}
		walk(v)
	}
}

func BenchmarkParseOnly(b *testing.B) {
	in := Capture(goja.New())
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := in.Parse([]byte(sampleResult)); err != nil {
			b.Fatal(err)
		}
	}
}
