// Package timeline is a run's calls as its journal tells them, folded from its rows as they
// stream: each call's newest generation, the run's counts and tokens, its escalations,
// warnings and workspace steps.
package timeline

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/crw-dev/crw/engine/result"
	"github.com/crw-dev/crw/journal"
	"github.com/crw-dev/crw/store"
)

// Call is one call as the journal tells it: its newest generation (its rows from its
// newest prepared row on; Attempts counts the generations). A call a resume took up again was
// prepared again, and its earlier generations' rows stay in the journal (crw flow trace).
type Call struct {
	Call       string             `json:"call"`
	Index      int                `json:"index"`
	Role       string             `json:"role"`
	Node       string             `json:"node"`
	Status     journal.CallStatus `json:"status"` // "" while it has no terminal row
	Reason     string             `json:"reason,omitempty"`
	Detail     string             `json:"detail,omitempty"`
	Site       string             `json:"site,omitempty"`
	ThreadID   string             `json:"thread_id,omitempty"`
	Model      string             `json:"model,omitempty"`
	Effort     string             `json:"effort,omitempty"`
	Turns      int                `json:"turns"`
	RepairUsed bool               `json:"repair_used"`
	Tokens     journal.Tokens     `json:"tokens"`
	Started    time.Time          `json:"started"`
	Ended      *time.Time         `json:"ended,omitempty"`
	DurationMS int64              `json:"duration_ms"`
	Prompt     string             `json:"prompt,omitempty"`
	Output     json.RawMessage    `json:"output,omitempty"`
	StartSeq   uint64             `json:"start_seq"`
	EndSeq     uint64             `json:"end_seq,omitempty"`
	LastRow    string             `json:"last_row"`
	Attempts   int                `json:"attempts"`
	// Handle is the call's own handle, once it has a thread (what a continuation of it names);
	// Continues the handle it continues; Repair what its repair turn named as wrong.
	Handle    string `json:"handle,omitempty"`
	Continues string `json:"continues,omitempty"`
	Repair    string `json:"repair,omitempty"`
}

// Timeline is a run's calls, in the order the script made them, as its journal tells them.
// Its JSON is its Head's members, calls, then its Tail's: a writer may stream the calls
// between the two.
type Timeline struct {
	Head
	Calls []Call `json:"calls"`
	Tail
}

// Head is the run's own part of a Timeline, written before its calls.
type Head struct {
	Run      string            `json:"run"`
	Workflow string            `json:"workflow"`
	Backend  string            `json:"backend"`
	Status   store.RunStatus   `json:"status"` // "" while it has not ended
	Started  time.Time         `json:"started"`
	Ended    *time.Time        `json:"ended,omitempty"`
	Result   json.RawMessage   `json:"result,omitempty"`
	Error    *journal.RunError `json:"error,omitempty"`
}

// Tail is what a Timeline says after its calls.
type Tail struct {
	Counts      store.Counts   `json:"counts"`
	Tokens      journal.Tokens `json:"tokens"`
	Escalations []journal.Row  `json:"escalations,omitempty"`
	Warnings    []journal.Row  `json:"warnings,omitempty"`
	// Steps are the run's workspace rows in order: commits (intent and result), tier steps and
	// decisions asked and answered (docs/workspaces.md).
	Steps []journal.Row `json:"steps,omitempty"`
}

// Summarize reads a timeline out of a journal's rows, bodies and all.
func Summarize(rows []journal.Row) Timeline {
	f := NewFold(Options{Bodies: true})
	for i := range rows {
		f.Add(&rows[i])
	}
	return *f.Timeline()
}

// Options say what a Fold keeps.
type Options struct {
	// Bodies keeps each call's prompt, output and repair: nearly the whole journal. Without
	// them a Fold keeps a few dozen bytes a call and a Bodies pass gives them from a second
	// reading of the rows, a call at a time.
	Bodies bool
	// Call, when not "", is the one call the Fold keeps, bodies and all; the run's own rows
	// are folded all the same, and its counts and tokens are that call's.
	Call string
}

// Fold builds a Timeline a row at a time, keeping nothing of a row but what it shows: of a
// call, an entry of a couple of hundred bytes, its bodies only when Options say so.
type Fold struct {
	t       Timeline // without its calls: Timeline and Each build them from entries
	opts    Options
	entries entries
	bodies  map[int]*bodies // the calls' bodies, when kept
	byCall  map[string]int
	names   []string // roles, nodes, sites, models, row types and reasons, each once
	nameAt  map[string]uint32
	last    uint64 // the seq of the last row folded
}

// entry is what a Fold keeps of a call's newest generation: its Call but for its bodies and
// its handle, each repeated string as its number in the Fold's names.
type entry struct {
	id, detail, threadID, continues                          string
	role, node, site, status, reason, model, effort, lastRow uint32
	index, turns, attempts                                   int
	repairUsed, ended, threaded                              bool
	started, endedAt                                         time.Time
	tokens                                                   journal.Tokens
	startSeq, endSeq                                         uint64
}

// entries are a Fold's entries in chunks of entryChunk, which a long run's add to without
// copying them: a slice of them doubled as it grew, and held both arrays at once (~45 MB of a
// 100,000-call run's show, whose entries take ~23 MB).
type entries struct {
	chunks [][]entry
	n      int
}

const entryChunk = 1024

func (es *entries) at(i int) *entry { return &es.chunks[i/entryChunk][i%entryChunk] }

// add appends e and returns its index.
func (es *entries) add(e entry) int {
	if es.n%entryChunk == 0 {
		es.chunks = append(es.chunks, make([]entry, 0, entryChunk))
	}
	last := &es.chunks[len(es.chunks)-1]
	*last = append(*last, e)
	es.n++
	return es.n - 1
}

// bodies are what a call's Call holds of its prompt, its repair turn and its answer.
type bodies struct {
	prompt, repair string
	output         json.RawMessage
}

// NewFold returns an empty fold: Add each row in order, then Timeline or Each.
func NewFold(opts Options) *Fold {
	f := &Fold{t: Timeline{Tail: Tail{Counts: store.Counts{}}, Calls: []Call{}}, opts: opts, byCall: map[string]int{}, nameAt: map[string]uint32{}}
	if f.keepBodies() {
		f.bodies = map[int]*bodies{}
	}
	f.name("") // names[0]
	return f
}

// name is s's number in the Fold's names.
func (f *Fold) name(s string) uint32 {
	if n, ok := f.nameAt[s]; ok {
		return n
	}
	f.names = append(f.names, s)
	f.nameAt[s] = uint32(len(f.names) - 1)
	return uint32(len(f.names) - 1)
}

func (f *Fold) keepBodies() bool { return f.opts.Bodies || f.opts.Call != "" }

// Timeline is the run's timeline from the rows folded in so far, its calls built.
func (f *Fold) Timeline() *Timeline {
	t := f.t
	t.Calls = make([]Call, f.entries.n)
	for i := range f.entries.n {
		f.build(i, &t.Calls[i])
	}
	return &t
}

// Each calls fn with each call folded so far, in the Timeline's order; the Call is reused
// from one call of fn to the next.
func (f *Fold) Each(fn func(*Call)) {
	var c Call
	for i := range f.entries.n {
		f.build(i, &c)
		fn(&c)
	}
}

// Head is the run's own part of the Timeline before its calls.
func (f *Fold) Head() Head { return f.t.Head }

// Tail is the run's own part of the Timeline after its calls.
func (f *Fold) Tail() Tail { return f.t.Tail }

// Len is how many calls were folded.
func (f *Fold) Len() int { return f.entries.n }

func (f *Fold) build(i int, c *Call) {
	e := f.entries.at(i)
	*c = Call{Call: e.id, Index: e.index, Role: f.names[e.role], Node: f.names[e.node], Status: journal.CallStatus(f.names[e.status]),
		Reason: f.names[e.reason], Detail: e.detail, Site: f.names[e.site], ThreadID: e.threadID, Model: f.names[e.model],
		Effort: f.names[e.effort], Turns: e.turns, RepairUsed: e.repairUsed, Tokens: e.tokens, Started: e.started,
		StartSeq: e.startSeq, EndSeq: e.endSeq, LastRow: f.names[e.lastRow], Attempts: e.attempts, Continues: e.continues}
	if e.ended {
		at := e.endedAt
		c.Ended, c.DurationMS = &at, at.Sub(e.started).Milliseconds()
	}
	if e.threaded {
		c.Handle = result.Handle(f.t.Run, e.id)
	}
	if b := f.bodies[i]; b != nil {
		c.Prompt, c.Repair, c.Output = b.prompt, b.repair, b.output
	}
}

// Add folds the next row in.
func (f *Fold) Add(row *journal.Row) {
	f.last = row.Seq
	s := &f.t
	uncount := func(status journal.CallStatus) {
		if s.Counts[status]--; s.Counts[status] == 0 {
			delete(s.Counts, status)
		}
	}
	switch row.Type {
	case journal.TypeStarted:
		if s.Run == "" {
			s.Run, s.Workflow, s.Backend, s.Started = row.Run, row.Workflow, row.Backend, row.At
		}
		if s.Status == store.RunPaused || s.Status == store.RunWaitingDecision {
			// A process took the run after it ended paused or waiting: it is under way again
			// (or crashed, when that process died), as the journal's summary has it.
			s.Ended, s.Status, s.Result, s.Error = nil, "", nil, nil
		}
	case journal.TypeResumeChanged:
		if row.Workflow != "" {
			s.Workflow = row.Workflow // the script the run goes on with, as status has it
		}
	case journal.TypeEnded:
		at := row.At
		s.Ended, s.Status, s.Result, s.Error = &at, store.RunStatus(row.Status), row.Result, row.Error
	case journal.TypeEscalation:
		s.Escalations = append(s.Escalations, *row)
	case journal.TypeCommitResult, journal.TypeTierStep, journal.TypeDecisionRequested, journal.TypeDecisionAnswered, journal.TypeEffectReconciled:
		s.Steps = append(s.Steps, *row)
	case journal.TypeWarning:
		s.Warnings = append(s.Warnings, *row)
	case journal.TypePrepared:
		if f.opts.Call != "" && row.Call != f.opts.Call {
			return
		}
		e := entry{id: row.Call, index: row.Index, role: f.name(row.Role), node: f.name(row.Node), site: f.name(row.Site),
			started: row.At, startSeq: row.Seq, lastRow: f.name(row.Type), attempts: 1, continues: row.Handle}
		i, ok := f.byCall[row.Call]
		if ok {
			// A resume ran the call again (it was held by a pause): the new attempt is the call.
			old := f.entries.at(i)
			if old.status != 0 {
				uncount(journal.CallStatus(f.names[old.status]))
			}
			e.id, e.attempts = old.id, old.attempts+1
			*old = e
		} else {
			i = f.entries.add(e)
			f.byCall[row.Call] = i
		}
		if f.bodies != nil {
			f.bodies[i] = &bodies{prompt: row.Prompt}
		}
	default:
		i, ok := f.byCall[row.Call]
		if !ok {
			return
		}
		e := f.entries.at(i)
		e.lastRow = f.name(row.Type)
		switch row.Type {
		case journal.TypeThreadStarted:
			e.threadID, e.model, e.effort, e.threaded = row.ThreadID, f.name(row.Model), f.name(row.Effort), true
		case journal.TypeTurnStarted:
			e.turns++
			if row.K > 1 && f.bodies != nil {
				f.bodies[i].repair = row.Repair
			}
		}
		if journal.IsTerminal(row.Type) {
			if e.status != 0 {
				// A generation has one terminal row; a journal of an earlier crw may hold a
				// second one (a held call later superseded), which is then the outcome.
				uncount(journal.CallStatus(f.names[e.status]))
			}
			status := journal.StatusOf(row.Type)
			e.status, e.reason, e.detail, e.ended, e.endedAt, e.endSeq = f.name(string(status)), f.name(row.Reason), row.Detail, true, row.At, row.Seq
			e.repairUsed = row.RepairUsed
			if row.Tokens != nil {
				e.tokens = e.tokens.Add(*row.Tokens)
				s.Tokens = s.Tokens.Add(*row.Tokens)
			}
			if row.Type == journal.TypeCompleted && f.bodies != nil {
				f.bodies[i].output = row.Output
			}
			s.Counts[status]++
		}
	}
}

// Bodies gives the calls of a Fold kept without bodies their prompt, output and repair from
// a second reading of the same rows (Add each in order, then Finish), and hands each call to
// emit in the Timeline's order once it and every call before it have theirs. A call's bodies
// are let go once it is emitted: what is kept is the bodies of calls that ended while one
// issued before them was still open.
type Bodies struct {
	f    *Fold
	next int
	upTo uint64 // the last row the Fold read: a row written since is not the Timeline's
	last uint64 // the seq of the last row added
	emit func(*Call) error
	call Call // reused from one emit to the next
	err  error
}

// ErrRead is what Add returns for a row past those the Fold read (a live run's, written
// since): the second reading is done.
var ErrRead = errors.New("timeline: every row folded was read again")

// Bodies starts the second reading of the Fold's rows; nothing is to be folded in meanwhile.
func (f *Fold) Bodies(emit func(*Call) error) *Bodies {
	f.bodies = map[int]*bodies{}
	return &Bodies{f: f, upTo: f.last, emit: emit}
}

// Add reads the next row again.
func (b *Bodies) Add(row *journal.Row) error {
	if row.Seq > b.upTo {
		return ErrRead
	}
	b.last = row.Seq
	f := b.f
	if i, ok := f.byCall[row.Call]; ok && i >= b.next {
		e := f.entries.at(i)
		got := f.bodies[i]
		if got == nil {
			got = &bodies{}
			f.bodies[i] = got
		}
		switch {
		case row.Seq == e.startSeq:
			got.prompt = row.Prompt
		case row.Seq < e.startSeq || (e.ended && row.Seq > e.endSeq):
			// Another generation's row, or a row past the call's end.
		case row.Type == journal.TypeTurnStarted && row.K > 1:
			got.repair = row.Repair
		case row.Seq == e.endSeq && row.Type == journal.TypeCompleted:
			got.output = row.Output
		}
	}
	return b.flush(false)
}

// Finish hands over the calls still held: the open ones, whose rows all came.
func (b *Bodies) Finish() error { return b.flush(true) }

func (b *Bodies) flush(all bool) error {
	f := b.f
	for b.err == nil && b.next < f.entries.n {
		e := f.entries.at(b.next)
		if !all && (!e.ended || e.endSeq > b.last) {
			break
		}
		f.build(b.next, &b.call)
		b.err = b.emit(&b.call)
		delete(f.bodies, b.next)
		b.next++
	}
	return b.err
}
