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
	for _, bc := range []struct {
		name, body string
		wait       time.Duration // how long the script runs before the cancel (default 1.5 s)
	}{
		{"busy loop", `for (;;) {}`, 0},
		{"deep JSON.stringify", `let o = {}; for (let i = 0; i < 200000; i++) o = { o }; for (;;) { try { JSON.stringify(o); } catch (e) {} }`, 0},
		{"wide JSON.stringify", `const a = []; for (let i = 0; i < 1000000; i++) a.push({ i }); for (;;) JSON.stringify(a);`, 0},
		{"sort of 4M", `const a = []; for (let i = 0; i < 4000000; i++) a.push((i * 7919) % 4000000); for (;;) a.sort();`, 0},
		// A search backtracking catastrophically ends at its 1 s bound by itself (the run then
		// ends regexp_time): the cancel lands 300 ms into it, so this is the rest of that second.
		{"catastrophic regexp", `const s = "a".repeat(40) + "b"; for (;;) { try { /(a+)+\1$/.test(s); } catch (e) {} }`, 300 * time.Millisecond},
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
				wait := bc.wait
				if wait == 0 {
					wait = 1500 * time.Millisecond
				}
				time.Sleep(wait) // into the native work
				b.StartTimer()
				at := time.Now()
				cancel()
				total += (<-done).Sub(at)
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/interrupt")
		})
	}
}
