// Package result builds a call's CallResult, the frozen object agent.call resolves to, from the
// call's journal rows alone: a replay that reads them from the journal gives the script the very
// object the live run gave.
package result

import (
	"encoding/json"
	"strings"

	"github.com/crw-dev/crw/journal"
)

// HandlePrefix starts every handle: crwh1:<run>:<call_id>.
const HandlePrefix = "crwh1:"

// Handle is the opaque handle of a call.
func Handle(run, call string) string { return HandlePrefix + run + ":" + call }

// ParseHandle splits a handle into its run and call; ok is false for anything malformed.
func ParseHandle(h string) (run, call string, ok bool) {
	rest, found := strings.CutPrefix(h, HandlePrefix)
	if !found {
		return "", "", false
	}
	run, call, found = strings.Cut(rest, ":")
	if !found || !journal.ValidRunID(run) || !ValidCallID(call) {
		return "", "", false
	}
	return run, call, true
}

// ValidCallID reports whether id has the form of a call id: c1, c2, ...
func ValidCallID(id string) bool {
	if len(id) < 2 || id[0] != 'c' {
		return false
	}
	for _, r := range id[1:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return id[1] != '0'
}

// MaxOutputDepth is how deeply a completed call's output may nest for its CallResult to be
// built: the frozen builder (runtime/jsutil) takes that much inside the result's own object.
// Answers are held to schema.MaxDataDepth, well within it, so every output crw journals can
// be delivered; a row beyond it was not written by crw (replay.Read refuses it).
const MaxOutputDepth = 512

// OutputDepth is how deeply a JSON value nests (arrays and objects; a scalar is 0), reading
// no further than limit+1 levels.
func OutputDepth(data []byte, limit int) int {
	depth, deepest := 0, 0
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
			if depth > deepest {
				if deepest = depth; deepest > limit {
					return deepest
				}
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// CallResult is the frozen object agent.call resolves to.
type CallResult struct {
	CallID string             `json:"callId"`
	Handle *string            `json:"handle"`
	Status journal.CallStatus `json:"status"`
	Output json.RawMessage    `json:"output"`
	Reason *string            `json:"reason"`
	Meta   CallMeta           `json:"meta"`
}

// CallMeta is a CallResult's meta.
type CallMeta struct {
	Role           string       `json:"role"`
	RequestedPair  ResultPair   `json:"requestedPair"`
	ConfiguredPair ResultPair   `json:"configuredPair"`
	ThreadID       *string      `json:"threadId"`
	TurnIDs        []string     `json:"turnIds"`
	RepairUsed     bool         `json:"repairUsed"`
	Tokens         ResultTokens `json:"tokens"`
	// The seqs of the call's prepared and terminal rows; absent in a run created by
	// crw flow run (WithoutSeqs).
	StartSeq *uint64 `json:"startSeq,omitempty"`
	EndSeq   *uint64 `json:"endSeq,omitempty"`
}

// ResultPair is a pair with undecided parts as null.
type ResultPair struct {
	Model  *string `json:"model"`
	Effort *string `json:"effort"`
}

// ResultTokens are a call's tokens over all its turns, every part present.
type ResultTokens struct {
	Input           int64 `json:"input"`
	CachedInput     int64 `json:"cachedInput"`
	Output          int64 `json:"output"`
	ReasoningOutput int64 `json:"reasoningOutput"`
	Total           int64 `json:"total"`
}

func resultPair(p *journal.Pair) ResultPair {
	var out ResultPair
	if p == nil {
		return out
	}
	if p.Model != "" {
		m := p.Model
		out.Model = &m
	}
	if p.Effort != "" {
		e := p.Effort
		out.Effort = &e
	}
	return out
}

// WithoutSeqs is r without meta.startSeq and meta.endSeq, as a run created by crw flow run
// gives it.
func (r CallResult) WithoutSeqs() CallResult {
	r.Meta.StartSeq, r.Meta.EndSeq = nil, nil
	return r
}

// Build makes a call's CallResult from its rows, with meta.startSeq and meta.endSeq.
func Build(run string, prepared, thread, terminal *journal.Row) CallResult {
	rec := Recorded{Call: prepared.Call, Role: prepared.Role, Requested: prepared.RequestedPair, Configured: prepared.ConfiguredPair,
		PreparedSeq: prepared.Seq, EndType: terminal.Type, EndSeq: terminal.Seq, Reason: terminal.Reason, Output: terminal.Output,
		TurnIDs: terminal.TurnIDs, RepairUsed: terminal.RepairUsed, Tokens: terminal.Tokens}
	if thread != nil {
		rec.ThreadID = thread.ThreadID
	}
	return rec.Result(run)
}

// Recorded is what of a call's prepared, thread_started and terminal rows its CallResult is
// made of: a replay that kept only these parts builds the result without the rows.
type Recorded struct {
	Call, Role            string
	Requested, Configured *journal.Pair
	PreparedSeq           uint64
	ThreadID              string // "": the call had no thread
	EndType               string
	EndSeq                uint64
	Reason                string
	Output                json.RawMessage
	TurnIDs               []string
	RepairUsed            bool
	Tokens                *journal.Tokens
}

// Result is the CallResult of the call rec records, with meta.startSeq and meta.endSeq.
func (rec Recorded) Result(run string) CallResult {
	start, end := rec.PreparedSeq, rec.EndSeq
	r := CallResult{
		CallID: rec.Call,
		Status: journal.StatusOf(rec.EndType),
		Output: json.RawMessage("null"),
		Meta: CallMeta{
			Role:           rec.Role,
			RequestedPair:  resultPair(rec.Requested),
			ConfiguredPair: resultPair(rec.Configured),
			TurnIDs:        rec.TurnIDs,
			RepairUsed:     rec.RepairUsed,
			StartSeq:       &start,
			EndSeq:         &end,
		},
	}
	if r.Meta.TurnIDs == nil {
		r.Meta.TurnIDs = []string{}
	}
	if rec.ThreadID != "" {
		h := Handle(run, rec.Call)
		r.Handle = &h
		id := rec.ThreadID
		r.Meta.ThreadID = &id
	}
	if rec.EndType == journal.TypeCompleted {
		r.Output = rec.Output
	} else {
		reason := rec.Reason
		r.Reason = &reason
	}
	if t := rec.Tokens; t != nil {
		r.Meta.Tokens = ResultTokens{Input: t.Input, CachedInput: t.CachedInput, Output: t.Output, ReasoningOutput: t.ReasoningOutput, Total: t.Total}
	}
	return r
}
