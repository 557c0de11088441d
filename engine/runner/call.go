package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/backend/pull"
	"github.com/crw-dev/crw/engine/callstate"
	"github.com/crw-dev/crw/engine/inputs"
	"github.com/crw-dev/crw/engine/placer"
	"github.com/crw-dev/crw/engine/replay"
	"github.com/crw-dev/crw/engine/result"
	"github.com/crw-dev/crw/engine/runner/progress"
	"github.com/crw-dev/crw/engine/runner/readback"
	"github.com/crw-dev/crw/engine/runner/turns"
	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/runtime/modules/agent"
)

// call is one agent.call on its way through the state machine: the gate, a thread, the task
// turn, at most one repair, one terminal row.
//
// A call waiting for the pool keeps only its request and its place: a script that issues 50,000
// calls at once makes the run hold 50,000 of these, so what a call runs with (its prepared row
// as a struct, its turns' state) is made when the pool admits it. Its prepared row is already
// in the journal; its inputs are worked out again from the request, which gives the same row.
type call struct {
	r       *runner
	id      string
	index   int
	attempt int // 1, or more when a resume runs the call again
	// nodeCall and roleCall: the call's issue order among its node's calls and its role's.
	nodeCall, roleCall int
	// stepAttempts is the highest step attempt of the call's earlier generations.
	stepAttempts int
	req          agent.Request
	settle       agent.Settle
	resumeOf     *endedCall
	stale        *replay.Call // an earlier generation without an end, whose turns are stopped first
	goesOn       *journal.Row // where a held call's generation goes on from (goOnFrom), nil for none
	// withdraw tells the journal the call will ask for no commit it was announced for
	// (pool.Batch); set on the call's goroutine, before it runs.
	withdraw func()

	// The prepared row: nil while the call waits for the pool, which keeps only what Append
	// gave the row (its seq and time).
	prepared    *journal.Row
	preparedSeq uint64
	preparedAt  time.Time

	// guarded by r.mu
	ended    bool
	recorded bool // its terminal row was written

	*running // nil until the call runs, ends or is replayed
}

// running is what a call has once it runs: its thread, its turns, what the backend reports.
type running struct {
	th backend.Thread // guarded by r.mu

	ctx    context.Context
	cancel context.CancelFunc

	interrupt string // the reason the engine interrupted the call; guarded by r.mu

	// What the call's backend reports, guarded by mu: it may report from other goroutines.
	mu       sync.Mutex
	thread   *journal.Row
	lastSeq  uint64
	k        int          // the turn the backend runs
	repair   string       // what that turn, a repair, names as wrong
	previous string       // and the answer it repairs
	pulled   pull.Turn    // and what a pull backend is told of it besides (pull.Recorder.Turn)
	step     *journal.Row // the newest step published, whose place its turn_started repeats

	turnIDs    []string
	tokens     journal.Tokens
	repairUsed bool

	// sm is where the call's generation is (callstate): every row of the call is a
	// transition of its table, taken under smMu before the row is appended.
	smMu sync.Mutex
	sm   *callstate.Machine

	// placement is its directory (nil: it works in the run's cwd), set before its first
	// turn. Kept here, not in call: a call waiting for the pool has none.
	placement *placer.Placement
}

// endedCall is what the run keeps of a call once the script has its result: what a later call
// that resumes it needs. The call itself (its request, its rows, the script's promise) is let
// go, so a run's memory does not grow with every call it has made.
type endedCall struct {
	id, node, role string
	status         journal.CallStatus
	// th is its thread (ID "": it had none); nil for a call a replay delivered, whose thread is
	// read back from the journal when a continuation names it (endedThread): a resume of many
	// recorded calls keeps no thread of each.
	th *backend.Thread
	// Where its prepared and terminal rows are (0: none, an outcome left unrecorded), and the
	// call it continued: a continuation of it reads its conversation from the journal.
	preparedSeq, endSeq uint64
	prev                *endedCall
}

// endedOf is the call id that ended (its result was given to the script), nil while it has not.
// It runs under r.mu.
func (r *runner) endedOf(id string) *endedCall {
	if e := r.ended[id]; e != nil || r.h == nil {
		return e
	}
	rec := r.h.Call(id)
	if rec == nil {
		return nil
	}
	i := int(rec.Index)
	if i/64 >= len(r.replayedEnded) || r.replayedEnded[i/64]&(1<<(i%64)) == 0 || r.h.AtIndex(i) != rec {
		return nil
	}
	return endedOfRecord(rec)
}

// endedOfRecord is what the runner keeps of a call the script was given from the record.
func endedOfRecord(rec *replay.Call) *endedCall {
	return &endedCall{id: rec.ID, node: rec.Node, role: rec.Role, status: journal.StatusOf(rec.EndType), preparedSeq: rec.PreparedSeq, endSeq: rec.EndSeq}
}

// endedFromRecord notes that e, a call the script was given from the record, ended, when the
// History has all of it (endedOf reads it there then), and reports whether it did: a
// continuation (prev) or one that differs in anything is kept as it is. It runs under r.mu.
func (r *runner) endedFromRecord(e *endedCall) bool {
	if r.h == nil || e.prev != nil || e.th != nil {
		return false
	}
	rec := r.h.Call(e.id)
	if rec == nil || r.h.AtIndex(int(rec.Index)) != rec || *endedOfRecord(rec) != *e {
		return false
	}
	i := int(rec.Index)
	if n := i/64 + 1; n > len(r.replayedEnded) {
		r.replayedEnded = slices.Grow(r.replayedEnded, n-len(r.replayedEnded))[:n]
	}
	r.replayedEnded[i/64] |= 1 << (i % 64)
	return true
}

// thread is e's thread, once resumes has read it (the zero Thread before, and without one).
func (e *endedCall) thread() (th backend.Thread) {
	if e.th != nil {
		th = *e.th
	}
	return th
}

// endedThread reads back from the journal the thread of a call a replay delivered (the zero
// Thread: it had none).
func (r *runner) endedThread(e *endedCall) (*backend.Thread, error) {
	th, err := readback.EndedThread(r.j, e.id, e.preparedSeq, e.endSeq)
	return &th, err
}

// fromRecord takes a call's identity, and the turns it started, from the journal's account of
// it: a call that goes on from its last row reports them in its CallResult as a live one would.
func (c *call) fromRecord(rec *replay.Call) {
	if c.running == nil {
		c.running = &running{sm: rec.Machine()}
	}
	c.id, c.prepared, c.thread, c.attempt, c.stepAttempts = rec.Prepared.Call, rec.Prepared, rec.Thread, int(rec.Attempt), int(rec.StepAttempts)
	if rec.Thread != nil {
		c.th = readback.Thread(rec.Thread)
	}
	for _, t := range rec.Turns {
		c.turnIDs = append(c.turnIDs, t.TurnID)
	}
	if n := len(rec.Steps); n > 0 {
		c.step = rec.Steps[n-1]
	}
}

// fromKept is fromRecord for a settled call delivered from what the History kept of its rows
// (replay.Delivery): its identity, its thread, and a state machine that took its thread and
// terminal rows, as fromRecord gives such a call.
func (c *call) fromKept(rec *replay.Call, d replay.Delivery) {
	if c.running == nil {
		sm := callstate.New(rec.ID)
		if d.Thread != nil {
			_ = sm.Apply(&journal.Row{Type: journal.TypeThreadStarted, Call: rec.ID})
		}
		_ = sm.Apply(&journal.Row{Type: rec.EndType, Seq: rec.EndSeq, Call: rec.ID})
		c.running = &running{sm: sm}
	}
	c.id, c.preparedSeq, c.attempt, c.stepAttempts = rec.ID, rec.PreparedSeq, int(rec.Attempt), int(rec.StepAttempts)
	if t := d.Thread; t != nil {
		c.th = backend.Thread{ID: t.ID, Model: t.Model, Effort: t.Effort, Cwd: t.Cwd, RolloutPath: t.RolloutPath}
	}
}

// placementOrNil is the call's directory, nil when it has none (or never ran).
func (c *call) placementOrNil() *placer.Placement {
	if c.running == nil {
		return nil
	}
	return c.placement
}

// take asks the call's state machine for row, one of its rows about to be appended: a row its
// table does not allow stops the run, and is not written.
func (c *call) take(row *journal.Row) bool {
	c.smMu.Lock()
	err := c.sm.Apply(row)
	c.smMu.Unlock()
	if err != nil {
		c.r.stop(err)
		return false
	}
	return true
}

// Call implements agent.Caller: it runs on the loop goroutine in the order the script issues
// calls. The replay says what the journal has of the call: a call it settled is answered from
// it, one it left open goes on from its last row, and any other is journaled (prepared) and run.
func (r *runner) Call(req agent.Request, settle agent.Settle) error {
	if err := context.Cause(r.ctx); err != nil {
		// The run is stopping (a divergence, a cancel): nothing more goes into its journal.
		return errs.Throw(errs.RunUnavailable, "run_stopping", "the run is stopping: %v", err)
	}
	resumeOf, foreign, err := r.resumes(req.Resume)
	if err != nil {
		return err
	}
	if max := r.spec.Limits.Prompt(); int64(len(req.Prompt)) > max {
		// A prompt is journaled whole: the bound keeps a script from filling the disk with one.
		return errs.Throw(errs.InvalidRequest, "prompt_too_large", "prompt is %d bytes; the run's limit is %d (--max-prompt %d KiB)", len(req.Prompt), max, max>>10)
	}
	if req.Role == "executor" && r.fx.Tier(req.Node) > 0 {
		// The node took a tier step: its executor calls run as the next tier.
		req.Role = "executor-t1"
	}
	p := inputs.Prepare(req, r.roles, &r.schemas)
	r.mu.Lock()
	m := r.replay.Next(&p.Inputs)
	if m.Divergence != nil {
		r.mu.Unlock()
		r.stop(m.Divergence)
		return errs.Throw(errs.RevisionConflict, "divergence", "%s", m.Divergence.Summary())
	}
	c := &call{r: r, index: m.Index, nodeCall: m.NodeCall, roleCall: m.RoleCall, req: req, settle: settle, resumeOf: resumeOf}
	switch m.Kind {
	case replay.Replay:
		c.id, c.attempt = m.Rec.ID, int(m.Rec.Attempt)
		c.ended = true
		r.calls[c.id] = c
		r.mu.Unlock()
		r.replay.Recorded(m.Rec, r.replayed(c, m.Rec))
		r.progress.Flush()
		return nil
	case replay.Continue:
		// Open: the earlier process stopped while the call was under way.
		c.fromRecord(m.Rec)
		r.calls[c.id] = c
		r.mu.Unlock()
		r.progress.Event(progress.Event{Kind: progress.EventCallStarted, Call: c.id, Role: req.Role, Node: req.Node})
		r.launch(c, m.Rec)
		return nil
	case replay.Rerun:
		// The same call runs again, as a new attempt of the same id.
		c.id, c.attempt, c.stepAttempts = m.Rec.ID, int(m.Rec.Attempt)+1, int(m.Rec.StepAttempts)
		if m.Rec.EndType == "" {
			// Its earlier generation has no end: its process died (after it asked for an
			// interrupt, say) with a turn that may still run where hosts outlive processes.
			c.stale = m.Rec
		}
		// It goes on where the held generation stopped (seed 003): its prepared row says so.
		row := p.Row()
		row.Index = m.Index
		r.goOnFrom(row, m.Rec)
		c.goesOn = &journal.Row{K: row.K, Repair: row.Repair, PreviousAnswer: row.PreviousAnswer, Note: row.Note}
	default:
		// A call the journal does not have at this position; a recorded call it replaces is
		// never matched against, and ends superseded if nothing makes it again.
		r.nextID++
		c.id, c.attempt = "c"+strconv.Itoa(r.nextID), 1
	}
	row := p.Row()
	row.Index, row.Call = m.Index, c.id
	r.calls[c.id] = c
	c.preparedSeq = r.j.Append(replay.WithDigests(row))
	c.preparedAt = row.At
	if detail := sameThreadReview(req.Role, resumeOf); detail != "" {
		r.j.Append(journal.Warning{Call: c.id, Reason: ReasonSameThreadReview, Detail: detail}.Row())
	}
	r.mu.Unlock()
	r.progress.Event(progress.Event{Kind: progress.EventCallStarted, Call: c.id, Role: req.Role, Node: req.Node})

	// What the call's own inputs decide ends it before any thread starts.
	switch {
	case foreign:
		c.admit(&p)
		r.goEnd(c, journal.Refused("foreign_handle", "the handle belongs to another run"))
	case p.Schema != nil && p.Schema.Refusal() != "":
		c.admit(&p)
		r.goEnd(c, journal.Refused("schema_not_strict", p.Schema.Refusal()))
	case p.PairErr != nil:
		c.admit(&p)
		r.goEnd(c, journal.Refused("pair_refused", p.PairErr.Error()))
	default:
		r.launch(c, nil)
	}
	return nil
}

// resumes is the call a resume handle names: nil and foreign for a handle of another run, an
// error for one that names no ended call of this run.
func (r *runner) resumes(handle string) (of *endedCall, foreign bool, err error) {
	if handle == "" {
		return nil, false, nil
	}
	runID, callID, ok := result.ParseHandle(handle)
	if !ok {
		return nil, false, errs.Throw(errs.InvalidRequest, "", "resume: %q is not a handle (crwh1:<run>:<call>)", handle)
	}
	if runID != r.id {
		return nil, true, nil
	}
	// A handle of a call whose result the script has not been given can only be forged, and
	// whether its call had a thread yet would depend on timing. Delivery runs on the loop
	// goroutine too, so the answer is the same on every run of the script.
	r.mu.Lock()
	of = r.endedOf(callID)
	_, open := r.calls[callID]
	r.mu.Unlock()
	switch {
	case open:
		return nil, false, errs.Throw(errs.InvalidRequest, "", "resume: handle %s names call %s, which has not ended: await its result first", handle, callID)
	case of == nil:
		return nil, false, errs.Throw(errs.InvalidRequest, "", "resume: handle %s names no call of this run", handle)
	}
	if of.th == nil {
		th, err := r.endedThread(of)
		if err != nil {
			// The journal failed this process (its lease lost): the run stops, nothing more is
			// written, and the next process reads the thread again. The script is not told.
			r.stop(err)
			return of, false, nil
		}
		r.mu.Lock()
		of.th = th
		r.mu.Unlock()
	}
	return of, false, nil
}

// ReasonSameThreadReview is the reason of the warning row of a review that continues the
// thread of the work it reviews.
const ReasonSameThreadReview = "same_thread_review"

// sameThreadReview says why a call is a review on the thread of the work it reviews: a
// reviewer or critic that continues (resume:) a call of a role that does the work. The review
// then reads that conversation, reasoning included; it is warned about, not refused (seed 003).
func sameThreadReview(role string, of *endedCall) string {
	review := func(role string) bool { return role == "reviewer" || role == "critic" }
	if of == nil || !review(role) || review(of.role) {
		return ""
	}
	return fmt.Sprintf("a %s continues the thread of call %s (%s): the review reads the conversation of the work it reviews", role, of.id, of.role)
}

// admit gives a call what it runs with: its prepared row, from p or, when p is nil, worked out
// again from its request (as Call did, so the row is the one the journal holds).
func (c *call) admit(p *inputs.Prepared) inputs.Prepared {
	if p == nil {
		again := inputs.Prepare(c.req, c.r.roles, &c.r.schemas)
		p = &again
	}
	if c.prepared == nil {
		row := p.Row()
		row.Index, row.Call, row.Seq, row.At = c.index, c.id, c.preparedSeq, c.preparedAt
		if g := c.goesOn; g != nil {
			row.K, row.Repair, row.PreviousAnswer, row.Note = g.K, g.Repair, g.PreviousAnswer, g.Note
		}
		c.prepared = replay.WithDigests(row)
	}
	if c.running == nil {
		c.running = &running{lastSeq: c.prepared.Seq, sm: callstate.New(c.id)}
	}
	return *p
}

// launch starts a call on its own goroutine once the pool admits it, together with the calls
// the script issued in the same callbacks (pool.Batch); rec is the call as an earlier process
// left it (nil for a call this process prepares).
func (r *runner) launch(c *call, rec *replay.Call) {
	r.wg.Add(1)
	r.batch.Add(r.ctx, func(admitErr error, withdraw func()) {
		defer r.wg.Done()
		c.withdraw = withdraw
		defer withdraw()
		c.run(admitErr, c.admit(nil), rec)
	})
}

// errNotStarted is why a call the loop issued and never started is not admitted.
var errNotStarted = errors.New("the script's loop ended before the call started")

// goEnd ends a call decided on the loop goroutine; the journal is synced off the loop.
func (r *runner) goEnd(c *call, row *journal.Row) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.end(c, row)
	}()
}

// run takes a call through its state machine: gate, thread, task turn, at most one repair,
// one terminal row. rec, when not nil, is the call as an earlier process left it: the call goes
// on from its last row, and a turn that may have been sent is reconciled with the host, never
// sent again.
func (c *call) run(admitErr error, p inputs.Prepared, rec *replay.Call) {
	r := c.r
	if c.stale != nil {
		// The earlier generation's turns run nothing before this one starts or ends.
		r.stopTurns(c.stale)
	}
	if admitErr != nil {
		r.end(c, journal.Held(r.heldReason(), ""))
		return
	}
	defer r.pool.Release()
	if !c.pastGate(rec) {
		return
	}
	defer c.cancel()

	bc := backend.Call{ID: c.id, Index: c.index, NodeCall: c.nodeCall, RoleCall: c.roleCall, Attempt: c.attempt, Role: c.req.Role, Node: c.req.Node, Pair: p.Configured, Schema: c.req.Schema, Resume: c.req.Resume}
	if !c.placeDir(rec, &bc) {
		return
	}
	defer func() {
		// With its terminal row written the call is done with its thread; a call left to the
		// reconcile pass keeps it, as its turn may still run.
		r.mu.Lock()
		th, recorded := c.th, c.recorded
		r.mu.Unlock()
		if recorded && th.ID != "" {
			r.backend.Done(bc, th)
		}
	}()
	c.turns(bc, p, rec)
}

// pastGate takes the call through the gate: what the run's state decides when the call would
// start. A call an earlier process had already started is past it; one it had only prepared (it
// waited for the pool) meets it now, as it would have there: a pause or a hold a resume finds
// holds it too. False when the gate ended the call.
func (c *call) pastGate(rec *replay.Call) bool {
	r := c.r
	r.mu.Lock()
	var gate *journal.Row
	switch {
	case rec != nil && rec.Interrupt != nil:
		gate = interruptedEnd(rec.Interrupt.Reason, "the engine had interrupted the turn")
	case rec == nil || !rec.Began():
		gate = r.gateLocked(c)
	}
	if gate == nil {
		// Only interruptCall cancels a turn: it journals why first.
		c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(r.ctx))
		r.inflight[c] = struct{}{}
	}
	th := c.th
	r.mu.Unlock()
	if gate == nil {
		return true
	}
	if rec != nil && rec.Interrupt != nil {
		// An earlier process asked for the interrupt and died: the turn it interrupted may
		// still run on a host that outlives processes. It runs nothing before the call ends.
		r.stopTurns(rec)
	}
	r.end(c, gate)
	if rec != nil && th.ID != "" {
		// The thread an earlier process interrupted is done with too (a session subagent
		// gets its close step).
		r.backend.Done(backend.Call{ID: c.id, Index: c.index, Attempt: c.attempt, Role: c.req.Role, Node: c.req.Node}, th)
	}
	return false
}

// placeDir gives the call its directory P, recorded before any turn is sent from it, and names
// it in bc. False when the call ended instead: interrupted meanwhile, or without a directory.
func (c *call) placeDir(rec *replay.Call, bc *backend.Call) bool {
	r := c.r
	if r.spec.Repo != "" {
		c.withdraw() // a checkout takes git's time, and may wait for a commit itself
	}
	placement, unplaced := r.place(c, rec)
	if placement != nil {
		if placed := placement.Row; (rec == nil || rec.Placed == nil) && c.take(placed) {
			c.mu.Lock()
			c.lastSeq = r.j.Append(placed)
			c.mu.Unlock()
		}
		c.placement, bc.Workspace = placement, placement.Row.Workspace
	}
	if reason := c.interruptReason(); reason != "" {
		// The engine interrupted the call while its directory was made (a pause, a cancel, a
		// deadline): that decides it, whatever the placement came to, and no turn is sent.
		r.end(c, interruptedEnd(reason, "the engine interrupted the call before its first turn"))
		return false
	}
	if unplaced != nil {
		r.end(c, unplaced)
		return false
	}
	if placement != nil && r.spec.TraceIsolation {
		r.placer.TraceIsolation(placement)
	}
	return true
}

// turns runs the call's task turn and, when its answer does not satisfy the schema, the one
// repair turn, and ends the call.
func (c *call) turns(bc backend.Call, p inputs.Prepared, rec *replay.Call) {
	r := c.r
	var validator *schema.Validator
	if p.Schema != nil {
		validator = p.Schema.Validator
	}
	prompt, problem := c.req.Prompt, ""
	c.mu.Lock()
	recordSeq := c.lastSeq
	c.mu.Unlock()
	previous := "" // the answer the repair turn repairs
	first := 1
	if c.prepared.K == 2 {
		// A generation that goes on with the repair its held one was in: no task turn, and
		// no second repair.
		first, problem, previous, prompt = 2, c.prepared.Repair, c.prepared.PreviousAnswer, turns.RepairPrompt(c.prepared.Repair)
		c.repairUsed = true
	}
	for k := first; k <= 2; k++ {
		r.mu.Lock()
		th := c.th
		r.mu.Unlock()
		c.mu.Lock()
		c.k, c.repair, c.previous = k, problem, previous
		if c.lastSeq != recordSeq {
			// This process has written rows of the call since: the record no longer tells
			// what an earlier process may have sent.
			rec = nil
		}
		sent := turns.Sent(rec, k)
		c.pulled = pull.Turn{StepAttempts: c.stepAttempts, Sent: sent, Spent: c.tokens, Note: c.prepared.Note,
			Counted: turns.Counted(rec, k), Resumed: r.h != nil}
		c.mu.Unlock()
		t := backend.Turn{Call: bc, K: k, Prompt: prompt, Task: c.req.Prompt, PreviousAnswer: previous, Thread: th,
			OpensWithRepair: first == 2}
		if sent != nil {
			t.Sent = &sent.Sent
		}
		if th.ID == "" && c.resumeOf != nil {
			t.From = c.resumeOf.thread()
			from := c.resumeOf
			// It commits the journal first: no commit is to wait for this call's rows then.
			t.Conversation = func() ([]backend.Exchange, error) { c.withdraw(); return r.conversation(from) }
		}
		out := r.backend.Run(c.ctx, t, c)
		c.count(out.Tokens)
		ended, why := c.endsWith(out, validator)
		if ended {
			return
		}
		problem, previous = why, out.Text
		if k == 1 {
			c.repairUsed = true
			prompt = turns.RepairPrompt(problem)
		}
	}
	r.end(c, journal.End{Type: journal.TypeNullModel, Reason: "schema_invalid_after_repair", Detail: problem}.Row())
}

// endsWith ends the call as the turn's outcome says, and reports whether it did: not when the
// answer does not satisfy the schema (problem says why), and a repair may follow.
func (c *call) endsWith(out backend.Outcome, validator *schema.Validator) (ended bool, problem string) {
	r := c.r
	if reason := c.interruptReason(); reason != "" {
		// An interrupt the engine asked for decides the call, whatever the turn came to.
		r.end(c, interruptedEnd(reason, ""))
		return true, ""
	}
	switch out.Status {
	case backend.Lost:
		row := journal.End{Type: journal.TypeOutcomeUnknown, Reason: "dispatch_unknown", Detail: "the turn was dispatched and its answer was lost"}.Row()
		if out.Open {
			// The host may still run it: the reconcile pass of a resume decides the call.
			r.endUnrecorded(c, row)
		} else {
			r.end(c, row)
		}
		return true, ""
	case backend.Unavailable:
		r.end(c, journal.Held("host_infra_connection", "the host is unavailable: nothing was sent"))
		return true, ""
	case backend.Interrupted:
		r.end(c, journal.Held("host_interrupted_external", "the host interrupted the turn"))
		return true, ""
	case backend.Failed:
		if out.Failure.Pause {
			r.pause(c, out.Failure.Detail)
		}
		if out.Failure.End == backend.EndHeld && out.Failure.Reason == "budget_exhausted" {
			// The host's session budget is spent: as with the run's own token budget, a
			// resume (once it is raised) runs the call again, so the run ends paused.
			r.mu.Lock()
			r.hostBudgetHeld = true
			r.mu.Unlock()
		}
		r.end(c, journal.End{Type: string(out.Failure.End), Reason: out.Failure.Reason, Detail: out.Failure.Detail}.Row())
		return true, ""
	}
	if validator == nil {
		text, _ := json.Marshal(out.Text)
		r.end(c, journal.Completed{Output: text}.Row())
		return true, ""
	}
	doc, extracted, err := validator.Answer(out.Text) // found, validated and compact, in one read
	if err != nil {
		return false, err.Error()
	}
	row := journal.Completed{Output: doc, Extracted: extracted}.Row()
	if extracted {
		raw := out.Text
		row.RawText = &raw
	}
	r.end(c, row)
	return true, ""
}

// goOnFrom marks the prepared row of a held call's next generation with where the held one
// stopped (turns.GoOn).
func (r *runner) goOnFrom(row *journal.Row, held *replay.Call) {
	if held.EndType != journal.TypeHeld {
		return
	}
	// The history keeps an ended call's summary, not its rows: they are read again.
	rows, err := readback.Rows(r.j, held.ID, held.PreparedSeq, held.EndSeq)
	if err != nil {
		return // it starts from its task, as a generation whose rows say nothing would
	}
	turns.GoOn(row, held, rows)
}

// The call is its turns' Recorder, a pull.Recorder for every backend: what the backend reports
// becomes rows of the call.
var _ pull.Recorder = (*call)(nil)

// Turn implements pull.Recorder: what the journal holds of the turn the backend runs that a
// pull backend needs.
func (c *call) Turn() pull.Turn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pulled
}

// Commit implements backend.Recorder: the call's rows so far, and every row before them, are
// made durable. A journal that cannot be written stops the run.
func (c *call) Commit() error {
	c.withdraw()
	c.mu.Lock()
	seq := c.lastSeq
	c.mu.Unlock()
	if err := c.r.j.Sync(seq); err != nil {
		c.r.stop(err)
		return err
	}
	return nil
}

// Dispatched implements pull.Recorder: the step a pull backend publishes the turn as.
func (c *call) Dispatched(st pull.Step) {
	c.mu.Lock()
	defer c.mu.Unlock()
	row := st.Row(c.id, c.k)
	if !c.take(row) {
		return
	}
	c.step = row
	c.lastSeq = c.r.j.Append(row)
}

// Thread implements backend.Recorder: the call's thread, chained to the thread of the call a
// continuation resumes.
func (c *call) Thread(th backend.Thread) {
	row := journal.ThreadStarted{Call: c.id, ThreadID: th.ID, Model: th.Model, Effort: th.Effort, Cwd: th.Cwd, RolloutPath: th.RolloutPath}.Row()
	c.r.mu.Lock()
	c.th = th
	if c.resumeOf != nil {
		row.ChainedFrom = c.req.Resume
		row.ChainThread = c.resumeOf.thread().ID
	}
	c.r.mu.Unlock()
	if th.Bind != nil {
		th.Bind.Row(row)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.take(row) {
		return
	}
	c.thread = row
	c.lastSeq = c.r.j.Append(row)
}

// Started implements backend.Recorder: the turn's id on the host.
func (c *call) Started(turnID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	row := journal.TurnStarted{Call: c.id, K: c.k, TurnID: turnID, Repair: c.repair, PreviousAnswer: c.previous}.Row()
	if st := c.step; st != nil && st.K == c.k {
		row.Op, row.Marker, row.Attempt = st.Op, st.Marker, st.Attempt
		row.ConversationTurn, row.ReplacesTurn = st.ConversationTurn, st.ReplacesTurn
	}
	if !c.take(row) {
		return
	}
	c.turnIDs = append(c.turnIDs, turnID)
	c.lastSeq = c.r.j.Append(row)
	// Readers of a live run see the turn soon, not only at its call's end.
	c.r.flushSoon()
}

// Warn implements backend.Recorder: a warning row of the call.
func (c *call) Warn(reason, detail string) {
	c.r.j.Append(journal.Warning{Call: c.id, Reason: reason, Detail: detail}.Row())
	c.r.flushSoon()
}

// CheckpointStarted implements pull.Recorder: a checkpoint_started row of the call.
func (c *call) CheckpointStarted(cp pull.Checkpoint) {
	c.mu.Lock()
	defer c.mu.Unlock()
	row := journal.CheckpointStarted{Call: c.id, ChainedFrom: cp.Handle, Calls: cp.Calls, Digest: cp.Digest}.Row()
	if !c.take(row) {
		return
	}
	c.lastSeq = c.r.j.Append(row)
	c.r.flushSoon()
}

// AttemptLost implements pull.Recorder: a session_attempt_lost row of the call.
func (c *call) AttemptLost(l pull.LostAttempt) {
	c.mu.Lock()
	defer c.mu.Unlock()
	row := journal.AttemptLost{Call: c.id, K: c.k, Attempt: l.Attempt, AgentID: l.AgentID,
		TurnID: l.TurnID, Reason: l.Reason, HostStatus: l.HostStatus, TurnStatus: l.TurnStatus}.Row()
	if !c.take(row) {
		return
	}
	c.lastSeq = c.r.j.Append(row)
	c.r.flushSoon()
}

func (c *call) count(t journal.Tokens) {
	c.tokens = c.tokens.Add(t)
	r := c.r
	r.mu.Lock()
	r.spent = r.spent.Add(t)
	r.mu.Unlock()
}

func (c *call) interruptReason() string {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	return c.interrupt
}

// end writes the call's terminal row and delivers its CallResult. Rows get their seq and reach
// the script under one lock, so the script sees completions in journal order. The script does
// not wait for the row's fsync: whatever it does next that leaves the process (a turn, the run's
// end) first commits every row before it, this one included, and a crash before that leaves the
// call with its intent as its last row, which a resume reconciles instead of sending again.
func (r *runner) end(c *call, row *journal.Row) {
	placement := c.placementOrNil()
	if placement != nil {
		r.placer.Leave(placement, row)
		defer r.placer.Release(placement)
	}
	row.Call = c.id
	row.TurnIDs = c.turnIDs
	row.RepairUsed = c.repairUsed
	if row.Type == journal.TypeCompleted {
		row.ResultDigest = journal.Digest(string(row.Output))
	}
	if !c.tokens.IsZero() {
		t := c.tokens
		row.Tokens = &t
	}
	r.mu.Lock()
	c.ended, c.recorded = true, true
	delete(r.inflight, c)
	if r.stopped() != nil {
		// Nothing is written after a stop, so nothing is told either: the call is as the
		// journal leaves it, for a resume to go on with.
		r.mu.Unlock()
		return
	}
	if !c.take(row) {
		// Not written: the call is left as a crash would leave it, its thread included.
		c.recorded = false
		r.mu.Unlock()
		return
	}
	if row.Type == journal.TypeOutcomeUnknown {
		// An operator's applied verdict is checked against the schema the lost turn answered
		// to: the journal keeps only digests of the others.
		row.Schema = journal.Canonical(c.req.Schema)
		var key *replay.EffectKey
		if c.prepared != nil {
			k := replay.EffectKeyOf(c.prepared)
			key = &k
		}
		r.book.EndedUnknown(c.req.Node, c.id, key)
	}
	endSeq := r.j.Append(row)
	if placement != nil {
		r.placer.Park(placement, endSeq)
	}
	r.replay.Live(r.delivery(c, row))
	r.mu.Unlock()
	r.progress.Flush()
	r.flushSoon()
}

// endUnrecorded gives the script a call's outcome without a terminal row: the call's last row
// stays the intent that was sent, for the reconcile pass of a resume to decide.
func (r *runner) endUnrecorded(c *call, row *journal.Row) {
	row.Call = c.id
	row.TurnIDs = c.turnIDs
	row.RepairUsed = c.repairUsed
	row.At = time.Now().UTC()
	r.mu.Lock()
	c.ended = true
	delete(r.inflight, c)
	if r.stopped() != nil {
		r.mu.Unlock()
		return
	}
	r.book.HoldFor(c.req.Node, c.id)
	r.replay.Live(r.delivery(c, row))
	r.mu.Unlock()
	r.progress.Flush()
}

// replayed is what gives the script the CallResult the journal recorded for a call: its rows
// are read again (a paged History keeps none) when its turn comes, and let go once delivered. A
// journal that cannot be read again stops the run.
func (r *runner) replayed(c *call, rec *replay.Call) func() {
	return func() {
		if d, ok := r.h.TakeKept(rec, r.spec.OmitCallSeqs); ok {
			// What the first reading kept: no rows are made again for the delivery.
			c.fromKept(rec, d)
			r.deliver(c, ending{typ: rec.EndType, reason: rec.EndReason, seq: rec.EndSeq, at: d.EndAt}, &d.Result, true)()
			return
		}
		full, err := r.h.Load(rec)
		if err != nil {
			r.stop(err)
			return
		}
		c.fromRecord(full)
		cr, t := full.Result(r.id, r.spec.OmitCallSeqs), full.Terminal
		r.deliver(c, ending{typ: t.Type, reason: t.Reason, seq: t.Seq, at: t.At}, &cr, true)()
	}
}

// ending is what a call's delivery reads of its terminal row.
type ending struct {
	typ, reason string
	seq         uint64
	at          time.Time
}

// delivery gives the script the CallResult of a call that ended live with row, built from its
// rows. It runs under the replay's lock and must not take r.mu.
func (r *runner) delivery(c *call, row *journal.Row) func() {
	return func() {
		c.mu.Lock()
		thread := c.thread
		c.mu.Unlock()
		built := result.Build(r.id, c.prepared, thread, row)
		if r.spec.OmitCallSeqs {
			built = built.WithoutSeqs()
		}
		r.deliver(c, ending{typ: row.Type, reason: row.Reason, seq: row.Seq, at: row.At}, &built, false)()
	}
}

// deliver gives the script cr, the CallResult of c, which ended as end says. It runs under
// the replay's lock and must not take r.mu.
func (r *runner) deliver(c *call, end ending, cr *result.CallResult, replayed bool) func() {
	return func() {
		status := journal.StatusOf(end.typ)
		r.progress.CallEnded(progress.Event{Kind: progress.EventCallEnded, Call: c.id, Role: c.req.Role, Node: c.req.Node, Status: status, Reason: end.reason, Replayed: replayed})
		c.settle(ScriptResult(*cr), func() (after func()) {
			r.clock = end.at
			if replayed {
				// What the script does with a recorded result, an earlier process did and
				// printed: its lines are muted until the script awaits again.
				r.inReplayed++
				after = func() { r.inReplayed-- }
			}
			r.mu.Lock()
			delete(r.calls, c.id)
			prepared := c.preparedSeq
			if c.prepared != nil {
				prepared = c.prepared.Seq
			}
			e := &endedCall{id: c.id, node: c.req.Node, role: c.req.Role, status: status, preparedSeq: prepared, endSeq: end.seq, prev: c.resumeOf}
			if !replayed {
				th := c.th
				e.th = &th
			}
			if !replayed || !r.endedFromRecord(e) {
				r.ended[c.id] = e
			}
			r.mu.Unlock()
			if end.typ == journal.TypeOutcomeUnknown {
				r.book.Told(c.req.Node, c.id)
			}
			return after
		})
	}
}

// ScriptResult is the CallResult cr as the agent module takes it.
func ScriptResult(cr result.CallResult) agent.Result {
	return agent.Result{CallID: cr.CallID, Handle: cr.Handle, Status: string(cr.Status), Output: cr.Output, Reason: cr.Reason, Meta: cr.Meta}
}
