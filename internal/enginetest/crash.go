package enginetest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/callstate"
	"github.com/crw-dev/crw/engine/result"
	"github.com/crw-dev/crw/journal"
)

// CrashDir is testdata/crash: a workflow with sequential and concurrent calls, a repair, a
// continuation, a race and a loop whose path depends on answers, and its answers file. Its
// result depends on nothing but the answers and the race's recorded winner.
func CrashDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "crash")
}

// CheckJournal checks what every journal must hold, whatever crashed, paused, was cancelled or
// resumed (JournalProblems). Every run the helpers of this package make is checked.
func CheckJournal(t testing.TB, rows []journal.Row) {
	t.Helper()
	for _, p := range JournalProblems(rows) {
		t.Error(p)
	}
}

// JournalProblems lists what is wrong with a journal's calls: within a generation of a call (its
// rows from a prepared row on) each turn k is started at most once, no turn starts after the
// call ended, and the call has at most one terminal row; no row of a call comes before its
// first prepared row.
func JournalProblems(rows []journal.Row) []string {
	type turn struct {
		call    string
		attempt int
		session int // a session call's attempt of the turn (its step's): each may start it once
		k       int
	}
	var out []string
	attempts := map[string]int{}
	seen := map[turn]bool{}
	ended := map[string]bool{}
	for _, r := range rows {
		if r.Call != "" && r.Type != journal.TypePrepared && attempts[r.Call] == 0 {
			out = append(out, fmt.Sprintf("row %d (%s) names call %s before its prepared row", r.Seq, r.Type, r.Call))
		}
		switch {
		case r.Type == journal.TypePrepared:
			attempts[r.Call]++
			delete(ended, r.Call)
		case r.Type == journal.TypeTurnStarted:
			key := turn{r.Call, attempts[r.Call], r.Attempt, r.K}
			if seen[key] {
				out = append(out, fmt.Sprintf("turn %d of call %s started twice (row %d)", r.K, r.Call, r.Seq))
			}
			if ended[r.Call] {
				out = append(out, fmt.Sprintf("call %s started a turn after it ended (row %d)", r.Call, r.Seq))
			}
			seen[key] = true
		case journal.IsTerminal(r.Type):
			if ended[r.Call] {
				out = append(out, fmt.Sprintf("call %s ended twice in one generation (row %d)", r.Call, r.Seq))
			}
			if r.Reason != "" && !result.IsReason(r.Reason) {
				out = append(out, fmt.Sprintf("call %s ended %s with reason %q, outside the closed set (row %d)", r.Call, r.Type, r.Reason, r.Seq))
			}
			ended[r.Call] = true
		}
	}
	if err := callstate.Check(rows); err != nil {
		out = append(out, err.Error())
	}
	return out
}

// CheckSends checks the fake host received no turn twice: a turn that may have been sent is
// reconciled by a resume, never sent again.
func CheckSends(t testing.TB, received map[string]int) {
	t.Helper()
	for turn, n := range received {
		assert.LessOrEqual(t, n, 1, "turn %s was sent %d times", turn, n)
	}
}

// HostLog reads a fake host's log (fake.HostLogEnv): how many times it received each turn,
// and the TMPDIR of the process that sent each. A log that does not exist received nothing.
func HostLog(t testing.TB, path string) (received map[string]int, tmpdirs []string) {
	t.Helper()
	received = map[string]int{}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return received, nil
	}
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l fake.HostLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), "host log line %q", sc.Text())
		received[l.Turn]++
		tmpdirs = append(tmpdirs, l.TmpDir)
	}
	require.NoError(t, sc.Err())
	return received, tmpdirs
}

// CheckCrashResult compares a resumed run of the crash workflow with an uninterrupted run's.
// Everything but its Promise.race is decided by the answers alone. The race is not: a crash
// between the sends of its two calls lets the slow one run while no process watches, so after
// the resume it may legitimately finish first. What is guaranteed is that the script saw the
// race end the way the journal recorded it: the winner is the call whose terminal row came
// first.
func CheckCrashResult(t testing.TB, want, got json.RawMessage, rows []journal.Row, msg string) {
	t.Helper()
	var w, g map[string]any
	require.NoError(t, json.Unmarshal(want, &w), msg)
	require.NoError(t, json.Unmarshal(got, &g), "%s: %s", msg, got)
	node := map[string]string{}
	for _, r := range rows {
		if r.Type == journal.TypePrepared {
			node[r.Call] = r.Node
		}
	}
	winner := ""
	for _, r := range rows {
		if n := node[r.Call]; journal.IsTerminal(r.Type) && (n == "race-a" || n == "race-b") {
			winner = n
			break
		}
	}
	wantFirst := map[string]string{"race-a": "a wins", "race-b": "b loses"}[winner]
	require.NotEmpty(t, wantFirst, "%s: no race call ended", msg)
	assert.Equal(t, wantFirst, g["first"], "%s: the race's winner is the call the journal ended first", msg)
	delete(w, "first")
	delete(g, "first")
	assert.Equal(t, w, g, msg)
}
