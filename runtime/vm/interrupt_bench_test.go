package vm_test

import (
	"context"
	"testing"
	"time"

	"github.com/crw-dev/crw/runtime/runtimetest"
)

// BenchmarkInterruptLatency measures how long a cancelled script takes to stop inside work that
// runs in goja's natives: the time from the cancel to Run's return, in ms per op.
func BenchmarkInterruptLatency(b *testing.B) {
	for _, bc := range []struct{ name, body string }{
		{"busy loop", `for (;;) {}`},
		{"deep JSON.stringify", `let o = {}; for (let i = 0; i < 200000; i++) o = { o }; for (;;) { try { JSON.stringify(o); } catch (e) {} }`},
		{"wide JSON.stringify", `const a = []; for (let i = 0; i < 1000000; i++) a.push({ i }); for (;;) JSON.stringify(a);`},
		{"sort of 4M", `const a = []; for (let i = 0; i < 4000000; i++) a.push((i * 7919) % 4000000); for (;;) a.sort();`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var total time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				r := runtimetest.New(b, runtimetest.Main(bc.body))
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan time.Time, 1)
				go func() {
					_, _ = r.VM.Run(ctx)
					done <- time.Now()
				}()
				time.Sleep(1500 * time.Millisecond) // into the native work
				b.StartTimer()
				at := time.Now()
				cancel()
				total += (<-done).Sub(at)
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/interrupt")
		})
	}
}
