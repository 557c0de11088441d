package killtest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
)

// commitEnv runs testdata/commit (two nodes, three crw.commit calls, an executor that commits
// on its own) on a repository of its own.
type commitEnv struct {
	*crashEnv
	repo string
}

func newCommitEnv(t *testing.T) *commitEnv {
	dir := t.TempDir()
	e := &commitEnv{crashEnv: &crashEnv{t: t, dir: dir, wf: filepath.Join(dir, "wf.js"), answers: filepath.Join(dir, "answers.json")}}
	for _, name := range []string{"wf.js", "answers.json"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "commit", name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
	}
	e.repo = filepath.Join(dir, "repo")
	require.NoError(t, os.MkdirAll(filepath.Join(e.repo, "api"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(e.repo, "README.md"), []byte("# the project\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(e.repo, "api", "old.go"), []byte("package api\n"), 0o644))
	e.git("init", "-q", "-b", "main")
	e.git("add", "-A")
	e.git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
	return e
}

func (e *commitEnv) git(args ...string) string {
	e.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = e.repo
	out, err := cmd.CombinedOutput()
	require.NoError(e.t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

type commitResult struct {
	Statuses []string `json:"statuses"`
	Trees    []string `json:"trees"`
	Chained  bool     `json:"chained"`
}

// check holds a run of the workflow to what an uninterrupted run leaves: its result, each
// node's ref at its tree, every commit made once, the stray ref of the executor that
// committed, and no worktree or folder of the run's left.
func (e *commitEnv) check(run string, got json.RawMessage, want commitResult, msg string) {
	t := e.t
	t.Helper()
	var res commitResult
	require.NoError(t, json.Unmarshal(got, &res), "%s: %s", msg, got)
	assert.Equal(t, want, res, msg)
	prefix := "refs/crw/flow/" + run + "/"
	refs := e.git("for-each-ref", "--format=%(refname)", prefix)
	assert.Equal(t, []string{prefix + "nodes/api", prefix + "nodes/docs", prefix + "stray/docs/a1-c3"}, strings.Fields(refs), msg)
	assert.Equal(t, want.Trees[1], e.git("rev-parse", prefix+"nodes/api^{tree}"), msg)
	assert.Equal(t, want.Trees[2], e.git("rev-parse", prefix+"nodes/docs^{tree}"), msg)
	// The api node's two commits, on the run's head: no commit was made twice.
	assert.Equal(t, "3", e.git("rev-list", "--count", prefix+"nodes/api"), msg)
	assert.Equal(t, "2", e.git("rev-list", "--count", prefix+"nodes/docs"), msg)
	assert.Equal(t, 1, strings.Count(e.git("worktree", "list", "--porcelain"), "worktree "), "%s: a worktree of the run is left", msg)
	_, err := os.Stat(filepath.Join(e.state, "flow", run, "worktrees"))
	assert.True(t, os.IsNotExist(err), "%s: the run's worktrees folder is left", msg)
	rows, err := enginetest.State(e.state).Rows(run)
	require.NoError(t, err)
	intents, results := 0, 0
	for _, r := range rows {
		switch r.Type {
		case journal.TypeCommitIntent:
			intents++
		case journal.TypeCommitResult:
			results++
			assert.Empty(t, r.Reason, msg)
		}
	}
	assert.Equal(t, 3, intents, msg)
	assert.Equal(t, 3, results, msg)
}

// TestCommitsSurviveSIGKILLAtEveryCommit kills the run's process with SIGKILL right after each
// of its journal commits in turn (a commit's intent among them), resumes it, and checks that
// it leaves what an uninterrupted run does.
func TestCommitsSurviveSIGKILLAtEveryCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("kills many processes")
	}
	e := newCommitEnv(t)
	e.state = t.TempDir()
	out, killed, err := e.crw(nil, "flow", "run", e.wf, "--answers", e.answers, "--repo", e.repo, "--json")
	require.NoError(t, err)
	require.False(t, killed)
	first := decodeRun(t, out)
	require.Equal(t, string(store.RunCompleted), first.Status, "%s", out)
	var want commitResult
	require.NoError(t, json.Unmarshal(first.Result, &want))
	require.Equal(t, []string{"completed", "completed", "completed", "completed"}, want.Statuses)
	require.True(t, want.Chained)
	// The trees are the content the answers wrote, whichever run made them.
	assert.Equal(t, "package api\n\nfunc Fixed() {}", e.git("show", want.Trees[1]+":api/api.go"))
	assert.Equal(t, "api/api.go\n", e.git("ls-tree", "-r", "--name-only", want.Trees[1], "api")+"\n", "api/old.go was deleted")
	assert.Equal(t, "# the project, with an api", e.git("show", want.Trees[0]+":README.md"))
	assert.Equal(t, "# docs", e.git("show", want.Trees[2]+":docs/index.md"))
	assert.Equal(t, "# the project", e.git("show", want.Trees[2]+":README.md"), "the docs node started from the run's head")
	e.check(first.Run, first.Result, want, "uninterrupted")

	crashed := 0
	for n := 1; n < 200; n++ {
		e.state = t.TempDir()
		env := []string{local.CrashAfterCommitEnv + "=" + strconv.Itoa(n)}
		out, killed, err := e.crw(env, "flow", "run", e.wf, "--answers", e.answers, "--repo", e.repo, "--json")
		require.NoError(t, err, "commit %d", n)
		if !killed {
			got := decodeRun(t, out)
			e.check(got.Run, got.Result, want, "past the last commit")
			break
		}
		crashed++
		run := e.onlyRun()
		var again []string
		if n%2 == 0 {
			again = []string{local.CrashAfterCommitEnv + "=" + strconv.Itoa(1+n%5)}
		}
		got := e.resumeToEnd(run, again)
		require.Equal(t, string(store.RunCompleted), got.Status, "crash after commit %d", n)
		e.check(run, got.Result, want, fmt.Sprintf("crash after commit %d", n))
	}
	assert.Greater(t, crashed, 8, "the workflow should make many commits")
	t.Logf("killed after each of %d commits", crashed)
}
