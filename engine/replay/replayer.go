package replay

import (
	"slices"
	"sync"

	"github.com/crw-dev/crw/journal"
)

// Mode is how a Replayer matches the script's calls with the record.
type Mode int

const (
	// Strict is a resume: the script's nth call must ask what the record's nth call asked, or
	// the run stops with a divergence. Once a call a pause held runs again, the script may take
	// another path: what it no longer asks for is no divergence.
	Strict Mode = iota
	// Align is a shadow: each call is aligned with the record (Lookahead), every difference is
	// reported, and none stops the script.
	Align
)

// Lookahead is how far past the next recorded call Align looks for the one a call matches: an
// edit that drops a few calls shows as those calls never made, not as a divergence at every
// position after them.
const Lookahead = 16

// Kind is what the record says of a call the script makes.
type Kind int

const (
	// Fresh: the record has no call for it. A live run runs it; a shadow cannot.
	Fresh Kind = iota
	// Replay: the record has the call's outcome, which the script is given again.
	Replay
	// Continue: the record has the call without an outcome (its process stopped while it was
	// under way): it goes on from its last row.
	Continue
	// Rerun: a pause held the call: it runs again, a new attempt of the same call.
	Rerun
)

// Match is what the record says of one call the script makes.
type Match struct {
	Kind  Kind
	Index int   // the call's 1-based issue order
	Rec   *Call // the recorded call it stands for (nil for Fresh)
	// Same: it asks what the recorded call asked. Align matches a call with a recorded one
	// that asks otherwise (a divergence it reports); Strict never does.
	Same bool
	// Divergence, in Strict, is the script asking for another call than the record has at its
	// position: the run must stop.
	Divergence *Divergence
	// NodeCall and RoleCall are its 1-based issue order among the calls of its node, and of
	// its role.
	NodeCall, RoleCall int
}

// Replayer matches a script's calls with a History, in issue order, and delivers their results
// to the script in the order the journal recorded them, whether a result comes from the record
// or from a live call. It is safe for concurrent use.
type Replayer struct {
	h    *History
	mode Mode
	wake func()

	mu        sync.Mutex
	issued    int
	byNode    map[string]int // calls issued per node
	byRole    map[string]int // calls issued per role
	made      []uint64       // bit i: the recorded call at issue index i was made again (isMade)
	offRecord bool           // Strict: a paused call ran again; nothing waits for the record
	leftAt    uint64         // Strict: where the script left the record (LeftAt; 0: none)
	diverged  bool           // Strict: the script asked for another call than the record has
	cursor    int            // Align: the next recorded position a call may stand for

	order    []*Call          // recorded completions, in the order the script received them
	next     int              // the next of order to deliver
	inTurn   bool             // a delivery taken in a turn of its own is under way (RecordedInTurn)
	ready    map[*Call]func() // recorded results whose calls were made, waiting for their turn
	passed   map[*Call]bool   // recorded completions passed over while their calls were not made
	held     []func()         // results that wait behind recorded completions still due
	given    int              // results handed over so far (drainLocked, releaseLocked)
	caughtUp func()           // called once when nothing recorded is due any more
}

// New returns a Replayer over h (nil: nothing recorded: every call is Fresh, its result
// delivered at once).
// wake is called, from any goroutine, when a result is held back, so a script that may be
// waiting looks again (see Idle); nil when nothing needs waking.
func New(h *History, mode Mode, wake func()) *Replayer {
	r := &Replayer{h: h, mode: mode, wake: wake, byNode: map[string]int{}, byRole: map[string]int{}, ready: map[*Call]func(){}, passed: map[*Call]bool{}, cursor: 1}
	if h != nil {
		r.order = h.Order
		if mode == Align {
			r.order = h.AlignOrder()
		}
		// A paged History reads each call's rows again for its delivery (Load), a bounded
		// number of calls ahead.
		h.Prefetch(r.order)
	}
	return r
}

// Stop lets go of what the Replayer does beside the script (History.Prefetch).
func (r *Replayer) Stop() {
	if r.h != nil {
		r.h.StopPrefetch()
	}
}

// OnCaughtUp registers fn, called once when the script has caught up with the record (see
// Replaying).
func (r *Replayer) OnCaughtUp(fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.caughtUp = fn
}

// Next matches the script's next call, p what it asks (its prepared row's inputs), with the
// record. It is called in the order the script issues its calls.
func (r *Replayer) Next(p *journal.Prepared) Match {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.issued++
	r.byNode[p.Node]++
	r.byRole[p.Role]++
	m := Match{Index: r.issued, NodeCall: r.byNode[p.Node], RoleCall: r.byRole[p.Role]}
	if r.h == nil {
		return m
	}
	if r.mode == Align {
		m.Rec, m.Same = r.alignLocked(p)
		if m.Rec != nil {
			r.setMade(m.Rec)
			m.Kind = Replay
			if m.Rec.EndType == "" {
				m.Kind = Continue
			}
		}
		return m
	}
	rec := r.h.AtIndex(m.Index)
	if rec == nil {
		return m
	}
	same := rec.SameInputs(p)
	if !r.isMade(rec) && !rec.Reopened() && (same || !r.offRecord) {
		if !same {
			r.diverged = true
			m.Divergence = r.divergence(m.Index, rec, p.Row())
			return m
		}
		r.setMade(rec)
		m.Rec, m.Same, m.Kind = rec, true, Continue
		if rec.Settled() {
			m.Kind = Replay
		}
		if m.Kind == Continue && rec.Attempt > 1 && !r.offRecord {
			// A call a pause held that an earlier resume ran again, still under way: that
			// resume left the record here, and so does this one (the calls the pause held
			// after it are no longer owed to the record).
			r.offRecord = true
			r.drainLocked()
		}
		r.checkCaughtUpLocked()
		return m
	}
	if rec.Reopened() && !r.offRecord {
		// A call held by a pause: from here the script may take another path, and nothing
		// waits for the recorded completions any more.
		r.offRecord = true
		if rec.EndType != "" {
			r.leftAt = r.h.PauseHeldFrom(rec.EndSeq) // a scan of the record's calls, once
		}
		r.drainLocked()
	}
	if rec.Reopened() && !r.isMade(rec) && same {
		r.setMade(rec)
		m.Rec, m.Same, m.Kind = rec, true, Rerun
	}
	r.checkCaughtUpLocked()
	return m
}

// alignLocked finds the recorded call a script's call stands for: the next one when it asks the
// same, else one a little further on that does (those skipped were never made), else the next
// one when it is of the same role and node (a divergence), else none (a new call).
func (r *Replayer) alignLocked(p *journal.Prepared) (rec *Call, same bool) {
	last := r.h.MaxIndex
	for r.cursor <= last && (r.h.AtIndex(r.cursor) == nil || r.isMade(r.h.AtIndex(r.cursor))) {
		r.cursor++
	}
	for i := r.cursor; i <= last && i <= r.cursor+Lookahead; i++ {
		if c := r.h.AtIndex(i); c != nil && !r.isMade(c) && c.SameInputs(p) {
			r.cursor = i + 1
			return c, true
		}
	}
	if c := r.h.AtIndex(r.cursor); c != nil && c.Role == p.Role && c.Node == p.Node {
		r.cursor++
		return c, false
	}
	return nil, false
}

// LeftAt is where the script left the record in this process, false when it has not (or left
// at a rerun an earlier process made): it ran again a call a pause held, and from the first row
// at which the process that held it had a held result (History.PauseHeldFrom), what that
// process recorded it did with a held result in hand (History.SupersededBy): a crw.commit
// recorded there committed the worktree as the pause left it, and is made again, not replayed.
func (r *Replayer) LeftAt() (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.leftAt, r.leftAt != 0
}

// OwedWriter is a call of node that writes (an executor's) the record has and the script has not
// made again yet: a commit of the node the record does not have, made now, would hold what that
// call wrote (the node's worktree is as the whole record left it). nil when there is none, or
// once the script left the record at a call a pause held (Strict; an Align replay's host says
// where it left). A scan of the record's calls, made only where a commit is past the record's.
func (r *Replayer) OwedWriter(node string) *Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.h == nil || r.offRecord || (r.mode == Strict && r.caughtUpLocked()) {
		return nil
	}
	for i := 1; i <= r.h.MaxIndex; i++ {
		if c := r.h.AtIndex(i); c != nil && c.Node == node && Writes(c.Role) && !c.Reopened() && !r.isMade(c) {
			return c
		}
	}
	return nil
}

// Made reports whether the script made the recorded call again.
func (r *Replayer) Made(c *Call) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.isMade(c)
}

// isMade reports whether the script made the recorded call c again. Every call the script
// makes again is the History's call at its issue index (AtIndex), so one bit an index says it:
// a replay of 100,000 calls keeps 12.5 kB of them, not a 3 MB map.
func (r *Replayer) isMade(c *Call) bool {
	i := int(c.Index)
	return i >= 0 && i/64 < len(r.made) && r.made[i/64]&(1<<(i%64)) != 0 && r.h.AtIndex(i) == c
}

// setMade records that the script made the recorded call c (the History's at its index) again.
func (r *Replayer) setMade(c *Call) {
	i := int(c.Index)
	if n := i/64 + 1; n > len(r.made) {
		r.made = slices.Grow(r.made, n-len(r.made))[:n]
	}
	r.made[i/64] |= 1 << (i % 64)
}

// Unmade, in Strict, is the first call of the record the script has not made again, as a
// divergence, for a script that ended before making it: nil when every recorded call was
// made, or the script left the record when a call a pause held ran again (what it no longer
// asks for then is superseded, not a divergence).
func (r *Replayer) Unmade() *Divergence {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.h == nil || r.mode != Strict || r.offRecord || r.diverged {
		return nil
	}
	for i := r.issued + 1; i <= r.h.MaxIndex; i++ {
		if rec := r.h.AtIndex(i); rec != nil && !r.isMade(rec) && !rec.Reopened() {
			want, _ := r.h.PreparedRow(rec) // its id and node are the History's own
			return NotMade(i, want)
		}
	}
	return nil
}

// divergence is the divergence of the script's call got from the recorded call rec at index:
// which input differs, unless rec's prepared row cannot be read again to say so.
func (r *Replayer) divergence(index int, rec *Call, got *journal.Row) *Divergence {
	want, err := r.h.PreparedRow(rec)
	if err != nil {
		return &Divergence{Index: index, Call: rec.ID, Node: rec.Node, Field: "input"}
	}
	return NewDivergence(index, want, got)
}

// Recorded hands over a recorded result: deliver runs once every recorded completion before it
// has been delivered (at once, when its turn has come or gone by).
func (r *Replayer) Recorded(c *Call, deliver func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.passed[c] {
		// Its turn went by while the script waited on something else.
		r.held = append(r.held, deliver)
	} else {
		r.ready[c] = deliver
	}
	r.drainLocked()
}

// RecordedInTurn is Recorded for a delivery the script's loop takes in a turn of its own (an
// operator's verdict, posted to the loop, which settles from there the promises that wait for
// it): deliver is given done, to call at the end of that turn (never from deliver itself), and
// the deliveries after it, recorded or live, wait until it is called. The results the
// recording process got after it came after that turn, and so do theirs: delivered at once,
// they would come before what the turn settles.
func (r *Replayer) RecordedInTurn(c *Call, deliver func(done func())) {
	r.Recorded(c, func() {
		r.inTurn = true
		deliver(func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.inTurn = false
			r.drainLocked()
		})
	})
}

// Live hands over a result the record does not have (a live call's, or a shadow's stand-in):
// deliver runs at once, unless recorded completions are still due, which the earlier process
// saw first: then after them.
func (r *Replayer) Live(deliver func()) {
	r.mu.Lock()
	if !r.pendingLocked() {
		r.mu.Unlock()
		deliver()
		return
	}
	r.held = append(r.held, deliver)
	r.mu.Unlock()
	if r.wake != nil {
		r.wake()
	}
}

// Idle is called when the script waits and nothing can reach it but what the Replayer holds.
// Results held back go first; failing those, the recorded completions whose calls the script
// has not made are passed over, so the next one it made can come. Either way the script's
// timing has left the record, and waiting would be forever. It reports whether it gave the
// script a result: then the script goes on, and waits for nothing else no longer.
func (r *Replayer) Idle() (gave bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	before := r.given
	if len(r.held) > 0 {
		r.releaseLocked()
		return r.given != before
	}
	for r.next < len(r.order) {
		c := r.order[r.next]
		if _, ok := r.ready[c]; ok {
			break
		}
		r.passed[c] = true
		r.next++
	}
	r.drainLocked()
	return r.given != before
}

// Due reports whether recorded completions are still to be delivered: results the script will
// be given whatever it does next. Calls of the record it has not made yet are not: a script
// that waits on something else (a decision) before it comes to them has nothing else coming.
func (r *Replayer) Due() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pendingLocked()
}

// Replaying reports whether the script is still going over the record: recorded completions
// are still to be delivered, or (Strict) calls the journal has are still to be made again. A
// script that diverged replays for good: it never caught up.
func (r *Replayer) Replaying() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.caughtUpLocked()
}

func (r *Replayer) caughtUpLocked() bool {
	if r.h == nil {
		return true
	}
	if r.diverged {
		return false
	}
	return !r.pendingLocked() && (r.mode == Align || r.offRecord || r.issued >= r.h.OwedIndex)
}

// checkCaughtUpLocked calls the caughtUp function the first time the script has caught up.
func (r *Replayer) checkCaughtUpLocked() {
	if r.caughtUp != nil && r.caughtUpLocked() {
		fn := r.caughtUp
		r.caughtUp = nil
		fn()
	}
}

// pendingLocked: recorded completions are still due, which results of the record's other
// calls wait behind.
func (r *Replayer) pendingLocked() bool {
	return r.h != nil && !r.offRecord && (r.next < len(r.order) || r.inTurn)
}

// drainLocked delivers recorded results in their order as far as their calls were made, then
// whatever waited behind them.
func (r *Replayer) drainLocked() {
	for !r.inTurn && r.next < len(r.order) {
		c := r.order[r.next]
		deliver, ok := r.ready[c]
		if !ok {
			break
		}
		delete(r.ready, c)
		r.next++
		r.given++
		deliver()
	}
	if !r.pendingLocked() {
		r.releaseLocked()
		r.checkCaughtUpLocked()
	}
}

func (r *Replayer) releaseLocked() {
	held := r.held
	r.held = nil
	r.given += len(held)
	for _, deliver := range held {
		deliver()
	}
}
