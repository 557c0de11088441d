package appserver

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/codex"
)

// BenchmarkAppServerStart measures the start of an app server until it has answered
// initialize: through the npm launcher, and the native binary it starts.
func BenchmarkAppServerStart(b *testing.B) {
	h := newHarness(b, "")
	bins := map[string]string{"npm": h.opts.Codex}
	native, _ := filepath.Abs("../../../.tools/codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")
	if _, err := os.Stat(native); err == nil {
		bins["native"] = native
	}
	for name, bin := range bins {
		b.Run(name, func(b *testing.B) {
			o := h.b.o
			o.Codex = bin
			for i := 0; i < b.N; i++ {
				p, err := startProcess(context.Background(), &o)
				require.NoError(b, err)
				b.StopTimer()
				p.Stop(5 * time.Second)
				b.StartTimer()
			}
		})
	}
}

// BenchmarkTurn runs one mock turn on a new thread through a bare client and through the
// Backend, alternately on one app server (whose turns slow down as threads pile up), and
// reports the mean of each; the difference is the Backend's cost per call.
func BenchmarkTurn(b *testing.B) {
	h := newHarness(b, "")
	ctx := context.Background()
	p, err := h.b.conn(ctx)
	require.NoError(b, err)
	var client, through time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		r, err := p.Client().StartThread(ctx, codex.ThreadParams{Cwd: h.opts.Cwd, ApprovalPolicy: "never", Sandbox: "workspace-write"})
		require.NoError(b, err)
		id, err := p.Client().StartTurn(ctx, r.Thread.ID, "Say ok.", nil)
		require.NoError(b, err)
		res, err := p.Client().WaitTurn(ctx, id)
		require.NoError(b, err)
		require.Equal(b, "ok", codex.FinalAnswer(res.Messages))
		client += time.Since(start)

		start = time.Now()
		c := h.call("executor", "bench", "")
		require.Equal(b, "ok", h.run(h.open(c, backend.Thread{}), c, 1, "Say ok.").Text)
		through += time.Since(start)
	}
	b.ReportMetric(float64(client.Microseconds())/1000/float64(b.N), "client-ms/turn")
	b.ReportMetric(float64(through.Microseconds())/1000/float64(b.N), "backend-ms/turn")
}
