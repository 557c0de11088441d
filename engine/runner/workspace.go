package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/workspace"
	"github.com/crw-dev/crw/internal/plant"
	"github.com/crw-dev/crw/journal"
)

// Placements: how a call's directory P was made (docs/workspaces.md).
const (
	PlaceAttempt  = "attempt"  // an executor's: the worktree of its node's allocation
	PlaceCheckout = "checkout" // any other role's: a call-private worktree at the head or the node's pending work
)

// workspaces is the run's placer and the state of its nodes' worktrees. Every node has a lock
// that is held while its worktree is made, restored, read or committed.
type workspaces struct {
	r    *runner
	root string // <run folder>/worktrees; "" when the store keeps no folder for the run

	openOnce sync.Once
	repo     *workspace.Repo
	repoErr  error

	mu    sync.Mutex
	nodes map[string]*nodeState
	// idle are the checkouts whose calls ended, kept for the next call of a role that writes
	// nothing (at most maxIdle of them); busy are the checkouts calls hold: those this process
	// placed calls in, and those the journal's open calls were placed in. A checkout is in one
	// of the two at most, and no call is given a busy one.
	idle    []idleCheckout
	maxIdle int
	busy    map[string]bool
	// seals are the seals of the checkouts this process made or moved (workspace.Seal), by
	// folder: only a checkout with one is handed on.
	seals map[string]workspace.Seal
}

// idleCheckout is a checkout no call works in, and the commit it was made or switched to.
type idleCheckout struct {
	path, commit string
	// endSeq is the terminal row of the call that left it: it is handed on once that row is
	// durable, for a crash that lost the row leaves the call open, and a resume goes on with it
	// in this checkout, which must not have been moved for another call meanwhile.
	endSeq uint64
}

// nodeState is a node's workspace in this process: what the journal says of it (replay.Node)
// and what this process did to it.
type nodeState struct {
	mu sync.Mutex
	replay.Node
	// restored: this process found the worktree as the journal says, or made it; mismatch:
	// it found it holding another tree, and leaves it in place.
	restored, mismatch bool
	// open are the executor calls in flight, by the allocation they run on.
	open map[*call]int
	// worked: an executor call of this process worked in the worktree, so its tree may differ
	// from what the journal's commits recorded.
	worked bool
}

func newWorkspaces(r *runner, dir string) *workspaces {
	ws := &workspaces{r: r, nodes: map[string]*nodeState{}, maxIdle: max(r.spec.Pool, 1), busy: map[string]bool{}, seals: map[string]workspace.Seal{}}
	if dir != "" {
		ws.root = filepath.Join(dir, "worktrees")
	}
	if h := r.h; h != nil {
		for name, nd := range h.Nodes {
			ws.nodes[name] = &nodeState{Node: *nd, open: map[*call]int{}}
		}
		for _, c := range h.ByID {
			if c.EndType == "" && c.Placed != nil && c.Placed.Placement == PlaceCheckout {
				ws.busy[filepath.Clean(c.Placed.Workspace)] = true
			}
		}
	}
	return ws
}

// has reports whether the run has a repository.
func (ws *workspaces) has() bool { return ws.r.spec.Repo != "" }

// open opens the run's repository once.
func (ws *workspaces) open(ctx context.Context) (*workspace.Repo, error) {
	ws.openOnce.Do(func() {
		if ws.root == "" {
			ws.repoErr = errors.New("the store keeps no folder for this run, where its worktrees would be")
			return
		}
		ws.repo, ws.repoErr = workspace.Open(ctx, ws.r.spec.Repo)
		if ws.repoErr != nil {
			ws.repoErr = fmt.Errorf("the run's repository %s: %w", ws.r.spec.Repo, ws.repoErr)
			return
		}
		if ws.r.h != nil {
			ws.removeStaleLocks()
			if !ws.r.spec.KeepWorktrees {
				ws.removeLeftovers(ctx)
			}
		}
	})
	return ws.repo, ws.repoErr
}

// removeStaleLocks removes the locks an earlier process of the run left when it was killed
// while git moved one of the run's refs or a worktree's HEAD: this process holds the run, so no
// git of crw's works on them, and with a lock left there every later update of that ref or HEAD
// would fail. Only the run's own refs and worktrees are looked at. What was removed is a
// warning row of the run.
func (ws *workspaces) removeStaleLocks() {
	removed, err := ws.repo.RemoveStaleLocks(RunRefs(ws.r.id), ws.root)
	if len(removed) > 0 {
		ws.r.j.Append(&journal.Row{Type: journal.TypeWarning, Reason: "stale_lock_removed",
			Detail: fmt.Sprintf("an earlier process of the run left git's locks, removed: %s", strings.Join(removed, ", "))})
	}
	if err != nil {
		ws.r.j.Append(&journal.Row{Type: journal.TypeWarning, Reason: "stale_lock_left",
			Detail: fmt.Sprintf("the locks an earlier process of the run left in %s: %v", ws.repo.GitDir, err)})
	}
}

func (ws *workspaces) node(name string) *nodeState {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	n := ws.nodes[name]
	if n == nil {
		n = &nodeState{Node: replay.Node{Name: name}, open: map[*call]int{}, restored: true}
		ws.nodes[name] = n
	}
	return n
}

// RunRefs is the prefix of every ref a run makes in its repository.
func RunRefs(run string) string { return "refs/crw/flow/" + run + "/" }

// NodeRef is the ref a node's commits go on.
func NodeRef(run, node string) string {
	return RunRefs(run) + "nodes/" + workspace.Escape(node)
}

// StrayRef is the ref that keeps the commits an executor call made on its own.
func StrayRef(run, node string, alloc int, call string) string {
	return fmt.Sprintf("%sstray/%s/a%d-%s", RunRefs(run), workspace.Escape(node), alloc, call)
}

func (ws *workspaces) attemptPath(node string, alloc int) string {
	return filepath.Join(ws.root, "n-"+workspace.Escape(node)+"-a"+strconv.Itoa(alloc))
}

func (ws *workspaces) checkoutPath(c *call) string {
	return filepath.Join(ws.root, c.id+"-g"+strconv.Itoa(c.attempt))
}

// gitWork is the calls' git work (placing, leaving, releasing a directory): each holds the
// gate for reading while it runs, and a process that stops closes it (stopGit), waiting until
// no git command of its calls runs and letting none start after. A stopped process's calls are
// left as a crash leaves them, but nothing of it goes on making or removing a worktree that the
// next process of the run, or a delete, works on. It returns false once the gate is closed.
func (r *runner) gitWork() (done func(), ok bool) {
	r.gitMu.RLock()
	if r.gitClosed {
		r.gitMu.RUnlock()
		return nil, false
	}
	return r.gitMu.RUnlock, true
}

// stopGit closes the git gate and waits for the git work under way to end.
func (r *runner) stopGit() {
	r.gitMu.Lock()
	r.gitClosed = true
	r.gitMu.Unlock()
}

// held is a call that cannot run in its directory.
func held(reason, format string, args ...any) *journal.Row {
	return &journal.Row{Type: journal.TypeHeld, Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// place makes the call's directory P and records it (workspace_placed), or says why the call
// ends held. A call with no row placed works in the run's cwd (a run without a repository). rec
// is the call as an earlier process left it: its directory is the one it recorded.
func (r *runner) place(c *call, rec *replay.Call) (placed, end *journal.Row) {
	ws := r.ws
	writes := replay.Writes(c.req.Role)
	if r.dryRun {
		return nil, nil
	}
	if !ws.has() {
		if writes {
			return nil, held("worktree_failed", "the run has no repository, and an %s call works in a worktree of one: "+
				"start the run inside a git checkout or name one with --repo DIR", c.req.Role)
		}
		return nil, nil
	}
	done, ok := r.gitWork()
	if !ok {
		return nil, held("worktree_failed", "the process is stopping")
	}
	defer done()
	// Not the call's context: a pause, a cancel or a deadline that interrupts the call must not
	// kill git halfway through a worktree (it would be left half made, and the call would end
	// worktree_failed for what was no failure of its directory). Only a process that stops
	// cuts git short.
	ctx := r.placeCtx(c)
	repo, err := ws.open(ctx)
	if err != nil {
		return nil, held("worktree_failed", "%v", err)
	}
	n := ws.node(c.req.Node)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.Ref != "" {
		ref := NodeRef(r.id, n.Name)
		cur, err := repo.Ref(ctx, ref)
		if err != nil {
			return nil, held("worktree_failed", "%s cannot be read: %v", ref, err)
		}
		if cur != n.Ref && r.finishDeadCommit(ctx, repo, n) {
			cur = n.Ref
		}
		if cur != n.Ref {
			return nil, held("accepted_node_changed", "%s is at %s, but the run put it at %s: something moved the node's accepted commit under the run",
				ref, orNone(cur), n.Ref)
		}
	}
	if rec != nil && rec.Placed != nil {
		return r.placeAgain(c, n, repo, rec)
	}
	if writes {
		return r.placeAttempt(c, n, repo)
	}
	return r.placeCheckout(c, n, repo)
}

// placeCtx is what a call's placement runs git under: the process's stop, not the call's own
// context (see place).
func (r *runner) placeCtx(c *call) context.Context {
	if plant.On(plant.PlaceUnderCall) {
		return c.ctx
	}
	return r.stopCtx
}

func orNone(s string) string {
	if s == "" {
		return "no commit (the ref is gone)"
	}
	return s
}

// placeAttempt gives an executor call its node's worktree, making the node's next allocation
// when it has none yet or a tier step asked for one.
func (r *runner) placeAttempt(c *call, n *nodeState, repo *workspace.Repo) (placed, end *journal.Row) {
	ctx := r.placeCtx(c)
	ws := r.ws
	if n.Alloc == 0 || n.NextAlloc > n.Alloc {
		next := max(n.NextAlloc, n.Alloc+1)
		r.supersede(n, next)
		if n.Path != "" && !r.spec.KeepWorktrees {
			_ = repo.RemoveWorktree(ctx, n.Path)
		}
		start := n.Ref
		if start == "" {
			start = r.spec.HeadCommit
		}
		n.Alloc, n.Start, n.At, n.Tree, n.Path, n.restored = next, start, start, "", ws.attemptPath(n.Name, next), false
		// No row records this allocation yet: what is at its path is an earlier process's,
		// made before it could record it (a half-made worktree), and goes.
		if err := repo.RemoveWorktree(ctx, n.Path); err != nil {
			return nil, held("worktree_failed", "%s is there from an earlier process and cannot be removed: %v", n.Path, err)
		}
	}
	if why, cause := r.restore(ctx, n, repo, false); why != "" {
		return nil, held(restoreReason(why), "%s", withCause(why, cause))
	}
	n.open[c], n.worked = n.Alloc, true
	return &journal.Row{Type: journal.TypeWorkspacePlaced, Call: c.id, Placement: PlaceAttempt, Node: n.Name, Alloc: n.Alloc,
		Start: n.Start, Commit: n.At, Workspace: n.Path}, nil
}

// restoreReason tells a directory git could not make from a tree that is not the recorded one.
func restoreReason(why string) string {
	if len(why) > len(worktreeFailed) && why[:len(worktreeFailed)] == worktreeFailed {
		return "worktree_failed"
	}
	return "restore_snapshot_mismatch"
}

const worktreeFailed = "the worktree could not be made: "

// restore makes sure the node's worktree is as the journal says: made at the commit it is to
// be at with the tree it last held, or, when it is there already, holding that tree. drift
// allows another tree: an executor call the journal left open was working in it. It returns
// why not ("" when it is), in crw's words, and git's error when git failed.
func (r *runner) restore(ctx context.Context, n *nodeState, repo *workspace.Repo, drift bool) (string, error) {
	if n.restored {
		return "", nil
	}
	want := n.Tree
	if want == "" {
		t, err := repo.TreeOf(ctx, n.At)
		if err != nil {
			return fmt.Sprintf("node %q is to be at commit %s, which the repository does not hold", n.Name, n.At), nil
		}
		want = t
	}
	if _, err := os.Lstat(n.Path); err == nil && repo.HalfMade(n.Path) {
		// A process was making it when it was killed: what it holds is no one's work, and it
		// is made again below.
		if err := repo.RemoveWorktree(ctx, n.Path); err != nil {
			return fmt.Sprintf("%snode %q: %s was left half made and cannot be removed", worktreeFailed, n.Name, n.Path), err
		}
	}
	if _, err := os.Lstat(n.Path); err == nil {
		got, err := repo.PendingTree(ctx, n.Path, true)
		if err != nil {
			return fmt.Sprintf("node %q: its worktree %s cannot be read", n.Name, n.Path), err
		}
		if got != want && !drift && !n.Open {
			n.mismatch = true // kept when the run ends, for a person to look at
			return fmt.Sprintf("node %q: its worktree %s holds tree %s, but the journal recorded tree %s: it was changed while no process of the run watched it",
				n.Name, n.Path, got, want), nil
		}
		n.restored, n.Open = true, false
		return "", nil
	}
	// Made at the commit it is to be at, holding the tree it last held: half made (locked)
	// until it holds that tree, so a process killed on the way leaves one the next process
	// makes again, not one it takes for changed.
	hold := ""
	if t, _ := repo.TreeOf(ctx, n.At); t != want {
		if !repo.Has(ctx, want) {
			return fmt.Sprintf("node %q: the tree %s its worktree last held is not in the repository", n.Name, want), nil
		}
		hold = want
	}
	if err := repo.AddWorktreeHolding(ctx, n.Path, n.At, hold); err != nil {
		return fmt.Sprintf("%snode %q: %s", worktreeFailed, n.Name, n.Path), err
	}
	n.restored, n.Open = true, false
	return "", nil
}

// withCause is why with git's error, for a row's detail: the journal keeps the whole account.
func withCause(why string, cause error) string {
	if cause == nil {
		return why
	}
	return why + ": " + cause.Error()
}

// placeCheckout gives a call of a role that writes nothing a worktree of its own: at the
// pending work of its node when the node has a worktree, else at the run's head.
func (r *runner) placeCheckout(c *call, n *nodeState, repo *workspace.Repo) (placed, end *journal.Row) {
	ctx := r.placeCtx(c)
	commit, tree := r.spec.HeadCommit, ""
	if n.Alloc > 0 {
		if why, cause := r.restore(ctx, n, repo, false); why != "" {
			return nil, held(restoreReason(why), "%s", withCause(why, cause))
		}
		t, err := repo.PendingTree(ctx, n.Path, true)
		if err != nil {
			return nil, held("worktree_failed", "node %q: its worktree cannot be read: %v", n.Name, err)
		}
		commit, tree = n.At, t
		if at, _ := repo.TreeOf(ctx, n.At); at != t {
			// The node's pending work, as a commit no ref holds: made from the prepared row's
			// time, so the same work gives the same commit.
			commit, err = repo.CommitTree(ctx, t, n.At, fmt.Sprintf("crw: the pending work of node %s, for call %s\n", n.Name, c.id),
				workspace.Identity{Name: "crw", Email: "crw@localhost", At: c.prepared.At})
			if err != nil {
				return nil, held("worktree_failed", "node %q: its pending work cannot be kept: %v", n.Name, err)
			}
		}
	}
	path := r.ws.reuse(ctx, repo, commit)
	if path == "" {
		path = r.ws.freshPath(c)
		// One an earlier process made, or was making, before it could record it.
		if err := repo.RemoveWorktree(ctx, path); err != nil {
			r.ws.forget(path)
			return nil, held("worktree_failed", "%s is there from an earlier process and cannot be removed: %v", path, err)
		}
		if err := repo.AddWorktree(ctx, path, commit); err != nil {
			r.ws.forget(path)
			return nil, held("worktree_failed", "%s%v", worktreeFailed, err)
		}
		seal, err := repo.MarkPristine(path)
		if err != nil {
			_ = repo.RemoveWorktree(ctx, path)
			r.ws.forget(path)
			return nil, held("worktree_failed", "%s%s: its index cannot be kept: %v", worktreeFailed, path, err)
		}
		r.ws.setSeal(path, seal)
	}
	return &journal.Row{Type: journal.TypeWorkspacePlaced, Call: c.id, Placement: PlaceCheckout, Node: n.Name, Commit: commit, Tree: tree, Workspace: path}, nil
}

// reuse gives a call an idle checkout moved to commit, "" when there is none that is as its
// last call found it. The one at commit is taken first (nothing to move), else the one that
// went idle last. A checkout that is not pristine (its call changed it: a file, the index, its
// HEAD, its .git) is removed, never handed on.
func (ws *workspaces) reuse(ctx context.Context, repo *workspace.Repo, commit string) string {
	for {
		ws.mu.Lock()
		if len(ws.idle) == 0 {
			ws.mu.Unlock()
			return ""
		}
		i := len(ws.idle) - 1
		for j, e := range ws.idle {
			if e.commit == commit {
				i = j
			}
		}
		e := ws.idle[i]
		ws.idle = slices.Delete(ws.idle, i, i+1)
		ws.busy[e.path] = true
		ws.mu.Unlock()
		if err := ws.r.j.Sync(e.endSeq); err != nil {
			ws.forget(e.path) // the journal failed: the process stops, and leaves it as it is
			return ""
		}
		if why, err := repo.Pristine(ctx, e.path, e.commit, ws.sealOf(e.path)); err == nil && why == "" {
			if seal, err := repo.Switch(ctx, e.path, e.commit, commit); err == nil {
				if seal != "" {
					ws.setSeal(e.path, seal)
				}
				return e.path
			}
		}
		_ = repo.RemoveWorktree(ctx, e.path)
		ws.forget(e.path)
	}
}

// freshPath is the folder of a new checkout for c, held busy: the call's own name
// (<call>-g<attempt>), or that name with a number when a checkout idle or in use has it (one
// an earlier process made for the call and a resume handed to another).
func (ws *workspaces) freshPath(c *call) string {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	base := ws.checkoutPath(c)
	path := base
	for n := 2; ws.busy[path] || slices.ContainsFunc(ws.idle, func(e idleCheckout) bool { return e.path == path }); n++ {
		path = base + "-" + strconv.Itoa(n)
	}
	ws.busy[path] = true
	return path
}

// forget drops what the process knows of a checkout it removed (or left, the journal failing):
// that a call holds it, and its seal.
func (ws *workspaces) forget(path string) {
	ws.mu.Lock()
	delete(ws.busy, path)
	delete(ws.seals, path)
	ws.mu.Unlock()
}

func (ws *workspaces) setSeal(path string, seal workspace.Seal) {
	ws.mu.Lock()
	ws.seals[path] = seal
	ws.mu.Unlock()
}

func (ws *workspaces) sealOf(path string) workspace.Seal {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.seals[path]
}

// park keeps a checkout whose call ended for the next call; false when maxIdle are kept
// already (the caller removes it): the run's checkouts are never more than the calls it ran at
// once. endSeq is the row after which it may be handed on (0: at once).
func (ws *workspaces) park(path, commit string, endSeq uint64) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	delete(ws.busy, path)
	if slices.ContainsFunc(ws.idle, func(e idleCheckout) bool { return e.path == path }) {
		return true
	}
	if len(ws.idle) < ws.maxIdle && commit != "" && ws.seals[path] != "" {
		ws.idle = append(ws.idle, idleCheckout{path: path, commit: commit, endSeq: endSeq})
		return true
	}
	return false
}

// dropIdle removes the idle checkouts when the process leaves a run that waits (paused, or for
// a decision): while nothing of the run runs, it holds no checkout but its nodes' worktrees.
func (r *runner) dropIdle() {
	r.ws.mu.Lock()
	idle := r.ws.idle
	r.ws.idle = nil
	r.ws.mu.Unlock()
	if len(idle) == 0 {
		return
	}
	done, ok := r.gitWork()
	if !ok {
		return
	}
	defer done()
	ctx := context.WithoutCancel(r.ctx)
	repo, err := r.ws.open(ctx)
	if err != nil {
		return
	}
	for _, e := range idle {
		_ = repo.RemoveWorktree(ctx, e.path)
		r.ws.forget(e.path)
	}
}

// removeLeftovers removes the checkouts an earlier process of the run left under its worktrees folder
// that no open call of the journal holds (idle ones, ones whose calls ended before they were
// let go, half-made ones): crw holds no seal of them, so none is handed on. It runs when the
// process opens the repository, before any call of the process is placed: what it finds is no
// checkout of this process's.
func (ws *workspaces) removeLeftovers(ctx context.Context) {
	repo := ws.repo
	ws.mu.Lock()
	claimed := maps.Clone(ws.busy)
	for _, n := range ws.nodes {
		if n.Path != "" {
			claimed[filepath.Clean(n.Path)] = true
		}
	}
	ws.mu.Unlock()
	entries, err := os.ReadDir(ws.root)
	if err != nil {
		return
	}
	for _, e := range entries {
		path := filepath.Join(ws.root, e.Name())
		if e.IsDir() && !strings.HasPrefix(e.Name(), "n-") && !claimed[path] {
			_ = repo.RemoveWorktree(ctx, path)
		}
	}
}

// placeAgain is the directory of a call an earlier process placed and left open.
func (r *runner) placeAgain(c *call, n *nodeState, repo *workspace.Repo, rec *replay.Call) (placed, end *journal.Row) {
	ctx := r.placeCtx(c)
	p := rec.Placed
	switch p.Placement {
	case PlaceAttempt:
		if p.Alloc < n.Alloc || (n.NextAlloc > n.Alloc && p.Alloc == n.Alloc) {
			return nil, &journal.Row{Type: journal.TypeSuperseded, Reason: "superseded_by_attempt",
				Detail: fmt.Sprintf("node %q has a newer attempt than allocation %d, which the call worked in", n.Name, p.Alloc)}
		}
		if why, cause := r.restore(ctx, n, repo, true); why != "" {
			return nil, held(restoreReason(why), "%s", withCause(why, cause))
		}
		n.open[c], n.worked = n.Alloc, true
	default:
		_, err := os.Lstat(p.Workspace)
		if err == nil && repo.HalfMade(p.Workspace) {
			// A process was making it again when it was killed: it is made anew.
			if err := repo.RemoveWorktree(ctx, p.Workspace); err != nil {
				return nil, held("worktree_failed", "the checkout %s of call %s was left half made and cannot be removed: %v", p.Workspace, c.id, err)
			}
			err = os.ErrNotExist
		}
		if err != nil {
			if err := repo.AddWorktree(ctx, p.Workspace, p.Commit); err != nil {
				return nil, held("restore_snapshot_mismatch", "the checkout %s of call %s cannot be made again at %s: %v", p.Workspace, c.id, p.Commit, err)
			}
			if seal, err := repo.MarkPristine(p.Workspace); err == nil { // without it, the checkout is not handed on
				r.ws.setSeal(p.Workspace, seal)
			}
		}
	}
	return p, nil
}

// supersede interrupts the calls of the node's allocations before next: a new attempt of a
// node supersedes the open calls of the previous one.
func (r *runner) supersede(n *nodeState, next int) {
	for o, alloc := range n.open {
		if alloc < next {
			delete(n.open, o)
			go r.interruptCall(o, reasonSupersededByAttempt)
		}
	}
}

const reasonSupersededByAttempt = "superseded_by_attempt"

// interruptedEnd is the terminal row of a call the engine interrupted for reason.
func interruptedEnd(reason, detail string) *journal.Row {
	if reason == reasonSupersededByAttempt {
		return &journal.Row{Type: journal.TypeSuperseded, Reason: reason, Detail: "a newer attempt of the call's node started"}
	}
	return &journal.Row{Type: journal.TypeHeld, Reason: reason, Detail: detail}
}

// leave is what a call's directory says when the call ends, before its terminal row: an
// executor's tree and the commits it made on its own (kept on its stray ref).
func (r *runner) leave(c *call, row *journal.Row) {
	p := c.placed
	if p == nil || p.Placement != PlaceAttempt {
		return
	}
	done, ok := r.gitWork()
	if !ok {
		return
	}
	defer done()
	n := r.ws.node(p.Node)
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.open, c)
	if p.Alloc != n.Alloc {
		return
	}
	ctx := context.WithoutCancel(r.ctx)
	repo, err := r.ws.open(ctx)
	if err != nil {
		return
	}
	if head, err := repo.Head(ctx, n.Path); err == nil && head != n.At {
		ref := StrayRef(r.id, n.Name, n.Alloc, c.id)
		if err := r.keepStray(ctx, repo, ref, head); err != nil {
			r.j.Append(&journal.Row{Type: journal.TypeWarning, Call: c.id, Reason: "stray_ref_failed", Detail: err.Error()})
		}
		row.HeadMoved = &journal.HeadMoved{Start: n.At, Head: head, Ref: ref}
	}
	tree, err := repo.PendingTree(ctx, n.Path, true)
	if err != nil {
		r.j.Append(&journal.Row{Type: journal.TypeWarning, Call: c.id, Reason: "worktree_unreadable", Detail: err.Error()})
		n.restored = false // the next call of the node checks it again
		return
	}
	row.Tree, n.Tree = tree, tree
}

// keepStray puts head on a stray ref: made by a compare-and-swap against no ref, moved only
// forward to a descendant (the same call's later HEAD).
func (r *runner) keepStray(ctx context.Context, repo *workspace.Repo, ref, head string) error {
	cur, err := repo.Ref(ctx, ref)
	if err != nil {
		return err
	}
	switch {
	case cur == head:
		return nil
	case cur == "":
		return repo.SwapRef(ctx, ref, head, "")
	case repo.IsAncestor(ctx, cur, head):
		return repo.SwapRef(ctx, ref, head, cur)
	}
	return fmt.Errorf("%s holds %s, which %s does not descend from: it is left as it is", ref, cur, head)
}

// parkOnEnd keeps the checkout of a call whose terminal row was just appended idle for the next
// call, before the script hears of the call's end: the script's next call finds it. Called
// with r.mu held. One it cannot keep (maxIdle are kept already) release removes; a run that
// keeps every call's worktree for a person keeps it as it is.
func (r *runner) parkOnEnd(c *call) {
	p := c.placed
	if p == nil || p.Placement != PlaceCheckout || r.spec.KeepWorktrees || c.endSeq == 0 {
		return
	}
	c.parked = r.ws.park(p.Workspace, p.Commit, c.endSeq)
}

// release removes the checkout of a call that ended when parkOnEnd could not keep it.
func (r *runner) release(c *call) {
	p := c.placed
	if p == nil || p.Placement != PlaceCheckout || r.spec.KeepWorktrees || c.endSeq == 0 || c.parked {
		return
	}
	done, ok := r.gitWork()
	if !ok {
		return
	}
	defer done()
	if repo, err := r.ws.open(context.WithoutCancel(r.ctx)); err == nil {
		_ = repo.RemoveWorktree(context.WithoutCancel(r.ctx), p.Workspace)
		r.ws.forget(p.Workspace)
	}
}

// cleanUp removes every worktree of the run when it has ended, unless it is to keep them: those
// git has registered (locked and half made ones too) and any folder under the run's worktrees.
// A worktree a restore found changed is kept for a person to look at.
func (r *runner) cleanUp() {
	if !r.ws.has() || r.spec.KeepWorktrees || r.ws.root == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	repo, err := r.ws.open(ctx)
	if err != nil {
		return
	}
	kept := map[string]bool{}
	r.ws.mu.Lock()
	for _, n := range r.ws.nodes {
		if n.mismatch {
			kept[n.Path] = true
		}
	}
	r.ws.mu.Unlock()
	if err := repo.RemoveWorktreesUnder(ctx, r.ws.root, func(p string) bool { return kept[p] }); err != nil {
		r.j.Append(&journal.Row{Type: journal.TypeWarning, Reason: "worktree_left", Detail: fmt.Sprintf("the run's worktrees under %s: %v", r.ws.root, err)})
	}
	_ = os.Remove(r.ws.root) // not when a worktree is kept
}

// isolation is what --trace-isolation took when a call's turns started: digests of its
// directory, of the run's repository's own checkout, and of the refs under refs/crw/ that are
// not the run's.
type isolation struct {
	p, outside, shared string
	outsideDir         string // the checkout outside is of
}

// digests takes a call's isolation digests ("" for what cannot be read).
func (r *runner) digests(c *call) *isolation {
	ctx := context.WithoutCancel(r.ctx)
	repo, err := r.ws.open(ctx)
	if err != nil || c.placed == nil {
		return nil
	}
	d := &isolation{outsideDir: repo.Dir}
	iso, isolated := r.backend.(backend.Isolated)
	if isolated {
		// A session run's owner works from a checkout of its own (seed 003).
		if dir := iso.OutsideCheckout(ctx, c.placed.Workspace); dir != "" {
			d.outsideDir = dir
		}
	}
	d.p, _ = repo.Status(ctx, c.placed.Workspace)
	if d.outsideDir == repo.Dir {
		d.outside, _ = repo.Status(ctx, d.outsideDir)
	} else if other, err := workspace.Open(ctx, d.outsideDir); err == nil {
		d.outside, _ = other.Status(ctx, other.Dir)
	}
	if isolated {
		d.shared = iso.SharedDigest() + "\n"
	}
	if refs, err := repo.Refs(ctx, "refs/crw/"); err == nil {
		own := RunRefs(r.id)
		var kept []string
		for _, line := range strings.Split(refs, "\n") {
			if line != "" && !strings.HasPrefix(line, own) {
				kept = append(kept, line)
			}
		}
		d.shared += strings.Join(kept, "\n")
	}
	return d
}

// isolationWarnings compares a call's digests from when its turns started with now's, and
// writes the warnings the differences are.
func (r *runner) isolationWarnings(c *call) {
	before := c.isolation
	if before == nil {
		return
	}
	after := r.digests(c)
	if after == nil {
		return
	}
	warn := func(reason, detail string) {
		r.j.Append(&journal.Row{Type: journal.TypeWarning, Call: c.id, Reason: reason, Detail: detail})
	}
	writes := replay.Writes(c.req.Role)
	if !writes && after.p != before.p {
		warn("read_role_wrote", fmt.Sprintf("a %s call changed its directory %s (git status and HEAD differ)", c.req.Role, c.placed.Workspace))
	}
	if writes && after.outside != before.outside {
		warn("executor_wrote_outside", fmt.Sprintf("the checkout %s changed while the executor worked in %s", before.outsideDir, c.placed.Workspace))
	}
	if after.shared != before.shared {
		warn("shared_state_changed", "state other runs share (refs under refs/crw/ that are not this run's, owner bindings) changed while the call ran")
	}
}
