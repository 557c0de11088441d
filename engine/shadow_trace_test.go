package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/shadow"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// firstWrite calls fn at its first Write: given as a shadow's console, at the script's first
// console.log.
type firstWrite struct {
	fn   func()
	done bool
}

func (w *firstWrite) Write(p []byte) (int, error) {
	if !w.done {
		w.done = true
		w.fn()
	}
	return len(p), nil
}

// tracedRun records a run of n calls ("Count i") and writes its trace to a file; script
// writes a workflow that logs before call 6 and asks call 6 with the prompt p6.
func tracedRun(t *testing.T, n int) (svc *engine.Service, tracePath string, script func(p6 string) string) {
	t.Helper()
	ctx := context.Background()
	svc, _ = enginetest.LocalService(t)
	dir := t.TempDir()
	script = func(p6 string) string {
		wf := filepath.Join(dir, fmt.Sprintf("wf-%d.js", len(p6)))
		require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
export default async function main() {
  for (let i = 1; i <= `+fmt.Sprint(n)+`; i++) {
    if (i === 6) console.log("now");
    await agent.call({ role: "reviewer", node: "n", prompt: i === 6 ? "`+p6+`" : "Count " + i });
  }
  return "ok";
}`), 0o644))
		return wf
	}
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: script("Count 6")})
	require.NoError(t, err)
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, nil)})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	rows, err := svc.Rows(ctx, id)
	require.NoError(t, err)
	var trace bytes.Buffer
	require.NoError(t, journal.Export(&trace, id, rows))
	tracePath = filepath.Join(dir, "trace.jsonl")
	require.NoError(t, os.WriteFile(tracePath, trace.Bytes(), 0o600))
	return svc, tracePath, script
}

// changeLastEnd changes one byte of the trace in place, in the last call's terminal row: the
// block of lines that row is in is no longer what the trace's first reading read.
func changeLastEnd(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	i := bytes.LastIndex(data, []byte(`"type":"completed"`))
	require.Positive(t, i)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("X"), int64(i+12)) // "compXeted"
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// shadowOfTrace runs script against the trace at path, read keeping budget of its calls' rows,
// calling change at the script's first console.log.
func shadowOfTrace(t *testing.T, svc *engine.Service, path, script string, budget int, change func()) (*shadow.Report, error) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	tf, err := journal.OpenTrace(f)
	require.NoError(t, err)
	h, traceErr, err := shadow.ReadTrace(tf, budget)
	require.NoError(t, traceErr)
	require.NoError(t, err)
	return svc.Shadow(context.Background(), "", shadow.Options{Script: script, History: h, Trace: tf, Log: &firstWrite{fn: change}})
}

// A trace changed while its shadow runs fails the shadow, saying so, rather than report a
// divergence from a stand-in of the recorded row (its prompt "") or fail as a journal of
// another schema: a divergence names the recorded prompt only when the trace is as it was.
func TestATraceChangedWhileItsShadowRunsSaysSo(t *testing.T) {
	t.Parallel()
	svc, path, script := tracedRun(t, 10)
	rep, err := shadowOfTrace(t, svc, path, script("Changed"), replay.KeptBudget, func() {})
	require.NoError(t, err)
	require.Len(t, rep.Divergences, 1)
	d, err := json.Marshal(rep.Divergences[0])
	require.NoError(t, err)
	assert.Contains(t, string(d), `"expected":"Count 6"`, "the recorded prompt, read again from the trace")

	_, err = shadowOfTrace(t, svc, path, script("Changed"), replay.KeptBudget, func() { changeLastEnd(t, path) })
	var traceErr *journal.TraceError
	require.True(t, errors.As(err, &traceErr), "%v", err)
	assert.Contains(t, traceErr.Error(), "the trace changed while it was read")

	// Calls read again as they are delivered find the change the same way.
	svc, path, script = tracedRun(t, 400) // past what the History loads ahead of the deliveries
	_, err = shadowOfTrace(t, svc, path, script("Count 6"), -1, func() { changeLastEnd(t, path) })
	require.True(t, errors.As(err, &traceErr), "%v", err)
	assert.Contains(t, traceErr.Error(), "the trace changed while it was read")
}

// What is wrong with a trace's lines is said before what its History finds wrong with its
// rows, as when the trace was read whole first: a row naming a call that has no prepared row,
// and after it a line cut short, is the line's error.
func TestATracesLineIsSaidBeforeItsHistory(t *testing.T) {
	t.Parallel()
	_, path, _ := tracedRun(t, 3)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	lines[3] = bytes.Replace(lines[3], []byte(`"call":"c1"`), []byte(`"call":"c9"`), 1) // seq 3, c1's thread_started
	last := lines[len(lines)-1]
	lines[len(lines)-1] = last[:len(last)-5]
	require.NoError(t, os.WriteFile(path, bytes.Join(lines, nil), 0o600))

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	tf, err := journal.OpenTrace(f)
	require.NoError(t, err)
	_, traceErr, err := shadow.ReadTrace(tf, replay.KeptBudget)
	require.NoError(t, err)
	require.Error(t, traceErr)
	assert.Contains(t, traceErr.Error(), fmt.Sprintf("journal: import: line %d: invalid JSON", len(lines)))
	_, importErr := journal.Import(bytes.NewReader(bytes.Join(lines, nil)))
	assert.Equal(t, importErr.Error(), traceErr.Error(), "what Import says of it")
}
