package prune

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/cmd/crw/internal/cmdtest"
	"github.com/crw-dev/crw/store/local"
)

func TestNewCmdPrune(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	opts, err := cmdtest.Parse(t, e, NewCmdPrune, "--older-than", "720h", "--unfinished", "--dry-run", "--keep-refs")
	require.NoError(t, err)
	assert.Equal(t, 720*time.Hour, opts.OlderThan)
	assert.True(t, opts.Unfinished)
	assert.True(t, opts.DryRun)
	assert.True(t, opts.Delete.KeepRefs)
}

func TestPruneNeedsADuration(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	err := runPrune(&Options{Common: e.Common()})
	assert.EqualError(t, err, "invalid_request: prune: --older-than D is required, more than 0 (30d, 720h, 30m)")
}

func TestPruneKeepsARunYoungerThanD(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	require.NoError(t, runPrune(&Options{Common: e.Common(), OlderThan: time.Hour}))
	assert.Equal(t, "0 runs deleted\n", e.Out.String())
	assert.Equal(t, "0 runs deleted: []", e.Factory.Outcome.AuditDetail)
}

func TestPruneDeletesAnEndedRun(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	e.JSON = true
	require.NoError(t, runPrune(&Options{Common: e.Common(), OlderThan: time.Nanosecond}))
	assert.Equal(t, `{"dry_run":false,"runs":[{"run":"`+end.Run+`","state":"ended","deleted":true}]}`+"\n", e.Out.String())
	assert.Equal(t, "1 runs deleted: ["+end.Run+"]", e.Factory.Outcome.AuditDetail)
}

// TestPruneDryRunSaysWhatWouldGo: --dry-run lists the runs it would delete, says how many, and
// deletes none.
func TestPruneDryRunSaysWhatWouldGo(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	require.NoError(t, runPrune(&Options{Common: e.Common(), OlderThan: time.Nanosecond, DryRun: true}))
	assert.Equal(t, "would delete "+end.Run+" (ended)\n1 run would be deleted; nothing was (--dry-run)\n", e.Out.String())
	e.Out.Reset()
	require.NoError(t, runPrune(&Options{Common: e.Common(), OlderThan: time.Nanosecond}))
	assert.Equal(t, "deleted "+end.Run+" (ended)\n1 run deleted\n", e.Out.String(), "the dry run deleted nothing")
}

// TestPruneKeepsARunWhoseJournalWaitsForItsRecovery: a run a machine's restart left waiting
// for its recovery reads as unreadable, its age unknown; prune keeps it and says how it goes
// on, rather than pass over it in silence (or delete it as a damaged run).
func TestPruneKeepsARunWhoseJournalWaitsForItsRecovery(t *testing.T) {
	t.Parallel()
	e := cmdtest.New(t)
	end := e.Run(t, cmdtest.OneCall, cmdtest.OneAnswer)
	e.LeaveUnrecovered(t, end.Run)
	require.NoError(t, runPrune(&Options{Common: e.Common(), OlderThan: time.Nanosecond}))
	assert.Equal(t, "kept    "+end.Run+" (unreadable): its journal waits for its recovery after the machine's restart: crw flow resume "+end.Run+"\n0 runs deleted\n", e.Out.String())
	_, err := os.Stat(filepath.Join(e.State, "flow", end.Run, local.JournalLog))
	assert.NoError(t, err, "the run is still there")
}
