package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crw-dev/crw/engine/backend"
	"github.com/crw-dev/crw/engine/schema"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/runtime/modules/agent"
)

// call is one agent.call on its way through the state machine: gate, thread, turn, validation,
// at most one repair, one terminal row.
type call struct {
	r        *run
	id       string
	index    int
	req      agent.Request
	settle   agent.Settle
	resumeOf *call

	attempt  int // 1, or more when a resume runs the call again
	prepared *journal.Row
	th       backend.Thread // guarded by r.mu

	// What the call's backend reports, guarded by mu: it may report from other goroutines.
	mu      sync.Mutex
	thread  *journal.Row
	lastSeq uint64
	k       int    // the turn the backend runs
	repair  string // what that turn, a repair, names as wrong

	ctx    context.Context
	cancel context.CancelFunc

	// guarded by r.mu
	interrupt string // the reason the engine interrupted the call
	ended     bool
	recorded  bool // its terminal row was written

	turnIDs    []string
	tokens     journal.Tokens
	repairUsed bool

	// delivered: the script has been given the call's result. Touched on the loop goroutine only.
	delivered bool
	// replay is the journal's answer to a call an earlier process settled (guarded by r.mu).
	replay *delivery
}

// resumable refuses a continuation of a call whose result the script has not been given: such
// a handle can only be forged, the call's thread may still be running a turn, and whether it
// had a thread yet would depend on timing. Runs on the loop goroutine, like delivery, so the
// answer is the same on every run of the script.
func resumable(of *call, handle string) error {
	if !of.delivered {
		return errs.Throw(errs.InvalidRequest, "", "resume: handle %s names call %s, which has not ended: await its result first", handle, of.id)
	}
	return nil
}

// Call implements agent.Caller: it runs on the loop goroutine in the order the script issues
// calls. A call the journal already answered is replayed from it; one the journal left open
// goes on from its last row; any other is journaled (prepared) and run.
func (r *run) Call(req agent.Request, settle agent.Settle) error {
	if r.ctx == nil {
		return errs.Throw(errs.InvalidRequest, "", "agent.call cannot run while the workflow loads: call it from the entry function")
	}
	if err := context.Cause(r.ctx); err != nil {
		// The run is stopping (a divergence, a cancel): nothing more goes into its journal.
		return errs.Throw(errs.RunUnavailable, "run_stopping", "the run is stopping: %v", err)
	}
	var resumeOf *call
	foreign := false
	if req.Resume != "" {
		runID, callID, ok := ParseHandle(req.Resume)
		if !ok {
			return errs.Throw(errs.InvalidRequest, "", "resume: %q is not a handle (crwh1:<run>:<call>)", req.Resume)
		}
		if runID != r.id {
			foreign = true
		} else {
			r.mu.Lock()
			resumeOf = r.calls[callID]
			r.mu.Unlock()
			if resumeOf == nil {
				return errs.Throw(errs.InvalidRequest, "", "resume: handle %s names no call of this run", req.Resume)
			}
			if err := resumable(resumeOf, req.Resume); err != nil {
				return err
			}
		}
	}

	p := prepare(req, r.roles, &r.schemas)
	prepared, configured, pairErr, compiled := p.row, p.configured, p.pairErr, p.compiled

	r.mu.Lock()
	r.issued++
	index := r.issued
	prepared.Index = index
	c := &call{r: r, index: index, req: req, settle: settle, resumeOf: resumeOf}
	var rec *recorded
	if r.hist != nil {
		rec = r.hist.byIndex[index]
	}
	matchable := rec != nil && !r.continued[rec] && !rec.reopened()
	if matchable && r.offRecord && !sameInputs(rec.prepared, prepared) {
		// After a paused call ran again the script may take another path: what it no longer
		// asks for is not a divergence.
		matchable = false
	}
	if matchable {
		// The journal has this call: the script must ask for the same thing.
		if !sameInputs(rec.prepared, prepared) {
			r.mu.Unlock()
			err := divergence(index, rec.prepared, withDigests(prepared))
			r.stop(err)
			return errs.Throw(errs.RevisionConflict, "divergence", "%s", err.Error())
		}
		r.continued[rec] = true
		c.id, c.prepared, c.thread, c.attempt = rec.prepared.Call, rec.prepared, rec.thread, rec.attempt
		if rec.thread != nil {
			c.th = threadOf(rec.thread)
		}
		r.calls[c.id] = c
		if rec.settled() {
			r.replayLocked(c, rec)
			r.mu.Unlock()
			r.flushEvents()
			return nil
		}
		// Open: the earlier process stopped while the call was under way.
		r.mu.Unlock()
		r.event(Event{Kind: "call_started", Call: c.id, Role: req.Role, Node: req.Node})
		r.launch(c, configured, compiled, rec)
		return nil
	}
	if rec != nil && rec.reopened() && !r.offRecord {
		// A call held by a pause: from here the script may take another path, and nothing
		// waits for the recorded completions any more.
		r.offRecord = true
		r.drainLocked()
	}
	if rec != nil && rec.reopened() && !r.continued[rec] && sameInputs(rec.prepared, prepared) {
		// The same call runs again, as a new attempt of the same id.
		r.continued[rec] = true
		c.id, c.attempt = rec.prepared.Call, rec.attempt+1
	} else {
		// A call the journal does not have at this position; a recorded call it replaces is
		// never matched against, and ends superseded if nothing makes it again.
		r.nextID++
		c.id, c.attempt = "c"+strconv.Itoa(r.nextID), 1
	}
	prepared.Call = c.id
	c.prepared = withDigests(prepared)
	r.calls[c.id] = c
	c.lastSeq = r.j.Append(prepared)
	r.mu.Unlock()
	r.event(Event{Kind: "call_started", Call: c.id, Role: req.Role, Node: req.Node})

	// What the call's own inputs decide ends it before any thread starts.
	switch {
	case foreign:
		r.goEnd(c, &journal.Row{Type: journal.TypeRefused, Reason: "foreign_handle", Detail: "the handle belongs to another run"})
		return nil
	case compiled != nil && len(compiled.violations) > 0:
		r.goEnd(c, &journal.Row{Type: journal.TypeRefused, Reason: "schema_not_strict", Detail: violationsDetail(compiled.violations)})
		return nil
	case compiled != nil && compiled.err != nil:
		r.goEnd(c, &journal.Row{Type: journal.TypeRefused, Reason: "schema_not_strict", Detail: compiled.err.Error()})
		return nil
	}
	if pairErr != nil {
		r.goEnd(c, &journal.Row{Type: journal.TypeRefused, Reason: "pair_refused", Detail: pairErr.Error()})
		return nil
	}
	r.launch(c, configured, compiled, nil)
	return nil
}

// preparedCall is a call's prepared row (without its id and index) and what the engine worked
// out of its inputs.
type preparedCall struct {
	row        *journal.Row
	configured journal.Pair
	pairErr    error
	compiled   *compiledSchema
}

// prepare works out a call's inputs: digests, pairs, its schema compiled.
func prepare(req agent.Request, roles RoleTable, schemas *schemaCache) preparedCall {
	var p preparedCall
	requested := journal.Pair{Model: req.Model, Effort: req.Effort}
	schemaDigest := ""
	if req.Schema != nil {
		p.compiled = schemas.get(req.Schema)
		schemaDigest = p.compiled.digest
	}
	p.row = &journal.Row{
		Type: journal.TypePrepared, Role: req.Role, Node: req.Node,
		Prompt: req.Prompt, SchemaDigest: schemaDigest, Handle: req.Resume, Site: req.Site,
	}
	if requested != (journal.Pair{}) {
		p.row.RequestedPair = &requested
	}
	p.configured, p.pairErr = roles.Decide(req.Role, requested)
	if p.pairErr == nil && p.configured != (journal.Pair{}) {
		c := p.configured
		p.row.ConfiguredPair = &c
	}
	return p
}

// withDigests fills a prepared row's digests: a row that is written, or named in a divergence,
// needs them; a replayed call only compares its inputs.
func withDigests(row *journal.Row) *journal.Row {
	if row.InputDigest == "" {
		row.PromptDigest = digest(row.Prompt)
		row.InputDigest = InputDigest(row)
	}
	return row
}

var emptyPromptDigest = digest("")

// sameInputs reports whether a call asks for what a recorded call asked: the inputs its
// digest covers, compared directly.
func sameInputs(recorded, got *journal.Row) bool {
	if recorded.Prompt == "" && recorded.PromptDigest != emptyPromptDigest {
		// A row without its prompt (a hand-written trace) can only be compared by digest.
		return recorded.InputDigest == withDigests(got).InputDigest
	}
	pair := func(p *journal.Pair) journal.Pair {
		if p == nil {
			return journal.Pair{}
		}
		return *p
	}
	return recorded.Role == got.Role && recorded.Node == got.Node && recorded.Prompt == got.Prompt &&
		recorded.SchemaDigest == got.SchemaDigest && pair(recorded.RequestedPair) == pair(got.RequestedPair) &&
		recorded.Handle == got.Handle
}

// launch runs a call on its own goroutine once the pool admits it.
func (r *run) launch(c *call, configured journal.Pair, compiled *compiledSchema, rec *recorded) {
	admitted := r.pool.enter()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		c.run(admitted, configured, compiled, rec)
	}()
}

func threadOf(row *journal.Row) backend.Thread {
	return backend.Thread{ID: row.ThreadID, Model: row.Model, Effort: row.Effort, Cwd: row.Cwd, RolloutPath: row.RolloutPath}
}

// violationsDetail lists every violation of a schema, for the refused row.
func violationsDetail(vs []schema.Violation) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.String()
	}
	return strings.Join(parts, "; ")
}

// InputDigest identifies a call's inputs (role, prompt, schema, requested pair, handle, node):
// a replayed call must have the same.
func InputDigest(p *journal.Row) string {
	pair := journal.Pair{}
	if p.RequestedPair != nil {
		pair = *p.RequestedPair
	}
	h := sha256.New()
	for _, f := range [...]string{p.Role, p.PromptDigest, p.SchemaDigest, pair.Model, pair.Effort, p.Handle, p.Node} {
		// Length-prefixed, so no two different inputs hash the same bytes.
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// goEnd ends a call decided on the loop goroutine; the journal is synced off the loop.
func (r *run) goEnd(c *call, row *journal.Row) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.end(c, row)
	}()
}

// run takes a call through its state machine: gate, thread, task turn, at most one repair,
// one terminal row. rec, when not nil, is the call as an earlier process left it: the call goes
// on from its last row, and a turn that was sent is reconciled with the host, never sent again.
func (c *call) run(admitted chan struct{}, configured journal.Pair, compiled *compiledSchema, rec *recorded) {
	r := c.r
	if err := r.pool.wait(r.ctx, admitted); err != nil {
		r.end(c, &journal.Row{Type: journal.TypeHeld, Reason: "cancelled"})
		return
	}
	defer r.pool.release()

	// The gate: what the run's state decides when the call would start. A call an earlier
	// process had already started is past it.
	r.mu.Lock()
	var gate *journal.Row
	if rec == nil {
		gate = r.gateLocked(c)
	} else if rec.interrupt != nil {
		gate = &journal.Row{Type: journal.TypeHeld, Reason: rec.interrupt.Reason, Detail: "the engine had interrupted the turn"}
	}
	if gate == nil {
		// Only interruptCall cancels a turn: it journals why first.
		c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(r.ctx))
		r.inflight[c] = struct{}{}
	}
	r.mu.Unlock()
	if gate != nil {
		r.end(c, gate)
		return
	}
	defer c.cancel()

	bc := backend.Call{ID: c.id, Index: c.index, Attempt: c.attempt, Role: c.req.Role, Node: c.req.Node, Pair: configured, Schema: c.req.Schema}
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
	var validator *schema.Validator
	if compiled != nil {
		validator = compiled.validator
	}
	prompt, problem := c.req.Prompt, ""
	for k := 1; k <= 2; k++ {
		c.mu.Lock()
		c.k, c.repair = k, problem
		t := backend.Turn{Call: bc, K: k, Prompt: prompt, Thread: c.th, Sent: c.sentBefore(rec, k)}
		c.mu.Unlock()
		if t.Thread.ID == "" && c.resumeOf != nil {
			t.From = c.resumeOf.th
		}
		out := r.backend.Run(c.ctx, t, c)
		c.count(out.Tokens)

		if reason := c.interruptReason(); reason != "" {
			// An interrupt the engine asked for decides the call, whatever the turn came to.
			r.end(c, &journal.Row{Type: journal.TypeHeld, Reason: reason})
			return
		}
		switch out.Status {
		case backend.Lost:
			row := &journal.Row{Type: journal.TypeOutcomeUnknown, Reason: "dispatch_unknown", Detail: "the turn was dispatched and its answer was lost"}
			if out.Open {
				// The host may still run it: the reconcile pass of a resume decides the call.
				r.endUnrecorded(c, row)
			} else {
				r.end(c, row)
			}
			return
		case backend.Unavailable:
			r.end(c, &journal.Row{Type: journal.TypeHeld, Reason: "host_infra_connection", Detail: "the host is unavailable: nothing was sent"})
			return
		case backend.Interrupted:
			r.end(c, &journal.Row{Type: journal.TypeHeld, Reason: "host_interrupted_external", Detail: "the host interrupted the turn"})
			return
		case backend.Failed:
			r.end(c, c.failed(out.Failure))
			return
		}
		if validator == nil {
			text, _ := json.Marshal(out.Text)
			r.end(c, &journal.Row{Type: journal.TypeCompleted, Output: text})
			return
		}
		doc, extracted, err := schema.ParseAnswer(out.Text)
		if err == nil {
			err = validator.Validate(doc)
		}
		if err == nil {
			row := &journal.Row{Type: journal.TypeCompleted, Output: canonical(doc), Extracted: extracted}
			if extracted {
				raw := out.Text
				row.RawText = &raw
			}
			r.end(c, row)
			return
		}
		problem = err.Error()
		if k == 1 {
			c.repairUsed = true
			prompt = RepairPrompt(problem)
		}
	}
	r.end(c, &journal.Row{Type: journal.TypeNullModel, Reason: "schema_invalid_after_repair", Detail: problem})
}

// The call is its turns' backend.Recorder: what the backend reports becomes rows of the call.
var _ backend.Recorder = (*call)(nil)

// Commit implements backend.Recorder: the call's rows so far, and every row before them, are
// made durable. A journal that cannot be written stops the run.
func (c *call) Commit() error {
	c.mu.Lock()
	seq := c.lastSeq
	c.mu.Unlock()
	if err := c.r.j.Sync(seq); err != nil {
		c.r.stop(err)
		return err
	}
	return nil
}

// Dispatched implements backend.Recorder: the step a pull backend publishes the turn as.
func (c *call) Dispatched(marker string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastSeq = c.r.j.Append(&journal.Row{Type: journal.TypeStepPublished, Call: c.id, K: c.k, Marker: marker})
}

// Thread implements backend.Recorder: the call's thread, chained to the thread of the call a
// continuation resumes.
func (c *call) Thread(th backend.Thread) {
	row := &journal.Row{Type: journal.TypeThreadStarted, Call: c.id, ThreadID: th.ID, Model: th.Model, Effort: th.Effort, Cwd: th.Cwd, RolloutPath: th.RolloutPath}
	if c.resumeOf != nil {
		row.ChainedFrom = c.req.Resume
		row.ChainThread = c.resumeOf.th.ID
	}
	c.r.mu.Lock()
	c.th = th
	c.r.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.thread = row
	c.lastSeq = c.r.j.Append(row)
}

// Started implements backend.Recorder: the turn's id on the host.
func (c *call) Started(turnID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.turnIDs = append(c.turnIDs, turnID)
	c.lastSeq = c.r.j.Append(&journal.Row{Type: journal.TypeTurnStarted, Call: c.id, K: c.k, TurnID: turnID, Repair: c.repair})
}

// Warn implements backend.Recorder: a warning row of the call.
func (c *call) Warn(reason, detail string) {
	c.r.j.Append(&journal.Row{Type: journal.TypeWarning, Call: c.id, Reason: reason, Detail: detail})
	c.r.flushSoon()
}

// sentBefore tells whether turn k of a call an earlier process left open may have been
// dispatched, and what the journal recorded of it. A backend dispatches a turn only after the
// rows before it are durable, so a recorded step or turn of k says so, a last row of
// thread_started means the task turn may have gone, and a last turn_started k means turn k+1
// may have.
func (c *call) sentBefore(rec *recorded, k int) *backend.Sent {
	if rec == nil {
		return nil
	}
	var sent *backend.Sent
	for _, st := range rec.steps {
		if st.K == k {
			sent = &backend.Sent{Marker: st.Marker, At: st.At}
		}
	}
	for _, t := range rec.turns {
		if t.K == k {
			if sent == nil {
				sent = &backend.Sent{At: t.At}
			}
			sent.TurnID = t.TurnID
		}
	}
	if sent != nil {
		return sent
	}
	last := rec.lastRow()
	switch {
	case k == 1 && last.Type == journal.TypeThreadStarted:
		return &backend.Sent{At: last.At}
	case k == 2 && last.Type == journal.TypeTurnStarted && last.K == 1:
		return &backend.Sent{At: last.At}
	}
	return nil
}

// gateLocked decides what the run's state says of a call about to start: nil lets it run.
func (r *run) gateLocked(c *call) *journal.Row {
	if holder, held := r.holds[c.req.Node]; held {
		return &journal.Row{Type: journal.TypeHeld, Reason: "recovery_hold", Detail: fmt.Sprintf("node %q waits on call %s, whose outcome is unknown", c.req.Node, holder)}
	}
	if c.resumeOf != nil && r.holds[c.resumeOf.req.Node] != "" {
		return &journal.Row{Type: journal.TypeHeld, Reason: "recovery_hold", Detail: fmt.Sprintf("the resumed call's node %q waits on a call whose outcome is unknown", c.resumeOf.req.Node)}
	}
	if r.paused {
		return &journal.Row{Type: journal.TypeHeld, Reason: "engine_paused", Detail: "the run is paused by a usage or rate limit"}
	}
	if b := r.spec.BudgetTokens; b > 0 && r.spent.Total >= b {
		return &journal.Row{Type: journal.TypeHeld, Reason: "budget_exhausted", Detail: fmt.Sprintf("the run has spent %d of %d tokens", r.spent.Total, b)}
	}
	if c.resumeOf != nil && c.resumeOf.thread == nil {
		return &journal.Row{Type: journal.TypeRefused, Reason: "policy_refused", Detail: fmt.Sprintf("call %s has no thread to continue", c.resumeOf.id)}
	}
	return nil
}

// RepairPrompt is the one repair turn's text: it names what was wrong with the answer.
func RepairPrompt(problem string) string {
	return "Your previous answer could not be accepted: " + problem + ".\n" +
		"Answer the same task again. Reply with exactly one JSON document that satisfies the output schema, and nothing before or after it."
}

// canonical is the answer as stored and delivered: compact, with the model's key order and
// numbers exactly as written.
func canonical(doc json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, doc); err != nil {
		return doc
	}
	return b.Bytes()
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

// failed ends a call whose turn the host failed, as the host's vocabulary classified it; a
// usage or rate limit pauses the run.
func (c *call) failed(f *backend.Failure) *journal.Row {
	if f.Pause {
		c.r.pause(c, f.Detail)
	}
	return &journal.Row{Type: string(f.End), Reason: f.Reason, Detail: f.Detail}
}

// pause stops the run admitting calls after a usage or rate limit: one escalation row, and
// every other turn in flight is interrupted.
func (r *run) pause(by *call, detail string) {
	r.mu.Lock()
	if r.paused {
		r.mu.Unlock()
		return
	}
	r.paused = true
	r.j.Append(&journal.Row{Type: journal.TypeEscalation, Call: by.id, Reason: "quota_or_rate", Detail: detail})
	others := make([]*call, 0, len(r.inflight))
	for o := range r.inflight {
		if o != by {
			others = append(others, o)
		}
	}
	r.mu.Unlock()
	for _, o := range others {
		r.interruptCall(o, "engine_paused")
	}
}

// interruptAll interrupts every call in flight, e.g. when the script is done or threw.
func (r *run) interruptAll(reason string) {
	r.mu.Lock()
	all := make([]*call, 0, len(r.inflight))
	for o := range r.inflight {
		all = append(all, o)
	}
	r.mu.Unlock()
	for _, o := range all {
		r.interruptCall(o, reason)
	}
}

// interruptCall journals the interrupt before it is sent, then cancels the call's turn.
func (r *run) interruptCall(c *call, reason string) {
	r.mu.Lock()
	if c.ended || c.interrupt != "" {
		r.mu.Unlock()
		return
	}
	c.interrupt = reason
	seq := r.j.Append(&journal.Row{Type: journal.TypeInterruptRequested, Call: c.id, Reason: reason})
	r.mu.Unlock()
	if err := r.j.Sync(seq); err != nil {
		r.fail(err)
		return
	}
	c.cancel()
}

// end writes the call's terminal row and delivers its CallResult. Rows get their seq and reach
// the script under one lock, so the script sees completions in journal order. The script does
// not wait for the row's fsync: whatever it does next that leaves the process (a turn, the run's
// end) first commits every row before it, this one included, and a crash before that leaves the
// call with its intent as its last row, which a resume reconciles instead of sending again.
func (r *run) end(c *call, row *journal.Row) {
	row.Call = c.id
	row.TurnIDs = c.turnIDs
	row.RepairUsed = c.repairUsed
	if !c.tokens.IsZero() {
		t := c.tokens
		row.Tokens = &t
	}
	r.mu.Lock()
	c.ended, c.recorded = true, true
	delete(r.inflight, c)
	if row.Type == journal.TypeOutcomeUnknown {
		if _, held := r.holds[c.req.Node]; !held {
			r.holds[c.req.Node] = c.id
		}
	}
	r.j.Append(row)
	r.deliverLocked(delivery{c: c, terminal: row})
	r.mu.Unlock()
	r.flushEvents()
	r.flushSoon()
}

// endUnrecorded gives the script a call's outcome without a terminal row: the call's last row
// stays the intent that was sent, for the reconcile pass of a resume to decide.
func (r *run) endUnrecorded(c *call, row *journal.Row) {
	row.Call = c.id
	row.TurnIDs = c.turnIDs
	row.RepairUsed = c.repairUsed
	row.At = time.Now().UTC()
	r.mu.Lock()
	c.ended = true
	delete(r.inflight, c)
	if _, held := r.holds[c.req.Node]; !held {
		r.holds[c.req.Node] = c.id
	}
	r.deliverLocked(delivery{c: c, terminal: row})
	r.mu.Unlock()
	r.flushEvents()
}

// flushSoon asks for the rows appended so far to be committed shortly, in case nothing else
// commits them first: a terminal row should not wait in memory for the next effect.
func (r *run) flushSoon() {
	select {
	case r.flushKick <- struct{}{}:
	default:
	}
}

// flushLoop commits rows nobody else committed, a short while after they were appended.
func (r *run) flushLoop() (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-r.flushKick:
			}
			t := time.NewTimer(flushDelay)
			select {
			case <-done:
				t.Stop()
				return
			case <-t.C:
			}
			if last := r.j.LastSeq(); r.j.DurableSeq() < last {
				if err := r.j.Sync(last); err != nil {
					r.fail(fmt.Errorf("journal: %w", err))
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// flushDelay is how long a terminal row may wait for a commit that would cover it anyway.
const flushDelay = 20 * time.Millisecond

// pool admits at most n calls at once, in the order they were issued: a call takes its place in
// the queue on the loop goroutine and waits for its turn off it.
type pool struct {
	mu      sync.Mutex
	free    int
	waiters []chan struct{}
}

func newPool(n int) *pool { return &pool{free: n} }

// enter queues a call; the returned channel is closed when the call is admitted.
func (p *pool) enter() chan struct{} {
	ch := make(chan struct{})
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.free > 0 && len(p.waiters) == 0 {
		p.free--
		close(ch)
		return ch
	}
	p.waiters = append(p.waiters, ch)
	return ch
}

// wait waits for admission; when ctx ends first the place is given up.
func (p *pool) wait(ctx context.Context, ch chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		p.mu.Lock()
		defer p.mu.Unlock()
		for i, w := range p.waiters {
			if w == ch {
				p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
				return ctx.Err()
			}
		}
		// Admitted as the context ended: pass the slot on.
		p.releaseLocked()
		return ctx.Err()
	}
}

func (p *pool) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked()
}

func (p *pool) releaseLocked() {
	if len(p.waiters) > 0 {
		ch := p.waiters[0]
		p.waiters = p.waiters[1:]
		close(ch)
		return
	}
	p.free++
}
