// Package placer gives each call of a run its directory P (docs/workspaces.md) and keeps the
// run's nodes' worktrees: an executor call works in its node's worktree (an allocation of the
// node), any other call in a checkout of its own, handed on to the next such call when it is
// pristine. It also makes the nodes' commits in those worktrees (crw.commit's git side) and
// moves a node to its next allocation (crw.tierStep). The runner asks it for a call's directory
// before the call's first turn (Place), tells it when the call ends (Leave, Park, Release), and
// writes the rows it returns; what the placer writes itself are warnings and commit results.
package placer

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
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/plant"
	"github.com/crw-dev/crw/journal"
)

// Placements: how a call's directory P was made (docs/workspaces.md).
const (
	PlaceAttempt  = "attempt"  // an executor's: the worktree of its node's allocation
	PlaceCheckout = "checkout" // any other role's: a call-private worktree at the head or the node's pending work
)

// ReasonSupersededByAttempt is why a call of a node's earlier allocation is interrupted when
// the node's next allocation is made.
const ReasonSupersededByAttempt = "superseded_by_attempt"

// Journal is what the placer writes to the run's journal: warnings and commit results.
type Journal interface {
	Append(rows ...*journal.Row) uint64
	Sync(seq uint64) error
}

// Config is a run's placer in one process.
type Config struct {
	Run           string
	Repo          string // the run's repository; "" when it has none
	Mirror        string // where the run's refs are kept besides (store.Spec.RepoURL); "" for none
	Dir           string // the run's folder in the store; "" when the store keeps none
	HeadCommit    string // the run's head: where checkouts start
	KeepWorktrees bool
	Pool          int             // the checkouts kept idle are at most this many
	History       *replay.History // the journal's account of the nodes and open calls; nil for none
	Journal       Journal
	// Stop ends only when the process stops: git is cut short then, never by a call's pause,
	// cancel or deadline (a worktree left half made).
	Stop context.Context
	// Backend is asked for the checkout outside a call's directory when it has one of its own
	// (backend.Isolated).
	Backend backend.Backend
	// Logged writes an error's full account to the run's log and is its detail naming that
	// line: git's output goes there, not into the journal.
	Logged func(*errs.Error) string
	// Flush asks for the rows written to be made durable soon.
	Flush func()
}

// Call is a call as the placer sees it.
type Call struct {
	ID       string
	Attempt  int
	Role     string
	Node     string
	Prepared time.Time       // its prepared row's time
	Ctx      context.Context // the call's own context
	// Interrupt interrupts the call: a newer allocation of its node supersedes it.
	Interrupt func(reason string)
}

// Placement is a call's directory while the call runs.
type Placement struct {
	Row       *journal.Row // its workspace_placed row
	call      Call
	endSeq    uint64 // the call's terminal row, once written (Park)
	parked    bool
	isolation *isolation
}

// Placer is the run's placer and the state of its nodes' worktrees. Every node has a lock
// that is held while its worktree is made, restored, read or committed.
type Placer struct {
	cfg  Config
	root string // <run folder>/worktrees; "" when the store keeps no folder for the run

	openOnce sync.Once
	repo     *workspace.Repo
	repoErr  error

	gitMu     sync.RWMutex // the git gate (gitWork)
	gitClosed bool

	// resultsMu guards the Result of the History's commits, which a placement may record
	// for a dead process (finishDeadCommit) while the script's loop reads it.
	resultsMu sync.Mutex

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
	open map[*Placement]int
	// worked: an executor call of this process worked in the worktree, so its tree may differ
	// from what the journal's commits recorded.
	worked bool
}

// New is a run's placer; nothing of git runs until a call or a commit needs the repository.
func New(cfg Config) *Placer {
	p := &Placer{cfg: cfg, nodes: map[string]*nodeState{}, maxIdle: max(cfg.Pool, 1), busy: map[string]bool{}, seals: map[string]workspace.Seal{}}
	if cfg.Dir != "" {
		p.root = filepath.Join(cfg.Dir, "worktrees")
	}
	if h := cfg.History; h != nil {
		for name, nd := range h.Nodes {
			p.nodes[name] = &nodeState{Node: *nd, open: map[*Placement]int{}}
		}
		for _, id := range h.IDs {
			if c := h.Call(id); c.EndType == "" && c.Placed != nil && c.Placed.Placement == PlaceCheckout {
				p.busy[filepath.Clean(c.Placed.Workspace)] = true
			}
		}
	}
	return p
}

// Has reports whether the run has a repository.
func (p *Placer) Has() bool { return p.cfg.Repo != "" }

// open opens the run's repository once.
func (p *Placer) open(ctx context.Context) (*workspace.Repo, error) {
	p.openOnce.Do(func() {
		if p.root == "" {
			p.repoErr = errors.New("the store keeps no folder for this run, where its worktrees would be")
			return
		}
		p.repo, p.repoErr = workspace.Open(ctx, p.cfg.Repo)
		if p.repoErr != nil {
			p.repoErr = fmt.Errorf("the run's repository %s: %w", p.cfg.Repo, p.repoErr)
			return
		}
		p.repo.Mirror = p.cfg.Mirror
		if p.cfg.History != nil {
			p.removeStaleLocks()
			if !p.cfg.KeepWorktrees {
				p.removeLeftovers(ctx)
			}
		}
	})
	return p.repo, p.repoErr
}

// removeStaleLocks removes the locks an earlier process of the run left when it was killed
// while git moved one of the run's refs or a worktree's HEAD: this process holds the run, so no
// git of crw's works on them, and with a lock left there every later update of that ref or HEAD
// would fail. Only the run's own refs and worktrees are looked at. What was removed is a
// warning row of the run.
func (p *Placer) removeStaleLocks() {
	removed, err := p.repo.RemoveStaleLocks(RunRefs(p.cfg.Run), p.root)
	if len(removed) > 0 {
		p.cfg.Journal.Append(journal.Warning{Reason: "stale_lock_removed", Detail: fmt.Sprintf("an earlier process of the run left git's locks, removed: %s", strings.Join(removed, ", "))}.Row())
	}
	if err != nil {
		p.cfg.Journal.Append(journal.Warning{Reason: "stale_lock_left", Detail: fmt.Sprintf("the locks an earlier process of the run left in %s: %v", p.repo.GitDir, err)}.Row())
	}
}

func (p *Placer) node(name string) *nodeState {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.nodes[name]
	if n == nil {
		n = &nodeState{Node: replay.Node{Name: name}, open: map[*Placement]int{}, restored: true}
		p.nodes[name] = n
	}
	return n
}

// RunRefs is the prefix of every ref a run makes in its repository.
func RunRefs(run string) string { return workspace.RunRefs(run) }

// NodeRef is the ref a node's commits go on.
func NodeRef(run, node string) string {
	return RunRefs(run) + "nodes/" + workspace.Escape(node)
}

// StrayRef is the ref that keeps the commits an executor call made on its own.
func StrayRef(run, node string, alloc int, call string) string {
	return fmt.Sprintf("%sstray/%s/a%d-%s", RunRefs(run), workspace.Escape(node), alloc, call)
}

func (p *Placer) attemptPath(node string, alloc int) string {
	return filepath.Join(p.root, "n-"+workspace.Escape(node)+"-a"+strconv.Itoa(alloc))
}

func (p *Placer) checkoutPath(c Call) string {
	return filepath.Join(p.root, c.ID+"-g"+strconv.Itoa(c.Attempt))
}

// gitWork is the calls' git work (placing, leaving, releasing a directory): each holds the
// gate for reading while it runs, and a process that stops closes it (Stop), waiting until
// no git command of its calls runs and letting none start after. A stopped process's calls are
// left as a crash leaves them, but nothing of it goes on making or removing a worktree that the
// next process of the run, or a delete, works on. It returns false once the gate is closed.
func (p *Placer) gitWork() (done func(), ok bool) {
	p.gitMu.RLock()
	if p.gitClosed {
		p.gitMu.RUnlock()
		return nil, false
	}
	return p.gitMu.RUnlock, true
}

// Stop closes the git gate and waits for the git work under way to end.
func (p *Placer) Stop() {
	p.gitMu.Lock()
	p.gitClosed = true
	p.gitMu.Unlock()
}

// held is a call that cannot run in its directory.
func held(reason, format string, args ...any) *journal.Row {
	return journal.Held(reason, fmt.Sprintf(format, args...))
}

// Place makes the call's directory P and is its row (workspace_placed), or says why the call
// ends held (end). A call without a placement works in the run's cwd (a run without a
// repository). rec is the call as an earlier process left it: its directory is the one it
// recorded, and its row is rec's.
func (p *Placer) Place(c Call, rec *replay.Call) (pl *Placement, end *journal.Row) {
	writes := replay.Writes(c.Role)
	if !p.Has() {
		if writes {
			return nil, held("worktree_failed", "the run has no repository, and an %s call works in a worktree of one: "+
				"start the run inside a git checkout or name one with --repo DIR", c.Role)
		}
		return nil, nil
	}
	done, ok := p.gitWork()
	if !ok {
		return nil, held("worktree_failed", "the process is stopping")
	}
	defer done()
	// Not the call's context: a pause, a cancel or a deadline that interrupts the call must not
	// kill git halfway through a worktree (it would be left half made, and the call would end
	// worktree_failed for what was no failure of its directory). Only a process that stops
	// cuts git short.
	ctx := p.placeCtx(c)
	repo, err := p.open(ctx)
	if err != nil {
		return nil, held("worktree_failed", "%v", err)
	}
	n := p.node(c.Node)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.Ref != "" {
		ref := NodeRef(p.cfg.Run, n.Name)
		cur, err := repo.Ref(ctx, ref)
		if err != nil {
			return nil, held("worktree_failed", "%s cannot be read: %v", ref, err)
		}
		if cur != n.Ref && p.finishDeadCommit(ctx, repo, n) {
			cur = n.Ref
		}
		if cur != n.Ref {
			return nil, held("accepted_node_changed", "%s is at %s, but the run put it at %s: something moved the node's accepted commit under the run",
				ref, orNone(cur), n.Ref)
		}
	}
	pl = &Placement{call: c}
	switch {
	case rec != nil && rec.Placed != nil:
		pl.Row, end = p.placeAgain(pl, n, repo, rec)
	case writes:
		pl.Row, end = p.placeAttempt(pl, n, repo)
	default:
		pl.Row, end = p.placeCheckout(pl, n, repo)
	}
	if pl.Row == nil {
		return nil, end
	}
	return pl, end
}

// placeCtx is what a call's placement runs git under: the process's stop, not the call's own
// context (see Place).
func (p *Placer) placeCtx(c Call) context.Context {
	if plant.On(plant.PlaceUnderCall) {
		return c.Ctx
	}
	return p.cfg.Stop
}

func orNone(s string) string {
	if s == "" {
		return "no commit (the ref is gone)"
	}
	return s
}

// placeAttempt gives an executor call its node's worktree, making the node's next allocation
// when it has none yet or a tier step asked for one.
func (p *Placer) placeAttempt(pl *Placement, n *nodeState, repo *workspace.Repo) (placed, end *journal.Row) {
	ctx := p.placeCtx(pl.call)
	if n.Alloc == 0 || n.NextAlloc > n.Alloc {
		next := max(n.NextAlloc, n.Alloc+1)
		supersede(n, next)
		if n.Path != "" && !p.cfg.KeepWorktrees {
			_ = repo.RemoveWorktree(ctx, n.Path)
		}
		start := n.Ref
		if start == "" {
			start = p.cfg.HeadCommit
		}
		n.Alloc, n.Start, n.At, n.Tree, n.Path, n.restored = next, start, start, "", p.attemptPath(n.Name, next), false
		// No row records this allocation yet: what is at its path is an earlier process's,
		// made before it could record it (a half-made worktree), and goes.
		if err := repo.RemoveWorktree(ctx, n.Path); err != nil {
			return nil, held("worktree_failed", "%s is there from an earlier process and cannot be removed: %v", n.Path, err)
		}
	}
	if why, cause := restore(ctx, n, repo, false); why != "" {
		return nil, held(restoreReason(why), "%s", withCause(why, cause))
	}
	n.open[pl], n.worked = n.Alloc, true
	return journal.WorkspacePlaced{Call: pl.call.ID, Placement: PlaceAttempt, Node: n.Name, Alloc: n.Alloc,
		Start: n.Start, Commit: n.At, Workspace: n.Path}.Row(), nil
}

// restoreReason tells a directory git could not make from a tree that is not the recorded one.
func restoreReason(why string) string {
	if len(why) > len(worktreeFailed) && strings.HasPrefix(why, worktreeFailed) {
		return "worktree_failed"
	}
	return "restore_snapshot_mismatch"
}

const worktreeFailed = "the worktree could not be made: "

// restore makes sure the node's worktree is as the journal says: made at the commit it is to
// be at with the tree it last held, or, when it is there already, holding that tree. drift
// allows another tree: an executor call the journal left open was working in it. It returns
// why not ("" when it is), in crw's words, and git's error when git failed.
func restore(ctx context.Context, n *nodeState, repo *workspace.Repo, drift bool) (string, error) {
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
func (p *Placer) placeCheckout(pl *Placement, n *nodeState, repo *workspace.Repo) (placed, end *journal.Row) {
	c := pl.call
	ctx := p.placeCtx(c)
	commit, tree := p.cfg.HeadCommit, ""
	if n.Alloc > 0 {
		if why, cause := restore(ctx, n, repo, false); why != "" {
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
			commit, err = repo.CommitTree(ctx, t, n.At, fmt.Sprintf("crw: the pending work of node %s, for call %s\n", n.Name, c.ID),
				workspace.Identity{Name: "crw", Email: "crw@localhost", At: c.Prepared})
			if err != nil {
				return nil, held("worktree_failed", "node %q: its pending work cannot be kept: %v", n.Name, err)
			}
		}
	}
	path := p.reuse(ctx, repo, commit)
	if path == "" {
		path = p.freshPath(c)
		// One an earlier process made, or was making, before it could record it.
		if err := repo.RemoveWorktree(ctx, path); err != nil {
			p.forget(path)
			return nil, held("worktree_failed", "%s is there from an earlier process and cannot be removed: %v", path, err)
		}
		if err := repo.AddWorktree(ctx, path, commit); err != nil {
			p.forget(path)
			return nil, held("worktree_failed", "%s%v", worktreeFailed, err)
		}
		seal, err := repo.MarkPristine(path)
		if err != nil {
			_ = repo.RemoveWorktree(ctx, path)
			p.forget(path)
			return nil, held("worktree_failed", "%s%s: its index cannot be kept: %v", worktreeFailed, path, err)
		}
		p.setSeal(path, seal)
	}
	return journal.WorkspacePlaced{Call: c.ID, Placement: PlaceCheckout, Node: n.Name, Commit: commit, Tree: tree, Workspace: path}.Row(), nil
}

// reuse gives a call an idle checkout moved to commit, "" when there is none that is as its
// last call found it. The one at commit is taken first (nothing to move), else the one that
// went idle last. A checkout that is not pristine (its call changed it: a file, the index, its
// HEAD, its .git) is removed, never handed on.
func (p *Placer) reuse(ctx context.Context, repo *workspace.Repo, commit string) string {
	for {
		p.mu.Lock()
		if len(p.idle) == 0 {
			p.mu.Unlock()
			return ""
		}
		i := len(p.idle) - 1
		for j, e := range p.idle {
			if e.commit == commit {
				i = j
			}
		}
		e := p.idle[i]
		p.idle = slices.Delete(p.idle, i, i+1)
		p.busy[e.path] = true
		p.mu.Unlock()
		if err := p.cfg.Journal.Sync(e.endSeq); err != nil {
			p.forget(e.path) // the journal failed: the process stops, and leaves it as it is
			return ""
		}
		if why, err := repo.Pristine(ctx, e.path, e.commit, p.sealOf(e.path)); err == nil && why == "" {
			if seal, err := repo.Switch(ctx, e.path, e.commit, commit); err == nil {
				if seal != "" {
					p.setSeal(e.path, seal)
				}
				return e.path
			}
		}
		_ = repo.RemoveWorktree(ctx, e.path)
		p.forget(e.path)
	}
}

// freshPath is the folder of a new checkout for c, held busy: the call's own name
// (<call>-g<attempt>), or that name with a number when a checkout idle or in use has it (one
// an earlier process made for the call and a resume handed to another).
func (p *Placer) freshPath(c Call) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	base := p.checkoutPath(c)
	path := base
	for n := 2; p.busy[path] || slices.ContainsFunc(p.idle, func(e idleCheckout) bool { return e.path == path }); n++ {
		path = base + "-" + strconv.Itoa(n)
	}
	p.busy[path] = true
	return path
}

// forget drops what the process knows of a checkout it removed (or left, the journal failing):
// that a call holds it, and its seal.
func (p *Placer) forget(path string) {
	p.mu.Lock()
	delete(p.busy, path)
	delete(p.seals, path)
	p.mu.Unlock()
}

func (p *Placer) setSeal(path string, seal workspace.Seal) {
	p.mu.Lock()
	p.seals[path] = seal
	p.mu.Unlock()
}

func (p *Placer) sealOf(path string) workspace.Seal {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seals[path]
}

// park keeps a checkout whose call ended for the next call; false when maxIdle are kept
// already (the caller removes it): the run's checkouts are never more than the calls it ran at
// once. endSeq is the row after which it may be handed on (0: at once).
func (p *Placer) park(path, commit string, endSeq uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.busy, path)
	if slices.ContainsFunc(p.idle, func(e idleCheckout) bool { return e.path == path }) {
		return true
	}
	if len(p.idle) < p.maxIdle && commit != "" && p.seals[path] != "" {
		p.idle = append(p.idle, idleCheckout{path: path, commit: commit, endSeq: endSeq})
		return true
	}
	return false
}

// DropIdle removes the idle checkouts when the process leaves a run that waits (paused, or for
// a decision): while nothing of the run runs, it holds no checkout but its nodes' worktrees.
func (p *Placer) DropIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	paths := make([]string, len(idle))
	for i, e := range idle {
		paths[i] = e.path
	}
	p.remove(paths...)
}

// remove removes checkouts no call holds any more, under the git gate.
func (p *Placer) remove(paths ...string) {
	if len(paths) == 0 {
		return
	}
	done, ok := p.gitWork()
	if !ok {
		return
	}
	defer done()
	ctx := context.WithoutCancel(p.cfg.Stop)
	repo, err := p.open(ctx)
	if err != nil {
		return
	}
	for _, path := range paths {
		_ = repo.RemoveWorktree(ctx, path)
		p.forget(path)
	}
}

// removeLeftovers removes the checkouts an earlier process of the run left under its worktrees folder
// that no open call of the journal holds (idle ones, ones whose calls ended before they were
// let go, half-made ones): crw holds no seal of them, so none is handed on. It runs when the
// process opens the repository, before any call of the process is placed: what it finds is no
// checkout of this process's.
func (p *Placer) removeLeftovers(ctx context.Context) {
	repo := p.repo
	p.mu.Lock()
	claimed := maps.Clone(p.busy)
	for _, n := range p.nodes {
		if n.Path != "" {
			claimed[filepath.Clean(n.Path)] = true
		}
	}
	p.mu.Unlock()
	entries, err := os.ReadDir(p.root)
	if err != nil {
		return
	}
	for _, e := range entries {
		path := filepath.Join(p.root, e.Name())
		if e.IsDir() && !strings.HasPrefix(e.Name(), "n-") && !claimed[path] {
			_ = repo.RemoveWorktree(ctx, path)
		}
	}
}

// placeAgain is the directory of a call an earlier process placed and left open.
func (p *Placer) placeAgain(pl *Placement, n *nodeState, repo *workspace.Repo, rec *replay.Call) (placed, end *journal.Row) {
	c := pl.call
	ctx := p.placeCtx(c)
	r := rec.Placed
	switch r.Placement {
	case PlaceAttempt:
		if r.Alloc < n.Alloc || (n.NextAlloc > n.Alloc && r.Alloc == n.Alloc) {
			return nil, journal.End{Type: journal.TypeSuperseded, Reason: ReasonSupersededByAttempt, Detail: fmt.Sprintf("node %q has a newer attempt than allocation %d, which the call worked in", n.Name, r.Alloc)}.Row()
		}
		if why, cause := restore(ctx, n, repo, true); why != "" {
			return nil, held(restoreReason(why), "%s", withCause(why, cause))
		}
		n.open[pl], n.worked = n.Alloc, true
	default:
		_, err := os.Lstat(r.Workspace)
		if err == nil && repo.HalfMade(r.Workspace) {
			// A process was making it again when it was killed: it is made anew.
			if err := repo.RemoveWorktree(ctx, r.Workspace); err != nil {
				return nil, held("worktree_failed", "the checkout %s of call %s was left half made and cannot be removed: %v", r.Workspace, c.ID, err)
			}
			err = os.ErrNotExist
		}
		if err != nil {
			if err := repo.AddWorktree(ctx, r.Workspace, r.Commit); err != nil {
				return nil, held("restore_snapshot_mismatch", "the checkout %s of call %s cannot be made again at %s: %v", r.Workspace, c.ID, r.Commit, err)
			}
			if seal, err := repo.MarkPristine(r.Workspace); err == nil { // without it, the checkout is not handed on
				p.setSeal(r.Workspace, seal)
			}
		}
	}
	return r, nil
}

// supersede interrupts the calls of the node's allocations before next: a new attempt of a
// node supersedes the open calls of the previous one.
func supersede(n *nodeState, next int) {
	for o, alloc := range n.open {
		if alloc < next {
			delete(n.open, o)
			if o.call.Interrupt != nil {
				go o.call.Interrupt(ReasonSupersededByAttempt)
			}
		}
	}
}

// Leave is what a call's directory says when the call ends, before its terminal row (end):
// --trace-isolation's warnings, and an executor's tree and the commits it made on its own
// (kept on its stray ref).
func (p *Placer) Leave(pl *Placement, end *journal.Row) {
	p.isolationWarnings(pl)
	r := pl.Row
	if r.Placement != PlaceAttempt {
		return
	}
	done, ok := p.gitWork()
	if !ok {
		return
	}
	defer done()
	n := p.node(r.Node)
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.open, pl)
	if r.Alloc != n.Alloc {
		return
	}
	ctx := context.WithoutCancel(p.cfg.Stop)
	repo, err := p.open(ctx)
	if err != nil {
		return
	}
	if head, err := repo.Head(ctx, n.Path); err == nil && head != n.At {
		ref := StrayRef(p.cfg.Run, n.Name, n.Alloc, pl.call.ID)
		if err := keepStray(ctx, repo, ref, head); err != nil {
			p.cfg.Journal.Append(journal.Warning{Call: pl.call.ID, Reason: "stray_ref_failed", Detail: err.Error()}.Row())
		}
		end.HeadMoved = &journal.HeadMoved{Start: n.At, Head: head, Ref: ref}
	}
	tree, err := repo.PendingTree(ctx, n.Path, true)
	if err != nil {
		p.cfg.Journal.Append(journal.Warning{Call: pl.call.ID, Reason: "worktree_unreadable", Detail: err.Error()}.Row())
		n.restored = false // the next call of the node checks it again
		return
	}
	end.Tree, n.Tree = tree, tree
}

// keepStray puts head on a stray ref: made by a compare-and-swap against no ref, moved only
// forward to a descendant (the same call's later HEAD).
func keepStray(ctx context.Context, repo *workspace.Repo, ref, head string) error {
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

// Park keeps the checkout of a call whose terminal row was just appended (at endSeq) idle for
// the next call, before the script hears of the call's end: the script's next call finds it.
// One it cannot keep (maxIdle are kept already) Release removes; a run that keeps every call's
// worktree for a person keeps it as it is.
func (p *Placer) Park(pl *Placement, endSeq uint64) {
	r := pl.Row
	pl.endSeq = endSeq
	if r.Placement != PlaceCheckout || p.cfg.KeepWorktrees || endSeq == 0 {
		return
	}
	pl.parked = p.park(r.Workspace, r.Commit, endSeq)
}

// Release removes the checkout of a call that ended when Park could not keep it. A call whose
// terminal row was not written (Park was not told of one) keeps its checkout, for a resume.
func (p *Placer) Release(pl *Placement) {
	r := pl.Row
	if r.Placement != PlaceCheckout || p.cfg.KeepWorktrees || pl.endSeq == 0 || pl.parked {
		return
	}
	p.remove(r.Workspace)
}

// CleanUp removes every worktree of the run when it has ended, unless it is to keep them: those
// git has registered (locked and half made ones too) and any folder under the run's worktrees.
// A worktree a restore found changed is kept for a person to look at.
func (p *Placer) CleanUp() {
	if !p.Has() || p.cfg.KeepWorktrees || p.root == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	repo, err := p.open(ctx)
	if err != nil {
		return
	}
	kept := map[string]bool{}
	p.mu.Lock()
	for _, n := range p.nodes {
		if n.mismatch {
			kept[n.Path] = true
		}
	}
	p.mu.Unlock()
	if err := repo.RemoveWorktreesUnder(ctx, p.root, func(path string) bool { return kept[path] }); err != nil {
		p.cfg.Journal.Append(journal.Warning{Reason: "worktree_left", Detail: fmt.Sprintf("the run's worktrees under %s: %v", p.root, err)}.Row())
	}
	_ = os.Remove(p.root) // not when a worktree is kept
}
