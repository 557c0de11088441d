package list

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
)

func TestNewCmdList(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdList, "--status", "running,paused", "--status", "failed", "--since", "7d", "--limit", "5")
	require.NoError(t, err)
	assert.Equal(t, []string{"running", "paused", "failed"}, opts.Statuses)
	assert.Equal(t, 7*24*time.Hour, opts.Since)
	assert.Equal(t, 5, opts.Limit)

	_, err = cmdtest.Parse(t, e, NewCmdList, "extra")
	assert.EqualError(t, err, `unknown command "extra" for "list"`)
}

func TestListRefusesAStateItDoesNotKnow(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	err := runList(&Options{Common: e.Common(), States: []string{"done"}})
	assert.EqualError(t, err, `invalid_request: --status "done": a status (completed, failed, cancelled, paused, waiting_decision) or a state (running, paused, waiting_decision, waiting_resume, ended, crashed, queued)`)
	err = runList(&Options{Common: e.Common(), Statuses: []string{"done"}})
	assert.EqualError(t, err, `invalid_request: --status "done": a status (completed, failed, cancelled, paused, waiting_decision) or a state (running, paused, waiting_decision, waiting_resume, ended, crashed, queued)`)
	err = runList(&Options{Common: e.Common(), Limit: -1})
	assert.EqualError(t, err, "invalid_request: --limit and --since must not be negative")
}

func TestListOfOneRun(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)

	require.NoError(t, runList(&Options{Common: e.Common()}))
	lines := strings.Split(e.Out.String(), "\n")
	require.Len(t, lines, 3)
	assert.Regexp(t, `^RUN +STATE +STATUS +CALLS +STARTED +WORKFLOW$`, lines[0])
	assert.Regexp(t, `^`+end.Run+` +ended +completed +1 +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +`+e.Dir+`/wf\.js$`, lines[1])

	e.Out.Reset()
	require.NoError(t, runList(&Options{Common: e.Common(), States: []string{"running"}}))
	assert.Equal(t, "RUN  STATE  STATUS  CALLS  STARTED  WORKFLOW\n", e.Out.String(), "no run is running")

	e.Out.Reset()
	e.JSON = true
	require.NoError(t, runList(&Options{Common: e.Common(), States: []string{"paused"}}))
	assert.Equal(t, "{\"runs\":[],\"next\":null}\n", e.Out.String())
}

// TestListPages: five runs listed two at a time: each page the newest runs older than the
// page before, newest first; the command that lists the next page said on stderr (with --json,
// "next"), none after the last; every run listed once.
func TestListPages(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	var ids []string
	for range 5 {
		ids = append(ids, e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer).Run)
	}
	slices.Sort(ids)

	type page struct {
		Runs []struct{ Run string }
		Next *string
	}
	e.JSON = true
	var seen []string
	before := ""
	for i, want := range [][]string{{ids[4], ids[3]}, {ids[2], ids[1]}, {ids[0]}} {
		e.Out.Reset()
		require.NoError(t, runList(&Options{Common: e.Common(), Limit: 2, Before: before}))
		var got page
		require.NoError(t, json.Unmarshal(e.Out.Bytes(), &got), e.Out.String())
		var runs []string
		for _, r := range got.Runs {
			runs = append(runs, r.Run)
		}
		assert.Equal(t, want, runs, "page %d", i+1)
		seen = append(seen, runs...)
		if i < 2 {
			require.NotNil(t, got.Next, "page %d", i+1)
			assert.Equal(t, want[len(want)-1], *got.Next, "the oldest of the page")
			before = *got.Next
		} else {
			assert.Nil(t, got.Next, "the last page")
		}
	}
	slices.Sort(seen)
	assert.Equal(t, ids, seen)

	e.JSON = false
	e.Out.Reset()
	e.ErrOut.Reset()
	require.NoError(t, runList(&Options{Common: e.Common(), Limit: 2, States: []string{"ended"}}))
	assert.Equal(t, "crw: older runs: crw flow list --before "+ids[3]+" --status ended --limit 2\n", e.ErrOut.String())
	assert.Len(t, strings.Split(strings.TrimSpace(e.Out.String()), "\n"), 3, "a header and two runs")
	e.ErrOut.Reset()
	require.NoError(t, runList(&Options{Common: e.Common(), Limit: 2, Statuses: []string{"completed"}, Since: 7 * 24 * time.Hour}))
	assert.Equal(t, "crw: older runs: crw flow list --before "+ids[3]+" --status completed --since 7d --limit 2\n", e.ErrOut.String())

	err := runList(&Options{Common: e.Common(), Before: "../x"})
	assert.EqualError(t, err, `invalid_request: --before "../x": a run id (like 20261130-052301-a1b2c3)`)
}

// TestListByStatus: --status keeps the runs whose STATUS column says it (a failed run, not the
// completed one), or whose STATE column does (a state's name), either naming it enough.
func TestListByStatus(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	done := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer).Run
	failed := e.Run(t, `export default function main() { throw new Error("no"); }`, "").Run
	e.JSON = true
	list := func(opts Options) []string {
		t.Helper()
		e.Out.Reset()
		opts.Common = e.Common()
		require.NoError(t, runList(&opts))
		var got struct {
			Runs []struct{ Run, Status string }
		}
		require.NoError(t, json.Unmarshal(e.Out.Bytes(), &got), e.Out.String())
		var ids []string
		for _, r := range got.Runs {
			ids = append(ids, r.Run)
		}
		return ids
	}
	assert.Equal(t, []string{failed}, list(Options{Statuses: []string{"failed"}}))
	assert.Equal(t, []string{done}, list(Options{Statuses: []string{"completed"}}))
	assert.Equal(t, []string{failed, done}, list(Options{Statuses: []string{"ended"}}), "a state, newest first")
	assert.Empty(t, list(Options{Statuses: []string{"cancelled"}}))
	assert.Equal(t, []string{failed}, list(Options{Statuses: []string{"running", "failed"}}), "a state or a status")
}

// TestListOfARunWhoseJournalWaitsForItsRecovery: a run a machine's restart left waiting for its
// recovery is listed unreadable with why (journal_unrecovered, not the bare code) and its
// workflow, which its spec says.
func TestListOfARunWhoseJournalWaitsForItsRecovery(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	e.LeaveUnrecovered(t, end.Run)
	require.NoError(t, runList(&Options{Common: e.Common()}))
	lines := strings.Split(e.Out.String(), "\n")
	require.Len(t, lines, 3)
	assert.Regexp(t, `^`+end.Run+` +unreadable +journal_unrecovered +0 +- +`+e.Dir+`/wf\.js$`, lines[1])
}
