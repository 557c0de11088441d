// Package replay is the one path recorded results take to a script: a run's History read from
// its journal, the Replayer that matches the script's calls with it by their inputs, and the
// delivery of recorded results in the order the journal recorded them. A resumed run and a
// shadow replay both use it; they differ only in how they match (Strict or Align) and in what
// their host does with a call the record does not settle.
//
// It is over 1,500 lines because the History's builder and the Replayer that delivers from it
// share the paged record of each call: split apart, the Replayer would reach into the
// builder's state.
package replay

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crw-dev/crw/engine/callstate"
	"github.com/crw-dev/crw/engine/result"
	"github.com/crw-dev/crw/errs"
	"github.com/crw-dev/crw/internal/plant"
	"github.com/crw-dev/crw/journal"
)

// Call is one call as the journal tells it: the rows of its latest attempt, its newest
// generation (the rows from its newest prepared row on), which has at most one terminal row.
//
// A History read a page at a time (ReadPages) keeps no rows of a call once its terminal row is
// read: its Rows are then none (every field nil), the fields below them say what the replay
// needs, and Load reads the rest again when the call is delivered.
type Call struct {
	// Rows are the rows the History holds of the call; never nil. A call without rows shares
	// one empty Rows with every other (noRows), which nothing writes: a replay of 100,000
	// calls holds the rows of a few, and a Call is 144 bytes, not 248, without them.
	*Rows

	// What is kept of every call, its rows or not: its prepared row's id, issue index, role,
	// node and seq, its terminal row's type, reason and seq ("" and 0 without one).
	ID, Role, Node     string
	PreparedSeq        uint64
	EndType, EndReason string
	EndSeq             uint64
	// inputs identifies what the call asked (inputKey), taken from its prepared row.
	inputs inputKeyBytes
	kept   atomic.Pointer[kept]
	Index  int32
	// Attempt is how many prepared rows the call has: this is its Attempt-th.
	Attempt int32
	// StepAttempts is the highest attempt of the call's published steps in any generation: a
	// pull backend numbers a new generation's first step above it, so no marker is used twice.
	StepAttempts int32
	// flags are what the builder notes of the call (callFlags), before the History is
	// anyone's; loaded: Load gave its rows back (once), under the History's loadMu, a field
	// of its own for it is written while others read the flags.
	flags  callFlags
	loaded bool
	// Decision: this is no call but the delivery of a decision's answer (Decision.Call) or of
	// an operator's verdict (VerdictCalls). The counters and flags share two words: a replay
	// keeps a Call for every call of its run.
	Decision bool
}

// callFlags are a Call's flags, one bit each.
type callFlags uint8

const (
	// flagPromptless: its prepared row has no prompt, only its digest (a hand-written trace),
	// so its rows are kept to compare.
	flagPromptless callFlags = 1 << iota
	// flagPaged: its rows were let go once its terminal row was read (see ReadPages).
	flagPaged
	// flagThreadBound: its thread_started row is a pull backend's binding (Via), which what is
	// kept of a thread does not hold: its rows are read again whole.
	flagThreadBound
	// flagPauseInterrupted: its interrupt_requested row has a pause's reason (PauseReasons).
	flagPauseInterrupted
)

func (c *Call) is(f callFlags) bool { return c.flags&f != 0 }

func (c *Call) set(f callFlags, on bool) {
	if on {
		c.flags |= f
	} else {
		c.flags &^= f
	}
}

// Rows are the rows of a call's newest generation a History holds.
type Rows struct {
	Prepared  *journal.Row
	Steps     []*journal.Row // step_published rows, in order
	Lost      []*journal.Row // session_attempt_lost rows, in order
	Thread    *journal.Row
	Turns     []*journal.Row // turn_started rows, in order
	Interrupt *journal.Row
	Terminal  *journal.Row
	Placed    *journal.Row
}

// noRows are the Rows of every Call that holds none. Nothing writes them: a call's rows are
// written through own, which gives it Rows of its own first.
var noRows = &Rows{}

// own is the call's Rows to write to: its own, made for it the first time.
func (c *Call) own() *Rows {
	if c.Rows == nil || c.Rows == noRows {
		c.Rows = &Rows{}
	}
	return c.Rows
}

// Result is the CallResult a call with a terminal row gives the script again; omitSeqs is the
// run's started row's OmitCallSeqs, the same for every call. A call without its rows has none:
// Load it first.
func (c *Call) Result(run string, omitSeqs bool) result.CallResult {
	cr := result.Build(run, c.Prepared, c.Thread, c.Terminal)
	if omitSeqs {
		cr = cr.WithoutSeqs()
	}
	return cr
}

// Began reports whether the call went past its gate in an earlier process: it has a row after
// its prepared one (a directory placed, a thread, a turn, a step, an interrupt). A call with
// its prepared row alone waited for the pool or died at its gate, and nothing of it was sent.
func (c *Call) Began() bool {
	return c.Placed != nil || c.Thread != nil || len(c.Turns) > 0 || len(c.Steps) > 0 || len(c.Lost) > 0 || c.Interrupt != nil
}

// Machine is where the call's generation is (engine/callstate): its rows taken through the
// table in the order they were written. A Paged call, which has ended, is at its end.
func (c *Call) Machine() *callstate.Machine {
	m := callstate.New(c.ID)
	rows := slices.Concat(c.Steps, c.Lost, c.Turns)
	for _, r := range []*journal.Row{c.Placed, c.Thread, c.Interrupt, c.Terminal} {
		if r != nil {
			rows = append(rows, r)
		}
	}
	if c.is(flagPaged) {
		rows = append(rows, &journal.Row{Type: c.EndType, Seq: c.EndSeq})
	}
	slices.SortFunc(rows, func(a, b *journal.Row) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, r := range rows {
		_ = m.Apply(r) // what a History holds of a call is the way it went so far
	}
	return m
}

// Paged reports whether the call's rows were let go (see ReadPages).
func (c *Call) Paged() bool { return c.is(flagPaged) }

// SameInputs reports whether a script's call p asks what the recorded call asked.
func (c *Call) SameInputs(p *journal.Prepared) bool {
	if c.is(flagPromptless) {
		return SameInputs(c.Prepared, p.Row())
	}
	return inputKey(p.Role, p.Node, p.Prompt, p.SchemaDigest, p.RequestedPair, p.Handle) == c.inputs
}

// inputKeyBytes is an inputKey: the first 128 bits of a SHA-256, which no two inputs a replay
// compares share but by a collision no one has found.
type inputKeyBytes [16]byte

// rowInputKey is inputKey of a prepared row's inputs.
func rowInputKey(p *journal.Row) inputKeyBytes {
	return inputKey(p.Role, p.Node, p.Prompt, p.SchemaDigest, p.RequestedPair, p.Handle)
}

// inputKey hashes every input SameInputs compares, the prompt itself rather than its digest, so
// two keys are equal exactly when SameInputs would say so.
func inputKey(role, node, prompt, schemaDigest string, requested *journal.Pair, handle string) inputKeyBytes {
	pair := journal.Pair{}
	if requested != nil {
		pair = *requested
	}
	// One buffer hashed at once: a replay keys every call twice (its record, the script's ask),
	// and a short prompt's key then costs no allocation.
	var small [1024]byte
	fields := [...]string{role, node, prompt, schemaDigest, pair.Model, pair.Effort, handle}
	size := 0
	for _, f := range fields {
		size += 8 + len(f)
	}
	buf := small[:0]
	if size > len(small) {
		buf = make([]byte, 0, size)
	}
	for _, f := range fields {
		buf = binary.BigEndian.AppendUint64(buf, uint64(len(f)))
		buf = append(buf, f...)
	}
	sum := sha256.Sum256(buf)
	return inputKeyBytes(sum[:16])
}

// PauseReasons are the held reasons a pause gives; a resume runs those calls again. A call held
// because the run's token budget was spent is one: the run ends paused, and a resume with a
// larger budget runs it.
var PauseReasons = map[string]bool{"host_infra_quota": true, "host_infra_rate": true, "engine_paused": true, "budget_exhausted": true}

// Settled reports whether the call has an outcome a replay gives the script again. A call a
// resume ran again (a pause had held it) that a recovery hold then held is not: the hold came
// from an unknown outcome of the run's, not from the call, and a resume after the verdict runs
// it again, as an operator who gave the verdict before the resume would have had it run.
func (c *Call) Settled() bool {
	if plant.On(plant.ResumeSkipsPause) {
		return c.EndType != ""
	}
	if c.EndType == journal.TypeHeld && c.EndReason == "recovery_hold" && c.Attempt > 1 {
		return false
	}
	return c.EndType != "" && !(c.EndType == journal.TypeHeld && PauseReasons[c.EndReason])
}

// Reopened reports whether a pause held (or interrupted) the call: a resume runs it again.
func (c *Call) Reopened() bool {
	if c.EndType != "" {
		return !c.Settled()
	}
	return c.is(flagPauseInterrupted)
}

// LastRow is the call's latest row of its latest attempt.
func (c *Call) LastRow() *journal.Row {
	switch {
	case c.Terminal != nil:
		return c.Terminal
	case c.Interrupt != nil:
		return c.Interrupt
	}
	last := c.Prepared
	for _, rows := range [][]*journal.Row{c.Steps, c.Turns} {
		if n := len(rows); n > 0 && rows[n-1].Seq > last.Seq {
			last = rows[n-1]
		}
	}
	if c.Thread != nil && c.Thread.Seq > last.Seq {
		last = c.Thread
	}
	return last
}

// ReasonUnawaited is the reason of the warning row of an agent.call whose promise the
// workflow never awaited nor observed; MaxUnawaited bounds the rows a run gets.
const (
	ReasonUnawaited = "unawaited_call"
	MaxUnawaited    = 100
)

// History is what a replay needs of a journal.
type History struct {
	Run     string
	Started *journal.Row // the first started row: the run's clock starts there
	Backend string
	Ended   *journal.Row // nil while the run can go on (a paused run can)
	// The calls by id (Call): those whose id is one crw gives ("c" and its number) by that
	// number, the others (a hand-written trace's) by id. A slice, not only a map: a replay of
	// 100,000 calls keeps 0.8 MB of it, not 6 MB.
	byNumber []*Call
	byOther  map[string]*Call
	// byIndex are the calls the script issued, by issue order (latest attempt per index;
	// byIndex[0] is unused): AtIndex. A slice, not a map: a replay of 100,000 calls keeps
	// 0.8 MB of it, not 6 MB.
	byIndex []*Call
	indexed int // how many indexes have a call
	// Order is every settled call in the order the script received it: what a resume
	// delivers again.
	Order []*Call
	// Finished is every call with a terminal row, in the order of those rows.
	Finished []*Call
	MaxCall  int               // the highest numeric call id
	MaxIndex int               // the highest issue index
	Holds    map[string]string // node → the call whose unknown outcome holds it
	Spent    journal.Tokens
	LastSeq  uint64
	Starts   int // started rows: the processes that ran the run
	// StartSeqs are the started rows' seqs: each process wrote the rows from its own on.
	StartSeqs []uint64
	IDs       []string // call ids in the order their first attempt was prepared
	// OwedIndex is the highest issue index of a call a resumed script owes the record: every
	// call but one a pause held that the process which held it issued after it left the
	// record for another path (see builder.leave), which no process took again. A process
	// issued it with a held result in hand, and the script that left the record there no longer
	// retraces what led to it.
	OwedIndex int

	// The workspaces (workspaces.go): each node's, every crw.commit and tier step in the
	// order the script made them, and the decisions asked for, by id and in order.
	Nodes   map[string]*Node
	Commits []*Commit
	// Superseded are the commits a resume made again instead of replaying them (see
	// builder.leave), in the order they were recorded.
	Superseded    []*Commit
	TierSteps     []*journal.Row
	Decisions     map[string]*Decision
	DecisionOrder []string
	// Reconciled are the operators' verdicts on unknown outcomes, by call; Unknown the calls
	// of each node that ended unknown and have no verdict yet, oldest first (the first holds
	// the node: Holds).
	Reconciled map[string]*journal.Row
	Unknown    map[string][]string
	// Applied are the effects an applied verdict proved happened, by their key: a call that
	// asks for the same is not sent again. UnknownKeys are the keys of the calls that ended
	// unknown.
	Applied     map[EffectKey]string
	UnknownKeys map[string]EffectKey
	// VerdictCalls stand for each verdict's delivery in Order, by the call it decides.
	VerdictCalls map[string]*Call
	// Unawaited are the calls a warning says the workflow never awaited (ReasonUnawaited).
	Unawaited map[string]bool
	// Changes are the resume_changed rows, oldest first: what resumes go on with instead of
	// what the run's spec names.
	Changes []*journal.Row

	// A paged History's source, how far Load has read it, and the rows read for calls not
	// loaded yet; what the calls' kept rows weigh (keptBudget).
	src        Source
	loadMu     sync.Mutex
	cursor     uint64
	pending    map[*Call]*reread
	keptWeight int

	// What Prefetch loaded ahead of the deliveries (under prefetchMu, not loadMu, which
	// Prefetch holds while it reads a page), the room it has left, and how it is stopped.
	prefetchMu sync.Mutex
	prefetched map[*Call]*reread
	room       chan struct{}
	stop       chan struct{}
	stopOnce   sync.Once
}

// Call is the call of id (its latest attempt), nil when the record has none.
func (h *History) Call(id string) *Call {
	if n, ok := canonicalNumber(id); ok && n < len(h.byNumber) {
		if c := h.byNumber[n]; c != nil {
			return c
		}
	}
	return h.byOther[id]
}

// setCall records c, prepared at seq, as the call of id. A number crw gives is at most its
// prepared row's seq (one prepared row a call), so the slice is bounded by the journal's rows;
// a larger one is kept by id.
func (h *History) setCall(id string, seq uint64, c *Call) {
	n, ok := canonicalNumber(id)
	if !ok || uint64(n) > seq || h.byOther[id] != nil {
		h.byOther[id] = c
		return
	}
	if n >= len(h.byNumber) {
		h.byNumber = slices.Grow(h.byNumber, n+1-len(h.byNumber))[:n+1]
	}
	h.byNumber[n] = c
}

// canonicalNumber is n for the id "c<n>" crw gives a call (n ≥ 1, without a sign or leading
// zeros: "c07" is another id than "c7"), false for any other.
func canonicalNumber(id string) (int, bool) {
	if len(id) < 2 || len(id) > 19 || id[0] != 'c' || id[1] < '1' || id[1] > '9' {
		return 0, false
	}
	n := 0
	for i := 1; i < len(id); i++ {
		if id[i] < '0' || id[i] > '9' {
			return 0, false
		}
		n = n*10 + int(id[i]-'0')
	}
	return n, true
}

// AtIndex is the call the script issued i-th (its latest attempt), nil when the record has none.
func (h *History) AtIndex(i int) *Call {
	if i < 1 || i >= len(h.byIndex) {
		return nil
	}
	return h.byIndex[i]
}

// Indexed is how many issue indexes have a recorded call.
func (h *History) Indexed() int { return h.indexed }

// setIndex records c as the call issued i-th. i is at most its prepared row's seq (prepared), so
// the slice is bounded by the journal's rows.
func (h *History) setIndex(i int, c *Call) {
	if i >= len(h.byIndex) {
		h.byIndex = slices.Grow(h.byIndex, i+1-len(h.byIndex))[:i+1]
	}
	if h.byIndex[i] == nil {
		h.indexed++
	}
	h.byIndex[i] = c
}

// Read reads a journal's rows into a History. Rows out of place, a call's row with no prepared
// row before it, an output too deep for its CallResult (result.MaxOutputDepth), or a journal
// with no started row are incompatible_schema.
func Read(rows []journal.Row) (*History, error) {
	b := newBuilder(false)
	for i := range rows {
		if err := b.add(&rows[i], uint64(i+1)); err != nil {
			return nil, err
		}
	}
	return b.finish()
}

// Source calls fn with up to limit rows of a journal from seq from on (limit 0: every one), in
// order, and stops at fn's first error (store.Journal.Each). The row may be the same Row for
// every call: what is kept of it is copied.
type Source func(from uint64, limit int, fn func(*journal.Row) error) error

// PageRows is how many rows Load reads at a time.
const PageRows = 1024

// ReadPages reads a journal into a History in one pass, as Read does, and keeps no rows of a
// call once its terminal row is read (Call.Paged): a resume's memory does not grow with the
// rows its journal holds. Load reads a call's rows again from src when the call is delivered.
// An empty journal is a nil History.
func ReadPages(src Source) (*History, error) { return ReadPagesWithin(src, KeptBudget) }

// ReadPagesWithin is ReadPages keeping what the deliveries of the settled calls read of their
// rows up to budget bytes (0 or less: nothing), in the order the calls end.
func ReadPagesWithin(src Source, budget int) (*History, error) {
	b := newBuilder(true)
	b.budget = budget
	next := uint64(1)
	err := src(1, 0, func(row *journal.Row) error {
		if err := b.add(row, next); err != nil {
			return err
		}
		next++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if next == 1 {
		return nil, nil
	}
	h, err := b.finish()
	if err != nil {
		return nil, err
	}
	if err := h.hydrate(src); err != nil {
		return nil, err
	}
	h.src, h.cursor, h.pending, h.prefetched = src, h.LastSeq+1, map[*Call]*reread{}, map[*Call]*reread{}
	for _, id := range h.IDs {
		if c := h.Call(id); c.is(flagPaged) && c.kept.Load() == nil {
			// Load reads again from the first row of a call whose rows were not kept.
			h.cursor = min(h.cursor, c.PreparedSeq)
		}
	}
	return h, nil
}

// ReadPagesFrom is ReadPagesWithin, telling the source's own error (srcErr: its rows could not
// be read) from the History's (err: what the rows say makes no run).
func ReadPagesFrom(src Source, budget int) (h *History, srcErr, err error) {
	h, err = ReadPagesWithin(func(from uint64, limit int, fn func(*journal.Row) error) error {
		var fnErr error
		err := src(from, limit, func(row *journal.Row) error {
			fnErr = fn(row)
			return fnErr
		})
		if err != nil && fnErr == nil {
			srcErr = err
		}
		return err
	}, budget)
	if srcErr != nil {
		return nil, srcErr, nil
	}
	return h, nil, err
}

// KeptBudget bounds what a paged History keeps of its calls' rows (kept.weight), in all: the
// calls past it are read again when they are delivered, and what a call's delivery took is let
// go. A 10,000-call run of short answers keeps them all (~5 MB), so its journal is read once.
const KeptBudget = 6 << 20

// kept is what a settled call's delivery reads of its rows (its CallResult, and the thread a
// continuation goes on), kept by a paged History's first reading.
type kept struct {
	preparedAt, endAt     time.Time
	requested, configured *journal.Pair
	thread                *KeptThread   // nil: the call had no thread
	bound                 bool          // its thread a pull backend bound: its rows are read again
	effect                *effectInputs // while the call is open: what its EffectKey is made of
	output                json.RawMessage
	turnIDs               []string
	repairUsed            bool
	tokens                *journal.Tokens
	// preparedSeen and endSeen: a second reading (History.keep) read its prepared and its
	// terminal row.
	preparedSeen, endSeen bool
}

// keptTaken stands for the kept rows of a call Load gave.
var keptTaken = &kept{}

// KeptThread is what is kept of a call's thread_started row (one no pull backend bound).
type KeptThread struct{ ID, Model, Effort, Cwd, RolloutPath string }

// Each reading of a journal, the first (builder) and the one a delivery asks for (keep),
// takes what a delivery reads of a call's rows with these, so both keep the same.

// takePrepared takes what a delivery reads of a call's prepared row.
func (k *kept) takePrepared(row *journal.Row) {
	k.preparedAt, k.requested, k.configured, k.preparedSeen = row.At, row.RequestedPair, row.ConfiguredPair, true
}

// takeThread takes a call's thread_started row; name gives the one string kept of a name
// many rows repeat (the builder's), nil: the row's own.
func (k *kept) takeThread(row *journal.Row, name func(string) string) {
	t := row.AsThreadStarted()
	if name == nil {
		name = func(s string) string { return s }
	}
	k.thread = &KeptThread{ID: t.ThreadID, Model: name(t.Model), Effort: name(t.Effort), Cwd: name(t.Cwd), RolloutPath: t.RolloutPath}
}

// takeEnd takes what a delivery reads of a call's terminal row.
func (k *kept) takeEnd(row *journal.Row) {
	k.endAt, k.output, k.turnIDs, k.repairUsed, k.tokens, k.endSeen = row.At, row.Output, row.TurnIDs, row.RepairUsed, row.Tokens, true
}

// weight is about what k holds in memory.
func (k *kept) weight() int {
	w := 200 + len(k.output)
	for _, t := range k.turnIDs {
		w += 16 + len(t)
	}
	if t := k.thread; t != nil {
		w += 80 + len(t.ID) + len(t.RolloutPath)
	}
	if e := k.effect; e != nil {
		w += len(e.prompt) // a held call's, which may end again
	}
	return w
}

// fromKept is the call with the rows its delivery reads, made of what was kept of them: what
// Load reading them again would give of them.
func (c *Call) fromKept(k *kept) *Call {
	// one allocation for the call and its rows: a replay delivers thousands of them
	all := &struct {
		call                       Call
		rows                       Rows
		prepared, thread, terminal journal.Row
	}{
		call: Call{Attempt: c.Attempt, ID: c.ID, Role: c.Role, Node: c.Node, Index: c.Index,
			PreparedSeq: c.PreparedSeq, EndType: c.EndType, EndReason: c.EndReason, EndSeq: c.EndSeq},
		prepared: journal.Row{Seq: c.PreparedSeq, Type: journal.TypePrepared, At: k.preparedAt, Call: c.ID, Index: int(c.Index),
			Role: c.Role, Node: c.Node, RequestedPair: k.requested, ConfiguredPair: k.configured},
		terminal: journal.Row{Seq: c.EndSeq, Type: c.EndType, At: k.endAt, Call: c.ID, Reason: c.EndReason, Output: k.output,
			TurnIDs: k.turnIDs, RepairUsed: k.repairUsed, Tokens: k.tokens},
	}
	got := &all.call
	got.Rows = &all.rows
	got.Prepared, got.Terminal = &all.prepared, &all.terminal
	if t := k.thread; t != nil {
		all.thread = journal.Row{Type: journal.TypeThreadStarted, Call: c.ID, ThreadID: t.ID, Model: t.Model, Effort: t.Effort, Cwd: t.Cwd, RolloutPath: t.RolloutPath}
		got.Thread = &all.thread
	}
	return got
}

// builder reads rows into a History, in seq order.
type builder struct {
	h     *History
	paged bool
	// left: the process whose rows are being read left the record at a call a pause held.
	left bool
	// lefts are the seqs of the held rows where processes left the record.
	lefts []uint64
	names map[string]string // roles and nodes, one string each however many calls name them
	// parts are what a paged reading keeps of the open calls' prepared and thread rows, for
	// their kept rows once they end, within budget bytes in all.
	parts map[*Call]*kept
	// placements are the calls' workspace_placed rows, for their terminal rows (History.ended).
	placements map[*Call]placement
	budget     int
	// calls is where newCall takes the next Call from.
	calls []Call
}

// callChunk is how many Calls newCall allocates at a time: a History's calls live as long as it
// does, and side by side they fill their memory, where one at a time they would be scattered
// among the rows read with them, which die young and leave their spans a third used.
const callChunk = 256

// newCall is a zero Call of the History's.
func (b *builder) newCall() *Call {
	if len(b.calls) == cap(b.calls) {
		b.calls = make([]Call, 0, callChunk)
	}
	b.calls = b.calls[:len(b.calls)+1]
	return &b.calls[len(b.calls)-1]
}

func newBuilder(paged bool) *builder {
	return &builder{h: &History{byOther: map[string]*Call{}, Holds: map[string]string{},
		Nodes: map[string]*Node{}, Decisions: map[string]*Decision{}, Reconciled: map[string]*journal.Row{}, Unknown: map[string][]string{}, Applied: map[EffectKey]string{}, UnknownKeys: map[string]EffectKey{}, VerdictCalls: map[string]*Call{}, Unawaited: map[string]bool{}}, paged: paged, names: map[string]string{}, parts: map[*Call]*kept{}, placements: map[*Call]placement{}}
}

// own is a row the History keeps: a copy when the rows read are transient (ReadPages).
func (b *builder) own(row *journal.Row) *journal.Row {
	if b.paged {
		cp := *row
		return &cp
	}
	return row
}

func (b *builder) name(s string) string {
	if n, ok := b.names[s]; ok {
		return n
	}
	b.names[s] = s
	return s
}

// RecordedNoBackend is the backend of a run whose started row names none (seed 003): the App
// Server's, whose journals came first.
const RecordedNoBackend = "app-server"

func (b *builder) add(row *journal.Row, seq uint64) error {
	h := b.h
	if row.Seq != seq {
		return errs.New(errs.IncompatibleSchema, "journal: row %d has seq %d", seq, row.Seq)
	}
	h.LastSeq = row.Seq
	switch row.Type {
	case journal.TypeStarted:
		h.Starts++
		h.StartSeqs = append(h.StartSeqs, row.Seq)
		b.left = false
		if h.Started == nil {
			row = b.own(row)
			h.Started, h.Run, h.Backend = row, row.Run, row.Backend
			if h.Backend == "" {
				// Seed 003: a run whose started row records no backend is an App Server run.
				h.Backend = RecordedNoBackend
			}
		}
		return nil
	case journal.TypeEnded:
		// A paused run, or one that waits for a decision, ended its process, not its work: a
		// resume goes on with it.
		h.Ended = b.own(row)
		if row.Status == "paused" || row.Status == "waiting_decision" {
			h.Ended = nil
		}
		return nil
	case journal.TypeWarning:
		if row.Reason == ReasonUnawaited && row.Call != "" && len(h.Unawaited) < MaxUnawaited {
			h.Unawaited[row.Call] = true
		}
		return nil
	case journal.TypeEscalation:
		return nil
	case journal.TypeResumeChanged:
		h.Changes = append(h.Changes, b.own(row))
		return nil
	}
	if b.workspaceRow(row) {
		return nil
	}
	if row.Call == "" {
		return nil
	}
	c := h.Call(row.Call)
	if c != nil && c.is(flagPaged) && !journal.IsTerminal(row.Type) && row.Type != journal.TypePrepared {
		return nil // past its terminal row; only a second terminal row or a new attempt count
	}
	if row.Type == journal.TypePrepared {
		return b.prepared(c, row)
	}
	if c == nil {
		return errs.New(errs.IncompatibleSchema, "journal: row %d (%s) names call %s, which has no prepared row", row.Seq, row.Type, row.Call)
	}
	if !c.is(flagPaged) {
		b.attach(c, row)
	}
	if row.Type == journal.TypeThreadStarted {
		c.set(flagThreadBound, row.Via != "")
	}
	if k := b.parts[c]; k != nil && row.Type == journal.TypeThreadStarted {
		if row.Via != "" {
			k.bound = true // a pull backend's thread, with its binding: read again (Load)
		} else {
			k.takeThread(row, b.name)
		}
	}
	switch {
	case row.Type == journal.TypeStepPublished:
		if row.Attempt < 0 || row.Attempt > math.MaxInt32 {
			return errs.New(errs.IncompatibleSchema, "journal: row %d (step_published) of call %s has the attempt %d, outside 0..%d",
				row.Seq, row.Call, row.Attempt, math.MaxInt32)
		}
		c.StepAttempts = max(c.StepAttempts, int32(row.Attempt))
	case row.Type == journal.TypeInterruptRequested:
		c.set(flagPauseInterrupted, PauseReasons[row.Reason])
	case row.Type == journal.TypeWorkspacePlaced:
		b.placements[c] = h.placed(row)
	case journal.IsTerminal(row.Type):
		return b.terminal(c, row)
	}
	return nil
}

// prepared reads a call's prepared row: the call, or its new attempt (c is its earlier one).
func (b *builder) prepared(c *Call, row *journal.Row) error {
	h := b.h
	// Issue indexes count the calls from 1, and each issued call has a prepared row of its
	// own, so none exceeds its row's seq; a larger one (a trace written to hurt) would make
	// the replayer walk up to it.
	if row.Index < 1 || uint64(row.Index) > row.Seq || row.Index > math.MaxInt32 {
		return errs.New(errs.IncompatibleSchema, "journal: row %d (prepared) of call %s has the issue index %d, outside 1..%d",
			row.Seq, row.Call, row.Index, min(row.Seq, math.MaxInt32))
	}
	if prev := h.AtIndex(row.Index); prev != nil && prev.Reopened() && prev.EndType != "" && !b.left {
		b.leave(prev.EndSeq)
	}
	// A new attempt of a call (a resume ran it again) starts over; its tokens stay spent.
	fresh := b.newCall()
	*fresh = Call{Rows: noRows, Attempt: 1, ID: row.Call, Role: b.name(row.Role), Node: b.name(row.Node), Index: int32(row.Index), PreparedSeq: row.Seq,
		inputs: rowInputKey(row)}
	fresh.set(flagPromptless, row.Prompt == "" && row.PromptDigest != emptyPromptDigest)
	delete(b.parts, c)
	delete(b.placements, c)
	if b.paged {
		// What its delivery reads of the row, and what its EffectKey is made of should it end
		// unknown (the row is gone by then).
		k := &kept{effect: &effectInputs{row.Role, row.Node, row.Prompt, row.PromptDigest, row.SchemaDigest}}
		k.takePrepared(row)
		b.parts[fresh] = k
	}
	if c != nil {
		fresh.Attempt, fresh.StepAttempts = c.Attempt+1, c.StepAttempts
	} else {
		h.IDs = append(h.IDs, row.Call)
	}
	b.attach(fresh, row)
	h.setCall(row.Call, row.Seq, fresh)
	h.setIndex(row.Index, fresh)
	h.MaxIndex = max(h.MaxIndex, row.Index)
	if n, ok := callNumber(row.Call); ok && n > h.MaxCall {
		h.MaxCall = n
	}
	return nil
}

// terminal reads a call's terminal row.
func (b *builder) terminal(c *Call, row *journal.Row) error {
	h := b.h
	h.ended(c, b.placements[c], row)
	if d := result.OutputDepth(row.Output, result.MaxOutputDepth); d > result.MaxOutputDepth {
		return errs.New(errs.IncompatibleSchema, "journal: row %d (%s) of call %s has an output nested more than %d levels deep, which no CallResult can hold",
			row.Seq, row.Type, row.Call, result.MaxOutputDepth)
	}
	if c.EndType != "" {
		// A second terminal row in one generation, which a journal of an earlier crw
		// may hold (a held call later superseded): the newer one is the call's outcome.
		h.Order = slices.DeleteFunc(h.Order, func(o *Call) bool { return o == c })
		h.Finished = slices.DeleteFunc(h.Finished, func(o *Call) bool { return o == c })
	}
	c.EndType, c.EndReason, c.EndSeq = b.name(row.Type), b.name(row.Reason), row.Seq
	if row.Tokens != nil {
		h.Spent = h.Spent.Add(*row.Tokens)
	}
	if row.Type == journal.TypeOutcomeUnknown {
		if _, held := h.Holds[c.Node]; !held {
			h.Holds[c.Node] = row.Call
		}
		h.Unknown[c.Node] = append(h.Unknown[c.Node], row.Call)
		h.UnknownKeys[row.Call] = b.effectKey(c)
	}
	if c.Settled() {
		h.Order = append(h.Order, c)
	}
	h.Finished = append(h.Finished, c)
	if b.paged && !c.is(flagPromptless) {
		// Its rows are read again when it is delivered (Load), unless what the delivery reads
		// of them is kept. A row without its prompt (a hand-written trace) keeps them: only its
		// digest can be compared.
		c.set(flagPaged, true)
		c.Rows = noRows
		b.keep(c, row)
	}
	return nil
}

// effectKey is the EffectKey of c's newest attempt, from its prepared row: kept with the call
// (Read), or what a paged reading kept of it until the call's end.
func (b *builder) effectKey(c *Call) EffectKey {
	if c.Prepared != nil {
		return EffectKeyOf(c.Prepared)
	}
	if k := b.parts[c]; k != nil && k.effect != nil {
		return k.effect.key()
	}
	return EffectKey{}
}

// keep keeps what a paged call's delivery reads of its rows while the History's budget lasts:
// its prepared and thread rows' (parts), and its terminal row's.
func (b *builder) keep(c *Call, terminal *journal.Row) {
	h := b.h
	if k := c.kept.Swap(nil); k != nil {
		h.keptWeight -= k.weight()
	}
	k := b.parts[c]
	if k == nil {
		return
	}
	k.takeEnd(terminal)
	if c.EndType != journal.TypeHeld {
		k.effect = nil // its key was made at its end, if it was to be; a held call may end again
	}
	// Only a settled call is delivered again: a call a pause held runs again as a new attempt.
	if w := k.weight(); c.Settled() && !k.bound && h.keptWeight+w <= b.budget {
		h.keptWeight += w
		c.kept.Store(k)
	}
	if c.EndType != journal.TypeHeld {
		delete(b.parts, c)
		delete(b.placements, c) // a second terminal row (see terminal) comes only after a held one
	}
}

// callNumber is the number of a call id crw gives ("c" and a number; a sign and text after the
// digits are let be, as the ids of an earlier crw read), false for any other id.
func callNumber(id string) (int, bool) {
	rest, ok := strings.CutPrefix(id, "c")
	if !ok {
		return 0, false
	}
	digits := strings.TrimPrefix(rest, "+")
	end := 0
	for end < len(digits) && '0' <= digits[end] && digits[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(digits[:end])
	return n, err == nil
}

// attach keeps a row of a call's newest generation in its Call. A paged History keeps none
// while it reads (hydrate gives the calls that need them their rows at the end).
func (b *builder) attach(c *Call, row *journal.Row) {
	if b.paged {
		return
	}
	c.attach(row)
}

func (c *Call) attach(row *journal.Row) {
	r := c.own()
	switch {
	case row.Type == journal.TypePrepared:
		r.Prepared = row
	case row.Type == journal.TypeThreadStarted:
		r.Thread = row
	case row.Type == journal.TypeTurnStarted:
		r.Turns = append(r.Turns, row)
	case row.Type == journal.TypeAttemptLost:
		r.Lost = append(r.Lost, row)
	case row.Type == journal.TypeStepPublished:
		r.Steps = append(r.Steps, row)
	case row.Type == journal.TypeInterruptRequested:
		r.Interrupt = row
	case row.Type == journal.TypeWorkspacePlaced:
		r.Placed = row
	case journal.IsTerminal(row.Type):
		r.Terminal = row
	}
}

// hydrate reads again the rows of the calls whose rows a paged History keeps (their newest
// generation has no terminal row, or its prepared row no prompt): from the earliest of their
// prepared rows on, which is mostly the journal's last few rows.
func (h *History) hydrate(src Source) error {
	var from uint64
	for _, id := range h.IDs {
		if c := h.Call(id); !c.is(flagPaged) && (from == 0 || c.PreparedSeq < from) {
			from = c.PreparedSeq
		}
	}
	if from == 0 {
		return nil
	}
	return src(from, int(h.LastSeq-from+1), func(row *journal.Row) error {
		c := h.Call(row.Call)
		if row.Call == "" || c == nil || c.is(flagPaged) || row.Seq < c.PreparedSeq {
			return nil
		}
		cp := *row // its own copy: the row read is reused
		c.attach(&cp)
		return nil
	})
}

// leave is a process taking the call at the issue index of a call a pause held (held row at
// seq held) again: its script left the record there (Replayer.LeftAt). The commits the process
// that held the call recorded once it had a held result (PauseHeldFrom) were made with it in
// hand, and this process made them again (SupersededBy): they are superseded, and the commits
// it made take their places. The decisions it asked there are Left.
func (b *builder) leave(held uint64) {
	b.left = true
	b.lefts = append(b.lefts, held)
	h := b.h
	from := h.PauseHeldFrom(held)
	keep := h.Commits[:0:0]
	for _, c := range h.Commits {
		if h.SupersededBy(c.Intent.Seq, from) {
			h.Superseded = append(h.Superseded, c)
			continue
		}
		keep = append(keep, c)
	}
	h.Commits = keep
	for _, d := range h.Decisions {
		if h.SupersededBy(d.Request.Seq, from) {
			d.Left = true
		}
	}
}

// PauseHeldFrom is the seq of the first row at which the process that wrote the held row at
// seq held had a result a pause held: the earliest row of a call a pause held it wrote (held,
// or one before it). What it wrote after that, it may have written with a held result in hand,
// whichever held call a later process takes again first.
func (h *History) PauseHeldFrom(held uint64) uint64 {
	from := uint64(0) // the start of the process that wrote held
	for _, start := range h.StartSeqs {
		if start < held {
			from = start
		}
	}
	first := held
	for _, c := range h.Finished {
		if c.EndSeq > from && c.EndSeq < first && c.EndType == journal.TypeHeld && PauseReasons[c.EndReason] {
			first = c.EndSeq
		}
	}
	return first
}

// abandoned reports whether c is a call a pause held that was issued after the held row where
// a later process left the record, by the process that wrote that row: no process took it again.
func (b *builder) abandoned(c *Call) bool {
	if !c.Reopened() {
		return false
	}
	for _, held := range b.lefts {
		if b.h.SupersededBy(c.PreparedSeq, held) {
			return true
		}
	}
	return false
}

// SupersededBy reports whether the row at seq was written by the process that wrote the held
// row at seq held, after it: with the held result in the script's hands. A resume that runs the
// held call again makes such a row's effect again rather than replay it.
func (h *History) SupersededBy(seq, held uint64) bool {
	if seq <= held {
		return false
	}
	for _, start := range h.StartSeqs {
		if start > held {
			return seq < start
		}
	}
	return true
}

func (b *builder) finish() (*History, error) {
	h := b.h
	if h.Started == nil {
		return nil, errs.New(errs.IncompatibleSchema, "journal: no started row")
	}
	for i, c := range h.byIndex {
		if c != nil && i > h.OwedIndex && !b.abandoned(c) {
			h.OwedIndex = i
		}
	}
	return h, nil
}

// Load gives a call with its rows: itself, unless it is Paged; then a copy with the rows its
// CallResult is built from (prepared, thread, terminal): made of what the first reading kept of
// them (what its delivery reads: kept), else read again from the journal. Calls are mostly
// loaded in the order of their terminal rows, as a replay delivers them: the journal is read on
// from where the last load stopped, and the rows of the calls it passes are kept until they are
// loaded. A call read again is loaded once.
func (h *History) Load(c *Call) (*Call, error) {
	if !c.Paged() {
		return c, nil
	}
	if k := c.kept.Load(); k != nil {
		// Given once, as rows read again are, and let go: the call keeps only that it was.
		if k == keptTaken || !c.kept.CompareAndSwap(k, keptTaken) {
			return nil, errs.New(errs.IncompatibleSchema, "run %s: the rows of call %s were given already", h.Run, c.ID)
		}
		return c.fromKept(k), nil
	}
	if got := h.takePrefetched(c); got != nil {
		return got.rows(c), nil
	}
	h.loadMu.Lock()
	defer h.loadMu.Unlock()
	if got := h.takePrefetched(c); got != nil {
		return got.rows(c), nil // Prefetch was loading it
	}
	got, err := h.loadLocked(c)
	if err != nil {
		return nil, err
	}
	return got.rows(c), nil
}

// reread is what the second reading of a paged call gave: what its delivery reads of its rows
// (kept, as a first reading keeps them), or its rows themselves (call) when a pull backend
// bound its thread, whose binding a kept thread does not hold.
type reread struct {
	kept *kept
	call *Call
}

// rows is the call c with the rows its delivery reads.
func (r *reread) rows(c *Call) *Call {
	if r.kept != nil {
		return c.fromKept(r.kept)
	}
	return r.call
}

// LoadResult is what Load and then Result give of a settled call, with its terminal row's
// time, built from what the History kept of its rows when it kept them: a shadow replay
// delivers thousands of calls and needs none of their rows.
func (h *History) LoadResult(c *Call, omitSeqs bool) (result.CallResult, time.Time, error) {
	if d, ok := h.TakeKept(c, omitSeqs); ok {
		return d.Result, d.EndAt, nil
	}
	full, err := h.Load(c)
	if err != nil {
		return result.CallResult{}, time.Time{}, err
	}
	return full.Result(h.Run, omitSeqs), full.Terminal.At, nil
}

// Delivery is what a settled call's delivery takes of its rows, made of what a paged History
// kept of them: its CallResult (Result with omitSeqs), its terminal row's time, and its thread.
type Delivery struct {
	Result result.CallResult
	EndAt  time.Time
	Thread *KeptThread // nil: the call had no thread
}

// TakeKept gives, once, the Delivery of a call whose rows the History kept (false when it did
// not: Load reads them again); Load gives that call no rows after.
func (h *History) TakeKept(c *Call, omitSeqs bool) (Delivery, bool) {
	k := c.kept.Load()
	if k == nil || k == keptTaken || !c.kept.CompareAndSwap(k, keptTaken) {
		// What Prefetch read again of it, if it is what a first reading keeps.
		if k = h.takePrefetchedKept(c); k == nil {
			return Delivery{}, false
		}
	}
	return h.delivery(c, k, omitSeqs), true
}

// delivery is the Delivery of the settled call c made of what was kept of its rows.
func (h *History) delivery(c *Call, k *kept, omitSeqs bool) Delivery {
	rec := result.Recorded{Call: c.ID, Role: c.Role, Requested: k.requested, Configured: k.configured,
		PreparedSeq: c.PreparedSeq, EndType: c.EndType, EndSeq: c.EndSeq, Reason: c.EndReason, Output: k.output,
		TurnIDs: k.turnIDs, RepairUsed: k.repairUsed, Tokens: k.tokens}
	d := Delivery{EndAt: k.endAt}
	if d.Thread = k.thread; d.Thread != nil {
		rec.ThreadID = d.Thread.ID
	}
	d.Result = rec.Result(h.Run)
	if omitSeqs {
		d.Result = d.Result.WithoutSeqs()
	}
	return d
}

// takePrefetched is what Prefetch loaded of c, if it has: a delivery takes it without waiting
// for the page Prefetch may be reading meanwhile.
func (h *History) takePrefetched(c *Call) *reread {
	h.prefetchMu.Lock()
	got, ok := h.prefetched[c]
	delete(h.prefetched, c)
	h.prefetchMu.Unlock()
	if !ok {
		return nil
	}
	<-h.room
	return got
}

// takePrefetchedKept is what Prefetch read again of c when it is what a first reading keeps
// (nil otherwise, and what it read is left for Load).
func (h *History) takePrefetchedKept(c *Call) *kept {
	h.prefetchMu.Lock()
	got, ok := h.prefetched[c]
	if !ok || got.kept == nil {
		h.prefetchMu.Unlock()
		return nil
	}
	delete(h.prefetched, c)
	h.prefetchMu.Unlock()
	<-h.room
	return got.kept
}

func (h *History) loadLocked(c *Call) (*reread, error) {
	if c.loaded {
		return nil, errs.New(errs.IncompatibleSchema, "run %s: the rows of call %s were read again already", h.Run, c.ID)
	}
	for h.cursor <= c.EndSeq {
		from := h.cursor
		err := h.src(from, min(PageRows, int(h.LastSeq-from+1)), func(row *journal.Row) error {
			h.keep(row)
			h.cursor++
			return nil
		})
		if err != nil {
			return nil, errs.New(errs.IncompatibleSchema, "run %s: its journal cannot be read", h.Run).Wrap(err)
		}
		if h.cursor == from {
			return nil, errs.New(errs.IncompatibleSchema, "run %s: journal row %d is gone", h.Run, h.cursor)
		}
	}
	got := h.pending[c]
	delete(h.pending, c)
	if got == nil || !got.whole() {
		return nil, errs.New(errs.IncompatibleSchema, "run %s: the rows of call %s (seq %d to %d) cannot be read again", h.Run, c.ID, c.PreparedSeq, c.EndSeq)
	}
	c.loaded = true
	return got, nil
}

// prefetchAhead bounds the calls Prefetch loads ahead of the deliveries: their rows are in memory
// until they are delivered.
const prefetchAhead = 128

// Prefetch loads the paged calls given, in that order (the order a replay delivers them), on a
// goroutine of its own, at most prefetchAhead ahead of the deliveries: a replay mostly finds a
// call's rows read when its turn comes, the
// journal's second reading done beside the script rather than in its way. It stops at the
// first call it cannot load (Load then says why), or at StopPrefetch.
func (h *History) Prefetch(calls []*Call) {
	if h.src == nil || h.room != nil {
		return
	}
	h.room, h.stop = make(chan struct{}, prefetchAhead), make(chan struct{})
	go func() {
		for _, c := range calls {
			if c.Decision || !c.Paged() || c.kept.Load() != nil {
				continue
			}
			select {
			case h.room <- struct{}{}:
			case <-h.stop:
				return
			}
			h.loadMu.Lock()
			if c.loaded {
				h.loadMu.Unlock()
				<-h.room
				continue
			}
			got, err := h.loadLocked(c)
			if err != nil {
				h.loadMu.Unlock()
				<-h.room
				return
			}
			h.prefetchMu.Lock()
			h.prefetched[c] = got
			h.prefetchMu.Unlock()
			h.loadMu.Unlock()
		}
	}()
}

// StopPrefetch ends Prefetch's goroutine.
func (h *History) StopPrefetch() {
	if h.stop != nil {
		h.stopOnce.Do(func() { close(h.stop) })
	}
}

// keep keeps what Load will need of a row: of one of a Paged call's rows a CallResult is
// built from, what a first reading keeps (kept), or, of a call whose thread a pull backend
// bound, the row itself.
func (h *History) keep(p *journal.Row) {
	c := h.Call(p.Call)
	if p.Call == "" || c == nil || !c.Paged() || c.kept.Load() != nil || p.Seq < c.PreparedSeq || p.Seq > c.EndSeq {
		return
	}
	switch {
	case p.Type == journal.TypePrepared, p.Type == journal.TypeThreadStarted, p.Seq == c.EndSeq:
	default:
		return
	}
	got := h.pending[c]
	if got == nil {
		got = &reread{}
		if c.is(flagThreadBound) {
			got.call = &Call{Rows: &Rows{}, Attempt: c.Attempt, ID: c.ID, Role: c.Role, Node: c.Node, Index: c.Index,
				PreparedSeq: c.PreparedSeq, EndType: c.EndType, EndReason: c.EndReason, EndSeq: c.EndSeq}
		} else {
			got.kept = &kept{}
		}
		h.pending[c] = got
	}
	if k := got.kept; k != nil {
		switch {
		case p.Type == journal.TypePrepared:
			k.takePrepared(p)
		case p.Type == journal.TypeThreadStarted:
			k.takeThread(p, nil)
		default:
			k.takeEnd(p)
		}
		return
	}
	row := *p // its own copy: the row read is reused
	switch {
	case row.Type == journal.TypePrepared:
		got.call.Prepared = &row
	case row.Type == journal.TypeThreadStarted:
		got.call.Thread = &row
	default:
		got.call.Terminal = &row
	}
}

// whole reports whether the reading gave the call's prepared and terminal rows.
func (r *reread) whole() bool {
	if r.kept != nil {
		return r.kept.preparedSeen && r.kept.endSeen
	}
	return r.call.Prepared != nil && r.call.Terminal != nil
}

// PreparedRow is a call's prepared row, read again from the journal for a Paged call (what a
// divergence names). When it cannot be read again (a trace changed since it was read, say), it
// is what the History kept of it, without its prompt or digests, and err says why: a report
// that names the row must not stand on the stand-in.
func (h *History) PreparedRow(c *Call) (row *journal.Row, err error) {
	if !c.Paged() {
		return c.Prepared, nil
	}
	var got *journal.Row
	err = h.src(c.PreparedSeq, 1, func(row *journal.Row) error {
		if row.Call == c.ID {
			cp := *row
			got = &cp
		}
		return nil
	})
	if err == nil && got != nil {
		return got, nil
	}
	if err == nil {
		err = errs.New(errs.IncompatibleSchema, "row %d is not its prepared row", c.PreparedSeq)
	}
	stand := &journal.Row{Type: journal.TypePrepared, Seq: c.PreparedSeq, Call: c.ID, Index: int(c.Index), Role: c.Role, Node: c.Node}
	return stand, errs.New(errs.IncompatibleSchema, "run %s: the prepared row of call %s cannot be read again", h.Run, c.ID).Wrap(err)
}

// Outcomes is every call's latest outcome in the order the journal recorded it: what a shadow
// replays, pause-held calls included, since the recorded script saw them.
//
// It is Finished itself when every call there is its latest attempt (a run no resume ran a
// call of again): a replay of 100,000 calls holds no second list of them.
func (h *History) Outcomes() []*Call {
	for i, c := range h.Finished {
		if h.Call(c.ID) != c {
			out := h.Finished[:i:i] // a copy from the first append on
			for _, c := range h.Finished[i+1:] {
				if h.Call(c.ID) == c {
					out = append(out, c)
				}
			}
			return out
		}
	}
	return h.Finished
}

// AlignOrder is the order a shadow delivers in (Align): the latest attempt of every call that
// has an outcome (Outcomes), and among them, at their places, the deliveries of decisions'
// answers and of operators' verdicts, as a resume delivers them (Order). A shadow that gave
// the recorded answer to crw.decide at once would have it win every race against a call.
func (h *History) AlignOrder() []*Call {
	outcomes := h.Outcomes()
	var standIns []*Call
	for _, c := range h.Order {
		if c.Decision {
			standIns = append(standIns, c)
		}
	}
	if len(standIns) == 0 {
		return outcomes
	}
	out := make([]*Call, 0, len(outcomes)+len(standIns))
	i := 0
	for _, c := range outcomes {
		for ; i < len(standIns) && standIns[i].EndSeq < c.EndSeq; i++ {
			out = append(out, standIns[i])
		}
		out = append(out, c)
	}
	return append(out, standIns[i:]...)
}

// OmitCallSeqs reports whether the run's CallResults go without meta.startSeq and meta.endSeq,
// as its started row says.
func (h *History) OmitCallSeqs() bool { return h.Started != nil && h.Started.OmitCallSeqs }

// ClockStart is when the run's clock starts: its first process's started row.
func (h *History) ClockStart() time.Time { return h.Started.At }
