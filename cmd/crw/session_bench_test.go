package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/backends"
	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/session"
	"github.com/crw-dev/crw/engine/backend/session/bus"
	"github.com/crw-dev/crw/engine/backend/session/sessiontest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store/local"
)

// BenchmarkFlowNextAt1000Calls is `crw flow next RUN --json` as the owner runs it, a process
// of its own, on a live session run of 1,000 calls: 999 ended, the last one bound and working.
// ms/help is `crw --help` on the same machine: what any crw process costs to start.
// The run is held by this process (an in-memory host and owner), so the command reads its
// journal through the holder, as it does on a live run.
func BenchmarkFlowNextAt1000Calls(b *testing.B) {
	const calls = 1000
	dir := b.TempDir()
	state := filepath.Join(dir, "state")
	st, err := local.New(state)
	require.NoError(b, err)
	svc := &engine.Service{Store: st, Backends: backends.Registry()}
	wf := filepath.Join(dir, "wf.js")
	require.NoError(b, os.WriteFile(wf, []byte(`
import { agent } from "crw:agent";
export default async function main() {
  for (let i = 0; i < 1000; i++) await agent.call({ role: "explorer", prompt: "step " + i });
}
`), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Backend: session.Name,
		BackendOpts: map[string]string{"owner": "owner-thread", "host": "unix://" + filepath.Join(dir, "none.sock")}})
	require.NoError(b, err)
	host := sessiontest.NewHost("owner-thread")
	o := &sessiontest.Owner{Host: host, Bus: bus.Bus{Dir: st.RunDir(id)}, Run: id, Answer: func(s bus.StepFile) sessiontest.Answer {
		if s.Call == "c1000" {
			return sessiontest.Answer{Hold: true}
		}
		return sessiontest.Answer{Text: "done"}
	}}
	var ready atomic.Bool // the owner slows down once the run is set up, to load the machine less
	go func() {
		for ctx.Err() == nil {
			o.Pass()
			if ready.Load() {
				time.Sleep(100 * time.Millisecond)
			} else {
				time.Sleep(200 * time.Microsecond)
			}
		}
	}()
	be := session.New(session.Config{Run: id, Owner: "owner-thread", Host: host, Dir: st.RunDir(id), Poll: 2 * time.Millisecond})
	done := make(chan struct{})
	go func() {
		defer close(done)
		svc.Execute(ctx, id, engine.ExecOptions{Backend: be})
	}()
	defer func() { cancel(); <-done; be.Close() }()
	require.Eventually(b, func() bool {
		rows, err := svc.Rows(ctx, id)
		return err == nil && countType(rows, journal.TypeCompleted) == calls-1 && countType(rows, journal.TypeTurnStarted) == calls
	}, 2*time.Minute, 50*time.Millisecond)
	ready.Store(true)

	// The command as users run it: a crw binary built from this tree as the README builds it
	// (the test binary, which can be crw too, starts slower).
	self := filepath.Join(dir, "crw")
	build := exec.Command("go", "build", "-o", self, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(b, err, "%s", out)
	home := filepath.Join(dir, "codex-home")
	require.NoError(b, os.Mkdir(home, 0o700))
	// The floor: a crw process that reads nothing (its start alone).
	var floor time.Duration
	for range 10 {
		start := time.Now()
		require.NoError(b, exec.Command(self, "--help").Run())
		floor += time.Since(start)
	}
	b.ResetTimer()
	for b.Loop() {
		cmd := exec.Command(self, "--json", "flow", "next", id)
		cmd.Env = append(os.Environ(), "CRW_STATE="+state, "CODEX_HOME="+home)
		out, err := cmd.Output()
		require.NoError(b, err, "%s", out)
	}
	b.ReportMetric(float64(floor.Microseconds())/10/1000, "ms/help")
}

func countType(rows []journal.Row, typ string) int {
	n := 0
	for _, r := range rows {
		if r.Type == typ {
			n++
		}
	}
	return n
}
