package killtest

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crw-dev/crw/engine/backend/fake"
	"github.com/crw-dev/crw/engine/workspace"
	"github.com/crw-dev/crw/internal/enginetest"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
	"github.com/crw-dev/crw/store/local"
	"github.com/crw-dev/crw/store/local/journalfile/journalfiletest"
)

// The kill tier: runs on a repository of real size (bigRepoFiles files), their processes
// SIGKILLed at seeded random instants (while git makes or removes a worktree of 10,000 files,
// most of the time), resumed, killed again, their decisions answered, until they end; each is
// held to an uninterrupted run of the same workflow. `go test ./cmd/crw` runs killSeedsFixed
// seeds; -kill.seeds=N (or CRW_KILL_SEEDS=N) runs seeds 1 to N, and -kill.seed=S the one seed S.
//
// The repositories and state folders go in $CRW_KILL_TMP when it is set, else in /dev/shm when
// it is a memory file system with room, else in the test's temporary folder: a checkout of
// 10,000 files takes a third of a second in memory and ten seconds on some virtual disks.
var (
	killSeeds = flag.Int("kill.seeds", envInt("CRW_KILL_SEEDS"), "the kill tier runs seeds 1 to N (default: its fixed seeds)")
	killSeed  = flag.Int("kill.seed", 0, "the kill tier runs this one seed")
)

const (
	killSeedsFixed = 9
	bigRepoFiles   = 10_000
)

func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}

// killWorkflow is a workflow the tier runs, with its answers and the decisions it asks.
type killWorkflow struct {
	name      string
	path      string
	answers   string
	decisions map[string]string // decision id → the answer's value
}

func killWorkflows(t *testing.T) []*killWorkflow {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	require.NoError(t, err)
	return []*killWorkflow{
		{name: "fanout", path: filepath.Join(root, "testdata", "kill", "fanout.js"), answers: filepath.Join(root, "testdata", "kill", "answers.json")},
		{name: "triage", path: filepath.Join(root, "workflows", "triage.ts"), answers: filepath.Join(root, "testdata", "answers", "triage.json")},
		{name: "build-commit", path: filepath.Join(root, "workflows", "build-commit.js"), answers: filepath.Join(root, "testdata", "answers", "build-commit.json"),
			decisions: map[string]string{"keep": `{"keep": true, "note": null}`}},
	}
}

// bigPack is the big repository's one pack, made once per test binary (git fast-import) and
// kept in memory: each test writes it into a repository of its own.
var bigPack = sync.OnceValues(func() (*packFiles, error) {
	dir, err := os.MkdirTemp("", "crw-bigrepo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if out, err := exec.Command("git", "init", "-q", "-b", "main", dir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("git init: %v: %s", err, out)
	}
	var in bytes.Buffer
	for i := 0; i < bigRepoFiles; i++ {
		data := fmt.Sprintf("file %d of the big repository\n%s", i, strings.Repeat(fmt.Sprintf("line of file %05d: some text to make it a few hundred bytes\n", i), 5))
		fmt.Fprintf(&in, "blob\nmark :%d\ndata %d\n%s\n", i+1, len(data), data)
	}
	readme := "# the big repository\n"
	fmt.Fprintf(&in, "blob\nmark :%d\ndata %d\n%s\n", bigRepoFiles+1, len(readme), readme)
	msg := "the big repository\n"
	fmt.Fprintf(&in, "commit refs/heads/main\ncommitter t <t@t> 1700000000 +0000\ndata %d\n%s", len(msg), msg)
	fmt.Fprintf(&in, "M 100644 :%d README.md\n", bigRepoFiles+1)
	for i := 0; i < bigRepoFiles; i++ {
		// 50 folders of 20 folders of 10 files.
		fmt.Fprintf(&in, "M 100644 :%d %s\n", i+1, bigRepoPath(i))
	}
	in.WriteString("\n")
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir, cmd.Stdin = dir, &in
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("git fast-import: %v: %s", err, out)
	}
	head, err := exec.Command("git", "-C", dir, "rev-parse", "main").Output()
	if err != nil {
		return nil, err
	}
	p := &packFiles{head: strings.TrimSpace(string(head)), files: map[string][]byte{}}
	packs, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "pack-*"))
	if err != nil || len(packs) == 0 {
		return nil, fmt.Errorf("fast-import left no pack: %v", err)
	}
	for _, f := range packs {
		if p.files[filepath.Base(f)], err = os.ReadFile(f); err != nil {
			return nil, err
		}
	}
	return p, nil
})

type packFiles struct {
	head  string            // the commit of main
	files map[string][]byte // pack-*.pack, pack-*.idx by name
}

func bigRepoPath(i int) string {
	return fmt.Sprintf("d%02d/s%02d/f%05d.txt", i%50, (i/50)%20, i)
}

// killTmp is a folder of the test's for repositories and state folders, removed at its end.
func killTmp(t *testing.T) string { return enginetest.FastTmp(t, "CRW_KILL_TMP", "crw-kill-") }

// newBigRepo makes a repository of bigRepoFiles files (and a README) on branch main in dir/repo.
// Its own checkout holds no files: no call works in it, and writing 10,000 files for each test
// would be the test's slowest part.
func newBigRepo(t *testing.T, dir string) string {
	t.Helper()
	pack, err := bigPack()
	require.NoError(t, err)
	repo := filepath.Join(dir, "repo")
	out, err := exec.Command("git", "init", "-q", "-b", "main", repo).CombinedOutput()
	require.NoError(t, err, "%s", out)
	for name, data := range pack.files {
		require.NoError(t, os.WriteFile(filepath.Join(repo, ".git", "objects", "pack", name), data, 0o444))
	}
	enginetest.Git(t, repo, "update-ref", "refs/heads/main", pack.head)
	enginetest.Git(t, repo, "read-tree", "main") // an index that matches HEAD
	return repo
}

// killRig is one run of a workflow on a big repository of its own, driven to its end.
type killRig struct {
	t       *testing.T
	dir     string
	state   string
	repo    string
	wf      *killWorkflow
	rng     *rand.Rand // nil: nothing is killed
	span    time.Duration
	maxKill int

	run                      string
	drawn                    int // kills drawn (a process may end before its instant)
	kills, resumes, answered int
	restarts                 int // starts killed before the run was created
	vanished                 int // worktrees removed while no process held the run
	// orphans are the children of killed processes that went on after them; with untilOrphan,
	// drive stops at the first.
	orphans     []string
	untilOrphan bool
}

func newKillRig(t *testing.T, wf *killWorkflow) *killRig {
	dir := killTmp(t)
	r := &killRig{t: t, dir: dir, state: filepath.Join(dir, "state"), wf: wf}
	r.repo = newBigRepo(t, dir)
	return r
}

func (r *killRig) hostLog() string { return filepath.Join(r.dir, "fake-host.log") }

func (r *killRig) command(args ...string) *exec.Cmd {
	cmd := exec.Command("crw", args...)
	cmd.Dir = r.dir // in no git checkout: the run's repository is --repo's
	cmd.Env = append(os.Environ(), "CRW_STATE="+r.state, "GORACE=atexit_sleep_ms=0", fake.HostLogEnv+"="+r.hostLog())
	return cmd
}

// crw runs a crw command to its end and returns its stdout; it must exit with one of codes.
func (r *killRig) crw(codes []int, args ...string) []byte {
	r.t.Helper()
	cmd := r.command(args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(r.t, ok, "crw %v: %v", args, err)
		code = ee.ExitCode()
	}
	for _, c := range codes {
		if c == code {
			return out.Bytes()
		}
	}
	r.t.Fatalf("crw %v exited %d (want %v)\nstdout: %s\nstderr: %s", args, code, codes, out.String(), errOut.String())
	return nil
}

// killPlan is when a process is killed: at an instant after the command that started it was
// run, or, whileMaking, a moment after git starts making a worktree of the repository.
type killPlan struct {
	kill        bool
	at          time.Duration
	whileMaking bool
}

// wantKill draws whether the next process is killed, and when: the first process of a run
// always, every other one with odds of one half (three quarters after a worktree was removed),
// until the rig's number of kills is reached; half of the kills (all, after a worktree was
// removed: the resume makes it again) within 200 ms of the moment git starts making a worktree,
// the others at an instant within half of the uninterrupted run's span (a quarter after the
// first).
func (r *killRig) wantKill(vanished bool) killPlan {
	if r.rng == nil || r.kills >= r.maxKill {
		return killPlan{}
	}
	span := r.span / 2
	if r.drawn > 0 {
		span /= 2
		if odds := map[bool]int{false: 2, true: 4}[vanished]; r.rng.IntN(odds) == 0 {
			return killPlan{}
		}
	}
	r.drawn++
	if vanished || r.rng.IntN(2) == 0 {
		return killPlan{kill: true, whileMaking: true, at: time.Duration(r.rng.Int64N(int64(200*time.Millisecond) + 1))}
	}
	return killPlan{kill: true, at: time.Duration(r.rng.Int64N(int64(span) + 1))}
}

// killAt calls kill at p's instant unless done says the process ended first, and returns
// whether kill did kill it.
func (r *killRig) killAt(began time.Time, p killPlan, done func() bool, kill func() bool) bool {
	if !p.kill {
		return false
	}
	gitDir := filepath.Join(r.repo, ".git")
	for !done() {
		if p.whileMaking {
			if beingMade(gitDir) {
				time.Sleep(p.at)
				return kill()
			}
		} else if !time.Now().Before(began.Add(p.at)) {
			return kill()
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// foreground runs a crw command that runs the workflow in its own process, killed as p says.
// It returns its stdout and whether it was killed.
func (r *killRig) foreground(p killPlan, args ...string) ([]byte, bool) {
	r.t.Helper()
	cmd := r.command(args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	began := time.Now()
	require.NoError(r.t, cmd.Start())
	var exited atomic.Bool
	killer := make(chan struct{})
	var kids []child
	go func() {
		defer close(killer)
		r.killAt(began, p, exited.Load, func() bool {
			kids = childrenOf(cmd.Process.Pid)
			return cmd.Process.Signal(syscall.SIGKILL) == nil
		})
	}()
	err := cmd.Wait()
	exited.Store(true)
	<-killer
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			r.orphans = append(r.orphans, survivors(kids)...)
			return out.Bytes(), true
		}
		// 3 paused, 4 waiting for a decision: the loop looks at the run's state.
		if c := ee.ExitCode(); c != 3 && c != 4 {
			r.t.Fatalf("crw %v exited %d\nstdout: %s\nstderr: %s", args, c, out.String(), errOut.String())
		}
	} else {
		require.NoError(r.t, err)
	}
	return out.Bytes(), false
}

// detached waits for the detached process pid that holds the run, killed as p says (its
// instant counted from began, when the command that started it was run).
func (r *killRig) detached(pid int, began time.Time, p killPlan) bool {
	r.t.Helper()
	var kids []child
	killed := r.killAt(began, p, func() bool { return !local.Held(r.state, r.run) }, func() bool {
		st, err := enginetest.State(r.state).Published(r.run)
		if err != nil || st.PID != pid || !local.Held(r.state, r.run) {
			return false
		}
		kids = childrenOf(pid)
		return syscall.Kill(pid, syscall.SIGKILL) == nil
	})
	if killed {
		// Its lock goes with its files, before its children are sent their parent-death signal.
		waitDead(r.t, pid)
		r.orphans = append(r.orphans, survivors(kids)...)
	}
	r.waitFree()
	return killed
}

// waitFree waits until no process holds the run.
func (r *killRig) waitFree() {
	r.t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for local.Held(r.state, r.run) {
		require.False(r.t, time.Now().After(deadline), "run %s: still held after 5 minutes", r.run)
		time.Sleep(5 * time.Millisecond)
	}
}

func (r *killRig) startArgs() []string {
	return []string{r.wf.path, "--backend", "fake", "--answers", r.wf.answers, "--repo", r.repo, "--json"}
}

// drive runs the workflow to its end, killing its processes as the rig draws, and returns the
// end's status (nil: it stopped at an orphan, untilOrphan).
func (r *killRig) drive() *store.Status {
	t := r.t
	t.Helper()
	for r.run == "" {
		if r.untilOrphan && len(r.orphans) > 0 {
			return nil
		}
		plan := r.wantKill(false)
		if r.rng != nil && r.rng.IntN(2) == 0 {
			began := time.Now()
			out := r.crw([]int{0}, append([]string{"flow", "start"}, r.startArgs()...)...)
			var s struct {
				Run string `json:"run"`
				PID int    `json:"pid"`
			}
			require.NoError(t, json.Unmarshal(out, &s), "%s", out)
			r.run = s.Run
			if r.detached(s.PID, began, plan) {
				r.kills++
			}
			break
		}
		out, killed := r.foreground(plan, append([]string{"flow", "run"}, r.startArgs()...)...)
		if !killed {
			r.run = decodeRun(t, out).Run
			break
		}
		r.kills++
		ids, err := enginetest.State(r.state).Runs()
		require.NoError(t, err)
		require.LessOrEqual(t, len(ids), 1)
		if len(ids) == 0 {
			r.restarts++ // killed before the run was made: nothing of it is left
			continue
		}
		r.run = ids[0]
		r.waitFree()
	}
	for step := 0; ; step++ {
		if r.untilOrphan && len(r.orphans) > 0 {
			return nil
		}
		require.Less(t, step, 40, "run %s did not end", r.run)
		st, err := enginetest.State(r.state).Status(r.run)
		require.NoError(t, err)
		switch st.State {
		case store.StateEnded:
			return st
		case store.StateWaitingResume:
			// Its decisions are answered (--no-resume): it waits for a resume.
			require.Empty(t, st.Decisions, "run %s: %+v", r.run, st)
			r.resume()
		case store.StateWaitingDecision:
			require.NotEmpty(t, st.Decisions, "run %s waits for a decision and lists none: %+v", r.run, st)
			for _, dec := range st.Decisions {
				value, ok := r.wf.decisions[dec.ID]
				require.True(t, ok, "run %s asks decision %q", r.run, dec.ID)
				plan := r.wantKill(false)
				if r.rng != nil && r.rng.IntN(2) == 0 {
					// The answer resumes the run in a process of its own.
					began := time.Now()
					out := r.crw([]int{0}, "flow", "answer", r.run, dec.ID, "--value", value, "--json")
					var a struct {
						PID int `json:"pid"`
					}
					require.NoError(t, json.Unmarshal(out, &a), "%s", out)
					r.answered++
					if a.PID != 0 {
						r.resumes++
						if r.detached(a.PID, began, plan) {
							r.kills++
						}
					}
					break
				}
				r.crw([]int{0}, "flow", "answer", r.run, dec.ID, "--value", value, "--no-resume", "--json")
				r.answered++
			}
		default:
			// A process killed before it wrote the run's first row leaves it as it was created:
			// queued, and a resume runs it.
			require.Contains(t, []store.State{store.StateCrashed, store.StatePaused, store.StateQueued}, st.State, "run %s: %+v", r.run, st)
			r.resume()
		}
	}
}

// vanish removes the folder of one of the run's worktrees, as a person might while no process
// holds the run: git still has it registered, and the resume makes it again.
func (r *killRig) vanish() bool {
	entries, err := os.ReadDir(filepath.Join(enginetest.State(r.state).RunDir(r.run), "worktrees"))
	if err != nil || len(entries) == 0 {
		return false
	}
	e := entries[r.rng.IntN(len(entries))]
	require.NoError(r.t, os.RemoveAll(filepath.Join(enginetest.State(r.state).RunDir(r.run), "worktrees", e.Name())),
		"run %s: a worktree cannot be removed while no process holds the run (does a git of a killed process still write in it?)", r.run)
	r.vanished++
	return true
}

// resume resumes the run, detached or in the foreground, killed as the rig draws, and waits
// until no process holds it.
func (r *killRig) resume() {
	t := r.t
	t.Helper()
	vanished := r.rng != nil && r.rng.IntN(2) == 0 && r.vanish()
	plan := r.wantKill(vanished)
	r.resumes++
	if r.rng != nil && r.rng.IntN(2) == 0 {
		began := time.Now()
		out := r.crw([]int{0}, "flow", "resume", r.run, "--detach", "--json")
		var s struct {
			PID int `json:"pid"`
		}
		require.NoError(t, json.Unmarshal(out, &s), "%s", out)
		if r.detached(s.PID, began, plan) {
			r.kills++
		}
		return
	}
	if _, killed := r.foreground(plan, "flow", "resume", r.run, "--json"); killed {
		r.kills++
	}
	r.waitFree()
}

// killEnd is what a run leaves that an interrupted run must leave too.
type killEnd struct {
	result json.RawMessage
	refs   map[string]string // each ref of the run (its name after refs/crw/flow/RUN/) → its tree and how many commits it has
	turns  []string          // the turns the host received
}

// finish checks what every run must leave, interrupted or not, and returns what it left.
func (r *killRig) finish(st *store.Status) killEnd {
	t := r.t
	t.Helper()
	require.Equal(t, store.RunCompleted, st.Status, "run %s: %+v", r.run, st.Error)
	assert.Empty(t, r.orphans, "run %s: children of killed processes went on after them (a git goes on writing a worktree the next process makes or removes)", r.run)
	journalfiletest.Check(t, enginetest.State(r.state).JournalPath(r.run))
	rows, err := enginetest.State(r.state).Rows(r.run)
	require.NoError(t, err)
	enginetest.CheckJournal(t, rows)
	for _, row := range rows {
		switch row.Reason {
		case "worktree_failed", "restore_snapshot_mismatch":
			t.Errorf("run %s: row %d (%s) of call %s: %s: %s", r.run, row.Seq, row.Type, row.Call, row.Reason, row.Detail)
		}
		if row.Type == journal.TypeCommitResult {
			assert.Empty(t, row.Reason, "run %s: row %d: %s", r.run, row.Seq, row.Detail)
		}
	}
	received, _ := enginetest.HostLog(t, r.hostLog())
	enginetest.CheckSends(t, received)
	end := killEnd{result: st.Result, refs: map[string]string{}}
	for turn := range received {
		end.turns = append(end.turns, turn)
	}
	sort.Strings(end.turns)

	list := enginetest.Git(t, r.repo, "worktree", "list", "--porcelain")
	assert.Equal(t, 1, strings.Count(list, "worktree "), "run %s: a worktree of the run is left:\n%s", r.run, list)
	assert.NotContains(t, list, "locked", "run %s: a worktree is locked:\n%s", r.run, list)
	_, err = os.Stat(filepath.Join(enginetest.State(r.state).RunDir(r.run), "worktrees"))
	assert.True(t, os.IsNotExist(err), "run %s: the run's worktrees folder is left (%v)", r.run, err)
	prefix := "refs/crw/flow/" + r.run + "/"
	for _, ref := range strings.Fields(enginetest.Git(t, r.repo, "for-each-ref", "--format=%(refname)")) {
		if ref == "refs/heads/main" {
			continue
		}
		name, ok := strings.CutPrefix(ref, prefix)
		if !assert.True(t, ok, "run %s made a ref outside %s: %s", r.run, prefix, ref) {
			continue
		}
		end.refs[name] = enginetest.Git(t, r.repo, "rev-parse", ref+"^{tree}") + " " + enginetest.Git(t, r.repo, "rev-list", "--count", ref)
	}
	return end
}

// normalize takes out of a result what differs from run to run by design: build-commit's commit
// (its dates are the run's) and the run's id in its ref.
func (r *killRig) normalize(result json.RawMessage) string {
	var v map[string]any
	require.NoError(r.t, json.Unmarshal(result, &v), "%s", result)
	if r.wf.name == "build-commit" {
		delete(v, "commit")
		if ref, ok := v["ref"].(string); ok {
			v["ref"] = strings.Replace(ref, r.run, "RUN", 1)
		}
	}
	out, err := json.Marshal(v)
	require.NoError(r.t, err)
	return string(out)
}

// killBaseline is an uninterrupted run of a workflow: what it leaves and how long it took.
type killBaseline struct {
	end    killEnd
	result string
	span   time.Duration
	err    error
}

// TestKillOnBigRepo drives seeded runs on a big repository to their ends through SIGKILLs at
// random instants (and worktree folders removed while no process holds the run, which the
// resumes make again) and holds each to an uninterrupted run of its workflow: the same result, the
// same refs with the same trees and as many commits, every turn sent once, clean journals, no
// call ended worktree_failed or restore_snapshot_mismatch, no worktree of the run left
// registered or locked, and no ref outside the run's.
func TestKillOnBigRepo(t *testing.T) {
	if testing.Short() {
		t.Skip("kills many processes on a repository of 10,000 files")
	}
	t.Parallel()
	var seeds []uint64
	switch {
	case *killSeed > 0:
		seeds = []uint64{uint64(*killSeed)}
	case *killSeeds > 0:
		for s := 1; s <= *killSeeds; s++ {
			seeds = append(seeds, uint64(s))
		}
	default:
		for s := 1; s <= killSeedsFixed; s++ {
			seeds = append(seeds, uint64(s))
		}
	}
	wfs := killWorkflows(t)
	baselines := map[string]*killBaseline{}
	t.Run("uninterrupted", func(t *testing.T) {
		for _, s := range seeds {
			wf := wfs[s%uint64(len(wfs))]
			if baselines[wf.name] != nil {
				continue
			}
			b := &killBaseline{}
			baselines[wf.name] = b
			t.Run(wf.name, func(t *testing.T) {
				t.Parallel()
				b.err = fmt.Errorf("the uninterrupted run of %s failed", wf.name)
				r := newKillRig(t, wf)
				began := time.Now()
				st := r.drive()
				b.span = time.Since(began)
				b.end = r.finish(st)
				b.result = r.normalize(b.end.result)
				if !t.Failed() {
					b.err = nil
				}
				t.Logf("%s: uninterrupted in %v, %d turns, refs %v", wf.name, b.span.Round(time.Millisecond), len(b.end.turns), b.end.refs)
			})
		}
	})
	for _, s := range seeds {
		wf := wfs[s%uint64(len(wfs))]
		t.Run(fmt.Sprintf("seed %d", s), func(t *testing.T) {
			t.Parallel()
			b := baselines[wf.name]
			require.NoError(t, b.err)
			r := newKillRig(t, wf)
			r.rng = rand.New(rand.NewPCG(s, 0x6b696c6c))
			r.span = b.span
			r.maxKill = 1 + r.rng.IntN(4)
			began := time.Now()
			st := r.drive()
			took := time.Since(began)
			end := r.finish(st)
			assert.Equal(t, b.result, r.normalize(end.result), "seed %d (%s): the result", s, wf.name)
			assert.Equal(t, b.end.refs, end.refs, "seed %d (%s): the run's refs (tree and commits)", s, wf.name)
			assert.Equal(t, b.end.turns, end.turns, "seed %d (%s): the turns the host received", s, wf.name)
			t.Logf("seed %d: %s, %d kills of %d drawn (%d before the run was made), %d resumes, %d answers, %d worktrees removed, %v (uninterrupted %v)",
				s, wf.name, r.kills, r.drawn, r.restarts, r.resumes, r.answered, r.vanished, took.Round(time.Millisecond), b.span.Round(time.Millisecond))
		})
	}
}

// TestKillThenDelete kills a run while git makes one of its worktrees and never resumes it:
// crw flow delete removes its worktrees (the half-made, locked one too) and its refs, or with
// --keep-refs leaves its refs as they were.
func TestKillThenDelete(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes on a repository of 10,000 files")
	}
	t.Parallel()
	wf := killWorkflows(t)[0] // fanout
	for _, keepRefs := range []bool{false, true} {
		name := "delete"
		if keepRefs {
			name = "delete --keep-refs"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// Without --keep-refs: killed while the first worktrees are made. With it: once
			// every node is kept, while the last reviewers' checkouts are made.
			wantRefs := 0
			if keepRefs {
				wantRefs = 3
			}
			// The kill can come just after git finished the checkout it saw begin (the lock is
			// gone), or the run can end first: such a try is deleted and the test tries again.
			var r *killRig
			var prefix string
			for try := 1; ; try++ {
				require.LessOrEqual(t, try, 5, "five runs were not killed while a worktree was being made")
				r = newKillRig(t, wf)
				out := r.crw([]int{0}, append([]string{"flow", "start"}, r.startArgs()...)...)
				var s struct {
					Run string `json:"run"`
					PID int    `json:"pid"`
				}
				require.NoError(t, json.Unmarshal(out, &s), "%s", out)
				r.run = s.Run
				prefix = "refs/crw/flow/" + r.run + "/"
				// Read from git's admin folders, not git worktree list: a kill while git wrote
				// one can leave it broken (an empty commondir), and git then lists nothing.
				if r.killWhileMaking(s.PID, wantRefs) && beingMade(filepath.Join(r.repo, ".git")) {
					break
				}
				t.Logf("try %d: run %s was not killed while a worktree was being made; again", try, r.run)
				r.crw([]int{0}, "flow", "delete", r.run, "--json")
			}
			refs := enginetest.Git(t, r.repo, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
			if keepRefs {
				require.Len(t, strings.Split(refs, "\n"), 4, "three nodes and gamma's stray ref: %s", refs)
			}

			args := []string{"flow", "delete", r.run, "--json"}
			if keepRefs {
				args = append(args, "--keep-refs")
			}
			r.crw([]int{0}, args...)
			list := enginetest.Git(t, r.repo, "worktree", "list", "--porcelain")
			assert.Equal(t, 1, strings.Count(list, "worktree "), "a worktree of the run is left:\n%s", list)
			assert.NotContains(t, list, "locked", "a worktree is locked:\n%s", list)
			_, err := os.Stat(enginetest.State(r.state).RunDir(r.run))
			assert.True(t, os.IsNotExist(err), "the run's folder is left (%v)", err)
			after := enginetest.Git(t, r.repo, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
			if keepRefs {
				assert.Equal(t, refs, after, "--keep-refs keeps the run's refs")
			} else {
				assert.Empty(t, after, "the run's refs are left")
			}
			all := enginetest.Git(t, r.repo, "for-each-ref", "--format=%(refname)")
			for _, ref := range strings.Fields(all) {
				assert.True(t, ref == "refs/heads/main" || strings.HasPrefix(ref, prefix), "a ref outside the run's: %s", ref)
			}
		})
	}
}

// killWhileMaking SIGKILLs the run's process pid once the run has made wantRefs node refs and
// git is making one of its worktrees, and waits until no process holds the run; false when the
// run ended first.
func (r *killRig) killWhileMaking(pid, wantRefs int) bool {
	t := r.t
	gitDir := filepath.Join(r.repo, ".git")
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if !local.Held(r.state, r.run) {
			return false
		}
		require.False(t, time.Now().After(deadline), "run %s: no worktree was made in 5 minutes", r.run)
		nodes, _ := filepath.Glob(filepath.Join(gitDir, "refs", "crw", "flow", r.run, "nodes", "*"))
		if len(nodes) >= wantRefs && beingMade(gitDir) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	r.kills++
	r.waitFree()
	return true
}

// beingMade reports whether a worktree of the repository whose git directory is gitDir is
// locked by crw while it is made.
func beingMade(gitDir string) bool {
	locks, _ := filepath.Glob(filepath.Join(gitDir, "worktrees", "*", "locked"))
	for _, l := range locks {
		if data, err := os.ReadFile(l); err == nil && strings.TrimSpace(string(data)) == workspace.MakingReason {
			return true
		}
	}
	return false
}
