package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/runner/decisions"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

const fiveCalls = `
import { agent } from "crw:agent";
export default async function main() {
  for (let i = 0; i < 5; i++) await agent.call({ role: "reviewer", prompt: "Review step " + i });
  return "done";
}
`

// fiveCallsOnTheStateFolder is a run service on a state folder's store of the test's own, the
// fiveCalls workflow written in it, and a context that ends with the test's time.
func fiveCallsOnTheStateFolder(t *testing.T) (context.Context, *local.Store, *engine.Service, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), enginetest.Timeout)
	t.Cleanup(cancel)
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.js")
	require.NoError(t, os.WriteFile(wf, []byte(fiveCalls), 0o600))
	st, err := local.New(filepath.Join(dir, "state"))
	require.NoError(t, err)
	return ctx, st, enginetest.Service(st), wf
}

// A command that acts on a run whose journal a machine's restart left waiting for its
// recovery (cancel, a detached resume, a resume with a change, an answer, a verdict, crw flow next) recovers
// it first, as the plain resume every reader names does, and goes on; none of them answers
// with journal_unrecovered, which would name a resume that, with its flags, refused too.
func TestActingOnARunWhoseMachineRestarted(t *testing.T) {
	budget := int64(100000)
	for name, act := range map[string]func(ctx context.Context, svc *engine.Service, id string) error{
		"cancel": func(ctx context.Context, svc *engine.Service, id string) error {
			end, err := svc.Cancel(ctx, id, 0)
			if err == nil && end.Status != store.RunCancelled {
				return errors.New("not cancelled: " + string(end.Status))
			}
			return err
		},
		"a detached resume's check": func(ctx context.Context, svc *engine.Service, id string) error {
			return svc.CheckResumable(ctx, id)
		},
		"a resume with a change": func(ctx context.Context, svc *engine.Service, id string) error {
			return svc.ChangeResume(ctx, id, engine.ResumeChange{BudgetTokens: &budget}, "test")
		},
		"a verdict": func(ctx context.Context, svc *engine.Service, id string) error {
			_, err := svc.Recover(ctx, id, "c1", decisions.Verdict{Verdict: decisions.VerdictNotApplied}, "test", false)
			if e, ok := errs.As(err); ok && e.Code == errs.InvalidRequest {
				return nil // c1 ended completed: read, and refused for that alone
			}
			return err
		},
		"an answer": func(ctx context.Context, svc *engine.Service, id string) error {
			_, err := svc.Answer(ctx, id, "no-such-decision", json.RawMessage(`true`), "test", false)
			if e, ok := errs.As(err); ok && e.Code == errs.InvalidRequest {
				return nil // the run asked no such decision: read, and refused for that alone
			}
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, st, svc, wf := fiveCallsOnTheStateFolder(t)
			id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
			require.NoError(t, err)
			st.CrashAfterCommit(id, 4)
			_, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: fake.New(nil, fake.NewHost(""))})
			require.ErrorIs(t, err, store.ErrLeaseLost)
			before, err := svc.Rows(ctx, id)
			require.NoError(t, err)
			torn, err := st.RestartMachine(id, 2) // a page of the file zeroed
			require.NoError(t, err)
			require.True(t, torn)
			_, err = svc.Status(ctx, id)
			e, ok := errs.As(err)
			require.True(t, ok, "%v", err)
			require.Equal(t, "journal_unrecovered", e.Reason())

			require.NoError(t, act(ctx, svc, id))
			status, err := svc.Status(ctx, id)
			require.NoError(t, err, "the journal was recovered")
			assert.NotEqual(t, store.StateUnreadable, status.State)
			after, err := svc.Rows(ctx, id)
			require.NoError(t, err)
			require.GreaterOrEqual(t, len(after), len(before))
			assert.Equal(t, before, after[:len(before)], "no row the log held was lost")
			_, err = os.Stat(filepath.Join(st.RunDir(id), local.JournalFile+".torn"))
			assert.NoError(t, err, "the file made again replaced the torn one, kept beside it")
		})
	}
}

// A resume of a run whose process was killed at the commit of its ended row, on a machine that
// then restarted, recovers the journal and finds the run ended: it says so, and that the journal
// was made again from its log (the operator ran it because the status asked for it); the run
// reads as ended from then on.
func TestAResumeThatRecoversAnEndedRunSaysSo(t *testing.T) {
	ctx, st, svc, wf := fiveCallsOnTheStateFolder(t)
	backend := fake.New(nil, fake.NewHost(""))
	// The commit that ends the run is the last of an uninterrupted one: crash after each in
	// turn until the run has ended when its process dies.
	for n := uint64(1); ; n++ {
		require.Less(t, n, uint64(50), "no commit of the run wrote its end")
		id, err := svc.Create(ctx, engine.CreateOptions{Workflow: wf})
		require.NoError(t, err)
		st.CrashAfterCommit(id, n)
		if _, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: backend}); err == nil {
			t.Fatalf("the run's process outlived its commit %d", n)
		}
		rows, err := svc.Rows(ctx, id)
		require.NoError(t, err)
		if rows[len(rows)-1].Type != journal.TypeEnded {
			continue
		}
		torn, err := st.RestartMachine(id, 2)
		require.NoError(t, err)
		require.True(t, torn)

		_, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: backend})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "run "+id+" has ended (completed): there is nothing to resume; its journal, which the machine's restart had left to recover, was made again from its log")
		status, err := svc.Status(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, store.StateEnded, status.State)

		// Once recovered, a resume says only that the run has ended.
		_, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: backend})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "there is nothing to resume")
		assert.NotContains(t, err.Error(), "made again")
		return
	}
}
