package placer_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/placer"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
)

// rows is a journal that keeps what the placer writes.
type rows struct {
	mu   sync.Mutex
	rows []*journal.Row
}

func (j *rows) Append(rs ...*journal.Row) uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.rows = append(j.rows, rs...)
	return uint64(len(j.rows))
}

func (j *rows) Sync(uint64) error { return nil }

func newPlacer(t *testing.T) (*placer.Placer, string, string, *rows) {
	t.Helper()
	repo := enginetest.GitRepo(t, map[string]string{"README.md": "# the project\n", "src/a.go": "package a\n"})
	head := strings.TrimSpace(enginetest.Git(t, repo, "rev-parse", "HEAD"))
	dir := t.TempDir()
	j := &rows{}
	p := placer.New(placer.Config{Run: "r1", Repo: repo, Dir: dir, HeadCommit: head, Pool: 1, Journal: j,
		Stop: context.Background(), Logged: func(e *errs.Error) string { return e.Detail }, Flush: func() {}})
	return p, head, filepath.Join(dir, "worktrees"), j
}

func call(id, role, node string) placer.Call {
	return placer.Call{ID: id, Attempt: 1, Role: role, Node: node, Prepared: time.Unix(1700000000, 0).UTC(), Ctx: context.Background()}
}

// TestAPristineCheckoutIsHandedOnAndAChangedOneIsNot: a reviewer's checkout is kept when its
// call ends (Park) and given to the next reviewer; one a call changed is removed, and the next
// call gets a checkout of its own.
func TestAPristineCheckoutIsHandedOnAndAChangedOneIsNot(t *testing.T) {
	p, head, root, _ := newPlacer(t)

	first, end := p.Place(call("c1", "reviewer", "n"), nil)
	require.Nil(t, end)
	require.NotNil(t, first)
	assert.Equal(t, &journal.Row{Type: journal.TypeWorkspacePlaced, Call: "c1", Placement: placer.PlaceCheckout, Node: "n",
		Commit: head, Workspace: filepath.Join(root, "c1-g1")}, first.Row)
	data, err := os.ReadFile(filepath.Join(root, "c1-g1", "src", "a.go"))
	require.NoError(t, err)
	assert.Equal(t, "package a\n", string(data))
	p.Leave(first, &journal.Row{Type: journal.TypeCompleted})
	p.Park(first, 7)
	p.Release(first)
	assert.DirExists(t, filepath.Join(root, "c1-g1"), "kept for the next call")

	second, end := p.Place(call("c2", "reviewer", "n"), nil)
	require.Nil(t, end)
	assert.Equal(t, filepath.Join(root, "c1-g1"), second.Row.Workspace, "handed on")
	require.NoError(t, os.WriteFile(filepath.Join(second.Row.Workspace, "src", "a.go"), []byte("package b\n"), 0o644))
	p.Leave(second, &journal.Row{Type: journal.TypeCompleted})
	p.Park(second, 8)
	p.Release(second)

	third, end := p.Place(call("c3", "reviewer", "n"), nil)
	require.Nil(t, end)
	assert.Equal(t, filepath.Join(root, "c3-g1"), third.Row.Workspace, "a changed checkout is never handed on")
	assert.NoDirExists(t, filepath.Join(root, "c1-g1"), "it is removed")
	data, err = os.ReadFile(filepath.Join(third.Row.Workspace, "src", "a.go"))
	require.NoError(t, err)
	assert.Equal(t, "package a\n", string(data))

	// A call whose terminal row was never written (no Park) keeps its checkout, for a resume.
	p.Release(third)
	assert.DirExists(t, third.Row.Workspace)
	p.CleanUp()
	assert.NoDirExists(t, root, "the run's end removes every worktree")
}

// TestATierStepSupersedesTheNodesOpenExecutor: an executor works in its node's allocation;
// after a tier step the node's next executor call gets the next allocation, and the open call
// of the earlier one is interrupted, superseded. A commit is refused while an executor call of
// the node is open.
func TestATierStepSupersedesTheNodesOpenExecutor(t *testing.T) {
	p, head, root, _ := newPlacer(t)
	interrupted := make(chan string, 1)
	e1 := call("c1", "executor", "build")
	e1.Interrupt = func(reason string) { interrupted <- reason }
	first, end := p.Place(e1, nil)
	require.Nil(t, end)
	assert.Equal(t, &journal.Row{Type: journal.TypeWorkspacePlaced, Call: "c1", Placement: placer.PlaceAttempt, Node: "build", Alloc: 1,
		Start: head, Commit: head, Workspace: filepath.Join(root, "n-build-a1")}, first.Row)

	_, refusal := p.Intent("build", "work")
	require.NotNil(t, refusal)
	assert.Equal(t, `node "build" has executor call c1 in flight: await it before committing its work`, refusal.Detail)

	assert.Equal(t, 2, p.StepTier("build", 1))
	second, end := p.Place(call("c2", "executor-t1", "build"), nil)
	require.Nil(t, end)
	assert.Equal(t, 2, second.Row.Alloc)
	assert.Equal(t, filepath.Join(root, "n-build-a2"), second.Row.Workspace)
	select {
	case reason := <-interrupted:
		assert.Equal(t, placer.ReasonSupersededByAttempt, reason)
	case <-time.After(time.Minute): // a safeguard: the interrupt is sent as the allocation is made
		t.Fatal("the earlier allocation's call was not interrupted")
	}
	assert.NoDirExists(t, first.Row.Workspace, "the earlier allocation's worktree goes")

	// The executor's work, committed once its call has left the worktree.
	require.NoError(t, os.WriteFile(filepath.Join(second.Row.Workspace, "b.go"), []byte("package b\n"), 0o644))
	left := &journal.Row{Type: journal.TypeCompleted}
	p.Leave(second, left)
	assert.NotEmpty(t, left.Tree, "the tree the call left")
	intent, refusal := p.Intent("build", "the work")
	require.Nil(t, refusal)
	assert.Equal(t, left.Tree, intent.Tree)
	assert.Equal(t, head, intent.Parent)
	res, err := p.CommitRows(intent, true)
	require.NoError(t, err)
	assert.Equal(t, placer.NodeRef("r1", "build"), res.Ref)
	got := strings.TrimSpace(enginetest.Git(t, second.Row.Workspace, "rev-parse", "HEAD"))
	assert.Equal(t, res.Commit, got, "the worktree is at the commit it holds the tree of")
}
