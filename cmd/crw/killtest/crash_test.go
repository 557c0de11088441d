package killtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
	"github.com/crw-dev/crw/store/local/journalfile/journalfiletest"
)

// The crash workflow (testdata/crash/wf.js) has sequential and concurrent calls, a repair, a
// continuation, a race and a loop whose path depends on answers; its result depends on
// nothing but the answers (testdata/crash/answers.json) and the race's recorded winner.
var crashDir = enginetest.CrashDir()

type crashEnv struct {
	t       *testing.T
	dir     string // the workflow and its answers
	state   string
	wf      string
	answers string
}

func newCrashEnv(t *testing.T) *crashEnv {
	dir := t.TempDir()
	e := &crashEnv{t: t, dir: dir, wf: filepath.Join(dir, "wf.js"), answers: filepath.Join(dir, "answers.json")}
	for _, name := range []string{"wf.js", "answers.json"} {
		data, err := os.ReadFile(filepath.Join(crashDir, name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
	}
	return e
}

// crw runs the crw command (the test binary under the name crw) and returns its stdout and
// whether it was killed.
func (e *crashEnv) crw(env []string, args ...string) (stdout []byte, killed bool, err error) {
	cmd := exec.Command("crw", args...)
	cmd.Dir = e.dir // in no git checkout: the run has no repository
	// A race-built crw sleeps a second at exit unless told not to.
	cmd.Env = append(append(os.Environ(), "CRW_STATE="+e.state, "GORACE=atexit_sleep_ms=0", fake.HostLogEnv+"="+e.hostLog()), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return out.Bytes(), true, nil
		}
		return out.Bytes(), false, fmt.Errorf("crw %v: %v\nstdout: %s\nstderr: %s", args, err, out.String(), errOut.String())
	}
	return out.Bytes(), false, err
}

func (e *crashEnv) onlyRun() string {
	entries, err := os.ReadDir(filepath.Join(e.state, "flow"))
	require.NoError(e.t, err)
	require.Len(e.t, entries, 1)
	return entries[0].Name()
}

type runJSON struct {
	Run    string          `json:"run"`
	Status string          `json:"status"`
	Result json.RawMessage `json:"result"`
	Error  any             `json:"error"`
}

func decodeRun(t *testing.T, out []byte) runJSON {
	var r runJSON
	require.NoError(t, json.Unmarshal(out, &r), "%s", out)
	return r
}

// resumeToEnd resumes a run until it ends (a resume may itself be killed by env).
func (e *crashEnv) resumeToEnd(run string, env []string) runJSON {
	for i := 0; i < 5; i++ {
		if st, err := enginetest.State(e.state).Status(run); err == nil && st.State == "ended" {
			// Killed after its last commit: the journal has its end.
			return runJSON{Run: run, Status: string(st.Status), Result: st.Result}
		}
		out, killed, err := e.crw(env, "flow", "resume", run, "--json")
		require.NoError(e.t, err)
		if !killed {
			return decodeRun(e.t, out)
		}
		env = nil // crash once per resume at most
	}
	e.t.Fatalf("run %s did not end after 5 resumes", run)
	return runJSON{}
}

// checkJournal: the journal opens cleanly, no turn was started twice in a generation of a
// call, and the fake host received no turn twice.
func (e *crashEnv) checkJournal(run string) []journal.Row {
	journalfiletest.Check(e.t, enginetest.State(e.state).JournalPath(run))
	rows, err := enginetest.State(e.state).Rows(run)
	require.NoError(e.t, err)
	enginetest.CheckJournal(e.t, rows)
	received, _ := enginetest.HostLog(e.t, e.hostLog())
	enginetest.CheckSends(e.t, received)
	return rows
}

// hostLog is the fake host's log of the run's turns, beside its state folder.
func (e *crashEnv) hostLog() string { return filepath.Join(e.state, "fake-host.log") }

func (e *crashEnv) checkResult(want, got json.RawMessage, rows []journal.Row, msg string) {
	e.t.Helper()
	enginetest.CheckCrashResult(e.t, want, got, rows, msg)
}

// TestCrashBetweenEveryCommit kills the run's process with SIGKILL right after each of its
// journal commits in turn, resumes it, and checks the result equals an uninterrupted run's.
func TestCrashBetweenEveryCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("kills many processes")
	}
	e := newCrashEnv(t)
	e.state = t.TempDir()
	out, killed, err := e.crw(nil, "flow", "run", e.wf, "--answers", e.answers, "--json")
	require.NoError(t, err)
	require.False(t, killed)
	want := decodeRun(t, out)
	require.Equal(t, string(store.RunCompleted), want.Status, "%s", out)
	rows := e.checkJournal(want.Run)
	received, _ := enginetest.HostLog(t, e.hostLog())
	assert.Equal(t, enginetest.Count(rows, "", journal.TypeTurnStarted), len(received), "the host received every turn the journal started")

	crashed := 0
	for n := 1; n < 200; n++ {
		e.state = t.TempDir()
		env := []string{local.CrashAfterCommitEnv + "=" + strconv.Itoa(n)}
		out, killed, err := e.crw(env, "flow", "run", e.wf, "--answers", e.answers, "--json")
		require.NoError(t, err, "commit %d", n)
		if !killed {
			// Past the last commit: the run ended by itself.
			got := decodeRun(t, out)
			e.checkResult(want.Result, got.Result, e.checkJournal(got.Run), "uninterrupted")
			break
		}
		crashed++
		run := e.onlyRun()
		// Every other time the resume is killed too, a few commits in.
		var again []string
		if n%2 == 0 {
			again = []string{local.CrashAfterCommitEnv + "=" + strconv.Itoa(1+n%5)}
		}
		got := e.resumeToEnd(run, again)
		require.Equal(t, string(store.RunCompleted), got.Status, "crash after commit %d", n)
		e.checkResult(want.Result, got.Result, e.checkJournal(run), fmt.Sprintf("crash after commit %d", n))
	}
	assert.Greater(t, crashed, 5, "the workflow should make many commits")
	t.Logf("killed after each of %d commits", crashed)
}

// TestCrashAtRandomInstants kills detached runs at random instants and resumes them.
func TestCrashAtRandomInstants(t *testing.T) {
	if testing.Short() {
		t.Skip("kills many processes")
	}
	e := newCrashEnv(t)
	e.state = t.TempDir()
	out, _, err := e.crw(nil, "flow", "run", e.wf, "--answers", e.answers, "--json")
	require.NoError(t, err)
	want := decodeRun(t, out)

	rng := rand.New(rand.NewPCG(7, 11))
	for i := 0; i < 12; i++ {
		e.state = t.TempDir()
		out, _, err := e.crw(nil, "flow", "start", e.wf, "--backend", "fake", "--answers", e.answers, "--json")
		require.NoError(t, err)
		run := decodeRun(t, out).Run
		st, err := enginetest.State(e.state).Published(run)
		require.NoError(t, err)
		time.Sleep(time.Duration(rng.IntN(250)) * time.Millisecond)
		_ = syscall.Kill(st.PID, syscall.SIGKILL)
		for local.Held(e.state, run) {
			time.Sleep(5 * time.Millisecond)
		}
		if s, err := enginetest.State(e.state).Published(run); err == nil && s.State == "ended" {
			continue // it had finished already
		}
		got := e.resumeToEnd(run, nil)
		require.Equal(t, string(store.RunCompleted), got.Status, "instant %d", i)
		e.checkResult(want.Result, got.Result, e.checkJournal(run), fmt.Sprintf("instant %d", i))
	}
}
