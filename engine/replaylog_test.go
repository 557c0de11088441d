package engine_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/runner/progress"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/store"
)

// TestALineOnARecordedResultIsNotPrintedAgain: a fan-out paused by a rate limit while one of
// its calls had completed, then resumed: the resumed process prints what the script does with
// the calls it runs, and not again the line the first process printed on the call it saw
// complete, although the script takes that result again after it caught up with the record.
func TestALineOnARecordedResultIsNotPrintedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := enginetest.LocalService(t)
	wf := filepath.Join(t.TempDir(), "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  crw.log("begin");
  const rs = await Promise.all(["a", "b", "c"].map((n) =>
    agent.call({ role: "explorer", node: n, prompt: "look " + n }).then((r) => { crw.log("done " + n + " " + r.status); return r; })));
  crw.log("middle");
  const last = await agent.call({ role: "explorer", node: "z", prompt: "last" });
  crw.log("end " + last.status);
  return rs.map((r) => r.status);
}
`), 0o644))
	answers := func(text string) engine.ExecOptions {
		a, err := fake.ParseAnswers("answers.json", []byte(text))
		require.NoError(t, err)
		return engine.ExecOptions{Backend: fake.New(a, nil)}
	}
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
	require.NoError(t, err)
	var first, second bytes.Buffer
	// a completes; then b meets the limit (its turn held until a has ended), which pauses
	// the run; c, still under way, is held.
	x := answers(`{"answers": [{"match": {"node": "a"}, "turns": [{"text": "ok"}]},
  {"match": {"node": "b"}, "turns": [{"error": "usageLimitExceeded"}]},
  {"match": {}, "turns": [{"text": "ok", "delay_ms": 600000}]}]}`)
	gate := enginetest.Gate(x.Backend, func(c backend.Call) bool { return c.Node == "b" })
	x.Backend = gate
	x.OnEvent = func(e progress.Event) {
		if e.Kind == progress.EventCallEnded && e.Node == "a" {
			gate.Open()
		}
	}
	x.Console = &first
	end, err := svc.Execute(ctx, id, x)
	require.NoError(t, err)
	require.Equal(t, store.RunPaused, end.Status)
	require.Contains(t, first.String(), "done a completed\n", "the first process saw a complete")

	x = answers(`{"answers": []}`)
	x.Console = &second
	end, err = svc.Execute(ctx, id, x)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status)
	lines := strings.Split(strings.TrimSpace(second.String()), "\n")
	require.Len(t, lines, 4, "%q", second.String())
	ran := lines[:2]
	sort.Strings(ran)
	assert.Equal(t, []string{"done b completed", "done c completed"}, ran)
	assert.Equal(t, []string{"middle", "end completed"}, lines[2:])
}
