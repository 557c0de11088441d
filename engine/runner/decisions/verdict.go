package decisions

import (
	"encoding/json"

	"github.com/crw-dev/crw/journal"
)

// EffectPrefix names an operator's verdict among the answers left for a live run's process:
// effect/<call>, its value a Verdict.
const EffectPrefix = journal.VerdictPrefix

// Verdict is an operator's word on a call whose outcome is unknown (crw flow recover).
type Verdict struct {
	Verdict string          `json:"verdict"` // applied or not_applied
	Output  json.RawMessage `json:"output,omitempty"`
}

// Verdicts an operator may give.
const (
	VerdictApplied    = "applied"
	VerdictNotApplied = "not_applied"
)

// ReconciledRow is the effect_reconciled row of a verdict on call.
func ReconciledRow(call string, v Verdict, by string) *journal.Row {
	r := journal.Reconciled{Call: call, Verdict: v.Verdict, By: by}
	if len(v.Output) > 0 {
		r.Output = journal.Canonical(v.Output)
		r.OutputDigest = journal.Digest(string(r.Output))
	}
	return r.Row()
}

// VerdictValue is what crw.effect resolves to: {callId, verdict, output, by}, output null
// unless an applied verdict recorded one.
func VerdictValue(call string, row *journal.Row) json.RawMessage {
	v := row.AsReconciled()
	out, _ := json.Marshal(struct {
		CallID  string          `json:"callId"`
		Verdict string          `json:"verdict"`
		Output  json.RawMessage `json:"output"`
		By      string          `json:"by"`
	}{call, v.Verdict, v.Output, v.By})
	return out
}
