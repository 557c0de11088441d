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
	opts, err := cmdtest.Parse(t, e, NewCmdList, "--status", "running,paused", "--status", "ended", "--since", "24h", "--limit", "5")
	require.NoError(t, err)
	assert.Equal(t, []string{"running", "paused", "ended"}, opts.States)
	assert.Equal(t, 24*time.Hour, opts.Since)
	assert.Equal(t, 5, opts.Limit)

	_, err = cmdtest.Parse(t, e, NewCmdList, "extra")
	assert.EqualError(t, err, `unknown command "extra" for "list"`)
}

func TestListRefusesAStateItDoesNotKnow(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	err := runList(&Options{Common: e.Common(), States: []string{"done"}})
	assert.EqualError(t, err, `invalid_request: --status "done": one of running, paused, waiting_decision, waiting_resume, ended, crashed`)
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
// page before, oldest first; the command that lists the next page said on stderr (with --json,
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
	for i, want := range [][]string{ids[3:5], ids[1:3], ids[0:1]} {
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
			assert.Equal(t, want[0], *got.Next)
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

	err := runList(&Options{Common: e.Common(), Before: "../x"})
	assert.EqualError(t, err, `invalid_request: --before "../x": a run id (like 20261130-052301-a1b2c3)`)
}
