package journal

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
)

// What a run has outstanding: the calls under way, the outcomes nobody knows and the verdicts
// given on them, and the commits a resume is to finish. A journal's writer keeps them beside
// its Summary (a store's Index), folded by the same commits, so crw flow inspect answers from
// them without reading the rows. An index of a journal is what the fold over its rows makes.

// OpenCall is a call whose newest attempt has no terminal row: its prepared row's seq, node and
// role, and the thread and turns it started.
type OpenCall struct {
	Call   string   `json:"call"`
	Seq    uint64   `json:"seq"`
	Node   string   `json:"node,omitempty"`
	Role   string   `json:"role,omitempty"`
	Thread string   `json:"thread,omitempty"`
	Turns  []string `json:"turns,omitempty"`
}

// UnknownCall is a call whose newest outcome is unknown (outcome_unknown): what it had when it
// ended, and why. Reconciled: an operator gave a verdict on it, which it keeps for good.
type UnknownCall struct {
	OpenCall
	Reason     string `json:"reason,omitempty"`
	Reconciled bool   `json:"reconciled,omitempty"`
}

// Verdict is an operator's verdict on an unknown outcome (effect_reconciled): on which call,
// which, by whom, when, and for an applied one what the call answered (Output, left out past
// MaxVerdictOutput bytes: Clipped) and its digest.
type Verdict struct {
	Seq          uint64          `json:"seq"`
	Call         string          `json:"call"`
	Verdict      string          `json:"verdict"`
	By           string          `json:"by,omitempty"`
	At           time.Time       `json:"at"`
	Output       json.RawMessage `json:"output,omitempty"`
	OutputDigest string          `json:"output_digest,omitempty"`
	Clipped      bool            `json:"clipped,omitempty"`
}

// MaxVerdictOutput bounds the output a Verdict keeps.
const MaxVerdictOutput = 4096

// CommitIntent is a commit_intent row a resume is to finish: no commit_result has followed it.
type CommitIntent struct {
	Node   string `json:"node"`
	Ref    string `json:"ref,omitempty"`
	Tree   string `json:"tree,omitempty"`
	Parent string `json:"parent,omitempty"`
}

// Index is where a store keeps, beside a Summary, what the fold knows per call: its status
// (CallStates), the calls open, the unknown outcomes and the verdicts. The local store keeps
// them in bbolt buckets of the journal's file, the memory store in maps.
type Index interface {
	CallStates
	// Open returns the open call's record, nil when the call is not open.
	Open(call string) (*OpenCall, error)
	// SetOpen records an open call; nil removes the record.
	SetOpen(call string, o *OpenCall) error
	// Unknown returns the call's unknown outcome, nil when it has none.
	Unknown(call string) (*UnknownCall, error)
	// SetUnknown records the call's unknown outcome; nil removes it.
	SetUnknown(call string, u *UnknownCall) error
	// AddVerdict records a verdict, after those before it.
	AddVerdict(v Verdict) error
}

// Outstanding is what an Index lists for crw flow inspect: the open calls in the order they
// were first issued, the unknown outcomes with no verdict in the same order, every verdict in
// journal order, and the summary's pending commits. Each list but the commits is cut at a
// limit; Total* say how many there were.
type Outstanding struct {
	Open     []OpenCall    `json:"open"`
	Unknown  []UnknownCall `json:"unknown"`
	Verdicts []Verdict     `json:"verdicts"`
	// Commits are the summary's (Summary.Commits), whole: read with the rest.
	Commits       []CommitIntent `json:"commits,omitempty"`
	TotalOpen     int            `json:"total_open"`
	TotalUnknown  int            `json:"total_unknown"`
	TotalVerdicts int            `json:"total_verdicts"`
}

// ByIssue sorts call ids in the order crw issues them: c1, c2, … c10 by number, any other id
// after those, by its text.
func ByIssue(a, b string) int {
	na, oka := callNumber(a)
	nb, okb := callNumber(b)
	switch {
	case oka && okb:
		if na != nb {
			if na < nb {
				return -1
			}
			return 1
		}
	case oka:
		return -1
	case okb:
		return 1
	}
	return strings.Compare(a, b)
}

func callNumber(id string) (uint64, bool) {
	digits, ok := strings.CutPrefix(id, "c")
	if !ok || digits == "" || digits[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	return n, err == nil
}

// MemIndex is an Index in memory.
type MemIndex struct {
	Calls    MapCallStates
	OpenBy   map[string]*OpenCall
	Unknowns map[string]*UnknownCall
	Verdicts []Verdict
}

// NewMemIndex is an empty MemIndex.
func NewMemIndex() *MemIndex {
	return &MemIndex{Calls: MapCallStates{}, OpenBy: map[string]*OpenCall{}, Unknowns: map[string]*UnknownCall{}}
}

// CallState implements Index.
func (m *MemIndex) CallState(call string) (bool, CallStatus, error) { return m.Calls.CallState(call) }

// SetCallState implements Index.
func (m *MemIndex) SetCallState(call string, status CallStatus) error {
	return m.Calls.SetCallState(call, status)
}

// Open implements Index.
func (m *MemIndex) Open(call string) (*OpenCall, error) {
	if o := m.OpenBy[call]; o != nil {
		cp := *o
		cp.Turns = slices.Clone(o.Turns)
		return &cp, nil
	}
	return nil, nil
}

// SetOpen implements Index.
func (m *MemIndex) SetOpen(call string, o *OpenCall) error {
	if o == nil {
		delete(m.OpenBy, call)
		return nil
	}
	cp := *o
	cp.Turns = slices.Clone(o.Turns)
	m.OpenBy[call] = &cp
	return nil
}

// Unknown implements Index.
func (m *MemIndex) Unknown(call string) (*UnknownCall, error) {
	if u := m.Unknowns[call]; u != nil {
		cp := *u
		cp.Turns = slices.Clone(u.Turns)
		return &cp, nil
	}
	return nil, nil
}

// SetUnknown implements Index.
func (m *MemIndex) SetUnknown(call string, u *UnknownCall) error {
	if u == nil {
		delete(m.Unknowns, call)
		return nil
	}
	cp := *u
	cp.Turns = slices.Clone(u.Turns)
	m.Unknowns[call] = &cp
	return nil
}

// AddVerdict implements Index.
func (m *MemIndex) AddVerdict(v Verdict) error {
	m.Verdicts = append(m.Verdicts, v)
	return nil
}

// Outstanding lists the index, each list cut at limit.
func (m *MemIndex) Outstanding(limit int) *Outstanding {
	out := &Outstanding{Open: []OpenCall{}, Unknown: []UnknownCall{}, Verdicts: []Verdict{}}
	for _, o := range m.OpenBy {
		out.Open = append(out.Open, *o)
	}
	for _, u := range m.Unknowns {
		if !u.Reconciled {
			out.Unknown = append(out.Unknown, *u)
		}
	}
	out.Verdicts = append(out.Verdicts, m.Verdicts...)
	return out.Sorted(limit)
}

// Sorted orders the open calls and the unknown outcomes by issue, sets the totals and cuts
// each list at limit.
func (o *Outstanding) Sorted(limit int) *Outstanding {
	slices.SortFunc(o.Open, func(a, b OpenCall) int { return ByIssue(a.Call, b.Call) })
	slices.SortFunc(o.Unknown, func(a, b UnknownCall) int { return ByIssue(a.Call, b.Call) })
	o.TotalOpen, o.TotalUnknown, o.TotalVerdicts = len(o.Open), len(o.Unknown), len(o.Verdicts)
	o.Open = o.Open[:min(len(o.Open), limit)]
	o.Unknown = o.Unknown[:min(len(o.Unknown), limit)]
	o.Verdicts = o.Verdicts[:min(len(o.Verdicts), limit)]
	return o
}
