package engine_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine"
	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/internal/pulltest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/mem"
)

// The crash tests of the Store interface: a run on the in-memory store loses its holder right
// after each of its journal commits in turn (what is committed stays, what was buffered is
// gone, the holder can write nothing more), as a process killed there would leave it, and is
// resumed by another holder until it ends. The host outlives every holder, as a real one does,
// and counts the turns it receives.

// crashHost is a host that outlives the run's processes: the fake's, or a pull session's.
type crashHost interface {
	backend() backend.Backend
	received() map[string]int
	stop()
}

type fakeHost struct {
	answers *fake.Answers
	host    *fake.Host
}

func (h *fakeHost) backend() backend.Backend { return fake.New(h.answers, h.host) }
func (h *fakeHost) received() map[string]int { return h.host.Received() }
func (h *fakeHost) stop()                    {}

type pullHost struct {
	session *pulltest.Session
	host    *fake.Host
}

func (h *pullHost) backend() backend.Backend { return h.session.Backend() }
func (h *pullHost) received() map[string]int { return h.host.Received() }
func (h *pullHost) stop()                    { h.session.Stop() }

var crashHosts = map[string]func(t *testing.T) crashHost{
	"fake": func(t *testing.T) crashHost {
		a, err := fake.LoadAnswers(filepath.Join(enginetest.CrashDir(), "answers.json"))
		require.NoError(t, err)
		return &fakeHost{answers: a, host: fake.NewHost("")}
	},
	"pull": func(t *testing.T) crashHost {
		a, err := fake.LoadAnswers(filepath.Join(enginetest.CrashDir(), "answers.json"))
		require.NoError(t, err)
		h := fake.NewHost("")
		return &pullHost{session: pulltest.NewSession(a, h), host: h}
	},
}

// crashRun creates a run of the crash workflow on a fresh in-memory store.
func crashRun(t *testing.T) (*mem.Store, *engine.Service, string) {
	t.Helper()
	st := mem.New()
	svc := enginetest.Service(st)
	id, err := svc.Create(context.Background(), engine.CreateOptions{Workflow: filepath.Join(enginetest.CrashDir(), "wf.js")})
	require.NoError(t, err)
	return st, svc, id
}

func TestCrashAfterEveryCommit(t *testing.T) {
	for name, newHost := range crashHosts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*enginetest.Timeout)
			defer cancel()

			// The uninterrupted run.
			host := newHost(t)
			_, svc, id := crashRun(t)
			want, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: host.backend()})
			require.NoError(t, err)
			require.Equal(t, store.RunCompleted, want.Status, "%+v", want.Error)
			rows, err := svc.Rows(ctx, id)
			require.NoError(t, err)
			enginetest.CheckJournal(t, rows)
			enginetest.CheckSends(t, host.received())
			turns := enginetest.Count(rows, "", journal.TypeTurnStarted)
			assert.Equal(t, turns, len(host.received()), "the host received every turn the journal started")
			host.stop()

			crashed := 0
			for n := uint64(1); n < 200; n++ {
				host := newHost(t)
				st, svc, id := crashRun(t)
				st.CrashAfterCommit(id, n)
				end, err := svc.Execute(ctx, id, engine.ExecOptions{Backend: host.backend()})
				if err == nil {
					// Past the last commit: the run ended by itself.
					require.Equal(t, store.RunCompleted, end.Status)
					host.stop()
					break
				}
				require.True(t, errors.Is(err, store.ErrLeaseLost), "commit %d: %v", n, err)
				crashed++
				// Every other time the resume loses its holder too, a few commits in.
				if n%2 == 0 {
					st.CrashAfterCommit(id, 1+n%5)
				}
				for resumes := 0; end == nil; resumes++ {
					require.Less(t, resumes, 5, "commit %d: the run did not end", n)
					end, err = svc.Execute(ctx, id, engine.ExecOptions{Backend: host.backend()})
					require.True(t, err == nil || errors.Is(err, store.ErrLeaseLost), "commit %d: %v", n, err)
				}
				msg := fmt.Sprintf("%s: crash after commit %d", name, n)
				require.Equal(t, store.RunCompleted, end.Status, msg)
				rows, err := svc.Rows(ctx, id)
				require.NoError(t, err)
				enginetest.CheckJournal(t, rows)
				enginetest.CheckSends(t, host.received())
				enginetest.CheckCrashResult(t, want.Result, end.Result, rows, msg)
				host.stop()
			}
			assert.Greater(t, crashed, 5, "the workflow should make many commits")
			t.Logf("%s: a holder lost after each of %d commits", name, crashed)
		})
	}
}
