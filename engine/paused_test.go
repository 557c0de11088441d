package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/diagnosis"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

const twoCalls = `import { agent } from "crw:agent";
export default async function main() {
  const a = await agent.call({ role: "explorer", node: "a", prompt: "first" });
  const b = await agent.call({ role: "explorer", node: "b", prompt: "second" });
  return [a.status, b.status, b.reason];
}`

// resumes are the next actions of an inspection that resume the run.
func resumes(in *diagnosis.Inspection, run string) []string {
	var out []string
	for _, n := range in.Next {
		if strings.Contains(n, "crw flow resume "+run) {
			out = append(out, n)
		}
	}
	return out
}

// TestAPausedRunSaysHowItGoesOn: a run its token budget paused says so, with what it spent,
// and that a resume goes on with a budget above that (the same budget holds its calls again at
// once); one a rate limit paused says to resume it once the limit has passed. Status and
// inspect say it, on either store.
func TestAPausedRunSaysHowItGoesOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	spend := `{"answers": [{"match": {}, "turns": [{"text": "ok", "tokens": {"input": 10, "output": 2}}]}]}`
	limited := `{"answers": [{"match": {"node": "b"}, "turns": [{"error": "rateLimitExceeded"}]}]}`
	for name, opts := range map[string][]enginetest.Option{"local": nil, "mem": {enginetest.Memory()}} {
		t.Run(name+"/budget", func(t *testing.T) {
			t.Parallel()
			o := enginetest.Start(t, twoCalls, spend, append([]enginetest.Option{enginetest.Budget(5)}, opts...)...)
			require.NoError(t, o.Err)
			require.Equal(t, store.RunPaused, o.Status.Status)
			run := o.Status.Run
			assert.Equal(t, &journal.Paused{Budget: 5, Spent: 12}, o.Status.Paused, "the process's end says it")
			st, err := o.Service.Status(ctx, run)
			require.NoError(t, err)
			assert.Equal(t, store.StatePaused, st.State)
			assert.Equal(t, &journal.Paused{Budget: 5, Spent: 12}, st.Paused)
			assert.Equal(t, "its token budget of 5 paused it: crw flow resume "+run+" --budget-tokens N with N above the 12 tokens it has spent (0: no budget)",
				diagnosis.StateNext(st))
			in, err := o.Service.Inspect(ctx, run)
			require.NoError(t, err)
			next := resumes(in, run)
			require.Len(t, next, 1, "%q", in.Next)
			assert.Contains(t, next[0], "crw flow resume "+run+" --budget-tokens N with N above the 12 tokens it has spent")

			// A budget above what it spent runs the held call.
			budget := int64(13)
			require.NoError(t, o.Service.ChangeResume(ctx, run, engine.ResumeChange{BudgetTokens: &budget}, "t"))
			end, err := o.Service.Execute(ctx, run, engine.ExecOptions{})
			require.NoError(t, err)
			require.Equal(t, store.RunCompleted, end.Status, "%+v", end.Error)
			assert.JSONEq(t, `["completed", "completed", null]`, string(end.Result))
			st, err = o.Service.Status(ctx, run)
			require.NoError(t, err)
			assert.Nil(t, st.Paused, "an ended run is paused by nothing")
		})
		t.Run(name+"/limit", func(t *testing.T) {
			t.Parallel()
			o := enginetest.Start(t, twoCalls, limited, opts...)
			require.NoError(t, o.Err)
			require.Equal(t, store.RunPaused, o.Status.Status)
			run := o.Status.Run
			st, err := o.Service.Status(ctx, run)
			require.NoError(t, err)
			assert.Equal(t, &journal.Paused{Limit: true}, st.Paused)
			in, err := o.Service.Inspect(ctx, run)
			require.NoError(t, err)
			assert.Equal(t, []string{"a usage or rate limit paused it: once the limit has passed, crw flow resume " + run}, resumes(in, run))
		})
	}
}
