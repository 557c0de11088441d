package engine_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

// logLines splits a run's log into its lines' kinds and the dropped lines themselves.
func logLines(t *testing.T, text string) (kinds map[string]int, dropped []store.Dropped) {
	t.Helper()
	kinds = map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct {
			Kind string `json:"kind"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), sc.Text())
		kinds[l.Kind]++
		if l.Kind == "dropped" {
			var d store.Dropped
			require.NoError(t, json.Unmarshal(sc.Bytes(), &d))
			dropped = append(dropped, d)
		}
	}
	return kinds, dropped
}

// TestARunawayLogStopsAtItsBound: a workflow that writes 2,000 lines of 10,000 characters (20
// MB) into a run whose log may take 1 MiB: the log stops under its bound (and the two lines
// that say so), every line is either kept or counted, and the run completes. A resume (after a
// rate limit paused the run) counts what the log holds: its lines are dropped from the first,
// and its own count says how many.
func TestARunawayLogStopsAtItsBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := mem.New()
	svc := enginetest.Service(st)
	wf := t.TempDir() + "/wf.js"
	require.NoError(t, os.WriteFile(wf, []byte(`import { agent } from "crw:agent";
import crw from "crw";
export default async function main() {
  const line = "x".repeat(10000);
  for (let i = 0; i < 2000; i++) crw.log(line);
  const r = await agent.call({ role: "reviewer", prompt: "review" });
  for (let i = 0; i < 30; i++) console.log("after " + i + " " + line);
  return r.status;
}
`), 0o644))
	id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf, Limits: engine.CreateLimits{LogBytes: new(int64(1 << 20))}})
	require.NoError(t, err)
	limited, err := fake.ParseAnswers("a.json", []byte(`{"answers": [{"turns": [{"error": "rateLimitExceeded"}]}]}`))
	require.NoError(t, err)
	host := fake.NewHost("")
	end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(limited, host)})
	require.NoError(t, err)
	require.Equal(t, store.RunPaused, end.Status)

	text := st.LogText(id)
	kinds, dropped := logLines(t, text)
	require.Len(t, dropped, 2, "where the bound was reached, and the process's count")
	assert.Zero(t, dropped[0].Lines)
	assert.Contains(t, dropped[0].Message, "the run's log reached its bound of 1 MiB (--max-log)")
	kept := kinds["console"]
	afterBytes := 10*len("after 0 ") + 20*len("after 10 ") + 30*10000
	assert.Equal(t, int64(2030-kept), dropped[1].Lines, "every line kept or counted; none kept after the first dropped")
	assert.Equal(t, int64((2000-kept)*10000+afterBytes), dropped[1].Bytes)
	assert.Greater(t, kept, 50)
	assert.Less(t, kept, 105, "1 MiB holds about 104 lines of 10,000 characters")
	assert.LessOrEqual(t, len(text)-len(lineOf(t, text, dropped[0]))-len(lineOf(t, text, dropped[1])), 1<<20, "the workflow's lines stay within the bound")

	ok, err := fake.ParseAnswers("a.json", []byte(`{"answers": []}`))
	require.NoError(t, err)
	end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(ok, host)})
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
	kinds, dropped = logLines(t, st.LogText(id))
	assert.Equal(t, kept, kinds["console"], "the resume's lines found the log full")
	require.Len(t, dropped, 4, "the resume says where it started dropping and how many it dropped")
	assert.Equal(t, int64(30), dropped[3].Lines)
	assert.Equal(t, int64(afterBytes), dropped[3].Bytes)
}

// lineOf is the log line d was read from.
func lineOf(t *testing.T, text string, d store.Dropped) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, `"kind":"dropped"`) && strings.Contains(l, fmt.Sprintf(`"lines":%d,`, d.Lines)) {
			return l + "\n"
		}
	}
	t.Fatalf("no line for %+v", d)
	return ""
}

// TestAPromptOverTheBoundIsRefused: a prompt of 2 KiB in a run whose prompts may take 1 KiB
// throws invalid_request (prompt_too_large) naming both sizes, and nothing of it is journaled;
// one of 1 KiB is run. Without a limit of the run's own, 4 MiB is the bound.
func TestAPromptOverTheBoundIsRefused(t *testing.T) {
	t.Parallel()
	script := `import { agent } from "crw:agent";
export default async function main() {
  const out = [];
  for (const n of [2048, 1024, 4 * 1024 * 1024 + 1]) {
    try {
      const r = await agent.call({ role: "explorer", prompt: "p".repeat(n) });
      out.push(r.status);
    } catch (e) {
      out.push(e.code + "/" + e.reason + ": " + e.message);
    }
  }
  return out;
}
`
	st, rows := enginetest.Run(t, script, "", enginetest.Configure(func(o *engine.CreateOptions) { o.Limits.PromptBytes = new(int64(1 << 10)) }))
	var got []string
	enginetest.Decode(t, st, &got)
	assert.Equal(t, []string{
		"invalid_request/prompt_too_large: agent.call: prompt is 2048 bytes; the run's limit is 1024 (--max-prompt 1 KiB)",
		"completed",
		"invalid_request/prompt_too_large: agent.call: prompt is 4194305 bytes; the run's limit is 1024 (--max-prompt 1 KiB)",
	}, got)
	assert.Equal(t, 1, enginetest.Count(rows, "", "prepared"), "only the prompt within the bound is journaled")

	st, _ = enginetest.Run(t, script, "")
	enginetest.Decode(t, st, &got)
	assert.Equal(t, []string{"completed", "completed",
		"invalid_request/prompt_too_large: agent.call: prompt is 4194305 bytes; the run's limit is 4194304 (--max-prompt 4096 KiB)"}, got)
}
