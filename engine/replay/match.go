package replay

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/crw-dev/crw/journal"
)

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

// WithDigests fills a prepared row's digests: a row that is written, or named in a divergence,
// needs them; a replayed call only compares its inputs.
func WithDigests(row *journal.Row) *journal.Row {
	if row.InputDigest == "" {
		row.PromptDigest = journal.Digest(row.Prompt)
		row.InputDigest = InputDigest(row)
	}
	return row
}

var emptyPromptDigest = journal.Digest("")

// EffectKey identifies the effect a call asks for: its role, node, prompt and schema. Two calls
// with one key ask for an equivalent mutation, which only a proven not_applied verdict on the
// first permits to be sent again (seed 002); after an applied verdict it is not sent.
type EffectKey [sha256.Size]byte

// EffectKeyOf is the EffectKey of a call's prepared row.
func EffectKeyOf(p *journal.Row) EffectKey {
	return effectInputs{p.Role, p.Node, p.Prompt, p.PromptDigest, p.SchemaDigest}.key()
}

// effectInputs are the fields of a prepared row an EffectKey is made of.
type effectInputs struct{ role, node, prompt, promptDigest, schemaDigest string }

func (e effectInputs) key() EffectKey {
	prompt := e.promptDigest
	if prompt == "" || e.prompt != "" {
		prompt = journal.Digest(e.prompt)
	}
	h := sha256.New()
	for _, f := range [...]string{e.role, e.node, prompt, e.schemaDigest} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	var k EffectKey
	h.Sum(k[:0])
	return k
}

// SameInputs reports whether a call asks for what a recorded call asked: every input its
// digest covers, compared directly.
func SameInputs(recorded, got *journal.Row) bool {
	if recorded.Prompt == "" && recorded.PromptDigest != emptyPromptDigest {
		// A row without its prompt (a hand-written trace) can only be compared by digest.
		return recorded.InputDigest == WithDigests(got).InputDigest
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

// Divergence is a script that asks, at a position of the record, for another call than the
// record has there.
type Divergence struct {
	Index    int    // 1-based issue order
	Call     string // the recorded call's id
	Node     string
	Field    string // the first input that differs
	Want     string // the recorded value, for tests and views: never in an error or a log
	Got      string // the script's value, likewise
	WantHash string // input digests
	GotHash  string
	// NotMade: the script ended without making the recorded call at all.
	NotMade bool
}

// NotMade is the divergence of a script that ended before making the recorded call want.
func NotMade(index int, want *journal.Row) *Divergence {
	return &Divergence{Index: index, Call: want.Call, Node: want.Node, WantHash: want.InputDigest, Field: "call", Want: "made", Got: "not made", NotMade: true}
}

// NewDivergence names what differs between a recorded call and the script's.
func NewDivergence(index int, want, got *journal.Row) *Divergence {
	got = WithDigests(got)
	d := &Divergence{Index: index, Call: want.Call, Node: want.Node, WantHash: want.InputDigest, GotHash: got.InputDigest}
	d.Field, d.Want, d.Got = "input", want.InputDigest, got.InputDigest
	if diffs := FieldDiffs(want, got); len(diffs) > 0 {
		d.Field, d.Want, d.Got = diffs[0].Field, quote(diffs[0].Expected), quote(diffs[0].Actual)
	}
	return d
}

// Error is the Summary: a divergence goes into errors and the run's log, which carry no values
// of a call's inputs (a prompt may hold a model's answer).
func (d *Divergence) Error() string { return d.Summary() }

// Summary names the call, both digests and the field that differs, without the values: those
// are the script's and the journal's content, which crw flow shadow and crw flow show give.
func (d *Divergence) Summary() string {
	if d.NotMade {
		return fmt.Sprintf("divergence: call %d (%s, node %q, journal input %s) is in the journal, and the script ended without making it",
			d.Index, d.Call, d.Node, d.WantHash)
	}
	return fmt.Sprintf("divergence: call %d (%s, node %q): journal input %s, script input %s; first field that differs: %s",
		d.Index, d.Call, d.Node, d.WantHash, d.GotHash, d.Field)
}

// FieldDiff is one input that differs between a recorded call and the script's.
type FieldDiff struct {
	Field    string `json:"field"`
	Expected string `json:"expected"`
	Actual   string `json:"actual"`
}

// FieldDiffs lists every input that differs, in the order a divergence names them. A recorded
// row without its prompt has its prompt compared by digest.
func FieldDiffs(want, got *journal.Row) []FieldDiff {
	wf, gf := inputFields(want), inputFields(got)
	if want.Prompt == "" && want.PromptDigest != "" && want.PromptDigest != emptyPromptDigest {
		wf[2][1], gf[2][1] = want.PromptDigest, journal.Digest(got.Prompt)
	}
	var out []FieldDiff
	for i := range wf {
		if wf[i][1] != gf[i][1] {
			out = append(out, FieldDiff{Field: wf[i][0], Expected: wf[i][1], Actual: gf[i][1]})
		}
	}
	return out
}

// inputFields lists a call's inputs in the order a divergence names them.
func inputFields(p *journal.Row) [][2]string {
	pair := journal.Pair{}
	if p.RequestedPair != nil {
		pair = *p.RequestedPair
	}
	return [][2]string{
		{"role", p.Role}, {"node", p.Node}, {"prompt", p.Prompt}, {"schema", p.SchemaDigest},
		{"model", pair.Model}, {"effort", pair.Effort}, {"resume", p.Handle},
	}
}

func quote(s string) string {
	const max = 80
	if len(s) > max {
		s = s[:max] + "…"
	}
	return fmt.Sprintf("%q", strings.TrimSpace(s))
}
